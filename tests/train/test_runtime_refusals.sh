#!/usr/bin/env bash
# The runtimes other than StarPU refuse what they cannot do, up front (exit 2, nothing written, the key
# named): OpenCL / CUDA workers, traces, the StarPU bound and graph export, a StarPU scheduler, more than one sequential thread, an
# unknown runtime name (docs/runtimes.md).
source "$(dirname "$0")/lib.sh"

refused() { # refused KEY-IN-MESSAGE ARGS...: exit 2, message names the key, no run directory
  local key=$1
  shift
  local out rc
  out=$(bench --set "base_run_dir=$T/runs" "$@" 2>&1)
  rc=$?
  [ "$rc" = 2 ] || die "'$*' exited with $rc (expected 2); output: $out"
  grep -q "$key" <<<"$out" || die "'$*': the message does not name '$key': $out"
  [ ! -e "$T/runs" ] || [ -z "$(ls -A "$T/runs")" ] || die "'$*' wrote into $T/runs before refusing"
  echo "refused as expected: $* -> $(grep -m1 -i "error" <<<"$out")"
}

refused nopencl --set runtime=openmp --set nopencl=1
refused ncuda --set runtime=openmp --set ncuda=1
refused trace --set runtime=sequential --set ncpu=1 --set trace=1
refused scheduler --set runtime=openmp --set scheduler=dmda
refused ncpu --set runtime=sequential --set ncpu=2
refused bound --set runtime=openmp --set bound=1
refused export_graph --set runtime=sequential --set ncpu=1 --set export_graph=$T/graph
refused runtime --set runtime=quark
echo PASS

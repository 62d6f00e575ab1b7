#!/usr/bin/env bash
# trace: fxt (docs/tracing.md).
#   trace    build-fxt/scaffold (or $SF_FXT_BINARY) runs `scaffold steps` at ps 4 b8 on 2 CPU workers,
#            1 warm-up + 2 timed steps, trace: fxt. paje.trace, dag.dot, tasks.rec, data.rec, trace.html
#            and fxt.prof exist; pj_dump (Debian pajeng) reads paje.trace, whose worker states named after
#            our codelets number at least the 3 steps' tasks; tasks.rec has exactly one record per task of
#            ours (3 x tasks per step); dag.dot is a digraph with dependency edges. Skipped, with the
#            reason, when no FxT build exists.
#   refused  the normal build (no FxT) refuses trace: fxt with exit 2, naming the key, before any work.
# usage: test_fxt.sh trace|refused   (SF_SOURCE_DIR, SF_BINARY: set by CTest)
set -u
MODE=$1
SRC=${SF_SOURCE_DIR:?} BIN=${SF_BINARY:?}
T=$(mktemp -d /tmp/sf-fxt.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
err() { echo "FAIL ($MODE): $*"; fail=1; }
SHAPE=(--set problem_scale=4 --set unet_base_channels=8 --set ncpu=2 --set scheduler=dmda)
case "$MODE" in
refused)
  if grep -q '^#define STARPU_USE_FXT 1' "$(pkg-config --variable=includedir starpu-1.3)/starpu/1.3/starpu_config.h" 2>/dev/null &&
     [ -z "${SF_FORCE_NO_FXT:-}" ]; then
    echo "SKIPPED: this build's StarPU records FxT traces, so trace: fxt is accepted here"
    exit 77
  fi
  "$BIN" steps "${SHAPE[@]}" --set trace=fxt --out "$T/run" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 2 ] || err "exit status $rc, want 2: $(cat "$T/err")"
  grep -q "trace.*fxt needs a StarPU built with FxT" "$T/err" || err "the message does not name trace/FxT: $(cat "$T/err")"
  [ ! -e "$T/run/paje.trace" ] && [ ! -s "$T/out" ] || err "work started: $(head -3 "$T/out")"
  "$BIN" steps --set trace=maybe >"$T/out2" 2>"$T/err2"
  [ $? = 2 ] && grep -q "0/1, true/false, yes/no, or fxt" "$T/err2" || err "trace=maybe: $(cat "$T/err2")"
  ;;
trace)
  FB=${SF_FXT_BINARY:-$SRC/build-fxt/scaffold}
  if [ ! -x "$FB" ]; then
    echo "SKIPPED: no FxT build at $FB (scripts/build-fxt builds an FxT StarPU from Debian's source package and the project against it)"
    exit 77
  fi
  command -v pj_dump >/dev/null || { echo "FAIL: pj_dump missing (Debian package pajeng; scripts/install-deps --with-pajeng)"; exit 1; }
  "$FB" steps "${SHAPE[@]}" --set trace=fxt --steps 2 --warmup 1 --out "$T/run" --json >"$T/out" 2>"$T/err" ||
    { echo "FAIL: scaffold steps with trace: fxt failed: $(tail -5 "$T/err")"; exit 1; }
  tasks=$(sed -n 's/^SFSTEPS .*"tasks_per_step": *\([0-9]*\).*/\1/p' "$T/out")
  [ -n "$tasks" ] || err "no SFSTEPS line: $(cat "$T/out")"
  for f in paje.trace dag.dot tasks.rec data.rec trace.html fxt.prof; do
    [ -s "$T/run/$f" ] || err "$f missing or empty in the run directory ($(ls "$T/run"))"
  done
  pj_dump "$T/run/paje.trace" >"$T/dump" 2>"$T/dump.err" || err "pj_dump failed: $(head -5 "$T/dump.err")"
  # worker states named after our codelets (StarPU writes more than one per task: >=)
  states=$(grep -c '^State,.*sf_' "$T/dump")
  want=$((3 * tasks))
  [ "$states" -ge "$want" ] || err "pj_dump shows $states task states named sf_*, want >= $want (3 steps x $tasks)"
  recs=$(grep -c '^Name: sf_' "$T/run/tasks.rec")
  [ "$recs" = "$want" ] || err "tasks.rec has $recs records of sf_* tasks, want $want (3 steps x $tasks)"
  head -1 "$T/run/dag.dot" | grep -q digraph || err "dag.dot does not start a digraph: $(head -1 "$T/run/dag.dot")"
  edges=$(grep -c -- '->' "$T/run/dag.dot")
  [ "$edges" -gt 0 ] || err "dag.dot has no dependency edge"
  echo "fxt: $states task states in paje.trace, $recs task records, $edges DAG edges ($tasks tasks per step)"
  ;;
*) echo "usage: test_fxt.sh trace|refused"; exit 2 ;;
esac
[ $fail = 0 ] && echo "fxt $MODE: OK"
exit $fail

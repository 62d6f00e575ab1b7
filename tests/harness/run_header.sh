#!/usr/bin/env bash
# The run header's CPU kernel set and OpenBLAS core (include/scaffold/cpu_isa.h):
# `scaffold benchmark` (--datagen-only: the header and the result JSON without training) prints
# "benchmark: CPU kernels: <isa> direct[ + Winograd ...] (SF_CPU_ISA to cap), OpenBLAS core <core>" and records
# "cpu_kernels" next to the machine info (SF_CONV_WINOGRAD=0 drops the Winograd part); tests/perf/bench_train_step prints the same line on stderr
# and carries cpu_kernels in its SFBENCH JSON. SF_CPU_ISA=c is followed by both. With
# OPENBLAS_CORETYPE=Prescott (Debian's DYNAMIC_ARCH OpenBLAS switches to its generic core) both warn
# that OpenBLAS runs generic kernels and suggest OPENBLAS_CORETYPE; without it, no such warning. With
# torch_amp: 1 (the default) the header names the bf16 engine CPU workers run the convolutions on and the
# JSON records cpu_precision bf16, or, on a CPU without AVX512_BF16 or with SF_CPU_BF16=none, warns that
# they compute in fp32 and records fp32; with torch_amp: 0 neither.
# usage: run_header.sh BENCH_TRAIN_STEP   (SF_BINARY, SF_SOURCE_DIR: set by CTest)
set -u
BTS=${1:?usage: run_header.sh BENCH_TRAIN_STEP}
BIN=${SF_BINARY:?SF_BINARY is not set}
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-header-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu_home" STARPU_SILENT=1
unset SF_CPU_ISA SF_CPU_BF16 SF_CONV_DIRECT OPENBLAS_CORETYPE STARPU_SCHED STARPU_NCPU
mkdir -p "$STARPU_HOME"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
jfield() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], "(absent)"))' "$1" "$2"; }
cat >"$T/cfg.yml" <<YML
problem_scale: 4
unet_bottleneck_dim: 3
n_categories: 2
n_instances_used_per_fractal: 4
fract_base_dir: $T/fractals
base_run_dir: $T/runs
ncpu: 1
scheduler: eager
YML

bench() { # name [env...]: scaffold benchmark --datagen-only; output in $T/name.log, result JSON path in $res
  local name=$1; shift
  env "$@" "$BIN" benchmark -c "$T/cfg.yml" --datagen-only --out "$T/$name" --experiment-name t.header \
    --job-id 0.0 >"$T/$name.log" 2>&1 || fail "$name: benchmark --datagen-only exited with $?: $(tail -5 "$T/$name.log")"
  res=$(ls "$T/$name"/*.json 2>/dev/null | head -1)
}
generic_warning='OpenBLAS does not know this CPU .*runs its generic kernels.*OPENBLAS_CORETYPE='

# default: the best set this CPU has, the real core; no generic warning unless OpenBLAS is generic here
bench plain
line=$(grep -m1 '^benchmark: CPU kernels: ' "$T/plain.log")
wino=' + Winograd F(2,3) on wide layers, SF_CONV_WINOGRAD=0 for direct only'
[[ "$line" =~ ^benchmark:\ CPU\ kernels:\ (c|avx2|avx512)\ direct("$wino")?\ \(SF_CPU_ISA\ to\ cap\),\ OpenBLAS\ core\ ([A-Za-z0-9]+)$ ]] ||
  fail "no or malformed 'benchmark: CPU kernels: ...' line: '${line:-none}'"
isa=${BASH_REMATCH[1]:-} winon=${BASH_REMATCH[2]:-} core=${BASH_REMATCH[3]:-}
# Winograd runs with the AVX2 and AVX-512 sets (src/kernels/conv3d/conv3d_winograd.c), and SF_CONV_WINOGRAD=0 turns it off
case $isa in avx2 | avx512) [ -n "$winon" ] || fail "kernel set $isa: the header does not say Winograd is on: '$line'" ;; esac
[ -n "$res" ] && [ "$(jfield "$res" conv_winograd)" != "$([ -n "$winon" ] && echo 1 || echo 0)" ] &&
  fail "result JSON conv_winograd is '$(jfield "$res" conv_winograd)', the header says Winograd is ${winon:+on}${winon:-off}"
bench nowino SF_CONV_WINOGRAD=0
grep -q "^benchmark: CPU kernels: $isa direct (SF_CPU_ISA to cap), OpenBLAS core " "$T/nowino.log" ||
  fail "SF_CONV_WINOGRAD=0: header says: $(grep -m1 'CPU kernels' "$T/nowino.log")"
[ -n "$res" ] && [ "$(jfield "$res" conv_winograd)" != 0 ] &&
  fail "SF_CONV_WINOGRAD=0: result JSON conv_winograd is '$(jfield "$res" conv_winograd)'"
[ -n "$res" ] || fail "plain: no result JSON in $T/plain"
if [ -n "$res" ]; then
  [ "$(jfield "$res" cpu_kernels)" = "$isa" ] || fail "result JSON cpu_kernels is '$(jfield "$res" cpu_kernels)', the header says '$isa'"
fi
case $core in
Prescott | Core2 | Katmai | Coppermine | Northwood | Banias | Athlon | Opteron | Generic)
  grep -qE "$generic_warning" "$T/plain.log" || fail "core $core is generic, yet no warning" ;;
*) grep -qE "$generic_warning" "$T/plain.log" && fail "core $core is not generic, yet: $(grep -m1 'generic kernels' "$T/plain.log")" ;;
esac

# SF_CPU_ISA=c caps the set: the header and the JSON follow
bench capped SF_CPU_ISA=c
grep -q '^benchmark: CPU kernels: c direct (SF_CPU_ISA to cap), OpenBLAS core ' "$T/capped.log" ||
  fail "SF_CPU_ISA=c: header says: $(grep -m1 'CPU kernels' "$T/capped.log")"
[ -n "$res" ] && [ "$(jfield "$res" cpu_kernels)" != c ] && fail "SF_CPU_ISA=c: result JSON cpu_kernels '$(jfield "$res" cpu_kernels)'"

# OPENBLAS_CORETYPE=Prescott: OpenBLAS's generic core, named in the header, with the warning
bench prescott OPENBLAS_CORETYPE=Prescott
grep -q '^benchmark: CPU kernels: .*, OpenBLAS core Prescott$' "$T/prescott.log" ||
  fail "OPENBLAS_CORETYPE=Prescott: header says: $(grep -m1 'CPU kernels' "$T/prescott.log") (does this OpenBLAS switch cores at run time?)"
grep -qE "^scaffold: warning: OpenBLAS core Prescott: this $generic_warning" "$T/prescott.log" ||
  fail "OPENBLAS_CORETYPE=Prescott: no generic-kernels warning:"$'\n'"$(cat "$T/prescott.log")"

# torch_amp (default 1, as upstream): on a CPU with AVX512_BF16 the header says CPU workers run the convs
# in bf16 on an engine and the result records cpu_precision bf16; without it (or with SF_CPU_BF16=none,
# checked on any CPU) it warns that they compute in fp32 and records fp32; torch_amp: 0 says neither
amp_warning='warning: torch_amp: 1: this CPU has no bf16 instructions \(AVX512_BF16.*CPU workers compute the convolutions in fp32'
amp_info='^benchmark: torch_amp: 1: CPU workers run the 3x3x3 convolutions( and the transposed ones)? in bf16 \(engine (amx|vdpbf16ps):'
res_plain=$res
if grep -qw avx512_bf16 /proc/cpuinfo; then
  grep -qE "$amp_info" "$T/plain.log" || fail "torch_amp: 1 on an AVX512_BF16 CPU: no bf16 line:"$'\n'"$(cat "$T/plain.log")"
  grep -qE "$amp_warning" "$T/plain.log" && fail "torch_amp: 1 on an AVX512_BF16 CPU: warns of fp32 anyway"
  want_prec=bf16
else
  grep -qE "$amp_warning" "$T/plain.log" || fail "torch_amp: 1 (default): no fp32-on-CPU warning:"$'\n'"$(cat "$T/plain.log")"
  want_prec=fp32
fi
[ -n "$res_plain" ] && [ "$(jfield "$res_plain" cpu_precision)" != $want_prec ] &&
  fail "result JSON cpu_precision '$(jfield "$res_plain" cpu_precision)', want $want_prec"
bench nobf16 SF_CPU_BF16=none
grep -qE "$amp_warning.*" "$T/nobf16.log" && grep -q "or SF_CPU_BF16 turned them off" "$T/nobf16.log" ||
  fail "SF_CPU_BF16=none: no fp32-on-CPU warning naming SF_CPU_BF16:"$'\n'"$(cat "$T/nobf16.log")"
[ -n "$res" ] && [ "$(jfield "$res" cpu_precision)" != fp32 ] && fail "SF_CPU_BF16=none: result JSON cpu_precision '$(jfield "$res" cpu_precision)'"
echo "torch_amp: 0" >>"$T/cfg.yml"
bench noamp
grep -qE "$amp_warning|$amp_info" "$T/noamp.log" && fail "torch_amp: 0: a bf16 line is printed anyway"

# bench_train_step: the same line on stderr, cpu_kernels in SFBENCH; the warning with Prescott
for ct in default Prescott; do
  e=()
  [ $ct = Prescott ] && e=(OPENBLAS_CORETYPE=Prescott)
  env "${e[@]}" "$BTS" --ps 4 --base 8 --ncpu 1 --warmup 0 --steps 1 >"$T/bts.out" 2>"$T/bts.err" ||
    { fail "bench_train_step ($ct) exited with $?: $(tail -3 "$T/bts.err")"; continue; }
  grep -qE '^bench_train_step: CPU kernels: (c|avx2|avx512) direct( \+ Winograd F\(2,3\)[^()]*)? \(SF_CPU_ISA to cap\), OpenBLAS core ' "$T/bts.err" ||
    fail "bench_train_step ($ct): no CPU kernels line on stderr: $(head -3 "$T/bts.err")"
  k=$(sed -n 's/^SFBENCH //p' "$T/bts.out" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("cpu_kernels", "(absent)"))')
  [ "$k" = "$isa" ] || fail "bench_train_step ($ct): SFBENCH cpu_kernels '$k', want '$isa'"
  if [ $ct = Prescott ]; then
    grep -qE "^bench_train_step: warning: OpenBLAS core Prescott: this $generic_warning" "$T/bts.err" ||
      fail "bench_train_step with Prescott: no generic-kernels warning: $(cat "$T/bts.err")"
  fi
done
[ $fails = 0 ] || exit 1
echo "PASS: run header 'CPU kernels: $isa direct, OpenBLAS core $core', cpu_kernels recorded, Prescott warned, torch_amp's CPU precision ($want_prec) said and recorded"

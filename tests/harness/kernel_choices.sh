#!/usr/bin/env bash
# The CPU kernel variants a run used (include/scaffold/kernel_choices.h) in the run's output and its
# result JSON: a short `scaffold benchmark` prints "benchmark: CPU kernel variants run (calls per
# entry): conv3d forward: <variant> on N calls; ..." and records the same counts as "kernel_choices"
# ({"conv3d forward": {"<variant>": N}, ...}); every conv/upconv/conv1 direction that ran is named,
# the line and the JSON agree, SF_CONV_WINOGRAD=0 leaves no Winograd variant, and SF_CPU_ISA=c leaves
# no AVX variant (the portable set, or im2col + sgemm where it wins).
# usage: kernel_choices.sh   (SF_BINARY: set by CTest)
set -u
BIN=${SF_BINARY:?SF_BINARY is not set}
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-choices-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu_home" STARPU_SILENT=1
unset SF_CPU_ISA SF_CPU_BF16 SF_CONV_DIRECT SF_CONV_WINOGRAD OPENBLAS_CORETYPE STARPU_SCHED STARPU_NCPU
mkdir -p "$STARPU_HOME"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cat >"$T/cfg.yml" <<YML
problem_scale: 4
unet_bottleneck_dim: 3
n_categories: 2
n_instances_used_per_fractal: 16
fract_base_dir: $T/fractals
dataset_dir: $T/datasets
base_run_dir: $T/runs
ncpu: 1
scheduler: eager
torch_amp: 0
YML

run() { # name [env...]: a short benchmark; checks the line against the JSON, leaves the JSON in $T/name.choices
  local name=$1; shift
  env "$@" "$BIN" benchmark -c "$T/cfg.yml" --max-count 8 --out "$T/$name" --experiment-name t.choices \
    --job-id 0.0 >"$T/$name.log" 2>&1 || { fail "$name: benchmark exited with $?: $(tail -5 "$T/$name.log")"; return; }
  local res line
  res=$(ls "$T/$name"/*.json 2>/dev/null | head -1)
  [ -n "$res" ] || { fail "$name: no result JSON in $T/$name"; return; }
  line=$(grep -m1 '^benchmark: CPU kernel variants run (calls per entry): ' "$T/$name.log")
  [ -n "$line" ] || { fail "$name: no 'CPU kernel variants run' line in the output"; return; }
  python3 - "$res" "${line#*entry): }" "$name" >"$T/$name.choices" <<'PY' || fails=$((fails + 1))
import json, sys
res, line, name = sys.argv[1], sys.argv[2], sys.argv[3]
kc = json.load(open(res)).get("kernel_choices")
if not isinstance(kc, dict) or not kc:
    sys.exit(f"FAIL: {name}: result JSON kernel_choices is {kc!r}, expected a non-empty object")
for op in ("conv3d forward", "conv3d dX", "conv3d dW", "upconv3d forward", "upconv3d dX", "upconv3d dW",
           "conv1 forward", "conv1 dX", "conv1 dW"):
    if op not in kc:
        sys.exit(f"FAIL: {name}: kernel_choices has no '{op}' (has {sorted(kc)})")
said = {}
for part in line.split("; "):
    op, variants = part.split(": ", 1)
    for v in variants.split(", "):
        var, calls = v.rsplit(" on ", 1)
        said.setdefault(op, {})[var] = int(calls.split()[0])
got = {op: {v: int(n) for v, n in d.items()} for op, d in kc.items()}
if said != got:
    sys.exit(f"FAIL: {name}: the output line says {said}, the result JSON {got}")
print(" ".join(sorted({v for d in got.values() for v in d})))
PY
}

run plain
run nowino SF_CONV_WINOGRAD=0
grep -q winograd "$T/nowino.choices" && fail "SF_CONV_WINOGRAD=0: variants run: $(cat "$T/nowino.choices")"
run capped SF_CPU_ISA=c
[ -s "$T/capped.choices" ] && grep -qE 'avx' "$T/capped.choices" &&
  fail "SF_CPU_ISA=c: an AVX variant ran: $(cat "$T/capped.choices")"
echo "variants: plain: $(cat "$T/plain.choices"); SF_CONV_WINOGRAD=0: $(cat "$T/nowino.choices"); SF_CPU_ISA=c: $(cat "$T/capped.choices")"
[ "$fails" -eq 0 ] || { echo "kernel_choices: $fails check(s) failed" >&2; exit 1; }
echo "kernel_choices: all checks passed"

#!/usr/bin/env bash
# Data generation traces (`trace: 1`, docs/datagen-performance.md): `scaffold generate_fractals`
# writes <fractal root>/datagen_trace/ with the phases "fractal classes" and "fractal instances";
# `scaffold benchmark --datagen-only` writes <run dir>/datagen_trace/ with the phase "dataset" (the
# library is reused, so no fractal phase); every phase has its spans, task events and a utilisation
# in [0, 1] (checked by datagen_trace_check); scripts/trace-summary prints the phase table; with
# trace: 0 no datagen_trace directory is made.
set -u
CHECK=${1:?usage: test_datagen_trace.sh DATAGEN_TRACE_CHECK}
BIN=${SF_BINARY:?SF_BINARY is not set}
SRC=${SF_SOURCE_DIR:?SF_SOURCE_DIR is not set}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu_home" STARPU_SILENT=1
mkdir -p "$STARPU_HOME"
die() { echo "FAIL: $*" >&2; exit 1; }
cat > "$T/cfg.yml" <<YML
problem_scale: 5
unet_bottleneck_dim: 3
n_categories: 2
n_instances_used_per_fractal: 12
datagen_batch_size: 2000
fract_base_dir: $T/fractals
base_run_dir: $T/runs
ncpu: 2
YML
ROOT="$T/fractals/var0.15/seed42"

out=$("$BIN" generate_fractals -c "$T/cfg.yml" --set trace=1 2>&1) || die "generate_fractals exited with $?: $out"
for f in trace.json worker_stats.json worker_stats.txt; do
  [ -s "$ROOT/datagen_trace/$f" ] || die "generate_fractals with trace: 1 left no $ROOT/datagen_trace/$f; output: $out"
done
grep -q "trace: $ROOT/datagen_trace/trace.json" <<<"$out" || die "generate_fractals does not say where the trace is: $out"
"$CHECK" "$ROOT/datagen_trace" "fractal classes" "fractal instances" || die "generate_fractals trace check failed"

out=$("$BIN" benchmark -c "$T/cfg.yml" --datagen-only --set trace=1 2>&1) || die "benchmark --datagen-only exited with $?: $out"
R=$(ls -d "$T"/runs/*/ 2>/dev/null | head -1)
[ -n "$R" ] || die "no run directory under $T/runs; output: $out"
"$CHECK" "$R/datagen_trace" dataset || die "benchmark --datagen-only trace check failed"
if "$CHECK" "$R/datagen_trace" "fractal instances" >/dev/null 2>&1; then
  die "the benchmark reused a complete library, yet its trace has a 'fractal instances' phase"
fi

if [ -x /usr/bin/python3 ]; then
  s=$(/usr/bin/python3 "$SRC/scripts/trace-summary" "$ROOT/datagen_trace" 2>&1) || die "trace-summary failed: $s"
  grep -q "^| fractal instances | 1 | " <<<"$s" || die "trace-summary prints no 'fractal instances' phase row: $s"
  grep -q "utilisation" <<<"$s" || die "trace-summary prints no utilisation: $s"
else
  echo "skipped the trace-summary check: no /usr/bin/python3"
fi

rm -rf "$ROOT/datagen_trace"
out=$("$BIN" generate_fractals -c "$T/cfg.yml" --set datagen_from_scratch=1 2>&1) || die "generate_fractals (trace: 0) exited with $?: $out"
[ ! -e "$ROOT/datagen_trace" ] || die "trace: 0 still made $ROOT/datagen_trace"
echo "PASS: datagen traces of generate_fractals and benchmark --datagen-only"

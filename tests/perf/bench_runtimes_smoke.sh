#!/usr/bin/env bash
# scripts/bench-runtimes end to end on the smallest U-Nets, one round (seconds, not a measurement): the sweep table
# has a row per shape and series, the METG table a row per series, the cost table a row per runtime, StarPU scheduler
# and worker count, and the figure is drawn (when gnuplot is installed). Timings are not checked.
set -u
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
plot=(); command -v gnuplot >/dev/null && plot=(--plot "$T/fig.png")
"$SF_SOURCE_DIR/scripts/bench-runtimes" --no-step-table --shapes "2:1:1:1:1:1x1 2:1:1:1:2:2x2" --sweep-rounds 1 \
  --sweep-workers 1,2 --costs-shape 2:1:1:1:1:1x1 --costs-rounds 1 --scheds eager,dmda "${plot[@]}" -o "$T/out.md" \
  >"$T/log" 2>&1
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ $rc = 0 ] || { bad "bench-runtimes exited $rc:"; tail -20 "$T/log"; exit 1; }
count() { grep -c -- "$1" "$T/out.md"; }
want() { # what, pattern, expected count
  local n; n=$(count "$2")
  [ "$n" = "$3" ] || bad "$1: $n lines match '$2', expected $3"
}
want "sweep rows" "^| ps2/bn1/b1/g1 " 10           # 2 shapes x (starpu, openmp x 1, 2 workers + sequential)
want "METG rows" "^| [a-z]*/[12] | " 5
want "cost rows, StarPU" "^| starpu | \(eager\|dmda\) | [12] |" 4
want "cost rows, OpenMP" "^| openmp | - | [12] |" 2
want "cost rows, sequential" "^| sequential | - | 1 |" 1
want "CPU named" "^CPU: .*family .*model " 1
if [ ${#plot[@]} -gt 0 ]; then
  [ -s "$T/fig.png" ] || bad "no figure at $T/fig.png: $(grep figure "$T/out.md")"
else
  echo "gnuplot not installed: the figure is not checked"
fi
[ $fail = 0 ] && echo "bench_runtimes_smoke: all checks passed" || cat "$T/out.md"
exit $fail

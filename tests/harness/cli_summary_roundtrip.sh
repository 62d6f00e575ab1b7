#!/usr/bin/env bash
# `scaffold summary` round trip: the summary JSON of a results directory, fed back to `report`
# (as RESULTS, and as a --compare baseline), gives the same table, scores, device comparison and
# HTML as the directory itself; the file has the spec §5 fields with 4-space indentation.
. "$(dirname "$0")/lib.sh"

D=$T/res
PD='{"partition_scheme": {"type": "per-device"}}'
PG='{"partition_scheme": {"type": "progression"}}'
i=0
for rate in 100 110 120 90; do
  d=$((i % 2))
  fake_run "$D" s.a "$((i / 2)).$d" "{\"job\": $PD, \"device\": $d, \"devices\": [$d]}" --fake-rate $rate --max-count 200
  i=$((i + 1))
done
fake_run "$D" s.b 0.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-rate 50 --max-count 100
fake_run "$D" s.b 1.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-rate 70 --max-count 100
fake_run "$D" s.b 2.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-mode fail --max-count 100
fake_run "$D" s.sc 0.0 "{\"job\": $PG, \"devices\": [0]}" --fake-rate 30 --max-count 100
STARPU_NCPU=2 fake_run "$D" s.sc 0.1 "{\"job\": $PG, \"devices\": [0, 1]}" --fake-rate 30 --max-count 100
printf 's.a: {weight: 8}\ns.b: {weight: 4}\ns.sc.1: {weight: 2}\ns.sc.2: {weight: 2}\ns.gone: {weight: 8}\n' > "$T/w.yml"

"$SCAFFOLD" summary "$D" -o "$T/s.json" 2> "$T/e1"; rc=$?
check "summary -o exits 0 (got $rc)" test "$rc" -eq 0
"$SCAFFOLD" summary "$D" > "$T/s-stdout.json"
check "summary on stdout equals the -o file" cmp -s "$T/s.json" "$T/s-stdout.json"
for field in '"n": ' '"failures": ' '"total": {' '"train": {' '"per_device": {' '"peak_memory": ' '"std": '; do
  check "summary has $field" contains "$T/s.json" "$field"
done
check "summary groups progression runs by device count" contains "$T/s.json" '"s.sc.2": {'
check "summary is indented with 4 spaces" grep -q '^    "s.a": {$' "$T/s.json"
check "summary records failures" grep -A2 '"s.b": {' "$T/s.json" | grep -q '"failures": 1'

for opts in "--weights $T/w.yml --compare $T/s.json --price 500 --compare-devices" \
            "--weights $T/w.yml --penalize-variance" ""; do
  # shellcheck disable=SC2086
  "$SCAFFOLD" report "$D" $opts --html "$T/a.html" > "$T/a.txt" 2>/dev/null; rc1=$?
  # shellcheck disable=SC2086
  "$SCAFFOLD" report "$T/s.json" $opts --html "$T/b.html" > "$T/b.txt" 2>/dev/null; rc2=$?
  check "report [$opts] exits 0 on both (got $rc1, $rc2)" test "$rc1" -eq 0 -a "$rc2" -eq 0
  check "report [$opts]: same text from the directory and from the summary" diff "$T/a.txt" "$T/b.txt"
  check "report [$opts]: same HTML from the directory and from the summary" cmp -s "$T/a.html" "$T/b.html"
done
"$SCAFFOLD" report "$D" --weights "$T/w.yml" --compare "$T/s.json" --compare-devices > "$T/c.txt" 2>/dev/null
check "own summary as baseline: perf_ratio 1.00" grep -qE "^s.a +8.00 +4 +0 +105.00 +105.00 +1.00 " "$T/c.txt"
# Baseline failures are not applied: only s.b differs (perf_adj 40 vs perf_base_adj 60), so
# Ratio = exp(4 (ln 40 - ln 60) / 24) = (2/3)^(1/6) = 0.9346.
check "own summary as baseline: Ratio (2/3)^(1/6)" grep -qE "^Ratio: +0.93$" "$T/c.txt"
# s.a means per device: device 0 (100, 120) = 110, device 1 (110, 90) = 100 -> 100%, 91%.
check "the device comparison shows s.a (devices 0 and 1)" grep -qE "^s.a +100% +91%$" "$T/c.txt"
check "rows: union of results and weights (s.gone present)" grep -qE "^s.gone +8.00 +nan +nan" "$T/c.txt"
finish

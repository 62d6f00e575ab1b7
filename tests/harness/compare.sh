#!/usr/bin/env bash
# `scaffold compare A B`: per test the steady samples/s of both sets, B/A, and the verdict: within
# the runs' spread (|mean_B - mean_A| <= std_A + std_B), B faster/slower, a single run (no spread),
# only in A / only in B; directories and summary JSONs alike; usage errors exit 2.
. "$(dirname "$0")/lib.sh"

A=$T/a B=$T/b
E='{"job": {}}'
# same: A 100,100 / B 96,106: |101-100| = 1 <= 0 + 5 -> within
fake_run "$A" c.same 0.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$A" c.same 1.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$B" c.same 0.0 "$E" --fake-rate 96 --max-count 960
fake_run "$B" c.same 1.0 "$E" --fake-rate 106 --max-count 1060
# faster: A 100,100 / B 200,200
fake_run "$A" c.fast 0.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$A" c.fast 1.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$B" c.fast 0.0 "$E" --fake-rate 200 --max-count 2000
fake_run "$B" c.fast 1.0 "$E" --fake-rate 200 --max-count 2000
# slower, single run, only in A, only in B
fake_run "$A" c.slow 0.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$A" c.slow 1.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$B" c.slow 0.0 "$E" --fake-rate 50 --max-count 500
fake_run "$B" c.slow 1.0 "$E" --fake-rate 50 --max-count 500
fake_run "$A" c.single 0.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$B" c.single 0.0 "$E" --fake-rate 120 --max-count 1200
fake_run "$A" c.onlya 0.0 "$E" --fake-rate 100 --max-count 1000
fake_run "$B" c.onlyb 0.0 "$E" --fake-rate 100 --max-count 1000

"$SCAFFOLD" compare "$A" "$B" > "$T/out" 2> "$T/err"; rc=$?
check "compare exits 0 (got $rc; $(cat "$T/err"))" test "$rc" -eq 0
check "same: ratio 1.010, within spread" bash -c "grep -E '^c\.same .* 1\.010  within spread$' '$T/out'"
check "fast: ratio 2.000, B faster" bash -c "grep -E '^c\.fast .* 2\.000  B faster$' '$T/out'"
check "slow: ratio 0.500, B slower" bash -c "grep -E '^c\.slow .* 0\.500  B slower$' '$T/out'"
check "single: 1 run, no spread" bash -c "grep -E '^c\.single .* 1\.200  1 run: no spread$' '$T/out'"
check "only in A" bash -c "grep -E '^c\.onlya .* -  only in A$' '$T/out'"
check "only in B" bash -c "grep -E '^c\.onlyb .* -  only in B$' '$T/out'"
check "perf columns: means and stds" bash -c "grep -E '^c\.same +2 +100\.000 +0\.000 +2 +101\.000 +5\.000 ' '$T/out'"
check "units stated" contains "$T/out" "samples/s"
# summaries give the same table as the directories
"$SCAFFOLD" summary "$A" -o "$T/sa.json" > /dev/null 2>&1
"$SCAFFOLD" summary "$B" -o "$T/sb.json" > /dev/null 2>&1
"$SCAFFOLD" compare "$T/sa.json" "$T/sb.json" > "$T/out2" 2>&1
check "summary JSONs compare as their directories" bash -c "diff <(tail -n +3 '$T/out') <(tail -n +3 '$T/out2')"
# usage errors
"$SCAFFOLD" compare "$A" > /dev/null 2> "$T/e1"; rc=$?
check "one set: exit 2 (got $rc)" test "$rc" -eq 2
check "one set: says two are expected" contains "$T/e1" "expected two result sets A and B"
"$SCAFFOLD" compare "$A" "$T/nonexistent" > /dev/null 2> "$T/e2"; rc=$?
check "missing B: exit 2 (got $rc)" test "$rc" -eq 2
mkdir -p "$T/empty"
"$SCAFFOLD" compare "$A" "$T/empty" > /dev/null 2> "$T/e3"; rc=$?
check "empty B: exit 2 (got $rc)" test "$rc" -eq 2
check "empty B: named" contains "$T/e3" "no results in $T/empty"
finish

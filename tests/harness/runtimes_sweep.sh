#!/usr/bin/env bash
# The runtimes-sweep profile (configs/profiles/runtimes-sweep.yml) end to end, smoke-sized and untimed: two of its
# shapes on StarPU and OpenMP with 1 worker and on the sequential executor, --max-time 0.3 each, real training
# runs. Every result records its granularity; `scaffold report` prints the METG(50 %) table, the HTML report has
# the inline SVG chart (a curve per runtime/workers, the 50 % line) and the METG table, and the report of the
# summary JSON gives the same table. A profile without curves (one shape per runtime) shows no such section.
. "$(dirname "$0")/lib.sh"

D=$T/rs
names="ps4s1-starpu1 ps4s1-openmp1 ps4s1-sequential1 ps3b1s4-starpu1 ps3b1s4-openmp1 ps3b1s4-sequential1"
# shellcheck disable=SC2086
(cd "$T" && "$SCAFFOLD" jobs runtimes-sweep -o "$D" --name $names -- --max-time 0.3 > "$T/jobs.log" 2>&1); rc=$?
check "jobs runtimes-sweep exits 0 (got $rc: $(tail -5 "$T/jobs.log"))" test "$rc" -eq 0
n=$(grep -l '"granularity"' "$D"/*.json 2>/dev/null | wc -l)
check "six results with a granularity record (got $n)" test "$n" -eq 6
check "a record has tasks, step time and body time" grep -qE '"body_s_per_step":[[:space:]]*[0-9]' "$D"/runtimes-sweep.ps3b1s4-sequential1.*.json
"$SCAFFOLD" report "$D" > "$T/report.txt" 2> "$T/e1"; rc=$?
check "report exits 0 (got $rc: $(cat "$T/e1"))" test "$rc" -eq 0
check "text: the METG table" contains "$T/report.txt" "Runtime granularity: METG(50 %)"
for s in starpu/1 openmp/1 sequential/1; do
  check "text: a METG row for $s with its 2 points" grep -qE "^$s +METG\(50 %\): .* \| 2 points" "$T/report.txt"
done
"$SCAFFOLD" report "$D" --html "$T/r.html" > /dev/null 2> "$T/e2"; rc=$?
check "report --html exits 0 (got $rc: $(cat "$T/e2"))" test "$rc" -eq 0
H=$T/r.html
check "HTML: the granularity chart" contains "$H" '<svg class="granularity"'
n=$(grep -c '<polyline class="series"' "$H")
check "HTML: one curve per runtime/workers (got $n)" test "$n" -eq 3
check "HTML: the 50 % line" contains "$H" '<line class="level"'
check "HTML: log x axis" contains "$H" 'mean task duration (us, log scale)'
check "HTML: the METG table" contains "$H" '<table class="metg">'
check "HTML: a METG row" grep -qE '<tr><th class="name">sequential/1</th><td>' "$H"
check "HTML: no external reference" lacks "$H" '<img'
"$SCAFFOLD" summary "$D" -o "$T/s.json" > /dev/null 2>&1
check "summary keeps the pooled records" contains "$T/s.json" '"granularity"'
"$SCAFFOLD" report "$T/s.json" > "$T/report2.txt" 2>&1
grep -A5 'Runtime granularity' "$T/report.txt" > "$T/g1"
grep -A5 'Runtime granularity' "$T/report2.txt" > "$T/g2"
check "the summary's METG table equals the directory's" cmp -s "$T/g1" "$T/g2"

# one shape per runtime (the runtimes profile's layout): no curve, no section, the report as before
O=$T/one
(cd "$T" && "$SCAFFOLD" jobs runtimes-sweep -o "$O" --name ps3b1s4-starpu1 ps3b1s4-sequential1 -- --max-time 0.2 > /dev/null 2>&1)
"$SCAFFOLD" report "$O" --html "$T/o.html" > "$T/o.txt" 2>&1
check "one point per series: no METG table" lacks "$T/o.txt" "Runtime granularity"
check "one point per series: no chart" lacks "$T/o.html" 'class="granularity"'
finish

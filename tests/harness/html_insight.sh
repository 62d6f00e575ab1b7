#!/usr/bin/env bash
# The HTML report's scheduling-insight sections: the machine block from the results'
# machine records (CPU model, cores, memory, GPUs, StarPU version and features, BLAS core, CPU kernels), the
# units line, the scaling chart of progression results (samples/s against workers, measured and
# ideal lines), the scheduler x worker-mix matrix of schedulers.<scheduler>__<mix>__<size> results
# (samples/s, % of the bound's samples/s, the baseline's samples/s with --compare), also in the text
# report; checked structurally, then rendered by headless Chromium when installed.
. "$(dirname "$0")/lib.sh"

D=$T/res
fake_run "$D" schedulers.eager__cpu2__ps5b16 0.0 '{"job": {}}' --fake-rate 50 --fake-bound 100 --max-count 500
fake_run "$D" schedulers.dmda__cpu2__ps5b16 0.0 '{"job": {}}' --fake-rate 80 --fake-bound 100 --max-count 800
fake_run "$D" schedulers.dmda__cpu1_ocl1__ps5b16 0.0 '{"job": {}}' --fake-rate 30 --max-count 300
fake_run "$D" schedulers.ws__cpu2__ps5b16 0.0 '{"job": {}}' --fake-rate 120 --fake-bound 100 --max-count 1200
fake_run "$D" schedulers.my-sched__cpu2__ps5b16 0.0 '{"job": {}}' --fake-rate 10 --fake-bound 40 --max-count 100
PR='"partition_scheme": {"type": "progression"}'
fake_run "$D" p.scale 0.0 "{\"job\": {$PR}, \"devices\": [0]}" --fake-rate 10 --max-count 100
fake_run "$D" p.scale 1.0 "{\"job\": {$PR}, \"devices\": [0, 1]}" --fake-rate 18 --max-count 180
fake_run "$D" p.scale 3.0 "{\"job\": {$PR}, \"devices\": [0, 1, 2, 3]}" --fake-rate 30 --max-count 300
cat > "$T/base.json" <<'J'
{"schedulers.eager__cpu2__ps5b16": {"n": 1, "failures": 0, "train": {"n": 1, "mean": 40, "std": 0}}}
J
"$SCAFFOLD" report "$D" --compare "$T/base.json" --html "$T/r.html" > /dev/null 2> "$T/e1"; rc=$?
check "report --html exits 0 (got $rc: $(cat "$T/e1"))" test "$rc" -eq 0
H=$T/r.html
check "machine block" contains "$H" '<h2>Machine</h2>'
model=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //; s/&/\&amp;/g; s/</\&lt;/g')
[ -n "$model" ] && check "CPU model of this machine" contains "$H" "$model"
check "cores row with a number" grep -qE '<tr><th>cores</th><td>[0-9]+</td></tr>' "$H"
check "memory in MiB" grep -qE '<tr><th>memory</th><td>[0-9]+ MiB</td></tr>' "$H"
check "GPU row" grep -qE '<tr><th>NVIDIA GPUs</th><td>[0-9]+</td></tr>' "$H"
check "StarPU version" grep -qE '<tr><th>StarPU</th><td>1\.[0-9]+\.[0-9]+</td></tr>' "$H"
check "StarPU features" grep -qE '<tr><th>StarPU features</th><td>CPU' "$H"
check "BLAS core row (fake results record none)" contains "$H" '<tr><th>BLAS core (OpenBLAS)</th><td>not recorded</td></tr>'
check "CPU kernels row (fake results record none)" contains "$H" '<tr><th>CPU kernels (SF_CPU_ISA)</th><td>not recorded</td></tr>'
check "units line" contains "$H" 'Units: perf, perf_base, perf_adj, perf_base_adj in samples/s'
check "scaling section" contains "$H" 'Worker scaling (samples/s against CPU workers, ideal = linear)'
check "scaling chart of p.scale" contains "$H" '<h3>p.scale</h3>'
check "scaling chart axes" bash -c "grep -q '>CPU workers</text>' '$H' && grep -q '>samples/s</text>' '$H'"
check "measured line through 3 points" grep -qE '<polyline class="measured"[^>]*points="[0-9]+,[0-9]+ [0-9]+,[0-9]+ [0-9]+,[0-9]+"' "$H"
check "ideal line" contains "$H" '<polyline class="ideal"'
check "scheduler matrix" contains "$H" '<table class="schedulers">'
check "matrix columns are the mixes" bash -c "grep -q '<th>cpu1_ocl1__ps5b16</th><th>cpu2__ps5b16</th>' '$H'"
check "known schedulers first, in order" bash -c "grep -o '<th class=\"name\">[a-z-]*</th>' '$H' | tr '\n' ' ' | grep -q 'eager.*dmda.*my-sched'"
check "eager: 50 samples/s, 50% of bound, baseline 40" contains "$H" '<td>50.000 samples/s<br>50% of bound<br>baseline 40.000 samples/s</td>'
check "dmda: 80% of bound" contains "$H" '<td>80.000 samples/s<br>80% of bound</td>'
check "ws: above its bound, flagged" contains "$H" '120% of bound: not a bound here</span>'
check "no bound: n/a" contains "$H" '<td>30.000 samples/s<br>bound n/a</td>'
check "missing cell" contains "$H" '<td>-</td>'
for tag in table tr svg h2 h3 title; do
  o=$(grep -o "<$tag[ >]" "$H" | wc -l); c=$(grep -o "</$tag>" "$H" | wc -l)
  check "<$tag> balanced ($o open, $c closed)" test "$o" -eq "$c" -a "$o" -gt 0
done
for bad in 'http://' 'https://' '<script' '<link' '<img' 'src=' 'url('; do
  check "no external resource: $bad" lacks "$H" "$bad"
done
# the text report carries the same matrix
"$SCAFFOLD" report "$D" --compare "$T/base.json" > "$T/text" 2>&1
check "text: matrix heading" contains "$T/text" "Schedulers x worker mixes: steady samples/s (% of the samples/s the lower bound allows, bound: 1) / baseline samples/s"
check "text: eager row" grep -qE '^eager +- +50\.000 \(50%\) / 40\.000$' "$T/text"
check "text: dmda row" grep -qE '^dmda +30\.000 \(-\) / - +80\.000 \(80%\) / -$' "$T/text"
check "text: ws row flagged" grep -qE '^ws +- +120\.000 \(120%!\) / -$' "$T/text"
check "text: footnote for the flagged cell" grep -q '^!: 1 cell measured faster than the lower bound' "$T/text"
check "text: unknown scheduler last" bash -c "grep -A4 '^scheduler ' '$T/text' | tail -1 | grep -q '^my-sched '"
# a summary keeps the machine record and the bound
"$SCAFFOLD" summary "$D" -o "$T/s.json" > /dev/null 2>&1
check "summary has _machine" contains "$T/s.json" '"_machine"'
check "summary has bound_rate" contains "$T/s.json" '"bound_rate"'
"$SCAFFOLD" report "$T/s.json" --compare "$T/base.json" --html "$T/r2.html" > /dev/null 2>&1
check "the report of the summary equals the report of the directory" cmp -s "$H" "$T/r2.html"

if [ "$FAILS" -ne 0 ]; then finish; exit 1; fi
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
  finish
  echo "SKIPPED: chromium not installed (scripts/install-deps)"
  exit 77
fi
timeout 60 "$BROWSER" --headless --no-sandbox --disable-gpu --screenshot="$T/shot.png" --window-size=1200,2400 \
  "file://$H" > "$T/chromium.log" 2>&1; rc=$?
check "chromium rendered the report (rc $rc; log: $(tail -2 "$T/chromium.log" | tr '\n' ' '))" test "$rc" -eq 0
check "screenshot written and non-trivial" test "$(stat -c %s "$T/shot.png" 2>/dev/null || echo 0)" -gt 5000
finish

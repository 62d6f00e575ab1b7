#!/usr/bin/env bash
# The HTML report: always checked structurally without a browser (one self-contained file: the
# results table, the Scores table, an inline SVG bar chart, no scripts, links or external URLs,
# balanced tags, milarun's colour rules); then rendered by headless Chromium when installed.
. "$(dirname "$0")/lib.sh"

D=$T/res
PD='{"partition_scheme": {"type": "per-device"}}'
fake_run "$D" h.fast 0.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-rate 200 --max-count 1000
fake_run "$D" h.slow 0.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-rate 20 --max-count 100
fake_run "$D" h.slow 1.0 "{\"job\": $PD, \"device\": 0, \"devices\": [0]}" --fake-mode fail --max-count 100
fake_run "$D" 'h.x<y&z' 0.0 "{\"job\": $PD}" --fake-rate 50 --max-count 300
cat > "$T/base.json" <<'J'
{"h.fast": {"n": 1, "failures": 0, "train": {"n": 1, "mean": 100, "std": 0}},
 "h.slow": {"n": 1, "failures": 0, "train": {"n": 1, "mean": 40, "std": 0}}}
J
printf 'h.fast: 8\nh.slow: 0.5\nh.x<y&z: 4\n' > "$T/w.yml"
"$SCAFFOLD" report "$D" --weights "$T/w.yml" --compare "$T/base.json" --price 1000 --compare-devices \
  --title 'Report <test>' --html "$T/r.html" > /dev/null 2> "$T/e1"; rc=$?
check "report --html exits 0 (got $rc)" test "$rc" -eq 0
H=$T/r.html
check "doctype" bash -c "head -1 '$H' | grep -q '<!DOCTYPE html>'"
check "title escaped" contains "$H" "<title>Report &lt;test&gt;</title>"
check "results table" contains "$H" '<table class="results">'
check "Scores table" contains "$H" '<h2>Scores</h2>'
check "score value with its class" grep -qE '<span class="score"> +[0-9]+\.[0-9]{2}</span>' "$H"
check "failure verdict with its class" grep -qE '<span class="FAIL"> +[0-9.]+% \(FAIL\)</span>' "$H"
check "RPP with its class" grep -qE '<span class="rpp"> +[0-9.]+</span>' "$H"
check "inline SVG chart" contains "$H" '<svg class="chart"'
check "chart of perf ratios" contains "$H" 'Performance ratio vs baseline'
check "names escaped in the table" contains "$H" 'h.x&lt;y&amp;z'
check "fail > 0 is red bold" contains "$H" '<td style="color: red; font-weight: bold">1</td>'
check "weight < 1 is grey" contains "$H" '<td style="color: #888">0.50</td>'
check "perf_ratio 2.00 >= 1.1 is green" contains "$H" '<td style="color: #080">      2.00</td>'
check "perf_ratio 0.50 < 0.75 is red" contains "$H" '<td style="color: #F00">      0.50</td>'
check "device comparison table" contains "$H" '<table class="devices">'
check "ends the document" bash -c "tail -1 '$H' | grep -q '</body></html>'"
for bad in 'http://' 'https://' '<script' '<link' '<img' '<iframe' 'src=' 'url(' '@import'; do
  check "no external resource: $bad" lacks "$H" "$bad"
done
for tag in table tr thead tbody svg h2 style title; do
  o=$(grep -o "<$tag[ >]" "$H" | wc -l); c=$(grep -o "</$tag>" "$H" | wc -l)
  check "<$tag> balanced ($o open, $c closed)" test "$o" -eq "$c" -a "$o" -gt 0
done
"$SCAFFOLD" report "$D" --html "$T/plain.html" > /dev/null 2>&1
check "without a baseline the chart shows perf_adj" contains "$T/plain.html" 'Adjusted performance (perf_adj)'
check "without weights there is no Scores table" lacks "$T/plain.html" '<h2>Scores</h2>'

if [ "$FAILS" -ne 0 ]; then finish; exit 1; fi
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
  finish
  echo "SKIPPED: chromium not installed (scripts/install-deps --with-browser)"
  exit 77
fi
timeout 60 "$BROWSER" --headless --no-sandbox --disable-gpu --screenshot="$T/shot.png" --window-size=1200,900 \
  "file://$H" > "$T/chromium.log" 2>&1; rc=$?
check "chromium rendered the report (rc $rc; log: $(tail -2 "$T/chromium.log" | tr '\n' ' '))" test "$rc" -eq 0
check "screenshot written and non-trivial" test "$(stat -c %s "$T/shot.png" 2>/dev/null || echo 0)" -gt 5000
finish

#!/usr/bin/env bash
# Runs that succeed but are too short for a steady rate (fewer than 3 rate slices, so
# mean(rates[-20:-2]) has no value): the text report, the HTML report, the summary JSON and `compare`
# say "too few samples (N < 3)" with the fix instead of a bare nan, and the scheduler matrix never
# shows them as FAIL, while a failed run stays FAIL. Baselines carry their commit: `report --compare`
# and `compare` warn in one line when a baseline comes from another commit or machine. The shipped
# smoke profile (with the fake benchmark) reports no nan at all.
. "$(dirname "$0")/lib.sh"
R=$T/res
# 20 samples at 100 samples/s in 0.1 s steps: 0.2 s of steps, 1 slice of 0.5 s
fake_run "$R" s.short 0.0 '{}' --max-count 20
fake_run "$R" s.mixed 0.0 '{}' --max-time 3
fake_run "$R" s.mixed 1.0 '{}' --max-count 20
fake_run "$R" s.failed 0.0 '{}' --max-time 3 --fake-mode fail
fake_run "$R" schedulers.eager__cpu__ps5b16 0.0 '{}' --max-count 20
fake_run "$R" schedulers.lws__cpu__ps5b16 0.0 '{}' --max-time 3 --fake-mode fail
fake_run "$R" schedulers.dmda__cpu__ps5b16 0.0 '{}' --max-time 3

# --- the result JSON: steady_rate null with its note; the commit ---
F=$(ls "$R"/s.short.J0.0.*.json)
check "result: steady_note on a 1-slice run" contains "$F" '"steady_note": "too few samples (1 < 3): a longer run: raise --max-time'
check "result: steady_rate null" contains "$F" '"steady_rate": null'
check "result: the commit recorded" grep -qE '"commit": "([0-9a-f]+|no-commit-id)"' "$F"

# --- text report ---
"$SCAFFOLD" report "$R" --html "$T/r.html" > "$T/r.txt" 2> "$T/r.err"; rc=$?
check "report exits 0 (got $rc; $(cat "$T/r.err"))" test "$rc" -eq 0
check "text: the short row says too few samples, its derived cells '-'" \
  grep -qE '^s\.short +1 +0 +too few samples \(1 < 3\) +- +-$' "$T/r.txt"
check "text: the scheduler row that was too short says too few samples" \
  grep -qE '^schedulers\.eager__cpu__ps5b16 +1 +0 +too few samples \(1 < 3\) +- +-$' "$T/r.txt"
check "text: no nan in a row whose runs succeeded" bash -c "! grep -E '^(s\.short|s\.mixed|schedulers\.eager|schedulers\.dmda)' '$T/r.txt' | grep -q nan"
check "text: a mixed group's perf comes from its measured run" grep -qE '^s\.mixed +2 +0 +100\.00 ' "$T/r.txt"
check "text: ... with a note on the run left out" contains "$T/r.txt" \
  "note: s.mixed: 1 successful run(s) with too few samples (1 < 3) left out of perf"
check "text: the note names the fix" contains "$T/r.txt" \
  "Fix: a longer run: raise --max-time (or --max-count), or lower --sample-duration"
check "text: a failed run stays a failure (fail 1, perf nan)" grep -qE '^s\.failed +1 +1 +nan ' "$T/r.txt"
# the scheduler matrix: the too-short cell is no FAIL; the failed cell is
check "matrix: the too-short cell" grep -qE '^eager +too few samples \(1 < 3\)$' "$T/r.txt"
check "matrix: the failed cell stays FAIL 1/1" grep -qE '^lws +FAIL 1/1$' "$T/r.txt"
check "matrix: the measured cell" grep -qE '^dmda +100\.000 \(-\)$' "$T/r.txt"
check "matrix: exactly one FAIL cell" test "$(sed -n '/^Schedulers x worker mixes/,$p' "$T/r.txt" | grep -c FAIL)" -eq 1
check "matrix: the too-short note" contains "$T/r.txt" \
  "too few samples: 1 cell whose runs succeeded but were too short for a steady rate (not failures)"

# --- HTML ---
H=$T/r.html
check "html: the short row's perf cell" grep -qE '<th class="name">s\.short</th><td>1</td><td style="color: black">0</td><td style="color: #888">too few samples \(1 &lt; 3\)</td><td>-</td><td>-</td></tr>' "$H"
check "html: no nan in the short row" bash -c "! grep -E '<th class=\"name\">s\.short</th>' '$H' | grep -q nan"
check "html: the note list" contains "$H" "<li>s.mixed: 1 successful run(s) with too few samples (1 &lt; 3) left out of perf</li>"
check "html: matrix cell too few, not failed" grep -qE '<tr><th class="name">eager</th><td><span class="short"[^>]*>too few samples \(1 &lt; 3\)</span><br>bound n/a</td>' "$H"
check "html: the failed matrix cell" grep -qE '<tr><th class="name">lws</th><td><span class="FAIL">failed \(1/1\)</span>' "$H"
check "html: the chart says why there is no bar" contains "$H" 'fill="#888">too few samples (1 &lt; 3)</text>'
check "html: no raw '<' from the note text" lacks "$H" "(1 < 3)"

# --- summary JSON: perf null plus the reason, read back by report and compare ---
"$SCAFFOLD" summary "$R" -o "$T/sum.json" 2> /dev/null
python3 - "$T/sum.json" > "$T/sum.check" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
g = d["s.short"]
bad = []
if g["train"]["mean"] is not None: bad.append(f"s.short train.mean {g['train']['mean']!r}, want null")
if g.get("too_few_samples") != {"runs": 1, "slices": 1, "needed": 3}: bad.append(f"too_few_samples {g.get('too_few_samples')!r}")
if not g.get("perf_note", "").startswith("too few samples (1 < 3): a longer run: raise --max-time"): bad.append(f"perf_note {g.get('perf_note')!r}")
if d["s.mixed"]["train"]["n"] != 1 or d["s.mixed"].get("too_few_samples", {}).get("runs") != 1: bad.append(f"s.mixed {d['s.mixed']!r}")
if "too_few_samples" in d["s.failed"]: bad.append("s.failed: a failure is no too-few-samples run")
if not (isinstance(d.get("_commits"), list) and len(d["_commits"]) == 1): bad.append(f"_commits {d.get('_commits')!r}")
print("; ".join(bad), end="")
PY
check "summary JSON: $(cat "$T/sum.check")" test ! -s "$T/sum.check"
"$SCAFFOLD" report "$T/sum.json" > "$T/rs.txt" 2>&1
check "the report of the summary equals the report of the directory" diff "$T/r.txt" "$T/rs.txt"
"$SCAFFOLD" compare "$T/sum.json" "$R" > "$T/c.txt" 2> "$T/c.err"
check "compare: both sides too few" grep -qE '^s\.short +0 +- +- +0 +- +- +-  A: too few samples \(1 < 3\); B: too few samples \(1 < 3\)$' "$T/c.txt"
check "compare: the failed test stays 'no good run'" grep -qE '^s\.failed .* no good run$' "$T/c.txt"
check "compare: the fix" contains "$T/c.txt" "fix: a longer run: raise --max-time"
check "compare: same commit and machine, no warning" test ! -s "$T/c.err"

# --- baselines carry their identity ---
"$SCAFFOLD" report "$R" --compare "$T/sum.json" > /dev/null 2> "$T/same.err"
check "report --compare, same commit and machine: no warning ($(cat "$T/same.err"))" test ! -s "$T/same.err"
COMMIT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["_commits"][0])' "$T/sum.json")
python3 - "$T/sum.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["_commits"] = ["0000000"]
json.dump(d, open(sys.argv[2] + "/other_commit.json", "w"))
d["_machine"]["cpu_model"] = "Some Other CPU"
json.dump(d, open(sys.argv[2] + "/other_both.json", "w"))
del d["_commits"]
d["_machine"] = json.load(open(sys.argv[1]))["_machine"]
json.dump(d, open(sys.argv[2] + "/old.json", "w"))
PY
"$SCAFFOLD" report "$R" --compare "$T/other_commit.json" > /dev/null 2> "$T/w1.err"
check "report --compare, other commit: one warning line" test "$(wc -l < "$T/w1.err")" -eq 1
check "... naming both commits" grep -qE "^scaffold: warning: the baseline $T/other_commit.json was measured on another commit: baseline commit 0000000 on .*, results \($R\) commit $COMMIT on " "$T/w1.err"
"$SCAFFOLD" report "$R" --compare "$T/other_both.json" > /dev/null 2> "$T/w2.err"
check "report --compare, other commit and machine: named" grep -qE "another commit and another machine: baseline commit 0000000 on Some Other CPU .*, results \($R\) commit $COMMIT on " "$T/w2.err"
"$SCAFFOLD" compare "$T/other_commit.json" "$R" > /dev/null 2> "$T/w3.err"
check "compare A B: warns that A (the baseline of B/A) is from another commit" \
  grep -qE "^scaffold: warning: the baseline $T/other_commit.json was measured on another commit: baseline commit 0000000 " "$T/w3.err"
"$SCAFFOLD" report "$R" --compare "$T/old.json" > /dev/null 2> "$T/w4.err"
check "a baseline without a commit: one note line" grep -qE "^scaffold: note: the baseline $T/old.json records no commit" "$T/w4.err"
python3 - "$T/sum.json" "$T" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["_kernel_identity"] = "conv3d=aaaaaaaa loss=bbbbbbbb"
json.dump(d, open(sys.argv[2] + "/kern_base.json", "w"))
d["_kernel_identity"] = "conv3d=cccccccc loss=bbbbbbbb dice=dddddddd"
json.dump(d, open(sys.argv[2] + "/kern_now.json", "w"))
PY
"$SCAFFOLD" compare "$T/kern_base.json" "$T/kern_now.json" > /dev/null 2> "$T/w5.err"
check "compare: a baseline of other kernels names the families that differ ($(cat "$T/w5.err"))" \
  grep -qE "^scaffold: warning: the baseline $T/kern_base.json was measured with other kernels: .*kernels that differ \(baseline -> results\): conv3d aaaaaaaa -> cccccccc, dice none -> dddddddd;" "$T/w5.err"
"$SCAFFOLD" compare "$T/kern_now.json" "$T/kern_now.json" > /dev/null 2> "$T/w6.err"
check "compare: the same kernels, no warning ($(cat "$T/w6.err"))" test ! -s "$T/w6.err"

# --- the shipped smoke profile, sized by time, with the fake benchmark: no nan anywhere ---
SF_HAVE_CUDA=0 SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" jobs smoke -o "$T/smoke" --no-cgroup > "$T/j.out" 2>&1; rc=$?
check "jobs smoke (fake benchmark) exits 0 (got $rc)" test "$rc" -eq 0
"$SCAFFOLD" report "$T/smoke" > "$T/smoke.txt" 2>&1
check "smoke report: 4 rows" test "$(grep -c '^smoke\.' "$T/smoke.txt")" -eq 4
check "smoke report: no nan" lacks "$T/smoke.txt" "nan"
check "smoke report: no too few samples" lacks "$T/smoke.txt" "too few"
# the old sizing by sample count, as on a machine much faster than it was sized for: honest, no nan
SF_HAVE_CUDA=0 SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" jobs smoke -o "$T/smoke_old" --no-cgroup -- --max-count 20 > /dev/null 2>&1
"$SCAFFOLD" report "$T/smoke_old" > "$T/smoke_old.txt" 2>&1
check "smoke sized by --max-count 20: every row too few samples" test "$(grep -cE '^smoke\.[a-z_.0-9]+ +1 +0 +too few samples \(1 < 3\)' "$T/smoke_old.txt")" -eq 4
check "smoke sized by --max-count 20: no nan" lacks "$T/smoke_old.txt" "nan"
finish

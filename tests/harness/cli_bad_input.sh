#!/usr/bin/env bash
# Bad input is reported, never a crash: a malformed profile (exit 2, file:line), unknown fields,
# an unknown --name (exit 2), a corrupt result JSON in the results directory (named with its parse
# error and skipped), an empty or missing results directory (non-zero exit, clear message).
. "$(dirname "$0")/lib.sh"

# --- malformed YAML: the error names the file and the line ---
cat > "$T/bad.yml" <<'Y'
setup:
  args: [--max-count, 10]
  set: {epochs: 1
train:
  args: []
Y
"$SCAFFOLD" jobs "$T/bad.yml" -o "$T/out" --dry-run > "$T/o1" 2> "$T/e1"; rc=$?
check "malformed profile exits 2 (got $rc)" test "$rc" -eq 2
check "malformed profile names file:line" grep -qE "bad.yml:[0-9]+: malformed YAML" "$T/e1"

# --- semantic errors: unknown field, weight in a profile, bad partition type, bad list ---
printf 'a:\n  args: [--max-count, 1]\nb:\n  config: x.yml\n  colour: red\n' > "$T/bad2.yml"
"$SCAFFOLD" jobs "$T/bad2.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e2"; rc=$?
check "unknown field exits 2 (got $rc)" test "$rc" -eq 2
check "unknown field at bad2.yml:5" contains "$T/e2" "bad2.yml:5: test 'b': unknown field 'colour'"
printf '"*":\n  weight: 8\nt: {}\n' > "$T/bad3.yml"
"$SCAFFOLD" jobs "$T/bad3.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e3"; rc=$?
check "weight in a profile exits 2 (got $rc)" test "$rc" -eq 2
check "weight in a profile: file:line and where weights live" contains "$T/e3" "bad3.yml:2: test 't': 'weight' does not belong"
printf 't:\n  partition_scheme: {type: per-gpu}\n' > "$T/bad4.yml"
"$SCAFFOLD" jobs "$T/bad4.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e4"; rc=$?
check "bad partition type exits 2 (got $rc)" test "$rc" -eq 2
check "bad partition type names file:line and choices" contains "$T/e4" "bad4.yml:2: partition_scheme.type: 'per-gpu' is not one of per-device, progression, normal"
printf 't:\n  args: --max-count\n' > "$T/bad5.yml"
"$SCAFFOLD" jobs "$T/bad5.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e5"; rc=$?
check "args not a list exits 2 (got $rc)" test "$rc" -eq 2
check "args not a list names file:line" contains "$T/e5" "bad5.yml:2: args: expected a list"
printf 't: {}\nt: {}\n' > "$T/bad6.yml"
"$SCAFFOLD" jobs "$T/bad6.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e6"; rc=$?
check "duplicate test exits 2 (got $rc)" test "$rc" -eq 2
check "duplicate test names both lines" contains "$T/e6" "bad6.yml:2: profile: 't' appears twice (first at line 1)"
# YAML aliases are refused (an alias cycle or nested aliases would make an endless or huge tree)
printf 'a: &x\n  args: [--max-count, 1]\nb: *x\n' > "$T/bad7.yml"
"$SCAFFOLD" jobs "$T/bad7.yml" -o "$T/out" --dry-run > /dev/null 2> "$T/e7a"; rc=$?
check "alias in a profile exits 2 (got $rc)" test "$rc" -eq 2
check "alias in a profile names file:line" contains "$T/e7a" "bad7.yml:3: alias '*x': YAML aliases are not supported"

# --- unknown test name ---
printf 'setup:\n  args: [--max-count, 10]\ntrain: {}\n' > "$T/good.yml"
"$SCAFFOLD" jobs "$T/good.yml" -o "$T/out" --dry-run --name train nosuch > /dev/null 2> "$T/e7"; rc=$?
check "unknown --name exits 2 (got $rc)" test "$rc" -eq 2
check "unknown --name lists the tests" contains "$T/e7" "unknown test 'nosuch' in $T/good.yml; its tests are: setup train"
"$SCAFFOLD" jobs "$T/nosuch-profile.yml" -o "$T/out" > /dev/null 2> "$T/e8"; rc=$?
check "missing profile exits 2 (got $rc)" test "$rc" -eq 2

# --- a corrupt result JSON is reported and skipped ---
mkdir -p "$T/res"
fake_run "$T/res" s.ok 0.0 '{}' --fake-rate 10 --max-count 20
printf '{"g": {"n": 14444444444444444441, "train": {}}}' > "$T/huge-summary.json"
"$SCAFFOLD" report "$T/res" --compare "$T/huge-summary.json" > /dev/null 2> "$T/e9c"; rc=$?
check "a summary with a huge n exits 2 (got $rc)" test "$rc" -eq 2
check "the huge n is named with file and group" \
  contains "$T/e9c" "huge-summary.json: group 'g': \"n\" is 1.44444444444444e+19, expected a whole number"
printf '{"name": "s.broken", "job_id": "0.0", "success": tr' > "$T/res/s.broken.J0.0.20200101-000000-000000.json"
echo '[1, 2, 3]' > "$T/res/notaresult.json"
"$SCAFFOLD" report "$T/res" > "$T/o9" 2> "$T/e9"; rc=$?
check "a corrupt result does not fail the report (rc $rc)" test "$rc" -eq 0
check "the corrupt file is named with its parse error" grep -qE "skipping .*s.broken.J0.0.20200101-000000-000000.json: invalid JSON at line 1, column [0-9]+" "$T/e9"
check "a non-result JSON is named and skipped" contains "$T/e9" "notaresult.json: not a result file"
check "the good result is still reported" grep -qE "^s.ok +1 +0 +10.00" "$T/o9"
rm -f "$T/res/s.broken.J0.0.20200101-000000-000000.json" "$T/res/notaresult.json"
# a device number no integer can hold: named and skipped, not cast (undefined behaviour)
printf '{"name": "s.huge", "job_id": "0.0", "success": true, "device_count": 1e300}' \
  > "$T/res/s.huge.J0.0.20200101-000000-000000.json"
"$SCAFFOLD" report "$T/res" > "$T/o9b" 2> "$T/e9b"; rc=$?
check "a result with a huge device_count does not fail the report (rc $rc)" test "$rc" -eq 0
check "the huge device_count is named" \
  contains "$T/e9b" "s.huge.J0.0.20200101-000000-000000.json: \"device_count\" is 1e+300, expected a whole number from 0 to 9007199254740992"
printf '{"name": "s.broken", "job_id": "0.0", "success": tr' > "$T/res/s.broken.J0.0.20200101-000000-000000.json"
"$SCAFFOLD" summary "$T/res" > "$T/o10" 2> "$T/e10"; rc=$?
check "summary skips the corrupt file too (rc $rc)" test "$rc" -eq 0
check "summary names the corrupt file" contains "$T/e10" "s.broken.J0.0.20200101-000000-000000.json"

# --- empty / missing results directory ---
mkdir -p "$T/empty"
"$SCAFFOLD" report "$T/empty" > /dev/null 2> "$T/e11"; rc=$?
check "empty OUTDIR: non-zero exit (got $rc)" test "$rc" -ne 0
check "empty OUTDIR: clear message" contains "$T/e11" "no results to report in $T/empty"
"$SCAFFOLD" summary "$T/empty" > /dev/null 2> "$T/e12"; rc=$?
check "summary of an empty OUTDIR: non-zero exit (got $rc)" test "$rc" -ne 0
"$SCAFFOLD" report "$T/does-not-exist" > /dev/null 2> "$T/e13"; rc=$?
check "missing OUTDIR: non-zero exit (got $rc)" test "$rc" -ne 0
check "missing OUTDIR: names it" contains "$T/e13" "$T/does-not-exist: No such file or directory"
printf 's.ok: {weight: heavy}\n' > "$T/w.yml"
"$SCAFFOLD" report "$T/res" --weights "$T/w.yml" > /dev/null 2> "$T/e14"; rc=$?
check "bad weight exits 2 (got $rc)" test "$rc" -eq 2
check "bad weight names file:line" contains "$T/e14" "w.yml:1: 's.ok': expected a weight >= 0"
"$SCAFFOLD" report "$T/res" --bogus > /dev/null 2>&1; rc=$?
check "unknown report option exits 2 (got $rc)" test "$rc" -eq 2
finish

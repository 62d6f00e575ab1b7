#!/usr/bin/env bash
# Sanitizer build only. A UBSan report must reach the log directory (UBSAN_OPTIONS log_path), where
# scripts/sanitizer-logs reads it, not only the process's stderr: ubsan_probe overflows a signed int
# on purpose; with the suite's UBSAN_OPTIONS it must exit non-zero, leave ubsan.PID with the report,
# and scripts/sanitizer-logs on that directory must fail naming the error.
set -u
: "${UBSAN_PROBE:?}" "${SF_SOURCE_DIR:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-ubsan-XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/logs"
# logs go to $T: this report is on purpose and must not reach the suite's log directory
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$T/logs/ubsan" "$UBSAN_PROBE" > "$T/out" 2>&1
rc=$?
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$rc" -ne 0 ] || fail "ubsan_probe exited 0: UBSan did not halt on the overflow (output: $(cat "$T/out"))"
n=$(find "$T/logs" -name 'ubsan.*' | wc -l)
[ "$n" = 1 ] || fail "expected 1 UBSan log file in the log directory, found $n; the report went to stderr" \
  "instead: $(cat "$T/out")"
grep -q "runtime error: signed integer overflow" "$T"/logs/ubsan.* ||
  fail "the UBSan log holds no overflow report: $(cat "$T"/logs/ubsan.*)"
echo "ok   UBSan report in $(basename "$T"/logs/ubsan.*) (exit $rc)"
summary=$(python3 "$SF_SOURCE_DIR/scripts/sanitizer-logs" --root "$SF_SOURCE_DIR" "$T/logs" 2>&1)
src=$?
[ "$src" -ne 0 ] || fail "scripts/sanitizer-logs exited 0 on a directory with a UBSan report: $summary"
grep -q "signed integer overflow" <<<"$summary" || fail "scripts/sanitizer-logs does not name the error: $summary"
echo "ok   scripts/sanitizer-logs fails (exit $src) and names the overflow"
echo "2 checks, 0 failed"

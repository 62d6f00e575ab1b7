#!/usr/bin/env bash
# Sanitizer build only. The sanitizer suite's ASAN_OPTIONS keep LeakSanitizer's end-of-process check
# working when a dlopen'ed library's dynamic TLS block lands 16 bytes into a page (as
# under hetero_mix, PoCL + libclang-cpp): dtls_probe sets that layout up; with the suite's options it must
# exit 0 and its log must hold no sanitizer fatal error. Then, for the record, the same run with
# intercept_tls_get_addr=1 (the runtime's default) shows whether this sanitizer runtime still crashes
# there; that control run never fails the test. See tests/sanitize/README.md.
set -u
: "${DTLS_PROBE:?}" "${DTLS_PROBE_LIB:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-dtls-XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/suite" "$T/control"
FATAL='LeakSanitizer has encountered a fatal error|Tracer caught signal'
# logs go to $T (the control's crash is on purpose and must not reach the suite's log directory)
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1:log_path=$T/suite/asan" "$DTLS_PROBE" "$DTLS_PROBE_LIB" > "$T/out" 2>&1
rc=$?
cat "$T/out"
if [ "$rc" -eq 3 ]; then
  echo "FAIL: dtls_probe could not place the TLS block 16 bytes into a page, so this test proves nothing" >&2
  exit 1
fi
if [ "$rc" -ne 0 ] || grep -qE "$FATAL" "$T"/suite/* 2>/dev/null; then
  echo "FAIL: dtls_probe exited $rc with ASAN_OPTIONS='${ASAN_OPTIONS:-}': LeakSanitizer's check did not" \
    "complete (the sanitizer suite must set intercept_tls_get_addr=0, as scripts/test-sanitize does). Its log:" >&2
  cat "$T"/suite/* >&2 2>/dev/null
  exit 1
fi
echo "ok   with the suite's ASAN_OPTIONS the leak check completed (exit 0, no sanitizer fatal error)"

ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1:intercept_tls_get_addr=1:log_path=$T/control/asan" \
  "$DTLS_PROBE" "$DTLS_PROBE_LIB" > /dev/null 2>&1
rc=$?
if grep -qE "$FATAL" "$T"/control/* 2>/dev/null; then
  echo "control: with intercept_tls_get_addr=1 LeakSanitizer's tracer crashes (exit $rc):" \
    "$(grep -hE "$FATAL" "$T"/control/* | tr '\n' ' ')"
else
  echo "control: with intercept_tls_get_addr=1 this sanitizer runtime survives the layout (exit $rc):" \
    "its __tls_get_addr interceptor no longer guesses (LLVM >= 17); the option is then harmless"
fi
echo "1 checks, 0 failed"

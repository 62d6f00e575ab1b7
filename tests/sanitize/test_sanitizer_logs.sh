#!/usr/bin/env bash
# scripts/sanitizer-logs on fabricated log directories: a sanitizer runtime's own fatal error
# (LeakSanitizer's tracer crashing, a nested bug, an internal CHECK) is an error that names its log
# file and exits 1; an ordinary ASan report still is; a clean run (suppressed leaks only, or no
# log at all) exits 0 with "no sanitizer error and no unsuppressed leak".
set -u
: "${SF_SOURCE_DIR:?SF_SOURCE_DIR must point to the source tree}"
LOGS_TOOL=$SF_SOURCE_DIR/scripts/sanitizer-logs
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-sanlogs-XXXXXX")
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

# run_case NAME WANT_RC MUST_HOLD...: runs sanitizer-logs on $T/NAME; checks its exit status and
# that its output holds each string.
run_case() {
  local name=$1 want=$2; shift 2
  local out=$T/$name.out rc
  python3 "$LOGS_TOOL" --root "$SF_SOURCE_DIR" "$T/$name" > "$out" 2>&1; rc=$?
  CHECKS=$((CHECKS + 1))
  if [ "$rc" -ne "$want" ]; then
    fail "$name: sanitizer-logs exited $rc, expected $want"
    sed 's/^/  | /' "$out" >&2
    return
  fi
  local s
  for s in "$@"; do
    CHECKS=$((CHECKS + 1))
    grep -qF -- "$s" "$out" || { fail "$name: output lacks '$s'"; sed 's/^/  | /' "$out" >&2; }
  done
  echo "ok   $name: exit $rc"
}

# The log that hetero_mix left on a 2-core Xeon when LeakSanitizer crashed at exit: the only content of its file.
mkdir -p "$T/tracer"
cat > "$T/tracer/asan.4242" <<'L'
Tracer caught signal 11: addr=0x2f78 pc=0x7f1a2b3c80f0 sp=0x7f1a29dffd10
==4242==LeakSanitizer has encountered a fatal error.
==4242==HINT: For debugging, try setting environment variable LSAN_OPTIONS=verbosity=1:log_threads=1
==4242==HINT: LeakSanitizer does not work under ptrace (strace, gdb, etc)
L
run_case tracer 1 "$T/tracer/asan.4242" "LeakSanitizer has encountered a fatal error" "Tracer caught signal 11" \
  "ERRORS (1)"
if grep -qF "no sanitizer error" "$T/tracer.out"; then fail "tracer: output still says 'no sanitizer error'"; fi

mkdir -p "$T/nested"
cat > "$T/nested/asan.5151" <<'L'
==5151==AddressSanitizer: nested bug in the same thread, aborting.
L
run_case nested 1 "$T/nested/asan.5151" "nested bug in the same thread"

mkdir -p "$T/check"
cat > "$T/check/asan.6161" <<'L'
==6161==AddressSanitizer: CHECK failed: sanitizer_allocator_primary64.h:133 "((kSpaceBeg)) == ((address_range.Init(TotalSpaceSize, PrimaryAllocatorName, kSpaceBeg)))" (0x600000000000, 0xfffffffffffffff4) (tid=6161)
L
run_case check 1 "$T/check/asan.6161" "CHECK failed"

# an ordinary ASan error next to a clean process: still an error, named by its file
mkdir -p "$T/asan"
cat > "$T/asan/asan.7171" <<'L'
=================================================================
==7171==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014 at pc 0x55d1 bp 0x7ffc sp 0x7ffc
READ of size 4 at 0x602000000014 thread T0
    #0 0x55d1c0de in sf_sum /src/util/sum.c:12
    #1 0x55d1c0df in main /src/main.c:40
L
printf '' > "$T/asan/asan.7172"
run_case asan 1 "$T/asan/asan.7171" "heap-buffer-overflow" "sf_sum"

# clean: one process that only used suppressions, one that wrote nothing
mkdir -p "$T/clean"
cat > "$T/clean/asan.8181" <<'L'
-----------------------------------------------------
Suppressions used:
  count      bytes template
      3        144 _starpu_notify_data_dependencies
-----------------------------------------------------

L
printf '' > "$T/clean/asan.8182"
run_case clean 0 "no sanitizer error and no unsuppressed leak" "_starpu_notify_data_dependencies"
mkdir -p "$T/empty"
run_case empty 0 "no sanitizer error and no unsuppressed leak"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]

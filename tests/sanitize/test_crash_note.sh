#!/usr/bin/env bash
# tests/common/crash_note.c: a test process that dies by a signal says on stderr which signal and
# its pid ("killed by SIGABRT"), and in a sanitizer build names the ASan log file of that pid
# (log_path=DIR/asan gives DIR/asan.PID), so CTest's "Subprocess aborted" comes with a reason.
set -u
: "${CRASH_NOTE_PROBE:?CRASH_NOTE_PROBE must point to the crash_note_probe executable}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-crashnote-XXXXXX")
trap 'rm -rf "$T"' EXIT
FAILS=0
CHECKS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
# the probe's sanitizer reports go to $T, not to the suite's log directory (they are on purpose)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:abort_on_error=1:detect_leaks=0:log_path=$T/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$T/ubsan"

# die MODE WANT_RC SIGNAL: runs the probe; checks exit status and the note; sets $PID_SEEN.
die() {
  local mode=$1 want=$2 sig=$3 rc
  "$CRASH_NOTE_PROBE" "$mode" > "$T/$mode.out" 2> "$T/$mode.err" & local pid=$!
  wait "$pid"; rc=$?
  CHECKS=$((CHECKS + 2))
  [ "$rc" -eq "$want" ] || fail "$mode: exit status $rc, expected $want (killed by $sig)"
  grep -qF "crash_note_probe: test process $pid killed by $sig" "$T/$mode.err" ||
    { fail "$mode: no note naming $sig and pid $pid on stderr"; sed 's/^/  | /' "$T/$mode.err" >&2; }
  PID_SEEN=$pid
  echo "ok   $mode: exit $rc; $(grep -F 'killed by' "$T/$mode.err")"
}

die abort 134 SIGABRT
if "$CRASH_NOTE_PROBE" asan; then
  die use-after-free 134 SIGABRT
  CHECKS=$((CHECKS + 2))
  [ -s "$T/asan.$PID_SEEN" ] || fail "use-after-free: no ASan log $T/asan.$PID_SEEN"
  grep -qF "report (ASan/UBSan error, LeakSanitizer failure or leaks): $T/asan.$PID_SEEN" "$T/use-after-free.err" ||
    fail "use-after-free: the note does not name $T/asan.$PID_SEEN"
  CHECKS=$((CHECKS + 1))
  grep -qF "no sanitizer log file for this process ($T/asan." "$T/abort.err" ||
    fail "abort: the note does not say that no sanitizer log was written"
else
  die segv 139 SIGSEGV
fi
echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]

#!/usr/bin/env bash
# `scaffold run` closes milarun's failure gap: a benchmark killed by a signal or exiting without a
# result gets a FAIL record written by the launcher (cause + stderr tail); a result the benchmark
# wrote itself (success false, NaN metric) is kept as is; SIGTERM to the launcher kills the
# benchmark's whole process group (grandchildren included) and records nothing.
. "$(dirname "$0")/lib.sh"
run() { SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" run "$@"; }
# A process is alive if it exists and is not a zombie (a killed orphan may wait for init to reap it).
alive() { [ -r "/proc/$1/stat" ] && ! sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }

# --- segfault: FAIL record by the launcher (ASan builds: let the signal kill the process) ---
ASAN_OPTIONS="${ASAN_OPTIONS:-}:handle_segv=0" run -o "$T/segv" --experiment-name s.crash --job-id 0.0 -- --fake-mode segv > "$T/o1" 2> "$T/e1"; rc=$?
check "segv: run exits 128+11 (got $rc)" test "$rc" -eq 139
F=$(ls "$T"/segv/s.crash.J0.0.FAIL.*.json 2>/dev/null)
check "segv: one FAIL record" test "$(echo "$F" | grep -c json)" -eq 1
check "segv: the cause is recorded" contains "$F" "was killed by signal 11 (Segmentation fault)"
check "segv: the stderr tail is recorded" contains "$F" "fake_bench: about to crash"
check "segv: success false" contains "$F" '"success": false'
check "segv: call.argv recorded" contains "$F" '"argv": ["--fake-mode", "segv"]'
check "segv: the launcher says where it recorded it" contains "$T/e1" "recorded $F"

# --- sf_die-style exit: the benchmark's own exit hook writes the record; run adds none ---
run -o "$T/exit3" --experiment-name s.exit --job-id 0.0 -- --fake-mode exit3 > /dev/null 2> "$T/e2"; rc=$?
check "exit3: run passes the status on (got $rc)" test "$rc" -eq 3
N=$(ls "$T"/exit3/*.json | wc -l)
check "exit3: exactly one record (got $N)" test "$N" -eq 1
F=$(ls "$T"/exit3/s.exit.J0.0.FAIL.*.json 2>/dev/null)
check "exit3: FAIL record with the status" contains "$F" "exited with status 3 before writing its result"

# --- success false written by the benchmark ---
run -o "$T/fail" --experiment-name s.fail --job-id 0.0 -- --fake-mode fail --max-count 20 > /dev/null 2>&1; rc=$?
check "fail: run exits 0 (got $rc)" test "$rc" -eq 0
N=$(ls "$T"/fail/*.json | wc -l)
check "fail: exactly one record (got $N)" test "$N" -eq 1
check "fail: it is the benchmark's FAIL file" bash -c "ls '$T'/fail/s.fail.J0.0.FAIL.*.json > /dev/null"

# --- NaN metric: not a FAIL file, but a failure in the report ---
run -o "$T/fail" --experiment-name s.nan --job-id 0.0 -- --fake-mode nan --max-count 20 > /dev/null 2>&1
run -o "$T/fail" --experiment-name s.nan --job-id 1.0 -- --max-count 20 > /dev/null 2>&1
check "nan: no FAIL in the file name" bash -c "ls '$T'/fail/s.nan.J0.0.2*.json > /dev/null"
check "nan: NaN written as null" grep -q '"loss": null' "$T"/fail/s.nan.J0.0.*.json
"$SCAFFOLD" report "$T/fail" > "$T/o3" 2>/dev/null
check "nan: counted as a failure (n 2, fail 1)" grep -qE "^s.nan +2 +1 " "$T/o3"
check "fail: counted as a failure (n 1, fail 1)" grep -qE "^s.fail +1 +1 " "$T/o3"

# --- SIGTERM to the launcher: the whole process group goes ---
SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" run -o "$T/sleep" --experiment-name s.sleep --job-id 0.0 -- --fake-mode sleep --fake-pidfile "$T/gpid" \
  > /dev/null 2> "$T/e4" &
RUN=$!
for _ in $(seq 100); do [ -s "$T/gpid" ] && break; sleep 0.05; done
GPID=$(cat "$T/gpid" 2>/dev/null)
check "sleep: the grandchild started" test -n "$GPID"
check "sleep: the grandchild is alive before the signal" alive "$GPID"
kill -TERM "$RUN"
wait "$RUN"; rc=$?
check "sleep: run exits 130 when interrupted (got $rc)" test "$rc" -eq 130
for _ in $(seq 40); do alive "$GPID" || break; sleep 0.05; done
check "sleep: the grandchild was killed with its group" eval "! alive $GPID"
check "sleep: interrupted runs record nothing" test -z "$(ls "$T"/sleep 2>/dev/null)"
check "sleep: the launcher says so" contains "$T/e4" "interrupted by signal 15"

# --- usage errors ---
"$SCAFFOLD" run --experiment-name x -- a > /dev/null 2>&1; rc=$?
check "run without -o exits 2 (got $rc)" test "$rc" -eq 2
"$SCAFFOLD" run -o "$T/x" --extra '{bad' -- a > /dev/null 2>&1; rc=$?
check "run with bad --extra exits 2 (got $rc)" test "$rc" -eq 2
"$SCAFFOLD" run -o "$T/x" --job-id 3.1 --experiment-name s.x --dry-run -- -c c.yml > "$T/o5"; rc=$?
check "run --dry-run prints the benchmark command" grep -qE "benchmark -c c.yml --out $T/x --experiment-name s.x --job-id 3.1$" "$T/o5"
finish

#!/usr/bin/env bash
# `scaffold rerun` treats a result file as data: a file whose environ holds a test hook, a loader or
# shell variable, a library-loading or path variable or a bad switch value, whose call.argv holds
# anything but `scaffold benchmark`'s own options, or whose name is not a plain name, is refused
# with exit status 2 and a message naming the key, before anything runs: the planted program never
# runs, nothing is written, and --dry-run refuses too. `scaffold run` refuses a name that is a path.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/res"
STARPU_SCHED=dmda fake_run "$T/res" s.t 1.0 '{}' -c "$T/cfg.yml" --set epochs=2 --max-count 20
R=$(ls "$T"/res/s.t.J1.0.*.json)
check "one genuine result written" test -f "$R"
check "the genuine result records no test hook" lacks "$R" SF_RUN_BENCHMARK_EXE

# The planted program: it leaves a mark if it ever runs.
printf '#!/bin/sh\ntouch "%s/PWNED"\n' "$T" > "$T/evil.sh"
chmod +x "$T/evil.sh"

# forge NAME PYTHON-STATEMENT: a copy of the genuine result edited by one statement on dict r.
forge() {
  python3 - "$R" "$T/$1.json" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(r, open(sys.argv[2], "w"), indent=2)
EOF
}

# refused CASE WANT [--dry-run]: rerun of $T/CASE.json exits 2, says WANT and "nothing was run"
# where it refuses an environ, runs nothing and writes nothing.
refused() {
  local case=$1 want=$2; shift 2
  env -u SF_RUN_BENCHMARK_EXE "$SCAFFOLD" rerun "$T/$case.json" -o "$T/out-$case" "$@" > "$T/$case.o" 2> "$T/$case.e"
  local rc=$?
  check "$case: rerun exits 2 (got $rc)" test "$rc" -eq 2
  check "$case: the message names the key" contains "$T/$case.e" "$want"
  check "$case: the banner is not printed (refused before anything)" lacks "$T/$case.o" "=== re-run command ==="
  check "$case: the planted program did not run" test ! -e "$T/PWNED"
  check "$case: nothing was written" test ! -e "$T/out-$case"
}

forge hook "r['environ']['SF_RUN_BENCHMARK_EXE'] = '$T/evil.sh'"
refused hook "environ.SF_RUN_BENCHMARK_EXE is a test hook"
refused hook "environ.SF_RUN_BENCHMARK_EXE is a test hook" --dry-run
check "hook: the message says nothing was run" contains "$T/hook.e" "refused, nothing was run"

forge preload "r['environ']['LD_PRELOAD'] = '$T/evil.so'"
refused preload "environ.LD_PRELOAD is read by the dynamic loader or the shell"

forge path "r['environ']['PATH'] = '$T'"
refused path "environ.PATH is read by the dynamic loader or the shell"

forge omptool "r['environ']['OMP_TOOL_LIBRARIES'] = '$T/evil.so'"
refused omptool "environ.OMP_TOOL_LIBRARIES is not a variable that a run records"

forge starpuhome "r['environ']['STARPU_HOME'] = '/'"
refused starpuhome "environ.STARPU_HOME is not a variable that a run records"

forge statsfile "r['environ']['STARPU_WORKER_STATS_FILE'] = '$T/clobbered'"
refused statsfile "environ.STARPU_WORKER_STATS_FILE is not a variable that a run records"

forge oclsrc "r['environ']['SF_OPENCL_KERNEL_DIR'] = '$T'"
refused oclsrc "environ.SF_OPENCL_KERNEL_DIR names a directory on the machine that wrote the file"

forge badisa "r['environ']['SF_CPU_ISA'] = 'avx9000'"
refused badisa "environ.SF_CPU_ISA='avx9000': expected none | c | avx2 | avx512"

forge hostname "r['environ']['STARPU_HOSTNAME'] = '../../etc'"
refused hostname "STARPU_HOSTNAME='../../etc': expected a machine-class name"

forge two "r['environ']['LD_PRELOAD'] = 'x.so'; r['environ']['SF_TEST_CKPT_COMMIT_DELAY_MS'] = '5'"
refused two "2 recorded variables may not be applied"
check "two: both keys are named" contains "$T/two.e" "environ.SF_TEST_CKPT_COMMIT_DELAY_MS is a test hook"

forge notbench "r['call']['argv'] += ['--fake-mode', 'segv']"
refused notbench "call.argv: '--fake-mode' is not an option of \`scaffold benchmark\`"

forge positional "r['call']['argv'] += ['$T/evil.sh']"
refused positional "call.argv: '$T/evil.sh' is not an option of \`scaffold benchmark\`"

forge resume "r['call']['argv'] += ['--restart', '--run-dir', '$T']"
refused resume "call.argv: '--restart': a rerun starts a new run"

forge outdir "r['call']['argv'] += ['--out', '$T/elsewhere']"
refused outdir "call.argv: '--out' is set by rerun itself"
check "outdir: nothing written to the forged --out" test ! -e "$T/elsewhere"

forge badkey "r['call']['argv'] += ['--set', 'no_such_key=1']"
refused badkey "'no_such_key' is not a configuration key"

forge badcount "r['call']['argv'] += ['--max-count', '-5']"
refused badcount "--max-count '-5': expected a positive integer"

forge dangling "r['call']['argv'] += ['--set']"
refused dangling "call.argv: option '--set' lacks its value"

forge dotdot "r['name'] = '../../evil'"
refused dotdot "\"name\" '../../evil' is not a plain experiment name"

forge slash "r['name'] = 'a/b'"
refused slash "\"name\" 'a/b' is not a plain experiment name"

# The extra arguments after '--' are checked with the file's.
env -u SF_RUN_BENCHMARK_EXE "$SCAFFOLD" rerun "$R" -o "$T/out-extra" -- --restart > /dev/null 2> "$T/extra.e"; rc=$?
check "extra --restart: rerun exits 2 (got $rc)" test "$rc" -eq 2
check "extra --restart: named" contains "$T/extra.e" "'--restart': a rerun starts a new run"

# `scaffold run` (and so `scaffold benchmark`) refuses a name that would put the result elsewhere.
SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" run -o "$T/res2" --experiment-name ../up -- --max-count 4 \
  > /dev/null 2> "$T/run.e"; rc=$?
check "run --experiment-name ../up exits 2 (got $rc)" test "$rc" -eq 2
check "run names the bad name" contains "$T/run.e" "--experiment-name '../up': expected a name like"
check "no result outside OUT" test ! -e "$T/up.json" -a -z "$(ls "$T"/up.* 2>/dev/null)"

# The genuine file still reruns (the stand-in benchmark from the tester's own environment).
SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" rerun "$R" -o "$T/ok" -- --max-count 4 > /dev/null 2> "$T/ok.e"; rc=$?
check "the genuine result reruns (rc $rc)" test "$rc" -eq 0
check "the genuine rerun wrote its result" test -n "$(ls "$T"/ok/s.t.*.json 2>/dev/null)"
check "the planted program never ran" test ! -e "$T/PWNED"

# A genuine result of the real benchmark reruns unchanged: same arguments, same recorded variables.
(cd "$T" && STARPU_SCHED=eager "$SCAFFOLD" run -o real --experiment-name t.real -- \
  -c "$SF_SOURCE_DIR/configs/tiny.yml" --max-count 8 > real.o 2>&1); rc=$?
check "the real benchmark ran (rc $rc)" test "$rc" -eq 0
REAL=$(ls "$T"/real/t.real.*.json 2>/dev/null | head -1)
(cd "$T" && env -u STARPU_SCHED "$SCAFFOLD" rerun "$REAL" -o real2 > real2.o 2>&1); rc=$?
check "the real result reruns (rc $rc)" test "$rc" -eq 0
AGAIN=$(ls "$T"/real2/t.real.*.json 2>/dev/null | head -1)
check "the real rerun wrote a result" test -n "$AGAIN"
if [ -n "$AGAIN" ]; then
  python3 - "$REAL" "$AGAIN" > "$T/same.txt" 2>&1 <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("success", "name"):
    assert a[k] == b[k], f"{k}: {a[k]!r} != {b[k]!r}"
assert a["call"]["argv"] == b["call"]["argv"], f"call.argv {a['call']['argv']} != {b['call']['argv']}"
assert a["environ"] == b["environ"], f"environ {a['environ']} != {b['environ']}"
assert a["environ"].get("STARPU_SCHED") == "eager", f"STARPU_SCHED not recorded: {a['environ']}"
assert b["success"] is True, f"the rerun failed: {b.get('error')}"
EOF
  check "the rerun has the same arguments, environment and success: $(cat "$T/same.txt")" test ! -s "$T/same.txt"
fi
finish

#!/usr/bin/env bash
# `scaffold jobs`: the plan (--dry-run) for each partition scheme (per-device copies on disjoint
# cores with STARPU_WORKERS_CPUID/STARPU_NCPU, progression 1..N workers, normal), the "*" defaults,
# `set` lists, key=value overrides, `requires: cuda` skipped with a reason, repeat-outermost order
# and --name selection; then a real run with the fake benchmark, its result files and its report.
. "$(dirname "$0")/lib.sh"
cat > "$T/cfg.yml" <<'Y'
problem_scale: 4
Y
cat > "$T/p.yml" <<Y
# test profile
"*":
  args: [--fake-rate, 50, --max-count, 200]
  partition_scheme: {type: per-device, devices: 2}
setup:
  partition_scheme: {type: normal}
  args: [--fake-rate, 10, --max-count, 30]
train:
  config: $T/cfg.yml
  set: {scheduler: eager, dc_num_shards: [1, 1, 1]}
scaling:
  partition_scheme: {type: progression, max: 2}
gpu:
  requires: cuda
  set: {ncpu: 0, ncuda: 1}
Y
NC=$(getconf _NPROCESSORS_ONLN)
if [ "$NC" -lt 2 ]; then echo "SKIPPED: needs 2 cores for the 2-device partition (have $NC)"; exit 77; fi

SF_HAVE_CUDA=0 "$SCAFFOLD" jobs "$T/p.yml" -o "$T/out" --dry-run --no-cgroup -- epochs=3 > "$T/o1" 2> "$T/e1"; rc=$?
check "dry run exits 0 (got $rc)" test "$rc" -eq 0
check "normal: one run, job 0.0, no binding" grep -qE "^Running: scaffold run -o $T/out --experiment-name p.setup --job-id 0.0 --extra .* -- --fake-rate 10 --max-count 30 --set epochs=3$" "$T/o1"
check "per-device copy 0: core 0, 1 worker, device 0" grep -qE "^Running: STARPU_WORKERS_CPUID=0 STARPU_NCPU=1 scaffold run -o $T/out --experiment-name p.train --job-id 0.0 --extra '.*\"device\":0,\"devices\":\[0\]\}' -- -c $T/cfg.yml --set scheduler=eager --set 'dc_num_shards=\[1, 1, 1\]' --fake-rate 50 --max-count 200 --set epochs=3$" "$T/o1"
check "per-device copy 1: core 1, device 1" grep -qE "^Running: STARPU_WORKERS_CPUID=1 STARPU_NCPU=1 scaffold run .* --job-id 0.1 --extra '.*\"device\":1,\"devices\":\[1\]\}'" "$T/o1"
check "the job definition (merged with *) is passed on" grep -qF '"partition_scheme":{"type":"per-device","devices":2}' "$T/o1"
check "progression k=1" grep -qE "^Running: STARPU_WORKERS_CPUID=0 STARPU_NCPU=1 scaffold run .*p.scaling --job-id 0.0 --extra '.*\"devices\":\[0\]\}' .* --set ncpu=1 --set epochs=3$" "$T/o1"
check "progression k=2" grep -qE "^Running: STARPU_WORKERS_CPUID='0 1' STARPU_NCPU=2 scaffold run .*p.scaling --job-id 0.1 --extra '.*\"devices\":\[0,1\]\}' .* --set ncpu=2 --set epochs=3$" "$T/o1"
check "requires: cuda is skipped with the reason" contains "$T/o1" "skipping p.gpu: requires CUDA workers (SF_HAVE_CUDA=0)"
check "dry run summary" contains "$T/o1" "dry run: 5 run(s) planned, nothing was started"
check "nothing was started" test ! -e "$T/out"

SF_HAVE_CUDA=1 "$SCAFFOLD" jobs "$T/p.yml" -o "$T/out" --dry-run --no-cgroup --name gpu > "$T/o2" 2>&1
check "with CUDA the gpu test runs; a test's own ncpu keeps STARPU_NCPU unset" grep -qE "^Running: STARPU_WORKERS_CPUID=0 scaffold run .*p.gpu --job-id 0.0 .* --set ncpu=0 --set ncuda=1 --fake-rate 50" "$T/o2"

SF_HAVE_CUDA=0 "$SCAFFOLD" jobs "$T/p.yml" -o "$T/out" --dry-run --no-cgroup --repeat 2 --name scaling setup > "$T/o3" 2>&1
ORDER=$(grep '^Running:' "$T/o3" | sed -E 's/.*--experiment-name ([^ ]+) --job-id ([^ ]+) .*/\1@\2/' | tr '\n' ' ')
check "repeat outermost, tests in file order, --name selection (got: $ORDER)" \
  test "$ORDER" = "p.setup@0.0 p.scaling@0.0 p.scaling@0.1 p.setup@1.0 p.scaling@1.0 p.scaling@1.1 "
check "progress lines name test and repeat" contains "$T/o3" "[jobs] repeat 2/2, test 2/2: p.scaling (progression, 2 runs)"

"$SCAFFOLD" jobs "$T/p.yml" -o "$T/out" --dry-run --devices 3 --name train > "$T/o4" 2> "$T/e4"; rc=$?
if [ "$NC" -lt 3 ]; then
  check "more devices than cores exits 2 (got $rc)" test "$rc" -eq 2
  check "more devices than cores: says so" contains "$T/e4" "test 'train': 3 devices but only $NC usable cores"
fi

# --- a real run with the fake benchmark (cgroup fallback exercised when not writable) ---
SF_HAVE_CUDA=0 SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" jobs "$T/p.yml" -o "$T/out" > "$T/o5" 2> "$T/e5"; rc=$?
check "jobs exits 0 (got $rc)" test "$rc" -eq 0
check "Total time line" grep -qE "^Total time: [0-9.]+s$" "$T/o5"
check "run count" contains "$T/o5" "[jobs] 5 run(s), 0 failed"
for f in p.setup.J0.0 p.train.J0.0 p.train.J0.1 p.scaling.J0.0 p.scaling.J0.1; do
  check "result $f" bash -c "ls '$T'/out/$f.2*.json > /dev/null 2>&1"
done
check "no gpu result" bash -c "! ls '$T'/out/p.gpu.* > /dev/null 2>&1"
F=$(ls "$T"/out/p.train.J0.1.*.json)
check "per-device result records its device" contains "$F" '"device": 1,'
check "per-device result records its binding" contains "$F" '"STARPU_WORKERS_CPUID": "1"'
check "per-device result records the job definition" contains "$F" '"type": "per-device",'
check "the config and set overrides reach the benchmark" contains "$F" "\"-c\", \"$T/cfg.yml\", \"--set\", \"scheduler=eager\""
"$SCAFFOLD" report "$T/out" > "$T/o6" 2>&1
check "report: setup at 10/s" grep -qE "^p.setup +1 +0 +10.00 " "$T/o6"
check "report: train pools both devices at 50/s" grep -qE "^p.train +2 +0 +50.00 " "$T/o6"
check "report: scaling.1 at 50/s per run" grep -qE "^p.scaling.1 +1 +0 +50.00 " "$T/o6"
check "report: scaling.2 (fake rate x STARPU_NCPU=2)" grep -qE "^p.scaling.2 +1 +0 +100.00 " "$T/o6"

# A failing job makes jobs exit 1 but the suite continues.
printf 'bad:\n  args: [--fake-mode, segv]\nok:\n  args: [--max-count, 10]\n' > "$T/q.yml"
SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" jobs "$T/q.yml" -o "$T/out2" --no-cgroup > "$T/o7" 2> "$T/e7"; rc=$?
check "a failed run makes jobs exit 1 (got $rc)" test "$rc" -eq 1
check "the suite continued after the failure" bash -c "ls '$T'/out2/q.ok.J0.0.*.json > /dev/null"
check "the failure was recorded" bash -c "ls '$T'/out2/q.bad.J0.0.FAIL.*.json > /dev/null"
check "jobs reports the failure" contains "$T/o7" "[jobs] q.bad: FAILED"

# SIGINT to jobs stops the running job's whole tree (jobs -> run -> benchmark -> grandchild).
printf 'hang:\n  args: [--fake-mode, sleep, --fake-pidfile, %s]\nnext: {}\n' "$T/gpid" > "$T/h.yml"
SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" jobs "$T/h.yml" -o "$T/out3" --no-cgroup > "$T/o8" 2>&1 &
JOBS=$!
for _ in $(seq 100); do [ -s "$T/gpid" ] && break; sleep 0.05; done
GPID=$(cat "$T/gpid" 2>/dev/null)
alive() { [ -r "/proc/$1/stat" ] && ! sed -E 's/^[0-9]+ \(.*\) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; }
check "hang: the benchmark's grandchild started" test -n "$GPID"
kill -INT "$JOBS"
wait "$JOBS"; rc=$?
check "SIGINT: jobs exits 130 (got $rc)" test "$rc" -eq 130
for _ in $(seq 40); do alive "$GPID" || break; sleep 0.05; done
check "SIGINT: the benchmark's grandchild is gone" eval "! alive $GPID"
check "SIGINT: the suite stopped (next not run)" lacks "$T/o8" "experiment-name h.next"
check "SIGINT: jobs says so" contains "$T/o8" "interrupted by signal 2"
finish

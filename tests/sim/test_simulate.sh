#!/usr/bin/env bash
# Tests of `scaffold simulate` and `scaffold steps` (docs/simulation.md).
#   inputs   refused before any run, with exit 2 and the file/key/value named: an unknown class, a class
#            folder without bus files, a mix larger than the class, OpenCL workers on a class without
#            OpenCL models, an unknown scheduler, a bad --mix; and a derived class (scripts/derive-class)
#            is labelled "derived" and sized as asked; `scaffold steps` under the openmp and sequential
#            runtimes runs and says that per-worker figures need StarPU. No SimGrid StarPU needed.
#   predict  scaffold-sim (scripts/build-sim) simulates ps 4 b8 on the shipped class with a MEASURED file
#            (with --allow-stale: when its models predate this build's kernels, docs/perfmodels.md, every
#            predicted figure must say so, and the factor-of-2 check below compares old kernels' times):
#            the task count equals a real `scaffold steps` run's, every task of every timed step ran on a
#            worker, the predicted step is within a factor of 2 of the class's measurement, the output
#            says it is a prediction and prints no loss; a 2-scheduler study writes its tables. Skipped,
#            with the reason, when scaffold-sim is not built.
# usage: test_simulate.sh inputs|predict   (SF_SOURCE_DIR, SF_BINARY: set by CTest)
set -u
MODE=$1
SRC=${SF_SOURCE_DIR:?} BIN=${SF_BINARY:?}
T=$(mktemp -d /tmp/sf-sim.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
err() { echo "FAIL ($MODE): $*"; fail=1; }
SHAPE=(--set problem_scale=4 --set unet_base_channels=8)

# expect_refused NAME PATTERN ARGS...: exit status 2 and PATTERN in stderr
expect_refused() {
  local name=$1 pat=$2
  shift 2
  "$BIN" simulate "$@" >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  [ $rc = 2 ] || err "$name: exit status $rc, want 2 ($(tail -2 "$T/$name.err"))"
  grep -q -- "$pat" "$T/$name.err" || err "$name: stderr lacks '$pat': $(cat "$T/$name.err")"
  [ ! -s "$T/$name.out" ] || err "$name: something ran: $(head -3 "$T/$name.out")"
}

# The shipped class with a MEASURED file and OpenCL models, if any (calibrated by `scaffold calibrate`).
CLASS=""
for d in "$SRC"/perfmodels/*/; do
  [ -f "$d/MEASURED" ] && CLASS=$(basename "$d") && break
done

case "$MODE" in
inputs)
  [ -n "$CLASS" ] || { echo "FAIL: no shipped class has a MEASURED file (`scaffold calibrate` writes it)"; exit 1; }
  ncpus=$(awk '/Number of CPUs/{print $1}' "$SRC/perfmodels/$CLASS/sampling/bus/$CLASS.config")
  expect_refused noclass "no class folder .*perfmodels/nosuchclass" --class nosuchclass "${SHAPE[@]}"
  mkdir -p "$T/empty"
  expect_refused nobus "empty/sampling/bus/empty.config is missing" --class "$T/empty" "${SHAPE[@]}"
  expect_refused bigmix "asks for $((ncpus + 1)) CPU workers but class '$CLASS' has $ncpus" --class "$CLASS" \
    --mix "$((ncpus + 1)):0:0" "${SHAPE[@]}"
  expect_refused cuda "asks for 1 CUDA workers but class '$CLASS' has 0" --class "$CLASS" --mix 1:1:0 "${SHAPE[@]}"
  expect_refused badmix "--mix '2:x': expected NCPU:NCUDA:NOPENCL" --class "$CLASS" --mix 2:x "${SHAPE[@]}"
  expect_refused badsched "unknown StarPU scheduling policy 'nosuch'" --class "$CLASS" --schedulers dmda,nosuch \
    "${SHAPE[@]}"
  expect_refused badkey "unet_base_channels" --class "$CLASS" --set unet_base_channels=0
  # a class without OpenCL models: a copy whose models lost their OpenCL entries
  python3 "$SRC/scripts/derive-class" "$SRC/perfmodels/$CLASS" "$T/big" --cpus 8 --note "test" >"$T/derive.out" 2>&1 ||
    err "derive-class failed: $(cat "$T/derive.out")"
  grep -q "^from = $CLASS$" "$T/big/DERIVED" || err "DERIVED lacks 'from = $CLASS': $(cat "$T/big/DERIVED")"
  [ ! -e "$T/big/MATCH" ] || err "a derived class has a MATCH file (it could be picked for a real run)"
  n=$(grep -c '<host id="CPU[0-9]*"' "$T/big/sampling/bus/big.platform.v4.xml")
  [ "$n" = 8 ] || err "the derived platform has $n CPU hosts, want 8"
  grep -q "^8 # Number of CPUs" "$T/big/sampling/bus/big.config" || err "big.config does not say 8 CPUs"
  ls "$T/big/sampling/codelets/45/"*.big >/dev/null 2>&1 || err "no codelet models renamed to .big"
  # the derived class passes the class checks (8 CPUs), then stops at a missing scaffold-sim, labelled
  # (--allow-stale: the shipped models may predate this build's kernels, docs/perfmodels.md; the stale
  # check itself is perfmodels_identity_sim)
  SCAFFOLD_SIM=$T/no-sim expect_refused nosim "no scaffold-sim at $T/no-sim (SCAFFOLD_SIM); build it with scripts/build-sim" \
    --class "$T/big" --mix 8:0:0 --allow-stale "${SHAPE[@]}"
  # scaffold steps on the host runtimes: no StarPU profiling, so no per-worker figures, and it says so
  for rt in openmp sequential; do
    "$BIN" steps "${SHAPE[@]}" --set runtime=$rt --steps 1 --warmup 0 --out "$T/steps-$rt" >"$T/steps-$rt.out" 2>&1 ||
      err "scaffold steps under runtime $rt failed: $(tail -3 "$T/steps-$rt.out")"
    grep -q "busy share per worker: not recorded (it comes from StarPU's task profiling; runtime $rt)" "$T/steps-$rt.out" ||
      err "runtime $rt: no 'not recorded' line: $(cat "$T/steps-$rt.out")"
  done
  python3 "$SRC/scripts/derive-class" "$SRC/perfmodels/$CLASS" "$T/big" --cpus 4 >"$T/derive2.out" 2>&1 &&
    err "derive-class overwrote an existing class"
  grep -q "exists" "$T/derive2.out" || err "derive-class did not say the class exists: $(cat "$T/derive2.out")"
  ;;
predict)
  SIM=${SCAFFOLD_SIM:-$SRC/build-sim/scaffold-sim}
  if [ ! -x "$SIM" ]; then
    echo "SKIPPED: no scaffold-sim at $SIM (build it with scripts/build-sim: a SimGrid StarPU from Debian's source package, then the project against it)"
    exit 77
  fi
  [ -n "$CLASS" ] || { echo "FAIL: no shipped class has a MEASURED file (`scaffold calibrate` writes it)"; exit 1; }
  read -r ps base ncpu nopencl sched measured < <(grep -v '^#' "$SRC/perfmodels/$CLASS/MEASURED" | head -1)
  [ "$ps $base" = "4 8" ] || err "MEASURED's first line is ps $ps b$base, want ps 4 b8"
  # the real task count of the same graph (ps 4 b8 takes milliseconds per step)
  "$BIN" steps "${SHAPE[@]}" --set ncpu="$ncpu" --set scheduler="$sched" --steps 1 --warmup 0 --out "$T/real" --json \
    >"$T/real.out" 2>"$T/real.err" || err "scaffold steps failed: $(tail -3 "$T/real.err")"
  real_tasks=$(sed -n 's/^SFSTEPS .*"tasks_per_step": *\([0-9]*\).*/\1/p' "$T/real.out")
  SCAFFOLD_SIM=$SIM "$BIN" simulate --class "$CLASS" "${SHAPE[@]}" --mix "$ncpu:0:$nopencl" --schedulers "$sched" \
    --steps 5 --out "$T/sim" --allow-stale >"$T/sim.out" 2>"$T/sim.err" || err "simulate failed: $(tail -5 "$T/sim.err")"
  if grep -q "calibrated for other kernels" "$T/sim.err"; then # a stale class: every figure marked
    echo "note: class $CLASS predates this build's kernels: $(grep -o 'perfmodels [^;]*' "$T/sim.err" | head -1)"
    [ -f "$T/sim/STALE" ] || err "stale class simulated without a STALE file in the output"
    grep '^predicted ' "$T/sim.out" | grep -v -q 'STALE perfmodels' && err "an unmarked predicted line: $(grep '^predicted ' "$T/sim.out")"
  fi
  LOG="$T/sim/${sched}_$ncpu-0-$nopencl/scaffold-sim.log"
  python3 - "$LOG" "$real_tasks" "$measured" <<'PY' || fail=1
import json, sys
log, real_tasks, measured = sys.argv[1], int(sys.argv[2] or -1), float(sys.argv[3])
line = [l for l in open(log) if l.startswith("SFSTEPS ")]
if not line:
    sys.exit(f"FAIL (predict): no SFSTEPS line in {log}")
r = json.loads(line[0][8:])
bad = []
if r["simulated"] is not True: bad.append(f"simulated is {r['simulated']}")
if r["tasks_per_step"] != real_tasks: bad.append(f"tasks per step {r['tasks_per_step']}, real run {real_tasks}")
ran = sum(w["tasks"] for w in r["workers"])
if ran != r["steps"] * r["tasks_per_step"]: bad.append(f"workers ran {ran} tasks, want {r['steps']} x {r['tasks_per_step']}")
ratio = r["median_step_s"] / measured
if not 0.5 <= ratio <= 2.0: bad.append(f"predicted {r['median_step_s']:.6f} s vs measured {measured:.6f} s: ratio {ratio:.3f} outside [0.5, 2]")
for b in bad: print("FAIL (predict):", b)
print(f"predicted {r['median_step_s']:.6f} s, measured {measured:.6f} s (ratio {ratio:.3f}), {r['tasks_per_step']} tasks per step")
sys.exit(1 if bad else 0)
PY
  grep -q "^predicted step time: median" "$T/sim.out" || err "no 'predicted step time' line: $(cat "$T/sim.out")"
  grep -q "no data value, loss or Dice exists" "$T/sim.out" || err "the output does not say that no loss is computed"
  grep -qi "loss[ =:]*[0-9]" "$T/sim.out" && err "a simulated run printed a loss value"
  # a study: 2 schedulers x 1 mix -> study.md, study.csv (2 predicted rows)
  SCAFFOLD_SIM=$SIM "$BIN" simulate --class "$CLASS" "${SHAPE[@]}" --mix "$ncpu:0:0" --schedulers lws,dmda \
    --steps 2 --out "$T/study" --allow-stale >"$T/study.out" 2>"$T/study.err" || err "the study failed: $(tail -5 "$T/study.err")"
  if [ -f "$T/sim/STALE" ]; then
    grep -q '^\*\*STALE perfmodels\*\*' "$T/study/study.md" || err "study.md of a stale class does not say so"
    grep -q "^| dmda | [0-9.e+-]* (stale) |" "$T/study/study.md" || err "study.md cells of a stale class not marked"
  fi
  [ "$(grep -c ",1,[0-9.e-]*,[0-9.e-]*," "$T/study/study.csv")" = 2 ] || err "study.csv: $(cat "$T/study/study.csv")"
  grep -q "^| dmda | [0-9]" "$T/study/study.md" || err "study.md has no dmda row: $(cat "$T/study/study.md")"
  grep -q "Predicted samples/s (StarPU SimGrid simulation, not measured) on class $CLASS" "$T/study.out" ||
    err "the study table does not say it is predicted for $CLASS"
  ;;
*) echo "usage: test_simulate.sh inputs|predict"; exit 2 ;;
esac
[ $fail = 0 ] && echo "sim $MODE: OK"
exit $fail

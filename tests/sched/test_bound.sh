#!/usr/bin/env bash
# bound: 1 on bench_train_step (problem_scale 4, 8 base channels, 2 CPU workers, dmda): the "bound:"
# lines are printed; bound.json holds positive bounds no larger than the measured times (they are
# lower bounds); the critical path is at most the deps window's bound; StarPU's DAG (bound.dot) and
# the dependency-aware MILP (bound_deps.lp) are written, the LP has one completion per task of the
# step, and its LP relaxation (lp_solve, when installed) equals the critical path we compute.
# bench_train_step runs with a private STARPU_HOME, so the perfmodels start empty: the first run
# (no warm-up step) must report them uncalibrated (message, null bounds); the second calibrates in
# 12 warm-up steps (StarPU's minimum is 10 samples per footprint; STARPU_HISTORY_MAX_ERROR keeps
# the tiny tasks' noisy first samples from flushing a model), or 24 when a model was flushed anyway. Every estimate found also shows that
# the recorded footprints are the ones StarPU indexes its models by.
source "$(dirname "$0")/lib.sh"
: "${BENCH:?run through ctest}"
export STARPU_HISTORY_MAX_ERROR=1000
run() { # run DIR WARMUP
  "$BENCH" --ps 4 --base 8 --ncpu 2 --sched dmda --warmup "$2" --steps 2 --bound "$1" >"$T/log" 2>&1 ||
    die "bench_train_step exited with $?: $(tail -5 "$T/log")"
  grep '^bound:' "$T/log"
}
B=$T/b1
run "$B" 0
[ "$(jget "$B/bound.json" calibrated)" = false ] || die "a run on empty perfmodels reports calibrated bounds"
grep -q "area bound unavailable: some task has no calibrated perfmodel estimate" "$T/log" ||
  die "uncalibrated run without the uncalibrated message"
[ "$(jget "$B/bound.json" area.bound_s)" = null ] || die "uncalibrated run: area.bound_s is not null"
[ "$(jget "$B/bound.json" deps.bound_s)" = null ] || die "uncalibrated run: deps.bound_s is not null"
for w in 12 24; do # a noisy sample can still flush a model on a loaded machine: one longer try
  B=$T/b$w
  run "$B" $w
  [ "$(jget "$B/bound.json" calibrated)" = true ] && break
  [ $w = 24 ] && die "still uncalibrated after $w warm-up steps"
  echo "still uncalibrated after $w warm-up steps (load: $(cut -d' ' -f1-3 /proc/loadavg)); once more with 24"
done
grep -qE '^bound: area window: 2 step\(s\) measured [0-9.]+ s, area bound [0-9.]+ s \(measured / bound [0-9.]+\)' "$T/log" ||
  die "no area bound line: $(grep '^bound:' "$T/log")"
grep -qE '^bound: deps window: 1 step measured [0-9.]+ s, critical path [0-9.]+ s, work / workers [0-9.]+ s, dependency-aware bound' "$T/log" ||
  die "no dependency-aware bound line: $(grep '^bound:' "$T/log")"
grep -q '^bound: warning: a measured time is below its lower bound' "$T/log" &&
  die "the stale-model warning was printed for bounds below the measured times: $(grep '^bound:' "$T/log")"
am=$(jget "$B/bound.json" area.measured_s) ab=$(jget "$B/bound.json" area.bound_s)
dm=$(jget "$B/bound.json" deps.measured_s) db=$(jget "$B/bound.json" deps.bound_s)
cp=$(jget "$B/bound.json" deps.critical_path_s) nt=$(jget "$B/bound.json" deps.tasks)
for v in am ab dm db cp nt; do gt0 "${!v}" || die "$v = ${!v} is not positive"; done
le "$ab" "$am" || die "area bound $ab s exceeds the measured $am s of its 2 steps"
le "$db" "$dm" || die "dependency-aware bound $db s exceeds the measured $dm s of its step"
le "$cp" "$db" || die "critical path $cp s exceeds the dependency-aware bound $db s"
wpw=$(jget "$B/bound.json" deps.work_per_worker_s)
le "$wpw" "$db" || die "work per worker $wpw s exceeds the dependency-aware bound $db s"
le "$(python3 -c 'import sys; print(float(sys.argv[1]) / 2 * (1 - 1e-6))' "$ab")" "$db" || # bound.json: 9 digits
  die "the area bound per step ($ab s / 2) exceeds the dependency-aware bound $db s"
[ "$(jget "$B/bound.json" deps.lp_written)" = true ] || die "bound_deps.lp not written"
grep -q '^min: tmax;' "$B/bound_deps.lp" || die "bound_deps.lp is not StarPU's LP"
n_lp=$(grep -c '<= tmax;' "$B/bound_deps.lp")
[ "$n_lp" = "$nt" ] || die "bound_deps.lp has $n_lp tasks, bound.json says $nt"
grep -q '^strict digraph bounddeps' "$B/bound.dot" || die "bound.dot is not StarPU's DAG"
tps=$(sed -n 's/.*, \([0-9]*\) tasks\/step,.*/\1/p' "$T/log")
[ "$nt" = "$tps" ] || die "the recorded step has $nt tasks, the graph submits $tps per step"
if command -v lp_solve >/dev/null && [ -x "$SF_SOURCE_DIR/scripts/bound-solve" ]; then
  rel=$("$SF_SOURCE_DIR/scripts/bound-solve" "$B" --relax --timeout 120) || die "bound-solve --relax failed: $rel"
  echo "$rel"
  ms=$(echo "$rel" | sed -n 's/.*optimal makespan \([0-9.e+-]*\) ms.*/\1/p')
  python3 -c 'import sys; a, b = float(sys.argv[1]) * 1e-3, float(sys.argv[2]); sys.exit(0 if abs(a - b) <= 1e-4 * b + 1e-7 else 1)' \
    "$ms" "$cp" || die "the LP relaxation of bound_deps.lp is $ms ms, the critical path $cp s"
else
  echo "lp_solve not installed: the LP relaxation check is skipped (scripts/install-deps installs lp-solve)"
fi
echo "PASS: area bound $ab s <= $am s measured; dependency-aware bound $db s <= $dm s; $nt tasks"

#!/usr/bin/env bash
# `scaffold benchmark` with bound: 1 and export_graph (configs/tiny.yml, 15 volumes, one epoch, 2 CPU
# workers, dmda, a private STARPU_HOME, so the perfmodels start uncalibrated): the run finishes; the
# run directory holds bound.json ("area": null: no StarPU bound recorder in the benchmark) and the
# recorded step's graph.json and graph.dot (checked); uncalibrated models are reported as such
# (message, null bounds, calibrated false, no LP) rather than as a bound; the result JSON carries "bound"
# with step_samples; the exported graph checks out with the task count the run reports (-v).
source "$(dirname "$0")/lib.sh"
: "${SF_BINARY:?run through ctest}" "${SF_SOURCE_DIR:?}" "${CHECK_GRAPH:?}"
export STARPU_HOME="$T/starpu"
mkdir -p "$STARPU_HOME"
"$SF_BINARY" benchmark -c "$SF_SOURCE_DIR/configs/tiny.yml" --set "fract_base_dir=$T/fractals" \
  --set "dataset_dir=$T/datasets" --set n_instances_used_per_fractal=15 --set epochs=1 --set ncpu=2 \
  --set scheduler=dmda --set "base_run_dir=$T/runs" --set bound=1 --set "export_graph=$T/g" -v \
  --out "$T/res" --experiment-name t.probes --job-id 0.0 >"$T/log" 2>&1 ||
  die "benchmark exited with $?: $(tail -5 "$T/log")"
R=$(find "$T/runs" -mindepth 1 -maxdepth 1 -type d | head -1)
for f in bound.json graph.json graph.dot; do [ -s "$R/$f" ] || die "run directory lacks $f"; done
grep '^bound:' "$T/log"
cal=$(jget "$R/bound.json" calibrated)
[ "$(jget "$R/bound.json" area)" = null ] || die "the benchmark has no area window, bound.json says otherwise"
python3 "$CHECK_GRAPH" "$R" || die "the recorded step's graph in the run directory fails the check"
if [ "$cal" = true ]; then
  gt0 "$(jget "$R/bound.json" deps.bound_s)" || die "calibrated but no dependency-aware bound"
  [ -s "$R/bound_deps.lp" ] || die "calibrated, but no bound_deps.lp"
else
  grep -qE "^bound: deps window: 1 step measured [0-9.]+ s; [0-9]+ of [0-9]+ tasks have no calibrated estimate" "$T/log" ||
    die "uncalibrated run without the message: $(grep '^bound:' "$T/log")"
  [ "$(jget "$R/bound.json" deps.bound_s)" = null ] || die "uncalibrated run reports a bound"
  [ ! -e "$R/bound_deps.lp" ] || die "uncalibrated run wrote an LP without durations"
fi
res=$(ls "$T/res"/*.json | head -1)
[ "$(jget "$res" bound.step_samples)" = 1.0 ] || [ "$(jget "$res" bound.step_samples)" = 1 ] ||
  die "result JSON: bound.step_samples is $(jget "$res" bound.step_samples)"
[ "$(jget "$res" bound.calibrated)" = "$cal" ] || die "result JSON: bound.calibrated differs from bound.json"
[ -n "$(jget "$res" blas_core)" ] || die "result JSON: no blas_core"
[ -n "$(jget "$res" machine.starpu_version)" ] || die "result JSON: no machine.starpu_version"
tps=$(sed -n 's/.*, \([0-9]*\) tasks\/step,.*/\1/p' "$T/log" | tail -1)
[ -n "$tps" ] || die "no tasks/step in the -v output"
grep -q "export_graph: one training step, $tps tasks" "$T/log" || die "export_graph message missing or count differs from $tps"
python3 "$CHECK_GRAPH" "$T/g" --tasks "$tps" || die "graph export check failed"
echo "PASS (perfmodels calibrated: $cal)"

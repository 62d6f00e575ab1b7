#!/usr/bin/env bash
# --export-graph on bench_train_step (problem_scale 4, 8 base channels, 2 CPU workers, lws): graph.json
# parses and is consistent (tests/sched/check_graph.py), has as many tasks as one step submits (the
# submission counter: "N tasks/step") and as the trace of that one step executed (worker_stats.json),
# and its predecessors, derived from the data accesses, order the same task pairs as the dependencies
# StarPU itself recorded for a step of the same graph (bound.dot of --bound, equal transitive closures).
source "$(dirname "$0")/lib.sh"
: "${BENCH:?run through ctest}" "${CHECK_GRAPH:?}"
"$BENCH" --ps 4 --base 8 --ncpu 2 --sched lws --warmup 1 --steps 1 --trace "$T/tr" --export-graph "$T/g" \
  --bound "$T/b" >"$T/log" 2>&1 || die "bench_train_step exited with $?: $(tail -5 "$T/log")"
tps=$(sed -n 's/.*, \([0-9]*\) tasks\/step,.*/\1/p' "$T/log")
[ -n "$tps" ] || die "no tasks/step in the output: $(tail -2 "$T/log")"
ntr=$(python3 -c 'import json,sys; print(sum(w["tasks"] for w in json.load(open(sys.argv[1]))["workers"]))' \
  "$T/tr/worker_stats.json") || die "cannot read the trace's task count"
[ "$ntr" = "$tps" ] || die "the trace of the step counts $ntr tasks, the submission counter $tps"
python3 "$CHECK_GRAPH" "$T/g" --tasks "$tps" --starpu-dot "$T/b/bound.dot" || die "graph export check failed"
echo "PASS: $tps tasks"

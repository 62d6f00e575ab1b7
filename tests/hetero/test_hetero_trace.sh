#!/usr/bin/env bash
# The trace of a mixed run (1 CPU + 1 OpenCL worker, eager, trace: 1, one epoch of a small dataset)
# shows tasks on both kinds of worker and the data StarPU moved between RAM and the OpenCL device,
# from its bus statistics: checked in trace.json (worker names, task events, the "bus transfers"
# counter, otherData.transfer_bytes) and worker_stats.json (by_kind, transfers per bus).
source "$(dirname "$0")/lib.sh"

bench "${SMALL[@]}" --set "base_run_dir=$T/runs" --set scheduler=eager --set epochs=1 --set trace=1 >"$T/log" 2>&1 ||
  die "benchmark exited with $?: $(cat "$T/log")"
grep -q "workers (1 CPU, 0 CUDA, 1 OpenCL)" "$T/log" || die "not a 1 CPU + 1 OpenCL run: $(grep StarPU "$T/log")"
R=$(run_dir_of "$T/runs")
"$HETERO_TOOL" trace-check "$R" || die "trace check failed; worker_stats.txt: $(cat "$R/worker_stats.txt" 2>&1)"
"$HETERO_TOOL" shares "$R"
echo PASS

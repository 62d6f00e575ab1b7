#!/usr/bin/env bash
# Convergence on 2 data-parallel ranks: configs/tiny.yml trains to validation Dice >= 0.95 (a global
# mean over both replicas' validation blocks) within its epoch cap; rank 0 alone writes the run
# directory, the CSV and the summary; the CPU workers keep the process's priority (worker_nice auto).
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
  echo "SKIP: sanitizer build: this multi-epoch convergence run checks training quality, which the normal" \
    "suite checks; its code paths run under ASan in the shorter tests (mpi_dp_equiv, mpi_resume, mpi_sigint)"
  exit 77 ;;
esac
t0=$(date +%s)
out=$(benchn 2 --set base_run_dir="$T/runs" 2>&1)
rc=$?
# A timeout is either a hang or a run too slow for the limit: the epoch lines so far tell which.
[ $rc = 124 ] && die "2-rank run did not finish within ${RUN_TIMEOUT}s (killed; SF_TEST_SLOWDOWN=${SF_TEST_SLOWDOWN:-1}); \
epochs so far: $(grep '^epoch' <<<"$out" || echo none); output: $out"
[ $rc = 0 ] || die "2-rank run exited with $rc: $out"
R=$(run_dir_of "$T/runs") # one directory: only rank 0 created one
"$TRAIN_TOOL" csv-converged "$R/train_stats.csv" 0.95 || die "convergence check failed; log: $(grep '^epoch' <<<"$out")"
grep -q "^Benchmark run at scale 4 complete. Trained to >= 0.95 validation dice score in" <<<"$out" ||
  die "no convergence line; output: $out"
# worker_nice auto under mpirun: the workers keep the process's priority (StarPU-MPI's progress thread polls
# on their cores; at a higher priority it would take most of them)
grep -q "CPU worker threads at the process's nice [0-9]* (worker_nice auto: 0 under mpirun)" <<<"$out" ||
  die "worker_nice auto did not leave the workers at the process's priority under mpirun: \
$(grep -m2 'CPU worker threads' <<<"$out" || echo 'no runtime line')"
n=$(grep -c '^summary:' <<<"$out")
[ "$n" = 1 ] || die "expected one summary line (rank 0 only), got $n"
grep -q "mpirun} -np 2 " "$R/restart.sh" || die "restart.sh does not relaunch 2 ranks: $(cat "$R/restart.sh")"
grep '^epoch\|^summary' <<<"$out"
echo "PASS in $(($(date +%s) - t0)) s"

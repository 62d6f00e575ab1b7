#!/usr/bin/env bash
# Failures of a distributed run end every rank with a clear message, never a hang (each run is
# under `timeout`; exit status 124 would mean it hung):
#  - the ranks were given different configurations: each differing rank names the key and both
#    values, and every rank exits with status 2;
#  - spatial_ranks does not divide the rank count: status 2 naming the key;
#  - runtime openmp (one process only, docs/runtimes.md) under mpirun: refused naming the key;
#  - a rank that cannot start StarPU (no worker) takes the job down (MPI_Abort) with its reason;
#  - a rank that dies before MPI starts: mpirun ends the others.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
t0=$(date +%s)
RUN_TIMEOUT=$((60 * ${SF_TEST_SLOWDOWN:-1}))
export SF_MPI_RUN_TIMEOUT=$RUN_TIMEOUT

check_fails() { # name rc output expected-text...
  local name=$1 rc=$2 out=$3
  shift 3
  [ "$rc" = 124 ] && die "$name: the run hung (killed after ${RUN_TIMEOUT}s): $out"
  [ "$rc" != 0 ] || die "$name: the run succeeded: $out"
  for want in "$@"; do
    grep -qF -- "$want" <<<"$out" || die "$name: no '$want' in the output (exit $rc): $out"
  done
  echo "$name: exit $rc, as expected"
}

out=$(SF_RANK_ARGS_1="--set seed=43" benchn 2 "${SMALL[@]}" --set base_run_dir="$T/r1" 2>&1)
rc=$?
check_fails "config mismatch" $rc "$out" "rank 1: config key 'seed' is 43 here but 42 on rank 0" \
  "the 2 ranks were given different configurations"
[ $rc = 2 ] || grep -q "exit code: *2\|Exit code: *2" <<<"$out" || die "config mismatch: exit status $rc, expected 2: $out"
[ ! -d "$T/r1" ] || die "config mismatch: a run directory was created before the check"

out=$(benchn 2 "${SMALL[@]}" --set spatial_ranks=3 --set base_run_dir="$T/r2" 2>&1)
check_fails "spatial_ranks 3 on 2 ranks" $? "$out" "config key 'spatial_ranks': 3 ranks per volume do not divide the 2 ranks"

out=$(benchn 2 "${SMALL[@]}" --set runtime=openmp --set base_run_dir="$T/r5" 2>&1)
check_fails "runtime openmp on 2 ranks" $? "$out" "runtime openmp runs in one process; under mpirun (2 ranks)"
[ ! -d "$T/r5" ] || die "runtime openmp under mpirun: a run directory was created before the check"

out=$(SF_RANK_ENV_1="STARPU_NCPU=0" benchn 2 "${SMALL[@]}" --set base_run_dir="$T/r3" 2>&1)
check_fails "rank 1 cannot start StarPU" $? "$out" "StarPU found no worker" "rank 1 of 2 exits with status 1"

out=$(SF_RANK_EXEC_1="false" benchn 2 "${SMALL[@]}" --set base_run_dir="$T/r4" 2>&1)
rc=$?
# Open MPI reports the dead rank in one of two ways, depending on whether rank 0 was still starting:
# "one or more processes exited with non-zero status ... Process name: [[job,1],...]", or "Primary
# job terminated normally, but 1 process returned a non-zero exit code ... the job has been aborted".
if grep -qF "one or more processes exited with non-zero status" <<<"$out"; then
  check_fails "rank 1 dies before MPI starts" $rc "$out" ",1]"
else
  check_fails "rank 1 dies before MPI starts" $rc "$out" "1 process returned" "the job has been aborted"
fi
echo "PASS in $(($(date +%s) - t0)) s"

# Shared set-up of the distributed-training tests: skips (77) without MPI, a private temporary
# directory, a per-rank wrapper (STARPU_HOME per rank, one CPU worker, workers inheriting Open MPI's
# binding), mpirun with the settings CI needs as root, and `timeout` around every run so that a
# hang fails the test instead of stalling it. Sourced by tests/mpi/test_*.sh.
set -u
: "${SF_BINARY:?run through ctest (SF_BINARY)}" "${SF_SOURCE_DIR:?}" "${MPI_TOOL:?}" "${TRAIN_TOOL:?}"
case "${SF_BUILD_HAS_MPI:-OFF}" in
  ON | 1 | TRUE | YES | on | true) ;;
  *) echo "SKIP: this build has no MPI (StarPU-MPI or mpi-c not found at configure time)"; exit 77 ;;
esac
MPIRUN=${SF_MPIRUN:-}
[ -n "$MPIRUN" ] && [ -x "$MPIRUN" ] || MPIRUN=$(command -v mpirun || true)
[ -n "$MPIRUN" ] || { echo "SKIP: mpirun not found"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/sf-mpi-XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS STARPU_WORKERS_NOBIND
export STARPU_SILENT=1
# Open MPI refuses to run as root (CI containers) without these two.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIFLAGS=(--allow-run-as-root --oversubscribe)
# The per-run limit scales with SF_TEST_SLOWDOWN (3 in the sanitizer build, tests/CMakeLists.txt).
RUN_TIMEOUT=${SF_MPI_RUN_TIMEOUT:-$((120 * ${SF_TEST_SLOWDOWN:-1}))}

# Per rank: its own STARPU_HOME (bus calibrations and perfmodels of concurrent ranks must not
# collide) and one CPU worker (StarPU-MPI would otherwise reserve a core for its progress thread on
# this rank's share of the machine and may find none left). SF_RANK_ENV_<r>="K=V ..." adds
# variables on rank r only, SF_RANK_ARGS_<r>="..." extra arguments on rank r only, and
# SF_RANK_EXEC_<r>="cmd" runs cmd instead of scaffold on rank r (error tests).
cat >"$T/rank.sh" <<'WRAP'
#!/bin/bash
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
export STARPU_HOME="$SF_MPI_TMP/starpu.$r" STARPU_NCPU=${STARPU_NCPU:-1}
mkdir -p "$STARPU_HOME"
envvar="SF_RANK_ENV_$r"
argvar="SF_RANK_ARGS_$r"
execvar="SF_RANK_EXEC_$r"
[ -n "${!envvar:-}" ] && export ${!envvar}
# shellcheck disable=SC2086
[ -n "${!execvar:-}" ] && exec ${!execvar}
# shellcheck disable=SC2086
exec "$@" ${!argvar:-}
WRAP
chmod +x "$T/rank.sh"
export SF_MPI_TMP="$T"
mkdir -p "$T/starpu"
export STARPU_HOME="$T/starpu"

CFG="$SF_SOURCE_DIR/configs/tiny.yml"
COMMON=(--set "fract_base_dir=$T/fractals" --set "dataset_dir=$T/datasets")
# 3 classes x 15 instances / 3 per volume = 15 volumes: 11 training, 4 validation
SMALL=(--set n_instances_used_per_fractal=15)

die() {
  echo "FAIL: $*" >&2
  exit 1
}
# One process, as the single-process tests run it.
bench1() { timeout "$RUN_TIMEOUT" "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "$@"; }
# N ranks: mpirun -np N under a timeout; rc 124 means it hung.
benchn() {
  local n=$1
  shift
  timeout "$RUN_TIMEOUT" "$MPIRUN" "${MPIFLAGS[@]}" -np "$n" "$T/rank.sh" "$SF_BINARY" benchmark -c "$CFG" \
    "${COMMON[@]}" "$@"
}
run_dir_of() {
  local n
  n=$(find "$1" -mindepth 1 -maxdepth 1 -type d | wc -l)
  [ "$n" = 1 ] || die "expected one run directory under $1, found $n"
  find "$1" -mindepth 1 -maxdepth 1 -type d
}

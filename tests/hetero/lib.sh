# Shared set-up of the heterogeneous script tests: a private temporary directory and STARPU_HOME,
# `bench` running `scaffold benchmark` on configs/tiny.yml with private fractal / dataset dirs and
# 1 CPU + 1 OpenCL worker, a skip (77) when no OpenCL device exists, and `die`. Sourced by
# tests/hetero/test_*.sh.
set -u
: "${SF_BINARY:?run through ctest (SF_BINARY)}" "${SF_SOURCE_DIR:?}" "${HETERO_TOOL:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-hetero-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu" STARPU_SILENT=1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS STARPU_NOPENCL
mkdir -p "$STARPU_HOME"
cd "$T" || exit 1
CFG="$SF_SOURCE_DIR/configs/tiny.yml"
# mixed workers, the documented recipe: --set ncpu=1 --set nopencl=1
COMMON=(--set "fract_base_dir=$T/fractals" --set "dataset_dir=$T/datasets" --set ncpu=1 --set nopencl=1)
# 3 classes x 15 instances / 3 per volume = 15 volumes: 11 training, 4 validation
SMALL=(--set n_instances_used_per_fractal=15)

die() {
  echo "FAIL: $*" >&2
  exit 1
}
bench() { "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "$@"; }
run_dir_of() {
  local n
  n=$(find "$1" -mindepth 1 -maxdepth 1 -type d | wc -l)
  [ "$n" = 1 ] || die "expected one run directory under $1, found $n"
  find "$1" -mindepth 1 -maxdepth 1 -type d
}
# skip (77) unless an OpenCL device is visible (PoCL or a GPU driver)
"$HETERO_TOOL" have-opencl || exit $?

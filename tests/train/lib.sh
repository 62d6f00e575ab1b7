# Shared set-up of the training script tests: a private temporary directory and STARPU_HOME,
# helpers to run `scaffold benchmark` on configs/tiny.yml with private fractal/dataset dirs, and
# `die`, which prints what went wrong. Sourced by tests/train/test_*.sh.
set -u
: "${SF_BINARY:?run through ctest (SF_BINARY)}" "${SF_SOURCE_DIR:?}" "${TRAIN_TOOL:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-train-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu" STARPU_SILENT=1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS
mkdir -p "$STARPU_HOME"
cd "$T" || exit 1
CFG="$SF_SOURCE_DIR/configs/tiny.yml"
COMMON=(--set "fract_base_dir=$T/fractals" --set "dataset_dir=$T/datasets" --set ncpu=2)
# 3 classes x 15 instances / 3 per volume = 15 volumes: 11 training, 4 validation
SMALL=(--set n_instances_used_per_fractal=15)

die() {
  echo "FAIL: $*" >&2
  exit 1
}
bench() { "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "$@"; }
# The one run directory under a base_run_dir.
run_dir_of() {
  local d n
  n=$(find "$1" -mindepth 1 -maxdepth 1 -type d | wc -l)
  [ "$n" = 1 ] || die "expected one run directory under $1, found $n"
  d=$(find "$1" -mindepth 1 -maxdepth 1 -type d)
  echo "$d"
}

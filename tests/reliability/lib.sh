# shellcheck shell=bash disable=SC2034
# Shared set-up of the reliability tests (tests/reliability/test_*.sh): a private temporary
# directory and STARPU_HOME, `scaffold benchmark` on configs/tiny.yml with private fractal, dataset
# and run directories, the fault-injection shim (faultshim.c), and `die`, which says what differed.
set -u
: "${SF_BINARY:?run through ctest (SF_BINARY)}" "${SF_SOURCE_DIR:?}" "${TRAIN_TOOL:?}" "${REL_TOOL:?}"
: "${SF_FAULTSHIM:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-rel-XXXXXX")
cleanup() { rm -rf "$T"; }
trap cleanup EXIT
export STARPU_HOME="$T/starpu" STARPU_SILENT=1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS
mkdir -p "$STARPU_HOME"
cd "$T" || exit 1
CFG="$SF_SOURCE_DIR/configs/tiny.yml"
FR="$T/fractals" DS="$T/datasets"
COMMON=(--set "fract_base_dir=$FR" --set "dataset_dir=$DS" --set ncpu=2)
# 3 classes x 15 instances / 3 per volume = 15 volumes: 11 training, 4 validation
SMALL=(--set n_instances_used_per_fractal=15)
# Under AddressSanitizer the shim is preloaded before libasan; that is fine for these tests.
case "$(ldd "$SF_BINARY" 2>/dev/null)" in
*libasan*) export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" ;;
esac

die() {
  echo "FAIL: $*" >&2
  exit 1
}
bench() { "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "$@"; }
# The newest run directory under a base_run_dir (empty when none).
newest_run() { ls -1dt "$1"/*/ 2>/dev/null | head -1 | sed 's:/$::'; }
# with_fault AT SIGNAL MATCH CMD...: runs CMD with the shim, failing at the AT-th matching write.
with_fault() {
  local at=$1 sig=$2 match=$3
  shift 3
  LD_PRELOAD="$SF_FAULTSHIM" SF_FAULT_AT="$at" SF_FAULT_SIGNAL="$sig" SF_FAULT_MATCH="$match" \
    SF_FAULT_TORN="${SF_FAULT_TORN:-0}" "$@"
}
# count_writes MATCH CMD...: runs CMD with the shim counting matching writes; prints the count.
count_writes() {
  local match=$1 log="$T/count.$$.log"
  shift
  rm -f "$log"
  LD_PRELOAD="$SF_FAULTSHIM" SF_FAULT_MATCH="$match" SF_FAULT_LOG="$log" "$@" >/dev/null 2>&1
  if [ -f "$log" ]; then wc -l <"$log"; else echo 0; fi
  rm -f "$log"
}
# No file of the library, datasets or runs may be a partial .npy; no checkpoint may fail to verify.
check_no_corrupt_files() {
  local what=$1 f out dirs=()
  for f in "$FR" "$DS"; do [ -d "$f" ] && dirs+=("$f"); done
  if [ ${#dirs[@]} -gt 0 ]; then out=$("$REL_TOOL" npy-check "${dirs[@]}" 2>&1) || die "$what: $out"; fi
  while IFS= read -r f; do
    "$TRAIN_TOOL" ckpt-info "$f" >/dev/null 2>"$T/ckpt.err" || die "$what: checkpoint $f does not verify: $(cat "$T/ckpt.err")"
  done < <(find "$T" -name 'checkpoint_*.bin' ! -name '.tmp-*' 2>/dev/null)
  while IFS= read -r f; do
    "$TRAIN_TOOL" csv-check "$f" 0 >/dev/null 2>"$T/csv.err" || die "$what: $f is malformed: $(cat "$T/csv.err")"
  done < <(find "$T" -name train_stats.csv 2>/dev/null)
  # a published dataset has its meta.yaml (written last, before the rename)
  for f in "$DS"/*/*/; do
    [ -d "$f" ] || continue
    case "$f" in */.tmp_*) continue ;; esac
    [ -f "$f/meta.yaml" ] || die "$what: published dataset $f has no meta.yaml"
  done
  return 0
}

#!/usr/bin/env bash
# `scaffold calibrate` and `scaffold tune` (src/cli/cmd_calibrate.c, cmd_tune.c; docs/perfmodels.md), with
# HOME and XDG_CACHE_HOME in a temporary folder and no shipped class (SF_PERFMODELS_DIR: an empty folder):
#   quick    a dmda run of a small config first prints StarPU's "not calibrated enough" warnings (the check
#            can fail); `scaffold calibrate --quick` writes the class folder (MATCH, MEASURED, CALIBRATED,
#            models of this class, bus files, the tuning record); the same dmda run then prints none, names
#            the class "calibrated here" and says its kernel choices are tuned
#   records  a tuning record edited to name im2col for every shape makes the run take im2col; a record
#            naming an unknown variant is refused with the file, entry and key, and the rules are used; a
#            record of other kernels (another identity in its name) is reported, never applied; under a
#            capped kernel set (SF_CPU_ISA=c) the record's direct and Winograd entries are skipped
#   refuse   bad input exits 2 before any work: a bad class name, an unknown option, a key `calibrate`
#            does not read; nothing is written
# StarPU's warnings are what the quick case looks for: its runs set STARPU_SILENT=0.
# usage: test_calibrate.sh MODE   (SF_BINARY: scaffold, set by CTest)
set -u
MODE=$1
BIN=${SF_BINARY:?SF_BINARY must name the scaffold executable}
T=$(mktemp -d /tmp/sf-calibrate.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0
err() { echo "FAIL ($MODE): $*"; fail=1; }
export HOME=$T/home XDG_CACHE_HOME=$T/cache SF_PERFMODELS_DIR=$T/shipped STARPU_SILENT=1
unset STARPU_PERF_MODEL_DIR STARPU_HOSTNAME STARPU_HOME STARPU_SCHED STARPU_NCPU STARPU_NCPUS SF_KERNEL_TUNING
mkdir -p "$HOME" "$SF_PERFMODELS_DIR"
SHAPE=(--set problem_scale=4 --set unet_base_channels=8 --set ncpu=2 --set torch_amp=0)
CLS=sftest-class
DIR=$XDG_CACHE_HOME/scaffold-starpu/classes/$CLS
steps() { # name [extra args]: a dmda run of SHAPE, output in $T/<name>.out
  local name=$1
  shift
  STARPU_SILENT=0 "$BIN" steps "${SHAPE[@]}" --set scheduler=dmda --steps 2 "$@" >"$T/$name.out" 2>&1 || err "steps $name exited with $?: $(tail -3 "$T/$name.out")"
}

case $MODE in
quick)
  steps before
  n=$(grep -c "not calibrated enough" "$T/before.out")
  [ "$n" -gt 0 ] || err "an uncalibrated dmda run printed no 'not calibrated enough' warning: the check below could not fail"
  "$BIN" calibrate --quick --class "$CLS" "${SHAPE[@]}" >"$T/cal.out" 2>&1 || err "calibrate exited with $?: $(tail -5 "$T/cal.out")"
  for f in MATCH MEASURED CALIBRATED; do [ -s "$DIR/$f" ] || err "calibrate wrote no $DIR/$f"; done
  ls "$DIR"/sampling/codelets/45/*."$CLS" >/dev/null 2>&1 || err "no history file *.$CLS in $DIR/sampling/codelets/45"
  [ -f "$DIR/sampling/bus/$CLS.platform.xml" ] || err "no bus platform file $DIR/sampling/bus/$CLS.platform.xml"
  ls "$DIR"/tuning/conv3d-*.json >/dev/null 2>&1 || err "no tuning record in $DIR/tuning"
  ls -d "$DIR"/.staging-* >/dev/null 2>&1 && err "the staging folder was left behind: $(ls -d "$DIR"/.staging-*)"
  read -r ps base ncpu nocl sched med < <(grep -v '^#' "$DIR/MEASURED")
  [ "$ps $base $ncpu $nocl $sched" = "4 8 2 0 dmda" ] || err "MEASURED names '$ps $base $ncpu $nocl $sched', want '4 8 2 0 dmda'"
  awk -v m="${med:-x}" 'BEGIN { exit !(m + 0 > 0) }' || err "MEASURED step time '$med' is not a positive number"
  grep -q "^footprints_under_10_samples = 0$" "$DIR/CALIBRATED" || err "footprints short of samples: $(grep footprints "$DIR/CALIBRATED")"
  grep -q "^model_name = " "$DIR/MATCH" && grep -q "^nvidia_gpus = " "$DIR/MATCH" || err "MATCH lacks model_name or nvidia_gpus: $(cat "$DIR/MATCH")"
  steps after
  n=$(grep -c "not calibrated enough" "$T/after.out")
  [ "$n" = 0 ] || err "after calibrate --quick, dmda still printed $n 'not calibrated enough' warning(s): $(grep -m3 'not calibrated' "$T/after.out")"
  grep -q "perfmodels: $CLS (calibrated here" "$T/after.out" || err "the run does not name the class: $(grep perfmodels "$T/after.out" | head -3)"
  grep -q "^kernel choices: tuned on this machine (.*class $CLS" "$T/after.out" || err "no 'kernel choices: tuned' line: $(grep 'kernel choices' "$T/after.out")"
  ;;
records)
  "$BIN" tune --class "$CLS" "${SHAPE[@]}" >"$T/tune.out" 2>&1 || err "tune exited with $?: $(tail -3 "$T/tune.out")"
  REC=$(ls "$DIR"/tuning/conv3d-*.json 2>/dev/null | head -1)
  [ -n "$REC" ] || { err "tune wrote no record"; exit 1; }
  sed 's/"variant":"[^"]*"/"variant":"im2col"/g' "$REC" >"$T/im2col.json"
  grep -q '"variant":"im2col"' "$T/im2col.json" || err "could not edit the record (format changed?): $(head -c 300 "$REC")"
  SF_KERNEL_TUNING=$T/im2col.json steps forced
  line=$(grep "^CPU kernel variants" "$T/forced.out")
  fwd=$(grep -o "entry): conv3d forward: [^;]*" <<<"$line" | sed 's/^entry): conv3d forward: //')
  [[ $fwd == "im2col on "* ]] || err "the record names im2col everywhere, yet conv3d forward ran: $fwd"
  sed '0,/"variant":"[^"]*"/s//"variant":"no-such-kernel"/' "$REC" >"$T/bad.json"
  SF_KERNEL_TUNING=$T/bad.json steps bad
  grep -q "kernel tuning: tuning record $T/bad.json: entries\[0\]: \"variant\" 'no-such-kernel' is not a 3x3x3 convolution variant of this build (kernel set [a-z0-9]*); using the built-in rules" "$T/bad.out" ||
    err "a record with an unknown variant was not refused by name: $(grep -i tuning "$T/bad.out")"
  grep -q "^kernel choices: built-in rules" "$T/bad.out" || err "the refused record was applied: $(grep 'kernel choices' "$T/bad.out")"
  # a record timed on another kernel set (SF_CPU_ISA caps the set): its direct and Winograd entries are skipped
  set_of=$(sed -n 's/.*"kernel_set": *"\([a-z0-9]*\)".*/\1/p' "$REC" | head -1)
  if [ "$set_of" = c ] || [ -z "$set_of" ]; then
    echo "SKIPPED: the record's kernel set is '$set_of': no lower set to cap it to"
  else
    SF_CPU_ISA=c steps capped
    grep -q "^kernel choices: tuned on this machine (.*; [1-9][0-9]* of its [0-9]* entries name a variant this machine does not run now)" "$T/capped.out" ||
      err "under SF_CPU_ISA=c the $set_of record's entries were not skipped: $(grep 'kernel choices' "$T/capped.out")"
    grep -q "direct-$set_of\|winograd-$set_of" "$T/capped.out" && err "an entry of set $set_of ran under SF_CPU_ISA=c"
  fi
  mv "$REC" "$DIR/tuning/conv3d-00000000.json"
  steps other
  grep -q "^kernel choices: built-in rules (class $CLS has a tuning record for other conv3d kernels (conv3d-00000000.json" "$T/other.out" ||
    err "a record of other kernels was not reported: $(grep 'kernel choices' "$T/other.out")"
  ;;
refuse)
  for args in "--class bad/name" "--class .hidden" "--no-such-option" "--set epochs=3"; do
    # shellcheck disable=SC2086
    "$BIN" calibrate --quick $args "${SHAPE[@]}" >"$T/r.out" 2>&1
    rc=$?
    [ $rc = 2 ] || err "calibrate $args exited $rc, want 2: $(tail -2 "$T/r.out")"
    grep -q "scaffold" "$T/r.out" || err "calibrate $args: no message"
  done
  grep -q "class name 'bad/name'" <("$BIN" calibrate --class bad/name 2>&1) || err "the bad class name is not named"
  [ -e "$XDG_CACHE_HOME/scaffold-starpu/classes" ] && err "a refused calibrate wrote $(find "$XDG_CACHE_HOME/scaffold-starpu" | head -3)"
  "$BIN" tune --budget-ms 0 "${SHAPE[@]}" >"$T/t.out" 2>&1
  [ $? = 2 ] && grep -q "budget-ms" "$T/t.out" || err "tune --budget-ms 0 was not refused by name: $(cat "$T/t.out")"
  ;;
*) echo "usage: test_calibrate.sh quick|records|refuse"; exit 2 ;;
esac
[ $fail = 0 ] && echo "PASS ($MODE)"
exit $fail

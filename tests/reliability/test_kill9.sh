#!/usr/bin/env bash
# kill -9 at 10 random points of one benchmark's life - fractal class search, instances, dataset
# generation, training - each followed by a resume (restart.sh when the run has a checkpoint, else
# the same benchmark command again). After every kill no checkpoint, .npy or train_stats.csv is
# corrupt; at the end the fractal library and the dataset are byte-identical to an uninterrupted
# run's, and so are the final parameters, Adam moments, counters and CSV rows (more_determinism: 1).
#
# Kills 1-8 come from the fault shim (faultshim.c): SIGKILL at the n-th file write of a phase, n
# drawn from a seeded RANDOM (SF_KILL_SEED) within the writes the reference run made in that phase,
# some of them torn (half the bytes written first). Kills 9-10 are `kill -9` from outside after a
# seeded random delay of up to one epoch once the resumed run has finished an epoch.
source "$(dirname "$0")/lib.sh"
SEED=${SF_KILL_SEED:-20260508}
RANDOM=$SEED
E=10
DET=("${SMALL[@]}" --set more_determinism=1 --set checkpoint_interval=1 --set "epochs=$E")
RUNS="$T/runs"

# ---- the uninterrupted reference, with its writes logged per phase ----------------------------
REF=(--set "fract_base_dir=$T/ref/fractals" --set "dataset_dir=$T/ref/datasets" --set "base_run_dir=$T/ref/runs")
LD_PRELOAD="$SF_FAULTSHIM" SF_FAULT_LOG="$T/ref.events" \
  "$SF_BINARY" benchmark -c "$CFG" --set ncpu=2 "${DET[@]}" "${REF[@]}" >"$T/ref.log" 2>&1 ||
  die "reference run failed: $(cat "$T/ref.log")"
REFRUN=$(newest_run "$T/ref/runs")
n_cls=$(grep -c "/3DIFS_param/" "$T/ref.events")
n_inst=$(grep -c "/instances/" "$T/ref.events")
n_ds=$(grep -c "$T/ref/datasets/" "$T/ref.events")
epoch_ms=$(awk -F, 'NR == 2 { printf "%d", $8 * 1000 + 1 }' "$REFRUN/train_stats.csv")
echo "reference: $n_cls class-search writes, $n_inst instance writes, $n_ds dataset writes, epoch ~${epoch_ms} ms"
[ "$n_cls" -gt 0 ] && [ "$n_inst" -gt 100 ] && [ "$n_ds" -gt 10 ] || die "the reference run's write log is too short"

# The run to resume: the newest run directory with a checkpoint, else none (a fresh start).
resumable() {
  local d
  # shellcheck disable=SC2045 # newest first; the paths come from mktemp and timestamps (no spaces)
  for d in $(ls -1dt "$RUNS"/*/ 2>/dev/null); do
    d=${d%/}
    if [ -f "$d/checkpoints/checkpoint_last.bin" ] || [ -f "$d/checkpoints/checkpoint_best.bin" ]; then
      echo "$d"
      return
    fi
  done
}
launch() { # the next attempt: restart.sh or the benchmark command
  local r
  r=$(resumable)
  if [ -n "$r" ]; then "$r/restart.sh"; else bench "${DET[@]}" --set "base_run_dir=$RUNS"; fi
}
state() {
  local r ck
  r=$(resumable)
  ck=none
  [ -n "$r" ] && ck=$("$TRAIN_TOOL" ckpt-info "$r/checkpoints/checkpoint_last.bin" 2>/dev/null | grep '^epoch=' || echo "best only")
  echo "instances $(find "$FR" -name '*.npy' 2>/dev/null | wc -l)/$(find "$T/ref/fractals" -name '*.npy' | wc -l)," \
    "datasets published $(find "$DS" -mindepth 2 -maxdepth 2 -type d ! -name '.tmp_*' 2>/dev/null | wc -l)" \
    "(staging left $(find "$DS" -mindepth 2 -maxdepth 2 -type d -name '.tmp_*' 2>/dev/null | wc -l)), checkpoint $ck"
}
after_kill() { # kill number, exit status, log
  [ "$2" = 137 ] || die "kill $1: exit status $2, expected 137 (SIGKILL): the kill point was never reached: $(tail -5 "$3")"
  check_no_corrupt_files "after kill $1"
  local f
  while IFS= read -r f; do
    [ -z "$(tail -c 1 "$f")" ] || die "after kill $1: $f does not end with a complete row"
  done < <(find "$RUNS" -name train_stats.csv 2>/dev/null)
  echo "kill $1 survived: $(state)"
}

# ---- kills 1-8: at the n-th write of a phase ---------------------------------------------------
plan=( # match | max n | torn
  "/3DIFS_param/|$n_cls|0"
  "/instances/|$((n_inst / 4))|0"
  "/instances/|$((n_inst / 4))|1"
  "$DS/|$n_ds|0"
  "$DS/|$n_ds|1"
  "checkpoint|24|0"
  "checkpoint|24|1"
  "checkpoint|train_stats|24|0"
)
k=0
for p in "${plan[@]}"; do
  k=$((k + 1))
  torn=${p##*|}
  rest=${p%|*}
  max=${rest##*|}
  match=${rest%|*}
  at=$((RANDOM % max + 1))
  echo "kill $k: SIGKILL at write $at of <= $max matching '${match#$T/}'$([ "$torn" = 1 ] && echo ' (torn write)')"
  SF_FAULT_TORN=$torn with_fault "$at" KILL "$match" launch >"$T/k$k.log" 2>&1
  after_kill $k $? "$T/k$k.log"
done

# ---- kills 9-10: kill -9 from outside, a random delay after the resumed run's next epoch ----------
for k in 9 10; do
  r=$(resumable)
  [ -n "$r" ] || die "kill $k: no checkpoint to resume after 8 kills"
  rows0=$(wc -l <"$r/train_stats.csv")
  delay=$((RANDOM % epoch_ms))
  # not through a function: $! must be scaffold itself (restart.sh execs it)
  "$r/restart.sh" >"$T/k$k.log" 2>&1 &
  pid=$!
  for _ in $(seq 1500); do
    [ "$(wc -l <"$r/train_stats.csv" 2>/dev/null || echo 0)" -gt "$rows0" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  sleep "$(printf '0.%03d' "$delay")"
  kill -9 $pid 2>/dev/null
  wait $pid
  st=$?
  echo "kill $k: kill -9 ${delay} ms after an epoch of the resumed run"
  after_kill $k $st "$T/k$k.log"
done

# ---- the last resume runs to the end --------------------------------------------------------------
launch >"$T/final.log" 2>&1 || die "the final resume failed: $(cat "$T/final.log")"
FIN=$(resumable)
grep -q "resumed from" "$T/final.log" || die "the final run did not resume: $(cat "$T/final.log")"
diff -r "$T/ref/fractals" "$FR" >"$T/diff" || die "fractal library differs from the uninterrupted one: $(head "$T/diff")"
pub=$(find "$DS" -mindepth 2 -maxdepth 2 -type d ! -name '.tmp_*')
[ "$(echo "$pub" | wc -l)" = 1 ] || die "expected one published dataset, found: $pub"
diff -r -x meta.yaml -x .heartbeat "$(find "$T/ref/datasets" -mindepth 2 -maxdepth 2 -type d)" "$pub" >"$T/diff" ||
  die "dataset differs from the uninterrupted one: $(head "$T/diff")"
"$TRAIN_TOOL" ckpt-cmp "$REFRUN/checkpoints/checkpoint_last.bin" "$FIN/checkpoints/checkpoint_last.bin" ||
  die "final checkpoint_last differs from the uninterrupted run's"
"$TRAIN_TOOL" ckpt-cmp "$REFRUN/checkpoints/checkpoint_best.bin" "$FIN/checkpoints/checkpoint_best.bin" ||
  die "final checkpoint_best differs from the uninterrupted run's"
"$REL_TOOL" ckpt-params "$FIN/checkpoints/checkpoint_last.bin"
"$TRAIN_TOOL" csv-cmp "$REFRUN/train_stats.csv" "$FIN/train_stats.csv" || die "train_stats.csv differs"
"$TRAIN_TOOL" csv-check "$FIN/train_stats.csv" "$E" >/dev/null || die "final train_stats.csv malformed"
[ -z "$(find "$FIN" -name '.tmp-*')" ] || die "temporary files left in the run directory: $(find "$FIN" -name '.tmp-*')"
echo "PASS: 10 kills survived (seed $SEED); library, dataset, parameters, Adam state and CSV equal the uninterrupted run's"

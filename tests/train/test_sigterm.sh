#!/usr/bin/env bash
# SIGTERM during training: the run finishes the step in flight, writes a consistent checkpoint and
# exits with 130 after appending the partial epoch's row (nan validation columns) to
# train_stats.csv; restart.sh resumes it, replaces that row with the finished epoch's, and
# (more_determinism: 1) the result and the CSV equal an uninterrupted run bitwise.
source "$(dirname "$0")/lib.sh"
# 60 volumes: 42 training, 18 validation per epoch (training steps dominate the epoch, so most
# signals land inside one rather than in the checkpoint write between epochs)
DET=(--set n_instances_used_per_fractal=60 --set more_determinism=1 --set checkpoint_interval=1 --set epochs=6)

bench "${DET[@]}" --set "base_run_dir=$T/a" >"$T/a.log" 2>&1 || die "uninterrupted run failed: $(cat "$T/a.log")"
A=$(run_dir_of "$T/a")

# not through the bench function: $! must be scaffold itself, not a subshell. A signal that lands
# between epochs (before the next epoch's first step) legitimately writes no partial row; the
# interruption is retried with another delay until it lands inside an epoch (6 tries).
for delay in 0.2 0.35 0.5 0.27 0.42 0.6; do
  rm -rf "$T/b"
  "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${DET[@]}" --set "base_run_dir=$T/b" >"$T/b.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    f=$(find "$T/b" -name train_stats.csv 2>/dev/null | head -1)
    [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 2 ] && break
    sleep 0.05
  done
  sleep $delay
  kill -TERM $pid
  wait $pid
  st=$?
  [ $st = 130 ] || die "SIGTERM: exit status $st, expected 130 (did the run finish before the signal?): $(cat "$T/b.log")"
  grep -q "interrupted by SIGTERM in epoch" "$T/b.log" || die "no interruption message: $(cat "$T/b.log")"
  B=$(run_dir_of "$T/b")
  info=$("$TRAIN_TOOL" ckpt-info "$B/checkpoints/checkpoint_last.bin") || die "the checkpoint after SIGTERM does not verify"
  echo "$info" | grep -E '^(epoch|partial_epoch|partial_steps)='
  [ "$(echo "$info" | sed -n 's/^partial_steps=//p')" != 0 ] && break
  grep -q "no train_stats.csv row (no step of epoch" "$T/b.log" || die "a stop before an epoch's first step: no note that no row was written: $(cat "$T/b.log")"
  echo "note: the signal after ${delay} s landed before an epoch's first step (no partial row); retrying"
done
# the partial epoch's row: upstream's header, then epoch E with the steps run and nan validation
pe=$(echo "$info" | sed -n 's/^partial_epoch=//p')
ps=$(echo "$info" | sed -n 's/^partial_steps=//p')
[ -n "$pe" ] && [ "$pe" -gt 0 ] && [ "$ps" -gt 0 ] ||
  die "expected the SIGTERM to land inside an epoch: partial_epoch='$pe' partial_steps='$ps'"
grep -q "partial row for epoch $pe ($ps steps, validation columns nan) appended" "$T/b.log" ||
  die "no partial-row message for epoch $pe: $(cat "$T/b.log")"
hdr=epoch,epoch_loss,overall_loss,val_loss_epoch,val_loss_avg,train_dice,val_dice,epoch_duration,optimizer_steps,total_optimizer_steps
[ "$(head -1 "$B/train_stats.csv")" = "$hdr" ] || die "header changed: $(head -1 "$B/train_stats.csv")"
last=$(tail -1 "$B/train_stats.csv")
echo "partial row: $last"
IFS=, read -r e _ ol vle vla td vd dur os tos <<<"$last"
[ "$e" = "$pe" ] || die "last row is epoch $e, expected the partial epoch $pe: $last"
[ "$vle,$vla,$vd" = "nan,nan,nan" ] || die "partial row's validation columns are '$vle,$vla,$vd', expected nan,nan,nan"
[ "$os" = "$ps" ] || die "partial row's optimizer_steps $os, expected $ps (steps run before the signal)"
awk -v o="$ol" -v t="$td" -v d="$dur" 'BEGIN { exit !(o > 0 && t >= 0 && t <= 1 && d > 0) }' ||
  die "partial row's training columns are implausible: overall_loss $ol, train_dice $td, duration $dur"
[ "$(grep -c "^$pe," "$B/train_stats.csv")" = 1 ] || die "epoch $pe appears more than once"
"$B/restart.sh" >"$T/b2.log" 2>&1 || die "restart.sh failed: $(cat "$T/b2.log")"
"$TRAIN_TOOL" ckpt-cmp "$A/checkpoints/checkpoint_last.bin" "$B/checkpoints/checkpoint_last.bin" ||
  die "interrupted + resumed run differs from the uninterrupted one"
"$TRAIN_TOOL" csv-cmp "$A/train_stats.csv" "$B/train_stats.csv" || die "train_stats.csv differs"
echo "PASS"

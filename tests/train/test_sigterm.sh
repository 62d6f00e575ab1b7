#!/usr/bin/env bash
# SIGTERM during training: the run finishes the step in flight, writes a consistent checkpoint and
# exits with 130; restart.sh resumes it, and (more_determinism: 1) the result equals an
# uninterrupted run bitwise.
source "$(dirname "$0")/lib.sh"
# 30 volumes: 21 training, 9 validation per epoch
DET=(--set n_instances_used_per_fractal=30 --set more_determinism=1 --set checkpoint_interval=1 --set epochs=6)

bench "${DET[@]}" --set "base_run_dir=$T/a" >"$T/a.log" 2>&1 || die "uninterrupted run failed: $(cat "$T/a.log")"
A=$(run_dir_of "$T/a")

# not through the bench function: $! must be scaffold itself, not a subshell
"$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${DET[@]}" --set "base_run_dir=$T/b" >"$T/b.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  f=$(find "$T/b" -name train_stats.csv 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 2 ] && break
  sleep 0.05
done
sleep 0.2
kill -TERM $pid
wait $pid
st=$?
[ $st = 130 ] || die "SIGTERM: exit status $st, expected 130 (did the run finish before the signal?): $(cat "$T/b.log")"
grep -q "interrupted by SIGTERM in epoch" "$T/b.log" || die "no interruption message: $(cat "$T/b.log")"
B=$(run_dir_of "$T/b")
info=$("$TRAIN_TOOL" ckpt-info "$B/checkpoints/checkpoint_last.bin") || die "the checkpoint after SIGTERM does not verify"
echo "$info" | grep -E '^(epoch|partial_epoch|partial_steps)='
"$B/restart.sh" >"$T/b2.log" 2>&1 || die "restart.sh failed: $(cat "$T/b2.log")"
"$TRAIN_TOOL" ckpt-cmp "$A/checkpoints/checkpoint_last.bin" "$B/checkpoints/checkpoint_last.bin" ||
  die "interrupted + resumed run differs from the uninterrupted one"
"$TRAIN_TOOL" csv-cmp "$A/train_stats.csv" "$B/train_stats.csv" || die "train_stats.csv differs"
echo "PASS"

#!/usr/bin/env bash
# Unusable checkpoints (spec §6.8): a corrupt checkpoint_last is renamed *.corrupt and the run
# falls back to checkpoint_best; truncated last and best give an error naming the file; a
# checkpoint of another topology or optimizer is refused (status 2); --restart needs --run-dir, and a directory
# with neither a checkpoint nor config.yaml is not a run directory (tests/reliability/
# test_restart_fresh.sh: a run directory without a checkpoint starts over).
source "$(dirname "$0")/lib.sh"

bench "${SMALL[@]}" --set "base_run_dir=$T/r" --set epochs=2 --set checkpoint_interval=1 >"$T/r.log" 2>&1 ||
  die "first run failed: $(cat "$T/r.log")"
R=$(run_dir_of "$T/r")
C="$R/checkpoints"
[ -s "$C/checkpoint_last.bin" ] && [ -s "$C/checkpoint_best.bin" ] || die "checkpoints missing: $(ls -l "$C")"

# 1. one flipped byte in checkpoint_last -> warning, renamed, resumed from best
printf '\xff' | dd of="$C/checkpoint_last.bin" bs=1 seek=5000 conv=notrunc status=none
"$SF_BINARY" benchmark -c "$R/config.yaml" --set epochs=3 --restart --run-dir "$R" >"$T/1.log" 2>&1 ||
  die "fallback to checkpoint_best failed: $(cat "$T/1.log")"
grep -q "checkpoint_last.bin is corrupt: checksum mismatch" "$T/1.log" || die "no corruption warning: $(cat "$T/1.log")"
[ -f "$C/checkpoint_last.bin.corrupt" ] || die "corrupt checkpoint not renamed to .corrupt"
grep -q "resumed from .*checkpoint_best.bin" "$T/1.log" || die "did not resume from checkpoint_best: $(cat "$T/1.log")"

# 2. both truncated -> error naming the file, non-zero status
truncate -s 1000 "$C/checkpoint_last.bin"
truncate -s 1000 "$C/checkpoint_best.bin"
"$SF_BINARY" benchmark -c "$R/config.yaml" --set epochs=4 --restart --run-dir "$R" >"$T/2.log" 2>&1
st=$?
[ $st = 1 ] || die "truncated checkpoints: status $st, expected 1: $(cat "$T/2.log")"
grep -q "checkpoint_last.bin is corrupt or truncated" "$T/2.log" && grep -q "no usable checkpoint" "$T/2.log" ||
  die "truncation message does not name the file: $(cat "$T/2.log")"

# 3. another topology is refused
bench "${SMALL[@]}" --set "base_run_dir=$T/s" --set epochs=1 --set checkpoint_interval=1 >"$T/s.log" 2>&1 ||
  die "second run failed: $(cat "$T/s.log")"
S=$(run_dir_of "$T/s")
"$SF_BINARY" benchmark -c "$S/config.yaml" --set unet_base_channels=16 --set epochs=2 --restart --run-dir "$S" \
  >"$T/3.log" 2>&1
st=$?
[ $st = 2 ] || die "topology mismatch: status $st, expected 2: $(cat "$T/3.log")"
grep -q "refusing to resume: checkpoint .*checkpoint_last.bin is for another network" "$T/3.log" ||
  die "mismatch message: $(cat "$T/3.log")"
# 3b. another optimizer is refused (the checkpoint's m / v are Adam's moments)
"$SF_BINARY" benchmark -c "$S/config.yaml" --set optimizer=SGD --set epochs=2 --restart --run-dir "$S" \
  >"$T/3b.log" 2>&1
st=$?
[ $st = 2 ] || die "optimizer mismatch: status $st, expected 2: $(cat "$T/3b.log")"
grep -q "refusing to resume: the checkpoint in .* holds the state of optimizer 'ADAM', the config asks for 'SGD'" \
  "$T/3b.log" || die "optimizer mismatch message: $(cat "$T/3b.log")"

# 4. usage errors
"$SF_BINARY" benchmark -c "$CFG" --restart >"$T/4.log" 2>&1
[ $? = 2 ] && grep -q -- "--restart needs --run-dir" "$T/4.log" || die "--restart alone: $(cat "$T/4.log")"
"$SF_BINARY" benchmark -c "$CFG" --run-dir "$T/nowhere" >"$T/5.log" 2>&1
[ $? = 2 ] && grep -q "no such directory" "$T/5.log" || die "--run-dir missing: $(cat "$T/5.log")"
mkdir -p "$T/empty"
"$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" --restart --run-dir "$T/empty" >"$T/6.log" 2>&1
[ $? = 2 ] && grep -q "nor config.yaml: not the run directory" "$T/6.log" ||
  die "restart in a directory that is not a run directory: $(cat "$T/6.log")"
[ -z "$(ls -A "$T/empty")" ] || die "the refused --run-dir was written to: $(ls -A "$T/empty")"

# 5. divergence: a huge learning rate makes the loss non-finite; the step is named
bench "${SMALL[@]}" --set "base_run_dir=$T/d" --set epochs=2 --set starting_learning_rate=1e30 \
  --set disable_scheduler=1 >"$T/7.log" 2>&1
st=$?
[ $st = 1 ] && grep -q "training diverged in epoch 1 at step" "$T/7.log" && grep -q "grad norm" "$T/7.log" ||
  die "divergence: status $st: $(cat "$T/7.log")"
echo "PASS"

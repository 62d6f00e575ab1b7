#!/usr/bin/env bash
# SIGINT/SIGTERM in every phase exit cleanly with status 130 and a message, leave no corrupt or
# temporary file, and a rerun completes to the same bytes (tests/train/test_sigterm.sh covers
# SIGTERM in training):
#  1. SIGINT during training (from outside, after the first epoch row): a verified checkpoint,
#     restart.sh resumes, the result equals an uninterrupted run bitwise (more_determinism: 1);
#  2. two SIGINTs: the second exits at once with 130, the files on disk stay whole;
#  3. SIGINT during `generate_fractals` instance generation and SIGTERM during its class search
#     (delivered by the fault shim at the n-th file write, so the point is reproducible): partial
#     but whole library, no .tmp- file, the rerun's library is byte-identical to an uninterrupted one;
#  4. SIGINT during dataset generation inside `benchmark`: nothing published, the staging directory
#     removed; the run's restart.sh starts it over (no checkpoint yet), its dataset byte-identical
#     to an uninterrupted one.
source "$(dirname "$0")/lib.sh"
cases=0

# ---- 1. SIGINT in training -------------------------------------------------------------------
DET=(--set n_instances_used_per_fractal=30 --set more_determinism=1 --set checkpoint_interval=1 --set epochs=6)
bench "${DET[@]}" --set "base_run_dir=$T/a" >"$T/a.log" 2>&1 || die "uninterrupted run failed: $(cat "$T/a.log")"
A=$(newest_run "$T/a")
"$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${DET[@]}" --set "base_run_dir=$T/b" >"$T/b.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  f=$(find "$T/b" -name train_stats.csv 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 2 ] && break
  sleep 0.02
done
kill -INT $pid
wait $pid
st=$?
[ $st = 130 ] || die "SIGINT in training: exit status $st, expected 130: $(cat "$T/b.log")"
grep -q "SIGINT received: finishing the work in flight" "$T/b.log" || die "no immediate SIGINT notice: $(cat "$T/b.log")"
grep -q "interrupted by SIGINT in epoch .* checkpoint saved" "$T/b.log" || die "no interruption message: $(cat "$T/b.log")"
B=$(newest_run "$T/b")
"$TRAIN_TOOL" ckpt-info "$B/checkpoints/checkpoint_last.bin" | grep -E '^(epoch|partial_epoch|partial_steps)=' ||
  die "the checkpoint after SIGINT does not verify"
check_no_corrupt_files "after SIGINT in training"
"$B/restart.sh" >"$T/b2.log" 2>&1 || die "restart.sh after SIGINT failed: $(cat "$T/b2.log")"
"$TRAIN_TOOL" ckpt-cmp "$A/checkpoints/checkpoint_last.bin" "$B/checkpoints/checkpoint_last.bin" ||
  die "SIGINT + restart.sh differs from the uninterrupted run"
"$TRAIN_TOOL" csv-cmp "$A/train_stats.csv" "$B/train_stats.csv" || die "train_stats.csv differs after SIGINT + resume"
echo "ok   1. SIGINT in training: status 130, checkpoint verified, resumed run identical"
cases=$((cases + 1))

# ---- 2. a second SIGINT exits at once ----------------------------------------------------------
# Both delivered by the shim in the middle of epoch 2's checkpoint write (its 1st and 2nd write):
# the second one exits there, so checkpoint_last must still be epoch 1's, whole, and resume from it.
with_fault_rep() { SF_FAULT_REPEAT=2 with_fault "$@"; }
with_fault_rep 8 INT "checkpoint" bench "${DET[@]}" --set "base_run_dir=$T/c" >"$T/c.log" 2>&1
st=$?
[ $st = 130 ] || die "two SIGINTs: exit status $st, expected 130: $(cat "$T/c.log")"
grep -q "second signal: exiting now" "$T/c.log" || die "two SIGINTs: no immediate-exit message: $(cat "$T/c.log")"
check_no_corrupt_files "after two SIGINTs"
C=$(newest_run "$T/c")
"$TRAIN_TOOL" ckpt-info "$C/checkpoints/checkpoint_last.bin" >"$T/c.info" || die "checkpoint_last after two SIGINTs"
grep -qx "epoch=1" "$T/c.info" || die "checkpoint_last after two SIGINTs is not epoch 1's: $(cat "$T/c.info")"
[ -n "$(find "$C" -name '.tmp-*')" ] || echo "note: the second SIGINT left no temporary checkpoint file"
"$C/restart.sh" >"$T/c2.log" 2>&1 || die "restart.sh after two SIGINTs failed: $(cat "$T/c2.log")"
[ -z "$(find "$C" -name '.tmp-*')" ] || die "restart.sh left the temporary files: $(find "$C" -name '.tmp-*')"
"$TRAIN_TOOL" ckpt-cmp "$A/checkpoints/checkpoint_last.bin" "$C/checkpoints/checkpoint_last.bin" ||
  die "two SIGINTs + restart.sh differs from the uninterrupted run"
echo "ok   2. two SIGINTs mid-checkpoint: immediate 130, epoch-1 checkpoint intact, resumed run identical"
cases=$((cases + 1))

# ---- 3. generate_fractals ----------------------------------------------------------------------
gen() { "$SF_BINARY" generate_fractals -c "$CFG" --set ncpu=2 --set "fract_base_dir=$1"; }
gen "$T/fr_ref" >"$T/g0.log" 2>&1 || die "generate_fractals (reference) failed: $(cat "$T/g0.log")"
total=$(find "$T/fr_ref" -name '*.npy' | wc -l)
with_fault 60 INT "/instances/" gen "$T/fr_int" >"$T/g1.log" 2>&1
st=$?
[ $st = 130 ] || die "SIGINT in generate_fractals: status $st, expected 130: $(cat "$T/g1.log")"
grep -q "generate_fractals interrupted by SIGINT .* incomplete but every file in it is whole" "$T/g1.log" ||
  die "generate_fractals: no interruption message: $(cat "$T/g1.log")"
n=$(find "$T/fr_int" -name '*.npy' | wc -l)
[ "$n" -gt 0 ] && [ "$n" -lt "$total" ] || die "expected a partial library after SIGINT, found $n of $total files"
"$REL_TOOL" npy-check "$T/fr_int" >/dev/null || die "a partial instance file after SIGINT"
[ -z "$(find "$T/fr_int" -name '.tmp-*')" ] || die "temporary files left after SIGINT: $(find "$T/fr_int" -name '.tmp-*')"
gen "$T/fr_int" >"$T/g2.log" 2>&1 || die "generate_fractals rerun failed: $(cat "$T/g2.log")"
diff -r "$T/fr_ref" "$T/fr_int" >"$T/diff" || die "library after SIGINT + rerun differs: $(head "$T/diff")"
echo "ok   3a. SIGINT in generate_fractals instances: 130 with $n of $total files, rerun byte-identical"
cases=$((cases + 1))

with_fault 4 TERM "3DIFS_param" gen "$T/fr_term" >"$T/g3.log" 2>&1
st=$?
[ $st = 130 ] || die "SIGTERM in the class search: status $st, expected 130: $(cat "$T/g3.log")"
grep -q "generate_fractals interrupted by SIGTERM" "$T/g3.log" || die "no SIGTERM message: $(cat "$T/g3.log")"
[ -z "$(find "$T/fr_term" -name '.tmp-*')" ] || die "temporary files left after SIGTERM"
gen "$T/fr_term" >"$T/g4.log" 2>&1 || die "generate_fractals rerun after SIGTERM failed: $(cat "$T/g4.log")"
diff -r "$T/fr_ref" "$T/fr_term" >"$T/diff" || die "library after SIGTERM + rerun differs: $(head "$T/diff")"
echo "ok   3b. SIGTERM in the class search: 130, rerun byte-identical"
cases=$((cases + 1))

# ---- 4. dataset generation inside benchmark -----------------------------------------------------
dsbench() { "$SF_BINARY" benchmark -c "$CFG" --set ncpu=2 --set "fract_base_dir=$T/fr_ref" "${SMALL[@]}" --set epochs=1 "$@"; }
dsbench --set "dataset_dir=$T/ds_ref" --set "base_run_dir=$T/d0" >"$T/d0.log" 2>&1 || die "reference run: $(cat "$T/d0.log")"
with_fault 20 INT ".tmp_" dsbench --set "dataset_dir=$T/ds_int" --set "base_run_dir=$T/d1" >"$T/d1.log" 2>&1
st=$?
[ $st = 130 ] || die "SIGINT in dataset generation: status $st, expected 130: $(cat "$T/d1.log")"
grep -q "dataset generation interrupted by SIGINT: .* removed the staging directory" "$T/d1.log" &&
  grep -q "no checkpoint yet, so restart.sh (or the same benchmark command) starts the run over" "$T/d1.log" ||
  die "dataset generation: no interruption message: $(cat "$T/d1.log")"
[ -z "$(find "$T/ds_int" -mindepth 2 -maxdepth 2 -type d)" ] ||
  die "a dataset or staging directory is left after SIGINT: $(find "$T/ds_int" -mindepth 2 -maxdepth 2)"
[ -z "$(find "$T/d1" -name 'checkpoint*')" ] || die "a checkpoint was written although training never started"
# as the message says, the run's restart.sh starts it over (no checkpoint yet) and finishes it
D1=$(newest_run "$T/d1")
"$D1/restart.sh" >"$T/d2.log" 2>&1 || die "restart.sh after SIGINT in dataset generation failed: $(cat "$T/d2.log")"
grep -q "starting the run over in $D1" "$T/d2.log" || die "restart.sh did not start the run over: $(cat "$T/d2.log")"
ref=$(find "$T/ds_ref" -mindepth 2 -maxdepth 2 -type d)
new=$(find "$T/ds_int" -mindepth 2 -maxdepth 2 -type d)
diff -r -x meta.yaml -x .heartbeat "$ref" "$new" >"$T/diff" || die "dataset after SIGINT + rerun differs: $(head "$T/diff")"
echo "ok   4. SIGINT in dataset generation: 130, staging removed, restart.sh byte-identical ($(find "$new" -name '*.npy' | wc -l) files)"
cases=$((cases + 1))

echo "PASS: $cases signal cases"

#!/usr/bin/env bash
# Spatial decomposition: 2 ranks sharing every volume (spatial_ranks 2, depth slabs split between
# them, halo planes, GroupNorm statistics, loss and Dice sums through StarPU-MPI) equal 1 untiled
# rank (slabs 1): parameters after 2 steps within 1e-5 relative, both with 2 slabs and with
# more_determinism (4 slabs, 2 per rank: halos inside a rank and across ranks, per-slab partials), and
# with activation_checkpointing (recomputed act_a's halo planes exchanged again for conv b's dW);
# and with local_batch_size 2 (the batch's pooled CE weight sum and per-sample GroupNorm gradients
# through StarPU-MPI), against 1 untiled rank with the same batch.
# With 2 slabs, the bytes StarPU-MPI moved (STARPU_COMM_STATS) must equal what comm_volume
# computes from the model for 2 steps (halo planes + gradient all-reduce + partial sums): the
# formulas of docs/scaling.md are the implementation's.
# Shard-local data: every run's "data read:" lines (each rank's, SF_DIST_ALL_STDOUT=1) must show
# exactly its block per sample, the two .npy headers + its 8 of 16 planes x 16^2 x (3 x 4 + 2)
# bytes, where one rank reads the whole sample; the class-weight pass must read exactly half of
# each sampled mask's planes per rank; and over a whole epoch (validation included) every load
# reads the block only, and validation equals 1 untiled rank's.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
: "${COMM_VOLUME:?}"
t0=$(date +%s)
CK=(--set checkpoint_interval=1 --max-count 2)
G=16 # configs/tiny.yml: problem_scale 4

# The .npy header bytes of a file: 10 + the little-endian length at bytes 8..9.
npy_header() { echo $((10 + $(od -An -tu2 -j8 -N2 "$1"))); }
# "data read: [rank Q (shard Q of 2): ]PER bytes per sample (LOADS sample loads, TOTAL bytes)..." -> "PER LOADS TOTAL"
read_fields() { sed -nE 's/^data read: (.*: )?([0-9]+) bytes per sample \(([0-9]+) sample loads, ([0-9]+) bytes\).*/\2 \3 \4/p'; }
# check_reads OUTPUT WHAT PREFIX PLANES: the line starting "data read: PREFIX" (an ERE) must show
# PLANES planes per sample, in every load.
check_reads() {
  local line f want
  line=$(grep -E "^data read: $3" <<<"$1" | head -1)
  [ -n "$line" ] || die "$2: no 'data read: $3' line in the output: $1"
  read -r -a f <<<"$(read_fields <<<"$line")"
  [ ${#f[@]} = 3 ] || die "$2: cannot parse '$line'"
  want=$((VH + MH + $4 * G * G * 14))
  [ "${f[0]}" = "$want" ] || die "$2: read ${f[0]} bytes per sample, expected $want (headers $VH + $MH" \
    "and $4 planes x $G^2 x 14 bytes): off by $((f[0] - want)) ($line)"
  [ "${f[2]}" = $((f[0] * f[1])) ] || die "$2: ${f[2]} bytes in ${f[1]} loads is not ${f[0]} per" \
    "load: some loads read more than others ($line)"
  echo "$2: ${f[0]} bytes read per sample ($4 planes of $G and the headers), ${f[1]} loads"
}
# The "CE class weights: ..." line's mask bytes of the rank with prefix $2 (empty: the only rank).
cw_bytes() { grep -E "^CE class weights: .*\(([0-9]+) bytes of masks read" <<<"$1" | sed -nE "s/.*\(([0-9]+) bytes of masks read.*/\1/p" | sed -n "${2}p"; }

out1=$(bench1 "${SMALL[@]}" "${CK[@]}" --set slabs=1 --set base_run_dir="$T/one" 2>&1) || die "1-rank run exited with $?: $out1"
R1=$(run_dir_of "$T/one")
VOL=$(find "$T/datasets" -path '*volumes/training/*.npy' | head -1)
MASK=$(find "$T/datasets" -path '*masks/training/*_mask.npy' | head -1)
[ -n "$VOL" ] && [ -n "$MASK" ] || die "no dataset files under $T/datasets"
VH=$(npy_header "$VOL")
MH=$(npy_header "$MASK")
[ "$(stat -c %s "$VOL")" = $((VH + 3 * G * G * G * 4)) ] || die "$VOL is not a float32 (3, $G, $G, $G) .npy"
check_reads "$out1" "1 untiled rank" "[0-9]" $G
CW1=$(cw_bytes "$out1" 1)
[ -n "$CW1" ] || die "1-rank run: no mask bytes in its 'CE class weights' line: $out1"
NMASK=$((CW1 / (MH + G * G * G * 2)))
[ $((NMASK * (MH + G * G * G * 2))) = "$CW1" ] && [ "$NMASK" -ge 1 ] ||
  die "1 rank read $CW1 bytes of masks for the class weights: not a whole number of $G^3 masks"
for variant in "slabs=2" "more_determinism=1" "activation_checkpointing=1"; do
  d="$T/sp-${variant%%=*}-${variant##*=}"
  out2=$(SF_DIST_ALL_STDOUT=1 SF_CHECK_REPLICAS=1 STARPU_COMM_STATS=1 benchn 2 "${SMALL[@]}" "${CK[@]}" \
    --set spatial_ranks=2 --set "$variant" --set base_run_dir="$d" -v 2>&1)
  rc=$?
  [ $rc = 124 ] && die "spatial run ($variant) hung (killed after ${RUN_TIMEOUT}s): $out2"
  [ $rc = 0 ] || die "spatial run ($variant) exited with $rc: $out2"
  grep -q "stopping: --max-count 2 training samples reached in epoch 1 at step 2/" <<<"$out2" ||
    die "spatial run ($variant) did not stop after 2 steps: $out2"
  grep -q "replica check: parameters bitwise identical on all 2 ranks" <<<"$out2" || die "no replica check: $out2"
  slabs=2
  [ "$variant" = "more_determinism=1" ] && slabs=4
  grep -q "task graph: $slabs depth slabs" <<<"$out2" ||
    die "spatial run ($variant): not $slabs depth slabs: $(grep 'task graph' <<<"$out2")"
  if [ "$variant" = "slabs=2" ]; then
    want=$(($("$COMM_VOLUME" --step-bytes 4 3 8 4 8 2) * 2))
    for dir in "0:1" "1:0"; do
      got=$(grep -F "[starpu_comm_stats][$dir]" <<<"$out2" | head -1 | awk '{printf "%.0f", $2}')
      [ "$got" = "$want" ] || die "StarPU-MPI moved ${got:-nothing} bytes $dir in 2 steps, the model predicts $want"
    done
    echo "StarPU-MPI bytes per direction in 2 steps: $want, as computed from the model"
  fi
  for q in 0 1; do check_reads "$out2" "spatial_ranks 2, $variant, rank $q" "rank $q \(shard $q of 2\): " $((G / 2)); done
  if [ "$variant" = "slabs=2" ]; then # the class weights: each rank counts half the planes of each mask
    for r in 1 2; do
      got=$(cw_bytes "$out2" $r)
      want=$((NMASK * (MH + G * G * G)))
      [ "$got" = "$want" ] || die "class weights on 2 ranks: a rank read ${got:-no} bytes of masks, expected $want" \
        "($NMASK masks x (header $MH + $((G / 2)) planes x $G^2 x 2)); one rank read $CW1"
    done
    [ "$(grep -E '^CE class weights' <<<"$out2" | sed -E 's/ \(.*//' | sort -u)" = "$(grep -E '^CE class weights' <<<"$out1" | sed -E 's/ \(.*//')" ] ||
      die "class weights differ between 2 ranks and 1: $(grep -E '^CE class weights' <<<"$out2") vs $(grep -E '^CE class weights' <<<"$out1")"
    echo "class weights: each of 2 ranks read $want bytes of masks, 1 rank $CW1; the same weights"
  fi
  R2=$(run_dir_of "$d")
  echo "spatial_ranks 2, $variant vs 1 untiled rank:"
  "$MPI_TOOL" ckpt-close "$R2/checkpoints/checkpoint_last.bin" "$R1/checkpoints/checkpoint_last.bin" 1e-5 ||
    die "2 spatial shards ($variant) differ from 1 untiled rank"
done
CK4=(--set checkpoint_interval=1 --max-count 4 --set local_batch_size=2)
out1=$(bench1 "${SMALL[@]}" "${CK4[@]}" --set slabs=1 --set base_run_dir="$T/one-b2" 2>&1) ||
  die "1-rank batch-2 run exited with $?: $out1"
out2=$(SF_DIST_ALL_STDOUT=1 SF_CHECK_REPLICAS=1 benchn 2 "${SMALL[@]}" "${CK4[@]}" --set spatial_ranks=2 \
  --set base_run_dir="$T/sp-b2" 2>&1)
rc=$?
[ $rc = 124 ] && die "spatial run (batch 2) hung (killed after ${RUN_TIMEOUT}s): $out2"
[ $rc = 0 ] || die "spatial run (batch 2) exited with $rc: $out2"
grep -q "stopping: --max-count 4 training samples reached in epoch 1 at step 2/" <<<"$out2" ||
  die "spatial run (batch 2) did not stop after 2 steps: $out2"
grep -q "replica check: parameters bitwise identical on all 2 ranks" <<<"$out2" || die "no replica check: $out2"
for q in 0 1; do check_reads "$out2" "spatial_ranks 2, batch 2, rank $q" "rank $q \(shard $q of 2\): " $((G / 2)); done
echo "spatial_ranks 2, local_batch_size 2 vs 1 untiled rank:"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/sp-b2")/checkpoints/checkpoint_last.bin" \
  "$(run_dir_of "$T/one-b2")/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 spatial shards with local_batch_size 2 differ from 1 untiled rank"
# A whole epoch (11 training steps, then validation on the 4 validation samples): each shard reads
# only its planes of the validation samples too, and validation equals 1 untiled rank's.
EP=(--set epochs=1 --set checkpoint_interval=1)
out1=$(bench1 "${SMALL[@]}" "${EP[@]}" --set slabs=1 --set base_run_dir="$T/one-ep" 2>&1) ||
  die "1-rank epoch run exited with $?: $out1"
out2=$(SF_DIST_ALL_STDOUT=1 benchn 2 "${SMALL[@]}" "${EP[@]}" --set spatial_ranks=2 --set base_run_dir="$T/sp-ep" 2>&1)
rc=$?
[ $rc = 124 ] && die "spatial epoch run hung (killed after ${RUN_TIMEOUT}s): $out2"
[ $rc = 0 ] || die "spatial epoch run exited with $rc: $out2"
for q in 0 1; do
  check_reads "$out2" "spatial_ranks 2, one epoch, rank $q" "rank $q \(shard $q of 2\): " $((G / 2))
  grep -qE "^data read: rank $q \(shard $q of 2\): [0-9]+ bytes per sample \(15 sample loads" <<<"$out2" ||
    die "rank $q did not load 11 training + 4 validation samples: $(grep '^data read' <<<"$out2")"
done
C1="$(run_dir_of "$T/one-ep")/train_stats.csv"
C2="$(run_dir_of "$T/sp-ep")/train_stats.csv"
# val_loss_epoch (column 4) and val_dice (column 7) of epoch 1, relative difference <= 1e-5
awk -F, -v what="val_loss_epoch val_dice" 'NR == FNR && FNR == 2 { a4 = $4; a7 = $7; next }
  FNR == 2 { seen = 1; split(what, n, " "); v[1] = a4; w[1] = $4; v[2] = a7; w[2] = $7
    for (i = 1; i <= 2; i++) { d = v[i] - w[i]; if (d < 0) d = -d; s = w[i] < 0 ? -w[i] : w[i]
      printf "%s: 2 shards %s, 1 rank %s, relative difference %.3g\n", n[i], v[i], w[i], (s > 0 ? d / s : d)
      if (v[i] == "" || d > 1e-5 * (s > 1 ? s : 1)) bad = 1 } }
  END { if (!seen) print "no epoch-1 row in the 1-rank CSV"; exit !seen || bad }' "$C2" "$C1" || die "validation of 2 spatial shards differs from 1 untiled rank (above): $(cat "$C2") vs $(cat "$C1")"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/sp-ep")/checkpoints/checkpoint_last.bin" \
  "$(run_dir_of "$T/one-ep")/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 spatial shards differ from 1 untiled rank after one epoch"
echo "PASS in $(($(date +%s) - t0)) s"

#!/usr/bin/env bash
# 3D blocks (dc_num_shards): a volume split over ranks along rows and columns as well as depth
# equals 1 untiled rank. [1,2,2] (also with more_determinism and activation_checkpointing) and
# [2,2,1] on 4 ranks (H/W blocks padded with their neighbours' columns and rows, halo pieces through
# StarPU-MPI, GroupNorm/loss/Dice sums over the blocks in a fixed order): parameters after 2 steps
# within 1e-5 relative of 1 untiled rank. Not bitwise: the blocks' partial sums and convs add in
# another order than the untiled run's; the [1,2,2] runs with and without more_determinism and
# activation_checkpointing equal each other bit for bit. 2 replicas x [1,1,2] (4 ranks) equal the
# one-process reference of 2 replicas at the same global batch (dp_ref) within 1e-5.
# Grids finer than the bottleneck edge merge blocks there: [4,1,1] and [1,1,4] with a bottleneck of 2
# equal 1 untiled rank of that net. Every rank reads only its box of each sample (the .npy headers +
# its voxels x 14 bytes), and a grid that does not divide the ranks is refused before any work.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
: "${DP_REF:?run through ctest (DP_REF)}"
t0=$(date +%s)
MAXC=2 # samples per run: 2 steps of 1 replica (4 for 2 replicas)
G=16 # configs/tiny.yml: problem_scale 4

npy_header() { echo $((10 + $(od -An -tu2 -j8 -N2 "$1"))); }
# run_grid NAME NP GRID [ARGS...]: NP ranks with dc_num_shards GRID, 2 steps; output in $out
run_grid() {
  local name=$1 np=$2 grid=$3
  shift 3
  out=$(SF_DIST_ALL_STDOUT=1 SF_CHECK_REPLICAS=1 benchn "$np" "${SMALL[@]}" --set checkpoint_interval=1 \
    --max-count $MAXC --set "dc_num_shards=$grid" \
    --set base_run_dir="$T/$name" "$@" 2>&1)
  local rc=$?
  [ $rc = 124 ] && die "$name: hung (killed after ${RUN_TIMEOUT}s): $out"
  [ $rc = 0 ] || die "$name: exited with $rc: $out"
  grep -q "stopping: --max-count $MAXC training samples reached in epoch 1 at step 2/" <<<"$out" ||
    die "$name: did not stop after 2 steps: $out"
  grep -q "replica check: parameters bitwise identical on all $np ranks" <<<"$out" || die "$name: no replica check: $out"
}
# check_box OUTPUT RANK VOXELS: rank RANK read the headers and VOXELS voxels per sample
check_box() {
  local line per want
  line=$(grep -E "^data read: rank $2 \(" <<<"$1" | head -1)
  [ -n "$line" ] || die "no 'data read' line of rank $2: $1"
  per=$(sed -nE 's/^data read: [^:]*: ([0-9]+) bytes per sample.*/\1/p' <<<"$line")
  want=$((VH + MH + $3 * 14))
  [ "$per" = "$want" ] || die "rank $2 read $per bytes per sample, expected $want (headers + $3 voxels x 14): $line"
  echo "rank $2: $per bytes per sample (${line##*: }"
}
close() {
  "$MPI_TOOL" ckpt-close "$(run_dir_of "$T/$1")/checkpoints/checkpoint_last.bin" \
    "$(run_dir_of "$T/$2")/checkpoints/checkpoint_last.bin" 1e-5 || die "$1 differs from $2"
}

out1=$(bench1 "${SMALL[@]}" --set checkpoint_interval=1 --max-count 2 --set slabs=1 --set base_run_dir="$T/one" 2>&1) || die "1-rank run exited with $?: $out1"
VH=$(npy_header "$(find "$T/datasets" -path '*volumes/training/*.npy' | head -1)")
MH=$(npy_header "$(find "$T/datasets" -path '*masks/training/*_mask.npy' | head -1)")

run_grid hw 4 "[1, 2, 2]" -v
grep -q "task graph: 4 blocks (1 depth slabs x 2 x 2 row and column blocks" <<<"$out" ||
  die "[1,2,2]: the task graph is not 4 blocks of 1 slab x 2 x 2: $(grep 'task graph' <<<"$out")"
for r in 0 1 2 3; do check_box "$out" $r $((G * G * G / 4)); done
grep -q "the box \[0, 16) x \[8, 16) x \[0, 8) of 16^3" <<<"$out" || die "no rank read the box of rows 8..16, columns 0..8: $out"
echo "[1,2,2] (4 ranks) vs 1 untiled rank:"
close hw one

# the same grid with more_determinism's per-block partials and activation_checkpointing's recomputed
# blocks (each conv pads its recomputed input again); and [2,2,1]. The sanitizer build (SF_TEST_SLOWDOWN
# > 1) skips these two runs for CI time: they take the code paths of the other runs.
SAN=$([ "${SF_TEST_SLOWDOWN:-1}" -gt 1 ] && echo 1 || echo 0)
if [ "$SAN" = 1 ]; then
  echo "SKIP (sanitizer build, CI time): [1,2,2] with more_determinism + activation_checkpointing, and [2,2,1]"
else
  run_grid hw-md-ck 4 "[1, 2, 2]" --set more_determinism=1 --set activation_checkpointing=1
  echo "[1,2,2] with more_determinism and activation_checkpointing (4 ranks) vs 1 untiled rank:"
  close hw-md-ck one
  # bitwise where the reduction order allows: with one block per rank every gradient gets one
  # contribution per rank (a COMMUTE sum of one term, or one per-block partial), GroupNorm and the loss
  # reduce in block order, and the recomputed blocks are the forward's, so the two [1,2,2] runs agree
  # bit for bit (not with 1 untiled rank: its convs and sums add in another order)
  echo "[1,2,2] with more_determinism and activation_checkpointing vs [1,2,2] without, bitwise:"
  "$MPI_TOOL" ckpt-close "$(run_dir_of "$T/hw-md-ck")/checkpoints/checkpoint_last.bin" \
    "$(run_dir_of "$T/hw")/checkpoints/checkpoint_last.bin" 0 || die "[1,2,2] runs with and without more_determinism differ"

  run_grid dh 4 "[2, 2, 1]"
  for r in 0 1 2 3; do check_box "$out" $r $((G * G * G / 4)); done
  echo "[2,2,1] (4 ranks) vs 1 untiled rank:"
  close dh one
fi

MAXC=4
run_grid dpw 4 "[1, 1, 2]"
for r in 0 1 2 3; do check_box "$out" $r $((G * G * G / 2)); done
# the one-process reference of 2 replicas x batch 1 at the same global batch (tests/mpi/dp_ref.c: each
# replica's batch loss with its own CE denominator, the gradients averaged, as upstream's DDP)
ref=$(timeout "$RUN_TIMEOUT" "$DP_REF" 2 2 "$T/ref_r2_b1.bin" -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" 2>&1) ||
  die "dp_ref (2 replicas x batch 1) failed: $ref"
echo "2 replicas x [1,1,2] (4 ranks) vs the one-process reference of 2 replicas x batch 1:"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/dpw")/checkpoints/checkpoint_last.bin" "$T/ref_r2_b1.bin" 1e-5 ||
  die "2 replicas x [1,1,2] differ from the one-process reference of 2 replicas"

# Grids finer than the bottleneck: with unet_bottleneck_dim 1 (edges 16, 8, 4, 2) the bottleneck has 2
# planes, rows and columns, so [4,1,1] (depth slabs) and [1,1,4] (column blocks) merge pairs of blocks
# there onto 2 owners and split them back on the way up; both equal 1 untiled rank of the same net.
BN=(--set unet_bottleneck_dim=1)
MAXC=2
out1=$(bench1 "${SMALL[@]}" --set checkpoint_interval=1 --max-count 2 --set slabs=1 "${BN[@]}" \
  --set base_run_dir="$T/one-bn1" 2>&1) || die "1-rank run (bottleneck 1) exited with $?: $out1"
for gr in "4, 1, 1" "1, 1, 4"; do
  name="merge-${gr//, /}"
  run_grid "$name" 4 "[$gr]" "${BN[@]}" -v
  want="task graph: 4 depth slabs"
  [ "$gr" = "1, 1, 4" ] && want="task graph: 4 blocks (1 depth slabs x 1 x 4 row and column blocks"
  grep -q "$want" <<<"$out" || die "[$gr]: expected '$want': $(grep 'task graph' <<<"$out")"
  echo "[$gr] (4 ranks, the bottleneck's 2 blocks merged from 4) vs 1 untiled rank:"
  close "$name" one-bn1
done

# a grid whose product does not divide the ranks: refused before any work, naming the key
bad=$(benchn 4 "${SMALL[@]}" --set "dc_num_shards=[1, 3, 1]" --set base_run_dir="$T/bad" 2>&1)
rc=$?
[ $rc = 2 ] || die "dc_num_shards [1,3,1] on 4 ranks exited with $rc, expected 2: $bad"
grep -q "config key 'dc_num_shards': 3 ranks per volume do not divide the 4 ranks" <<<"$bad" || die "unclear refusal: $bad"
[ -z "$(find "$T/bad" -mindepth 1 2>/dev/null)" ] || die "the refused run wrote $(find "$T/bad" -mindepth 1)"
echo "dc_num_shards [1,3,1] on 4 ranks: refused (exit 2) before any work"
echo "PASS in $(($(date +%s) - t0)) s"

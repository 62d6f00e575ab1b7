/* The dataset layout in 64-bit arithmetic (src/datagen/dataset_layout.c) at problem_scale 11,
 * upstream's official 2048^3 problem, checked against hand-computed values without allocating a
 * volume: voxel count 2^33 (overflows 32 bits), file sizes of the float32 (3, G, G, G) volume and
 * uint16 mask .npy files, and shard boundaries and file offsets for 1, 2, 8 and 2048 spatial
 * ranks; scale 10 (the old limit) and 20 (the new one) as well, and the out-of-range scales. */
#include <inttypes.h>
#include <stdio.h>

#include "scaffold/dataset.h"
#include "testutil.h"

#define EQ(a, b, what) \
  SF_CHECK((uint64_t)(a) == (uint64_t)(b), "%s: %" PRIu64 ", expected %" PRIu64, what, (uint64_t)(a), (uint64_t)(b))

int main(void)
{
  sf_dataset_layout l;
  SF_CHECK(sf_dataset_layout_of(11, &l) == 0, "problem_scale 11 refused by the layout");
  EQ(l.grid, 2048, "scale 11 grid");
  EQ(l.voxels, 8589934592ull, "scale 11 voxels (2^33)");
  EQ(l.plane_voxels, 4194304ull, "scale 11 plane voxels");
  /* .npy v1.0 headers: the dict with 21-digit growth padding, data aligned to 64 bytes */
  EQ(l.volume_header, 128, "scale 11 volume .npy header");
  EQ(l.mask_header, 128, "scale 11 mask .npy header");
  EQ(l.volume_data, 103079215104ull, "scale 11 volume data (3 x 2^33 x 4 = 96 GiB)");
  EQ(l.mask_data, 17179869184ull, "scale 11 mask data (2^33 x 2 = 16 GiB)");
  EQ(l.volume_file, 103079215232ull, "scale 11 volume file");
  EQ(l.mask_file, 17179869312ull, "scale 11 mask file");

  uint64_t lo, hi, off;
  sf_dataset_shard(&l, 1, 0, 2, &lo, &hi, &off); /* one rank: channel 2 starts 2 x 32 GiB in */
  EQ(lo, 0, "T=1 lo");
  EQ(hi, 2048, "T=1 hi");
  EQ(off, 128ull + 2ull * 34359738368ull, "T=1 channel 2 offset");
  sf_dataset_shard(&l, 2, 1, 0, &lo, &hi, &off); /* second half: 1024 planes of 16 MiB */
  EQ(lo, 1024, "T=2 q=1 lo");
  EQ(hi, 2048, "T=2 q=1 hi");
  EQ(off, 128ull + 17179869184ull, "T=2 q=1 channel 0 offset");
  sf_dataset_shard(&l, 8, 7, 2, &lo, &hi, &off);
  EQ(lo, 1792, "T=8 q=7 lo");
  EQ(hi, 2048, "T=8 q=7 hi");
  EQ(off, 128ull + 68719476736ull + 30064771072ull, "T=8 q=7 channel 2 offset (2 x 32 GiB + 1792 x 16 MiB)");
  sf_dataset_shard(&l, 8, 7, -1, &lo, &hi, &off);
  EQ(off, 128ull + 15032385536ull, "T=8 q=7 mask offset (1792 x 8 MiB)");
  sf_dataset_shard(&l, 2048, 2047, 2, &lo, &hi, &off); /* one plane per rank: the last voxel plane */
  EQ(lo, 2047, "T=2048 last lo");
  EQ(hi, 2048, "T=2048 last hi");
  EQ(off + 4194304ull * 4, l.volume_file, "T=2048 last plane of channel 2 ends the file");
  uint64_t sum = 0; /* shards tile the volume */
  for (int q = 0; q < 8; q++) {
    sf_dataset_shard(&l, 8, q, 0, &lo, &hi, &off);
    sum += hi - lo;
  }
  EQ(sum, 2048, "T=8 planes in all shards");

  SF_CHECK(sf_dataset_layout_of(10, &l) == 0, "problem_scale 10 refused");
  EQ(l.voxels, 1073741824ull, "scale 10 voxels");
  EQ(l.volume_file, 128ull + 12884901888ull, "scale 10 volume file");
  SF_CHECK(sf_dataset_layout_of(20, &l) == 0, "problem_scale 20 refused");
  EQ(l.voxels, 1152921504606846976ull, "scale 20 voxels (2^60)");
  EQ(l.mask_data, 2305843009213693952ull, "scale 20 mask data (2^61)");
  SF_CHECK(sf_dataset_layout_of(0, &l) == -1, "problem_scale 0 accepted");
  SF_CHECK(sf_dataset_layout_of(21, &l) == -1, "problem_scale 21 accepted");
  return sf_test_end();
}

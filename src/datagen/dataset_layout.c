/* The files of one volume in 64-bit arithmetic (scaffold/dataset.h sf_dataset_layout): voxel
 * counts, .npy header and data sizes, and where a spatial shard's planes start in the files. Pure
 * arithmetic, so problem_scale 11 (2048^3, upstream's official problem: a 96 GiB volume file, whose
 * voxel count 2^33 overflows 32 bits) is checked without allocating anything
 * (tests/dataset/test_dataset_layout.c). The generator and the loader take their sizes from here. */
#include "scaffold/common.h"
#include "scaffold/dataset.h"
#include "scaffold/npy.h"

int sf_dataset_layout_of(int problem_scale, sf_dataset_layout *l)
{
  if (problem_scale < 1 || problem_scale > SF_DATASET_MAX_PROBLEM_SCALE) return -1;
  const uint64_t G = (uint64_t)1 << problem_scale;
  size_t shape[4] = {3, (size_t)G, (size_t)G, (size_t)G};
  l->grid = (int)G;
  l->plane_voxels = G * G;
  l->voxels = G * G * G;
  l->volume_header = sf_npy_header_bytes(SF_NPY_F32, 4, shape);
  l->mask_header = sf_npy_header_bytes(SF_NPY_U16, 3, shape + 1);
  l->volume_data = 3 * l->voxels * sizeof(float);
  l->mask_data = l->voxels * sizeof(uint16_t);
  l->volume_file = l->volume_header + l->volume_data;
  l->mask_file = l->mask_header + l->mask_data;
  return 0;
}

void sf_dataset_shard(const sf_dataset_layout *l, int T, int q, int ch, uint64_t *lo, uint64_t *hi,
                      uint64_t *offset)
{
  const uint64_t G = (uint64_t)l->grid;
  SF_ASSERT(T >= 1 && (uint64_t)T <= G && q >= 0 && q < T && ch >= -1 && ch < 3);
  *lo = (uint64_t)q * G / (uint64_t)T;
  *hi = (uint64_t)(q + 1) * G / (uint64_t)T;
  if (ch < 0)
    *offset = l->mask_header + *lo * l->plane_voxels * sizeof(uint16_t);
  else
    *offset = l->volume_header + ((uint64_t)ch * l->voxels + *lo * l->plane_voxels) * sizeof(float);
}

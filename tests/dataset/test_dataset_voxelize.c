/* The v5 voxelizer (spec §4.3) and the overlay (§4.4) on hand-made clouds: a 2:1:1 box keeps its
 * aspect ratio, its long axis spans 0..G-1 and it is centred on the short axes; a single point and
 * coincident points land in the centre voxel; NaN/inf input is rejected; output is sorted and
 * unique; the overlay writes later fractals over earlier ones, mask values stay in 0..n_categories
 * and each class's colour appears exactly where its mask label does. Pure functions only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/dataset.h"
#include "testutil.h"

static void bounds(const uint64_t *lin, size_t n, int G, int lo[3], int hi[3])
{
  for (int a = 0; a < 3; a++) lo[a] = G, hi[a] = -1;
  for (size_t i = 0; i < n; i++) {
    int id[3] = {(int)(lin[i] / ((uint64_t)G * G)), (int)(lin[i] / (uint64_t)G % (uint64_t)G), (int)(lin[i] % (uint64_t)G)};
    for (int a = 0; a < 3; a++) {
      if (id[a] < lo[a]) lo[a] = id[a];
      if (id[a] > hi[a]) hi[a] = id[a];
    }
  }
}

static void test_box(int G, int long_axis)
{
  /* a filled 2:1:1 lattice box, long along long_axis, offset far from the origin */
  const int n1 = 4 * G + 1, n2 = 2 * G + 1;
  size_t n = (size_t)n1 * n2 * n2, k = 0;
  float *pts = malloc(3 * n * sizeof *pts);
  uint64_t *lin = malloc(n * sizeof *lin);
  for (int i = 0; i < n1; i++)
    for (int j = 0; j < n2; j++)
      for (int l = 0; l < n2; l++) {
        float v[3];
        v[long_axis] = 2.0f * (float)i / (float)(n1 - 1);
        v[(long_axis + 1) % 3] = (float)j / (float)(n2 - 1);
        v[(long_axis + 2) % 3] = (float)l / (float)(n2 - 1);
        for (int a = 0; a < 3; a++) pts[3 * k + a] = v[a] - 3.0f + (float)a;
        k++;
      }
  size_t nv = 0;
  int rc = sf_voxelize(pts, n, G, lin, &nv);
  SF_CHECK(rc == 0, "voxelize returned %d", rc);
  int lo[3], hi[3];
  bounds(lin, nv, G, lo, hi);
  SF_CHECK(lo[long_axis] == 0 && hi[long_axis] == G - 1, "G=%d long axis %d: spans %d..%d, want 0..%d", G, long_axis,
           lo[long_axis], hi[long_axis], G - 1);
  for (int s = 1; s <= 2; s++) {
    int a = (long_axis + s) % 3;
    int extent = hi[a] - lo[a] + 1;
    SF_CHECK(extent == G / 2, "G=%d short axis %d: extent %d voxels, want %d (2:1 aspect kept)", G, a, extent, G / 2);
    SF_CHECK(lo[a] + hi[a] == G - 1, "G=%d short axis %d: %d..%d is not centred in 0..%d", G, a, lo[a], hi[a], G - 1);
  }
  /* a filled box occupies every voxel of its bounding box */
  size_t want = (size_t)(hi[0] - lo[0] + 1) * (size_t)(hi[1] - lo[1] + 1) * (size_t)(hi[2] - lo[2] + 1);
  SF_CHECK(nv == want, "G=%d: %zu occupied voxels, want the full %zu of the box", G, nv, want);
  int sorted = 1;
  for (size_t i = 1; i < nv; i++) sorted &= lin[i] > lin[i - 1];
  SF_CHECK(sorted, "output is not strictly increasing (sorted unique)");
  free(pts);
  free(lin);
}

static void test_degenerate(void)
{
  const int G = 16;
  uint64_t centre = (uint64_t)(G / 2) * (G * G + G + 1), lin[10];
  float one[3] = {1.5f, -2.0f, 1e6f};
  size_t nv = 99;
  SF_CHECK(sf_voxelize(one, 1, G, lin, &nv) == 0 && nv == 1 && lin[0] == centre,
           "single point: %zu voxels, first %llu, want 1 voxel at %llu (the centre)", nv, (unsigned long long)lin[0], (unsigned long long)centre);
  float same[30];
  for (int i = 0; i < 10; i++) same[3 * i] = 0.25f, same[3 * i + 1] = 0.5f, same[3 * i + 2] = -7.0f;
  SF_CHECK(sf_voxelize(same, 10, G, lin, &nv) == 0 && nv == 1 && lin[0] == centre,
           "10 coincident points: %zu voxels, first %llu, want 1 at %llu", nv, (unsigned long long)lin[0], (unsigned long long)centre);
  /* two distinct points: the far one is clipped onto G-1 along the long axis, the other at 0 */
  float two[6] = {0, 0, 0, 1, 0, 0};
  SF_CHECK(sf_voxelize(two, 2, G, lin, &nv) == 0 && nv == 2, "two points: %zu voxels, want 2", nv);
  uint64_t a0 = (uint64_t)(G / 2) * G + G / 2, a1 = (uint64_t)(G - 1) * G * G + a0;
  SF_CHECK(lin[0] == a0 && lin[1] == a1, "two points: voxels %llu %llu, want %llu %llu", (unsigned long long)lin[0], (unsigned long long)lin[1], (unsigned long long)a0, (unsigned long long)a1);
  float bad[6] = {0, 0, 0, 1, NAN, 0};
  SF_CHECK(sf_voxelize(bad, 2, G, lin, &nv) == -1, "NaN input must be rejected");
  bad[4] = INFINITY;
  SF_CHECK(sf_voxelize(bad, 2, G, lin, &nv) == -1, "inf input must be rejected");
}

static void test_render(void)
{
  const int G = 8;
  const size_t N = (size_t)G * G * G;
  const double colours[9] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  uint64_t f0[] = {0, 5, 9, 100}, f1[] = {5, 200}, f2[] = {9, 300, 511};
  const uint64_t *vox[3] = {f0, f1, f2};
  size_t nvox[3] = {4, 2, 3};
  int cats[3] = {2, 0, 2};
  float *vol = calloc(3 * N, sizeof *vol);
  uint16_t *mask = calloc(N, sizeof *mask);
  sf_volume_render(vol, mask, G, 3, cats, vox, nvox, colours);
  struct { uint32_t v; int label; } want[] = {{0, 3}, {5, 1}, {9, 3}, {100, 3}, {200, 1}, {300, 3}, {511, 3}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    SF_CHECK(mask[want[i].v] == want[i].label, "mask[%u] = %u, want %d (later fractals overwrite)", want[i].v,
             mask[want[i].v], want[i].label);
  int bad_range = 0, bad_colour = 0, fg = 0;
  for (size_t v = 0; v < N; v++) {
    int m = mask[v];
    bad_range += m > 3;
    fg += m != 0;
    for (int ch = 0; ch < 3; ch++) {
      float want_c = m ? (float)colours[3 * (m - 1) + ch] : 0.0f;
      bad_colour += vol[ch * N + v] != want_c;
    }
  }
  SF_CHECK(bad_range == 0, "%d mask values outside 0..3", bad_range);
  SF_CHECK(bad_colour == 0, "%d voxel channels do not carry their mask's class colour", bad_colour);
  SF_CHECK(fg == 7, "%d foreground voxels, want 7", fg);
  free(vol);
  free(mask);
}

int main(void)
{
  for (int a = 0; a < 3; a++) test_box(16, a);
  test_box(32, 1);
  test_degenerate();
  test_render();
  return sf_test_end();
}

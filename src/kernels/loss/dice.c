/* Hard (argmax) foreground Dice of validation, spec §6.3, in partial-sum form so slabs reduce to the
 * untiled score. argmax ties go to the lowest class and NaN counts as the maximum (torch.argmax).
 * A class absent from both prediction and labels has S = 0 -> S := 2TP = 0 and scores exactly 1.
 * Layout: z (n,K) logits, voxels x classes (NDHWC with C = K). */
#include <math.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"

/* acc: (K,3) += [TP, predicted count, label count] per class */
void sf_dice_hard_partial_ref(double *acc, const float *z, const uint16_t *lab, size_t n, int K)
{
  SF_ASSERT(K >= 2);
  for (size_t i = 0; i < n; i++) {
    const float *zi = z + i * K;
    int best = 0;
    float bv = zi[0];
    for (int k = 1; k < K; k++)
      if (zi[k] > bv || (isnan(zi[k]) && !isnan(bv))) {
        bv = zi[k];
        best = k;
      }
    int y = lab[i];
    if (y >= K) SF_ABORT("dice: label %d at voxel %zu is out of range 0..%d", y, i, K - 1);
    acc[3 * best + 1] += 1.0;
    acc[3 * y + 2] += 1.0;
    if (best == y) acc[3 * y] += 1.0;
  }
}

double sf_dice_hard_finalize(const double *acc, int K)
{
  SF_ASSERT(K >= 2);
  double d = 0;
  for (int k = 1; k < K; k++) {
    double I = 2.0 * acc[3 * k];
    double S = acc[3 * k + 1] + acc[3 * k + 2];
    if (S == 0.0) S = I;
    d += (I + SF_DICE_EPS) / (S + SF_DICE_EPS);
  }
  return d / (double)(K - 1);
}

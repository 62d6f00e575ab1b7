/* Training loss of spec §6.2-6.3: class-weighted cross-entropy (global weighted mean) plus
 * 1 - soft foreground Dice, in partial-sum form so slabs of a volume (and ranks) reduce to the
 * untiled value. A batch of B samples (local_batch_size) pools the CE over the batch (one weight
 * sum for all its voxels, PyTorch's weighted 'mean') and averages the per-sample Dice. Per voxel, log-softmax and softmax are formed in double from the float logits
 * (max-subtracted). The backward is the exact gradient of the finalized loss, including that both
 * Dice sums depend on P (dI/dP_k = 2Y_k, dS/dP_k = 1) and the S == 0 branch (Dice := 1, whose
 * gradient is 0). Layout: z (n,K) logits, voxels x classes (NDHWC with C = K). */
#include <math.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "scaffold/workspace.h"

#define LOSS_WS_SLOT (SF_WORKSPACE_SLOTS - 1)

/* p: (K) = softmax(zi) in double; returns the log-sum-exp of zi. */
static inline double softmax_row(double *restrict p, const float *restrict zi, int K)
{
  double mx = zi[0];
  for (int k = 1; k < K; k++)
    if (zi[k] > mx || isnan(zi[k])) mx = zi[k];
  double s = 0;
  for (int k = 0; k < K; k++) s += (p[k] = exp((double)zi[k] - mx));
  double inv = 1.0 / s;
  for (int k = 0; k < K; k++) p[k] *= inv;
  return mx + log(s);
}

static inline int check_label(const uint16_t *lab, size_t i, int K)
{
  if (lab[i] >= K) SF_ABORT("loss: label %u at voxel %zu is out of range 0..%d", (unsigned)lab[i], i, K - 1);
  return lab[i];
}

/* acc: SF_LOSS_NACC(K) += CE and soft-Dice partial sums over z: (n,K), lab: (n), cw: (K). */
void sf_loss_partial_ref(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, int K)
{
  SF_ASSERT(K >= 2);
  double *p = (double *)sf_workspace_floats(LOSS_WS_SLOT, 2 * (size_t)K);
  for (size_t i = 0; i < n; i++) {
    const float *zi = z + i * K;
    int y = check_label(lab, i, K);
    double lse = softmax_row(p, zi, K);
    double w = cw[y];
    acc[0] += w * (lse - (double)zi[y]); /* w[y] * -log p_y */
    acc[1] += w;
    for (int k = 0; k < K; k++) acc[2 + 3 * k + 1] += p[k];
    acc[2 + 3 * y + 0] += p[y];
    acc[2 + 3 * y + 2] += 1.0;
  }
}

/* acc[0] += sum w[y] over lab: (n) (the CE denominator of these voxels, without the logits). */
void sf_loss_weight_sum_ref(double *acc, const uint16_t *lab, const float *cw, size_t n, int K)
{
  double s = acc[0]; /* in voxel order from acc[0], as the OpenCL kernel: the same bits */
  for (size_t i = 0; i < n; i++) s += cw[check_label(lab, i, K)];
  acc[0] = s;
}

/* I_k, S_k of class k after the S == 0 -> S := I rule. */
static inline void dice_terms(double *I, double *S, const double *acc, int k)
{
  *I = 2.0 * acc[2 + 3 * k];
  *S = acc[2 + 3 * k + 1] + acc[2 + 3 * k + 2];
  if (*S == 0.0) *S = *I;
}

void sf_loss_finalize(double *ce, double *dice_fg, double *loss, const double *acc, int K)
{
  SF_ASSERT(K >= 2);
  double d = 0;
  for (int k = 1; k < K; k++) {
    double I, S;
    dice_terms(&I, &S, acc, k);
    d += (I + SF_DICE_EPS) / (S + SF_DICE_EPS);
  }
  d /= (double)(K - 1);
  double c = acc[0] / acc[1];
  if (ce) *ce = c;
  if (dice_fg) *dice_fg = d;
  if (loss) *loss = c + (1.0 - d);
}

void sf_loss_finalize_batch(double out[3], const double *const *acc, int B, int K)
{
  SF_ASSERT(B >= 1);
  if (B == 1) {
    sf_loss_finalize(&out[0], &out[1], &out[2], acc[0], K);
    return;
  }
  double num = 0, den = 0, dice = 0;
  for (int b = 0; b < B; b++) {
    double d;
    sf_loss_finalize(NULL, &d, NULL, acc[b], K);
    num += acc[b][0];
    den += acc[b][1];
    dice += d;
  }
  out[0] = num / den;
  out[1] = dice / B;
  out[2] = out[0] + (1.0 - out[1]);
}

void sf_loss_backward_ref(float *dz, const float *z, const uint16_t *lab, const float *cw,
                          const double *acc, size_t n, int K, float scale)
{
  sf_loss_backward_batch_ref(dz, z, lab, cw, acc, acc[1], 1, n, K, scale);
}

/* dz: (n,K) written = scale * dloss/dz. With g_k = dloss/dP_k (Dice term only; g_0 = 0):
 *   g_k = -(1/(B*(K-1))) * (2*Y_k/(S+eps) - (I+eps)/(S+eps)^2)  (0 when S == 0: Dice is then constant 1)
 *   dz_j = w[y]/wsum * (P_j - [j==y]) + P_j * (g_j - sum_k P_k g_k). */
void sf_loss_backward_batch_ref(float *dz, const float *z, const uint16_t *lab, const float *cw,
                                const double *acc, double wsum, int batch, size_t n, int K, float scale)
{
  SF_ASSERT(K >= 2 && batch >= 1);
  double *p = (double *)sf_workspace_floats(LOSS_WS_SLOT, 6 * (size_t)K);
  double *ga = p + K, *gb = ga + K; /* g_k = gb[k] + ga[k]*Y_k */
  const double inv_fg = 1.0 / ((double)(K - 1) * batch);
  ga[0] = gb[0] = 0.0;
  for (int k = 1; k < K; k++) {
    double I, S;
    dice_terms(&I, &S, acc, k);
    if (acc[2 + 3 * k + 1] + acc[2 + 3 * k + 2] == 0.0) {
      ga[k] = gb[k] = 0.0;
    } else {
      double se = S + SF_DICE_EPS;
      ga[k] = -inv_fg * 2.0 / se;
      gb[k] = inv_fg * (I + SF_DICE_EPS) / (se * se);
    }
  }
  const double inv_w = 1.0 / wsum;
  for (size_t i = 0; i < n; i++) {
    const float *zi = z + i * K;
    float *dzi = dz + i * K;
    int y = check_label(lab, i, K);
    softmax_row(p, zi, K);
    double pg = p[y] * ga[y];
    for (int k = 0; k < K; k++) pg += p[k] * gb[k];
    double wc = (double)cw[y] * inv_w;
    for (int k = 0; k < K; k++) {
      double gk = gb[k] + (k == y ? ga[k] : 0.0);
      double d = wc * (p[k] - (k == y ? 1.0 : 0.0)) + p[k] * (gk - pg);
      dzi[k] = (float)((double)scale * d);
    }
  }
}

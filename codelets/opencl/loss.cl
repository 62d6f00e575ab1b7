/* OpenCL C: the training loss (class-weighted CE + 1 - soft foreground Dice, spec §6.2-6.3) and the
 * hard (argmax) Dice of validation, device twins of src/kernels/loss/loss_ref.c and dice.c, in partial-sum
 * form. Per voxel the softmax is formed in double from the float logits (max-subtracted). A label
 * outside 0..K-1 (the CPU kernels abort) makes the partial sums NaN (acc[0]) and the gradient NaN,
 * so the step's loss shows it. Layout: z (n,K) logits, lab (n) uint16, cw (K). */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

#define SF_DICE_EPS 1e-6

/* Max (NaN wins) and sum of exp(z - max) of one voxel's logits. */
static void sf_softmax_stats(__global const float *zi, int K, double *mx_out, double *s_out)
{
  double mx = zi[0];
  for (int k = 1; k < K; k++)
    if (zi[k] > mx || isnan(zi[k])) mx = zi[k];
  double s = 0;
  for (int k = 0; k < K; k++) s += exp((double)zi[k] - mx);
  *mx_out = mx;
  *s_out = s;
}

/* acc: 2+3K doubles += (accumulate) or := [sum w[y]*-log p_y, sum w[y], per class k: sum P_k*Y_k,
 * sum P_k, sum Y_k]. Work-item 0 owns acc[0..1], work-item 1+k owns class k's three sums; each loops
 * over the slab's voxels in order. */
__kernel void sf_loss_partial(__global double *acc, ulong acc_off, int accumulate, __global const float *z,
                              ulong z_off, __global const ushort *lab, ulong lab_off, __global const float *cw,
                              ulong cw_off, ulong n, int K)
{
  int j = (int)get_global_id(0);
  if (j > K) return;
  acc += acc_off;
  z += z_off;
  lab += lab_off;
  cw += cw_off;
  if (j == 0) {
    double a0 = accumulate ? acc[0] : 0.0, a1 = accumulate ? acc[1] : 0.0;
    int bad = 0;
    for (ulong i = 0; i < n; i++) {
      int y = lab[i];
      if (y >= K) {
        bad = 1;
        continue;
      }
      __global const float *zi = z + i * K;
      double mx, s;
      sf_softmax_stats(zi, K, &mx, &s);
      double lse = mx + log(s);
      double w = cw[y];
      a0 += w * (lse - (double)zi[y]);
      a1 += w;
    }
    acc[0] = bad ? (double)NAN : a0;
    acc[1] = a1;
    return;
  }
  int k = j - 1;
  __global double *ak = acc + 2 + 3 * k;
  double t0 = accumulate ? ak[0] : 0.0, t1 = accumulate ? ak[1] : 0.0, t2 = accumulate ? ak[2] : 0.0;
  for (ulong i = 0; i < n; i++) {
    int y = lab[i];
    if (y >= K) continue;
    __global const float *zi = z + i * K;
    double mx, s;
    sf_softmax_stats(zi, K, &mx, &s);
    double p = exp((double)zi[k] - mx) * (1.0 / s);
    t1 += p;
    if (y == k) {
      t0 += p;
      t2 += 1.0;
    }
  }
  ak[0] = t0;
  ak[1] = t1;
  ak[2] = t2;
}

/* acc[0] := (accumulate: +=) sum w[y] over the voxels, in voxel order (a part of a batch's pooled
 * CE weight sum; bitwise the CPU kernel). One work-item. */
__kernel void sf_loss_wsum(__global double *acc, ulong acc_off, int accumulate, __global const ushort *lab,
                           ulong lab_off, __global const float *cw, ulong cw_off, ulong n, int K)
{
  if (get_global_id(0) != 0) return;
  acc += acc_off;
  lab += lab_off;
  cw += cw_off;
  double a = accumulate ? acc[0] : 0.0;
  for (ulong i = 0; i < n; i++) {
    int y = lab[i];
    a += y < K ? (double)cw[y] : (double)NAN;
  }
  acc[0] = a;
}

/* dloss/dP_k = gb + ga*Y_k of class k from the global acc (0 for the background and when S == 0);
 * in a batch of `batch` samples the Dice term is their mean. */
static void sf_dice_grad(__global const double *acc, int K, int batch, int k, double *ga, double *gb)
{
  *ga = 0.0;
  *gb = 0.0;
  if (k == 0) return;
  double I = 2.0 * acc[2 + 3 * k];
  double S = acc[2 + 3 * k + 1] + acc[2 + 3 * k + 2];
  if (S == 0.0) return;
  double inv_fg = 1.0 / ((double)(K - 1) * batch);
  double se = S + SF_DICE_EPS;
  *ga = -inv_fg * 2.0 / se;
  *gb = inv_fg * (I + SF_DICE_EPS) / (se * se);
}

/* dz: (n,K) written = scale * dloss/dz:
 *   dz_j = w[y]/wsum * (P_j - [j==y]) + P_j * (g_j - sum_k P_k g_k),  g_k = gb_k + ga_k*Y_k,
 * wsum = acc[1], or in a batch (has_wsum) the batch's pooled weight sum wsum[0].
 * One work-item per dz element. */
__kernel void sf_loss_bwd(__global float *dz, ulong dz_off, __global const float *z, ulong z_off,
                          __global const ushort *lab, ulong lab_off, __global const float *cw, ulong cw_off,
                          __global const double *acc, ulong acc_off, __global const double *wsum, ulong wsum_off,
                          int has_wsum, int batch, ulong n, int K, float scale)
{
  ulong gid = get_global_id(0);
  if (gid >= n * K) return;
  int k = (int)(gid % K);
  ulong i = gid / K;
  acc += acc_off;
  int y = lab[lab_off + i];
  if (y >= K) {
    dz[dz_off + gid] = NAN;
    return;
  }
  __global const float *zi = z + z_off + i * K;
  double mx, s;
  sf_softmax_stats(zi, K, &mx, &s);
  double inv = 1.0 / s;
  double ga, gb;
  sf_dice_grad(acc, K, batch, y, &ga, &gb);
  double pg = exp((double)zi[y] - mx) * inv * ga;
  for (int kk = 0; kk < K; kk++) {
    double gak, gbk;
    sf_dice_grad(acc, K, batch, kk, &gak, &gbk);
    pg += exp((double)zi[kk] - mx) * inv * gbk;
  }
  double gak, gbk;
  sf_dice_grad(acc, K, batch, k, &gak, &gbk);
  double pk = exp((double)zi[k] - mx) * inv;
  double gk = gbk + (k == y ? gak : 0.0);
  double wc = (double)cw[cw_off + y] * (1.0 / (has_wsum ? wsum[wsum_off] : acc[1]));
  double d = wc * (pk - (k == y ? 1.0 : 0.0)) + pk * (gk - pg);
  dz[dz_off + gid] = (float)((double)scale * d);
}

/* acc: (K,3) += (accumulate) or := [TP, predicted count, label count] of the argmax prediction
 * (ties -> lowest class, NaN counts as the maximum). One work-item per class, looping over voxels. */
__kernel void sf_dice_hard_partial(__global double *acc, ulong acc_off, int accumulate, __global const float *z,
                                   ulong z_off, __global const ushort *lab, ulong lab_off, ulong n, int K)
{
  int k = (int)get_global_id(0);
  if (k >= K) return;
  acc += acc_off;
  z += z_off;
  lab += lab_off;
  double tp = accumulate ? acc[3 * k] : 0.0, pc = accumulate ? acc[3 * k + 1] : 0.0;
  double lc = accumulate ? acc[3 * k + 2] : 0.0;
  int bad = 0;
  for (ulong i = 0; i < n; i++) {
    __global const float *zi = z + i * K;
    int best = 0;
    float bv = zi[0];
    for (int kk = 1; kk < K; kk++)
      if (zi[kk] > bv || (isnan(zi[kk]) && !isnan(bv))) {
        bv = zi[kk];
        best = kk;
      }
    int y = lab[i];
    if (y >= K) {
      bad = 1;
      continue;
    }
    if (best == k) pc += 1.0;
    if (y == k) {
      lc += 1.0;
      if (best == y) tp += 1.0;
    }
  }
  acc[3 * k] = bad ? (double)NAN : tp;
  acc[3 * k + 1] = pc;
  acc[3 * k + 2] = lc;
}

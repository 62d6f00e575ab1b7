/* The decisions of the reference U-Net's last train step that lie within rounding distance of their
 * kink (ReLU inputs near 0, max-pool windows with two nearly equal largest inputs), and that step's
 * gradient with one of them taken the other way (unet_ref.h: "decisions near their kink"). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "unet_ref.h"
#include "unet_ref_internal.h"

/* Records decision k (ReLU input or max-pool window) at distance dist from its kink, keeping the
 * SF_REF_MAX_KINKS nearest. */
static void note_kink(sf_unet_ref *r, const sf_ref_kink *k)
{
  int slot = r->nkinks;
  if (slot == SF_REF_MAX_KINKS) { /* full: replace the farthest if this one is nearer */
    slot = 0;
    for (int i = 1; i < SF_REF_MAX_KINKS; i++)
      if (r->kinks[i].dist > r->kinks[slot].dist) slot = i;
    if (r->kinks[slot].dist <= k->dist) return;
  } else {
    r->nkinks++;
  }
  r->kinks[slot] = *k;
}

/* The max-pool window of level i (1..L) fed by element j of enc[i-1].h2: its output element. */
static size_t pool_window_of(const sf_unet_ref *r, int i, size_t j)
{
  const int e = r->u->edge[i - 1], C = r->u->channels[i - 1];
  size_t v = j / C;
  int c = (int)(j % C), w = (int)(v % e), h = (int)(v / e % e), d = (int)(v / ((size_t)e * e));
  return ((((size_t)(d / 2) * (e / 2) + h / 2) * (e / 2) + w / 2) * C) + c;
}

/* The argmax offset (0..7, first maximum in scan order, as sf_maxpool3d_forward_ref) of output element
 * o of pool level i over x = enc[i-1].h2; *alt: the runner-up's offset, *gap: top minus runner-up. */
static int pool_argmax(const sf_unet_ref *r, int i, size_t o, const float *x, int *alt, float *top, float *gap)
{
  const int eo = r->u->edge[i], C = r->u->channels[i - 1];
  size_t v = o / C;
  int c = (int)(o % C), w = (int)(v % eo), h = (int)(v / eo % eo), d = (int)(v / ((size_t)eo * eo));
  const size_t sw = (size_t)C, sh = 2 * (size_t)eo * sw, sd = 2 * (size_t)eo * sh;
  const float *base = x + 2 * (size_t)d * sd + 2 * (size_t)h * sh + 2 * (size_t)w * sw + c;
  int best = 0, second_k = -1;
  float t = -INFINITY, second = -INFINITY;
  for (int k = 0; k < 8; k++) {
    float val = base[(size_t)(k >> 2) * sd + (size_t)((k >> 1) & 1) * sh + (size_t)(k & 1) * sw];
    if (val > t) {
      second = t, second_k = best;
      t = val, best = k;
    } else if (val > second) {
      second = val, second_k = k;
    }
  }
  *alt = second_k;
  *top = t;
  *gap = t - second;
  return best;
}

/* The ReLU inputs z of one GroupNorm+ReLU with |z| < delta. The other side of the kink: y = 0 for
 * z > 0; for z <= 0 a tiny positive y (so the backward's y > 0 mask passes); when y feeds a max-pool
 * window (pool_level > 0), also that window's argmax recomputed with the new y. */
static void relu_kinks(sf_unet_ref *r, float *y, const float *x, const double *st, const float *gamma,
                       const float *beta, size_t n, int C, float delta, int pool_level)
{
  float *z = r->gA; /* scratch (n*C <= its size); unused outside backward */
  sf_groupnorm_forward_ref(z, x, st, gamma, beta, n, n, C, r->groups, SF_GN_EPS, 0);
  for (size_t j = 0; j < n * C; j++) {
    if (!(fabsf(z[j]) < delta)) continue;
    sf_ref_kink k = {.dist = fabsf(z[j]), .y = y, .yi = j, .ynew = z[j] > 0 ? 0.0f : FLT_MIN};
    if (pool_level > 0) {
      size_t o = pool_window_of(r, pool_level, j);
      int alt;
      float top, gap, keep = y[j];
      y[j] = k.ynew;
      int best = pool_argmax(r, pool_level, o, y, &alt, &top, &gap);
      y[j] = keep;
      if (best != r->pidx[pool_level][o]) {
        k.pidx = r->pidx[pool_level];
        k.pi = o;
        k.pnew = (uint8_t)best;
      }
    }
    note_kink(r, &k);
  }
}

int sf_unet_ref_near_kinks(sf_unet_ref *r, const float *params, float delta)
{
  r->nkinks = 0;
  for (int side = 0; side < 2; side++)
    for (int l = 0; l <= r->L - side; l++) {
      dconv *b = side ? &r->dec[l] : &r->enc[l];
      int pool_level = !side && l < r->L ? l + 1 : 0; /* enc[l].h2 feeds max-pool level l+1 */
      relu_kinks(r, b->h1, b->a1, b->st1, P(b->g1), P(b->b1), b->n, b->cout, delta, 0);
      relu_kinks(r, b->h2, b->a2, b->st2, P(b->g2), P(b->b2), b->n, b->cout, delta, pool_level);
    }
  for (int i = 1; i <= r->L; i++) { /* max-pool windows whose two largest (positive) inputs are close */
    size_t no = (size_t)r->u->edge[i] * r->u->edge[i] * r->u->edge[i] * r->u->channels[i - 1];
    for (size_t o = 0; o < no; o++) {
      int alt;
      float top, gap;
      pool_argmax(r, i, o, r->enc[i - 1].h2, &alt, &top, &gap);
      if (!(top > 0 && gap < delta) || alt < 0) continue;
      sf_ref_kink k = {.dist = gap, .pidx = r->pidx[i], .pi = o, .pnew = (uint8_t)alt};
      note_kink(r, &k);
    }
  }
  return r->nkinks;
}

const sf_ref_kink *sf_unet_ref_kink(const sf_unet_ref *r, int k)
{
  SF_ASSERT(k >= 0 && k < r->nkinks);
  return &r->kinks[k];
}

void sf_unet_ref_grads_flipped(sf_unet_ref *r, const float *params, const float *x, int k, float *grads,
                               int use_naive)
{
  SF_ASSERT(k >= 0 && k < r->nkinks);
  sf_ref_kink *d = &r->kinks[k];
  float y0 = d->y ? d->y[d->yi] : 0;
  uint8_t p0 = d->pidx ? d->pidx[d->pi] : 0;
  if (d->y) d->y[d->yi] = d->ynew;
  if (d->pidx) d->pidx[d->pi] = d->pnew;
  memset(grads, 0, r->u->total_params * sizeof(float));
  sf_unet_ref_backward(r, params, grads, x, use_naive ? &SF_REF_KERNELS_NAIVE : &SF_REF_KERNELS_BLAS);
  if (d->y) d->y[d->yi] = y0;
  if (d->pidx) d->pidx[d->pi] = p0;
}

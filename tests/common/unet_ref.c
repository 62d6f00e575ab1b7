/* The sequential reference U-Net (the oracle): whole-volume forward, loss and backward for one
 * sample, calling the plain kernels of ops.h in network order, with no tiling and no StarPU.
 * Every activation is kept (allocated once in create), so backward is the forward list reversed.
 * use_naive selects the _ref conv kernels, otherwise the _blas ones (OpenBLAS on one thread);
 * GroupNorm, ReLU (fused into GroupNorm), max-pool, concat and loss have a single version. Tests
 * compare it with PyTorch (tests/model/test_unet_golden.c) and the StarPU graph is compared with it
 * (tests/graph). A test oracle, so it lives in tests/common (sf_testutil), not in the model library. */
#include "unet_ref.h"

#include <cblas.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/ops.h"
#include "unet_ref_internal.h"

const conv_kernels SF_REF_KERNELS_NAIVE = {
    sf_conv3d_forward_ref,   sf_conv3d_backward_data_ref,   sf_conv3d_backward_weights_ref,
    sf_conv1_forward_ref,    sf_conv1_backward_data_ref,    sf_conv1_backward_weights_ref,
    sf_upconv3d_forward_ref, sf_upconv3d_backward_data_ref, sf_upconv3d_backward_weights_ref,
};
const conv_kernels SF_REF_KERNELS_BLAS = {
    sf_conv3d_forward,   sf_conv3d_backward_data,   sf_conv3d_backward_weights,
    sf_conv1_forward,    sf_conv1_backward_data,    sf_conv1_backward_weights,
    sf_upconv3d_forward, sf_upconv3d_backward_data, sf_upconv3d_backward_weights,
};

static float *falloc(size_t n, const char *what) { return sf_aligned_alloc(n * sizeof(float), what); }

static int param_index(const sf_unet *u, const char *fmt, int k, const char *suffix)
{
  char name[128], prefix[48];
  snprintf(prefix, sizeof prefix, fmt, k);
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  int i = sf_unet_find_param(u, name);
  if (i < 0) SF_ABORT("U-Net parameter %s is missing from the table", name);
  return i;
}

static void dconv_init(dconv *b, const sf_unet *u, const char *fmt, int k, int e, int cin, int cout, int groups)
{
  b->e = e;
  b->cin = cin;
  b->cout = cout;
  b->n = (size_t)e * e * e;
  b->w1 = param_index(u, fmt, k, ".double_conv.0.weight");
  b->g1 = param_index(u, fmt, k, ".double_conv.1.weight");
  b->b1 = param_index(u, fmt, k, ".double_conv.1.bias");
  b->w2 = param_index(u, fmt, k, ".double_conv.3.weight");
  b->g2 = param_index(u, fmt, k, ".double_conv.4.weight");
  b->b2 = param_index(u, fmt, k, ".double_conv.4.bias");
  b->a1 = falloc(b->n * cout, "reference U-Net activations");
  b->h1 = falloc(b->n * cout, "reference U-Net activations");
  b->a2 = falloc(b->n * cout, "reference U-Net activations");
  b->h2 = falloc(b->n * cout, "reference U-Net activations");
  b->st1 = sf_calloc((size_t)groups * 2, sizeof(double), "GroupNorm statistics");
  b->st2 = sf_calloc((size_t)groups * 2, sizeof(double), "GroupNorm statistics");
}

static void dconv_free(dconv *b)
{
  free(b->a1);
  free(b->h1);
  free(b->a2);
  free(b->h2);
  free(b->st1);
  free(b->st2);
}

sf_unet_ref *sf_unet_ref_create(const sf_unet *u)
{
  sf_unet_ref *r = sf_calloc(1, sizeof *r, "reference U-Net");
  /* One BLAS thread, as inside the runtime's codelets: OpenBLAS splits a GEMM differently with more
   * threads, so the oracle's float sums would otherwise depend on the core count (measured: with 2
   * threads, one ReLU in the last decoder block of test problem ps 4 / base 8 / seed 5 lands on the
   * other side of its kink, changing the gradients by up to 1.3e-3 of a layer's max). */
  openblas_set_num_threads(1);
  int L = u->levels;
  const int *c = u->channels, *e = u->edge;
  r->u = u;
  r->L = L;
  r->K = u->n_classes;
  r->groups = u->groups;
  r->nvox = (size_t)e[0] * e[0] * e[0];

  size_t scratch = 0;
  for (int l = 0; l <= L; l++) scratch = sf_max_sz(scratch, (size_t)e[l] * e[l] * e[l] * 2 * c[l]);

  dconv_init(&r->enc[0], u, "inc", 0, e[0], u->in_channels, c[0], u->groups);
  for (int i = 1; i <= L; i++) {
    size_t n = (size_t)e[i] * e[i] * e[i];
    dconv_init(&r->enc[i], u, "down%d.maxpool_conv.1", i, e[i], c[i - 1], c[i], u->groups);
    r->pool[i] = falloc(n * c[i - 1], "reference U-Net activations");
    r->pidx[i] = sf_malloc(n * c[i - 1], "reference U-Net max-pool indices");
  }
  for (int l = 0; l < L; l++) {
    int k = L - l; /* module up_k produces level l */
    size_t n = (size_t)e[l] * e[l] * e[l];
    dconv_init(&r->dec[l], u, "up%d.conv", k, e[l], 2 * c[l], c[l], u->groups);
    r->upw[l] = param_index(u, "up%d", k, ".up.weight");
    r->upb[l] = param_index(u, "up%d", k, ".up.bias");
    r->up[l] = falloc(n * c[l], "reference U-Net activations");
    r->cat[l] = falloc(n * 2 * c[l], "reference U-Net activations");
    r->ddec[l] = falloc(n * c[l], "reference U-Net gradients");
  }
  for (int l = 0; l <= L; l++) r->dskip[l] = falloc((size_t)e[l] * e[l] * e[l] * c[l], "reference U-Net gradients");
  r->outw = param_index(u, "outc", 0, ".conv.weight");
  r->outb = param_index(u, "outc", 0, ".conv.bias");
  r->logits = falloc(r->nvox * r->K, "reference U-Net logits");
  r->dlogits = falloc(r->nvox * r->K, "reference U-Net logit gradients");
  r->gA = falloc(scratch, "reference U-Net gradients");
  r->gB = falloc(scratch, "reference U-Net gradients");
  r->gC = falloc(scratch, "reference U-Net gradients");
  r->gsums = sf_calloc((size_t)u->groups * 2, sizeof(double), "GroupNorm backward sums");
  r->dgb = sf_calloc((size_t)c[L] * 2, sizeof(double), "GroupNorm backward sums");
  r->loss_acc = sf_calloc(SF_LOSS_NACC(r->K), sizeof(double), "loss sums");
  return r;
}

void sf_unet_ref_destroy(sf_unet_ref *r)
{
  if (!r) return;
  for (int i = 0; i <= r->L; i++) {
    dconv_free(&r->enc[i]);
    free(r->pool[i]);
    free(r->pidx[i]);
    free(r->dskip[i]);
  }
  for (int l = 0; l < r->L; l++) {
    dconv_free(&r->dec[l]);
    free(r->up[l]);
    free(r->cat[l]);
    free(r->ddec[l]);
  }
  free(r->logits);
  free(r->dlogits);
  free(r->gA);
  free(r->gB);
  free(r->gC);
  free(r->gsums);
  free(r->dgb);
  free(r->loss_acc);
  free(r);
}


/* y = ReLU(GroupNorm(x)), with the statistics over the whole volume. */
static void gn_relu_forward(const sf_unet_ref *r, float *y, double *st, const float *x, const float *gamma,
                            const float *beta, size_t n, int C)
{
  memset(st, 0, (size_t)r->groups * 2 * sizeof(double));
  sf_groupnorm_stats_ref(st, x, n, C, r->groups);
  sf_groupnorm_forward_ref(y, x, st, gamma, beta, n, n, C, r->groups, SF_GN_EPS, 1);
}

/* dx from dy through ReLU(GroupNorm(x)) (y its output); dgamma, dbeta accumulated. */
static void gn_relu_backward(sf_unet_ref *r, float *dx, float *dgamma, float *dbeta, const float *dy, const float *y,
                             const float *x, const double *st, const float *gamma, size_t n, int C)
{
  memset(r->gsums, 0, (size_t)r->groups * 2 * sizeof(double));
  memset(r->dgb, 0, (size_t)C * 2 * sizeof(double));
  sf_groupnorm_backward_stats_ref(r->gsums, r->dgb, dy, y, x, st, gamma, n, n, C, r->groups, SF_GN_EPS, 1);
  sf_groupnorm_backward_data_ref(dx, dy, y, x, st, r->gsums, gamma, n, n, C, r->groups, SF_GN_EPS, 1);
  sf_groupnorm_param_grads(dgamma, dbeta, r->dgb, C);
}

static void dconv_forward(const sf_unet_ref *r, dconv *b, const conv_kernels *k, const float *params,
                          const float *in)
{
  int e = b->e;
  k->conv3_fwd(b->a1, NULL, in, NULL, P(b->w1), e, e, e, b->cin, b->cout);
  gn_relu_forward(r, b->h1, b->st1, b->a1, P(b->g1), P(b->b1), b->n, b->cout);
  k->conv3_fwd(b->a2, NULL, b->h1, NULL, P(b->w2), e, e, e, b->cout, b->cout);
  gn_relu_forward(r, b->h2, b->st2, b->a2, P(b->g2), P(b->b2), b->n, b->cout);
}

/* dh2: gradient of the block's output; dx (may be NULL): gradient of its input `in`, written.
 * Uses r->gA and r->gB, so neither dh2 nor dx may be one of them. */
static void dconv_backward(sf_unet_ref *r, const dconv *b, const conv_kernels *k, const float *params, float *grads,
                           const float *in, const float *dh2, float *dx)
{
  int e = b->e;
  SF_ASSERT(dh2 != r->gA && dh2 != r->gB && dx != r->gA && dx != r->gB);
  gn_relu_backward(r, r->gA, D(b->g2), D(b->b2), dh2, b->h2, b->a2, b->st2, P(b->g2), b->n, b->cout); /* da2 */
  k->conv3_bwd_w(D(b->w2), NULL, b->h1, NULL, r->gA, e, e, e, b->cout, b->cout);
  k->conv3_bwd_data(r->gB, NULL, r->gA, NULL, P(b->w2), e, e, e, b->cout, b->cout);           /* dh1 */
  gn_relu_backward(r, r->gA, D(b->g1), D(b->b1), r->gB, b->h1, b->a1, b->st1, P(b->g1), b->n, b->cout); /* da1 */
  k->conv3_bwd_w(D(b->w1), NULL, in, NULL, r->gA, e, e, e, b->cin, b->cout);
  if (dx) k->conv3_bwd_data(dx, NULL, r->gA, NULL, P(b->w1), e, e, e, b->cin, b->cout);
}

static void forward(sf_unet_ref *r, const float *params, const float *x, const conv_kernels *k)
{
  int L = r->L;
  const int *c = r->u->channels, *e = r->u->edge;
  dconv_forward(r, &r->enc[0], k, params, x);
  for (int i = 1; i <= L; i++) {
    sf_maxpool3d_forward_ref(r->pool[i], r->pidx[i], r->enc[i - 1].h2, e[i], e[i], e[i], c[i - 1]);
    dconv_forward(r, &r->enc[i], k, params, r->pool[i]);
  }
  const float *deeper = r->enc[L].h2;
  for (int l = L - 1; l >= 0; l--) {
    size_t n = (size_t)e[l] * e[l] * e[l];
    k->up_fwd(r->up[l], deeper, P(r->upw[l]), P(r->upb[l]), e[l + 1], e[l + 1], e[l + 1], c[l + 1], c[l]);
    sf_concat_forward(r->cat[l], r->enc[l].h2, r->up[l], n, c[l], c[l]);
    dconv_forward(r, &r->dec[l], k, params, r->cat[l]);
    deeper = r->dec[l].h2;
  }
  k->conv1_fwd(r->logits, r->dec[0].h2, P(r->outw), P(r->outb), r->nvox, c[0], r->K);
}

void sf_unet_ref_backward(sf_unet_ref *r, const float *params, float *grads, const float *x, const conv_kernels *k)
{
  int L = r->L;
  const int *c = r->u->channels, *e = r->u->edge;
  k->conv1_bwd_w(D(r->outw), D(r->outb), r->dec[0].h2, r->dlogits, r->nvox, c[0], r->K);
  k->conv1_bwd_data(r->ddec[0], r->dlogits, P(r->outw), r->nvox, c[0], r->K);
  /* decoder, shallowest first: level l = up_{L-l} */
  for (int l = 0; l < L; l++) {
    size_t n = (size_t)e[l] * e[l] * e[l];
    const float *deeper = l + 1 == L ? r->enc[L].h2 : r->dec[l + 1].h2;
    float *ddeeper = l + 1 == L ? r->dskip[L] : r->ddec[l + 1];
    dconv_backward(r, &r->dec[l], k, params, grads, r->cat[l], r->ddec[l], r->gC); /* dcat */
    sf_concat_backward(r->dskip[l], r->gA, r->gC, n, c[l], c[l]);                    /* dskip (=), dup */
    k->up_bwd_w(D(r->upw[l]), D(r->upb[l]), deeper, r->gA, e[l + 1], e[l + 1], e[l + 1], c[l + 1], c[l]);
    k->up_bwd_data(ddeeper, r->gA, P(r->upw[l]), e[l + 1], e[l + 1], e[l + 1], c[l + 1], c[l]);
  }
  /* encoder, deepest first; each level's output gradient = skip part + max-pool backward */
  for (int i = L; i >= 1; i--) {
    size_t nprev = (size_t)e[i - 1] * e[i - 1] * e[i - 1] * c[i - 1];
    dconv_backward(r, &r->enc[i], k, params, grads, r->pool[i], r->dskip[i], r->gC); /* dpool */
    sf_maxpool3d_backward_ref(r->gA, r->gC, r->pidx[i], e[i], e[i], e[i], c[i - 1]);
    float *ds = r->dskip[i - 1];
    for (size_t j = 0; j < nprev; j++) ds[j] += r->gA[j];
  }
  dconv_backward(r, &r->enc[0], k, params, grads, x, r->dskip[0], NULL);
}

void sf_unet_ref_forward(sf_unet_ref *r, const float *params, const float *x, float *logits, int use_naive)
{
  forward(r, params, x, use_naive ? &SF_REF_KERNELS_NAIVE : &SF_REF_KERNELS_BLAS);
  memcpy(logits, r->logits, r->nvox * r->K * sizeof(float));
}

void sf_unet_ref_train_step(sf_unet_ref *r, const float *params, float *grads, const float *x,
                            const uint16_t *lab, const float *cw, double out[3], int use_naive)
{
  const conv_kernels *k = use_naive ? &SF_REF_KERNELS_NAIVE : &SF_REF_KERNELS_BLAS;
  int K = r->K;
  forward(r, params, x, k);
  double *acc = r->loss_acc;
  memset(acc, 0, SF_LOSS_NACC(K) * sizeof(double));
  sf_loss_partial_ref(acc, r->logits, lab, cw, r->nvox, K);
  sf_loss_finalize(&out[0], &out[1], &out[2], acc, K);
  sf_loss_backward_ref(r->dlogits, r->logits, lab, cw, acc, r->nvox, K, 1.0f);
  sf_unet_ref_backward(r, params, grads, x, k);
}

void sf_unet_ref_batch_step(sf_unet_ref *r, const float *params, float *grads, int B, const float *const *x,
                            const uint16_t *const *lab, const float *cw, double out[3], int use_naive)
{
  const conv_kernels *k = use_naive ? &SF_REF_KERNELS_NAIVE : &SF_REF_KERNELS_BLAS;
  const int K = r->K;
  const size_t NA = SF_LOSS_NACC(K);
  double wsum = 0; /* the CE denominator, pooled over the batch */
  for (int b = 0; b < B; b++) sf_loss_weight_sum_ref(&wsum, lab[b], cw, r->nvox, K);
  double *acc = sf_calloc((size_t)B * NA, sizeof(double), "batch loss sums");
  const double **accs = sf_malloc((size_t)B * sizeof *accs, "batch loss sums");
  for (int b = 0; b < B; b++) {
    forward(r, params, x[b], k);
    accs[b] = acc + b * NA;
    sf_loss_partial_ref(acc + b * NA, r->logits, lab[b], cw, r->nvox, K);
    sf_loss_backward_batch_ref(r->dlogits, r->logits, lab[b], cw, acc + b * NA, wsum, B, r->nvox, K, 1.0f);
    sf_unet_ref_backward(r, params, grads, x[b], k);
  }
  sf_loss_finalize_batch(out, accs, B, K);
  free(accs);
  free(acc);
}

const float *sf_unet_ref_logits(const sf_unet_ref *r) { return r->logits; }

/* Plain C kernels for every operation of ScaFFold's U-Net, loss and optimizer (no StarPU here).
 *
 * Conventions (read before adding a kernel):
 *  - Layout: activations are NDHWC with a batch of 1: element (d,h,w,c) of a (D,H,W,C) tensor is at
 *    ((d*H + h)*W + w)*C + c. Shape comments below use that order. A "slab" is the planes [d0, d0+nd).
 *  - Argument order: outputs (and saved state) first, then inputs, then weights, then sizes.
 *  - Accumulation: weight and bias gradients are ACCUMULATED (+=), so slab contributions add up;
 *    activation gradients are WRITTEN (=). Partial sums (statistics, loss, Dice, norms) are double
 *    and ACCUMULATED (+=): a slab-by-slab run sums to the untiled result.
 *  - Variants: _ref is the naive oracle and never goes away. Every op family with fast variants
 *    (src/kernels/<family>/) has one entry file, named after the family, that holds every "which
 *    variant wins" rule and is the only thing the codelets call; this header declares the references
 *    and the entries. The variants (im2col + OpenBLAS sgemm, single-threaded inside the call; direct
 *    register blocks; Winograd; bf16 on VDPBF16PS or AMX) are declared in the family's own
 *    <family>_variants.h, never call their entry, and are tested against the reference.
 *    Elementwise kernels have one plain (vectorisable) version.
 *  - Weight layouts (ours; PyTorch layouts are converted by the golden-file loader and checkpoints):
 *      conv 3x3x3   w: (3,3,3,Cin,Cout)  = [27*Cin][Cout]      PyTorch: (Cout,Cin,3,3,3)
 *      upconv 2/2   w: (Cin,2,2,2,Cout)  = [Cin][8*Cout]       PyTorch: (Cin,Cout,2,2,2)
 *      conv 1x1x1   w: (Cin,Cout)                              PyTorch: (Cout,Cin,1,1,1)
 */
#ifndef SF_OPS_H
#define SF_OPS_H

#include <stddef.h>
#include <stdint.h>

/* ---- 3x3x3 convolution, padding 1, stride 1, no bias ---------------------------------------------
 * y:    (nd,H,W,Cout) output slab, planes d0..d0+nd-1 (written)
 * x:    (nd,H,W,Cin)  input planes d0..d0+nd-1
 * x_lo: (H,W,Cin)     input plane d0-1, or NULL at the volume's front face (zero padding)
 * x_hi: (H,W,Cin)     input plane d0+nd, or NULL at the back face
 * w:    (3,3,3,Cin,Cout) */
void sf_conv3d_forward_ref(float *y, const float *x_lo, const float *x, const float *x_hi,
                           const float *w, int nd, int H, int W, int Cin, int Cout);
/* dx: (nd,H,W,Cin) written. dy, dy_lo, dy_hi: output-gradient planes d0..d0+nd-1, d0-1, d0+nd
 * (NULL at the faces). */
void sf_conv3d_backward_data_ref(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                                 const float *w, int nd, int H, int W, int Cin, int Cout);
/* dw: (3,3,3,Cin,Cout) accumulated with the contribution of output slab dy: (nd,H,W,Cout);
 * x_lo/x/x_hi as in forward. */
void sf_conv3d_backward_weights_ref(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                    const float *dy, int nd, int H, int W, int Cin, int Cout);

/* The entries (src/kernels/conv3d/conv3d.c, the family's only entry): the same contracts as the
 * references, run by the variant that wins on this CPU for the shape (Winograd F(2,3), the direct
 * register-blocked kernels of the active CPU kernel set, or im2col + sgemm; conv3d.c holds every
 * rule). sf_conv3d_choose() names the variant the built-in rules pick for a call; a tuning record
 * (scaffold/kernel_tuning.h) may pick another. */
void sf_conv3d_forward(float *y, const float *x_lo, const float *x, const float *x_hi,
                       const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data(float *dx, const float *dy_lo, const float *dy, const float *dy_hi,
                             const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_weights(float *dw, const float *x_lo, const float *x, const float *x_hi,
                                const float *dy, int nd, int H, int W, int Cin, int Cout);
/* The rows of taps [t0, t1) (t = kd*9 + kh*3 + kw) of the above, dw: ((t1-t0)*Cin, Cout); Cout >= 17. */
void sf_conv3d_backward_weights_taps(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                     const float *x_hi, const float *dy, int nd, int H, int W, int Cin, int Cout);

/* bf16 entries (torch_amp: 1 on CPU workers): the same convolutions with the activations, gradients and
 * weights rounded to bf16 (nearest even) and the products summed in fp32; fp32 in and out. They run the
 * active bf16 engine (scaffold/cpu_isa.h; abort when there is none): AVX-512 VDPBF16PS needs
 * sf_cpu_bf16_supported() (AVX-512F/BW/VL and AVX512_BF16), AMX tiles sf_amx_supported() (AMX-TILE,
 * AMX-BF16 and the OS's permission, asked for once). */
int sf_cpu_bf16_supported(void);
int sf_amx_supported(void);
void sf_conv3d_forward_bf16(float *y, const float *x_lo, const float *x, const float *x_hi, const float *w, int nd,
                            int H, int W, int Cin, int Cout);
void sf_conv3d_backward_data_bf16(float *dx, const float *dy_lo, const float *dy, const float *dy_hi, const float *w,
                                  int nd, int H, int W, int Cin, int Cout);
void sf_conv3d_backward_weights_taps_bf16(float *dw, int t0, int t1, const float *x_lo, const float *x,
                                          const float *x_hi, const float *dy, int nd, int H, int W, int Cin,
                                          int Cout);
/* The bf16 weights packed once for every slab of a step ("cast once per step"): the bytes of the forward's (flip 0)
 * or dX's (flip 1) packed copy of w (27 x Cin x Cout fp32), or 0 when the active engine packs per call (VDPBF16PS) or
 * the shape's layout depends on the slab (AMX needs flip ? Cout : Cin a multiple of 32 and the other of 16); the
 * packing into wfwd and wdx (either may be NULL; both from one read of w where Cin and Cout are multiples of 32);
 * and the forward (x -> y) or dX (x = dy -> y = dx) on such a copy, equal bit for bit to sf_conv3d_forward_bf16 /
 * sf_conv3d_backward_data_bf16 on w */
size_t sf_conv3d_bf16_packed_bytes(int Cin, int Cout, int flip);
void sf_conv3d_bf16_pack(void *wfwd, void *wdx, const float *w, int Cin, int Cout);
void sf_conv3d_bf16_packed(float *y, const float *x_lo, const float *x, const float *x_hi, const void *wp, int nd,
                           int H, int W, int Cin, int Cout, int flip);
/* dst[i] = src[i] rounded to bf16 exactly as the bf16 kernels round it (tests' references) */
void sf_bf16_round_floats(float *dst, const float *src, size_t n);

/* Which variant an entry call takes, for the run header, the result file and the trace. */
typedef enum {
  SF_CONV3D_FORWARD,
  SF_CONV3D_BACKWARD_DATA,
  SF_CONV3D_BACKWARD_WEIGHTS,      /* all taps */
  SF_CONV3D_BACKWARD_WEIGHTS_TAPS, /* a range of taps */
} sf_conv3d_direction;
/* Where the training graph splits a large weight gradient into two tap blocks, taps [0, SPLIT) and
 * [SPLIT, 27), one task each (CPU-only runs with several workers); the tuner times the same two calls. */
#define SF_CONV3D_TAPS_SPLIT 14
typedef enum {
  SF_CONV3D_IM2COL,   /* im2col + OpenBLAS sgemm */
  SF_CONV3D_DIRECT,   /* direct register blocks of the active CPU kernel set */
  SF_CONV3D_WINOGRAD, /* Winograd F(2x2x2, 3x3x3) */
  SF_CONV3D_VDPBF16,  /* bf16: AVX-512 VDPBF16PS */
  SF_CONV3D_AMX,      /* bf16: AMX tiles */
  SF_CONV3D_WINOGRAD_BF16, /* bf16: Winograd F(2x2x2, 3x3x3), its GEMMs on VDPBF16PS */
  SF_CONV3D_SMALL,         /* plain loops for layers of a few channels (fp32, any CPU) */
} sf_conv3d_variant;
sf_conv3d_variant sf_conv3d_choose(sf_conv3d_direction dir, int bf16, int nd, int H, int W, int Cin, int Cout);
/* "im2col", "direct-avx512", "winograd-avx2", "vdpbf16ps", "winograd-vdpbf16ps", "amx", ...: the variant with
 * the kernel set */
const char *sf_conv3d_variant_name(sf_conv3d_variant v);

/* The Winograd switch (SF_CONV_WINOGRAD=0 turns it off, for A/B runs; off too with SF_CONV_DIRECT=0 or
 * the portable C set); tests and benchmarks may set it. */
int sf_conv_winograd_active(void);
void sf_conv_winograd_set_for_testing(int on);

/* ---- 1x1x1 convolution with bias (OutConv) ------------------------------------------------------
 * y: (n,Cout) written = x: (n,Cin) . w: (Cin,Cout) + b: (Cout) */
void sf_conv1_forward_ref(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout);
/* dx: (n,Cin) written */
void sf_conv1_backward_data_ref(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout);
/* dw: (Cin,Cout) and db: (Cout) accumulated */
void sf_conv1_backward_weights_ref(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout);
/* The entries (src/kernels/conv1/conv1.c): the direct small-GEMM kernels of the active CPU kernel set where
 * they win, else OpenBLAS; sf_conv1_variant_name() says which ("direct" or "blas"). */
void sf_conv1_forward(float *y, const float *x, const float *w, const float *b, size_t n, int Cin, int Cout);
void sf_conv1_backward_data(float *dx, const float *dy, const float *w, size_t n, int Cin, int Cout);
void sf_conv1_backward_weights(float *dw, float *db, const float *x, const float *dy, size_t n, int Cin, int Cout);
const char *sf_conv1_variant_name(void);

/* ---- transposed convolution, kernel 2, stride 2, with bias (the Up path) ------------------------
 * x: (nd,H,W,Cin) input slab; y: (2nd,2H,2W,Cout) output slab (written); w: (Cin,2,2,2,Cout); b: (Cout).
 * y[2d+a][2h+p][2w+q][co] = b[co] + sum_ci x[d][h][w][ci] * w[ci][a][p][q][co]. H, W are INPUT sizes. */
void sf_upconv3d_forward_ref(float *y, const float *x, const float *w, const float *b,
                             int nd, int H, int W, int Cin, int Cout);
/* dx: (nd,H,W,Cin) written from dy: (2nd,2H,2W,Cout) */
void sf_upconv3d_backward_data_ref(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout);
/* dw: (Cin,2,2,2,Cout), db: (Cout) accumulated */
void sf_upconv3d_backward_weights_ref(float *dw, float *db, const float *x, const float *dy,
                                      int nd, int H, int W, int Cin, int Cout);
/* The entries (src/kernels/upconv3d/upconv3d.c): the direct small-GEMM kernels where they win, else
 * OpenBLAS. */
void sf_upconv3d_forward(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                         int Cout);
void sf_upconv3d_backward_data(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin, int Cout);
void sf_upconv3d_backward_weights(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                  int Cin, int Cout);
/* torch_amp: 1 on CPU workers (as upstream's autocast, which lowers conv_transpose3d to bf16): the same three
 * with bf16 operands (rounded as sf_bf16_round_floats) and fp32 sums on AMX tiles when the bf16 engine is AMX;
 * the bias and its gradient stay fp32. With the VDPBF16PS engine or none, the fp32 entries (no VDPBF16PS
 * kernels for these small products). */
void sf_upconv3d_forward_bf16(float *y, const float *x, const float *w, const float *b, int nd, int H, int W, int Cin,
                              int Cout);
void sf_upconv3d_backward_data_bf16(float *dx, const float *dy, const float *w, int nd, int H, int W, int Cin,
                                    int Cout);
void sf_upconv3d_backward_weights_bf16(float *dw, float *db, const float *x, const float *dy, int nd, int H, int W,
                                       int Cin, int Cout);
/* "blas", "direct", "amx" (in place) or "direct-amx": the variant a call of this shape takes */
const char *sf_upconv3d_variant_name(int bf16, int W, int Cin, int Cout);

/* ---- GroupNorm (affine, exact when tiled) -------------------------------------------------------
 * Forward is two passes: stats over every slab (reduced), then normalize each slab.
 * stats: (G,2) double [sum, sum of squares], accumulated over x: (n,C); C % G == 0.
 * ntotal: voxel count of the WHOLE volume (the statistics' population is ntotal*C/G per group).
 * relu != 0 fuses the ReLU that follows every GroupNorm in the U-Net: y = max(0, gn(x)). */
void sf_groupnorm_stats_ref(double *stats, const float *x, size_t n, int C, int G);
/* y: (n,C) written */
void sf_groupnorm_forward_ref(float *y, const float *x, const double *stats, const float *gamma,
                              const float *beta, size_t n, size_t ntotal, int C, int G, float eps, int relu);
/* Backward partial sums over a slab (accumulated):
 *   gsums: (G,2) [sum dxhat, sum dxhat*xhat] with dxhat = dy'*gamma;
 *   dgb:   (C,2) [sum dy'*xhat (dgamma), sum dy' (dbeta)];
 * where dy' = dy, masked by y > 0 when relu (y is the forward output). */
void sf_groupnorm_backward_stats_ref(double *gsums, double *dgb, const float *dy, const float *y,
                                     const float *x, const double *stats, const float *gamma,
                                     size_t n, size_t ntotal, int C, int G, float eps, int relu);
/* dx: (n,C) written, from the global stats and gsums. */
void sf_groupnorm_backward_data_ref(float *dx, const float *dy, const float *y, const float *x,
                                    const double *stats, const double *gsums, const float *gamma,
                                    size_t n, size_t ntotal, int C, int G, float eps, int relu);
/* The fast variants of the four (src/kernels/groupnorm/groupnorm.c: vector code for the CPU kernel set,
 * sf_cpu_isa_active()), the ones the codelets run; same arguments, results as the _ref kernels up to the
 * summation order of the double sums. */
void sf_groupnorm_stats(double *stats, const float *x, size_t n, int C, int G);
void sf_groupnorm_forward(float *y, const float *x, const double *stats, const float *gamma, const float *beta,
                          size_t n, size_t ntotal, int C, int G, float eps, int relu);
void sf_groupnorm_backward_stats(double *gsums, double *dgb, const float *dy, const float *y, const float *x,
                                 const double *stats, const float *gamma, size_t n, size_t ntotal, int C, int G,
                                 float eps, int relu);
void sf_groupnorm_backward_data(float *dx, const float *dy, const float *y, const float *x, const double *stats,
                                const double *gsums, const float *gamma, size_t n, size_t ntotal, int C, int G,
                                float eps, int relu);
/* dgamma, dbeta: (C) accumulated from the reduced dgb: (C,2). */
void sf_groupnorm_param_grads(float *dgamma, float *dbeta, const double *dgb, int C);

/* ---- ReLU (standalone; GroupNorm fuses it) --------------------------------------------------- */
void sf_relu_forward(float *y, const float *x, size_t n);              /* y may equal x */
void sf_relu_backward(float *dx, const float *dy, const float *y, size_t n); /* dx = dy * (y > 0) */

/* ---- MaxPool 2x2x2, stride 2 ----------------------------------------------------------------------
 * x: (2nd,2H,2W,C); y: (nd,H,W,C) written; idx: (nd,H,W,C) argmax offset a*4+p*2+q in 0..7, first
 * maximum in (a,p,q) scan order wins (PyTorch's CPU rule; NaN propagates). H, W are OUTPUT sizes. */
void sf_maxpool3d_forward_ref(float *y, uint8_t *idx, const float *x, int nd, int H, int W, int C);
/* dx: (2nd,2H,2W,C) written (zero except at the argmax) */
void sf_maxpool3d_backward_ref(float *dx, const float *dy, const uint8_t *idx, int nd, int H, int W, int C);
/* The codelets' variants (src/kernels/maxpool3d/maxpool3d.c), bitwise equal to the above: channels in vectors on
 * the active CPU kernel set; the backward adds add: (2nd,2H,2W,C) to dx in the same pass when add != NULL. */
void sf_maxpool3d_forward(float *y, uint8_t *idx, const float *x, int nd, int H, int W, int C);
void sf_maxpool3d_backward(float *dx, const float *dy, const uint8_t *idx, const float *add, int nd, int H, int W,
                           int C);

/* ---- channel concatenation of [skip, upsampled] ------------------------------------------------
 * y: (n, Ca+Cb) written from a: (n,Ca) and b: (n,Cb); backward splits dy into da, db (written). */
void sf_concat_forward(float *y, const float *a, const float *b, size_t n, int Ca, int Cb);
void sf_concat_backward(float *da, float *db, const float *dy, size_t n, int Ca, int Cb);

/* ---- loss: class-weighted CE + (1 - soft foreground Dice), spec §6.2-6.3 ------------------------
 * z: (n,K) logits; lab: (n) labels in 0..K-1; cw: (K) class weights.
 * acc: SF_LOSS_NACC(K) doubles, accumulated:
 *   acc[0] = sum w[y]*(-log p_y), acc[1] = sum w[y],
 *   acc[2+3k+0] = sum P_k*Y_k, acc[2+3k+1] = sum P_k, acc[2+3k+2] = sum Y_k   (k = 0..K-1) */
#define SF_LOSS_NACC(K) (2 + 3 * (K))
#define SF_DICE_EPS 1e-6
void sf_loss_partial_ref(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, int K);
/* From the global acc: ce = acc[0]/acc[1]; dice_fg = mean over k=1..K-1 of (I+eps)/(S+eps) with
 * I = 2*sum P*Y, S = sum P + sum Y (S := I when S == 0); loss = ce + 1 - dice_fg. */
void sf_loss_finalize(double *ce, double *dice_fg, double *loss, const double *acc, int K);
/* dz: (n,K) written = scale * d(loss)/dz, using the global acc. */
void sf_loss_backward_ref(float *dz, const float *z, const uint16_t *lab, const float *cw,
                          const double *acc, size_t n, int K, float scale);
/* A batch of B samples (spec §6.1-6.3): CE = sum over the batch of w[y]*(-log p_y) / sum over the
 * batch of w[y] (one pooled denominator), dice_fg = the mean over samples and foreground classes,
 * loss = CE + 1 - dice_fg. The gradient of one sample's logits takes that sample's acc (its Dice
 * sums) and wsum, the batch's pooled weight sum: the CE term is w[y]/wsum * (P - Y), the Dice term
 * is the single-sample one divided by B. B = 1 with wsum = acc[1] is sf_loss_backward_ref. */
void sf_loss_backward_batch_ref(float *dz, const float *z, const uint16_t *lab, const float *cw,
                                const double *acc, double wsum, int batch, size_t n, int K, float scale);
/* The fast variants the CPU codelets run (src/kernels/loss/loss.c): the same sums and gradient as the
 * _ref ones above, in float with vector exp/log, 16 voxels at a time, on the kernel set of
 * sf_cpu_isa_active() (scaffold/cpu_isa.h); within ~1e-6 relative of the _ref (tests/kernels_elem). */
void sf_loss_partial(double *acc, const float *z, const uint16_t *lab, const float *cw, size_t n, int K);
void sf_loss_backward_batch(float *dz, const float *z, const uint16_t *lab, const float *cw, const double *acc,
                            double wsum, int batch, size_t n, int K, float scale);
/* acc[0] += sum over the voxels of w[lab] (a part of the pooled weight sum; needs no logits). */
void sf_loss_weight_sum_ref(double *acc, const uint16_t *lab, const float *cw, size_t n, int K);
/* out = [ce, dice_fg, loss] of a batch from its samples' global accs (B = 1: sf_loss_finalize). */
void sf_loss_finalize_batch(double out[3], const double *const *acc, int B, int K);

/* ---- hard (argmax) foreground Dice for validation ----------------------------------------------
 * acc: (K,3) accumulated [sum (pred==k && lab==k), sum pred==k, sum lab==k]; argmax ties -> lowest k. */
void sf_dice_hard_partial_ref(double *acc, const float *z, const uint16_t *lab, size_t n, int K);
/* Mean over foreground classes 1..K-1 of (2*TP + eps)/(S + eps), S == 0 -> S := 2*TP (absent and
 * predicted absent scores 1). */
double sf_dice_hard_finalize(const double *acc, int K);

/* ---- optimizer ----------------------------------------------------------------------------------- */
/* acc += sum g^2 (for the global gradient norm) */
void sf_sumsq_partial(double *acc, const float *g, size_t n);
/* torch.nn.utils.clip_grad_norm_: coef = max_norm / (sqrt(total_sumsq) + 1e-6), clamped to <= 1. */
float sf_clip_coef(double total_sumsq, float max_norm);
/* torch.optim.Adam (no weight decay, no amsgrad), applied to g*grad_scale; step counts from 1. */
void sf_adam_step(float *w, float *m, float *v, const float *g, size_t n, double lr, double beta1,
                  double beta2, double eps, long step, float grad_scale);
/* torch.optim.SGD (momentum 0, no weight decay): w -= lr * g*grad_scale. */
void sf_sgd_step(float *w, const float *g, size_t n, double lr, float grad_scale);
/* torch.optim.RMSprop (not centered, momentum 0, no weight decay): sq is square_avg, updated in place. */
void sf_rmsprop_step(float *w, float *sq, const float *g, size_t n, double lr, double alpha, double eps,
                     float grad_scale);

/* ---- H/W block decomposition (src/kernels/halo/halo_blocks.c) ----
 * Blocks are contiguous (nd, h, w) volumes of vb bytes per voxel. A neighbour is passed whole or as
 * its one layer that matters; NULL is the volume's face (zeros). */
/* dst (nd, h, w+2): src with lo's last column (lo: (nd, h, lo_w)) and hi's first (hi: (nd, h, hi_w)). */
void sf_pad_cols(void *dst, const void *src, const void *lo, int lo_w, const void *hi, int hi_w, int nd, int h,
                 int w, size_t vb);
/* dst (nd, h+2, W): src (nd, h, W) with lo's last row (lo: (nd, lo_h, W)) and hi's first. */
void sf_pad_rows(void *dst, const void *src, const void *lo, int lo_h, const void *hi, int hi_h, int nd, int h,
                 int W, size_t vb);
/* dst (nd, h, w) = the interior of src (nd, h+2, w+2); sf_embed_hw is its inverse with a zero border. */
void sf_crop_hw(void *dst, const void *src, int nd, int h, int w, size_t vb);
void sf_embed_hw(void *dst, const void *src, int nd, int h, int w, size_t vb);
/* dst = the first (last = 0) or last layer of src (n[0], n[1], n[2]) along axis 0 (depth), 1, 2. */
void sf_layer_copy(void *dst, const void *src, const int n[3], int axis, int last, size_t vb);
/* dst (dn[0..2]) at dlo gets the box of extents ext of src (sn[0..2]) at slo (blocks merging, splitting). */
void sf_box_copy(void *dst, const int dn[3], const int dlo[3], const void *src, const int sn[3], const int slo[3],
                 const int ext[3], size_t vb);

#endif

/* Reader for the PyTorch golden fixtures written by scripts/make_golden.py (tests/golden/<name>.bin).
 *
 * File format (little-endian):
 *   char[8] magic "SFGOLDEN"; uint32 version (1); uint32 count;
 *   count times: uint32 name_len, name bytes (no NUL); uint32 dtype (0 f32, 1 i32, 2 f64);
 *                uint32 ndim; int64 shape[ndim]; prod(shape) elements in C order.
 * Tensors are in PyTorch layouts (activations N,C,D,H,W); convert with sf_golden_ncdhw_to_ndhwc and
 * sf_param_from_torch. Any error (missing file, bad magic/version, truncated data, missing tensor,
 * wrong dtype or shape) prints what was expected and a HINT to re-run scripts/make_golden.py, then
 * exits with status 1. */
#ifndef SF_GOLDEN_H
#define SF_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#define SF_GOLDEN_MAGIC "SFGOLDEN"
#define SF_GOLDEN_VERSION 1
#define SF_GOLDEN_F32 0
#define SF_GOLDEN_I32 1
#define SF_GOLDEN_F64 2
#define SF_GOLDEN_MAX_DIMS 8

typedef struct {
  char *name;
  int dtype, ndim;
  int64_t shape[SF_GOLDEN_MAX_DIMS];
  size_t numel;
  void *data;
} sf_golden_tensor;

typedef struct {
  char *path;
  int count;
  sf_golden_tensor *t;
} sf_golden;

/* $SF_SOURCE_DIR/tests/golden/<file> (SF_SOURCE_DIR from the environment, else the build's). */
char *sf_golden_path(const char *file);
sf_golden *sf_golden_load(const char *path);
void sf_golden_free(sf_golden *g);
/* NULL if absent. */
const sf_golden_tensor *sf_golden_find(const sf_golden *g, const char *name);
/* Exits (with the HINT) if absent or of another dtype. numel may be NULL. */
const float *sf_golden_f32(const sf_golden *g, const char *name, size_t *numel);
const int32_t *sf_golden_i32(const sf_golden *g, const char *name, size_t *numel);
const double *sf_golden_f64(const sf_golden *g, const char *name, size_t *numel);
/* A scalar (or one-element) int32 / float64 tensor. */
int sf_golden_int(const sf_golden *g, const char *name);
double sf_golden_double(const sf_golden *g, const char *name);
/* Exits with a message unless tensor `name` has exactly the given shape. */
void sf_golden_expect_shape(const sf_golden *g, const char *name, int ndim, const int64_t *shape);

/* (C,D,H,W) -> (D,H,W,C), i.e. PyTorch NCDHW with N = 1 to our NDHWC. */
void sf_golden_ncdhw_to_ndhwc(float *dst, const float *src, int C, int D, int H, int W);
void sf_golden_ndhwc_to_ncdhw(float *dst, const float *src, int C, int D, int H, int W);

/* Every parameter of u as golden tensors "<prefix><PyTorch name>", converted into a malloc'ed arena
 * of our layout. Exits with a message if a tensor is missing or has another element count. */
struct sf_unet;
/* Checks got[0..2] (ce, dice_fg, loss) against want within rtol (relative to max(|want|, 1e-3)),
 * through testutil's SF_CHECK; prints an ok line per term. */
void sf_golden_check_loss_terms(const char *what, const double *got, const double *want, double rtol);
float *sf_golden_load_arena(const sf_golden *g, const struct sf_unet *u, const char *prefix);

/* The Adam-update criterion shared by the golden step test and gpu_train check. Adam's first step
 * moves a weight by lr * g / (|g| + eps), about lr * sign(g): where |g| is tiny, a gradient within
 * tolerance may flip sign and move the weight by 2 lr, so updates are compared only where the
 * reference gradient is well-conditioned, i.e. |g| >= SF_GOLDEN_G_ABS and |g| >= SF_GOLDEN_G_REL
 * times the max |g| of its tensor (then the gradient's relative error is small and g/(|g|+eps) is
 * insensitive to it).
 * sf_golden_mark_ill_conditioned sets ill[k] = 1 (one byte per parameter of u, never cleared, so
 * calling it with each step's gradient accumulates over steps) where g is not well-conditioned, and
 * returns how many weights are marked in all.
 * sf_golden_check_update compares the updates got_p - p0 and want_p - p0, in units of lr, where
 * ill[k] == 0 (ill NULL: everywhere): SF_CHECK that the worst error is <= tol_lr, and one ok / FAIL
 * line naming the worst tensor with the numbers of compared and excluded weights. Returns the worst
 * error in units of lr. */
#define SF_GOLDEN_G_ABS 1e-6f
#define SF_GOLDEN_G_REL 1e-4f
size_t sf_golden_mark_ill_conditioned(const struct sf_unet *u, const float *g, unsigned char *ill);
double sf_golden_check_update(const char *what, const struct sf_unet *u, const float *p0, const float *got_p,
                              const float *want_p, const unsigned char *ill, double lr, double tol_lr);

#endif

/* The direct small-GEMM kernel (gemm_direct.h) instantiated once per CPU kernel set from the one
 * body in gemm_direct_body.h, and the run-time choice between them (scaffold/cpu_isa.h). */
#include "gemm_direct.h"

#include "scaffold/cpu_isa.h"
#include "scaffold/workspace.h"

#include "gemm_direct_vec.h"

#define SF_GD_PACK_SLOT 2 /* free during these kernels: slot 2 is the 3x3x3 direct kernels' ring */
#define SF_GD_MAX_SEG 256 /* segments packed (more: B read in place) */

#define GD_V v4
#define GD_VL 4
#define GD_RMAX 4
#define GD_TARGET
#define GD_SUFFIX c
#include "gemm_direct_body.h"
#undef GD_V
#undef GD_VL
#undef GD_RMAX
#undef GD_TARGET
#undef GD_SUFFIX

#if SF_GD_HAVE_X86
#define GD_V v8
#define GD_VL 8
#define GD_RMAX 6 /* 12 accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers */
#define GD_TARGET __attribute__((target("avx2,fma")))
#define GD_SUFFIX avx2
#include "gemm_direct_body.h"
#undef GD_V
#undef GD_VL
#undef GD_RMAX
#undef GD_TARGET
#undef GD_SUFFIX

#define GD_V v16
#define GD_VL 16
#define GD_RMAX 12 /* 24 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers */
#define GD_TARGET __attribute__((target("avx512f,fma")))
#define GD_SUFFIX avx512
#include "gemm_direct_body.h"
#endif

#define GD_KC 256 /* K per pass of a one-segment product: a block's A rows and B columns stay in L1/L2 */

static void run_isa(const sf_gd_problem *p)
{
  switch (sf_cpu_isa_active()) {
#if SF_GD_HAVE_X86
  case SF_ISA_AVX512: sf_gd_run_avx512(p); return;
  case SF_ISA_AVX2: sf_gd_run_avx2(p); return;
#endif
  default: sf_gd_run_c(p); return;
  }
}

void sf_gd_run(const sf_gd_problem *p)
{
  if (p->M <= 0 || p->N <= 0) return;
  if (p->nseg != 1 || p->seg[0].len <= GD_KC) {
    run_isa(p);
    return;
  }
  /* long K (the transposed conv's dX: 8*Cout): passes of GD_KC, the later ones accumulating */
  sf_gd_problem q = *p;
  for (int k0 = 0; k0 < p->seg[0].len; k0 += GD_KC) {
    sf_gd_seg s = {p->seg[0].a + k0 * p->aks, p->seg[0].b + k0 * p->bks,
                   p->seg[0].len - k0 < GD_KC ? p->seg[0].len - k0 : GD_KC};
    q.seg = &s;
    q.init = k0 ? SF_GD_ACC : p->init;
    run_isa(&q);
  }
}

void sf_gd_transpose(float *dst, const float *src, size_t rows, size_t cols)
{
  const size_t B = 32;
  for (size_t r0 = 0; r0 < rows; r0 += B)
    for (size_t c0 = 0; c0 < cols; c0 += B)
      for (size_t c = c0; c < c0 + B && c < cols; c++)
        for (size_t r = r0; r < r0 + B && r < rows; r++) dst[c * rows + r] = src[r * cols + c];
}

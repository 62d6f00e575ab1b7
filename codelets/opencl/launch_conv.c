/* OpenCL launchers of the convolution codelets (codelets/conv3d.c, conv1.c, upconv3d.c): same
 * buffers and cl_arg as the CPU functions there, sizes read from the block interfaces, kernels in
 * conv3d.cl, conv1.cl, upconv3d.cl. Halo planes of conv3d are the neighbour slabs' last / first plane,
 * passed as (cl_mem, element offset of that plane). SF_ACC_PARTIAL (overwrite) gradients are written,
 * SF_ACC_COMMUTE ones accumulated. */
#include "ocl_internal.h"

#include "../conv3d_halos.h"

#ifdef STARPU_USE_OPENCL

/* cl_arg fields passed straight to the kernels (conv3d.cl, conv1.cl, upconv3d.cl: int parameters) */
SF_OCL_FIELD_IS(sf_conv3d_args, H, cl_int);
SF_OCL_FIELD_IS(sf_conv3d_args, W, cl_int);
SF_OCL_FIELD_IS(sf_conv3d_args, Cin, cl_int);
SF_OCL_FIELD_IS(sf_conv3d_args, Cout, cl_int);
SF_OCL_FIELD_IS(sf_conv1_args, Cin, cl_int); /* sf_upconv3d_args is the same type */
SF_OCL_FIELD_IS(sf_conv1_args, Cout, cl_int);

/* ---- 3x3x3 convolution: [out, in, w|dy, lo?, hi?] ---- */

/* the halo planes (conv3d_halos.h); a missing one is replaced by `dummy` + has = 0 */
static void halos(void *buffers[], const sf_conv3d_args *a, sf_ocl_buf dummy, sf_ocl_buf *lo, sf_ocl_buf *hi,
                  cl_int *has_lo, cl_int *has_hi, const char *what)
{
  void *slab_lo, *slab_hi;
  sf_conv3d_halo_slabs(buffers, a, &slab_lo, &slab_hi);
  *has_lo = slab_lo != NULL;
  *has_hi = slab_hi != NULL;
  *lo = slab_lo ? sf_ocl_last_plane(slab_lo, what) : dummy;
  *hi = slab_hi ? sf_ocl_first_plane(slab_hi, what) : dummy;
}

/* buffers: [y, x, w, x_lo?, x_hi?] */
void sf_conv3d_fwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv3d_fwd", sizeof(sf_conv3d_args));
  const sf_conv3d_args *a = cl_arg;
  sf_ocl_check_block(buffers[0], (size_t)a->W * a->Cout, a->H, "conv3d_fwd y");
  sf_ocl_check_block(buffers[1], (size_t)a->W * a->Cin, a->H, "conv3d_fwd x");
  sf_ocl_buf y = sf_ocl_block(buffers[0], 4, "conv3d_fwd y"), x = sf_ocl_block(buffers[1], 4, "conv3d_fwd x");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "conv3d_fwd w"), lo, hi;
  cl_int has_lo, has_hi, nd = sf_ocl_nz(buffers[0]);
  halos(buffers, a, x, &lo, &hi, &has_lo, &has_hi, "conv3d_fwd halo");
  SF_OCL_LAUNCH(SF_OCL_K_conv3d_fwd, (size_t)nd * a->H * a->W * a->Cout, SF_OCL_BUF(y), SF_OCL_BUF(x),
                SF_OCL_BUF(lo), SF_OCL_ARG(has_lo), SF_OCL_BUF(hi), SF_OCL_ARG(has_hi), SF_OCL_BUF(w),
                SF_OCL_ARG(nd), SF_OCL_ARG(a->H), SF_OCL_ARG(a->W), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dx, dy, w, dy_lo?, dy_hi?] */
void sf_conv3d_bwd_data_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv3d_bwd_data", sizeof(sf_conv3d_args));
  const sf_conv3d_args *a = cl_arg;
  sf_ocl_check_block(buffers[0], (size_t)a->W * a->Cin, a->H, "conv3d_bwd_data dx");
  sf_ocl_check_block(buffers[1], (size_t)a->W * a->Cout, a->H, "conv3d_bwd_data dy");
  sf_ocl_buf dx = sf_ocl_block(buffers[0], 4, "conv3d_bwd_data dx");
  sf_ocl_buf dy = sf_ocl_block(buffers[1], 4, "conv3d_bwd_data dy");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "conv3d_bwd_data w"), lo, hi;
  cl_int has_lo, has_hi, nd = sf_ocl_nz(buffers[0]);
  halos(buffers, a, dy, &lo, &hi, &has_lo, &has_hi, "conv3d_bwd_data halo");
  SF_OCL_LAUNCH(SF_OCL_K_conv3d_bwd_data, (size_t)nd * a->H * a->W * a->Cin, SF_OCL_BUF(dx), SF_OCL_BUF(dy),
                SF_OCL_BUF(lo), SF_OCL_ARG(has_lo), SF_OCL_BUF(hi), SF_OCL_ARG(has_hi), SF_OCL_BUF(w),
                SF_OCL_ARG(nd), SF_OCL_ARG(a->H), SF_OCL_ARG(a->W), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dw, x, dy, x_lo?, x_hi?] */
void sf_conv3d_bwd_weights_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv3d_bwd_weights", sizeof(sf_conv3d_args));
  const sf_conv3d_args *a = cl_arg;
  sf_ocl_check_block(buffers[1], (size_t)a->W * a->Cin, a->H, "conv3d_bwd_weights x");
  sf_ocl_check_block(buffers[2], (size_t)a->W * a->Cout, a->H, "conv3d_bwd_weights dy");
  sf_ocl_buf dw = sf_ocl_vector(buffers[0], 4, "conv3d_bwd_weights dw");
  sf_ocl_buf x = sf_ocl_block(buffers[1], 4, "conv3d_bwd_weights x");
  sf_ocl_buf dy = sf_ocl_block(buffers[2], 4, "conv3d_bwd_weights dy"), lo, hi;
  cl_int has_lo, has_hi, nd = sf_ocl_nz(buffers[1]), accumulate = !a->overwrite;
  halos(buffers, a, x, &lo, &hi, &has_lo, &has_hi, "conv3d_bwd_weights halo");
  SF_OCL_LAUNCH(SF_OCL_K_conv3d_bwd_weights, (size_t)27 * a->Cin * a->Cout, SF_OCL_BUF(dw), SF_OCL_ARG(accumulate),
                SF_OCL_BUF(x), SF_OCL_BUF(lo), SF_OCL_ARG(has_lo), SF_OCL_BUF(hi), SF_OCL_ARG(has_hi),
                SF_OCL_BUF(dy), SF_OCL_ARG(nd), SF_OCL_ARG(a->H), SF_OCL_ARG(a->W), SF_OCL_ARG(a->Cin),
                SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* ---- 1x1x1 convolution ---- */

/* buffers: [y, x, w, b] */
void sf_conv1_fwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv1_fwd", sizeof(sf_conv1_args));
  const sf_conv1_args *a = cl_arg;
  sf_ocl_buf y = sf_ocl_block(buffers[0], 4, "conv1_fwd y"), x = sf_ocl_block(buffers[1], 4, "conv1_fwd x");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "conv1_fwd w"), b = sf_ocl_vector(buffers[3], 4, "conv1_fwd b");
  cl_ulong n = sf_ocl_vox(buffers[1], a->Cin);
  SF_OCL_LAUNCH(SF_OCL_K_conv1_fwd, (size_t)n * a->Cout, SF_OCL_BUF(y), SF_OCL_BUF(x), SF_OCL_BUF(w), SF_OCL_BUF(b),
                SF_OCL_ARG(n), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dx, dy, w] */
void sf_conv1_bwd_data_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv1_bwd_data", sizeof(sf_conv1_args));
  const sf_conv1_args *a = cl_arg;
  sf_ocl_buf dx = sf_ocl_block(buffers[0], 4, "conv1_bwd_data dx");
  sf_ocl_buf dy = sf_ocl_block(buffers[1], 4, "conv1_bwd_data dy");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "conv1_bwd_data w");
  cl_ulong n = sf_ocl_vox(buffers[0], a->Cin);
  SF_OCL_LAUNCH(SF_OCL_K_conv1_bwd_data, (size_t)n * a->Cin, SF_OCL_BUF(dx), SF_OCL_BUF(dy), SF_OCL_BUF(w),
                SF_OCL_ARG(n), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dw, db, x, dy] */
void sf_conv1_bwd_weights_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("conv1_bwd_weights", sizeof(sf_conv1_args));
  const sf_conv1_args *a = cl_arg;
  sf_ocl_buf dw = sf_ocl_vector(buffers[0], 4, "conv1_bwd_weights dw");
  sf_ocl_buf db = sf_ocl_vector(buffers[1], 4, "conv1_bwd_weights db");
  sf_ocl_buf x = sf_ocl_block(buffers[2], 4, "conv1_bwd_weights x");
  sf_ocl_buf dy = sf_ocl_block(buffers[3], 4, "conv1_bwd_weights dy");
  cl_ulong n = sf_ocl_vox(buffers[2], a->Cin);
  cl_int accumulate = !a->overwrite;
  SF_OCL_LAUNCH(SF_OCL_K_conv1_bwd_weights, (size_t)(a->Cin + 1) * a->Cout, SF_OCL_BUF(dw), SF_OCL_BUF(db),
                SF_OCL_ARG(accumulate), SF_OCL_BUF(x), SF_OCL_BUF(dy), SF_OCL_ARG(n), SF_OCL_ARG(a->Cin),
                SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* ---- transposed convolution k2 s2: sizes (nd, H, W) of the coarse slab ---- */

/* buffers: [y, x, w, b] */
void sf_upconv3d_fwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("upconv3d_fwd", sizeof(sf_upconv3d_args));
  const sf_upconv3d_args *a = cl_arg;
  void *c = buffers[1];
  cl_int nd = sf_ocl_nz(c), H = (cl_int)STARPU_BLOCK_GET_NY(c), W = (cl_int)(STARPU_BLOCK_GET_NX(c) / a->Cin);
  sf_ocl_check_block(buffers[0], (size_t)2 * W * a->Cout, (size_t)2 * H, "upconv3d_fwd y");
  sf_ocl_buf y = sf_ocl_block(buffers[0], 4, "upconv3d_fwd y"), x = sf_ocl_block(c, 4, "upconv3d_fwd x");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "upconv3d_fwd w"), b = sf_ocl_vector(buffers[3], 4, "upconv3d_fwd b");
  SF_OCL_LAUNCH(SF_OCL_K_upconv3d_fwd, (size_t)8 * nd * H * W * a->Cout, SF_OCL_BUF(y), SF_OCL_BUF(x), SF_OCL_BUF(w),
                SF_OCL_BUF(b), SF_OCL_ARG(nd), SF_OCL_ARG(H), SF_OCL_ARG(W), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dx, dy, w] */
void sf_upconv3d_bwd_data_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("upconv3d_bwd_data", sizeof(sf_upconv3d_args));
  const sf_upconv3d_args *a = cl_arg;
  void *c = buffers[0];
  cl_int nd = sf_ocl_nz(c), H = (cl_int)STARPU_BLOCK_GET_NY(c), W = (cl_int)(STARPU_BLOCK_GET_NX(c) / a->Cin);
  sf_ocl_check_block(buffers[1], (size_t)2 * W * a->Cout, (size_t)2 * H, "upconv3d_bwd_data dy");
  sf_ocl_buf dx = sf_ocl_block(c, 4, "upconv3d_bwd_data dx");
  sf_ocl_buf dy = sf_ocl_block(buffers[1], 4, "upconv3d_bwd_data dy");
  sf_ocl_buf w = sf_ocl_vector(buffers[2], 4, "upconv3d_bwd_data w");
  SF_OCL_LAUNCH(SF_OCL_K_upconv3d_bwd_data, (size_t)nd * H * W * a->Cin, SF_OCL_BUF(dx), SF_OCL_BUF(dy),
                SF_OCL_BUF(w), SF_OCL_ARG(nd), SF_OCL_ARG(H), SF_OCL_ARG(W), SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

/* buffers: [dw, db, x, dy] */
void sf_upconv3d_bwd_weights_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("upconv3d_bwd_weights", sizeof(sf_upconv3d_args));
  const sf_upconv3d_args *a = cl_arg;
  void *c = buffers[2];
  cl_int nd = sf_ocl_nz(c), H = (cl_int)STARPU_BLOCK_GET_NY(c), W = (cl_int)(STARPU_BLOCK_GET_NX(c) / a->Cin);
  sf_ocl_check_block(buffers[3], (size_t)2 * W * a->Cout, (size_t)2 * H, "upconv3d_bwd_weights dy");
  sf_ocl_buf dw = sf_ocl_vector(buffers[0], 4, "upconv3d_bwd_weights dw");
  sf_ocl_buf db = sf_ocl_vector(buffers[1], 4, "upconv3d_bwd_weights db");
  sf_ocl_buf x = sf_ocl_block(c, 4, "upconv3d_bwd_weights x");
  sf_ocl_buf dy = sf_ocl_block(buffers[3], 4, "upconv3d_bwd_weights dy");
  cl_int accumulate = !a->overwrite;
  SF_OCL_LAUNCH(SF_OCL_K_upconv3d_bwd_weights, (size_t)(8 * a->Cin + 1) * a->Cout, SF_OCL_BUF(dw), SF_OCL_BUF(db),
                SF_OCL_ARG(accumulate), SF_OCL_BUF(x), SF_OCL_BUF(dy), SF_OCL_ARG(nd), SF_OCL_ARG(H), SF_OCL_ARG(W),
                SF_OCL_ARG(a->Cin), SF_OCL_ARG(a->Cout));
  sf_ocl_done();
}

#endif /* STARPU_USE_OPENCL */

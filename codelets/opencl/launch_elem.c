/* OpenCL launchers of the elementwise and loss codelets: ReLU (no codelet uses it yet: [y, x] and
 * [dx, dy, y]), MaxPool (codelets/maxpool3d.c), concat (concat.c), loss partial / backward / batch
 * weight sum (loss.c) and the hard Dice partial (dice.c). Same buffers and cl_arg as the CPU functions; kernels in
 * elementwise.cl and loss.cl. Label slabs are uint16 blocks, argmax slabs uint8 blocks. */
#include "ocl_internal.h"

#ifdef STARPU_USE_OPENCL

/* cl_arg fields passed straight to the kernels of elementwise.cl and loss.cl (has_add is converted) */
SF_OCL_FIELD_IS(sf_maxpool3d_args, C, cl_int);
SF_OCL_FIELD_IS(sf_concat_args, Ca, cl_int);
SF_OCL_FIELD_IS(sf_concat_args, Cb, cl_int);
SF_OCL_FIELD_IS(sf_loss_args, K, cl_int);
SF_OCL_FIELD_IS(sf_loss_args, scale, cl_float);
SF_OCL_FIELD_IS(sf_dice_args, K, cl_int);

/* ---- ReLU ---- */

/* buffers: [y, x] (blocks or vectors of floats) */
void sf_relu_fwd_opencl(void *buffers[], void *cl_arg)
{
  size_t n, nx;
  sf_ocl_buf y = sf_ocl_any(buffers[0], 4, &n, "relu_fwd y"), x = sf_ocl_any(buffers[1], 4, &nx, "relu_fwd x");
  if (n != nx) SF_ABORT("OpenCL relu_fwd: y has %zu elements, x %zu", n, nx);
  cl_ulong nn = n;
  SF_OCL_LAUNCH(SF_OCL_K_relu_fwd, n, SF_OCL_BUF(y), SF_OCL_BUF(x), SF_OCL_ARG(nn));
  sf_ocl_done();
}

/* buffers: [dx, dy, y] */
void sf_relu_bwd_opencl(void *buffers[], void *cl_arg)
{
  size_t n, n1, n2;
  sf_ocl_buf dx = sf_ocl_any(buffers[0], 4, &n, "relu_bwd dx"), dy = sf_ocl_any(buffers[1], 4, &n1, "relu_bwd dy");
  sf_ocl_buf y = sf_ocl_any(buffers[2], 4, &n2, "relu_bwd y");
  if (n != n1 || n != n2) SF_ABORT("OpenCL relu_bwd: dx, dy, y have %zu, %zu, %zu elements", n, n1, n2);
  cl_ulong nn = n;
  SF_OCL_LAUNCH(SF_OCL_K_relu_bwd, n, SF_OCL_BUF(dx), SF_OCL_BUF(dy), SF_OCL_BUF(y), SF_OCL_ARG(nn));
  sf_ocl_done();
}

/* ---- MaxPool 2/2: sizes from the coarse slab ---- */

/* buffers: [y, idx (uint8), x] */
void sf_maxpool3d_fwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("maxpool3d_fwd", sizeof(sf_maxpool3d_args));
  const sf_maxpool3d_args *a = cl_arg;
  void *c = buffers[0];
  cl_int nd = sf_ocl_nz(c), H = (cl_int)STARPU_BLOCK_GET_NY(c), W = (cl_int)(STARPU_BLOCK_GET_NX(c) / a->C);
  sf_ocl_check_block(buffers[2], (size_t)2 * W * a->C, (size_t)2 * H, "maxpool3d_fwd x");
  sf_ocl_buf y = sf_ocl_block(c, 4, "maxpool3d_fwd y"), idx = sf_ocl_block(buffers[1], 1, "maxpool3d_fwd idx");
  sf_ocl_buf x = sf_ocl_block(buffers[2], 4, "maxpool3d_fwd x");
  SF_OCL_LAUNCH(SF_OCL_K_maxpool3d_fwd, (size_t)nd * H * W * a->C, SF_OCL_BUF(y), SF_OCL_BUF(idx), SF_OCL_BUF(x),
                SF_OCL_ARG(nd), SF_OCL_ARG(H), SF_OCL_ARG(W), SF_OCL_ARG(a->C));
  sf_ocl_done();
}

/* buffers: [dx, dy, idx, add?] */
void sf_maxpool3d_bwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("maxpool3d_bwd", sizeof(sf_maxpool3d_args));
  const sf_maxpool3d_args *a = cl_arg;
  void *c = buffers[1];
  cl_int nd = sf_ocl_nz(c), H = (cl_int)STARPU_BLOCK_GET_NY(c), W = (cl_int)(STARPU_BLOCK_GET_NX(c) / a->C);
  sf_ocl_check_block(buffers[0], (size_t)2 * W * a->C, (size_t)2 * H, "maxpool3d_bwd dx");
  sf_ocl_buf dx = sf_ocl_block(buffers[0], 4, "maxpool3d_bwd dx"), dy = sf_ocl_block(c, 4, "maxpool3d_bwd dy");
  sf_ocl_buf idx = sf_ocl_block(buffers[2], 1, "maxpool3d_bwd idx");
  sf_ocl_buf add = a->has_add ? sf_ocl_block(buffers[3], 4, "maxpool3d_bwd add") : dx;
  cl_int has_add = a->has_add != 0;
  SF_OCL_LAUNCH(SF_OCL_K_maxpool3d_bwd, (size_t)8 * nd * H * W * a->C, SF_OCL_BUF(dx), SF_OCL_BUF(dy),
                SF_OCL_BUF(idx), SF_OCL_BUF(add), SF_OCL_ARG(has_add), SF_OCL_ARG(nd), SF_OCL_ARG(H), SF_OCL_ARG(W),
                SF_OCL_ARG(a->C));
  sf_ocl_done();
}

/* ---- concat ---- */

/* buffers: [y, a, b] */
void sf_concat_fwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("concat_fwd", sizeof(sf_concat_args));
  const sf_concat_args *c = cl_arg;
  sf_ocl_buf y = sf_ocl_block(buffers[0], 4, "concat_fwd y"), a = sf_ocl_block(buffers[1], 4, "concat_fwd a");
  sf_ocl_buf b = sf_ocl_block(buffers[2], 4, "concat_fwd b");
  cl_ulong n = sf_ocl_vox(buffers[1], c->Ca);
  SF_OCL_LAUNCH(SF_OCL_K_concat_fwd, (size_t)n * (c->Ca + c->Cb), SF_OCL_BUF(y), SF_OCL_BUF(a), SF_OCL_BUF(b),
                SF_OCL_ARG(n), SF_OCL_ARG(c->Ca), SF_OCL_ARG(c->Cb));
  sf_ocl_done();
}

/* buffers: [da, db, dy] */
void sf_concat_bwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("concat_bwd", sizeof(sf_concat_args));
  const sf_concat_args *c = cl_arg;
  sf_ocl_buf da = sf_ocl_block(buffers[0], 4, "concat_bwd da"), db = sf_ocl_block(buffers[1], 4, "concat_bwd db");
  sf_ocl_buf dy = sf_ocl_block(buffers[2], 4, "concat_bwd dy");
  cl_ulong n = sf_ocl_vox(buffers[0], c->Ca);
  SF_OCL_LAUNCH(SF_OCL_K_concat_bwd, (size_t)n * (c->Ca + c->Cb), SF_OCL_BUF(da), SF_OCL_BUF(db), SF_OCL_BUF(dy),
                SF_OCL_ARG(n), SF_OCL_ARG(c->Ca), SF_OCL_ARG(c->Cb));
  sf_ocl_done();
}

/* ---- loss and Dice ---- */

/* buffers: [acc_part SF_LOSS_NACC(K) double, z, lab (uint16), cw] */
void sf_loss_partial_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("loss_partial", sizeof(sf_loss_args));
  const sf_loss_args *a = cl_arg;
  sf_ocl_buf acc = sf_ocl_vector(buffers[0], 8, "loss_partial acc");
  if (STARPU_VECTOR_GET_NX(buffers[0]) != (uint32_t)(2 + 3 * a->K))
    SF_ABORT("OpenCL loss_partial: acc has %u doubles, expected 2+3K = %d", STARPU_VECTOR_GET_NX(buffers[0]),
             2 + 3 * a->K);
  sf_ocl_buf z = sf_ocl_block(buffers[1], 4, "loss_partial z"), lab = sf_ocl_block(buffers[2], 2, "loss_partial lab");
  sf_ocl_buf cw = sf_ocl_vector(buffers[3], 4, "loss_partial cw");
  cl_ulong n = sf_ocl_vox(buffers[1], a->K);
  cl_int accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_loss_partial, (size_t)a->K + 1, SF_OCL_BUF(acc), SF_OCL_ARG(accumulate), SF_OCL_BUF(z),
                SF_OCL_BUF(lab), SF_OCL_BUF(cw), SF_OCL_ARG(n), SF_OCL_ARG(a->K));
  sf_ocl_done();
}

/* buffers: [dz, z, lab, cw, acc, wsum?] (wsum: a batch's pooled CE weight sum, 1 double) */
void sf_loss_bwd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("loss_bwd", sizeof(sf_loss_args));
  const sf_loss_args *a = cl_arg;
  sf_ocl_buf dz = sf_ocl_block(buffers[0], 4, "loss_bwd dz"), z = sf_ocl_block(buffers[1], 4, "loss_bwd z");
  sf_ocl_buf lab = sf_ocl_block(buffers[2], 2, "loss_bwd lab"), cw = sf_ocl_vector(buffers[3], 4, "loss_bwd cw");
  sf_ocl_buf acc = sf_ocl_vector(buffers[4], 8, "loss_bwd acc");
  cl_int has_wsum = sf_ocl_nbuffers() > 5;
  sf_ocl_buf wsum = has_wsum ? sf_ocl_vector(buffers[5], 8, "loss_bwd wsum") : acc;
  if (a->batch < 1) SF_ABORT("OpenCL loss_bwd: batch %d, expected >= 1", a->batch);
  cl_ulong n = sf_ocl_vox(buffers[1], a->K);
  SF_OCL_LAUNCH(SF_OCL_K_loss_bwd, (size_t)n * a->K, SF_OCL_BUF(dz), SF_OCL_BUF(z), SF_OCL_BUF(lab), SF_OCL_BUF(cw),
                SF_OCL_BUF(acc), SF_OCL_BUF(wsum), SF_OCL_ARG(has_wsum), SF_OCL_ARG(a->batch), SF_OCL_ARG(n),
                SF_OCL_ARG(a->K), SF_OCL_ARG(a->scale));
  sf_ocl_done();
}

/* buffers: [part (1) double, lab (uint16), cw]: part (+)= sum cw[lab] */
void sf_loss_wsum_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("loss_wsum", sizeof(sf_loss_args));
  const sf_loss_args *a = cl_arg;
  sf_ocl_buf part = sf_ocl_vector(buffers[0], 8, "loss_wsum part"), lab = sf_ocl_block(buffers[1], 2, "loss_wsum lab");
  sf_ocl_buf cw = sf_ocl_vector(buffers[2], 4, "loss_wsum cw");
  cl_ulong n = sf_ocl_vox(buffers[1], 1);
  cl_int accumulate = a->accumulate != 0;
  SF_OCL_LAUNCH(SF_OCL_K_loss_wsum, 1, SF_OCL_BUF(part), SF_OCL_ARG(accumulate), SF_OCL_BUF(lab), SF_OCL_BUF(cw),
                SF_OCL_ARG(n), SF_OCL_ARG(a->K));
  sf_ocl_done();
}

/* buffers: [acc_part (K,3) double, z, lab (uint16)] */
void sf_dice_hard_partial_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("dice_hard_partial", sizeof(sf_dice_args));
  const sf_dice_args *a = cl_arg;
  sf_ocl_buf acc = sf_ocl_vector(buffers[0], 8, "dice_hard_partial acc");
  if (STARPU_VECTOR_GET_NX(buffers[0]) != (uint32_t)(3 * a->K))
    SF_ABORT("OpenCL dice_hard_partial: acc has %u doubles, expected 3K = %d", STARPU_VECTOR_GET_NX(buffers[0]),
             3 * a->K);
  sf_ocl_buf z = sf_ocl_block(buffers[1], 4, "dice_hard_partial z");
  sf_ocl_buf lab = sf_ocl_block(buffers[2], 2, "dice_hard_partial lab");
  cl_ulong n = sf_ocl_vox(buffers[1], a->K);
  cl_int accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_dice_hard_partial, (size_t)a->K, SF_OCL_BUF(acc), SF_OCL_ARG(accumulate), SF_OCL_BUF(z),
                SF_OCL_BUF(lab), SF_OCL_ARG(n), SF_OCL_ARG(a->K));
  sf_ocl_done();
}

#endif /* STARPU_USE_OPENCL */

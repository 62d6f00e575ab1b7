/* OpenCL launchers of the optimizer, reduction and sample-loading codelets (codelets/optim.c,
 * reduce.c, sample.c): gradient sum of squares, clip coefficient from the partials in order, Adam,
 * SGD, RMSprop,
 * fixed-order float / double sums (copy of part 0, then one add per part on the in-order queue),
 * zero fill, and the host-to-device copy of a sample. Kernels in optim.cl and reduce.cl. */
#include "ocl_internal.h"

#ifdef STARPU_USE_OPENCL
#include <math.h>

/* cl_arg fields passed straight to the kernels of optim.cl (Adam's constants are rounded on the host) */
SF_OCL_FIELD_IS(sf_clip_args, max_norm, cl_float);

/* buffers: [part (1) double, g] (cl_arg NULL) */
void sf_sumsq_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_buf part = sf_ocl_vector(buffers[0], 8, "sumsq part"), g = sf_ocl_vector(buffers[1], 4, "sumsq g");
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[1]);
  cl_int accumulate = 0;
  SF_OCL_LAUNCH(SF_OCL_K_sumsq, 1, SF_OCL_BUF(part), SF_OCL_ARG(accumulate), SF_OCL_BUF(g), SF_OCL_ARG(n));
  sf_ocl_done();
}

/* buffers: [clip (2) double, part_0 .. part_{P-1}] */
void sf_clip_coef_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("clip_coef", sizeof(sf_clip_args));
  const sf_clip_args *a = cl_arg;
  sf_ocl_buf clip = sf_ocl_vector(buffers[0], 8, "clip_coef clip");
  int nparts = sf_ocl_nbuffers() - 1;
  cl_int step = 0;
  SF_OCL_LAUNCH(SF_OCL_K_clip_step, 1, SF_OCL_BUF(clip), SF_OCL_BUF(clip), SF_OCL_ARG(step), SF_OCL_ARG(a->max_norm));
  step = 1;
  for (int k = 0; k < nparts; k++) {
    sf_ocl_buf p = sf_ocl_vector(buffers[1 + k], 8, "clip_coef part");
    SF_OCL_LAUNCH(SF_OCL_K_clip_step, 1, SF_OCL_BUF(clip), SF_OCL_BUF(p), SF_OCL_ARG(step), SF_OCL_ARG(a->max_norm));
  }
  step = 2;
  SF_OCL_LAUNCH(SF_OCL_K_clip_step, 1, SF_OCL_BUF(clip), SF_OCL_BUF(clip), SF_OCL_ARG(step), SF_OCL_ARG(a->max_norm));
  sf_ocl_done();
}

/* buffers: [w, m, v, g, clip?]; constants rounded on the host exactly like sf_adam_step */
void sf_adam_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("adam", sizeof(sf_adam_args));
  const sf_adam_args *a = cl_arg;
  sf_ocl_buf w = sf_ocl_vector(buffers[0], 4, "adam w"), m = sf_ocl_vector(buffers[1], 4, "adam m");
  sf_ocl_buf v = sf_ocl_vector(buffers[2], 4, "adam v"), g = sf_ocl_vector(buffers[3], 4, "adam g");
  sf_ocl_buf clip = a->has_clip ? sf_ocl_vector(buffers[4], 8, "adam clip") : w;
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[0]);
  cl_int has_clip = a->has_clip != 0;
  const double bc1 = 1.0 - pow(a->beta1, (double)a->step);
  const double bc2 = 1.0 - pow(a->beta2, (double)a->step);
  float b1 = (float)a->beta1, a1 = (float)(1.0 - a->beta1);
  float b2 = (float)a->beta2, a2 = (float)(1.0 - a->beta2);
  float bc2_sqrt = (float)sqrt(bc2), neg_step = (float)(-(a->lr / bc1)), epsf = (float)a->eps;
  SF_OCL_LAUNCH(SF_OCL_K_adam, (size_t)n, SF_OCL_BUF(w), SF_OCL_BUF(m), SF_OCL_BUF(v), SF_OCL_BUF(g), SF_OCL_BUF(clip),
                SF_OCL_ARG(has_clip), SF_OCL_ARG(n), SF_OCL_ARG(b1), SF_OCL_ARG(a1), SF_OCL_ARG(b2), SF_OCL_ARG(a2),
                SF_OCL_ARG(bc2_sqrt), SF_OCL_ARG(neg_step), SF_OCL_ARG(epsf));
  sf_ocl_done();
}

/* buffers: [w, g, clip?] */
void sf_sgd_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("sgd", sizeof(sf_sgd_args));
  const sf_sgd_args *a = cl_arg;
  sf_ocl_buf w = sf_ocl_vector(buffers[0], 4, "sgd w"), g = sf_ocl_vector(buffers[1], 4, "sgd g");
  sf_ocl_buf clip = a->has_clip ? sf_ocl_vector(buffers[2], 8, "sgd clip") : w;
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[0]);
  cl_int has_clip = a->has_clip != 0;
  float neg_lr = (float)(-a->lr);
  SF_OCL_LAUNCH(SF_OCL_K_sgd, (size_t)n, SF_OCL_BUF(w), SF_OCL_BUF(g), SF_OCL_BUF(clip), SF_OCL_ARG(has_clip),
                SF_OCL_ARG(n), SF_OCL_ARG(neg_lr));
  sf_ocl_done();
}

/* buffers: [w, sq, g, clip?]; constants rounded on the host exactly like sf_rmsprop_step */
void sf_rmsprop_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("rmsprop", sizeof(sf_rmsprop_args));
  const sf_rmsprop_args *a = cl_arg;
  sf_ocl_buf w = sf_ocl_vector(buffers[0], 4, "rmsprop w"), sq = sf_ocl_vector(buffers[1], 4, "rmsprop sq");
  sf_ocl_buf g = sf_ocl_vector(buffers[2], 4, "rmsprop g");
  sf_ocl_buf clip = a->has_clip ? sf_ocl_vector(buffers[3], 8, "rmsprop clip") : w;
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[0]);
  cl_int has_clip = a->has_clip != 0;
  float al = (float)a->alpha, a2 = (float)(1.0 - a->alpha), neg_lr = (float)(-a->lr), epsf = (float)a->eps;
  SF_OCL_LAUNCH(SF_OCL_K_rmsprop, (size_t)n, SF_OCL_BUF(w), SF_OCL_BUF(sq), SF_OCL_BUF(g), SF_OCL_BUF(clip),
                SF_OCL_ARG(has_clip), SF_OCL_ARG(n), SF_OCL_ARG(al), SF_OCL_ARG(a2), SF_OCL_ARG(neg_lr),
                SF_OCL_ARG(epsf));
  sf_ocl_done();
}

/* out = parts[0] + parts[1] + ... in that order, elements of es bytes with adder kernel k */
static void ordered_sum(void *buffers[], size_t es, sf_ocl_kernel_id add, const char *what)
{
  sf_ocl_buf out = sf_ocl_vector(buffers[0], es, what);
  cl_ulong n = STARPU_VECTOR_GET_NX(buffers[0]);
  int nparts = sf_ocl_nbuffers() - 1;
  if (nparts == 0) sf_ocl_fill_zero(out, n, es);
  for (int k = 0; k < nparts; k++) {
    if (STARPU_VECTOR_GET_NX(buffers[1 + k]) != n)
      SF_ABORT("OpenCL %s: part %d has %u elements, out %llu", what, k, STARPU_VECTOR_GET_NX(buffers[1 + k]),
               (unsigned long long)n);
    sf_ocl_buf p = sf_ocl_vector(buffers[1 + k], es, what);
    if (k == 0)
      sf_ocl_copy(out, p, n, es);
    else
      SF_OCL_LAUNCH(add, (size_t)n, SF_OCL_BUF(out), SF_OCL_BUF(p), SF_OCL_ARG(n));
  }
  sf_ocl_done();
}

/* buffers: [out (float vector), part_0 .. part_{S-1}] */
void sf_sum_f_opencl(void *buffers[], void *cl_arg) { ordered_sum(buffers, 4, SF_OCL_K_add_f, "sum_f"); }

/* buffers: [out (double vector), part_0 .. part_{S-1}] */
void sf_sum_d_opencl(void *buffers[], void *cl_arg) { ordered_sum(buffers, 8, SF_OCL_K_add_d, "sum_d"); }

/* buffers: [h (vector of any element size)] */
void sf_zero_opencl(void *buffers[], void *cl_arg)
{
  size_t es = STARPU_VECTOR_GET_ELEMSIZE(buffers[0]);
  sf_ocl_fill_zero(sf_ocl_vector(buffers[0], es, "zero h"), STARPU_VECTOR_GET_NX(buffers[0]), es);
  sf_ocl_done();
}

/* buffers: [dst (block slab or vector)]: copies the host bytes at args->src into it. The source must
 * stay valid until the task completes (the caller waits for the step), since the write is queued. */
void sf_sample_load_opencl(void *buffers[], void *cl_arg)
{
  sf_ocl_check_args("sample_load", sizeof(sf_sample_args));
  const sf_sample_args *a = cl_arg;
  void *iface = buffers[0];
  cl_command_queue q = sf_ocl_queue();
  if (!a->is_block) {
    size_t es = STARPU_VECTOR_GET_ELEMSIZE(iface), n = STARPU_VECTOR_GET_NX(iface);
    if (a->bytes != es * n) SF_ABORT("OpenCL sample_load: %zu bytes for a vector of %zu bytes", a->bytes, es * n);
    sf_ocl_check(clEnqueueWriteBuffer(q, (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(iface), CL_FALSE,
                                      STARPU_VECTOR_GET_OFFSET(iface), a->bytes, a->src, 0, NULL, NULL),
                 "clEnqueueWriteBuffer", "sample_load");
    sf_ocl_done();
    return;
  }
  size_t es = STARPU_BLOCK_GET_ELEMSIZE(iface), nx = STARPU_BLOCK_GET_NX(iface);
  size_t ny = STARPU_BLOCK_GET_NY(iface), nz = STARPU_BLOCK_GET_NZ(iface);
  size_t ldy = STARPU_BLOCK_GET_LDY(iface), ldz = STARPU_BLOCK_GET_LDZ(iface);
  cl_mem mem = (cl_mem)STARPU_BLOCK_GET_DEV_HANDLE(iface);
  size_t off = STARPU_BLOCK_GET_OFFSET(iface);
  if (a->bytes != es * nx * ny * nz)
    SF_ABORT("OpenCL sample_load: %zu bytes for a block of %zu bytes", a->bytes, es * nx * ny * nz);
  if ((ny <= 1 || ldy == nx) && (nz <= 1 || ldz == nx * ny)) {
    sf_ocl_check(clEnqueueWriteBuffer(q, mem, CL_FALSE, off, a->bytes, a->src, 0, NULL, NULL), "clEnqueueWriteBuffer",
                 "sample_load");
  } else { /* strided block: a rectangular write */
    const size_t borigin[3] = {off, 0, 0}, horigin[3] = {0, 0, 0}, region[3] = {nx * es, ny, nz};
    sf_ocl_check(clEnqueueWriteBufferRect(q, mem, CL_FALSE, borigin, horigin, region, ldy * es, ldz * es, nx * es,
                                          nx * ny * es, a->src, 0, NULL, NULL),
                 "clEnqueueWriteBufferRect", "sample_load");
  }
  sf_ocl_done();
}

#endif /* STARPU_USE_OPENCL */

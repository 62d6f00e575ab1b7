/* Gradient all-reduce schemes under StarPU-MPI, timed on the U-Net's parameter tensors (run by hand):
 *   mpirun -np 2 bench_allreduce [PS [BASE [ITERS [WORK]]]]      (defaults 6 16 5 20)
 * Each iteration is a "backward pass" - one task per parameter tensor, last tensor first, each
 * doing WORK ns of arithmetic per element before it writes that tensor's gradient - followed by a
 * sum over ranks, in three ways:
 *   ours   sf_allreduce (scaffold/comm.h): recursive doubling per tensor, StarPU-MPI isend/irecv
 *          and combine tasks, each tensor's exchange starting as soon as its gradient task ends;
 *   redux  one flat gradient buffer: a pack task, a STARPU_REDUX contribution per rank and
 *          starpu_mpi_redux_data (a barrier in 1.3: it waits for every task), then every rank
 *          reads the owner's result;
 *   mpi    starpu_task_wait_for_all, then MPI_Allreduce on the host (the no-StarPU baseline).
 * Prints, per scheme, the mean seconds per iteration, the part beyond the backward work alone,
 * and checks that every rank got the exact sum. */
#include <math.h>
#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/comm.h"
#include "scaffold/dist.h"
#include "scaffold/model.h"
#include "scaffold/tensor.h"

static int g_work = 20;

/* buffers: [g (W)]; cl_arg: {rank, p} - g[i] = value(rank, p, i) after ~g_work ns per element */
static float value(int rank, int p, size_t i) { return (float)((rank + 1) * 0.5 + (double)((i * 7 + (size_t)p) % 13) * 0.25); }
static void fill_cpu(void *buffers[], void *arg)
{
  const int *a = arg;
  float *g = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  double t0 = starpu_timing_now(), budget = (double)n * g_work / 1000.0; /* us */
  for (size_t i = 0; i < n; i++) g[i] = value(a[0], a[1], i);
  while (starpu_timing_now() - t0 < budget) {
  }
}
static struct starpu_codelet fill_cl = {.cpu_funcs = {fill_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "fill"};

/* buffers: [flat (W), g_0 .. g_{P-1} (R)] */
static void pack_cpu(void *buffers[], void *arg)
{
  (void)arg;
  float *flat = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  int n = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
  for (int k = 1; k < n; k++) {
    size_t m = STARPU_VECTOR_GET_NX(buffers[k]);
    memcpy(flat, (float *)STARPU_VECTOR_GET_PTR(buffers[k]), m * sizeof(float));
    flat += m;
  }
}
static struct starpu_codelet pack_cl = {.cpu_funcs = {pack_cpu}, .nbuffers = STARPU_VARIABLE_NBUFFERS, .name = "pack"};

/* reduction methods of the flat buffer, and the contribution task */
static void add_cpu(void *buffers[], void *arg)
{
  (void)arg;
  float *a = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *b = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  size_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (size_t i = 0; i < n; i++) a[i] += b[i];
}
static void zero_cpu(void *buffers[], void *arg)
{
  (void)arg;
  memset((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0, STARPU_VECTOR_GET_NX(buffers[0]) * sizeof(float));
}
static struct starpu_codelet redux_cl = {.cpu_funcs = {add_cpu}, .nbuffers = 2, .modes = {STARPU_RW, STARPU_R}, .name = "redux_add"};
static struct starpu_codelet init_cl = {.cpu_funcs = {zero_cpu}, .nbuffers = 1, .modes = {STARPU_W}, .name = "redux_zero"};
static struct starpu_codelet contrib_cl = {.cpu_funcs = {add_cpu}, .nbuffers = 2, .modes = {STARPU_REDUX, STARPU_R}, .name = "contrib"};
static void copy_cpu(void *buffers[], void *arg)
{
  (void)arg;
  memcpy((void *)STARPU_VECTOR_GET_PTR(buffers[0]), (void *)STARPU_VECTOR_GET_PTR(buffers[1]),
         STARPU_VECTOR_GET_NX(buffers[0]) * sizeof(float));
}
static struct starpu_codelet copy_cl = {.cpu_funcs = {copy_cpu}, .nbuffers = 2, .modes = {STARPU_W, STARPU_R}, .name = "copy"};

static void backward(int me, int P, starpu_data_handle_t *g)
{
  for (int p = P - 1; p >= 0; p--) {
    int *a = sf_malloc(2 * sizeof *a, "fill arguments"); /* freed by StarPU */
    a[0] = me;
    a[1] = p;
    starpu_task_insert(&fill_cl, STARPU_W, g[p], STARPU_CL_ARGS, a, 2 * sizeof *a, 0);
  }
}

/* max |got - exact sum| over the tensors */
static double check(float *arena, const sf_unet *u, int size)
{
  double worst = 0;
  for (int p = 0; p < u->nparams; p++)
    for (size_t i = 0; i < u->params[p].numel; i += 97) {
      double want = 0;
      for (int r = 0; r < size; r++) want += value(r, p, i);
      double d = fabs(arena[u->params[p].offset + i] - want);
      if (d > worst) worst = d;
    }
  return worst;
}

int main(int argc, char **argv)
{
  int ps = argc > 1 ? atoi(argv[1]) : 6, base = argc > 2 ? atoi(argv[2]) : 16, iters = argc > 3 ? atoi(argv[3]) : 5;
  g_work = argc > 4 ? atoi(argv[4]) : 20;
  sf_dist_init();
  if (!sf_dist_active()) sf_die(SF_EXIT_USAGE, "run under mpirun with at least 2 ranks");
  sf_dist_configure(1, "spatial_ranks");
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  if (sf_dist_starpu_init(&conf) != 0) sf_die(SF_EXIT_FAILURE, "StarPU-MPI did not start");
  int me = sf_dist_rank(), size = sf_dist_size();
  sf_unet u;
  char err[256];
  if (sf_unet_build(&u, ps, 3, base, 6, 8, err, sizeof err) != 0) sf_die(SF_EXIT_USAGE, "%s", err);
  const int P = u.nparams;
  const size_t N = u.total_params;
  float *arena = sf_data_alloc(N * sizeof(float), "gradients");
  starpu_data_handle_t *g = sf_malloc((size_t)P * sizeof *g, "handles");
  size_t *n = sf_malloc((size_t)P * sizeof *n, "sizes");
  for (int p = 0; p < P; p++) {
    n[p] = u.params[p].numel;
    starpu_vector_data_register(&g[p], STARPU_MAIN_RAM, (uintptr_t)(arena + u.params[p].offset), (uint32_t)n[p], 4);
  }
  sf_allreduce *ar = sf_allreduce_create((sf_handle *)g, n, P, 1.0f);

  /* flat-buffer scheme: local packed copy (owned here), the reduced buffer owned by rank 0, and
   * each rank's copy of the result */
  float *flat = sf_data_alloc(N * sizeof(float), "flat"), *res = sf_data_alloc(N * sizeof(float), "result");
  float *red = me == 0 ? sf_data_alloc(N * sizeof(float), "reduced") : NULL;
  starpu_data_handle_t hflat, hred, hres;
  starpu_vector_data_register(&hflat, STARPU_MAIN_RAM, (uintptr_t)flat, (uint32_t)N, 4);
  starpu_vector_data_register(&hres, STARPU_MAIN_RAM, (uintptr_t)res, (uint32_t)N, 4);
  starpu_vector_data_register(&hred, me == 0 ? STARPU_MAIN_RAM : -1, (uintptr_t)red, (uint32_t)N, 4);
  starpu_mpi_data_register(hflat, 1000000 + me, me);
  starpu_mpi_data_register(hres, 2000000 + me, me);
  starpu_mpi_data_register(hred, 3000000, 0);
  starpu_data_set_reduction_methods(hred, &redux_cl, &init_cl);
  starpu_data_handle_t *hf = sf_malloc((size_t)size * sizeof *hf, "flat handles"), *hr = sf_malloc((size_t)size * sizeof *hr, "res handles");
  for (int r = 0; r < size; r++) { /* the other ranks' flat/result handles, for the contribution and read tasks */
    if (r == me) {
      hf[r] = hflat;
      hr[r] = hres;
      continue;
    }
    starpu_vector_data_register(&hf[r], -1, 0, (uint32_t)N, 4);
    starpu_vector_data_register(&hr[r], -1, 0, (uint32_t)N, 4);
    starpu_mpi_data_register(hf[r], 1000000 + r, r);
    starpu_mpi_data_register(hr[r], 2000000 + r, r);
  }

  const char *names[4] = {"backward only", "ours (per-tensor recursive doubling)", "starpu_mpi_redux_data (flat)",
                          "MPI_Allreduce after the wait"};
  double secs[4] = {0}, worst[4] = {0};
  for (int scheme = 0; scheme < 4; scheme++)
    for (int it = -1; it < iters; it++) { /* it = -1: warm-up */
      sf_dist_barrier();
      double t0 = starpu_timing_now();
      backward(me, P, g);
      if (scheme == 1) sf_allreduce_submit(ar);
      if (scheme == 2) {
        struct starpu_data_descr *d = sf_malloc((size_t)(P + 1) * sizeof *d, "descr");
        d[0].handle = hflat;
        d[0].mode = STARPU_W;
        for (int p = 0; p < P; p++) d[p + 1].handle = g[p], d[p + 1].mode = STARPU_R;
        starpu_task_insert(&pack_cl, STARPU_DATA_MODE_ARRAY, d, P + 1, 0);
        free(d);
        starpu_mpi_task_insert(MPI_COMM_WORLD, &init_cl, STARPU_W, hred, 0); /* REDUX adds to the old value */
        for (int r = 0; r < size; r++)
          starpu_mpi_task_insert(MPI_COMM_WORLD, &contrib_cl, STARPU_REDUX, hred, STARPU_R, hf[r], STARPU_EXECUTE_ON_DATA,
                                 hf[r], 0);
        starpu_mpi_redux_data(MPI_COMM_WORLD, hred); /* 1.3: ends with starpu_task_wait_for_all */
        for (int r = 0; r < size; r++) starpu_mpi_task_insert(MPI_COMM_WORLD, &copy_cl, STARPU_W, hr[r], STARPU_R, hred, 0);
      }
      starpu_task_wait_for_all();
      if (scheme == 3) {
        for (int p = 0; p < P; p++) starpu_data_acquire(g[p], STARPU_RW);
        MPI_Allreduce(MPI_IN_PLACE, arena, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int p = 0; p < P; p++) starpu_data_release(g[p]);
      }
      double t = (starpu_timing_now() - t0) * 1e-6;
      if (scheme == 2) starpu_mpi_cache_flush_all_data(MPI_COMM_WORLD);
      double tmax[1] = {t};
      sf_dist_allreduce_sum(tmax, 1); /* mean over ranks */
      if (it >= 0) secs[scheme] += tmax[0] / size / iters;
      if (scheme == 0) continue;
      float *out = arena;
      if (scheme == 2) {
        starpu_data_acquire(hres, STARPU_R);
        out = res;
      } else {
        for (int p = 0; p < P; p++) starpu_data_acquire(g[p], STARPU_R);
      }
      double w = check(out, &u, size);
      if (w > worst[scheme]) worst[scheme] = w;
      if (scheme == 2) starpu_data_release(hres);
      else
        for (int p = 0; p < P; p++) starpu_data_release(g[p]);
    }
  if (me == 0) {
    printf("U-Net ps %d base %d: %d parameter tensors, %zu floats (%.1f MiB); %d ranks; %d ns/element of backward "
           "work; mean of %d iterations\n", ps, base, P, N, N * 4.0 / (1 << 20), size, g_work, iters);
    for (int s = 0; s < 4; s++) {
      printf("  %-40s %8.3f s/step", names[s], secs[s]);
      if (s) printf("  (+%.3f s over the backward alone)  max error %.2g", secs[s] - secs[0], worst[s]);
      printf("\n");
    }
  }
  int bad = worst[1] > 1e-3 || worst[2] > 1e-3 || worst[3] > 1e-3;
  for (int r = 0; r < size; r++)
    if (r != me) {
      starpu_data_unregister(hf[r]);
      starpu_data_unregister(hr[r]);
    }
  starpu_data_unregister(hflat);
  starpu_data_unregister(hres);
  starpu_data_unregister(hred);
  sf_allreduce_destroy(ar);
  for (int p = 0; p < P; p++) starpu_data_unregister(g[p]);
  sf_dist_starpu_shutdown();
  sf_dist_finalize();
  if (bad) fprintf(stderr, "bench_allreduce: rank %d: wrong sums (%g %g %g)\n", me, worst[1], worst[2], worst[3]);
  return bad;
}

/* Comparison tool for the distributed-training tests (tests/mpi/test_*.sh):
 *   mpi_tool ckpt-close A B TOL   parameters of two checkpoints: relative L2 difference
 *                                 ||a - b|| / ||b|| <= TOL (also prints the largest element
 *                                 difference and the Adam moments' relative difference); exit 1 if not
 *   mpi_tool ckpt-state FILE      replicas=, spatial_ranks=, epoch=, partial_epoch=, global_step= */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/trainer.h"

static int load(const char *path, sf_ckpt_state *s, float **a)
{
  char err[2048];
  sf_ckpt_status st = sf_checkpoint_read(path, NULL, s, NULL, NULL, NULL, err, sizeof err);
  if (st != SF_CKPT_OK) {
    fprintf(stderr, "mpi_tool: %s\n", err);
    return -1;
  }
  size_t n = (size_t)s->topo.nparams;
  *a = sf_malloc(3 * n * sizeof(float) + 4, "checkpoint arrays");
  st = sf_checkpoint_read(path, &s->topo, s, *a, *a + n, *a + 2 * n, err, sizeof err);
  if (st != SF_CKPT_OK) {
    fprintf(stderr, "mpi_tool: %s\n", err);
    return -1;
  }
  return 0;
}

/* relative L2 difference of n floats; *maxd, *at: the largest element difference */
static double rel_l2(const float *a, const float *b, size_t n, double *maxd, size_t *at)
{
  double d2 = 0, b2 = 0;
  *maxd = 0;
  *at = 0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    d2 += d * d;
    b2 += (double)b[i] * b[i];
    if (fabs(d) > *maxd || isnan(d)) {
      *maxd = fabs(d);
      *at = i;
    }
  }
  return b2 > 0 ? sqrt(d2 / b2) : sqrt(d2);
}

int main(int argc, char **argv)
{
  if (argc == 5 && !strcmp(argv[1], "ckpt-close")) {
    sf_ckpt_state sa, sb;
    float *a, *b;
    if (load(argv[2], &sa, &a) || load(argv[3], &sb, &b)) return 1;
    double tol = atof(argv[4]);
    if (sa.topo.nparams != sb.topo.nparams) {
      fprintf(stderr, "mpi_tool: %s holds %llu parameters, %s %llu\n", argv[2], (unsigned long long)sa.topo.nparams,
              argv[3], (unsigned long long)sb.topo.nparams);
      return 1;
    }
    size_t n = (size_t)sa.topo.nparams, at;
    double maxd, rp = rel_l2(a, b, n, &maxd, &at);
    printf("params: %zu values, relative L2 difference %.3g (tolerance %g), largest |diff| %.3g at %zu (%.9g vs "
           "%.9g); global_step %ld vs %ld\n", n, rp, tol, maxd, at, a[at], b[at], sa.global_step, sb.global_step);
    double md, rm = rel_l2(a + n, b + n, n, &md, &at), vd, rv = rel_l2(a + 2 * n, b + 2 * n, n, &vd, &at);
    printf("adam m: relative L2 difference %.3g; adam v: %.3g\n", rm, rv);
    int ok = rp <= tol && sa.global_step == sb.global_step;
    if (!ok) fprintf(stderr, "FAIL: %s and %s differ by %.3g > %g (or in global_step)\n", argv[2], argv[3], rp, tol);
    free(a);
    free(b);
    return ok ? 0 : 1;
  }
  if (argc == 3 && !strcmp(argv[1], "ckpt-state")) {
    sf_ckpt_state s;
    float *a;
    if (load(argv[2], &s, &a)) return 1;
    printf("replicas=%ld\nspatial_ranks=%ld\nepoch=%ld\npartial_epoch=%ld\npartial_steps=%ld\nglobal_step=%ld\n",
           s.replicas, s.spatial_ranks, s.epoch, s.partial_epoch, s.partial_steps, s.global_step);
    free(a);
    return 0;
  }
  fprintf(stderr, "usage: mpi_tool ckpt-close A B TOL | ckpt-state FILE\n");
  return 2;
}

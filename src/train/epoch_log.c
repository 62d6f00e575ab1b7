/* Upstream's minibatch timing and per-epoch completion line (spec §7.3; see epoch_log.h): the step
 * times of full batches, each step's maximum over the ranks (upstream all-gathers the CUDA-event
 * times and takes the max per batch), the median per epoch, and the median of those at the end. */
#include <stdlib.h>
#include <string.h>

#include "epoch_log.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"

void sf_epoch_log_init(sf_epoch_log *l) { memset(l, 0, sizeof *l); }

void sf_epoch_log_start(sf_epoch_log *l) { l->start = sf_now(); }

static void push(double **v, int *n, int *cap, double x)
{
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 64;
    double *nv = realloc(*v, (size_t)*cap * sizeof **v);
    if (!nv) sf_die(SF_EXIT_FAILURE, "out of memory recording minibatch times");
    *v = nv;
  }
  (*v)[(*n)++] = x;
}

void sf_epoch_log_step(sf_epoch_log *l, double seconds, int full)
{
  if (full) push(&l->times, &l->n, &l->cap, seconds);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double sf_median(double *v, int n)
{
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double sf_epoch_log_epoch(sf_epoch_log *l, FILE *out, long epoch, double duration, long opt_steps,
                          long total_opt_steps)
{
  char part[96] = "";
  double med = 0;
  int n[1] = {l->n};
  sf_dist_allreduce_max(n, 1); /* every rank runs the same steps; this only guards the collective */
  if (n[0] > 0) {
    if (n[0] != l->n) sf_die(SF_EXIT_FAILURE, "minibatch timing: %d full batches here, %d on another rank", l->n, n[0]);
    sf_dist_allreduce_max_double(l->times, l->n); /* each batch's slowest rank */
    med = sf_median(l->times, l->n);
    push(&l->medians, &l->nmed, &l->capmed, med);
    snprintf(part, sizeof part, " Median of minibatch times: %.6f seconds.", med);
  }
  fprintf(out,
          "Epoch %ld completed in %.6f seconds. Total train time so far: %.6f seconds.%s Optimizer steps this epoch: "
          "%ld. Total optimizer steps: %ld.\n",
          epoch, duration, l->start > 0 ? sf_now() - l->start : duration, part, opt_steps, total_opt_steps);
  fflush(out);
  l->n = 0;
  return med;
}

void sf_epoch_log_finish(sf_epoch_log *l, FILE *out, int report)
{
  if (report && l->nmed > 0) {
    fprintf(out, "Median of epoch minibatch time medians: %.6f seconds.\n", sf_median(l->medians, l->nmed));
    fflush(out);
  }
  free(l->times);
  free(l->medians);
  memset(l, 0, sizeof *l);
}

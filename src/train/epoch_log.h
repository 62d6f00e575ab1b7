/* Upstream's minibatch timing and per-epoch completion line (spec §7.3, trainer.train), for the epoch
 * loop of src/train/trainer.c: each full batch's step time, its maximum over the ranks, the median
 * over the epoch's batches, and at the end the median of the epoch medians. Private to src/train. */
#ifndef SF_EPOCH_LOG_H
#define SF_EPOCH_LOG_H

#include <stdio.h>

typedef struct {
  double start;     /* sf_now() when the epoch loop began (upstream's `start`); 0 before */
  double *times;    /* this epoch's full-batch step times, seconds, in step order */
  int n, cap;
  double *medians;  /* one per epoch that timed a full batch */
  int nmed, capmed;
} sf_epoch_log;

/* Empty; safe to finish without ever starting. */
void sf_epoch_log_init(sf_epoch_log *l);
/* The epoch loop begins: "Total train time so far" counts from here. */
void sf_epoch_log_start(sf_epoch_log *l);
/* One training step of `seconds`; full = 0 for a ragged (smaller) final batch, which upstream leaves
 * untimed. */
void sf_epoch_log_step(sf_epoch_log *l, double seconds, int full);
/* End of an epoch, on every rank at the same point (it takes each step's maximum over the ranks):
 * writes "Epoch E completed in X seconds. Total train time so far: Y seconds. Median of minibatch
 * times: Z seconds. Optimizer steps this epoch: S. Total optimizer steps: T." to out (the median
 * part is left out when no full batch was timed, as upstream) and starts the next epoch's timing.
 * Returns the median (0 when none). */
double sf_epoch_log_epoch(sf_epoch_log *l, FILE *out, long epoch, double duration, long opt_steps,
                          long total_opt_steps);
/* After the loop: "Median of epoch minibatch time medians: Z seconds." when report != 0 and an epoch
 * was timed; frees the buffers. */
void sf_epoch_log_finish(sf_epoch_log *l, FILE *out, int report);
/* Median of v[0..n-1] (sorted in place), as Python's statistics.median; 0 when n == 0. */
double sf_median(double *v, int n);

#endif

/* The work of `scaffold tune` (tune.c), shared with `scaffold calibrate`: lists the 3x3x3 convolution's call
 * shapes of a config by running one training step, times every variant that can run each shape, and merges
 * the winners into a class's tuning record (scaffold/kernel_tuning_setup.h). Internal to the CLI layer. */
#ifndef SF_TUNE_H
#define SF_TUNE_H

#include <stddef.h>
#include <stdio.h>

#include "scaffold/config.h"

typedef struct {
  double budget_s; /* per candidate and shape */
  FILE *log;       /* the summary and per-shape lines (NULL: none) */
  int verbose;     /* one line per shape */
} sf_tune_opts;

typedef struct {
  int shapes;          /* call shapes of the config */
  int timed;           /* those with more than one candidate, timed */
  int differ;          /* where the winner is not the built-in rules' choice */
  double builtin_us;   /* summed fastest call of the built-in choice over the timed shapes */
  double tuned_us;     /* the same for the winners */
  double seconds;      /* wall time of the tuning */
} sf_tune_summary;

/* The config of a command built on training steps (`tune`, `calibrate`): parses argv (the command's own options
 * through extra), refuses keys the steps do not read and checks the runtime keys, exiting 2 with a message
 * naming the key before any work. Returns -v. */
int sf_steps_command_config(sf_config *c, int argc, char **argv, const char *cmd, sf_cli_extra_fn extra, void *ctx);

/* Tunes config c into the record `record_path` (entries of other shapes already there are kept; the file
 * is written atomically, under a lock next to it). 0, or -1 with err. */
int sf_tune_config(const sf_config *c, const char *record_path, const sf_tune_opts *o, sf_tune_summary *sum,
                   char *err, size_t errlen);

#endif

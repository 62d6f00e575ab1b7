/* What `scaffold calibrate` measures (calibrate_plan.c): the runs of a full calibration (the standard shapes
 * on 2 and 1 workers, the slab counts of bigger machines, bf16, OpenCL) or of a quick one (one config's
 * shape). Internal to the CLI layer. */
#ifndef SF_CALIBRATE_PLAN_H
#define SF_CALIBRATE_PLAN_H

#include "scaffold/config.h"

typedef struct {
  long ps, base, batch, ncpu, nopencl, slabs, amp;
  int opencl;     /* needs an OpenCL device: skipped, with the rest of its kind, when the first one fails */
  int steps;      /* calibrating steps */
  double weight;  /* relative duration, for the ETA */
} sf_calib_run;

#define SF_CALIB_MAX_RUNS 32

typedef struct {
  sf_calib_run run[SF_CALIB_MAX_RUNS];
  int n;
  sf_calib_run measured; /* the real figure of MEASURED (calibrated models, STARPU_CALIBRATE=0) */
  int extra_passes;      /* calibrating passes at most after the first while footprints lack samples */
} sf_calib_plan;

/* quick: c's own shape (and its bf16 twin when torch_amp is 1); full: the standard shapes. bf16 runs only
 * when the CPU has a bf16 engine. */
void sf_calib_plan_make(sf_calib_plan *p, const sf_config *c, int quick);
/* "ps 5 base 16 batch 1, 2 workers, torch_amp 1" */
char *sf_calib_run_describe(const sf_calib_run *r, char *buf, size_t len);

#endif

/* The measuring steps of `scaffold calibrate` (calibrate_run.c): each one a child `scaffold` process with
 * the environment that points StarPU at a staging model folder inside the class folder, and what happens
 * with the results. Internal to the CLI layer. */
#ifndef SF_CALIBRATE_RUN_H
#define SF_CALIBRATE_RUN_H

#include <limits.h>
#include <stddef.h>

#include "calibrate_plan.h"
#include "class_folder.h"

typedef struct {
  sf_class_folder folder;
  int ship, lock_fd, nlogs;
  int opencl_bus;            /* the plan has OpenCL runs that can start: every run sees the OpenCL devices */
  char staging[PATH_MAX + 32]; /* STARPU_PERF_MODEL_DIR of the calibrating runs; removed at the end */
  char record[PATH_MAX + 64]; /* the class's tuning record for this build */
  char last_error[PATH_MAX + 512]; /* why the last child failed: the tail of its log */
  double t0;
  int under10, footprints, model_files, bus_files;
} sf_calib_ctx;

/* Locks the class against another calibration, creates the folder (MATCH) and the staging folder. */
int sf_calib_begin(sf_calib_ctx *x, int ship, char *err, size_t errlen);
/* `scaffold tune` of run r's shape into the class */
int sf_calib_tune(sf_calib_ctx *x, const sf_calib_run *r);
/* `scaffold steps` of run r with dmda: `warmup` then `steps` steps, STARPU_CALIBRATE=calibrate; with median_s non-NULL, the
 * median step and the CPU workers it ran on */
int sf_calib_steps(sf_calib_ctx *x, const sf_calib_run *r, int warmup, int steps, int calibrate, double *median_s,
                   int *ncpu);
/* The footprints of the staging models and those with fewer than 10 samples */
void sf_calib_count_staging(sf_calib_ctx *x, int *footprints, int *under);
/* Replaces the class's sampling/ by the staging models of this class (history files and bus files) */
int sf_calib_install_models(sf_calib_ctx *x, char *err, size_t errlen);
/* MEASURED: run r on the new models, not calibrating */
int sf_calib_measure(sf_calib_ctx *x, const sf_calib_run *r, char *err, size_t errlen);
/* baseline-standard.json: `scaffold jobs standard` then `scaffold summary` (with --ship also
 * baselines/standard/<class>.json) */
int sf_calib_baseline(sf_calib_ctx *x, char *err, size_t errlen);
/* CALIBRATED: date, commit, machine, mode, the runs, the footprints short of samples */
int sf_calib_stamp(sf_calib_ctx *x, const char *mode, const sf_calib_plan *p, char *err, size_t errlen);
/* Removes the staging folder (kept, and named, when failed), releases the lock */
void sf_calib_end(sf_calib_ctx *x, int failed);

#endif

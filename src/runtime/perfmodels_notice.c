/* Start-up notice for a dm* or heft run without shipped perfmodels for this machine class: without it
 * the run would silently schedule uninformed until StarPU has calibrated (docs/perfmodels.md). */
#include "perfmodels_notice.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"


/* StarPU 1.3.10's own model directory without STARPU_PERF_MODEL_DIR: <home>/.starpu/sampling with
 * <home> = $XDG_CACHE_HOME, else $HOME (STARPU_HOME set means the user is in charge: no notice). */
static void starpu_sampling_dir(char *out, size_t len)
{
  const char *home = getenv("XDG_CACHE_HOME");
  if (!home || !home[0]) home = getenv("HOME");
  snprintf(out, len, "%s/.starpu/sampling", home && home[0] ? home : "~");
}

/* History files of our codelets (sf_*) StarPU has written there so far; -1 when the directory is absent. */
static int count_histories(const char *sampling)
{
  char dir[2100];
  snprintf(dir, sizeof dir, "%s/codelets/45", sampling);
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (!strncmp(e->d_name, "sf_", 3)) n++;
  closedir(d);
  return n;
}

void sf_perfmodels_uncalibrated_notice(const char *sched, const char *first)
{
  char sampling[2048], learnt[2300];
  starpu_sampling_dir(sampling, sizeof sampling);
  int n = count_histories(sampling);
  if (n > 0)
    snprintf(learnt, sizeof learnt, "%s already holds %d history file(s) of our codelets from earlier runs here", sampling, n);
  else
    snprintf(learnt, sizeof learnt, "%s holds none of our codelets yet: this is the first calibrating run", sampling);
  sf_info("runtime: perfmodels: %s", first);
  sf_info("runtime: perfmodels: meanwhile %s calibrates while it runs: a task whose codelet and data size have fewer "
          "than 10 timed samples (STARPU_CALIBRATE_MINIMUM) is placed where it collects samples, not where it "
          "would finish first, so the placements of the first steps of each shape (about 10) are uninformed and "
          "the steps slower; StarPU saves what it learnt at shutdown: %s",
          sched, learnt);
  sf_info("runtime: perfmodels: to calibrate this machine class: `scaffold calibrate --quick -c CONFIG` (11 "
          "calibrating dmda steps of the config's shape, a few minutes) or `scaffold calibrate` (the standard "
          "shapes, a tuning record and a harness baseline); either writes a class of your own for machines like "
          "this one (docs/perfmodels.md)");
}

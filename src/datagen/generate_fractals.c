/* `generate_fractals` (spec §1.1): optional from-scratch wipe of the class and instance
 * directories, the legacy-layout warning, the class search, then the instances. StarPU must be
 * running (sf_runtime_init); both phases are task graphs. SIGINT/SIGTERM (scaffold/signals.h)
 * abandon the tasks not yet started, keep every complete file and return SF_EXIT_INTERRUPTED.
 * Processes sharing fract_base_dir (array jobs, several benchmarks started at once) take turns:
 * all of it runs under <root>/.lock (flock, released by the kernel even when the holder is killed),
 * so the next holder finds the previous one's complete library and has nothing to do, or finds
 * what a killed holder left (whole files, .tmp- files, a .pending marker) and finishes it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/signals.h"
#include "scaffold/trace.h"

static void remove_dir(const char *dir)
{
  if (!sf_dir_exists(dir)) return;
  if (sf_remove_tree(dir) != 0) sf_die(SF_EXIT_FAILURE, "cannot remove %s (datagen_from_scratch): %s", dir, strerror(errno));
  sf_info("datagen_from_scratch: removed %s", dir);
}

/* Everything below runs under the library lock. datagen_from_scratch removes this point count's
 * classes and instances only: other problem scales' libraries are independent (scaffold/datagen.h). */
static int generate_locked(const sf_config *c, double t0)
{
  if (c->datagen_from_scratch) {
    double tr0 = sf_trace_now();
    char *pd = sf_fractal_param_dir(c), *id = sf_fractal_instance_dir(c);
    remove_dir(pd);
    remove_dir(id);
    free(pd);
    free(id);
    sf_trace_span("datagen_from_scratch: remove", "main", tr0, sf_trace_now()); /* trace: 1 */
  }
  sf_fractal_warn_legacy(c);
  sf_class_search_stats cs;
  sf_generate_classes(c, &cs);
  sf_instance_stats is = {0};
  if (!sf_stop_requested()) sf_generate_instances(c, &is);
  if (sf_stop_requested()) {
    char *root = sf_fractal_root_dir(c);
    int complete = is.total > 0 && is.written + is.reused == is.total;
    if (complete)
      fprintf(stderr, "scaffold: generate_fractals interrupted by %s after %.3f s, with the library under %s "
              "complete\n", sf_signal_name(sf_stop_requested()), sf_now() - t0, root);
    else
      fprintf(stderr, "scaffold: generate_fractals interrupted by %s after %.3f s: the library under %s is "
              "incomplete but every file in it is whole; rerun the same command to finish it (the same bytes as an "
              "uninterrupted run)\n", sf_signal_name(sf_stop_requested()), sf_now() - t0, root);
    free(root);
    return SF_EXIT_INTERRUPTED;
  }
  sf_info("generate_fractals: %ld classes, %ld instances (np%ld) ready in %.3f s (search %.3f s, instances %.3f s)",
          c->n_categories, is.total, c->point_num, sf_now() - t0, cs.seconds, is.seconds);
  return 0;
}

int sf_generate_fractals(const sf_config *c)
{
  double t0 = sf_now();
  sf_signals_install(); /* again after starpu_init, which installs its own SIGINT handler */
  char *lroot = sf_fractal_root_dir(c), *lpath = sf_path_join(lroot, ".lock"), what[4200];
  if (sf_mkdir_p(lroot) != 0) sf_die(SF_EXIT_FAILURE, "cannot create directory %s: %s", lroot, strerror(errno));
  snprintf(what, sizeof what, "generating the fractal library under %s", lroot);
  int lock = sf_lock_acquire(lpath, what);
  if (lock < 0 && errno == EINTR && sf_stop_requested()) {
    fprintf(stderr, "scaffold: generate_fractals interrupted by %s while waiting for %s\n",
            sf_signal_name(sf_stop_requested()), lpath);
    free(lroot);
    free(lpath);
    return SF_EXIT_INTERRUPTED;
  }
  if (lock < 0) sf_die(SF_EXIT_FAILURE, "cannot lock %s: %s", lpath, strerror(errno));
  free(lroot);
  free(lpath);
  int rc = generate_locked(c, t0);
  sf_lock_release(lock);
  return rc;
}

/* `generate_fractals` (spec §1.1): optional from-scratch wipe of the class and instance
 * directories, the legacy-layout warning, the class search, then the instances. StarPU must be
 * running (sf_runtime_init); both phases are task graphs. SIGINT/SIGTERM (scaffold/signals.h)
 * abandon the tasks not yet started, keep every complete file and return SF_EXIT_INTERRUPTED. */
#include <errno.h>
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

int sf_generate_fractals(const sf_config *c)
{
  double t0 = sf_now();
  sf_signals_install(); /* again after starpu_init, which installs its own SIGINT handler */
  if (c->datagen_from_scratch) {
    double tr0 = sf_trace_now();
    char *pd = sf_fractal_param_dir(c), *id = sf_fractal_instances_root(c);
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

/* `scaffold benchmark`'s checks of the whole configuration against what this build can run, made
 * once the configuration is loaded and the rank layout fixed, before anything is written or
 * generated: the dataset layout (scale, problem_scale, dc_num_shards, seed), the U-Net, the task
 * graph (optimizer, slabs, spatial_ranks), the StarPU scheduler name, the global batch against the
 * volume counts, a lower bound of the memory against the machine's, and the export_graph directory
 * (created here, so that a bad path fails before the work). Each module states its own limits
 * (sf_dataset_check_config, sf_unet_build, sf_graph_check_config); this file only runs them and
 * words the refusal like the config loader's: where the key was set (FILE:LINE or the override), its
 * value and what was expected, exit status 2. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "scaffold/model.h"
#include "scaffold/runtime.h"

static void check_batch(const sf_config *c)
{
  int n_train, n_val, R = sf_dist_replicas();
  char err[1024];
  if (sf_volume_plan_sizes(c->seed, c->n_categories, c->n_instances_used_per_fractal, c->n_fracts_per_vol,
                           c->val_split, &n_train, &n_val, err, sizeof err) != 0)
    return; /* refused by sf_dataset_check_config already */
  long global = c->local_batch_size * R;
  int smaller = n_train < n_val ? n_train : n_val;
  if (global <= smaller) return;
  const char *split = smaller == n_val ? "validation" : "training";
  if (smaller < R)
    sf_config_refuse2(c, "val_split", "n_instances_used_per_fractal",
                      "%d training and %d validation volumes, fewer %s volumes than the %d data-parallel replica%s; "
                      "expected at least %d of each (n_categories x n_instances_used_per_fractal / n_fracts_per_vol "
                      "volumes, val_split %% of them for validation)",
                      n_train, n_val, split, R, R == 1 ? "" : "s", R);
  sf_config_refuse(c, "local_batch_size",
                   "the global batch (local_batch_size x %d data-parallel replica%s = %ld) exceeds the %d %s volumes "
                   "(%d training, %d validation); expected at most %d",
                   R, R == 1 ? "" : "s", global, smaller, split, n_train, n_val, smaller / R);
}

static void check_memory(const sf_config *c, const sf_unet *u)
{
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return;
  double have = (double)pages * (double)page, need = sf_graph_min_bytes(u, sf_dist_spatial());
  if (need > have)
    sf_config_refuse2(c, "problem_scale", "unet_base_channels",
                      "the full-resolution activations of the first and last U-Net blocks alone need %.1f GiB per rank "
                      "(%d^3 voxels x %d channels x 8 tensors%s), and this machine has %.1f GiB of memory; expected a "
                      "smaller problem_scale or unet_base_channels, or more spatial_ranks under mpirun",
                      need / (1 << 30), u->edge[0], u->channels[0], sf_dist_spatial() > 1 ? " / spatial_ranks" : "",
                      have / (1 << 30));
}

/* export_graph: the directory must exist or be creatable (it is written after warm-up). */
static void check_export_dir(const sf_config *c)
{
  if (!c->export_graph[0] || !sf_dist_is_root()) return;
  if (sf_mkdir_p(c->export_graph) != 0 || access(c->export_graph, W_OK) != 0)
    sf_config_refuse(c, "export_graph", "cannot create or write the directory (%s); expected a writable directory path",
                     strerror(errno));
}

void sf_benchmark_check_config(const sf_config *c, int training)
{
  const char *key;
  char err[2048];
  if (sf_dataset_check_config(c, &key, err, sizeof err) != 0) sf_config_refuse(c, key, "%s", err);
  if (c->scheduler && c->scheduler[0] && !sf_runtime_resolve_scheduler(c->scheduler, err, sizeof err))
    sf_config_refuse(c, "scheduler", "not a StarPU scheduling policy of this build; expected one of: %s", err);
  if (!training) return; /* --datagen-only */

  sf_unet u;
  if (sf_unet_build(&u, (int)c->problem_scale, (int)c->unet_bottleneck_dim, (int)c->unet_base_channels,
                    (int)c->n_categories + 1, (int)c->group_norm_groups, err, sizeof err) != 0)
    sf_config_refuse2(c, "unet_base_channels", "problem_scale", "the U-Net cannot be built: %s", err);
  if (sf_graph_check_config(&u, c, sf_dist_spatial(), &key, err, sizeof err) != 0) {
    sf_unet_free(&u);
    sf_config_refuse(c, key, "%s", err);
  }
  check_batch(c);
  check_memory(c, &u);
  sf_unet_free(&u);
  check_export_dir(c);
}

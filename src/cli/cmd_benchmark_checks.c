/* `scaffold benchmark`'s checks of the whole configuration against what this build can run, made
 * once the configuration is loaded and the rank layout fixed, before anything is written or
 * generated: the dataset layout (scale, problem_scale, dc_num_shards, seed), the U-Net, the task
 * graph (optimizer, slabs, spatial_ranks), the StarPU scheduler name, the global batch against the
 * volume counts, the memory plan (scaffold/memory_plan.h) against max_memory_gib or the machine's
 * memory, and the export_graph directory (created here, so that a bad path fails before the work).
 * Each module states its own limits (sf_dataset_check_config, sf_unet_build, sf_graph_check_config);
 * this file only runs them and words the refusal like the config loader's: where the key was set
 * (FILE:LINE or the override), its value and what was expected, exit status 2. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "scaffold/memory_plan.h"
#include "scaffold/model.h"
#include "scaffold/runtime.h"
#include "scaffold/tensor.h"
#include "scaffold/switches.h"

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

/* The machine's memory for max_memory_gib 0: MemAvailable of /proc/meminfo (what can be allocated
 * without swapping now), else MemTotal, else sysconf's physical pages. 0 if none can be read. */
static double machine_memory(const char **source)
{
  FILE *f = fopen("/proc/meminfo", "r");
  double avail = 0, total = 0;
  if (f) {
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (double)kb * 1024;
      if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) total = (double)kb * 1024;
    }
    fclose(f);
  }
  if (avail > 0) return *source = "MemAvailable in /proc/meminfo", avail;
  if (total > 0) return *source = "MemTotal in /proc/meminfo", total;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  *source = "sysconf(_SC_PHYS_PAGES)";
  return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

/* The workers StarPU will start on this rank (runtime.c: ncpu -1 = StarPU's choice, STARPU_NCPU or
 * one per core). */
static void plan_layout(const sf_config *c, int spatial, sf_memplan_layout *l)
{
  long ncpu = c->ncpu;
  const char *env = getenv("STARPU_NCPU");
  if (ncpu < 0 && env && *env) ncpu = strtol(env, NULL, 10);
  if (ncpu < 0) ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const char *gp = sf_switch("SF_GRAD_PART_MAX_FLOATS");
  int grid[3]; /* depth shards, and the H/W blocks of dc_num_shards */
  sf_config_shard_grid(c, grid);
  const int hw = grid[1] * grid[2];
  *l = (sf_memplan_layout){.spatial = spatial / hw,
                           .shards_h = grid[1],
                           .shards_w = grid[2],
                           .replicas = sf_dist_replicas(),
                           .cpu_workers = ncpu > 0 ? (int)ncpu : 1,
                           .workers = (int)(ncpu > 0 ? ncpu : 1) + (int)c->nopencl + (int)(c->ncuda > 0 ? c->ncuda : 0),
                           .part_max_floats = gp && *gp ? (size_t)strtoull(gp, NULL, 10) : 0};
}

/* What would make the plan fit under `limit` bytes: more ranks per volume, a smaller batch, or
 * (always) a smaller problem; appended to buf. */
static void suggest(const sf_config *c, const sf_unet *u, const sf_memplan_layout *l0, double limit, char *buf,
                    size_t len)
{
  sf_memplan m;
  sf_memplan_layout l = *l0;
  size_t k = strlen(buf);
  const int coarse = u->edge[u->levels], cap = coarse < SF_MAX_SLABS ? coarse : SF_MAX_SLABS;
  for (int T = l0->spatial * 2; T <= cap; T *= 2) {
    sf_config t = *c;
    t.slabs = 0;
    l.spatial = T;
    sf_memory_plan(u, &t, &l, &m);
    if (m.total <= limit) {
      k += (size_t)snprintf(buf + k, len - k, "spatial_ranks >= %d (%.1f GiB per rank, under mpirun with %d ranks "
                            "per volume), or ", T, m.total / (1 << 30), T);
      break;
    }
  }
  l = *l0;
  for (long B = c->local_batch_size - 1; B >= 1 && k < len; B--) {
    sf_config t = *c;
    t.local_batch_size = B;
    sf_memory_plan(u, &t, &l, &m);
    if (m.total <= limit) {
      k += (size_t)snprintf(buf + k, len - k, "local_batch_size <= %ld (%.1f GiB), or ", B, m.total / (1 << 30));
      break;
    }
  }
  if (k < len) snprintf(buf + k, len - k, "a smaller problem_scale or unet_base_channels");
}

/* The memory plan (scaffold/memory_plan.h), printed by rank 0 before any work; a plan above
 * max_memory_gib (0: the machine's memory) is refused with what would fit. */
static void check_memory(const sf_config *c, const sf_unet *u)
{
  sf_memplan_layout l;
  sf_memplan m;
  plan_layout(c, sf_dist_spatial(), &l);
  sf_memory_plan(u, c, &l, &m);
  const char *source = "max_memory_gib";
  double limit = c->max_memory_gib > 0 ? c->max_memory_gib * (1 << 30) : machine_memory(&source);
  char text[1024];
  sf_memory_plan_format(&m, "  ", text, sizeof text);
  if (sf_dist_is_root())
    sf_info("memory plan (per rank, %d CPU worker%s, %d replica%s x %d spatial rank%s%s):\n%s\n  limit %.2f GiB (%s)",
            l.cpu_workers, l.cpu_workers == 1 ? "" : "s", l.replicas, l.replicas == 1 ? "" : "s",
            l.spatial * l.shards_h * l.shards_w, l.spatial * l.shards_h * l.shards_w == 1 ? "" : "s",
            l.shards_h * l.shards_w > 1 ? " in blocks along depth x rows x columns" : "", text, limit / (1 << 30),
            source);
  if (limit <= 0 || m.total <= limit) return;
  char fix[1024] = "";
  const char *machine;
  double have = machine_memory(&machine);
  if (c->max_memory_gib > 0 && have >= m.total) /* the user's limit is below what the machine has */
    snprintf(fix, sizeof fix, "max_memory_gib >= %.2f (this machine: %.2f GiB, %s), or ",
             ceil(m.total / (1 << 30) * 100) / 100, have / (1 << 30), machine);
  suggest(c, u, &l, limit, fix, sizeof fix);
  sf_config_refuse2(c, c->max_memory_gib > 0 ? "max_memory_gib" : "problem_scale", "unet_base_channels",
                    "the memory plan needs %.2f GiB per rank (activations %.2f GiB, activation gradients %.2f GiB, "
                    "parameters + gradients + optimizer state %.2f GiB, sample buffers %.2f GiB), more than the %.2f "
                    "GiB limit (%s); expected %s",
                    m.total / (1 << 30), m.activations / (1 << 30), m.act_grads / (1 << 30),
                    (m.params + m.grads + m.optimizer) / (1 << 30), m.samples / (1 << 30), limit / (1 << 30),
                    source, fix);
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
  if (sf_runtime_check_config(c, &key, err, sizeof err) != 0) sf_config_refuse(c, key, "%s", err);
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

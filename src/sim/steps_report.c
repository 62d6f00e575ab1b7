/* The report of timed training steps (scaffold/steps.h): a human summary (step times, samples/s, busy share
 * per worker, bytes per bus) and one "SFSTEPS {json}" line that `scaffold simulate` and the validation
 * script read. Simulated runs say so on every line, and print no loss: SimGrid does not compute. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "scaffold/common.h"
#include "scaffold/kernel_choices.h"
#include "scaffold/kernel_tuning_setup.h"
#include "scaffold/steps.h"

static double busy_share(const sf_steps_result *r, int w)
{
  return r->stats.wall_s > 0 ? r->stats.worker[w].busy_s / r->stats.wall_s : 0.0;
}

void sf_steps_print(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r, FILE *out)
{
  const char *what = o->simulated ? "predicted" : "measured";
  fprintf(out, "%s on %s: problem_scale %ld, unet_base_channels %ld, local batch %d, %d slab(s), %ld tasks per step\n",
          o->simulated ? "simulation (StarPU SimGrid)" : "real run", o->machine ? o->machine : "this machine",
          c->problem_scale, c->unet_base_channels, r->batch, r->nslabs, r->tasks_per_step);
  fprintf(out, "runtime: %s\n", r->runtime);
  char choices[1024], tdesc[PATH_MAX + 512];
  if (o->simulated)
    fprintf(out, "CPU kernel variants: not run (simulated: StarPU replays the perfmodels of the machine class)\n");
  else
    fprintf(out, "CPU kernel variants run in the timed steps (calls per entry): %s\n%s\n",
            sf_kernel_choices_describe(choices, sizeof choices), sf_kernel_tuning_describe(tdesc, sizeof tdesc));
  fprintf(out, "%s step time: median %.6f s (min %.6f, max %.6f over %d timed steps after %d warm-up)\n", what,
          r->median_s, r->min_s, r->max_s, o->steps, o->warmup);
  fprintf(out, "%s throughput: %.4g samples/s, %.4g GFLOP/s (%.4g GFLOP per step)\n", what, r->samples_per_s,
          r->median_s > 0 ? r->step_gflop / r->median_s : 0.0, r->step_gflop);
  if (!o->simulated)
    fprintf(out, "main thread CPU time: %.6f s per step (submission, scheduling decisions made at submission, host work)\n",
            r->main_cpu_s);
  if (r->stats.nworkers == 0)
    fprintf(out, "busy share per worker: not recorded (it comes from StarPU's task profiling; runtime %s)\n",
            c->runtime);
  else
    fprintf(out, "busy share per worker over the timed steps (%.6f s):\n", r->stats.wall_s);
  for (int w = 0; w < r->stats.nworkers; w++)
    fprintf(out, "  %-14s %-6s %8ld tasks  %6.1f %%\n", r->stats.worker[w].name, r->stats.worker[w].kind,
            r->stats.worker[w].tasks, 100.0 * busy_share(r, w));
  fprintf(out, "bytes moved between memory nodes: %.3f MiB in %ld transfers\n",
          (double)r->stats.transfer_bytes / (1024.0 * 1024.0), r->stats.transfer_count);
  for (int b = 0; b < r->stats.nbuses; b++)
    fprintf(out, "  %-10s -> %-10s %12.3f MiB %8ld transfers\n", r->stats.bus[b].src, r->stats.bus[b].dst,
            (double)r->stats.bus[b].bytes / (1024.0 * 1024.0), r->stats.bus[b].count);
  if (o->simulated)
    fprintf(out, "note: simulated: codelets are not executed (StarPU sleeps for their perfmodel times), so no data "
                 "value, loss or Dice exists; only times, placements and transfers are predicted\n");
}

/* The SFSTEPS object, key order as the readers expect it (scaffold simulate, scripts/validate-sim) */
static cJSON *steps_json(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r)
{
  cJSON *j = cJSON_CreateObject();
  cJSON_AddBoolToObject(j, "simulated", o->simulated);
  cJSON_AddStringToObject(j, "machine", o->machine ? o->machine : "");
  cJSON_AddNumberToObject(j, "problem_scale", (double)c->problem_scale);
  cJSON_AddNumberToObject(j, "unet_base_channels", (double)c->unet_base_channels);
  cJSON_AddNumberToObject(j, "batch", r->batch);
  cJSON_AddNumberToObject(j, "nslabs", r->nslabs);
  cJSON_AddStringToObject(j, "scheduler", c->scheduler ? c->scheduler : "");
  cJSON_AddStringToObject(j, "runtime", r->runtime);
  cJSON_AddNumberToObject(j, "warmup", o->warmup);
  cJSON_AddNumberToObject(j, "steps", o->steps);
  cJSON_AddNumberToObject(j, "median_step_s", r->median_s);
  cJSON_AddNumberToObject(j, "min_step_s", r->min_s);
  cJSON_AddNumberToObject(j, "max_step_s", r->max_s);
  cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
  cJSON_AddNumberToObject(j, "step_gflop", r->step_gflop);
  cJSON_AddNumberToObject(j, "tasks_per_step", (double)r->tasks_per_step);
  cJSON_AddNumberToObject(j, "main_thread_cpu_s", r->main_cpu_s);
  cJSON_AddItemToObject(j, "step_s", cJSON_CreateDoubleArray(r->step_s, o->steps));
  cJSON_AddNumberToObject(j, "traced_s", r->stats.wall_s);
  cJSON *workers = cJSON_AddArrayToObject(j, "workers");
  for (int w = 0; w < r->stats.nworkers; w++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "name", r->stats.worker[w].name);
    cJSON_AddStringToObject(x, "kind", r->stats.worker[w].kind);
    cJSON_AddNumberToObject(x, "tasks", (double)r->stats.worker[w].tasks);
    cJSON_AddNumberToObject(x, "busy_s", r->stats.worker[w].busy_s);
    cJSON_AddNumberToObject(x, "busy_share", busy_share(r, w));
    cJSON_AddItemToArray(workers, x);
  }
  cJSON_AddNumberToObject(j, "transfer_bytes", (double)r->stats.transfer_bytes);
  cJSON_AddNumberToObject(j, "transfer_count", (double)r->stats.transfer_count);
  cJSON *buses = cJSON_AddArrayToObject(j, "buses");
  for (int b = 0; b < r->stats.nbuses; b++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "src", r->stats.bus[b].src);
    cJSON_AddStringToObject(x, "dst", r->stats.bus[b].dst);
    cJSON_AddNumberToObject(x, "bytes", (double)r->stats.bus[b].bytes);
    cJSON_AddNumberToObject(x, "count", (double)r->stats.bus[b].count);
    cJSON_AddItemToArray(buses, x);
  }
  cJSON_AddNumberToObject(j, "rank", r->rank);
  cJSON_AddNumberToObject(j, "ranks", r->ranks);
  cJSON_AddNumberToObject(j, "replicas", r->replicas);
  cJSON_AddNumberToObject(j, "shards", r->shards);
  int nr = r->ranks < SF_STEPS_MAX_RANKS ? r->ranks : SF_STEPS_MAX_RANKS;
  cJSON_AddItemToObject(j, "sent_per_step", cJSON_CreateDoubleArray(r->sent_per_step, nr));
  /* what the timed steps' CPU entries ran; empty when simulated (no codelet executes) */
  cJSON_AddItemToObject(j, "kernel_choices", sf_kernel_choices_json());
  if (!o->simulated) cJSON_AddItemToObject(j, "kernel_tuning", sf_kernel_tuning_json());
  return j;
}

void sf_steps_print_json(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r, FILE *out)
{
  cJSON *j = steps_json(c, o, r);
  char *text = cJSON_PrintUnformatted(j);
  if (!text) SF_ABORT("out of memory printing the SFSTEPS line");
  fprintf(out, "SFSTEPS %s\n", text);
  free(text);
  cJSON_Delete(j);
}

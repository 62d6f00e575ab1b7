/* The report of timed training steps (scaffold/steps.h): a human summary (step times, samples/s, busy share
 * per worker, bytes per bus) and one "SFSTEPS {json}" line that `scaffold simulate` and the validation
 * script read. Simulated runs say so on every line, and print no loss: SimGrid does not compute. */
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/steps.h"

static void json_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

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

void sf_steps_print_json(const sf_config *c, const sf_steps_opts *o, const sf_steps_result *r, FILE *out)
{
  fprintf(out, "SFSTEPS {\"simulated\": %s, \"machine\": ", o->simulated ? "true" : "false");
  json_string(out, o->machine ? o->machine : "");
  fprintf(out, ", \"problem_scale\": %ld, \"unet_base_channels\": %ld, \"batch\": %d, \"nslabs\": %d, "
               "\"scheduler\": ", c->problem_scale, c->unet_base_channels, r->batch, r->nslabs);
  json_string(out, c->scheduler ? c->scheduler : "");
  fputs(", \"runtime\": ", out);
  json_string(out, r->runtime);
  fprintf(out, ", \"warmup\": %d, \"steps\": %d, \"median_step_s\": %.9g, \"min_step_s\": %.9g, \"max_step_s\": %.9g, "
               "\"samples_per_s\": %.9g, \"step_gflop\": %.9g, \"tasks_per_step\": %ld, \"main_thread_cpu_s\": %.9g, "
               "\"step_s\": [",
          o->warmup, o->steps, r->median_s, r->min_s, r->max_s, r->samples_per_s, r->step_gflop, r->tasks_per_step,
          r->main_cpu_s);
  for (int i = 0; i < o->steps; i++) fprintf(out, "%s%.9g", i ? ", " : "", r->step_s[i]);
  fprintf(out, "], \"traced_s\": %.9g, \"workers\": [", r->stats.wall_s);
  for (int w = 0; w < r->stats.nworkers; w++) {
    fputs(w ? ", {\"name\": " : "{\"name\": ", out);
    json_string(out, r->stats.worker[w].name);
    fprintf(out, ", \"kind\": \"%s\", \"tasks\": %ld, \"busy_s\": %.9g, \"busy_share\": %.6f}", r->stats.worker[w].kind,
            r->stats.worker[w].tasks, r->stats.worker[w].busy_s, busy_share(r, w));
  }
  fprintf(out, "], \"transfer_bytes\": %lld, \"transfer_count\": %ld, \"buses\": [", r->stats.transfer_bytes,
          r->stats.transfer_count);
  for (int b = 0; b < r->stats.nbuses; b++) {
    fputs(b ? ", {\"src\": " : "{\"src\": ", out);
    json_string(out, r->stats.bus[b].src);
    fputs(", \"dst\": ", out);
    json_string(out, r->stats.bus[b].dst);
    fprintf(out, ", \"bytes\": %lld, \"count\": %ld}", r->stats.bus[b].bytes, r->stats.bus[b].count);
  }
  fputs("]}\n", out);
}

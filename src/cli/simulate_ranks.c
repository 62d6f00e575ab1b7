/* The multi-rank outputs of `scaffold simulate --ranks` (simulate.h): one run's per-rank report (step time,
 * CPU busy share, bytes sent and received per step), and a scaling study over rank counts (weak or strong)
 * as scaling.md, scaling.csv and a gnuplot figure of the efficiency against the ranks. Every figure is
 * labelled predicted, with the class and the network. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/shell.h"
#include "simulate.h"

void sim_print_ranks(const sim_plan *p, const sim_outcome *o, FILE *f)
{
  fprintf(f, "predicted on %d ranks (%d replica(s) x %d shard(s)), class %s, network %s: step %.6f s (slowest rank), "
          "%.4g samples/s%s\n", o->ranks, o->replicas, o->shards, p->cls->name, p->net->name, o->step_s,
          o->samples_per_s, p->stale ? SIM_STALE_MARK : "");
  fprintf(f, "  rank  step (s)   CPU busy  sent per step (B)  received per step (B)\n");
  for (int r = 0; r < o->ranks; r++)
    fprintf(f, "  %4d  %9.6f  %7.1f %%  %17.0f  %21.0f\n", r, o->rank_step_s[r], 100 * o->rank_busy_cpu[r],
            o->rank_sent[r], o->rank_recv[r]);
}

static double max_of(const double *v, int n)
{
  double m = 0;
  for (int i = 0; i < n; i++)
    if (v[i] > m) m = v[i];
  return m;
}

static double mean_of(const double *v, int n)
{
  double s = 0;
  for (int i = 0; i < n; i++) s += v[i];
  return n ? s / n : 0;
}

/* Efficiency against the first point: samples/s per rank, relative (weak and strong alike). */
static double efficiency(const sim_outcome *o, const sim_outcome *o0, int r, int r0)
{
  return o->ok && o0->ok && o0->samples_per_s > 0 ? (o->samples_per_s / r) / (o0->samples_per_s / r0) : 0;
}

static void row(FILE *f, int csv, const sim_scaling *s, int i, const sim_outcome *c)
{
  const sim_outcome *o = &c[i];
  int r = s->ranks[i];
  if (!o->ok) {
    if (csv) fprintf(f, "%d,%d,,,,,,,,\"%s\"\n", r, s->local_batch[i], o->why);
    else fprintf(f, "| %d | - | - | %d | failed: %s | | | | | |\n", r, s->local_batch[i], o->why);
    return;
  }
  int n = o->ranks > 0 ? o->ranks : 1;
  double busy = o->rank_busy_cpu ? mean_of(o->rank_busy_cpu, n) : o->busy_cpu;
  double sent = o->rank_sent ? max_of(o->rank_sent, n) : 0, recv = o->rank_recv ? max_of(o->rank_recv, n) : 0;
  double eff = efficiency(o, &c[0], r, s->ranks[0]);
  int shards = o->shards > 0 ? o->shards : 1; /* one rank reports no layout */
  char effs[32] = "- (first point failed)";
  if (c[0].ok) snprintf(effs, sizeof effs, "%.0f %%", 100 * eff);
  if (csv)
    fprintf(f, "%d,%d,%d,%d,%.9g,%.9g,%.6f,%.4f,%.0f,%.0f,\n", r, o->replicas, shards, s->local_batch[i],
            o->step_s, o->samples_per_s, eff, busy, sent, recv);
  else
    fprintf(f, "| %d | %d | %d | %d | %.4g | %.4g | %s | %.0f %% | %.4g MiB | %.4g MiB |\n", r, o->replicas,
            shards, s->local_batch[i], o->step_s, o->samples_per_s, effs, 100 * busy, sent / 1048576.0,
            recv / 1048576.0);
}

static void write_table(FILE *f, int csv, const sim_plan *p, const sim_scaling *s, const sim_outcome *c)
{
  if (csv) {
    fputs("ranks,replicas,shards,local_batch,step_s,samples_per_s,efficiency,busy_cpu,max_sent_per_step_B,"
          "max_recv_per_step_B,why\n", f);
  } else {
    fprintf(f, "Predicted %s scaling (SimGrid simulation, not measured): class %s%s, network %s (%s)%s\n\n",
            s->weak ? "weak" : "strong", p->cls->name, p->cls->derived ? " (derived)" : "", p->net->name,
            p->net->what, p->stale ? " **STALE perfmodels**" : "");
    fputs("| ranks | replicas | shards | local batch | predicted step (s) | predicted samples/s | efficiency | "
          "CPU busy | max sent/rank/step | max received/rank/step |\n|---|---|---|---|---|---|---|---|---|---|\n", f);
  }
  for (int i = 0; i < s->n; i++) row(f, csv, s, i, c);
}

static void write_figure(const sim_plan *p, const sim_scaling *s, const sim_outcome *c)
{
  char *dat = sf_path_join(p->out_dir, "scaling.dat"), *gp = sf_path_join(p->out_dir, "scaling.gp");
  char *png = sf_path_join(p->out_dir, "scaling.png");
  FILE *d = fopen(dat, "w"), *g = fopen(gp, "w");
  if (d)
    for (int i = 0; i < s->n; i++)
      if (c[i].ok) fprintf(d, "%d %.6f\n", s->ranks[i], efficiency(&c[i], &c[0], s->ranks[i], s->ranks[0]));
  if (g)
    fprintf(g, "set terminal pngcairo size 900,500\nset output '%s'\n"
               "set title \"Predicted %s scaling efficiency (SimGrid simulation), class %s, network %s%s\" noenhanced\n"
               "set xlabel 'ranks'\nset ylabel 'predicted efficiency'\nset logscale x 2\nset yrange [0:1.1]\n"
               "set grid\nplot '%s' using 1:2 with linespoints lw 2 title 'predicted'\n",
            png, s->weak ? "weak" : "strong", p->cls->name, p->net->name, p->stale ? " (STALE perfmodels)" : "", dat);
  if (d) fclose(d);
  if (g) fclose(g);
  char cmd[4096], *q = sf_shell_quote(gp);
  snprintf(cmd, sizeof cmd, "gnuplot %s 2>/dev/null", q);
  free(q);
  if (!d || !g || system(cmd) != 0) sf_warn("simulate: scaling figure not drawn (gnuplot missing or failed); %s and %s are written", dat, gp);
  else printf("figure: %s\n", png);
  free(dat);
  free(gp);
  free(png);
}

int sim_write_scaling(const sim_plan *p, const sim_scaling *s, const sim_outcome *cells)
{
  int failed = 0;
  for (int i = 0; i < s->n; i++) failed += !cells[i].ok;
  write_table(stdout, 0, p, s, cells);
  const char *names[2] = {"scaling.md", "scaling.csv"};
  for (int k = 0; k < 2; k++) {
    char *path = sf_path_join(p->out_dir, names[k]);
    FILE *f = fopen(path, "w");
    if (f) {
      write_table(f, k, p, s, cells);
      fclose(f);
    } else sf_warn("simulate: cannot write %s", path);
    printf("%s%s", k ? ", " : "scaling study: ", path);
    free(path);
  }
  printf("\n");
  write_figure(p, s, cells);
  return failed;
}

int sim_parse_ranks(const char *list, const char *scaling, long spatial, long local_batch, sim_scaling *s, char *err,
                    size_t errlen)
{
  memset(s, 0, sizeof *s);
  if (scaling && strcmp(scaling, "weak") && strcmp(scaling, "strong")) {
    snprintf(err, errlen, "--scaling '%s': expected weak or strong", scaling);
    return -1;
  }
  s->weak = !scaling || !strcmp(scaling, "weak");
  const char *p = list;
  while (*p) {
    char *end = NULL;
    long r = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || r < 1 || r > SIM_MAX_RANKS) {
      snprintf(err, errlen, "--ranks '%s': expected rank counts in [1, %d] separated by commas", list, SIM_MAX_RANKS);
      return -1;
    }
    if (s->n == SIM_MAX_POINTS || (s->n && r <= s->ranks[s->n - 1])) {
      snprintf(err, errlen, "--ranks '%s': expected at most %d increasing rank counts", list, SIM_MAX_POINTS);
      return -1;
    }
    if (r % spatial) {
      snprintf(err, errlen, "--ranks %ld: not a multiple of the %ld ranks per volume of the config's dc_num_shards / "
               "spatial_ranks (ranks = replicas x ranks per volume)", r, spatial);
      return -1;
    }
    s->ranks[s->n++] = (int)r;
    p = *end ? end + 1 : end;
  }
  if (s->n == 0 || (s->n > 1 && !scaling)) {
    snprintf(err, errlen, "--ranks '%s': %s", list, s->n ? "several rank counts need --scaling weak|strong" : "empty");
    return -1;
  }
  long global = local_batch * (s->ranks[0] / spatial);
  for (int i = 0; i < s->n; i++) {
    long replicas = s->ranks[i] / spatial, lb = s->weak ? local_batch : global / replicas;
    if (!s->weak && (global % replicas || lb < 1)) {
      snprintf(err, errlen, "--scaling strong: the global batch %ld (local_batch_size %ld x %ld replica(s) at %d ranks) "
               "does not split evenly over the %ld replicas of %d ranks", global, local_batch, s->ranks[0] / spatial,
               s->ranks[0], replicas, s->ranks[i]);
      return -1;
    }
    s->local_batch[i] = (int)lb;
  }
  return 0;
}

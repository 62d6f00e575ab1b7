/* The scheduler study of `scaffold simulate` (simulate.h): predicted samples/s per scheduler x worker mix,
 * printed and written as markdown (study.md), CSV (study.csv, one row per run with the busy shares and
 * the bytes moved) and a gnuplot clustered bar chart (study.dat, study.gp, study.png). Every file names
 * the class (and says "derived" for a derived one) and that the figures are predictions, and, for a class
 * simulated with --allow-stale, that every figure is stale. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/shell.h"
#include "simulate.h"

static void mix_name(const sim_mix *m, char *buf, size_t len)
{
  snprintf(buf, len, "%d:%d:%d", m->ncpu, m->ncuda, m->nopencl);
}

static void write_markdown(FILE *f, const sim_plan *p, char **scheds, int ns, const sim_mix *mixes, int nm,
                           const sim_outcome *cells)
{
  char *label = sim_class_label(p->cls);
  if (p->stale)
    fprintf(f, "**STALE perfmodels** (--allow-stale): %.*s; every figure below was predicted from models of "
               "other kernels (`%s` in the study folder lists them).\n\n", (int)strcspn(p->stale, "\n"), p->stale, "STALE");
  fprintf(f, "Predicted samples/s (StarPU SimGrid simulation, not measured) on class %s; %d timed steps after %d "
             "warm-up; columns are worker mixes ncpu:ncuda:nopencl.\n\n| scheduler |", label, p->steps, p->warmup);
  free(label);
  char mn[64];
  for (int j = 0; j < nm; j++) {
    mix_name(&mixes[j], mn, sizeof mn);
    fprintf(f, " %s |", mn);
  }
  fputs("\n|---|", f);
  for (int j = 0; j < nm; j++) fputs("---:|", f);
  fputc('\n', f);
  for (int i = 0; i < ns; i++) {
    fprintf(f, "| %s |", scheds[i]);
    for (int j = 0; j < nm; j++) {
      const sim_outcome *o = &cells[i * nm + j];
      if (o->ok) fprintf(f, " %.4g%s |", o->samples_per_s, p->stale ? " (stale)" : "");
      else fputs(" failed |", f);
    }
    fputc('\n', f);
  }
  for (int k = 0; k < ns * nm; k++)
    if (!cells[k].ok) fprintf(f, "\nfailed: %s %d:%d:%d: %s", scheds[k / nm], mixes[k % nm].ncpu, mixes[k % nm].ncuda,
                              mixes[k % nm].nopencl, cells[k].why);
  fputc('\n', f);
}

static void csv_busy(FILE *f, double v)
{
  if (v < 0) fputs(",", f);
  else fprintf(f, ",%.4f", v);
}

static int write_csv(const char *path, const sim_plan *p, char **scheds, int ns, const sim_mix *mixes, int nm,
                     const sim_outcome *cells)
{
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fputs("class,derived,predicted,scheduler,ncpu,ncuda,nopencl,ok,step_s,samples_per_s,tasks_per_step,transfer_mib,"
        "busy_cpu,busy_cuda,busy_opencl,why,stale\n", f);
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < nm; j++) {
      const sim_outcome *o = &cells[i * nm + j];
      fprintf(f, "%s,%s,1,%s,%d,%d,%d,%d,", p->cls->name, p->cls->derived ? "1" : "0", scheds[i], mixes[j].ncpu,
              mixes[j].ncuda, mixes[j].nopencl, o->ok);
      if (o->ok) fprintf(f, "%.9g,%.9g,%ld,%.6f", o->step_s, o->samples_per_s, o->tasks, o->transfer_mib);
      else fputs(",,,", f);
      csv_busy(f, o->ok ? o->busy_cpu : -1);
      csv_busy(f, o->ok ? o->busy_cuda : -1);
      csv_busy(f, o->ok ? o->busy_opencl : -1);
      fprintf(f, ",\"%s\",%d\n", o->ok ? "" : o->why, p->stale != NULL);
    }
  return fclose(f);
}

/* study.dat (scheduler rows, one column per mix; '-' for a failed cell) and study.gp; runs gnuplot. */
static void write_figure(const sim_plan *p, char **scheds, int ns, const sim_mix *mixes, int nm,
                         const sim_outcome *cells)
{
  char *dat = sf_path_join(p->out_dir, "study.dat"), *gp = sf_path_join(p->out_dir, "study.gp");
  char *png = sf_path_join(p->out_dir, "study.png"), mn[64];
  FILE *d = fopen(dat, "w"), *g = fopen(gp, "w");
  if (d && g) {
    fputs("scheduler", d);
    for (int j = 0; j < nm; j++) {
      mix_name(&mixes[j], mn, sizeof mn);
      fprintf(d, " \"%s\"", mn);
    }
    fputc('\n', d);
    for (int i = 0; i < ns; i++) {
      fprintf(d, "%s%s", scheds[i], p->stale ? "(stale)" : "");
      for (int j = 0; j < nm; j++)
        if (cells[i * nm + j].ok) fprintf(d, " %.6g", cells[i * nm + j].samples_per_s);
        else fputs(" -", d);
      fputc('\n', d);
    }
    fprintf(g, "set terminal pngcairo size 1100,500\nset output '%s'\nset datafile missing '-'\n"
               "set title \"%sPredicted samples/s (SimGrid simulation, not measured), class %s%s\" noenhanced\n"
               "set ylabel 'predicted samples/s'\nset style data histogram\nset style histogram cluster gap 1\n"
               "set style fill solid 0.8 border -1\nset xtics rotate by -30 noenhanced\n"
               "set key outside right title 'ncpu:ncuda:nopencl'\nplot",
            png, p->stale ? "STALE perfmodels (calibrated for other kernels): " : "", p->cls->name,
            p->cls->derived ? " (derived: see study.md)" : "");
    for (int j = 0; j < nm; j++) fprintf(g, "%s '%s' using %d:xtic(1) title columnheader(%d)", j ? "," : "", dat, j + 2, j + 2);
    fputc('\n', g);
  }
  if (d) fclose(d);
  if (g) fclose(g);
  char cmd[4096], *q = sf_shell_quote(gp);
  snprintf(cmd, sizeof cmd, "gnuplot %s 2>/dev/null", q);
  free(q);
  int rc = d && g ? system(cmd) : -1;
  if (rc != 0) sf_warn("simulate: study figure not drawn (gnuplot missing or failed); %s and %s are written", dat, gp);
  else printf("figure: %s\n", png);
  free(dat);
  free(gp);
  free(png);
}

int sim_write_study(const sim_plan *p, char **scheds, int ns, const sim_mix *mixes, int nm, sim_outcome *cells)
{
  int failed = 0;
  for (int k = 0; k < ns * nm; k++) failed += !cells[k].ok;
  write_markdown(stdout, p, scheds, ns, mixes, nm, cells);
  char *md = sf_path_join(p->out_dir, "study.md"), *csv = sf_path_join(p->out_dir, "study.csv");
  FILE *f = fopen(md, "w");
  if (f) {
    write_markdown(f, p, scheds, ns, mixes, nm, cells);
    fclose(f);
  } else sf_warn("simulate: cannot write %s", md);
  if (write_csv(csv, p, scheds, ns, mixes, nm, cells) != 0) sf_warn("simulate: cannot write %s", csv);
  printf("study: %s, %s\n", md, csv);
  write_figure(p, scheds, ns, mixes, nm, cells);
  free(md);
  free(csv);
  return failed;
}

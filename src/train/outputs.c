/* The run directory of `scaffold benchmark` (spec §7.1-7.2): its fresh timestamped name, the
 * config copies (the -c file, config.yaml, overrides.yaml), restart.sh, train_stats.csv with
 * upstream's exact header and Python-str() values, and the three figures drawn by gnuplot
 * (skipped with a warning when gnuplot is missing). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/shell.h"
#include "scaffold/trainer.h"

extern char **environ;

/* ---- run directory ---- */

char *sf_run_dir_create(const char *base, const char *job_name, char *err, size_t errlen)
{
  if (sf_mkdir_p(base) != 0) {
    snprintf(err, errlen, "cannot create base_run_dir %s: %s", base, strerror(errno));
    return NULL;
  }
  char ts[32];
  time_t now = time(NULL);
  struct tm tmv;
  localtime_r(&now, &tmv);
  strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tmv);
  for (int k = 0; k < 10000; k++) {
    char name[512];
    if (k == 0) snprintf(name, sizeof name, "%s_%s", job_name, ts);
    else snprintf(name, sizeof name, "%s_%s-%d", job_name, ts, k);
    char *dir = sf_path_join(base, name);
    if (mkdir(dir, 0777) == 0) return dir;
    int e = errno;
    free(dir);
    if (e != EEXIST) {
      snprintf(err, errlen, "cannot create run directory %s/%s: %s", base, name, strerror(e));
      return NULL;
    }
  }
  snprintf(err, errlen, "cannot find a free run-directory name under %s", base);
  return NULL;
}

static const char *base_name(const char *p)
{
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static int copy_file(const char *src, const char *dst, char *err, size_t errlen)
{
  size_t len = 0;
  char *data = sf_read_file(src, &len);
  if (!data) {
    snprintf(err, errlen, "cannot read %s: %s", src, strerror(errno));
    return -1;
  }
  int rc = sf_write_file_atomic(dst, data, len);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", dst, strerror(errno));
  free(data);
  return rc;
}

int sf_write_restart_script(const char *run_dir, const char *scaffold_exe, char *err, size_t errlen)
{
  char absdir[PATH_MAX], cwd[PATH_MAX];
  if (!realpath(run_dir, absdir)) {
    snprintf(err, errlen, "cannot resolve run directory %s: %s", run_dir, strerror(errno));
    return -1;
  }
  if (!getcwd(cwd, sizeof cwd)) {
    snprintf(err, errlen, "cannot get the working directory: %s", strerror(errno));
    return -1;
  }
  char *qdir = sf_shell_quote(absdir), *qexe = sf_shell_quote(scaffold_exe), *qcwd = sf_shell_quote(cwd);
  char launch[128] = ""; /* a distributed run resumes with as many ranks (upstream: torchrun-hpc -n) */
  if (sf_dist_size() > 1) snprintf(launch, sizeof launch, "${MPIRUN:-mpirun} -np %d ", sf_dist_size());
  size_t n = strlen(qdir) + strlen(qexe) + strlen(qcwd) + 1024;
  char *text = sf_malloc(n, "restart.sh");
  snprintf(text, n,
           "#!/bin/sh\n"
           "# Resumes this run from checkpoints/checkpoint_last.bin (else checkpoint_best.bin), or starts it\n"
           "# over here when it stopped before its first checkpoint, in the directory it was started from\n"
           "# so that relative paths in config.yaml resolve the same.\n"
           "# Extra arguments are passed on, e.g. --set epochs=40.\n"
           "RUN_DIR=%s\n"
           "cd %s || exit 1\n"
           "exec %s%s benchmark --config \"$RUN_DIR/config.yaml\" --restart --run-dir \"$RUN_DIR\" \"$@\"\n",
           qdir, qcwd, launch, qexe);
  char *path = sf_path_join(run_dir, "restart.sh");
  int rc = sf_write_file_atomic(path, text, strlen(text));
  if (rc == 0 && chmod(path, 0755) != 0) rc = -1;
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  free(path);
  free(text);
  free(qdir);
  free(qexe);
  free(qcwd);
  return rc;
}

int sf_run_dir_write_configs(const sf_config *c, const char *run_dir, int copy_source, char *err, size_t errlen)
{
  if (copy_source && c->source_file) {
    char *dst = sf_path_join(run_dir, base_name(c->source_file));
    /* a source named config.yaml/overrides.yaml is superseded by ours below */
    int rc = copy_file(c->source_file, dst, err, errlen);
    free(dst);
    if (rc != 0) return -1;
  }
  char *p = sf_path_join(run_dir, "config.yaml");
  int rc = sf_config_write_yaml(c, p);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
  free(p);
  if (rc != 0) return -1;
  p = sf_path_join(run_dir, "overrides.yaml");
  rc = sf_config_write_overrides_yaml(c, p);
  if (rc != 0) snprintf(err, errlen, "cannot write %s: %s", p, strerror(errno));
  free(p);
  if (rc != 0) return -1;
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) snprintf(exe, sizeof exe, "scaffold");
  else exe[k] = '\0';
  return sf_write_restart_script(run_dir, exe, err, errlen);
}

/* ---- train_stats.csv ---- */

void sf_epoch_row_format(const sf_epoch_row *r, char *buf, size_t len)
{
  char f[7][64];
  const double v[7] = {r->epoch_loss, r->overall_loss, r->val_loss_epoch, r->val_loss_avg,
                       r->train_dice, r->val_dice, r->epoch_duration};
  for (int i = 0; i < 7; i++) sf_format_pyfloat(v[i], f[i], sizeof f[i]);
  snprintf(buf, len, "%ld,%s,%s,%s,%s,%s,%s,%s,%ld,%ld", r->epoch, f[0], f[1], f[2], f[3], f[4], f[5], f[6],
           r->optimizer_steps, r->total_optimizer_steps);
}

sf_epoch_row sf_epoch_row_partial(long epoch, double loss_sum, double dice_sum, double nsamp, double seconds,
                                  long optimizer_steps, long total_optimizer_steps)
{
  return (sf_epoch_row){.epoch = epoch,
                        .epoch_loss = loss_sum,
                        .overall_loss = nsamp > 0 ? loss_sum / nsamp : 0,
                        .val_loss_epoch = NAN,
                        .val_loss_avg = NAN,
                        .train_dice = nsamp > 0 ? dice_sum / nsamp : 0,
                        .val_dice = NAN,
                        .epoch_duration = seconds,
                        .optimizer_steps = optimizer_steps,
                        .total_optimizer_steps = total_optimizer_steps};
}

int sf_epoch_row_is_partial(const sf_epoch_row *r) { return isnan(r->val_dice); }

int sf_epoch_row_parse(const char *line, sf_epoch_row *r)
{
  double v[10];
  const char *p = line;
  for (int i = 0; i < 10; i++) {
    char *end;
    errno = 0;
    v[i] = strtod(p, &end);
    if (end == p) return -1;
    p = end;
    if (i < 9) {
      if (*p != ',') return -1;
      p++;
    }
  }
  while (*p == '\r' || *p == '\n' || *p == ' ') p++;
  if (*p) return -1;
  r->epoch = (long)v[0];
  r->epoch_loss = v[1];
  r->overall_loss = v[2];
  r->val_loss_epoch = v[3];
  r->val_loss_avg = v[4];
  r->train_dice = v[5];
  r->val_dice = v[6];
  r->epoch_duration = v[7];
  r->optimizer_steps = (long)v[8];
  r->total_optimizer_steps = (long)v[9];
  return 0;
}

int sf_stats_csv_create(const char *path)
{
  static const char hdr[] = SF_TRAIN_STATS_HEADER "\n";
  return sf_write_file_atomic(path, hdr, sizeof hdr - 1);
}

/* A failed append (full disk, file-size limit) is cut back to the previous size, so the file never
 * keeps half a row; a row torn by a crash is dropped when the file is loaded (below). */
int sf_stats_csv_append(const char *path, const sf_epoch_row *r)
{
  char line[1024];
  sf_epoch_row_format(r, line, sizeof line);
  FILE *f = fopen(path, "a");
  if (!f) return -1;
  struct stat st;
  off_t before = fstat(fileno(f), &st) == 0 ? st.st_size : -1;
  int rc = fprintf(f, "%s\n", line) < 0 ? -1 : 0;
  int e = rc ? errno : 0;
  if (fflush(f) != 0 && !rc) rc = -1, e = errno;
  if (rc == 0 && fsync(fileno(f)) != 0) rc = -1, e = errno;
  if (fclose(f) != 0 && !rc) rc = -1, e = errno;
  if (rc != 0 && before >= 0 && truncate(path, before) != 0) /* after fclose: nothing buffered is left */
    sf_warn("cannot cut %s back to its last complete row (%lld bytes): %s", path, (long long)before, strerror(errno));
  if (rc) errno = e ? e : EIO;
  return rc;
}

int sf_stats_csv_load(const char *path, sf_epoch_row **rows, size_t *n, char *err, size_t errlen)
{
  *rows = NULL;
  *n = 0;
  if (!sf_file_exists(path)) return 0;
  char *text = sf_read_file(path, NULL);
  if (!text) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  /* A last line without its '\n' is a row torn by a crash in the middle of an append (the
   * append is one small write, made durable before the epoch's checkpoint): it is dropped, and
   * the resume that loads the file rewrites it without that row. */
  size_t tlen = strlen(text);
  if (tlen && text[tlen - 1] != '\n') {
    char *last = strrchr(text, '\n');
    if (last) {
      sf_warn("%s: dropping an incomplete last line '%.60s' (a write interrupted by a crash)", path, last + 1);
      last[1] = '\0';
    }
  }
  size_t cap = 16, k = 0;
  sf_epoch_row *out = sf_malloc(cap * sizeof *out, "train_stats rows");
  int lineno = 0, rc = 0;
  for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    size_t L = strlen(line);
    if (L && line[L - 1] == '\r') line[--L] = '\0';
    if (lineno == 1) {
      if (strcmp(line, SF_TRAIN_STATS_HEADER) != 0) {
        snprintf(err, errlen, "%s:1: unexpected header '%s' (expected '%s')", path, line, SF_TRAIN_STATS_HEADER);
        rc = -1;
        break;
      }
      continue;
    }
    if (!L) continue;
    if (k == cap) {
      cap *= 2;
      sf_epoch_row *bigger = sf_malloc(cap * sizeof *bigger, "train_stats rows");
      memcpy(bigger, out, k * sizeof *out);
      free(out);
      out = bigger;
    }
    if (sf_epoch_row_parse(line, &out[k]) != 0) {
      snprintf(err, errlen, "%s:%d: cannot parse row '%s' (expected 10 comma-separated numbers)", path, lineno, line);
      rc = -1;
      break;
    }
    k++;
  }
  free(text);
  if (rc != 0) {
    free(out);
    return -1;
  }
  *rows = out;
  *n = k;
  return 0;
}

int sf_stats_csv_truncate(const char *path, long start_epoch, sf_epoch_row **rows, size_t *n, char *err,
                          size_t errlen)
{
  sf_epoch_row *all;
  size_t nall;
  if (sf_stats_csv_load(path, &all, &nall, err, errlen) != 0) return -1;
  size_t keep = 0;
  while (keep < nall && all[keep].epoch < start_epoch) keep++; /* upstream: cut at the first row >= start */
  size_t cap = sizeof SF_TRAIN_STATS_HEADER + 8 + keep * 1024;
  char *text = sf_malloc(cap, "train_stats text");
  size_t len = (size_t)snprintf(text, cap, "%s\n", SF_TRAIN_STATS_HEADER);
  for (size_t i = 0; i < keep; i++) {
    char line[1024];
    sf_epoch_row_format(&all[i], line, sizeof line);
    len += (size_t)snprintf(text + len, cap - len, "%s\n", line);
  }
  int rc = sf_write_file_atomic(path, text, len);
  if (rc != 0) snprintf(err, errlen, "cannot rewrite %s: %s", path, strerror(errno));
  free(text);
  if (rc != 0) {
    free(all);
    return -1;
  }
  *rows = all;
  *n = keep;
  return 0;
}

/* ---- figures ---- */

static int in_path(const char *prog)
{
  const char *path = getenv("PATH");
  if (!path) return 0;
  char *dup = sf_strdup(path);
  int found = 0;
  for (char *save = NULL, *d = strtok_r(dup, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
    char *p = sf_path_join(*d ? d : ".", prog);
    found = access(p, X_OK) == 0;
    free(p);
  }
  free(dup);
  return found;
}

/* Runs gnuplot with args (NULL-terminated after "gnuplot"), stdin/stdout from /dev/null, stderr
 * to errfile (or /dev/null). Returns its exit status, or -1. */
static int run_gnuplot(char *const argv[], const char *errfile)
{
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, errfile ? errfile : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *sf_gnuplot_png_terminal(void)
{
  static int probed;
  static const char *term;
  if (probed) return term;
  probed = 1;
  if (!in_path("gnuplot")) return term = NULL;
  char *cairo[] = {"gnuplot", "-e", "set terminal pngcairo", NULL};
  if (run_gnuplot(cairo, NULL) == 0) return term = "pngcairo";
  char *png[] = {"gnuplot", "-e", "set terminal png", NULL};
  if (run_gnuplot(png, NULL) == 0) return term = "png";
  return term = NULL;
}

/* gnuplot string literal: double-quoted with backslash escapes */
static void gp_quote(const char *s, char *buf, size_t len)
{
  size_t k = 0;
  if (len < 3) return;
  buf[k++] = '"';
  for (; *s && k + 3 < len; s++) {
    if (*s == '"' || *s == '\\') buf[k++] = '\\';
    buf[k++] = *s;
  }
  buf[k++] = '"';
  buf[k] = '\0';
}

int sf_write_figures(const sf_config *c, const char *run_dir, char *err, size_t errlen)
{
  const char *term = sf_gnuplot_png_terminal();
  if (!term) {
    snprintf(err, errlen, "gnuplot (with a png or pngcairo terminal) not found in PATH");
    return 1;
  }
  char *csv = sf_path_join(run_dir, "train_stats.csv");
  sf_epoch_row *rows = NULL;
  size_t n = 0;
  if (sf_stats_csv_load(csv, &rows, &n, err, errlen) != 0) {
    free(csv);
    return -1;
  }
  free(rows);
  if (n == 0) {
    snprintf(err, errlen, "train_stats.csv has no rows yet");
    free(csv);
    return 1;
  }
  char *figdir = sf_path_join(run_dir, "figures");
  if (sf_mkdir_p(figdir) != 0) {
    snprintf(err, errlen, "cannot create %s: %s", figdir, strerror(errno));
    free(figdir);
    free(csv);
    return -1;
  }
  char qcsv[PATH_MAX + 8], qout[3][PATH_MAX + 8], title[128];
  gp_quote(csv, qcsv, sizeof qcsv);
  static const char *const names[3] = {"train_loss.png", "val_dice.png", "val_loss.png"};
  for (int i = 0; i < 3; i++) {
    char *p = sf_path_join(figdir, names[i]);
    gp_quote(p, qout[i], sizeof qout[i]);
    free(p);
  }
  snprintf(title, sizeof title, "v=%ld, c=%ld, u=%ld", c->vol_size, c->n_categories, c->unet_layers);
  /* 6 x 4 inches at 300 dpi, as upstream's matplotlib figures */
  const int cairo = !strcmp(term, "pngcairo");
  size_t cap = 4096 + 6 * sizeof qcsv; /* the text, the CSV path three times and the three figure paths */
  char *gp = sf_malloc(cap, "gnuplot script");
  int len = snprintf(gp, cap,
           "set terminal %s size 1800,1200 noenhanced %s\n"
           "set datafile separator ','\n"
           "%s"
           "set offsets graph 0.02, graph 0.02, graph 0.05, graph 0.05\n"
           "set title \"%s\"\n"
           "set xlabel 'epoch'\n"
           "set grid\n"
           "set key off\n"
           "set output %s\n"
           "set logscale y\n"
           "set ylabel 'train loss (overall_loss)'\n"
           "plot %s skip 1 using 1:3 with linespoints lw 3 pt 7\n"
           "unset logscale y\n"
           "set output %s\n"
           "set ylabel 'validation Dice (hard, foreground)'\n"
           "plot %s skip 1 using 1:7 with linespoints lw 3 pt 7\n"
           "set output %s\n"
           "set ylabel 'validation loss (val_loss_avg)'\n"
           "plot %s skip 1 using 1:5 with linespoints lw 3 pt 7\n"
           "set output\n",
           term, cairo ? "font 'sans,28' linewidth 2" : "font 'sans' 28", n <= 20 ? "set xtics 1\n" : "", title, qout[0], qcsv, qout[1], qcsv,
           qout[2], qcsv);
  SF_ASSERT(len > 0 && (size_t)len < cap);
  char *script = sf_path_join(figdir, ".plot.gp"), *errfile = sf_path_join(figdir, ".gnuplot.err");
  int rc = sf_write_file_atomic(script, gp, strlen(gp));
  if (rc != 0) {
    snprintf(err, errlen, "cannot write %s: %s", script, strerror(errno));
  } else {
    char *argv[] = {"gnuplot", script, NULL};
    int st = run_gnuplot(argv, errfile);
    if (st != 0) {
      char *msg = sf_read_file(errfile, NULL);
      if (msg) {
        char *nl = strchr(msg, '\n');
        if (nl && nl[1]) *nl = ' ';
      }
      snprintf(err, errlen, "gnuplot failed (status %d) on %s: %.300s", st, script, msg ? msg : "");
      free(msg);
      rc = -1;
    } else {
      unlink(script);
    }
  }
  unlink(errfile);
  free(script);
  free(errfile);
  free(gp);
  free(figdir);
  free(csv);
  return rc;
}

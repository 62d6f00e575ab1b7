/* Inspection tool for the training tests (tests/train/test_*.sh): checkpoints, train_stats.csv,
 * config.yaml, trace.json and result JSON files, with messages that say what differed.
 *   train_tool ckpt-info FILE                 state as key=value; exit 0 OK, 3 corrupt, 4 mismatch, 5 other
 *   train_tool ckpt-cmp A B                   bitwise params/m/v and state counters; exit 1 on a difference
 *   train_tool csv-check FILE [MIN_ROWS]      exact header, 10 numeric fields, epochs 1..n; prints rows=N
 *   train_tool csv-converged FILE TARGET      last row val_dice >= TARGET, every earlier row below it
 *   train_tool csv-cmp A B                    same rows except epoch_duration (bitwise via the text)
 *   train_tool config-get FILE KEY...         loads a config YAML strictly and prints KEY=VALUE
 *   train_tool trace-check FILE NWORKERS      Chrome trace: thread names, X events on workers
 *   train_tool json-get FILE a.b.c            prints a number/string/bool found at that path */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "scaffold/trainer.h"

static int ckpt_load(const char *path, sf_ckpt_state *s, float **p, float **m, float **v)
{
  char err[2048];
  sf_ckpt_status st = sf_checkpoint_read(path, NULL, s, NULL, NULL, NULL, err, sizeof err);
  if (st != SF_CKPT_OK) {
    fprintf(stderr, "%s\n", err);
    return st;
  }
  size_t n = (size_t)s->topo.nparams;
  *p = sf_malloc(n * 4 + 4, "p");
  *m = sf_malloc(n * 4 + 4, "m");
  *v = sf_malloc(n * 4 + 4, "v");
  st = sf_checkpoint_read(path, &s->topo, s, *p, *m, *v, err, sizeof err);
  if (st != SF_CKPT_OK) {
    fprintf(stderr, "%s\n", err);
    free(*p), free(*m), free(*v);
    *p = *m = *v = NULL;
  }
  return st;
}

static int ckpt_info(const char *path)
{
  sf_ckpt_state s;
  char err[2048];
  sf_ckpt_status st = sf_checkpoint_read(path, NULL, &s, NULL, NULL, NULL, err, sizeof err);
  if (st != SF_CKPT_OK) {
    fprintf(stderr, "%s\n", err);
    return st == SF_CKPT_CORRUPT ? 3 : st == SF_CKPT_MISMATCH ? 4 : 5;
  }
  printf("epoch=%ld\nglobal_step=%ld\ntotal_optimizer_steps=%ld\nsched_steps=%ld\nval_dice=%.17g\n"
         "val_loss_avg=%.17g\nbest_val_loss=%.17g\npartial_epoch=%ld\npartial_steps=%ld\nnparams=%llu\n"
         "base_channels=%d\n",
         s.epoch, s.global_step, s.total_optimizer_steps, s.sched_steps, s.val_dice, s.val_loss_avg, s.best_val_loss,
         s.partial_epoch, s.partial_steps, (unsigned long long)s.topo.nparams, s.topo.base_channels);
  return 0;
}

static int ckpt_cmp(const char *a, const char *b)
{
  sf_ckpt_state sa, sb;
  float *pa = NULL, *ma = NULL, *va = NULL, *pb = NULL, *mb = NULL, *vb = NULL;
  int bad = 0, rc = 1;
  if (ckpt_load(a, &sa, &pa, &ma, &va) != 0 || ckpt_load(b, &sb, &pb, &mb, &vb) != 0) {
    rc = 2;
    goto out;
  }
#define CMPL(f)                                                                          \
  if (sa.f != sb.f) {                                                                    \
    fprintf(stderr, "state %s differs: %ld vs %ld\n", #f, (long)sa.f, (long)sb.f);       \
    bad++;                                                                               \
  }
  CMPL(epoch) CMPL(global_step) CMPL(total_optimizer_steps) CMPL(sched_steps) CMPL(partial_epoch)
  CMPL(partial_steps)
  if (memcmp(&sa.val_dice, &sb.val_dice, 8) || memcmp(&sa.val_loss_avg, &sb.val_loss_avg, 8)) {
    fprintf(stderr, "state val_dice/val_loss_avg differ: %.17g/%.17g vs %.17g/%.17g\n", sa.val_dice, sa.val_loss_avg,
            sb.val_dice, sb.val_loss_avg);
    bad++;
  }
  if (sa.topo.nparams != sb.topo.nparams) {
    fprintf(stderr, "parameter counts differ: %llu vs %llu\n", (unsigned long long)sa.topo.nparams,
            (unsigned long long)sb.topo.nparams);
    goto out;
  }
  size_t n = (size_t)sa.topo.nparams;
  const float *xa[3] = {pa, ma, va}, *xb[3] = {pb, mb, vb};
  static const char *const names[3] = {"params", "Adam m", "Adam v"};
  for (int k = 0; k < 3; k++) {
    size_t ndiff = 0, first = 0;
    double maxd = 0;
    for (size_t i = 0; i < n; i++)
      if (memcmp(&xa[k][i], &xb[k][i], 4) != 0) {
        if (!ndiff++) first = i;
        double d = fabs((double)xa[k][i] - xb[k][i]);
        if (d > maxd) maxd = d;
      }
    if (ndiff) {
      fprintf(stderr, "%s differ in %zu of %zu values (first at %zu: %.9g vs %.9g; max |diff| %.3g)\n", names[k],
              ndiff, n, first, xa[k][first], xb[k][first], maxd);
      bad++;
    }
  }
  if (!bad) printf("checkpoints identical: %zu parameters, epoch %ld, %ld steps\n", n, sa.epoch, sa.global_step);
  rc = bad ? 1 : 0;
out:
  free(pa), free(ma), free(va), free(pb), free(mb), free(vb);
  return rc;
}

static int csv_load(const char *path, sf_epoch_row **rows, size_t *n)
{
  char err[2048];
  if (!sf_file_exists(path)) {
    fprintf(stderr, "%s does not exist\n", path);
    return 1;
  }
  if (sf_stats_csv_load(path, rows, n, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  return 0;
}

static int csv_check(const char *path, long min_rows)
{
  char *text = sf_read_file(path, NULL);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  const char *hdr = SF_TRAIN_STATS_HEADER "\n";
  if (strncmp(text, hdr, strlen(hdr)) != 0) {
    char *nl = strchr(text, '\n');
    if (nl) *nl = '\0';
    fprintf(stderr, "header differs:\n  got:  %s\n  want: %s\n", text, SF_TRAIN_STATS_HEADER);
    free(text);
    return 1;
  }
  free(text);
  sf_epoch_row *rows;
  size_t n;
  if (csv_load(path, &rows, &n)) return 1;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].epoch != (long)i + 1) {
      fprintf(stderr, "row %zu has epoch %ld, expected %zu\n", i + 1, rows[i].epoch, i + 1);
      bad++;
    }
    double want = rows[i].epoch_loss / (double)rows[i].optimizer_steps;
    if (rows[i].optimizer_steps <= 0 || fabs(rows[i].overall_loss - want) > 1e-9 * fabs(want)) {
      fprintf(stderr, "row %zu: overall_loss %.17g != epoch_loss/steps %.17g (batch 1)\n", i + 1,
              rows[i].overall_loss, want);
      bad++;
    }
    int partial = sf_epoch_row_is_partial(&rows[i]); /* a SIGINT/SIGTERM row: last, all validation nan */
    if (partial && (i + 1 != n || !isnan(rows[i].val_loss_epoch) || !isnan(rows[i].val_loss_avg))) {
      fprintf(stderr, "row %zu: a partial-epoch row (val_dice nan) must be the last row (of %zu) with every "
              "validation column nan\n", i + 1, n);
      bad++;
    }
    if (!partial && !(rows[i].val_dice >= 0 && rows[i].val_dice <= 1)) {
      fprintf(stderr, "row %zu: val_dice %g out of [0, 1]\n", i + 1, rows[i].val_dice);
      bad++;
    }
    if (!(rows[i].epoch_duration > 0)) {
      fprintf(stderr, "row %zu: epoch_duration %g is not positive\n", i + 1, rows[i].epoch_duration);
      bad++;
    }
    long prev = i ? rows[i - 1].total_optimizer_steps : 0;
    if (rows[i].total_optimizer_steps != prev + rows[i].optimizer_steps) {
      fprintf(stderr, "row %zu: total_optimizer_steps %ld != %ld + %ld\n", i + 1, rows[i].total_optimizer_steps, prev,
              rows[i].optimizer_steps);
      bad++;
    }
  }
  if ((long)n < min_rows) {
    fprintf(stderr, "%s has %zu rows, expected at least %ld\n", path, n, min_rows);
    bad++;
  }
  printf("rows=%zu\n", n);
  free(rows);
  return bad ? 1 : 0;
}

static int csv_converged(const char *path, double target)
{
  sf_epoch_row *rows;
  size_t n;
  if (csv_load(path, &rows, &n)) return 1;
  if (n == 0) {
    fprintf(stderr, "%s has no rows\n", path);
    free(rows);
    return 1;
  }
  int bad = 0;
  for (size_t i = 0; i + 1 < n; i++)
    if (rows[i].val_dice >= target) {
      fprintf(stderr, "epoch %ld already had val_dice %.6f >= %g, but training went on to epoch %ld\n",
              rows[i].epoch, rows[i].val_dice, target, rows[n - 1].epoch);
      bad++;
    }
  if (rows[n - 1].val_dice < target) {
    fprintf(stderr, "last epoch %ld has val_dice %.6f < target %g\n", rows[n - 1].epoch, rows[n - 1].val_dice, target);
    bad++;
  }
  printf("epochs=%zu last_val_dice=%.6f\n", n, rows[n - 1].val_dice);
  free(rows);
  return bad ? 1 : 0;
}

static int csv_cmp(const char *a, const char *b)
{
  sf_epoch_row *ra = NULL, *rb = NULL;
  size_t na, nb;
  int bad = 0;
  if (csv_load(a, &ra, &na) || csv_load(b, &rb, &nb)) {
    free(ra);
    return 1;
  }
  if (na != nb) {
    fprintf(stderr, "row counts differ: %zu vs %zu\n", na, nb);
    free(ra), free(rb);
    return 1;
  }
  for (size_t i = 0; i < na; i++) {
    ra[i].epoch_duration = rb[i].epoch_duration = 0;
    char la[1024], lb[1024];
    sf_epoch_row_format(&ra[i], la, sizeof la);
    sf_epoch_row_format(&rb[i], lb, sizeof lb);
    if (strcmp(la, lb) != 0) {
      fprintf(stderr, "row %zu differs (epoch_duration ignored):\n  %s\n  %s\n", i + 1, la, lb);
      bad++;
    }
  }
  if (!bad) printf("%zu rows identical (epoch_duration ignored)\n", na);
  free(ra), free(rb);
  return bad ? 1 : 0;
}

static int config_get(const char *path, int nkeys, char **keys)
{
  sf_config c;
  sf_config_init(&c);
  sf_config_load_file(&c, path); /* dies with file:line on any error */
  sf_config_finalize(&c);
  for (int i = 0; i < nkeys; i++) {
    char *v = sf_config_value_string(&c, keys[i]);
    if (!v) {
      fprintf(stderr, "unknown key %s\n", keys[i]);
      sf_config_free(&c);
      return 1;
    }
    printf("%s=%s\n", keys[i], v);
    free(v);
  }
  sf_config_free(&c);
  return 0;
}

static int trace_check(const char *path, int nworkers)
{
  char *err = NULL;
  cJSON *j = sf_json_load(path, &err);
  if (!j) {
    fprintf(stderr, "%s does not parse: %s\n", path, err ? err : "?");
    free(err);
    return 1;
  }
  cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "traceEvents");
  if (!cJSON_IsArray(ev)) {
    fprintf(stderr, "%s: no traceEvents array\n", path);
    cJSON_Delete(j);
    return 1;
  }
  long *per = calloc((size_t)nworkers + 1, sizeof *per);
  int *named = calloc((size_t)nworkers + 1, sizeof *named);
  int bad = 0;
  long spans = 0;
  cJSON *e;
  cJSON_ArrayForEach(e, ev)
  {
    const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "ph"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"));
    cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
    if (!ph || !name) {
      fprintf(stderr, "event without ph/name\n");
      bad++;
      continue;
    }
    if (!strcmp(ph, "M") && !strcmp(name, "thread_name") && cJSON_IsNumber(tid) && tid->valueint >= 0 &&
        tid->valueint <= nworkers)
      named[tid->valueint] = 1;
    if (strcmp(ph, "X") != 0) continue;
    double ts = sf_json_num(cJSON_GetObjectItemCaseSensitive(e, "ts"));
    double dur = sf_json_num(cJSON_GetObjectItemCaseSensitive(e, "dur"));
    if (!cJSON_IsNumber(tid) || !(ts >= 0) || !(dur >= 0)) {
      fprintf(stderr, "X event %s: bad tid/ts/dur (ts %g dur %g)\n", name, ts, dur);
      bad++;
      continue;
    }
    if (tid->valueint == nworkers) {
      spans++;
      continue;
    }
    if (tid->valueint < 0 || tid->valueint > nworkers) {
      fprintf(stderr, "X event %s on tid %d outside 0..%d\n", name, tid->valueint, nworkers);
      bad++;
      continue;
    }
    cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "flops")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "codelet"))) {
      fprintf(stderr, "task event %s lacks args.flops/args.codelet\n", name);
      bad++;
    }
    per[tid->valueint]++;
  }
  long total = 0;
  for (int w = 0; w < nworkers; w++) {
    printf("worker %d: %ld task events%s\n", w, per[w], named[w] ? "" : " (no thread_name)");
    if (!named[w]) bad++;
    total += per[w];
  }
  printf("main-thread spans: %ld\n", spans);
  if (total == 0) {
    fprintf(stderr, "no task events on any worker\n");
    bad++;
  }
  if (spans == 0) {
    fprintf(stderr, "no step/epoch spans\n");
    bad++;
  }
  free(per);
  free(named);
  cJSON_Delete(j);
  return bad ? 1 : 0;
}

static int json_get(const char *path, const char *dotted)
{
  char *err = NULL;
  cJSON *j = sf_json_load(path, &err);
  if (!j) {
    fprintf(stderr, "%s does not parse: %s\n", path, err ? err : "?");
    free(err);
    return 1;
  }
  char *p = sf_strdup(dotted);
  cJSON *cur = j;
  for (char *save = NULL, *k = strtok_r(p, ".", &save); k && cur; k = strtok_r(NULL, ".", &save))
    cur = cJSON_GetObjectItemCaseSensitive(cur, k);
  int rc = 0;
  if (!cur) {
    fprintf(stderr, "%s: no %s\n", path, dotted);
    rc = 1;
  } else if (cJSON_IsNumber(cur)) {
    printf("%.17g\n", cur->valuedouble);
  } else if (cJSON_IsString(cur)) {
    printf("%s\n", cur->valuestring);
  } else if (cJSON_IsBool(cur)) {
    printf("%s\n", cJSON_IsTrue(cur) ? "true" : "false");
  } else if (cJSON_IsNull(cur)) {
    printf("null\n");
  } else {
    char *s = cJSON_PrintUnformatted(cur);
    printf("%s\n", s);
    free(s);
  }
  free(p);
  cJSON_Delete(j);
  return rc;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: train_tool COMMAND ARGS (see the file header)\n");
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "ckpt-info")) return ckpt_info(argv[2]);
  if (!strcmp(cmd, "ckpt-cmp") && argc == 4) return ckpt_cmp(argv[2], argv[3]);
  if (!strcmp(cmd, "csv-check")) return csv_check(argv[2], argc > 3 ? atol(argv[3]) : 0);
  if (!strcmp(cmd, "csv-converged") && argc == 4) return csv_converged(argv[2], atof(argv[3]));
  if (!strcmp(cmd, "csv-cmp") && argc == 4) return csv_cmp(argv[2], argv[3]);
  if (!strcmp(cmd, "config-get")) return config_get(argv[2], argc - 3, argv + 3);
  if (!strcmp(cmd, "trace-check") && argc == 4) return trace_check(argv[2], atoi(argv[3]));
  if (!strcmp(cmd, "json-get") && argc == 4) return json_get(argv[2], argv[3]);
  fprintf(stderr, "train_tool: unknown command or wrong arguments: %s\n", cmd);
  return 2;
}

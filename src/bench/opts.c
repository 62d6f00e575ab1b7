/* The harness options of `scaffold benchmark` (--max-count, --max-time, --sample-duration, --datagen-only,
 * --out, --experiment-name, --job-id, --extra), parsed by an sf_cli_extra_fn so the benchmark's
 * config parser can hand them over. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

void sf_bench_opts_init(sf_bench_opts *o)
{
  memset(o, 0, sizeof *o);
  o->max_count = -1;
  o->sample_duration = 0.5;
}

void sf_bench_opts_free(sf_bench_opts *o)
{
  free(o->out);
  free(o->experiment_name);
  free(o->job_id);
  if (o->extra) cJSON_Delete(o->extra);
  sf_bench_opts_init(o);
}

/* Matches argv[i] against "--name" or "--name=value". Returns 0 (no match), 1 (value in the same
 * argument: *val points into it) or 2 (value is argv[i+1]); dies if the value is missing. */
static int match(int argc, char **argv, int i, const char *name, const char **val)
{
  size_t n = strlen(name);
  if (strncmp(argv[i], name, n) != 0) return 0;
  if (argv[i][n] == '=') {
    *val = argv[i] + n + 1;
    return 1;
  }
  if (argv[i][n] != '\0') return 0;
  if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "option %s expects a value", name);
  *val = argv[i + 1];
  return 2;
}

static const char *const identity_opts[] = {"--out", "--experiment-name", "--job-id", "--extra"};

int sf_bench_opt_is_identity(int argc, char **argv, int i, int *nargs)
{
  for (size_t k = 0; k < sizeof identity_opts / sizeof identity_opts[0]; k++) {
    size_t n = strlen(identity_opts[k]);
    if (strncmp(argv[i], identity_opts[k], n) != 0) continue;
    if (argv[i][n] == '=') {
      *nargs = 1;
      return 1;
    }
    if (argv[i][n] == '\0') {
      *nargs = i + 1 < argc ? 2 : 1;
      return 1;
    }
  }
  return 0;
}

int sf_bench_name_ok(const char *name)
{
  static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  size_t n = strlen(name);
  return n > 0 && n <= 200 && name[0] != '.' && strspn(name, ok) == n;
}

static void set_str(char **dst, const char *v)
{
  free(*dst);
  *dst = sf_strdup(v);
}

int sf_bench_opts_parse(void *ctx, int argc, char **argv, int i)
{
  sf_bench_opts *o = ctx;
  const char *v = NULL;
  int k;
  if (!strcmp(argv[i], "--datagen-only")) {
    o->datagen_only = 1;
    return 1;
  }
  if ((k = match(argc, argv, i, "--max-count", &v))) {
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n <= 0)
      sf_die(SF_EXIT_USAGE, "--max-count '%s': expected a positive integer number of samples", v);
    o->max_count = n;
    return k;
  }
  if ((k = match(argc, argv, i, "--max-time", &v))) {
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d > 0) || !isfinite(d))
      sf_die(SF_EXIT_USAGE, "--max-time '%s': expected a positive number of seconds of training steps", v);
    o->max_time = d;
    return k;
  }
  if ((k = match(argc, argv, i, "--sample-duration", &v))) {
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d > 0) || !isfinite(d))
      sf_die(SF_EXIT_USAGE, "--sample-duration '%s': expected a positive number of seconds", v);
    o->sample_duration = d;
    return k;
  }
  if ((k = match(argc, argv, i, "--out", &v))) {
    if (!*v) sf_die(SF_EXIT_USAGE, "--out: expected a directory or a .json path, got an empty string");
    set_str(&o->out, v);
    return k;
  }
  if ((k = match(argc, argv, i, "--experiment-name", &v))) {
    if (!sf_bench_name_ok(v))
      sf_die(SF_EXIT_USAGE, "--experiment-name '%s': expected a name like <suite>.<test> (letters, digits, '.', '_', "
             "'-'; not starting with '.'; at most 200 characters)", v);
    set_str(&o->experiment_name, v);
    return k;
  }
  if ((k = match(argc, argv, i, "--job-id", &v))) {
    if (!*v || strchr(v, '/'))
      sf_die(SF_EXIT_USAGE, "--job-id '%s': expected an id like <run>.<device> (no '/')", v);
    set_str(&o->job_id, v);
    return k;
  }
  if ((k = match(argc, argv, i, "--extra", &v))) {
    cJSON *j = cJSON_Parse(v);
    if (!j || !cJSON_IsObject(j)) {
      const char *e = j ? NULL : cJSON_GetErrorPtr();
      if (j) cJSON_Delete(j);
      if (e) sf_die(SF_EXIT_USAGE, "--extra '%s': invalid JSON near '%.20s' (expected a JSON object)", v, e);
      sf_die(SF_EXIT_USAGE, "--extra '%s': expected a JSON object", v);
    }
    if (o->extra) cJSON_Delete(o->extra);
    o->extra = j;
    return k;
  }
  return 0;
}

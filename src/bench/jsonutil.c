/* Helpers of the harness: epoch/local timestamps, result file names, and resolving profile/weights
 * names to paths under configs/ (the JSON reading and writing is in src/util/json.c). */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/switches.h"

static void split_time(double when, time_t *sec, long *usec)
{
  double s = floor(when);
  *sec = (time_t)s;
  *usec = (long)llround((when - s) * 1e6);
  if (*usec >= 1000000) {
    *sec += 1;
    *usec -= 1000000;
  }
}

void sf_format_local_time(double when, char *buf, size_t n)
{
  time_t sec;
  long usec;
  split_time(when, &sec, &usec);
  struct tm tm;
  localtime_r(&sec, &tm);
  char head[32];
  strftime(head, sizeof head, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, n, "%s.%06ld", head, usec);
}

char *sf_result_filename(const char *name, const char *job_id, int success, double when)
{
  time_t sec;
  long usec;
  split_time(when, &sec, &usec);
  struct tm tm;
  gmtime_r(&sec, &tm);
  char ts[48];
  strftime(ts, sizeof ts, "%Y%m%d-%H%M%S", &tm);
  size_t n = strlen(name) + (job_id ? strlen(job_id) : 0) + 80;
  char *s = sf_malloc(n, "result file name");
  snprintf(s, n, "%s%s%s%s.%s-%06ld.json", name, job_id && *job_id ? ".J" : "", job_id && *job_id ? job_id : "",
           success ? "" : ".FAIL", ts, usec);
  return s;
}

const char *sf_config_dir(void)
{
  const char *e = sf_switch("SF_CONFIG_DIR");
  if (e) return e;
#ifdef SF_SOURCE_DIR
  return SF_SOURCE_DIR "/configs";
#else
  return "configs";
#endif
}

char *sf_resolve_config_path(const char *subdir, const char *name)
{
  if (sf_file_exists(name) || strchr(name, '/')) return sf_strdup(name);
  size_t n = strlen(sf_config_dir()) + strlen(subdir) + strlen(name) + 8;
  char *p = sf_malloc(n, "path");
  const char *dot = strrchr(name, '.');
  int has_ext = dot && (!strcmp(dot, ".yml") || !strcmp(dot, ".yaml") || !strcmp(dot, ".json"));
  snprintf(p, n, "%s/%s/%s%s", sf_config_dir(), subdir, name, has_ext ? "" : ".yml");
  return p;
}

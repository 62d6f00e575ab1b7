/* JSON helpers of the harness: printing with 4-space indentation (cJSON indents with tabs),
 * atomic JSON writes, loading with parse errors given as line:column, epoch/local timestamps,
 * and resolving profile/weights names to paths under configs/. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/switches.h"

char *sf_json_print(const cJSON *j)
{
  char *raw = cJSON_Print(j);
  if (!raw) SF_ABORT("cJSON_Print failed (out of memory?)");
  /* cJSON never emits a raw tab inside a string (it escapes them), so every tab is layout:
   * leading tabs are indentation levels, any other tab is the separator after "key":. */
  size_t tabs = 0, len = strlen(raw);
  for (size_t i = 0; i < len; i++) tabs += raw[i] == '\t';
  char *out = sf_malloc(len + 3 * tabs + 2, "JSON text");
  size_t k = 0;
  int line_start = 1;
  for (size_t i = 0; i < len; i++) {
    char ch = raw[i];
    if (ch == '\t') {
      if (line_start) {
        memcpy(out + k, "    ", 4);
        k += 4;
      } else {
        out[k++] = ' ';
      }
      continue;
    }
    line_start = ch == '\n';
    out[k++] = ch;
  }
  out[k++] = '\n';
  out[k] = '\0';
  free(raw);
  /* cJSON prints an empty object as "{", newline, indentation, "}": make it "{}". */
  size_t w = 0;
  for (size_t i = 0; i < k; i++) {
    out[w++] = out[i];
    if (out[i] == '{' && out[i + 1] == '\n') {
      size_t j = i + 2;
      while (out[j] == ' ') j++;
      if (out[j] == '}') i = j - 1;
    }
  }
  out[w] = '\0';
  return out;
}

int sf_json_write_atomic(const char *path, const cJSON *j)
{
  char *text = sf_json_print(j);
  int rc = sf_write_file_atomic(path, text, strlen(text));
  free(text);
  return rc;
}

double sf_json_num(const cJSON *j)
{
  return cJSON_IsNumber(j) ? j->valuedouble : NAN;
}

cJSON *sf_json_load(const char *path, char **err)
{
  size_t len = 0;
  char *text = sf_read_file(path, &len);
  char buf[512];
  *err = NULL;
  if (!text) {
    snprintf(buf, sizeof buf, "cannot read: %s", strerror(errno));
    *err = sf_strdup(buf);
    return NULL;
  }
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  if (!j) {
    if (!end) end = text;
    int line = 1, col = 1;
    for (const char *p = text; p < end && *p; p++) {
      if (*p == '\n') line++, col = 1;
      else col++;
    }
    if (len == 0) snprintf(buf, sizeof buf, "invalid JSON: the file is empty");
    else if (end >= text + len || !*end)
      snprintf(buf, sizeof buf, "invalid JSON at line %d, column %d: unexpected end of file (truncated?)", line, col);
    else snprintf(buf, sizeof buf, "invalid JSON at line %d, column %d, near '%.16s'", line, col, end);
    for (char *p = buf; *p; p++)
      if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    *err = sf_strdup(buf);
  }
  free(text);
  return j;
}

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

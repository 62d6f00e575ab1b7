/* Every JSON file the product writes or reads goes through cJSON and these helpers: printing with
 * 4-space indentation (cJSON indents with tabs) or as rows (one list element a line, for long lists),
 * atomic writes, and loading with parse errors given as line:column. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/json.h"

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

static void print_row(FILE *f, const cJSON *j)
{
  char *text = cJSON_PrintUnformatted(j);
  if (!text) SF_ABORT("cJSON_PrintUnformatted failed (out of memory?)");
  fputs(text, f);
  free(text);
}

char *sf_json_print_rows(const cJSON *object)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) SF_ABORT("open_memstream failed (out of memory?)");
  fputc('{', f);
  for (const cJSON *m = object->child; m; m = m->next) {
    char *key = sf_json_quote(m->string);
    fprintf(f, "\n    %s: ", key);
    free(key);
    if (cJSON_IsArray(m) && m->child) {
      fputc('[', f);
      for (const cJSON *e = m->child; e; e = e->next) {
        fputs("\n        ", f);
        print_row(f, e);
        if (e->next) fputc(',', f);
      }
      fputs("\n    ]", f);
    } else {
      print_row(f, m);
    }
    if (m->next) fputc(',', f);
  }
  fputs(object->child ? "\n}\n" : "}\n", f);
  if (fclose(f) != 0) SF_ABORT("open_memstream failed (out of memory?)");
  return text;
}

int sf_json_write_rows_atomic(const char *path, const cJSON *object)
{
  char *text = sf_json_print_rows(object);
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

char *sf_json_quote(const char *s)
{
  cJSON *j = cJSON_CreateString(s ? s : "");
  char *out = j ? cJSON_PrintUnformatted(j) : NULL;
  cJSON_Delete(j);
  if (!out) SF_ABORT("cJSON could not print a string (out of memory?)");
  return out;
}

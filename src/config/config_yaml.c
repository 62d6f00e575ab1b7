/* YAML in and out of the configuration, with libyaml's event parser so that every key keeps its
 * line. A file must be one mapping of key: value, where a value is a scalar or (for list keys) a
 * flow or block list of scalars; `--set key=value` parses the value with the same reader. Writing
 * is atomic (scaffold/fsutil.h) and reads back to identical values (strings double-quoted and
 * escaped, doubles in the shortest exact form). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "config_internal.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

/* Where the parser reads from, for messages: a file, or an override (how = the option). */
typedef struct {
  yaml_parser_t p;
  const char *file;
  const char *how;
} reader;

__attribute__((noreturn, format(printf, 3, 4))) static void reader_die(const reader *r, int line,
                                                                       const char *fmt, ...)
{
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->file)
    sf_die(SF_EXIT_USAGE, "%s:%d: %s", r->file, line, what);
  sf_die(SF_EXIT_USAGE, "override %s: %s", r->how, what);
}

static void next_event(reader *r, yaml_event_t *e)
{
  if (yaml_parser_parse(&r->p, e)) return;
  const yaml_parser_t *p = &r->p;
  int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
  if (r->file)
    sf_die(SF_EXIT_USAGE, "%s:%d:%d: malformed YAML: %s%s%s", r->file, line, col,
           p->problem ? p->problem : "syntax error", p->context ? " " : "",
           p->context ? p->context : "");
  sf_die(SF_EXIT_USAGE, "override %s: malformed YAML value: %s%s%s", r->how,
         p->problem ? p->problem : "syntax error", p->context ? " " : "", p->context ? p->context : "");
}

static int ev_line(const yaml_event_t *e) { return (int)e->start_mark.line + 1; }

void sf_raw_free(sf_raw *v)
{
  if (!v) return;
  for (int i = 0; i < v->n; i++) sf_raw_free(&v->items[i]);
  free(v->items);
  free(v->text);
  v->items = NULL;
  v->text = NULL;
  v->n = 0;
}

/* Skips the rest of a collection whose start event was just read. */
static void skip_collection(reader *r)
{
  int depth = 1;
  while (depth > 0) {
    yaml_event_t e;
    next_event(r, &e);
    if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT) depth++;
    if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) depth--;
    yaml_event_delete(&e);
  }
}

static void scalar_from_event(const yaml_event_t *e, sf_raw *out)
{
  const char *tag = (const char *)e->data.scalar.tag;
  yaml_scalar_style_t st = e->data.scalar.style;
  out->kind = SF_RAW_SCALAR;
  out->text = sf_strdup((const char *)e->data.scalar.value);
  out->quoted = st != YAML_PLAIN_SCALAR_STYLE || (tag && !strcmp(tag, YAML_STR_TAG));
  out->line = ev_line(e);
}

/* Reads one value whose first event is e (consumed by the caller's delete). */
static void read_value(reader *r, yaml_event_t *e, sf_raw *out)
{
  memset(out, 0, sizeof *out);
  out->line = ev_line(e);
  switch (e->type) {
  case YAML_SCALAR_EVENT: scalar_from_event(e, out); return;
  case YAML_ALIAS_EVENT:
    reader_die(r, out->line, "alias '*%s': aliases and anchors are not supported in configs",
               (const char *)e->data.alias.anchor);
  case YAML_MAPPING_START_EVENT:
    skip_collection(r);
    out->kind = SF_RAW_MAP;
    out->text = sf_strdup("{...}");
    return;
  case YAML_SEQUENCE_START_EVENT: break;
  default: reader_die(r, out->line, "unexpected YAML event %d", (int)e->type);
  }
  out->kind = SF_RAW_SEQ;
  size_t cap = 0, tlen = 1;
  char *text = sf_strdup("[");
  for (;;) {
    yaml_event_t it;
    next_event(r, &it);
    if (it.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&it);
      break;
    }
    if ((size_t)out->n == cap) {
      cap = cap ? 2 * cap : 4;
      out->items = realloc(out->items, cap * sizeof *out->items);
      if (!out->items) sf_die(SF_EXIT_FAILURE, "out of memory reading a YAML list");
    }
    sf_raw *item = &out->items[out->n++];
    memset(item, 0, sizeof *item);
    if (it.type == YAML_SCALAR_EVENT) {
      scalar_from_event(&it, item);
    } else if (it.type == YAML_SEQUENCE_START_EVENT || it.type == YAML_MAPPING_START_EVENT) {
      item->kind = it.type == YAML_SEQUENCE_START_EVENT ? SF_RAW_SEQ : SF_RAW_MAP;
      item->text = sf_strdup(item->kind == SF_RAW_SEQ ? "[...]" : "{...}");
      item->line = ev_line(&it);
      skip_collection(r);
    } else {
      reader_die(r, ev_line(&it), "aliases and anchors are not supported in configs");
    }
    yaml_event_delete(&it);
    size_t add = strlen(item->text) + 4;
    char *t = realloc(text, tlen + add + 2);
    if (!t) sf_die(SF_EXIT_FAILURE, "out of memory reading a YAML list");
    text = t;
    tlen += (size_t)snprintf(text + tlen, add + 2, "%s%s", out->n > 1 ? ", " : "", item->text);
  }
  char *t = realloc(text, tlen + 2);
  if (!t) sf_die(SF_EXIT_FAILURE, "out of memory reading a YAML list");
  text = t;
  strcpy(text + tlen, "]");
  out->text = text;
}

static void unknown_key_die(const reader *r, int line, const char *key, const char *value)
{
  const sf_old_key *o = sf_old_key_find(key);
  if (o) {
    char msg[1024];
    sf_old_key_message(o, value, msg, sizeof msg);
    reader_die(r, line, "%s", msg);
  }
  const char *s = sf_key_suggest(key);
  char hint[256] = "";
  if (s) snprintf(hint, sizeof hint, "; did you mean '%s'?", s);
  reader_die(r, line, "unknown key '%s' (value '%s')%s (docs/config.md lists every key)", key,
             value, hint);
}

/* ---- files ------------------------------------------------------------------------------------ */
void sf_config_load_file(sf_config *c, const char *path)
{
  size_t len = 0;
  if (sf_dir_exists(path)) sf_die(SF_EXIT_USAGE, "cannot read config file '%s': it is a directory", path);
  char *data = sf_read_file(path, &len);
  if (!data) sf_die(SF_EXIT_USAGE, "cannot read config file '%s': %s", path, strerror(errno));
  reader r = {.file = path};
  if (!yaml_parser_initialize(&r.p)) sf_die(SF_EXIT_FAILURE, "cannot initialise libyaml");
  yaml_parser_set_input_string(&r.p, (const unsigned char *)data, len);

  yaml_event_t e;
  next_event(&r, &e); /* stream start */
  yaml_event_delete(&e);
  next_event(&r, &e);
  if (e.type == YAML_STREAM_END_EVENT)
    sf_die(SF_EXIT_USAGE, "%s: the file is empty: expected a mapping of key: value lines", path);
  yaml_event_delete(&e); /* document start */
  next_event(&r, &e);
  int line = ev_line(&e);
  if (e.type == YAML_SCALAR_EVENT && e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
      e.data.scalar.length == 0)
    sf_die(SF_EXIT_USAGE, "%s: the file is empty: expected a mapping of key: value lines", path);
  if (e.type != YAML_MAPPING_START_EVENT)
    reader_die(&r, line, "the top level is %s: expected a mapping of key: value lines",
               e.type == YAML_SEQUENCE_START_EVENT ? "a list"
               : e.type == YAML_SCALAR_EVENT       ? "a single value"
                                                   : "not a mapping");
  yaml_event_delete(&e);

  int *seen = sf_calloc((size_t)sf_nkeys, sizeof *seen, "config key lines");
  for (;;) {
    next_event(&r, &e);
    if (e.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&e);
      break;
    }
    line = ev_line(&e);
    if (e.type != YAML_SCALAR_EVENT)
      reader_die(&r, line, "a key must be a plain name, not a %s",
                 e.type == YAML_SEQUENCE_START_EVENT ? "list" : "mapping or alias");
    char *key = sf_strdup((const char *)e.data.scalar.value);
    yaml_event_delete(&e);

    next_event(&r, &e);
    sf_raw v;
    read_value(&r, &e, &v);
    yaml_event_delete(&e);

    int k = sf_key_find(key);
    if (k < 0) unknown_key_die(&r, line, key, v.text);
    if (seen[k])
      reader_die(&r, line, "duplicate key '%s' (value '%s'): it was already given on line %d", key,
                 v.text, seen[k]);
    seen[k] = line;
    sf_src src = {.file = path, .line = line};
    sf_config_set_raw(c, k, &v, &src);
    sf_raw_free(&v);
    free(key);
  }
  next_event(&r, &e); /* document end */
  yaml_event_delete(&e);
  next_event(&r, &e);
  if (e.type != YAML_STREAM_END_EVENT)
    reader_die(&r, ev_line(&e), "a second YAML document ('---'): expected one mapping");
  yaml_event_delete(&e);
  sf_config_keep_file(c, path);
  free(seen);
  yaml_parser_delete(&r.p);
  free(data);
}

/* ---- overrides -------------------------------------------------------------------------------- */
void sf_config_override_key(sf_config *c, const char *key, const char *value, const char *how)
{
  reader r = {.how = how};
  int k = sf_key_find(key);
  const sf_old_key *o = k < 0 ? sf_old_key_find(key) : NULL;
  if (o) {
    char msg[1024];
    sf_old_key_message(o, value, msg, sizeof msg);
    sf_die(SF_EXIT_USAGE, "override %s: %s", how, msg);
  }
  if (k < 0) {
    const char *s = sf_key_suggest(key);
    sf_die(SF_EXIT_USAGE, "override %s: unknown key '%s' (value '%s')%s%s%s (docs/config.md lists "
           "every key)", how, key, value, s ? "; did you mean '" : "", s ? s : "", s ? "'?" : "");
  }
  if (!yaml_parser_initialize(&r.p)) sf_die(SF_EXIT_FAILURE, "cannot initialise libyaml");
  yaml_parser_set_input_string(&r.p, (const unsigned char *)value, strlen(value));
  yaml_event_t e;
  sf_raw v;
  next_event(&r, &e); /* stream start */
  yaml_event_delete(&e);
  next_event(&r, &e);
  if (e.type == YAML_STREAM_END_EVENT) {
    /* Nothing after '=': an empty plain scalar, which the setter reports as an empty value. */
    memset(&v, 0, sizeof v);
    v.kind = SF_RAW_SCALAR;
    v.text = sf_strdup("");
  } else {
    yaml_event_delete(&e); /* document start */
    next_event(&r, &e);
    read_value(&r, &e, &v);
    yaml_event_delete(&e);
    next_event(&r, &e); /* document end */
    yaml_event_delete(&e);
    next_event(&r, &e);
    if (e.type != YAML_STREAM_END_EVENT)
      sf_die(SF_EXIT_USAGE, "override %s: key '%s': the value holds more than one YAML document",
             how, key);
  }
  yaml_event_delete(&e);
  yaml_parser_delete(&r.p);
  sf_src src = {.how = how};
  sf_config_set_raw(c, k, &v, &src);
  sf_raw_free(&v);
}

void sf_config_apply_override(sf_config *c, const char *key_eq_value)
{
  const char *eq = strchr(key_eq_value, '=');
  if (!eq || eq == key_eq_value)
    sf_die(SF_EXIT_USAGE, "override --set '%s': expected key=value (for example --set epochs=10)",
           key_eq_value);
  char *key = sf_strdup(key_eq_value);
  key[eq - key_eq_value] = '\0';
  size_t n = strlen(key_eq_value) + 8;
  char *how = sf_malloc(n, "override text");
  snprintf(how, n, "--set %s", key_eq_value);
  sf_config_override_key(c, key, eq + 1, how);
  free(how);
  free(key);
}

/* ---- writing ---------------------------------------------------------------------------------- */
static int write_keys(const sf_config *c, const char *path, int overrides_only)
{
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0) return -1;
  if (overrides_only)
    fprintf(a.f, "# Command-line overrides of this run (scaffold %s); every other key came from the "
            "config file or its default.\n", SF_VERSION);
  else
    fprintf(a.f, "# Effective ScaFFold-StarPU configuration (scaffold %s). `scaffold benchmark -c` "
            "reads it back\n# to the same values; derived keys are recomputed on load.\n", SF_VERSION);
  int written = 0;
  sf_key_group group = SF_KG_COUNT;
  for (int k = 0; k < sf_nkeys; k++) {
    if (overrides_only && sf_config_origin_of(c, sf_keys[k].name) != SF_ORIGIN_OVERRIDE) continue;
    if (!overrides_only && sf_keys[k].group != group) {
      group = sf_keys[k].group;
      fprintf(a.f, "\n# %s\n", sf_key_group_title(group));
    }
    char *v = sf_config_format_key(c, k);
    fprintf(a.f, "%s: %s\n", sf_keys[k].name, v);
    free(v);
    written++;
  }
  if (!written) fprintf(a.f, "{}\n");
  return sf_atomic_commit(&a);
}

int sf_config_write_yaml(const sf_config *c, const char *path) { return write_keys(c, path, 0); }

int sf_config_write_overrides_yaml(const sf_config *c, const char *path)
{
  return write_keys(c, path, 1);
}

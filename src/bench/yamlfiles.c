/* The harness's YAML files, read with libyaml's document API so every error can name file:line:
 * generic YAML -> JSON conversion, the weights file, and the profile (test list with the "*"
 * defaults merged shallowly into each entry). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

/* ---- loading ---------------------------------------------------------------------------- */

/* Aliases ("*name") are refused, as in configs (src/config/config_yaml.c): a document with one
 * is a graph, not a tree, so an alias to an enclosing node makes an endless tree and nested
 * aliases expand exponentially ("billion laughs"); harness files need neither (a profile's shared
 * fields go under '*'). Scans the events of the first document; returns -1 with a message naming
 * file:line at the first alias, else 0 (syntax errors are left to yaml_parser_load to report). */
static int refuse_aliases(const char *path, const char *text, size_t len, char *err, size_t nerr)
{
  yaml_parser_t p;
  yaml_event_t e;
  int rc = 0, done = 0;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  while (!done && yaml_parser_parse(&p, &e)) {
    if (e.type == YAML_ALIAS_EVENT) {
      snprintf(err, nerr,
               "%s:%lu: alias '*%s': YAML aliases are not supported in weights and profile files "
               "(write the value out; fields shared by a profile's tests go under '*')",
               path, (unsigned long)e.start_mark.line + 1, (const char *)e.data.alias.anchor);
      rc = -1;
    }
    done = rc != 0 || e.type == YAML_DOCUMENT_END_EVENT || e.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&e);
  }
  yaml_parser_delete(&p);
  return rc;
}

/* Loads the first document of a YAML file. Returns 0, or -1 with a message in err. */
static int load_doc(const char *path, yaml_document_t *doc, char *err, size_t nerr)
{
  size_t len = 0;
  char *text = sf_read_file(path, &len); /* read once: scanned for aliases, then loaded */
  if (!text) {
    snprintf(err, nerr, "%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  if (refuse_aliases(path, text, len, err, nerr) != 0) {
    free(text);
    return -1;
  }
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int ok = yaml_parser_load(&p, doc);
  if (!ok) {
    char ctx[128] = "";
    if (p.context && p.context_mark.line != p.problem_mark.line)
      snprintf(ctx, sizeof ctx, " (started at line %lu)", (unsigned long)p.context_mark.line + 1);
    snprintf(err, nerr, "%s:%lu: malformed YAML: %s%s%s%s", path, (unsigned long)p.problem_mark.line + 1,
             p.problem ? p.problem : "parse error", p.context ? " " : "", p.context ? p.context : "", ctx);
  }
  yaml_parser_delete(&p);
  free(text);
  return ok ? 0 : -1;
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }
static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static int parse_ll(const char *s, long long *v)
{
  char *end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return !errno && end != s && !*end;
}

static int parse_dbl(const char *s, double *v)
{
  if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, "+.inf")) return *v = INFINITY, 1;
  if (!strcmp(s, "-.inf") || !strcmp(s, "-.Inf")) return *v = -INFINITY, 1;
  if (!strcmp(s, ".nan") || !strcmp(s, ".NaN")) return *v = NAN, 1;
  char *end;
  *v = strtod(s, &end);
  return end != s && !*end && !strpbrk(s, "xXnN"); /* no hex, inf, nan spellings of strtod */
}

static cJSON *node_to_json(yaml_document_t *d, yaml_node_t *n)
{
  if (!n) return cJSON_CreateNull();
  if (n->type == YAML_SCALAR_NODE) {
    const char *s = scalar(n);
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
      long long ll;
      double x;
      if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return cJSON_CreateNull();
      if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return cJSON_CreateTrue();
      if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return cJSON_CreateFalse();
      if (parse_ll(s, &ll)) return cJSON_CreateNumber((double)ll);
      if (parse_dbl(s, &x)) return cJSON_CreateNumber(x);
    }
    return cJSON_CreateString(s);
  }
  if (n->type == YAML_SEQUENCE_NODE) {
    cJSON *a = cJSON_CreateArray();
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
      cJSON_AddItemToArray(a, node_to_json(d, yaml_document_get_node(d, *it)));
    return a;
  }
  cJSON *o = cJSON_CreateObject();
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(d, p->key);
    const char *key = k && k->type == YAML_SCALAR_NODE ? scalar(k) : "?";
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddItemToObject(o, key, node_to_json(d, yaml_document_get_node(d, p->value)));
  }
  return o;
}

cJSON *sf_yaml_load_json(const char *path, char **err)
{
  char buf[1024];
  yaml_document_t d;
  *err = NULL;
  if (load_doc(path, &d, buf, sizeof buf) != 0) {
    *err = sf_strdup(buf);
    return NULL;
  }
  cJSON *j = node_to_json(&d, yaml_document_get_root_node(&d));
  yaml_document_delete(&d);
  return j;
}

/* ---- weights ---------------------------------------------------------------------------- */

int sf_weights_load(sf_weights *w, const char *path)
{
  char buf[1024];
  yaml_document_t d;
  memset(w, 0, sizeof *w);
  if (load_doc(path, &d, buf, sizeof buf) != 0) {
    fprintf(stderr, "scaffold: error: weights file %s\n", buf);
    return -1;
  }
  yaml_node_t *root = yaml_document_get_root_node(&d);
  int rc = 0;
  if (!root || root->type != YAML_MAPPING_NODE) {
    fprintf(stderr, "scaffold: error: %s:%d: expected a mapping '<suite>.<test>: {weight: <number>}'\n", path,
            root ? line_of(root) : 1);
    rc = -1;
    goto done;
  }
  size_t cap = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
  w->names = sf_calloc(cap + 1, sizeof *w->names, "weights");
  w->w = sf_calloc(cap + 1, sizeof *w->w, "weights");
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&d, p->key), *v = yaml_document_get_node(&d, p->value);
    if (k->type != YAML_SCALAR_NODE) {
      fprintf(stderr, "scaffold: error: %s:%d: expected a test name as key\n", path, line_of(k));
      rc = -1;
      goto done;
    }
    yaml_node_t *num = v;
    if (v->type == YAML_MAPPING_NODE) {
      num = NULL;
      for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
        yaml_node_t *kk = yaml_document_get_node(&d, q->key);
        if (kk->type == YAML_SCALAR_NODE && !strcmp(scalar(kk), "weight"))
          num = yaml_document_get_node(&d, q->value);
      }
    }
    double x;
    if (!num || num->type != YAML_SCALAR_NODE || !parse_dbl(scalar(num), &x) || !(x >= 0) || !isfinite(x)) {
      fprintf(stderr, "scaffold: error: %s:%d: '%s': expected a weight >= 0, as '%s: {weight: 8}' or '%s: 8'\n",
              path, line_of(num ? num : v), scalar(k), scalar(k), scalar(k));
      rc = -1;
      goto done;
    }
    for (size_t i = 0; i < w->n; i++)
      if (!strcmp(w->names[i], scalar(k))) {
        fprintf(stderr, "scaffold: error: %s:%d: '%s' is listed twice\n", path, line_of(k), scalar(k));
        rc = -1;
        goto done;
      }
    w->names[w->n] = sf_strdup(scalar(k));
    w->w[w->n++] = x;
  }
done:
  yaml_document_delete(&d);
  if (rc) sf_weights_free(w);
  return rc;
}

void sf_weights_free(sf_weights *w)
{
  for (size_t i = 0; i < w->n; i++) free(w->names[i]);
  free(w->names);
  free(w->w);
  memset(w, 0, sizeof *w);
}

/* ---- profile ---------------------------------------------------------------------------- */

typedef struct {
  const char *path;
  yaml_document_t *d;
} pctx;

__attribute__((noreturn, format(printf, 3, 4))) static void perr(const pctx *c, const yaml_node_t *n,
                                                                  const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  sf_die(SF_EXIT_USAGE, "%s:%d: %s", c->path, n ? line_of(n) : 1, msg);
}

const char *sf_part_name(sf_part_type t)
{
  return t == SF_PART_PER_DEVICE ? "per-device" : t == SF_PART_PROGRESSION ? "progression" : "normal";
}

static const char *want_scalar(const pctx *c, const yaml_node_t *n, const char *what)
{
  if (n->type != YAML_SCALAR_NODE) perr(c, n, "%s: expected a single value, got a %s", what,
                                        n->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
  return scalar(n);
}

static int want_int(const pctx *c, const yaml_node_t *n, const char *what, long long lo)
{
  long long v;
  const char *s = want_scalar(c, n, what);
  if (!parse_ll(s, &v) || v < lo || v > 1 << 20) perr(c, n, "%s: '%s' is not an integer >= %lld", what, s, lo);
  return (int)v;
}

/* The flow text of a node, for a --set value: a scalar as is, a list as "[a, b, c]". */
static char *flow_text(const pctx *c, const yaml_node_t *n, const char *what)
{
  if (n->type == YAML_SCALAR_NODE) return sf_strdup(scalar(n));
  if (n->type != YAML_SEQUENCE_NODE) perr(c, n, "%s: expected a value or a list of values, got a mapping", what);
  size_t cap = 3;
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    yaml_node_t *e = yaml_document_get_node(c->d, *it);
    cap += strlen(want_scalar(c, e, what)) + 2;
  }
  char *s = sf_malloc(cap, "override"), *q = s;
  *q++ = '[';
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    q += sprintf(q, "%s%s", it == n->data.sequence.items.start ? "" : ", ",
                 scalar(yaml_document_get_node(c->d, *it)));
  }
  *q++ = ']';
  *q = '\0';
  return s;
}

static void parse_partition(const pctx *c, sf_profile_test *t, yaml_node_t *v)
{
  if (v->type == YAML_SCALAR_NODE) perr(c, v, "partition_scheme: expected a mapping like {type: per-device}");
  if (v->type != YAML_MAPPING_NODE) perr(c, v, "partition_scheme: expected a mapping like {type: per-device}, got a list");
  int have_type = 0;
  for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->d, p->key), *x = yaml_document_get_node(c->d, p->value);
    const char *key = want_scalar(c, k, "partition_scheme key");
    if (!strcmp(key, "type")) {
      const char *s = want_scalar(c, x, "partition_scheme.type");
      if (!strcmp(s, "per-device")) t->part = SF_PART_PER_DEVICE;
      else if (!strcmp(s, "progression")) t->part = SF_PART_PROGRESSION;
      else if (!strcmp(s, "normal")) t->part = SF_PART_NORMAL;
      else perr(c, x, "partition_scheme.type: '%s' is not one of per-device, progression, normal", s);
      have_type = 1;
    } else if (!strcmp(key, "devices")) {
      const char *s = want_scalar(c, x, "partition_scheme.devices");
      t->devices = !strcmp(s, "auto") ? 0 : want_int(c, x, "partition_scheme.devices (or 'auto')", 1);
    } else if (!strcmp(key, "min")) {
      t->min_workers = want_int(c, x, "partition_scheme.min", 1);
    } else if (!strcmp(key, "max")) {
      const char *s = want_scalar(c, x, "partition_scheme.max");
      t->max_workers = !strcmp(s, "auto") ? 0 : want_int(c, x, "partition_scheme.max (or 'auto')", 1);
    } else {
      perr(c, k, "partition_scheme: unknown key '%s' (expected type, devices, min, max)", key);
    }
  }
  if (!have_type) perr(c, v, "partition_scheme: missing 'type' (per-device, progression or normal)");
  if (t->part == SF_PART_PROGRESSION && t->max_workers && t->max_workers < t->min_workers)
    perr(c, v, "partition_scheme: max %d is below min %d", t->max_workers, t->min_workers);
}

static void parse_field(const pctx *c, sf_profile_test *t, yaml_node_t *k, yaml_node_t *v)
{
  const char *key = scalar(k);
  if (!strcmp(key, "config")) {
    const char *s = want_scalar(c, v, "config");
    if (!*s) perr(c, v, "config: expected a path to a scaffold config file");
    if (s[0] == '/') t->config = sf_strdup(s);
    else {
      size_t n = strlen(sf_config_dir()) + strlen(s) + 2;
      t->config = sf_malloc(n, "path");
      snprintf(t->config, n, "%s/%s", sf_config_dir(), s);
    }
    t->config_line = line_of(v);
  } else if (!strcmp(key, "set")) {
    if (v->type != YAML_MAPPING_NODE) perr(c, v, "set: expected a mapping of config key: value");
    size_t np = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
    t->set = sf_calloc(np + 1, sizeof *t->set, "overrides");
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
      yaml_node_t *kk = yaml_document_get_node(c->d, p->key), *vv = yaml_document_get_node(c->d, p->value);
      const char *ck = want_scalar(c, kk, "set key");
      char *val = flow_text(c, vv, ck);
      size_t n = strlen(ck) + strlen(val) + 2;
      t->set[t->nset] = sf_malloc(n, "override");
      snprintf(t->set[t->nset++], n, "%s=%s", ck, val);
      free(val);
    }
  } else if (!strcmp(key, "args")) {
    if (v->type != YAML_SEQUENCE_NODE) perr(c, v, "args: expected a list like [--max-count, 200]");
    size_t na = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    t->args = sf_calloc(na + 1, sizeof *t->args, "args");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
      t->args[t->nargs++] = sf_strdup(want_scalar(c, yaml_document_get_node(c->d, *it), "args item"));
  } else if (!strcmp(key, "partition_scheme")) {
    parse_partition(c, t, v);
  } else if (!strcmp(key, "requires")) {
    const char *s = want_scalar(c, v, "requires");
    if (!strcmp(s, "cuda")) t->requires_cuda = 1;
    else if (strcmp(s, "none") && *s) perr(c, v, "requires: '%s' is not known (expected cuda or none)", s);
  } else if (!strcmp(key, "description")) {
    t->description = sf_strdup(want_scalar(c, v, "description"));
  } else if (!strcmp(key, "weight")) {
    perr(c, k, "test '%s': 'weight' does not belong in a profile; weights live in configs/weights/<suite>.yml "
               "so that old results can be re-weighted",
         t->name);
  } else {
    perr(c, k, "test '%s': unknown field '%s' (expected config, set, args, partition_scheme, requires, description)",
         t->name, key);
  }
}

static int valid_test_name(const char *s)
{
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '-'))
      return 0;
  return 1;
}

static void check_unique_keys(const pctx *c, yaml_node_t *m, const char *what)
{
  for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->d, p->key);
    if (k->type != YAML_SCALAR_NODE) perr(c, k, "%s: expected a name as key", what);
    for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++)
      if (!strcmp(scalar(yaml_document_get_node(c->d, q->key)), scalar(k)))
        perr(c, k, "%s: '%s' appears twice (first at line %d)", what, scalar(k),
             line_of(yaml_document_get_node(c->d, q->key)));
  }
}

void sf_profile_load(sf_profile *p, const char *path)
{
  char buf[1024];
  yaml_document_t d;
  memset(p, 0, sizeof *p);
  if (load_doc(path, &d, buf, sizeof buf) != 0) sf_die(SF_EXIT_USAGE, "profile %s", buf);
  pctx c = {path, &d};
  yaml_node_t *root = yaml_document_get_root_node(&d);
  if (!root) sf_die(SF_EXIT_USAGE, "%s:1: the profile is empty (expected a mapping of test name -> entry)", path);
  if (root->type != YAML_MAPPING_NODE) perr(&c, root, "expected a mapping of test name -> entry");
  check_unique_keys(&c, root, "profile");

  p->path = sf_strdup(path);
  const char *slash = strrchr(path, '/');
  p->suite = sf_strdup(slash ? slash + 1 : path);
  char *dot = strrchr(p->suite, '.');
  if (dot && dot != p->suite) *dot = '\0';

  yaml_node_t *defaults = NULL;
  size_t np = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
  p->tests = sf_calloc(np + 1, sizeof *p->tests, "profile tests");
  for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = yaml_document_get_node(&d, pr->key), *v = yaml_document_get_node(&d, pr->value);
    if (!strcmp(scalar(k), "*")) {
      if (v->type != YAML_MAPPING_NODE) perr(&c, v, "'*' (defaults): expected a mapping of field: value");
      check_unique_keys(&c, v, "'*'");
      defaults = v;
    }
  }
  for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = yaml_document_get_node(&d, pr->key), *v = yaml_document_get_node(&d, pr->value);
    const char *name = scalar(k);
    if (!strcmp(name, "*")) continue;
    if (!valid_test_name(name))
      perr(&c, k, "test name '%s': expected letters, digits, '_' or '-' (results are named %s.<test>)", name,
           p->suite);
    if (v->type == YAML_SCALAR_NODE && !*scalar(v)) v = NULL; /* "name:" with nothing: all defaults */
    if (v && v->type != YAML_MAPPING_NODE) perr(&c, v, "test '%s': expected a mapping of field: value", name);
    if (v) check_unique_keys(&c, v, name);
    sf_profile_test *t = &p->tests[p->n++];
    t->name = sf_strdup(name);
    t->line = line_of(k);
    t->min_workers = 1;
    t->job = cJSON_CreateObject();
    /* Shallow merge: the test's own fields, then the defaults it does not set. */
    for (int pass = 0; pass < 2; pass++) {
      yaml_node_t *m = pass == 0 ? v : defaults;
      if (!m) continue;
      for (yaml_node_pair_t *q = m->data.mapping.pairs.start; q < m->data.mapping.pairs.top; q++) {
        yaml_node_t *fk = yaml_document_get_node(&d, q->key), *fv = yaml_document_get_node(&d, q->value);
        if (pass == 1 && cJSON_HasObjectItem(t->job, scalar(fk))) continue;
        parse_field(&c, t, fk, fv);
        cJSON_AddItemToObject(t->job, scalar(fk), node_to_json(&d, fv));
      }
    }
    if (!cJSON_HasObjectItem(t->job, "partition_scheme")) {
      cJSON *ps = cJSON_AddObjectToObject(t->job, "partition_scheme");
      cJSON_AddStringToObject(ps, "type", "normal");
    }
  }
  if (p->n == 0) perr(&c, root, "the profile defines no tests (only '*')");
  yaml_document_delete(&d);
}

void sf_profile_free(sf_profile *p)
{
  for (size_t i = 0; i < p->n; i++) {
    sf_profile_test *t = &p->tests[i];
    free(t->name);
    free(t->config);
    for (size_t k = 0; k < t->nset; k++) free(t->set[k]);
    free(t->set);
    for (size_t k = 0; k < t->nargs; k++) free(t->args[k]);
    free(t->args);
    free(t->description);
    cJSON_Delete(t->job);
  }
  free(p->tests);
  free(p->path);
  free(p->suite);
  memset(p, 0, sizeof *p);
}

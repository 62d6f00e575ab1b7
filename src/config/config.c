/* The typed side of the configuration: defaults, turning an untyped YAML value into a field with
 * its type and range checks (every error names where, the key, the value and what was expected,
 * and exits with status 2), cross-key checks and derived keys (sf_config_finalize), per-key
 * origins, the -v listing, comparison and freeing. The key table is config_keys.c; YAML reading
 * and writing are config_yaml.c. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"
#include "scaffold/common.h"

typedef struct {
  sf_origin origin;
  const char *file; /* SF_ORIGIN_FILE: the kept file name */
  int line;
  char *how; /* SF_ORIGIN_OVERRIDE: the option as given */
} key_origin;

typedef struct {
  key_origin *keys; /* sf_nkeys entries */
  char **files;
  int nfiles;
} config_meta;

static config_meta *meta_of(const sf_config *c) { return (config_meta *)c->meta; }

/* ---- defaults, freeing ------------------------------------------------------------------------ */
void sf_config_init(sf_config *c)
{
  memset(c, 0, sizeof *c);
  for (int k = 0; k < sf_nkeys; k++) {
    const sf_key *key = &sf_keys[k];
    void *f = sf_key_field(c, k);
    switch (key->type) {
    case SF_KT_INT:
    case SF_KT_BOOL: *(long *)f = key->def_i; break;
    case SF_KT_FLOAT: *(double *)f = key->def_f; break;
    case SF_KT_STRING: *(char **)f = sf_strdup(key->def_s); break;
    case SF_KT_INT3: memcpy(f, key->def_i3, sizeof key->def_i3); break;
    }
  }
  config_meta *m = sf_calloc(1, sizeof *m, "config metadata");
  m->keys = sf_calloc((size_t)sf_nkeys, sizeof *m->keys, "config origins");
  c->meta = m;
}

void sf_config_free(sf_config *c)
{
  if (!c) return;
  for (int k = 0; k < sf_nkeys; k++)
    if (sf_keys[k].type == SF_KT_STRING) {
      char **s = sf_key_field(c, k);
      free(*s);
      *s = NULL;
    }
  config_meta *m = meta_of(c);
  if (m) {
    for (int k = 0; k < sf_nkeys; k++) free(m->keys[k].how);
    for (int i = 0; i < m->nfiles; i++) free(m->files[i]);
    free(m->files);
    free(m->keys);
    free(m);
  }
  free(c->source_file);
  c->source_file = NULL;
  c->meta = NULL;
}

const char *sf_config_keep_file(sf_config *c, const char *path)
{
  config_meta *m = meta_of(c);
  for (int i = 0; i < m->nfiles; i++)
    if (!strcmp(m->files[i], path)) return m->files[i];
  char **nf = realloc(m->files, (size_t)(m->nfiles + 1) * sizeof *nf);
  if (!nf) sf_die(SF_EXIT_FAILURE, "out of memory keeping config file name '%s'", path);
  m->files = nf;
  m->files[m->nfiles] = sf_strdup(path);
  if (!c->source_file) c->source_file = sf_strdup(path);
  return m->files[m->nfiles++];
}

/* ---- messages --------------------------------------------------------------------------------- */
void sf_src_format(const sf_src *s, char *buf, size_t n)
{
  if (s->file)
    snprintf(buf, n, "%s:%d", s->file, s->line);
  else
    snprintf(buf, n, "override %s", s->how ? s->how : "?");
}

/* "'text'" for a plain scalar, "\"text\"" for a quoted one, the rendering for a list. */
static void describe_value(const sf_raw *v, char *buf, size_t n)
{
  if (v->kind == SF_RAW_SCALAR && v->quoted)
    snprintf(buf, n, "\"%s\"", v->text);
  else
    snprintf(buf, n, "'%s'", v->text);
}

__attribute__((noreturn, format(printf, 4, 5))) static void value_die(const sf_src *src, int k,
                                                                      const sf_raw *v,
                                                                      const char *fmt, ...)
{
  char where[1024], val[512], what[1024];
  va_list ap;
  sf_src_format(src, where, sizeof where);
  describe_value(v, val, sizeof val);
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  sf_die(SF_EXIT_USAGE, "%s: key '%s' has value %s: %s", where, sf_keys[k].name, val, what);
}

/* ---- scalar syntax (our resolution of plain YAML scalars) ------------------------------------ */
static int is_null_word(const char *s)
{
  return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* YAML 1.1 booleans (what upstream's PyYAML reads as bool); used to refuse them as strings. */
static int is_yaml11_bool(const char *s)
{
  static const char *w[] = {"yes", "no", "true", "false", "on", "off", "y", "n"};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
    if (!strcasecmp(s, w[i])) return 1;
  return 0;
}

/* 1 = an integer, 0 = not integer syntax, -1 = integer syntax but out of range for long. */
static int parse_int(const char *s, long *out)
{
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!isdigit((unsigned char)*p)) return 0;
  for (const char *q = p; *q; q++)
    if (!isdigit((unsigned char)*q)) return 0;
  errno = 0;
  long v = strtol(s, NULL, 10);
  if (errno == ERANGE) return -1;
  *out = v;
  return 1;
}

/* 1 = a finite number, 2 = an infinity or NaN, 0 = not number syntax. Accepts integers, decimals
 * and exponents (1e-3 as well as 1.0e-3), and YAML's .inf / .nan spellings. */
static int parse_float(const char *s, double *out)
{
  const char *p = s;
  if (*p == '+' || *p == '-') p++;
  if (!strcasecmp(p, ".inf") || !strcasecmp(p, "inf") || !strcasecmp(p, "infinity") ||
      !strcasecmp(p, ".nan") || !strcasecmp(p, "nan"))
    return 2;
  int digits = 0;
  while (isdigit((unsigned char)*p)) p++, digits++;
  if (*p == '.') {
    p++;
    while (isdigit((unsigned char)*p)) p++, digits++;
  }
  if (!digits) return 0;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p)) p++;
  }
  if (*p) return 0;
  double v = strtod(s, NULL);
  if (!isfinite(v)) return 2;
  *out = v;
  return 1;
}

static int parse_flag(const char *s, long *out)
{
  if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes")) return *out = 1, 1;
  if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no")) return *out = 0, 1;
  return 0;
}

static const char *expected_type(const sf_key *key)
{
  switch (key->type) {
  case SF_KT_INT: return "an integer";
  case SF_KT_FLOAT: return "a number";
  case SF_KT_BOOL: return "a flag (0/1, true/false, yes/no)";
  case SF_KT_STRING: return "a string";
  case SF_KT_INT3: return "a list of 3 integers like [1, 1, 1]";
  }
  return "?";
}

/* ---- the typed setter ------------------------------------------------------------------------- */
static void record_origin(sf_config *c, int k, const sf_src *src)
{
  key_origin *o = &meta_of(c)->keys[k];
  free(o->how);
  o->how = NULL;
  if (src->file) {
    o->origin = SF_ORIGIN_FILE;
    o->file = sf_config_keep_file(c, src->file);
    o->line = src->line;
  } else {
    o->origin = SF_ORIGIN_OVERRIDE;
    o->file = NULL;
    o->line = 0;
    o->how = sf_strdup(src->how ? src->how : "?");
  }
}

static void set_int3(sf_config *c, int k, const sf_raw *v, const sf_src *src, long out[3])
{
  const sf_key *key = &sf_keys[k];
  if (v->kind == SF_RAW_SCALAR) {
    if (!v->quoted && is_null_word(v->text))
      value_die(src, k, v, "the value is empty: expected %s", expected_type(key));
    value_die(src, k, v, "a single value: expected %s", expected_type(key));
  }
  if (v->n != 3)
    value_die(src, k, v, "a list of %d item%s: expected exactly 3 integers like [1, 1, 1]", v->n,
              v->n == 1 ? "" : "s");
  for (int i = 0; i < 3; i++) {
    const sf_raw *it = &v->items[i];
    int r = it->kind == SF_RAW_SCALAR && !it->quoted ? parse_int(it->text, &out[i]) : 0;
    if (r != 1)
      value_die(src, k, v, "item %d ('%s') is not an integer: expected 3 integers like [1, 1, 1]",
                i + 1, it->text);
  }
}

void sf_config_set_raw(sf_config *c, int k, const sf_raw *v, const sf_src *src)
{
  const sf_key *key = &sf_keys[k];
  if (key->group == SF_KG_DERIVED && !src->file) {
    char where[1024];
    sf_src_format(src, where, sizeof where);
    sf_die(SF_EXIT_USAGE,
           "%s: key '%s' is derived (%s = %s) and cannot be set: set problem_scale or "
           "unet_bottleneck_dim instead",
           where, key->name, key->name, key->help);
  }
  if (v->kind == SF_RAW_MAP)
    value_die(src, k, v, "a mapping: expected %s", expected_type(key));

  long li = 0, l3[3] = {0, 0, 0};
  double d = 0;
  char *s = NULL;
  const void *tmp = NULL;
  if (key->type == SF_KT_INT3) {
    set_int3(c, k, v, src, l3);
    tmp = l3;
  } else {
    if (v->kind == SF_RAW_SEQ)
      value_die(src, k, v, "a list: expected a single value, %s (parameter sweeps are not "
                "supported, as upstream)", expected_type(key));
    if (!v->quoted && is_null_word(v->text))
      value_die(src, k, v, "the value is empty: expected %s%s", expected_type(key),
                key->type == SF_KT_STRING ? " (write \"\" for an empty string)" : "");
    if (key->type != SF_KT_STRING && v->quoted)
      value_die(src, k, v, "a quoted string: expected %s (unquoted)", expected_type(key));
    switch (key->type) {
    case SF_KT_INT: {
      int r = parse_int(v->text, &li);
      if (r < 0) value_die(src, k, v, "out of range: expected an integer that fits in 64 bits");
      if (r == 0) {
        /* Upstream floors a non-integer problem_scale with a warning; every other key refuses. */
        if (!strcmp(key->name, "problem_scale") && parse_float(v->text, &d) == 1 && fabs(d) < 1e15) {
          char where[1024];
          sf_src_format(src, where, sizeof where);
          li = (long)floor(d);
          sf_warn("%s: key 'problem_scale' has non-integer value '%s': using floor = %ld, as "
                  "upstream does", where, v->text, li);
        } else {
          value_die(src, k, v, "expected an integer");
        }
      }
      tmp = &li;
      break;
    }
    case SF_KT_FLOAT: {
      int r = parse_float(v->text, &d);
      if (r == 2) value_die(src, k, v, "not finite: expected a finite number");
      if (r == 0) value_die(src, k, v, "expected a number");
      tmp = &d;
      break;
    }
    case SF_KT_BOOL:
      if (!parse_flag(v->text, &li)) {
        if (!strcmp(key->name, "trace") && !strcmp(v->text, "fxt")) li = SF_TRACE_FXT; /* the one 3-valued flag */
        else value_die(src, k, v, "expected %s", key->allowed && !strcmp(key->name, "trace") ? key->allowed
                                                                                          : expected_type(key));
      }
      tmp = &li;
      break;
    case SF_KT_STRING: {
      long dummy_l;
      double dummy_d;
      if (!v->quoted) {
        const char *what = is_yaml11_bool(v->text)               ? "a boolean"
                           : parse_int(v->text, &dummy_l) != 0   ? "an integer"
                           : parse_float(v->text, &dummy_d) != 0 ? "a number"
                                                                 : NULL;
        if (what)
          value_die(src, k, v, "%s, not a string: expected a string (quote it: \"%s\")", what,
                    v->text);
      }
      s = v->text;
      tmp = &s;
      break;
    }
    default: SF_ABORT("key type %d", (int)key->type);
    }
  }
  if (key->ok && !key->ok(tmp)) value_die(src, k, v, "out of range: expected %s", key->allowed);
  /* Derived keys read from a file (our own config.yaml) are checked for type, then recomputed. */
  if (key->group == SF_KG_DERIVED) return;

  void *f = sf_key_field(c, k);
  switch (key->type) {
  case SF_KT_INT:
  case SF_KT_BOOL: *(long *)f = li; break;
  case SF_KT_FLOAT: *(double *)f = d; break;
  case SF_KT_STRING:
    free(*(char **)f);
    *(char **)f = sf_strdup(s);
    break;
  case SF_KT_INT3: memcpy(f, l3, sizeof l3); break;
  }
  record_origin(c, k, src);
}

/* ---- cross-key checks and derived keys -------------------------------------------------------- */
static void origin_text(const sf_config *c, int k, char *buf, size_t n)
{
  const key_origin *o = &meta_of(c)->keys[k];
  if (sf_keys[k].group == SF_KG_DERIVED)
    snprintf(buf, n, "derived");
  else if (o->origin == SF_ORIGIN_FILE)
    snprintf(buf, n, "%s:%d", o->file, o->line);
  else if (o->origin == SF_ORIGIN_OVERRIDE)
    snprintf(buf, n, "override %s", o->how);
  else
    snprintf(buf, n, "default");
}

/* Names both keys of a failed cross-key rule with their values. The message starts at the origin of
 * key a, or of key b when a has its default and b does not; the other key's origin follows it. */
__attribute__((noreturn, format(printf, 4, 5))) static void cross_die(const sf_config *c, const char *a,
                                                                      const char *b, const char *fmt,
                                                                      ...)
{
  int ka = sf_key_find(a), kb = sf_key_find(b);
  SF_ASSERT(ka >= 0 && kb >= 0);
  if (meta_of(c)->keys[ka].origin == SF_ORIGIN_DEFAULT && meta_of(c)->keys[kb].origin != SF_ORIGIN_DEFAULT) {
    int t = ka;
    ka = kb;
    kb = t;
  }
  char oa[1024], ob[1024], what[1024];
  char *va = sf_config_format_key(c, ka), *vb = sf_config_format_key(c, kb);
  origin_text(c, ka, oa, sizeof oa);
  origin_text(c, kb, ob, sizeof ob);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  sf_die(SF_EXIT_USAGE, "%s: key '%s' has value '%s' and key '%s' has value '%s' (from %s): %s", oa,
         sf_keys[ka].name, va, sf_keys[kb].name, vb, ob, what);
}

void sf_config_refuse(const sf_config *c, const char *key, const char *fmt, ...)
{
  int k = sf_key_find(key);
  SF_ASSERT(k >= 0);
  char where[1100], what[2048];
  char *v = sf_config_format_key(c, k);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int quoted = sf_keys[k].type == SF_KT_STRING; /* format_key already quoted it */
  if (sf_keys[k].group != SF_KG_DERIVED && meta_of(c)->keys[k].origin == SF_ORIGIN_DEFAULT) {
    sf_die(SF_EXIT_USAGE, "key '%s' has its default value %s%s%s: %s", key, quoted ? "" : "'", v,
           quoted ? "" : "'", what);
  }
  origin_text(c, k, where, sizeof where);
  sf_die(SF_EXIT_USAGE, "%s: key '%s' has value %s%s%s: %s", where, key, quoted ? "" : "'", v, quoted ? "" : "'",
         what);
}

void sf_config_refuse2(const sf_config *c, const char *a, const char *b, const char *fmt, ...)
{
  char what[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  cross_die(c, a, b, "%s", what);
}

void sf_config_finalize(sf_config *c)
{
  if (c->unet_bottleneck_dim > c->problem_scale - 1)
    cross_die(c, "problem_scale", "unet_bottleneck_dim",
              "expected problem_scale >= unet_bottleneck_dim + 1 = %ld (the U-Net needs at least "
              "one level)", c->unet_bottleneck_dim + 1);
  if (c->n_instances_used_per_fractal < c->n_fracts_per_vol)
    cross_die(c, "n_instances_used_per_fractal", "n_fracts_per_vol",
              "expected n_instances_used_per_fractal >= n_fracts_per_vol = %ld", c->n_fracts_per_vol);
  if (c->min_learning_rate > c->starting_learning_rate)
    cross_die(c, "min_learning_rate", "starting_learning_rate",
              "expected min_learning_rate <= starting_learning_rate");
  if (c->unet_base_channels % c->group_norm_groups != 0)
    cross_die(c, "unet_base_channels", "group_norm_groups",
              "expected unet_base_channels to be a multiple of group_norm_groups = %ld (every "
              "GroupNorm splits its channels into that many groups)", c->group_norm_groups);
  c->unet_layers = c->problem_scale - c->unet_bottleneck_dim;
  c->vol_size = 1L << c->problem_scale;
  c->point_num = c->vol_size * c->vol_size * c->vol_size / 256; /* int(vol_size**3 / 256) */
}

/* ---- formatting, printing, introspection ------------------------------------------------------ */
void sf_config_shard_grid(const sf_config *c, int grid[3])
{
  grid[0] = grid[1] = grid[2] = 1;
  for (int i = 0; i < 3; i++)
    if (c->dc_shard_dims[i] >= 2 && c->dc_shard_dims[i] <= 4) grid[c->dc_shard_dims[i] - 2] *= (int)c->dc_num_shards[i];
  grid[0] *= (int)(c->spatial_ranks > 1 ? c->spatial_ranks : 1);
}

long sf_config_spatial(const sf_config *c)
{
  int g[3];
  sf_config_shard_grid(c, g);
  return (long)g[0] * g[1] * g[2];
}

void sf_format_double(double x, char *buf, size_t n)
{
  char tmp[64];
  /* Exponent form only for magnitudes where plain digits would be long (30 -> "30", not "3e+01"). */
  int plain = fabs(x) >= 1e-4 && fabs(x) < 1e16;
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, x);
    if (strtod(tmp, NULL) == x && (prec == 17 || !plain || !strpbrk(tmp, "eE"))) break;
  }
  /* Make it read as a float in YAML 1.1 too (PyYAML wants a '.' and a signed exponent). */
  char *e = strpbrk(tmp, "eE");
  if (!strchr(tmp, '.') && isfinite(x)) {
    if (e) {
      char exp[32];
      snprintf(exp, sizeof exp, "%s", e);
      snprintf(e, sizeof tmp - (size_t)(e - tmp), ".0%s", exp);
    } else {
      strncat(tmp, ".0", sizeof tmp - strlen(tmp) - 1);
    }
  }
  snprintf(buf, n, "%s", tmp);
}

/* Double-quoted YAML string with escapes for '"', '\\', control characters, and the characters a
 * YAML reader would not give back as they are: the line breaks NEL, LS, PS (folded into spaces),
 * C1 controls, U+FFFE/U+FFFF (refused) and U+FEFF. Values are UTF-8 (libyaml checks its input). */
static char *quote_string(const char *s)
{
  size_t n = strlen(s), k = 0;
  char *out = sf_malloc(4 * n + 3, "quoted string");
  out[k++] = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': out[k++] = '\\', out[k++] = '"'; break;
    case '\\': out[k++] = '\\', out[k++] = '\\'; break;
    case '\n': out[k++] = '\\', out[k++] = 'n'; break;
    case '\t': out[k++] = '\\', out[k++] = 't'; break;
    case '\r': out[k++] = '\\', out[k++] = 'r'; break;
    default:
      if (*p < 0x20 || *p == 0x7f) {
        k += (size_t)sprintf(out + k, "\\x%02x", *p);
      } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* U+0080..U+009F */
        k += (size_t)(p[1] == 0x85 ? sprintf(out + k, "\\N") : sprintf(out + k, "\\x%02x", p[1]));
        p++;
      } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) { /* U+2028, U+2029 */
        k += (size_t)sprintf(out + k, "\\%c", p[2] == 0xa8 ? 'L' : 'P');
        p += 2;
      } else if (p[0] == 0xef && ((p[1] == 0xbf && p[2] >= 0xbe) || (p[1] == 0xbb && p[2] == 0xbf))) {
        k += (size_t)sprintf(out + k, "\\u%s", p[1] == 0xbb ? "FEFF" : p[2] == 0xbe ? "FFFE" : "FFFF");
        p += 2;
      } else {
        out[k++] = (char)*p;
      }
    }
  }
  out[k++] = '"';
  out[k] = '\0';
  return out;
}

char *sf_config_format_key(const sf_config *c, int k)
{
  const void *f = sf_key_cfield(c, k);
  char buf[128];
  switch (sf_keys[k].type) {
  case SF_KT_INT: snprintf(buf, sizeof buf, "%ld", *(const long *)f); break;
  case SF_KT_BOOL:
    if (!strcmp(sf_keys[k].name, "trace") && *(const long *)f == SF_TRACE_FXT) return sf_strdup("fxt");
    snprintf(buf, sizeof buf, "%ld", *(const long *)f);
    break;
  case SF_KT_FLOAT: sf_format_double(*(const double *)f, buf, sizeof buf); break;
  case SF_KT_STRING: return quote_string(*(char *const *)f);
  case SF_KT_INT3: {
    const long *v = f;
    snprintf(buf, sizeof buf, "[%ld, %ld, %ld]", v[0], v[1], v[2]);
    break;
  }
  }
  return sf_strdup(buf);
}

void sf_config_print(const sf_config *c, FILE *out)
{
  fprintf(out, "# effective configuration (%d keys): key: value  # origin\n", sf_nkeys);
  for (int k = 0; k < sf_nkeys; k++) {
    char *v = sf_config_format_key(c, k);
    char o[1100];
    origin_text(c, k, o, sizeof o);
    int w = fprintf(out, "%s: %s", sf_keys[k].name, v);
    fprintf(out, "%*s  # %s\n", w < 48 ? 48 - w : 0, "", o);
    free(v);
  }
}

int sf_config_nkeys(void) { return sf_nkeys; }
const char *sf_config_key_name(int i) { return i >= 0 && i < sf_nkeys ? sf_keys[i].name : NULL; }
int sf_config_key_index(const char *name) { return sf_key_find(name); }

sf_origin sf_config_origin_of(const sf_config *c, const char *key)
{
  int k = sf_key_find(key);
  if (k < 0 || sf_keys[k].group == SF_KG_DERIVED) return SF_ORIGIN_DEFAULT;
  return meta_of(c)->keys[k].origin;
}

char *sf_config_origin_string(const sf_config *c, const char *key)
{
  int k = sf_key_find(key);
  if (k < 0) return NULL;
  char o[1100];
  origin_text(c, k, o, sizeof o);
  return sf_strdup(o);
}

char *sf_config_value_string(const sf_config *c, const char *key)
{
  int k = sf_key_find(key);
  return k < 0 ? NULL : sf_config_format_key(c, k);
}

int sf_config_compare(const sf_config *a, const sf_config *b, FILE *report)
{
  int ndiff = 0;
  for (int k = 0; k < sf_nkeys; k++) {
    const void *fa = sf_key_cfield(a, k), *fb = sf_key_cfield(b, k);
    int same = 1;
    switch (sf_keys[k].type) {
    case SF_KT_INT:
    case SF_KT_BOOL: same = *(const long *)fa == *(const long *)fb; break;
    case SF_KT_FLOAT: same = memcmp(fa, fb, sizeof(double)) == 0; break;
    case SF_KT_STRING: same = strcmp(*(char *const *)fa, *(char *const *)fb) == 0; break;
    case SF_KT_INT3: same = memcmp(fa, fb, 3 * sizeof(long)) == 0; break;
    }
    if (!same) {
      ndiff++;
      if (report) {
        char *va = sf_config_format_key(a, k), *vb = sf_config_format_key(b, k);
        fprintf(report, "%s: %s != %s\n", sf_keys[k].name, va, vb);
        free(va);
        free(vb);
      }
    }
  }
  return ndiff;
}

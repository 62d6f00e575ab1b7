/* Private to src/config: the key table (config_keys.c), the parsed-but-untyped value that the YAML
 * reader and the override parser both produce (config_yaml.c), and the typed setter that turns such
 * a value into a struct field with every check and its origin (config.c). Nothing outside
 * src/config includes this header; the public API is scaffold/config.h. */
#ifndef SF_CONFIG_INTERNAL_H
#define SF_CONFIG_INTERNAL_H

#include <stddef.h>

#include "scaffold/config.h"

typedef enum { SF_KT_INT, SF_KT_FLOAT, SF_KT_BOOL, SF_KT_STRING, SF_KT_INT3 } sf_key_type;

/* Groups, in the order of upstream's benchmark_default.yml, then ours, then derived. */
typedef enum {
  SF_KG_EXTERNAL, /* upstream "External/user-facing" */
  SF_KG_PROBLEM,  /* upstream "External problem specification" */
  SF_KG_LR,       /* upstream "External learning rate specification" */
  SF_KG_INTERNAL, /* upstream "Internal/dev use only" */
  SF_KG_AUX,      /* upstream: accepted but not in the YAML */
  SF_KG_OURS,     /* ScaFFold-StarPU only */
  SF_KG_DERIVED,  /* recomputed by sf_config_finalize; accepted (and ignored) in files */
  SF_KG_COUNT
} sf_key_group;

typedef struct {
  const char *name;
  sf_key_type type;
  size_t offset; /* of the field in sf_config */
  sf_key_group group;
  long def_i;        /* INT, BOOL */
  double def_f;      /* FLOAT */
  const char *def_s; /* STRING */
  long def_i3[3];    /* INT3 */
  /* Range check of one value (NULL = any value of the type). field points at the struct member. */
  int (*ok)(const void *field);
  const char *allowed; /* what ok() accepts, phrased to follow "expected " and for the docs */
  const char *flag;    /* upstream-style CLI flag that sets it ("--problem-scale"), or NULL */
  const char *help;    /* one line: meaning */
} sf_key;

extern const sf_key sf_keys[];
extern const int sf_nkeys;

/* Index of a key by exact name, or -1. */
int sf_key_find(const char *name);

/* A key of older upstream versions (spec §13) that current upstream no longer reads, with the key
 * that replaced it: refused with a message naming the current key, not as an unknown key. */
typedef struct {
  const char *name; /* "batch_size" */
  const char *use;  /* "local_batch_size" */
  const char *why;  /* what changed, one clause */
} sf_old_key;
/* The older key of that name, or NULL. */
const sf_old_key *sf_old_key_find(const char *name);
/* "key 'batch_size' (value '2') is from older ScaFFold versions: use 'local_batch_size' instead
 * (...)"; value may be NULL (then no value is named). */
void sf_old_key_message(const sf_old_key *o, const char *value, char *buf, size_t n);
/* The known key closest to name when its edit distance is <= 2, else NULL. */
const char *sf_key_suggest(const char *name);
const char *sf_key_group_title(sf_key_group g);
const char *sf_key_type_name(sf_key_type t);

static inline void *sf_key_field(sf_config *c, int k) { return (char *)c + sf_keys[k].offset; }
static inline const void *sf_key_cfield(const sf_config *c, int k)
{
  return (const char *)c + sf_keys[k].offset;
}

/* ---- untyped values, as read from YAML --------------------------------------------------------- */
typedef enum { SF_RAW_SCALAR, SF_RAW_SEQ, SF_RAW_MAP } sf_raw_kind;

typedef struct sf_raw {
  sf_raw_kind kind;
  int quoted;        /* scalar: written quoted or tagged !!str, so it is a string whatever it reads */
  char *text;        /* scalar text; for SEQ/MAP a short rendering for messages ("[1, 1]") */
  int line;          /* 1-based line in the file; 0 for overrides */
  int n;             /* SEQ: number of items */
  struct sf_raw *items;
} sf_raw;

void sf_raw_free(sf_raw *v);

/* Where a value came from, for messages and origins. */
typedef struct {
  const char *file; /* NULL for an override */
  int line;
  const char *how; /* override: the option as given ("--set epochs=3", "--epochs 3") */
} sf_src;

/* Formats the location part of a message ("cfg.yml:12" or "override --set epochs=3"). */
void sf_src_format(const sf_src *s, char *buf, size_t n);

/* Types, checks and stores v into key k, recording its origin. Dies (status 2) naming the source,
 * the key, the value and what was expected. */
void sf_config_set_raw(sf_config *c, int k, const sf_raw *v, const sf_src *src);

/* Applies one override of key (by name) to the YAML text value; how is the option as given, for
 * messages and the origin ("--set epochs=3", "--epochs 3"). Dies (status 2) on any error. */
void sf_config_override_key(sf_config *c, const char *key, const char *value, const char *how);

/* Remembers a loaded file name for the lifetime of c and returns the stored copy. */
const char *sf_config_keep_file(sf_config *c, const char *path);

/* Value of key k in YAML flow form (strings double-quoted and escaped, doubles in the shortest
 * form that reads back to the same bits, always with a '.' or exponent). Malloc'ed. */
char *sf_config_format_key(const sf_config *c, int k);
/* Shortest %.Ng (N = 1..17) that strtod reads back exactly, made to look like a YAML float. */
void sf_format_double(double x, char *buf, size_t n);

#endif

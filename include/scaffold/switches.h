/* The product's environment switches: one table (src/util/switches.c) of every variable the
 * `scaffold` executable and its libraries read, with its allowed values, default, meaning and the
 * layer that reads it. Every read goes through sf_switch(), which refuses a name missing from the
 * table (a programming error) and a value outside the allowed ones (a user error, exit status 2).
 * `scaffold` checks every switch that is set before any command starts (sf_switches_check).
 *
 * Two tables: the product's switches, and the test hooks (fault injection, stand-in executables),
 * which only a tester's own environment may set: a result file's recorded environment never carries
 * them (docs/harness.md, "What a result file may contain"). */
#ifndef SF_SWITCHES_H
#define SF_SWITCHES_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
  SF_SWITCH_PRODUCT, /* a user-facing switch */
  SF_SWITCH_TEST     /* a test hook: never recorded in or applied from a result file */
} sf_switch_scope;

typedef struct {
  const char *name;
  sf_switch_scope scope;
  int replay;                     /* 1: `scaffold rerun` may apply it from a result file */
  int (*valid)(const char *value); /* 1 when the (non-empty) value is allowed; NULL: one of values */
  const char *values;             /* the allowed values: "a | b | c" literally when valid is NULL */
  const char *unset;              /* what happens when it is unset or empty */
  const char *layer;              /* the layer that reads it (docs/architecture.md) */
  const char *meaning;
} sf_switch_def;

/* The value of a listed switch, or NULL when it is unset or empty. Dies with status 2 naming the
 * variable, its value and the allowed values when the value is not allowed; aborts when name is not
 * in either table. */
const char *sf_switch(const char *name);
/* 1 when the switch is set to exactly value (convenience for 0/1 switches). */
int sf_switch_is(const char *name, const char *value);

/* The entry for name, or NULL. */
const sf_switch_def *sf_switch_find(const char *name);
/* 1 when value (non-empty) is one the switch allows. */
int sf_switch_value_ok(const sf_switch_def *s, const char *value);
/* Table access, for the docs, -v and the result file: i from 0 while non-NULL. */
const sf_switch_def *sf_switch_at(int i);

/* Checks every switch set in the environment; dies with status 2 at the first bad value. */
void sf_switches_check(void);
/* "# environment switches: NAME=VALUE ..." for those set, or a line saying none is set: a comment
 * line of the -v listing, which is YAML. */
void sf_switches_print(FILE *out);
/* The markdown table of both tables, as docs/config.md embeds it. */
void sf_switches_write_markdown(FILE *out);

#endif

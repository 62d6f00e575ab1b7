/* Stale perfmodel classes (scaffold/perfmodels.h, docs/perfmodels.md "The identity of a perfmodel"): the
 * registry of this build's perfmodel symbols, filled by the codelets' constructors (SF_CODELET), and the
 * comparison of a class's history files with it. A history file is <symbol>.<class>; its codelet is the
 * longest registered op name `op` with the symbol starting "sf_<op>_" (so sf_conv3d_fwd_bf16_bf16_v1
 * belongs to conv3d_fwd_bf16, not conv3d_fwd). A codelet is stale when the class has a model of it but
 * none under this build's symbol, absent when it has none at all. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfmodels_notice.h"
#include "scaffold/common.h"
#include "scaffold/perfmodels.h"

#define MAX_CODELETS 256

typedef struct {
  const char *op, *family, *symbol;
} entry;

static entry g_reg[MAX_CODELETS];
static int g_nreg;
static int g_verbose;

void sf_perfmodels_register(const char *op, const char *family, const char *symbol)
{
  for (int i = 0; i < g_nreg; i++)
    if (!strcmp(g_reg[i].op, op)) return; /* the same codelet from two translation units (tests) */
  if (g_nreg < MAX_CODELETS) g_reg[g_nreg++] = (entry){op, family, symbol};
}

int sf_perfmodels_ncodelets(void) { return g_nreg; }

void sf_perfmodels_set_verbose(int verbose) { g_verbose = verbose; }

/* The registered codelet a symbol belongs to, or -1. */
static int owner(const char *sym, size_t len)
{
  int best = -1;
  size_t best_len = 0;
  if (len < 4 || strncmp(sym, "sf_", 3) != 0) return -1;
  for (int i = 0; i < g_nreg; i++) {
    size_t k = strlen(g_reg[i].op);
    if (k + 3 < len && !strncmp(sym + 3, g_reg[i].op, k) && sym[3 + k] == '_' && k > best_len) {
      best = i;
      best_len = k;
    }
  }
  return best;
}

typedef struct {
  char *buf;
  size_t len, cap;
} text;

__attribute__((format(printf, 2, 3))) static void appendf(text *t, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = (t->len + (size_t)n + 1) * 2;
    char *b = sf_malloc(cap, "perfmodel staleness report");
    if (t->buf) memcpy(b, t->buf, t->len + 1);
    free(t->buf);
    t->buf = b;
    t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* Reads the history files <symbol>.<cls> of dir: current[i] when codelet i has one under this build's
 * symbol, seen[i] (malloc'ed) = the first other symbol of it in name order. Returns the number of files of
 * registered codelets, or -1 when dir cannot be read. */
static int scan(const char *dir, const char *cls, int *current, char **seen)
{
  DIR *d = opendir(dir);
  if (!d) return -1;
  char suffix[256];
  snprintf(suffix, sizeof suffix, ".%s", cls);
  size_t sl = strlen(suffix);
  int nfiles = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n <= sl || strcmp(e->d_name + n - sl, suffix) != 0) continue;
    size_t symlen = n - sl;
    int i = owner(e->d_name, symlen);
    if (i < 0) continue;
    nfiles++;
    if (strlen(g_reg[i].symbol) == symlen && !strncmp(g_reg[i].symbol, e->d_name, symlen)) {
      current[i] = 1;
    } else if (!seen[i] || strncmp(seen[i], e->d_name, symlen) > 0) {
      free(seen[i]);
      seen[i] = sf_malloc(symlen + 1, "perfmodel symbol");
      memcpy(seen[i], e->d_name, symlen);
      seen[i][symlen] = '\0';
    }
  }
  closedir(d);
  return nfiles;
}

int sf_perfmodels_check(const char *codelets_dir, const char *cls, sf_perfmodels_staleness *s)
{
  memset(s, 0, sizeof *s);
  s->ncodelets = g_nreg;
  int current[MAX_CODELETS] = {0};
  char *seen[MAX_CODELETS] = {0};
  if ((s->nfiles = scan(codelets_dir, cls, current, seen)) < 0) {
    s->nfiles = 0;
    return -1;
  }
  text stale = {0}, absent = {0};
  size_t flen = 0;
  for (int i = 0; i < g_nreg; i++) {
    const entry *r = &g_reg[i];
    if (current[i]) {
      /* calibrated for these kernels */
    } else if (seen[i]) {
      s->nstale++;
      appendf(&stale, "  stale: %s (family %s): the class has %s.%s, this build reads %s.%s\n", r->op, r->family,
              seen[i], cls, r->symbol, cls);
      int listed = 0;
      for (int j = 0; j < i; j++)
        listed |= !current[j] && seen[j] && !strcmp(g_reg[j].family, r->family);
      if (!listed) {
        int k = snprintf(s->families + flen, sizeof s->families - flen, "%s%s", flen ? ", " : "", r->family);
        if (k > 0 && flen + (size_t)k < sizeof s->families) flen += (size_t)k;
      }
    } else {
      s->nabsent++;
      appendf(&absent, "  not in the class: %s (family %s): no model; this build reads %s.%s\n", r->op, r->family,
              r->symbol, cls);
    }
  }
  for (int i = 0; i < g_nreg; i++) free(seen[i]);
  if (absent.buf) appendf(&stale, "%s", absent.buf);
  free(absent.buf);
  s->detail = stale.buf;
  return 0;
}

int sf_perfmodels_alias_stale(const char *codelets_dir, const char *cls)
{
  int current[MAX_CODELETS] = {0};
  char *seen[MAX_CODELETS] = {0};
  if (scan(codelets_dir, cls, current, seen) < 0) return -1;
  int n = 0, rc = 0;
  for (int i = 0; i < g_nreg; i++) {
    if (!current[i] && seen[i] && rc == 0) {
      char from[4096], to[4096];
      snprintf(from, sizeof from, "%s/%s.%s", codelets_dir, seen[i], cls);
      snprintf(to, sizeof to, "%s/%s.%s", codelets_dir, g_reg[i].symbol, cls);
      if (rename(from, to) != 0) rc = -1;
      else n++;
    }
    free(seen[i]);
  }
  return rc ? -1 : n;
}

void sf_perfmodels_staleness_free(sf_perfmodels_staleness *s)
{
  free(s->detail);
  s->detail = NULL;
}

char *sf_perfmodels_stale_summary(const sf_perfmodels_staleness *s, const char *cls, char *buf, size_t len)
{
  snprintf(buf, len, "perfmodels %s: %d of %d codelets were calibrated for other kernels (list with -v; families: %s)",
           cls, s->nstale, s->ncodelets, s->families[0] ? s->families : "none");
  return buf;
}

/* At the start of a dm* or heft run with a shipped class: the report, when the class holds stale models. */
void sf_perfmodels_stale_notice(const char *sched, const char *cls, const char *shipped_codelets,
                                const char *cache_codelets)
{
  if (g_nreg == 0) return; /* a program without codelets */
  sf_perfmodels_staleness s, c;
  if (sf_perfmodels_check(shipped_codelets, cls, &s) != 0 || s.nstale == 0) {
    sf_perfmodels_staleness_free(&s);
    return;
  }
  char sum[1024], learnt[256] = "";
  /* models of this build that earlier runs here already wrote into the per-user copy */
  if (cache_codelets && sf_perfmodels_check(cache_codelets, cls, &c) == 0 && c.nstale < s.nstale)
    snprintf(learnt, sizeof learnt, " (the cache already holds this build's models of %d of them, from earlier runs "
             "here)", s.nstale - c.nstale);
  if (cache_codelets) sf_perfmodels_staleness_free(&c);
  sf_info("runtime: %s; %s will calibrate them during this run%s; `scaffold calibrate --class %s` fixes this for good "
          "(docs/perfmodels.md)",
          sf_perfmodels_stale_summary(&s, cls, sum, sizeof sum), sched, learnt, cls);
  if (g_verbose && s.detail) fputs(s.detail, stdout);
  sf_perfmodels_staleness_free(&s);
}

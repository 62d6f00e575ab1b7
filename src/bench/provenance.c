/* Where two result sets come from (docs/harness.md, "Baselines and their identity"): the commits
 * their results record ("_commits" of a summary) and the machine of their first good result (CPU
 * model and core count, "_machine") and the identity of their kernels ("_kernel_identity": each kernel
 * family's source hash). `report --compare` and `compare` print one line when the baseline was measured
 * on another commit, another machine or other kernels, naming both and the families that differ, so a
 * ratio is not read as a change of the code alone. */
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

/* "fe9cb78", "fe9cb78+0a1b2c3" for a set measured on several commits, or "" when none is recorded. */
static void commits_text(const sf_summary *s, char *buf, size_t n)
{
  size_t k = 0;
  buf[0] = '\0';
  const cJSON *c;
  cJSON_ArrayForEach(c, s->commits)
  {
    if (!cJSON_IsString(c) || k + 2 >= n) continue;
    int w = snprintf(buf + k, n - k, "%s%s", k ? "+" : "", c->valuestring);
    if (w < 0 || (size_t)w >= n - k) break;
    k += (size_t)w;
  }
}

/* "AMD EPYC 7B13 (2 cores)", or "" when the set has no machine record. */
static void machine_text(const sf_summary *s, char *buf, size_t n)
{
  buf[0] = '\0';
  if (!s->machine) return;
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(s->machine, "cpu_model");
  const cJSON *cores = cJSON_GetObjectItemCaseSensitive(s->machine, "cores");
  const char *m = cJSON_IsString(model) && model->valuestring[0] ? model->valuestring : "unknown CPU";
  if (cJSON_IsNumber(cores)) snprintf(buf, n, "%s (%.0f cores)", m, cores->valuedouble);
  else snprintf(buf, n, "%s", m);
}

/* The hash of family `fam` (fl characters, "conv3d") in a "family=hash ..." identity, its length in *hl;
 * NULL when the identity does not list the family */
static const char *family_hash(const char *ids, const char *fam, size_t fl, size_t *hl)
{
  for (const char *q = ids; *q;) {
    while (*q == ' ') q++;
    size_t wl = strcspn(q, " ");
    if (wl > fl && q[fl] == '=' && !strncmp(q, fam, fl)) {
      *hl = wl - fl - 1;
      return q + fl + 1;
    }
    q += wl;
  }
  return NULL;
}

/* The families whose kernels differ between two identities: "conv3d 1a2b3c4d -> 5e6f7a8b, loss none ->
 * 41945a0b" (baseline -> results); "" when none does or either is unknown. */
static void kernels_text(const char *base, const char *now, char *buf, size_t n)
{
  buf[0] = '\0';
  if (!base || !now) return;
  size_t k = 0;
  for (const char *p = now; *p && k + 2 < n;) {
    while (*p == ' ') p++;
    size_t wl = strcspn(p, " "), fl = strcspn(p, "="), hl = 4;
    if (fl < wl) {
      const char *old = family_hash(base, p, fl, &hl);
      if (!old || hl != wl - fl - 1 || strncmp(old, p + fl + 1, hl)) {
        int w = snprintf(buf + k, n - k, "%s%.*s %.*s -> %.*s", k ? ", " : "", (int)fl, p, (int)(old ? hl : 4),
                         old ? old : "none", (int)(wl - fl - 1), p + fl + 1);
        k = w < 0 || (size_t)w >= n - k ? n - 1 : k + (size_t)w;
      }
    }
    p += wl;
  }
}

char *sf_summary_identity_warning(const sf_summary *s, const char *label, const sf_summary *base,
                                  const char *base_label)
{
  char cs[256], cb[256], ms[256], mb[256], kd[512];
  kernels_text(base->kernel_identity, s->kernel_identity, kd, sizeof kd);
  commits_text(s, cs, sizeof cs);
  commits_text(base, cb, sizeof cb);
  machine_text(s, ms, sizeof ms);
  machine_text(base, mb, sizeof mb);
  int commit_differs = cs[0] && cb[0] && strcmp(cs, cb) != 0;
  int machine_differs = ms[0] && mb[0] && strcmp(ms, mb) != 0;
  int commit_unknown = !cb[0] && cs[0]; /* an older baseline: no commit recorded */
  if (!commit_differs && !machine_differs && !commit_unknown && !kd[0]) return NULL;
  char what[96];
  if (commit_differs || machine_differs || kd[0])
    snprintf(what, sizeof what, "was measured %s%s%s%s%s%s", commit_differs || machine_differs ? "on " : "",
             commit_differs ? "another commit" : "", commit_differs && machine_differs ? " and " : "",
             machine_differs ? "another machine" : "", kd[0] && (commit_differs || machine_differs) ? ", " : "",
             kd[0] ? "with other kernels" : "");
  else
    snprintf(what, sizeof what, "records no commit, so it may come from other code");
  size_t n = strlen(label) + strlen(base_label) + sizeof cs + sizeof cb + sizeof ms + sizeof mb + sizeof kd + 256;
  char *line = sf_malloc(n, "warning");
  snprintf(line, n,
           "%s: the baseline %s %s: baseline commit %s on %s, results (%s) commit %s on %s%s%s; a perf ratio "
           "then measures the code and the machine together",
           commit_differs || machine_differs || kd[0] ? "warning" : "note", base_label, what, cb[0] ? cb : "not recorded",
           mb[0] ? mb : "an unrecorded machine", label, cs[0] ? cs : "not recorded", ms[0] ? ms : "an unrecorded machine",
           kd[0] ? "; kernels that differ (baseline -> results): " : "", kd);
  return line;
}

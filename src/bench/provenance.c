/* Where two result sets come from (docs/harness.md, "Baselines and their identity"): the commits
 * their results record ("_commits" of a summary) and the machine of their first good result (CPU
 * model and core count, "_machine"). `report --compare` and `compare` print one line when the
 * baseline was measured on another commit or another machine, naming both, so a ratio is not read
 * as a change of the code alone. */
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

char *sf_summary_identity_warning(const sf_summary *s, const char *label, const sf_summary *base,
                                  const char *base_label)
{
  char cs[256], cb[256], ms[256], mb[256];
  commits_text(s, cs, sizeof cs);
  commits_text(base, cb, sizeof cb);
  machine_text(s, ms, sizeof ms);
  machine_text(base, mb, sizeof mb);
  int commit_differs = cs[0] && cb[0] && strcmp(cs, cb) != 0;
  int machine_differs = ms[0] && mb[0] && strcmp(ms, mb) != 0;
  int commit_unknown = !cb[0] && cs[0]; /* an older baseline: no commit recorded */
  if (!commit_differs && !machine_differs && !commit_unknown) return NULL;
  char what[96];
  if (commit_differs || machine_differs)
    snprintf(what, sizeof what, "was measured on %s%s%s", commit_differs ? "another commit" : "",
             commit_differs && machine_differs ? " and " : "", machine_differs ? "another machine" : "");
  else
    snprintf(what, sizeof what, "records no commit, so it may come from other code");
  size_t n = strlen(label) + strlen(base_label) + sizeof cs + sizeof cb + sizeof ms + sizeof mb + 256;
  char *line = sf_malloc(n, "warning");
  snprintf(line, n,
           "%s: the baseline %s %s: baseline commit %s on %s, results (%s) commit %s on %s; a perf ratio "
           "then measures the code and the machine together",
           commit_differs || machine_differs ? "warning" : "note", base_label, what, cb[0] ? cb : "not recorded",
           mb[0] ? mb : "an unrecorded machine", label, cs[0] ? cs : "not recorded", ms[0] ? ms : "an unrecorded machine");
  return line;
}

/* Fuzz target: the harness's YAML readers (src/bench/yamlfiles.c), fed the input as a file:
 *   sf_yaml_load_json   generic YAML -> JSON (returns NULL with a message on bad input);
 *   sf_weights_load     a weights file (returns -1 after printing file:line);
 *   sf_profile_load     a profile (exits with status 2 naming the file; run inside sf_fuzz_try).
 * Oracles: messages are present; a profile error has status 2 and names the file; a loaded
 * weights table has finite weights >= 0 and distinct names; a loaded profile has >= 1 test; the
 * JSON made from the YAML has at most SF_FUZZ_MAX_EXPANSION nodes per input byte (YAML aliases
 * can otherwise expand a few hundred bytes into millions of nodes: "billion laughs"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "scaffold/bench.h"
#include "scaffold/common.h"

#define SF_FUZZ_MAX_EXPANSION 64

static size_t json_nodes(const cJSON *j)
{
  size_t n = 1;
  for (const cJSON *c = j ? j->child : NULL; c; c = c->next) n += json_nodes(c);
  return n;
}

typedef struct {
  sf_profile *p;
  const char *path;
} profile_args;

static void load_profile(void *arg)
{
  profile_args *a = arg;
  sf_profile_load(a->p, a->path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = sf_fuzz_memfd_path(data, size);

  char *err = NULL;
  cJSON *j = sf_yaml_load_json(path, &err);
  if (!j) {
    SF_FUZZ_ASSERT(err && *err, "sf_yaml_load_json returned NULL without a message");
    free(err);
  } else {
    size_t nodes = json_nodes(j);
    SF_FUZZ_ASSERT(nodes <= SF_FUZZ_MAX_EXPANSION * (size + 1), "%zu input bytes became %zu JSON nodes", size, nodes);
    char *text = sf_json_print(j);
    free(text);
    cJSON_Delete(j);
  }

  sf_weights w;
  if (sf_weights_load(&w, path) == 0) {
    for (size_t i = 0; i < w.n; i++) {
      SF_FUZZ_ASSERT(isfinite(w.w[i]) && w.w[i] >= 0, "weight of '%s' is %g", w.names[i], w.w[i]);
      for (size_t k = 0; k < i; k++)
        SF_FUZZ_ASSERT(strcmp(w.names[k], w.names[i]) != 0, "'%s' loaded twice", w.names[i]);
    }
    sf_weights_free(&w);
  } else {
    SF_FUZZ_ASSERT(w.n == 0 && w.names == NULL, "a failed sf_weights_load left %zu names", w.n);
  }

  sf_profile p;
  profile_args a = {&p, path};
  int status = sf_fuzz_try(load_profile, &a);
  if (status != 0) {
    SF_FUZZ_ASSERT(status == SF_EXIT_USAGE, "a bad profile exited with status %d: %s", status, sf_fuzz_die.msg);
    SF_FUZZ_ASSERT(strstr(sf_fuzz_die.msg, path) != NULL, "the error does not name the file %s: %s", path,
                   sf_fuzz_die.msg);
    return 0;
  }
  SF_FUZZ_ASSERT(p.n >= 1, "a profile loaded with no tests");
  size_t nodes = 0;
  for (size_t i = 0; i < p.n; i++) nodes += json_nodes(p.tests[i].job);
  SF_FUZZ_ASSERT(nodes <= SF_FUZZ_MAX_EXPANSION * (size + 1), "%zu input bytes became %zu job JSON nodes", size,
                 nodes);
  for (size_t i = 0; i < p.n; i++) {
    SF_FUZZ_ASSERT(p.tests[i].name && *p.tests[i].name, "test %zu has no name", i);
    SF_FUZZ_ASSERT(p.tests[i].job != NULL, "test '%s' has no job JSON", p.tests[i].name);
    char *text = sf_json_print(p.tests[i].job);
    free(text);
  }
  sf_profile_free(&p);
  return 0;
}

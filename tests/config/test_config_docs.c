/* docs/config.md embeds the key table generated from src/config/config_keys.c; this test fails when
 * they differ and says how to regenerate the block. */
#include <stdlib.h>
#include <string.h>

#include "docblock.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

int main(void)
{
  const char *src = getenv("SF_SOURCE_DIR");
  if (!src) src = SF_SOURCE_DIR;
  char *path = sf_path_join(src, "docs/config.md");
  char *doc = sf_read_file(path, NULL);
  SF_CHECK(doc != NULL, "cannot read %s", path);
  if (!doc) return sf_test_end();
  char *have = sf_doc_extract(doc, NULL, NULL);
  SF_CHECK(have != NULL, "%s lacks the marker lines '%s ...' and '%s'", path, SF_DOC_BEGIN, SF_DOC_END);
  char *want = sf_doc_generate();
  if (have && strcmp(have, want)) {
    int line = 1;
    const char *h = have, *w = want, *hl = have, *wl = want; /* hl, wl: start of the current line */
    while (*h && *h == *w) {
      if (*h == '\n') line++, hl = h + 1, wl = w + 1;
      h++, w++;
    }
    h = hl, w = wl;
    const char *he = strchr(h, '\n'), *we = strchr(w, '\n');
    SF_CHECK(0,
             "%s: the generated key table differs from the key table at line %d of the block:\n"
             "  docs:      %.*s\n  generated: %.*s\n"
             "regenerate with: <build>/tests/config/config_cli --update-docs %s",
             path, line, he ? (int)(he - h) : (int)strlen(h), h, we ? (int)(we - w) : (int)strlen(w), w,
             path);
  }
  free(have);
  free(want);
  free(doc);
  free(path);
  return sf_test_end();
}

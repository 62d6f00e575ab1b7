/* docs/config.md embeds the key table generated from src/config/config_keys.c and the environment
 * switch table generated from src/util/switches.c; this test fails when either differs and says how
 * to regenerate it. The `optimizer` row must name exactly the optimizers the training graph implements (src/train/optimizers.c), so adding one updates the docs. */
#include <stdlib.h>
#include <string.h>

#include "docblock.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "testutil.h"

/* The block in the document must equal what the table generates; the message names the first
 * line that differs and how to regenerate. */
static void check_block(const char *path, const char *doc, const sf_doc_block *b)
{
  char *have = sf_doc_extract_block(doc, b, NULL, NULL);
  SF_CHECK(have != NULL, "%s lacks the marker lines '%s ...' and '%s'", path, b->begin, b->end);
  if (!have) return;
  char *want = b->generate();
  if (strcmp(have, want)) {
    int line = 1;
    const char *h = have, *w = want, *hl = have, *wl = want; /* hl, wl: start of the current line */
    while (*h && *h == *w) {
      if (*h == '\n') line++, hl = h + 1, wl = w + 1;
      h++, w++;
    }
    h = hl, w = wl;
    const char *he = strchr(h, '\n'), *we = strchr(w, '\n');
    SF_CHECK(0,
             "%s: the generated %s differs from its source table at line %d of the block:\n"
             "  docs:      %.*s\n  generated: %.*s\n"
             "regenerate with: <build>/tests/config/config_cli --update-docs %s",
             path, b->what, line, he ? (int)(he - h) : (int)strlen(h), h, we ? (int)(we - w) : (int)strlen(w), w,
             path);
  }
  free(have);
  free(want);
}

int main(void)
{
  const char *src = getenv("SF_SOURCE_DIR");
  if (!src) src = SF_SOURCE_DIR;
  char *path = sf_path_join(src, "docs/config.md");
  char *doc = sf_read_file(path, NULL);
  SF_CHECK(doc != NULL, "cannot read %s", path);
  if (!doc) return sf_test_end();
  int nb = 0;
  const sf_doc_block *blocks = sf_doc_blocks(&nb);
  for (int k = 0; k < nb; k++) check_block(path, doc, &blocks[k]);
  char *want = sf_doc_generate();
  char names[256], pattern[300];
  sf_optimizer_names(names, sizeof names);
  snprintf(pattern, sizeof pattern, "implements: %s |", names);
  const char *row = strstr(want, "| `optimizer` |");
  const char *eol = row ? strchr(row, '\n') : NULL;
  const char *hit = row ? strstr(row, pattern) : NULL;
  SF_CHECK(row && hit && (!eol || hit < eol),
           "the optimizer row of the key table does not end its allowed values with '%s' (the optimizers "
           "src/train/optimizers.c implements): %.*s; update its `allowed` text in src/config/config_keys.c",
           pattern, row ? (eol ? (int)(eol - row) : (int)strlen(row)) : 4, row ? row : "none");
  free(want);
  free(doc);
  free(path);
  return sf_test_end();
}

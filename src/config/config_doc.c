/* The key reference of docs/config.md, generated from the key table (sf_config_write_markdown) so
 * the docs cannot drift from the code: the config_docs test compares the generated block with the
 * one in docs/config.md. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "scaffold/common.h"

/* Markdown table cell: '|' escaped. */
static void cell(FILE *out, const char *s)
{
  for (; *s; s++) {
    if (*s == '|') fputc('\\', out);
    fputc(*s, out);
  }
}

int sf_config_write_markdown(FILE *out)
{
  sf_config def;
  sf_config_init(&def);
  sf_config_finalize(&def);
  sf_key_group group = SF_KG_COUNT;
  for (int k = 0; k < sf_nkeys; k++) {
    const sf_key *key = &sf_keys[k];
    if (key->group != group) {
      group = key->group;
      fprintf(out, "%s### %s\n\n", k ? "\n" : "", sf_key_group_title(group));
      fprintf(out, "| key | type | default | allowed values | flag | meaning |\n");
      fprintf(out, "|---|---|---|---|---|---|\n");
    }
    char *v = sf_config_format_key(&def, k);
    fprintf(out, "| `%s` | %s | `", key->name, sf_key_type_name(key->type));
    cell(out, v);
    fputs("` | ", out);
    cell(out, key->allowed);
    fprintf(out, " | %s%s%s | ", key->flag ? "`" : "", key->flag ? key->flag : "", key->flag ? "`" : "");
    cell(out, key->help);
    fputs(" |\n", out);
    free(v);
  }
  sf_config_free(&def);
  return ferror(out) ? -1 : 0;
}

/* Keys a command does not read (scaffold/config.h, sf_config_refuse_unread): a key set on the command
 * line (--set or a key flag) that the command would ignore is refused before any work, so no key is
 * silently ignored; keys that the config file sets for other commands are named with -v. */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"
#include "scaffold/common.h"

static int listed(const char *name, const char *const *reads)
{
  for (; *reads; reads++)
    if (!strcmp(name, *reads)) return 1;
  return 0;
}

/* The unread keys of one origin, comma-separated, into buf; returns their count. */
static int unread_of(const sf_config *c, sf_origin origin, const char *const *reads, char *buf, size_t len)
{
  int n = 0;
  size_t used = 0;
  buf[0] = '\0';
  for (int k = 0; k < sf_nkeys; k++) {
    if (sf_keys[k].group == SF_KG_DERIVED || listed(sf_keys[k].name, reads)) continue;
    if (sf_config_origin_of(c, sf_keys[k].name) != origin) continue;
    int w = snprintf(buf + used, used < len ? len - used : 0, "%s%s", n ? ", " : "", sf_keys[k].name);
    if (w > 0) used += (size_t)w;
    n++;
  }
  return n;
}

void sf_config_refuse_unread(const sf_config *c, const char *cmd, const char *const *reads, const char *instead,
                             int verbose)
{
  char keys[2048];
  int n = unread_of(c, SF_ORIGIN_OVERRIDE, reads, keys, sizeof keys);
  if (n)
    sf_die(SF_EXIT_USAGE, "%s does not read the key%s %s set on the command line: %s", cmd, n > 1 ? "s" : "", keys,
           instead);
  if (verbose && unread_of(c, SF_ORIGIN_FILE, reads, keys, sizeof keys))
    sf_info("%s: keys of %s that this command does not read (%s): %s", cmd, c->source_file ? c->source_file : "the file",
            instead, keys);
}

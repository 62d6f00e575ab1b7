/* Quoting for POSIX sh command lines (scaffold/shell.h): arguments shown to the user, or written
 * into scripts, in a form a shell reads back as the same word. */
#include "scaffold/shell.h"

#include <string.h>

#include "scaffold/common.h"

char *sf_shell_quote(const char *s)
{
  int plain = *s != '\0';
  for (const char *c = s; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./=:,@%", *c)) plain = 0;
  if (plain) return sf_strdup(s);
  size_t n = 3;
  for (const char *c = s; *c; c++) n += *c == '\'' ? 4 : 1;
  char *q = sf_malloc(n, "quoted argument"), *o = q;
  *o++ = '\'';
  for (const char *c = s; *c; c++) {
    if (*c == '\'') memcpy(o, "'\\''", 4), o += 4;
    else *o++ = *c;
  }
  *o++ = '\'';
  *o = '\0';
  return q;
}

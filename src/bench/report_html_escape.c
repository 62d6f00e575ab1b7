/* Text for the HTML report (report_html.c and its extra sections, report_html_parts.c): every
 * string from a result file is written with < > & " escaped, so a test named "<script>" is text. */
#include <stdio.h>

#include "report_html_parts.h"

void sf_html_esc(FILE *f, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

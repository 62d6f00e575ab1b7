/* Sections of the HTML report beyond milarun's (report_html_parts.c): the machine block, the units
 * of every figure, the worker-scaling chart of progression results, the runtime granularity chart and METG table
 * (report_html_granularity.c), and the scheduler x worker-mix
 * matrix of the `schedulers` profile. */
#ifndef SF_REPORT_HTML_PARTS_H
#define SF_REPORT_HTML_PARTS_H

#include <stdio.h>

#include "scaffold/bench.h"

void sf_html_esc(FILE *f, const char *s); /* report_html_escape.c: text with < > & " escaped */
void sf_html_machine(FILE *f, const sf_summary *s);
void sf_html_units(FILE *f);
void sf_html_scaling(FILE *f, const sf_summary *s);
void sf_html_granularity(FILE *f, const sf_summary *s); /* report_html_granularity.c */
void sf_html_schedulers(FILE *f, const sf_report *r, const sf_summary *s);

#endif

/* The generated key table inside docs/config.md: it sits between two marker lines, and both the
 * config_docs test and `config_cli --update-docs` use these helpers to find and rebuild it. */
#ifndef SF_TEST_DOCBLOCK_H
#define SF_TEST_DOCBLOCK_H

#include <stddef.h>

#define SF_DOC_BEGIN "<!-- BEGIN GENERATED KEY TABLE"
#define SF_DOC_END "<!-- END GENERATED KEY TABLE -->"

/* The block as sf_config_write_markdown generates it (blank line, table, blank line). Malloc'ed. */
char *sf_doc_generate(void);
/* The block currently in the document text (between the marker lines), malloc'ed; NULL when a
 * marker is missing. start and end (may be NULL) receive its byte range in doc. */
char *sf_doc_extract(const char *doc, size_t *start, size_t *end);

#endif

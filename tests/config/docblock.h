/* The generated blocks inside docs/config.md: the key table and the environment switch table, each
 * between two marker lines. Both the config_docs test and `config_cli --update-docs` use these
 * helpers to find and rebuild them. */
#ifndef SF_TEST_DOCBLOCK_H
#define SF_TEST_DOCBLOCK_H

#include <stddef.h>

#define SF_DOC_BEGIN "<!-- BEGIN GENERATED KEY TABLE"
#define SF_DOC_END "<!-- END GENERATED KEY TABLE -->"
#define SF_DOC_SWITCHES_BEGIN "<!-- BEGIN GENERATED SWITCH TABLE"
#define SF_DOC_SWITCHES_END "<!-- END GENERATED SWITCH TABLE -->"

typedef struct {
  const char *what, *begin, *end; /* "key table", the marker lines */
  char *(*generate)(void);
} sf_doc_block;

/* The two blocks, in document order; n receives their count. */
const sf_doc_block *sf_doc_blocks(int *n);

/* The key table as sf_config_write_markdown generates it (blank line, table, blank line). Malloc'ed. */
char *sf_doc_generate(void);
/* The switch table as sf_switches_write_markdown generates it. Malloc'ed. */
char *sf_doc_generate_switches(void);
/* The key table block currently in the document text (between the marker lines), malloc'ed; NULL
 * when a marker is missing. start and end (may be NULL) receive its byte range in doc. */
char *sf_doc_extract(const char *doc, size_t *start, size_t *end);
/* The same for any block. */
char *sf_doc_extract_block(const char *doc, const sf_doc_block *b, size_t *start, size_t *end);

#endif

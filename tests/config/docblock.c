/* Implementation of docblock.h. */
#include "docblock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/switches.h"

static const sf_doc_block blocks[] = {
  {"key table", SF_DOC_BEGIN, SF_DOC_END, sf_doc_generate},
  {"switch table", SF_DOC_SWITCHES_BEGIN, SF_DOC_SWITCHES_END, sf_doc_generate_switches},
};

const sf_doc_block *sf_doc_blocks(int *n)
{
  *n = (int)(sizeof blocks / sizeof blocks[0]);
  return blocks;
}

char *sf_doc_generate(void)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) sf_die(SF_EXIT_FAILURE, "open_memstream failed");
  fputc('\n', f);
  if (sf_config_write_markdown(f) != 0) sf_die(SF_EXIT_FAILURE, "sf_config_write_markdown failed");
  fputc('\n', f);
  fclose(f);
  return buf;
}

char *sf_doc_generate_switches(void)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) sf_die(SF_EXIT_FAILURE, "open_memstream failed");
  sf_switches_write_markdown(f);
  fclose(f);
  return buf;
}

char *sf_doc_extract_block(const char *doc, const sf_doc_block *blk, size_t *start, size_t *end)
{
  const char *b = strstr(doc, blk->begin);
  if (!b) return NULL;
  b = strchr(b, '\n');
  if (!b) return NULL;
  b++;
  const char *e = strstr(b, blk->end);
  if (!e) return NULL;
  if (start) *start = (size_t)(b - doc);
  if (end) *end = (size_t)(e - doc);
  char *out = sf_malloc((size_t)(e - b) + 1, "doc block");
  memcpy(out, b, (size_t)(e - b));
  out[e - b] = '\0';
  return out;
}

char *sf_doc_extract(const char *doc, size_t *start, size_t *end)
{
  return sf_doc_extract_block(doc, &blocks[0], start, end);
}

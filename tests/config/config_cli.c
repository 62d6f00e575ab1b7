/* Test driver for the configuration module: parses its arguments with sf_config_from_cli exactly
 * as a config-driven subcommand does, then prints the effective configuration (unless -v already
 * did) and optionally writes it. Its own options, taken through the `extra` callback:
 *   --write-yaml PATH        sf_config_write_yaml
 *   --write-overrides PATH   sf_config_write_overrides_yaml
 *   --markdown               print the generated key table (sf_config_write_markdown) instead
 *   --update-docs PATH       rewrite the generated key and switch tables inside docs/config.md
 * Exit status: 0, or 2 for any configuration or usage error (from sf_die). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docblock.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"

typedef struct {
  const char *yaml, *overrides, *update_docs;
  int markdown;
} tool_opts;

static int tool_option(void *ctx, int argc, char **argv, int i)
{
  tool_opts *o = ctx;
  const char *a = argv[i];
  const char **dst = !strcmp(a, "--write-yaml")        ? &o->yaml
                     : !strcmp(a, "--write-overrides") ? &o->overrides
                     : !strcmp(a, "--update-docs")     ? &o->update_docs
                                                       : NULL;
  if (dst) {
    if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "option '%s' needs an argument: a path", a);
    *dst = argv[i + 1];
    return 2;
  }
  if (!strcmp(a, "--markdown")) return o->markdown = 1;
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    printf("usage: config_cli [config options] [--write-yaml PATH] [--write-overrides PATH]\n"
           "                  [--markdown] [--update-docs docs/config.md]\n\n");
    sf_config_print_cli_help(stdout);
    exit(0);
  }
  return 0;
}

static void update_docs(const char *path)
{
  int nb = 0;
  const sf_doc_block *blocks = sf_doc_blocks(&nb);
  for (int k = 0; k < nb; k++) {
    size_t len = 0, start = 0, end = 0;
    char *doc = sf_read_file(path, &len);
    if (!doc) sf_die(SF_EXIT_FAILURE, "cannot read '%s': %s", path, strerror(errno));
    char *old = sf_doc_extract_block(doc, &blocks[k], &start, &end);
    if (!old)
      sf_die(SF_EXIT_FAILURE, "'%s' lacks the marker lines '%s ...' and '%s'", path, blocks[k].begin, blocks[k].end);
    char *gen = blocks[k].generate();
    sf_atomic_file a;
    if (sf_atomic_open(&a, path) != 0) sf_die(SF_EXIT_FAILURE, "cannot write '%s': %s", path, strerror(errno));
    fwrite(doc, 1, start, a.f);
    fputs(gen, a.f);
    fputs(doc + end, a.f);
    if (sf_atomic_commit(&a) != 0) sf_die(SF_EXIT_FAILURE, "cannot write '%s': %s", path, strerror(errno));
    printf("%s: %s %s\n", path, blocks[k].what, strcmp(old, gen) ? "updated" : "already up to date");
    free(old);
    free(gen);
    free(doc);
  }
}

int main(int argc, char **argv)
{
  tool_opts o = {0};
  sf_config c;
  int verbose = 0;
  sf_config_init(&c);
  int i = sf_config_from_cli(&c, argc, argv, 1, &verbose, tool_option, &o);
  if (i < argc) sf_die(SF_EXIT_USAGE, "unexpected argument '%s'", argv[i]);
  if (o.update_docs) {
    update_docs(o.update_docs);
  } else if (o.markdown) {
    sf_config_write_markdown(stdout);
  } else if (!verbose) {
    sf_config_print(&c, stdout);
  }
  if (o.yaml && sf_config_write_yaml(&c, o.yaml) != 0)
    sf_die(SF_EXIT_FAILURE, "cannot write '%s': %s", o.yaml, strerror(errno));
  if (o.overrides && sf_config_write_overrides_yaml(&c, o.overrides) != 0)
    sf_die(SF_EXIT_FAILURE, "cannot write '%s': %s", o.overrides, strerror(errno));
  sf_config_free(&c);
  return 0;
}

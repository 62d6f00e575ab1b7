/* The CLI options shared by config-driven subcommands (sf_config_from_cli): -c/--config FILE
 * (repeatable), --set key=value (repeatable), the upstream-style override flags named in the key
 * table (--problem-scale N, --T-0 N, --dc-num-shards I I I, ...), -v/--verbose and -h/--help.
 * Whatever the order on the command line, the precedence is defaults < files (in order) <
 * overrides (in order). Usage errors exit with status 2. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "scaffold/common.h"
#include "scaffold/switches.h"

static int nargs_of(int k) { return sf_keys[k].type == SF_KT_INT3 ? 3 : 1; }

static const char *metavar_of(int k)
{
  switch (sf_keys[k].type) {
  case SF_KT_INT:
  case SF_KT_BOOL: return "N";
  case SF_KT_FLOAT: return "X";
  case SF_KT_STRING: return "S";
  case SF_KT_INT3: return "I I I";
  }
  return "V";
}

void sf_config_print_cli_help(FILE *out)
{
  fprintf(out,
          "configuration options (precedence: defaults < -c files, in order < --set and the flags\n"
          "below, in order; docs/config.md lists every key):\n"
          "  -c, --config FILE        YAML mapping of key: value; repeatable, later files win\n"
          "  --set KEY=VALUE          set one key; VALUE is a YAML scalar, or [a, b, c] for list keys\n"
          "                           (repeatable)\n"
          "  -v, --verbose            print the effective configuration and each key's origin\n"
          "  -h, --help               print this help and exit\n"
          "upstream-style overrides (each is the same as --set KEY=VALUE):\n");
  for (int k = 0; k < sf_nkeys; k++) {
    if (!sf_keys[k].flag) continue;
    char opt[64];
    snprintf(opt, sizeof opt, "%s %s", sf_keys[k].flag, metavar_of(k));
    fprintf(out, "  %-36s %s\n", opt, sf_keys[k].name);
  }
}

/* The key whose flag is opt (up to an '=' when has_eq), or -1. */
static int flag_key(const char *opt, size_t len)
{
  for (int k = 0; k < sf_nkeys; k++)
    if (sf_keys[k].flag && strlen(sf_keys[k].flag) == len && !strncmp(sf_keys[k].flag, opt, len))
      return k;
  return -1;
}

__attribute__((noreturn)) static void unknown_option(const char *a)
{
  /* "--problem_scale" or "--val-split": point at --set with the key. */
  if (!strncmp(a, "--", 2)) {
    char name[256];
    snprintf(name, sizeof name, "%s", a + 2);
    char *eq = strchr(name, '=');
    if (eq) *eq = '\0';
    for (char *p = name; *p; p++)
      if (*p == '-') *p = '_';
    int k = sf_key_find(name);
    const sf_old_key *o = k < 0 ? sf_old_key_find(name) : NULL;
    if (o) {
      int use = sf_key_find(o->use);
      char msg[1024];
      sf_old_key_message(o, NULL, msg, sizeof msg);
      if (sf_keys[use].flag)
        sf_die(SF_EXIT_USAGE, "unknown option '%s': %s; its option is '%s'", a, msg, sf_keys[use].flag);
      sf_die(SF_EXIT_USAGE, "unknown option '%s': %s; set it with --set %s=VALUE", a, msg, o->use);
    }
    if (k < 0) {
      const char *s = sf_key_suggest(name);
      if (s && sf_keys[sf_key_find(s)].flag)
        sf_die(SF_EXIT_USAGE, "unknown option '%s': did you mean '%s'? (--help lists the options)",
               a, sf_keys[sf_key_find(s)].flag);
    } else if (sf_keys[k].flag) {
      sf_die(SF_EXIT_USAGE, "unknown option '%s': did you mean '%s'?", a, sf_keys[k].flag);
    } else {
      sf_die(SF_EXIT_USAGE, "unknown option '%s': key '%s' has no flag of its own; use --set %s=VALUE",
             a, name, name);
    }
  }
  sf_die(SF_EXIT_USAGE, "unknown option '%s' (--help lists the options)", a);
}

int sf_config_cli_option(int argc, char **argv, int i, const char **set_kv)
{
  const char *a = argv[i];
  *set_kv = NULL;
  if (a[0] != '-' || !strcmp(a, "-") || !strcmp(a, "--")) return 0;
  if (!strcmp(a, "-v") || !strcmp(a, "--verbose") || (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1))) return 1;
  const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
  size_t optlen = eq ? (size_t)(eq - a) : strlen(a);
  int na;
  if (!strcmp(a, "-c") || (optlen == 8 && !strncmp(a, "--config", 8))) na = 1;
  else if (optlen == 5 && !strncmp(a, "--set", 5)) na = 1;
  else {
    int k = flag_key(a, optlen);
    if (k < 0) return 0;
    na = nargs_of(k);
    if (eq && na != 1) return -1;
  }
  if (!eq && i + na >= argc) return -1;
  if (optlen == 5 && !strncmp(a, "--set", 5)) *set_kv = eq ? eq + 1 : argv[i + 1];
  return eq ? 1 : 1 + na;
}

typedef struct {
  char *key, *value, *how; /* key NULL: a --set KEY=VALUE in value */
} pending;

int sf_config_from_cli(sf_config *c, int argc, char **argv, int first, int *verbose,
                       sf_cli_extra_fn extra, void *ctx)
{
  const char **files = sf_calloc((size_t)argc + 1, sizeof *files, "config file list");
  pending *ov = sf_calloc((size_t)argc + 1, sizeof *ov, "override list");
  int nfiles = 0, nov = 0, nverbose = 0, i = first;

  while (i < argc) {
    const char *a = argv[i];
    if (a[0] != '-' || !strcmp(a, "-") || !strcmp(a, "--")) break;
    const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
    size_t optlen = eq ? (size_t)(eq - a) : strlen(a);

    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      int n = extra ? extra(ctx, argc, argv, i) : 0;
      if (n > 0) {
        i += n;
        continue;
      }
      sf_config_print_cli_help(stdout);
      exit(0);
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose") || (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1))) {
      nverbose += !strcmp(a, "--verbose") ? 1 : (int)strlen(a + 1);
      i++;
      continue;
    }
    if (!strcmp(a, "-c") || (optlen == 8 && !strncmp(a, "--config", 8))) {
      if (eq) {
        files[nfiles++] = eq + 1;
        i++;
      } else {
        if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "option '%s' needs an argument: a config file", a);
        files[nfiles++] = argv[i + 1];
        i += 2;
      }
      continue;
    }
    if (optlen == 5 && !strncmp(a, "--set", 5)) {
      const char *kv = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
      if (!kv) sf_die(SF_EXIT_USAGE, "option '--set' needs an argument: KEY=VALUE");
      ov[nov++].value = sf_strdup(kv);
      i += eq ? 1 : 2;
      continue;
    }
    int k = flag_key(a, optlen);
    if (k >= 0) {
      int na = nargs_of(k);
      const char *one = NULL;
      if (eq) {
        if (na != 1)
          sf_die(SF_EXIT_USAGE, "option '%.*s' takes %d separate values ('%s %s')", (int)optlen, a,
                 na, sf_keys[k].flag, metavar_of(k));
        one = eq + 1;
      } else if (i + na >= argc) {
        sf_die(SF_EXIT_USAGE, "option '%s' needs %s: %s %s (key '%s')", a,
               na == 1 ? "an argument" : "3 arguments", a, metavar_of(k), sf_keys[k].name);
      }
      char *value;
      if (one) {
        value = sf_strdup(one);
      } else if (na == 1) {
        value = sf_strdup(argv[i + 1]);
      } else {
        size_t n = strlen(argv[i + 1]) + strlen(argv[i + 2]) + strlen(argv[i + 3]) + 8;
        value = sf_malloc(n, "override value");
        snprintf(value, n, "[%s, %s, %s]", argv[i + 1], argv[i + 2], argv[i + 3]);
      }
      size_t n = strlen(sf_keys[k].flag) + strlen(value) + 4;
      char *how = sf_malloc(n, "override text");
      if (one)
        snprintf(how, n, "%s", a);
      else if (na == 1)
        snprintf(how, n, "%s %s", sf_keys[k].flag, value);
      else
        snprintf(how, n, "%s %s %s %s", sf_keys[k].flag, argv[i + 1], argv[i + 2], argv[i + 3]);
      ov[nov].key = sf_strdup(sf_keys[k].name);
      ov[nov].value = value;
      ov[nov].how = how;
      nov++;
      i += eq ? 1 : 1 + na;
      continue;
    }
    int n = extra ? extra(ctx, argc, argv, i) : 0;
    if (n <= 0) unknown_option(a);
    i += n;
  }

  for (int f = 0; f < nfiles; f++) sf_config_load_file(c, files[f]);
  for (int o = 0; o < nov; o++) {
    if (ov[o].key)
      sf_config_override_key(c, ov[o].key, ov[o].value, ov[o].how);
    else
      sf_config_apply_override(c, ov[o].value);
    free(ov[o].key);
    free(ov[o].value);
    free(ov[o].how);
  }
  sf_config_finalize(c);
  if (verbose) *verbose = nverbose;
  if (nverbose > 0) {
    sf_config_print(c, stdout);
    sf_switches_print(stdout);
  }
  free(files);
  free(ov);
  return i;
}

/* `scaffold rerun RESULT.json [-o OUT] [--dry-run] [-- more arguments]`: re-runs the job that
 * produced a result (spec milabench.md §5). Prints a "=== re-run command ===" banner with the
 * recorded environment and the command, applies that environment, and runs
 * `scaffold run -o OUT --experiment-name <name> -- <call.argv...> <more...>`. No job id is
 * passed, so the new result is ignored by `report` and `summary` (a debugging tool, as milarun).
 *
 * The file is data from elsewhere: before anything runs, its name must be a plain experiment name,
 * every recorded variable one that a run records (sf_environ_replayable: never a loader, shell or
 * test-hook variable) and call.argv only `scaffold benchmark`'s own options, none that resumes a
 * run or sets where the result goes. Anything else is refused, naming the key (exit status 2). */
#include <errno.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/shell.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: scaffold rerun RESULT.json [-o OUT] [--dry-run] [-- more benchmark arguments]\n"
             "OUT defaults to the directory of RESULT.json. Later arguments override earlier ones.\n");
}

/* Every key of environ that may not be applied, in one message; dies with status 2. */
static void check_environ(const char *file, const cJSON *env)
{
  if (!env) return;
  if (!cJSON_IsObject(env)) sf_die(SF_EXIT_USAGE, "rerun: %s: \"environ\" is not an object of NAME: value", file);
  char msg[4096] = "";
  size_t k = 0;
  int bad = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, env)
  {
    char why[512];
    if (!cJSON_IsString(x)) snprintf(why, sizeof why, "%s: the value is not a string", x->string);
    else if (sf_environ_replayable(x->string, x->valuestring, why, sizeof why)) continue;
    bad++;
    if (k < sizeof msg - 1) k += (size_t)snprintf(msg + k, sizeof msg - k, "\n  environ.%s", why);
  }
  if (bad)
    sf_die(SF_EXIT_USAGE, "rerun: %s: refused, nothing was run: %d recorded variable%s may not be applied:%s", file,
           bad, bad == 1 ? "" : "s", msg);
}

/* call.argv (then the extra arguments): only `scaffold benchmark` options that describe the test. */
static void check_argv(const char *file, const char *where, int argc, char **argv)
{
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *kv = NULL;
    int n = sf_config_cli_option(argc, argv, i, &kv), skip = 0;
    if (n < 0) sf_die(SF_EXIT_USAGE, "rerun: %s: %s: option '%s' lacks its value", file, where, a);
    if (n > 0 && kv) {
      const char *eq = strchr(kv, '=');
      char key[256];
      size_t kl = eq ? (size_t)(eq - kv) : 0;
      if (!eq || kl == 0 || kl >= sizeof key)
        sf_die(SF_EXIT_USAGE, "rerun: %s: %s: '--set %s': expected KEY=VALUE", file, where, kv);
      memcpy(key, kv, kl);
      key[kl] = '\0';
      if (sf_config_key_index(key) < 0)
        sf_die(SF_EXIT_USAGE, "rerun: %s: %s: '--set %s': '%s' is not a configuration key (docs/config.md)", file,
               where, kv, key);
    }
    if (n > 0) {
      i += n - 1;
      continue;
    }
    if (sf_bench_opt_is_identity(argc, argv, i, &skip))
      sf_die(SF_EXIT_USAGE, "rerun: %s: %s: '%s' is set by rerun itself (-o OUT and the result's name)", file, where,
             a);
    if (!strcmp(a, "--restart") || !strncmp(a, "--run-dir", 9))
      sf_die(SF_EXIT_USAGE, "rerun: %s: %s: '%s': a rerun starts a new run (resume one with the restart.sh in its run "
             "directory)", file, where, a);
    sf_bench_opts bo;
    sf_bench_opts_init(&bo);
    n = a[0] == '-' ? sf_bench_opts_parse(&bo, argc, argv, i) : 0; /* dies on a bad value, naming it */
    sf_bench_opts_free(&bo);
    if (n <= 0)
      sf_die(SF_EXIT_USAGE, "rerun: %s: %s: '%s' is not an option of `scaffold benchmark` (`scaffold benchmark "
             "--help` lists them)", file, where, a);
    i += n - 1;
  }
}

static void usage_die(const char *fmt, const char *arg)
{
  usage(stderr);
  sf_die(SF_EXIT_USAGE, fmt, arg);
}

int sf_cmd_rerun(int argc, char **argv)
{
  const char *result = NULL, *out = NULL;
  int dry = 0, more = argc;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      more = i + 1;
      break;
    } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
      if (i + 1 >= argc) sf_die(SF_EXIT_USAGE, "rerun: %s expects a directory", argv[i]);
      out = argv[++i];
    } else if (!strcmp(argv[i], "--dry-run")) {
      dry = 1;
    } else if (argv[i][0] == '-') {
      usage_die("rerun: unknown option '%s' (benchmark arguments go after '--')", argv[i]);
    } else if (!result) {
      result = argv[i];
    } else {
      sf_die(SF_EXIT_USAGE, "rerun: unexpected argument '%s'", argv[i]);
    }
  }
  if (!result) usage_die("rerun: missing %s", "RESULT.json");
  char *err = NULL;
  cJSON *j = sf_json_load(result, &err);
  if (!j) sf_die(SF_EXIT_USAGE, "rerun: %s: %s", result, err);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  const cJSON *call = cJSON_GetObjectItemCaseSensitive(j, "call");
  const cJSON *cargv = call ? cJSON_GetObjectItemCaseSensitive(call, "argv") : NULL;
  if (!cJSON_IsString(name) || !cJSON_IsArray(cargv))
    sf_die(SF_EXIT_USAGE, "rerun: %s is not a result file (expected \"name\" and \"call.argv\")", result);
  if (!sf_bench_name_ok(name->valuestring))
    sf_die(SF_EXIT_USAGE, "rerun: %s: \"name\" '%s' is not a plain experiment name (letters, digits, '.', '_', '-'; "
           "not starting with '.')", result, name->valuestring);
  const cJSON *x;
  cJSON_ArrayForEach(x, cargv) if (!cJSON_IsString(x))
    sf_die(SF_EXIT_USAGE, "rerun: %s: call.argv holds a non-string entry", result);
  const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "environ");
  check_environ(result, env);

  char *outdir;
  if (out) outdir = sf_strdup(out);
  else {
    char *tmp = sf_strdup(result);
    outdir = sf_strdup(dirname(tmp));
    free(tmp);
  }

  /* scaffold run -o OUT --experiment-name NAME -- <argv...> <more...> */
  size_t n = (size_t)cJSON_GetArraySize(cargv) + (size_t)(argc - more) + 10;
  char **rargv = sf_calloc(n, sizeof *rargv, "argv");
  size_t k = 0;
  rargv[k++] = "/proc/self/exe";
  rargv[k++] = "run";
  rargv[k++] = "-o";
  rargv[k++] = outdir;
  rargv[k++] = "--experiment-name";
  rargv[k++] = name->valuestring;
  rargv[k++] = "--";
  size_t first = k;
  cJSON_ArrayForEach(x, cargv) rargv[k++] = x->valuestring;
  check_argv(result, "call.argv", (int)(k - first), rargv + first);
  for (int i = more; i < argc; i++) rargv[k++] = argv[i];
  check_argv(result, "call.argv with the arguments after '--'", (int)(k - first), rargv + first);
  rargv[k] = NULL;

  printf("=== re-run command ===\n");
  cJSON_ArrayForEach(x, env)
  {
    char *q = sf_shell_quote(x->valuestring);
    printf("%s=%s \\\n", x->string, q);
    free(q);
  }
  printf("scaffold");
  for (size_t i = 1; i < k; i++) {
    char *q = sf_shell_quote(rargv[i]);
    printf(" %s", q);
    free(q);
  }
  printf("\n======================\n");
  fflush(stdout);
  if (dry) {
    free(rargv);
    free(outdir);
    cJSON_Delete(j);
    return 0;
  }
  cJSON_ArrayForEach(x, env) setenv(x->string, x->valuestring, 1);
  execv("/proc/self/exe", rargv);
  sf_die(SF_EXIT_FAILURE, "rerun: cannot execute /proc/self/exe: %s", strerror(errno));
}

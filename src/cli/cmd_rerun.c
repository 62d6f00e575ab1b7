/* `scaffold rerun RESULT.json [-o OUT] [--dry-run] [-- more arguments]`: re-runs the job that
 * produced a result (spec milabench.md §5). Prints a "=== re-run command ===" banner with the
 * recorded environment and the command, applies that environment, and runs
 * `scaffold run -o OUT --experiment-name <name> -- <call.argv...> <more...>`. No job id is
 * passed, so the new result is ignored by `report` and `summary` (a debugging tool, as milarun). */
#include <errno.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/cli.h"
#include "scaffold/common.h"
#include "scaffold/shell.h"

static void usage(FILE *f)
{
  fprintf(f, "usage: scaffold rerun RESULT.json [-o OUT] [--dry-run] [-- more benchmark arguments]\n"
             "OUT defaults to the directory of RESULT.json. Later arguments override earlier ones.\n");
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
      usage(stderr);
      sf_die(SF_EXIT_USAGE, "rerun: unknown option '%s' (benchmark arguments go after '--')", argv[i]);
    } else if (!result) {
      result = argv[i];
    } else {
      sf_die(SF_EXIT_USAGE, "rerun: unexpected argument '%s'", argv[i]);
    }
  }
  if (!result) {
    usage(stderr);
    sf_die(SF_EXIT_USAGE, "rerun: missing RESULT.json");
  }
  char *err = NULL;
  cJSON *j = sf_json_load(result, &err);
  if (!j) sf_die(SF_EXIT_USAGE, "rerun: %s: %s", result, err);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
  const cJSON *call = cJSON_GetObjectItemCaseSensitive(j, "call");
  const cJSON *cargv = call ? cJSON_GetObjectItemCaseSensitive(call, "argv") : NULL;
  if (!cJSON_IsString(name) || !cJSON_IsArray(cargv))
    sf_die(SF_EXIT_USAGE, "rerun: %s is not a result file (expected \"name\" and \"call.argv\")", result);
  const cJSON *x;
  cJSON_ArrayForEach(x, cargv) if (!cJSON_IsString(x))
    sf_die(SF_EXIT_USAGE, "rerun: %s: call.argv holds a non-string entry", result);

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
  cJSON_ArrayForEach(x, cargv) rargv[k++] = x->valuestring;
  for (int i = more; i < argc; i++) rargv[k++] = argv[i];
  rargv[k] = NULL;

  const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "environ");
  printf("=== re-run command ===\n");
  cJSON_ArrayForEach(x, env)
  {
    if (!cJSON_IsString(x) || !x->string) continue;
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
  cJSON_ArrayForEach(x, env) if (cJSON_IsString(x) && x->string) setenv(x->string, x->valuestring, 1);
  execv("/proc/self/exe", rargv);
  sf_die(SF_EXIT_FAILURE, "rerun: cannot execute /proc/self/exe: %s", strerror(errno));
}

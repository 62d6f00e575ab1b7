/* A stand-in for `scaffold benchmark` in the harness tests (SF_RUN_BENCHMARK_EXE): it parses the
 * harness options with sf_bench_opts_parse, "trains" with synthetic step times through
 * sf_ratelog, and writes its result with sf_result, exactly as the real benchmark must (--max-count,
 * --max-time on the synthetic step seconds, --sample-duration as sf_bench_opts_parse reads them). Options:
 *   -c FILE, --set k=v       accepted and ignored (recorded in call.argv)
 *   --fake-rate R            samples/s of every step (default 100; times STARPU_NCPU if set)
 *   --fake-step S            synthetic seconds per step (default 0.1)
 *   --fake-mode M            ok | fail (success false) | nan (NaN loss) | segv | exit3 | sleep
 *                            (sleeps 60 s after starting a grandchild `sleep 60`, for group kills)
 *   --fake-pidfile F         sleep mode: write the grandchild's pid to F
 *   --fake-bound R           a `bound: 1` run: the result gets "bound" with samples_per_s R */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

int main(int argc, char **argv)
{
  sf_bench_opts bo;
  sf_bench_opts_init(&bo);
  double rate = 100, step = 0.1, bound = 0;
  const char *mode = "ok", *pidfile = NULL;
  for (int i = 1; i < argc; i++) {
    int used = sf_bench_opts_parse(&bo, argc, argv, i);
    if (used) {
      i += used - 1;
      continue;
    }
    if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--set")) && i + 1 < argc) i++;
    else if (!strcmp(argv[i], "--fake-rate") && i + 1 < argc) rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--fake-step") && i + 1 < argc) step = atof(argv[++i]);
    else if (!strcmp(argv[i], "--fake-mode") && i + 1 < argc) mode = argv[++i];
    else if (!strcmp(argv[i], "--fake-pidfile") && i + 1 < argc) pidfile = argv[++i];
    else if (!strcmp(argv[i], "--fake-bound") && i + 1 < argc) bound = atof(argv[++i]);
    else sf_die(SF_EXIT_USAGE, "fake_bench: unknown argument '%s'", argv[i]);
  }
  const char *ncpu = getenv("STARPU_NCPU");
  if (ncpu && atoi(ncpu) > 0) rate *= atoi(ncpu);
  argv[0] = "benchmark";
  sf_result *res = sf_result_begin(&bo, argc, argv);
  sf_result_set_runtime(res, "eager", "fake workers");
  if (!strcmp(mode, "segv")) {
    fprintf(stderr, "fake_bench: about to crash\n");
    /* the default action (death by SIGSEGV, status 139 in a shell), not a sanitizer's handler,
     * which would report it and abort instead */
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  }
  if (!strcmp(mode, "exit3")) sf_die(3, "fake_bench: giving up with status 3");
  if (!strcmp(mode, "sleep")) {
    pid_t g = fork();
    if (g == 0) {
      execlp("sleep", "sleep", "60", (char *)NULL);
      _exit(127);
    }
    if (pidfile) {
      FILE *f = fopen(pidfile, "w");
      fprintf(f, "%ld\n", (long)g);
      fclose(f);
    }
    sleep(60);
    return 0;
  }
  sf_ratelog log;
  long long max = bo.max_count > 0 ? bo.max_count : bo.max_time > 0 ? -1 : 1000;
  sf_ratelog_init(&log, bo.sample_duration, max);
  sf_ratelog_set_max_time(&log, bo.max_time); /* --max-time: synthetic seconds of steps */
  while (!sf_ratelog_done(&log)) {
    sf_ratelog_elapse(&log, step, rate * step, 1e9 * rate * step);
    sf_ratelog_log(&log, "loss", !strcmp(mode, "nan") ? NAN : 0.5);
  }
  sf_result_set_rates(res, "train", &log);
  if (bound > 0) {
    cJSON *b = cJSON_AddObjectToObject(sf_result_json(res), "bound");
    cJSON_AddNumberToObject(b, "step_samples", 1);
    cJSON_AddNumberToObject(b, "samples_per_s", bound);
  }
  if (!strcmp(mode, "fail")) sf_result_fail(res, "fake_bench: asked to fail");
  char *path = NULL;
  int rc = sf_result_write(res, &path);
  if (path) printf("fake_bench: wrote %s\n", path);
  free(path);
  sf_result_free(res);
  sf_ratelog_free(&log);
  sf_bench_opts_free(&bo);
  return rc ? 1 : 0;
}

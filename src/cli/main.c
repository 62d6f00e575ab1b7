/* `scaffold`: entry point. Dispatches to the subcommands declared in scaffold/cli.h. */
#include <stdio.h>
#include <string.h>

#include "scaffold/cli.h"
#include "scaffold/runtime.h"
#include "scaffold/common.h"
#include "scaffold/switches.h"

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
} subcommand;

static const subcommand commands[] = {
  {"generate_fractals", sf_cmd_generate_fractals, "generate the IFS fractal classes and instances"},
  {"benchmark", sf_cmd_benchmark, "build/reuse the dataset, then train to val Dice >= target"},
  {"jobs", sf_cmd_jobs, "run a profile's suite of benchmark jobs"},
  {"run", sf_cmd_run, "run one benchmark job and write its result JSON"},
  {"rerun", sf_cmd_rerun, "re-run the job that produced a result JSON"},
  {"report", sf_cmd_report, "score a results directory (table, HTML)"},
  {"summary", sf_cmd_summary, "summarise a results directory as a baseline JSON"},
  {"compare", sf_cmd_compare, "two result sets side by side: ratio and spread per test"},
  {"simulate", sf_cmd_simulate, "predict training steps on a machine class (StarPU SimGrid)"},
  {"steps", sf_cmd_steps, "time training steps of the config's task graph (synthetic samples)"},
  {"tune", sf_cmd_tune, "measure the fastest kernel variant per call shape on this machine (tuning record)"},
  {"calibrate", sf_cmd_calibrate, "measure this machine's class: perfmodels, bus files, tuning record, baseline"},
  {"tune", sf_cmd_tune, "measure the fastest kernel variant per call shape on this machine (tuning record)"},
  {"calibrate", sf_cmd_calibrate, "measure this machine's class: perfmodels, bus files, tuning record, baseline"},
};

static void usage(FILE *f)
{
  fprintf(f, "usage: scaffold <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\n`scaffold <command> --help` describes each command's options.\n");
}

int main(int argc, char **argv)
{
  sf_runtime_prepare_process(argv); /* OMP_MAX_TASK_PRIORITY, read once by libgomp (runtime: openmp) */
  if (argc < 2) {
    usage(stderr);
    return SF_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(stdout);
    return 0;
  }
  sf_switches_check(); /* a bad SF_* value is refused before any command starts */
  if (!strcmp(argv[1], "--version")) {
    printf("scaffold %s\n", SF_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "scaffold: error: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return SF_EXIT_USAGE;
}

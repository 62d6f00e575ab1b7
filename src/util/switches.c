/* The one table of environment switches (scaffold/switches.h): every variable the product reads,
 * its allowed values, default, meaning and reading layer. docs/config.md embeds the markdown this
 * file writes (tests/config checks that it is current), `-v` prints the switches that are set, the
 * result file records the replayable ones, and `scaffold rerun` applies nothing that is not here. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/switches.h"

/* ---- value checks for the switches whose values are not a short list ------------------------ */
static int nonneg_integer(const char *v)
{
  long x;
  return sf_parse_long_in(v, 0, 1L << 62, &x) == 0;
}

static int positive_integer(const char *v)
{
  long x;
  return sf_parse_long_in(v, 1, 1L << 62, &x) == 0;
}

static int rows_x_columns(const char *v) /* "RxC", each a positive integer; the graph checks the grid */
{
  const char *x = strchr(v, 'x');
  if (!x || x == v || !x[1]) return 0;
  char rows[32];
  size_t n = (size_t)(x - v);
  if (n >= sizeof rows) return 0;
  memcpy(rows, v, n);
  rows[n] = '\0';
  return positive_integer(rows) && positive_integer(x + 1);
}

static int any_path(const char *v) { return v[0] != '\0'; }

#define PRODUCT(name, replay, valid, values, unset, layer, meaning) \
  {name, SF_SWITCH_PRODUCT, replay, valid, values, unset, layer, meaning}
#define HOOK(name, valid, values, layer, meaning) \
  {name, SF_SWITCH_TEST, 0, valid, values, "off", layer, meaning}

static const sf_switch_def product_switches[] = {
  PRODUCT("SF_CPU_ISA", 1, NULL, "none | c | avx2 | avx512", "the best set this CPU has", "kernels",
          "Caps the CPU kernel set of the direct convolutions and the vector kernels (none: im2col + sgemm "
          "everywhere). A set this CPU lacks falls back to the best it has, with a warning."),
  PRODUCT("SF_CONV_DIRECT", 1, NULL, "0 | 1", "1", "kernels",
          "0 turns the direct convolution kernels off (im2col + sgemm everywhere), for A/B comparisons."),
  PRODUCT("SF_CONV_WINOGRAD", 1, NULL, "0 | 1", "1", "kernels",
          "0 turns the Winograd F(2,3) fp32 convolutions off (the direct kernels run instead)."),
  PRODUCT("SF_CPU_BF16", 1, NULL, "none | vdpbf16ps | amx", "the best engine this CPU has", "kernels",
          "Caps the bf16 convolution engine of `torch_amp: 1` on the CPU (none keeps fp32). An engine this CPU "
          "lacks falls back to the best it has, with a warning."),
  PRODUCT("SF_BF16_PREPACK", 1, NULL, "0 | 1", "1", "codelets",
          "0: every bf16 conv task packs its own bf16 weights instead of one packing task per forward "
          "(the comparison path)."),
  PRODUCT("SF_CUDA_MATH", 1, NULL, "fp32 | tf32 | bf16", "from torch_amp (fp32, or bf16 with torch_amp: 1)",
          "runtime", "The CUDA workers' math mode."),
  PRODUCT("SF_CUDA_CONV", 1, NULL, "auto | cublas | cudnn", "auto", "runtime",
          "The CUDA 3x3x3 convolution engine."),
  PRODUCT("SF_GRAD_PART_MAX_FLOATS", 1, nonneg_integer, "an integer >= 0", "262144 (2^18)", "train",
          "Largest parameter (floats) whose gradient is summed from per-slab partials on several workers."),
  PRODUCT("SF_HW_BLOCKS", 1, rows_x_columns, "ROWSxCOLUMNS, e.g. 2x2", "depth slabs only", "train",
          "Splits every activation into H/W blocks inside one process, as the 3D shards do across ranks."),
  PRODUCT("SF_TRACE_MAX_EVENTS", 1, nonneg_integer, "an integer >= 0", "1000000", "runtime",
          "Most task events kept in trace.json (`trace: 1`); later ones are counted, not written."),
  PRODUCT("SF_ALLREDUCE_GATE", 1, NULL, "0 | 1", "1", "comm",
          "0 turns off the gate that holds the gradient all-reduce's sends until the backward pass ends."),
  PRODUCT("SF_CHECK_REPLICAS", 1, NULL, "0 | 1", "0", "train",
          "1 checks after every step that all data-parallel replicas hold bitwise equal parameters."),
  PRODUCT("SF_DIST_ALL_STDOUT", 1, NULL, "0 | 1", "0", "runtime",
          "1 keeps the standard output of every MPI rank, not only rank 0's."),
  PRODUCT("SF_OPENCL_KERNEL_DIR", 0, any_path, "a directory", "the kernels built into the executable", "runtime",
          "Reads the OpenCL kernel sources from this directory (kernel development). Never applied from a "
          "result file: it names code to compile and run."),
  PRODUCT("SF_KERNEL_TUNING", 0, any_path, "0 | 1 | a tuning record file", "1", "runtime",
          "0 ignores the machine class's kernel tuning record (the built-in rules choose every kernel variant); "
          "a file path uses that record instead of the class's (A/B runs, `scaffold calibrate`)."),
  PRODUCT("SF_PERFMODELS_DIR", 0, any_path, "a directory", "the source tree's perfmodels/", "runtime",
          "Where the shipped machine classes are looked up, after the user's own (docs/perfmodels.md)."),
  PRODUCT("SF_CONFIG_DIR", 0, any_path, "a directory", "the source tree's configs/", "harness",
          "Where profile, weights and config names are resolved."),
  PRODUCT("SF_OUTROOT", 0, any_path, "a directory", "none: `jobs` needs -o", "cli",
          "`scaffold jobs` without -o writes into $SF_OUTROOT/results-<date>."),
  PRODUCT("SCAFFOLD_SIM", 0, any_path, "an executable", "build-sim/scaffold-sim in the source tree", "cli",
          "The scaffold-sim executable that `scaffold simulate` runs (--sim-bin wins)."),
};

static const sf_switch_def test_hooks[] = {
  HOOK("SF_RUN_BENCHMARK_EXE", any_path, "an executable", "cli",
       "`scaffold run` starts this instead of `scaffold benchmark` (the harness tests' fake benchmark)."),
  HOOK("SF_HAVE_CUDA", NULL, "0 | 1", "harness", "Overrides the harness's CUDA detection (profiles' device lists)."),
  HOOK("SF_TEST_CKPT_COMMIT_DELAY_MS", nonneg_integer, "an integer >= 0", "train",
       "Delays each checkpoint's commit by this many ms, so a test can kill the process mid-write."),
  HOOK("SF_TEST_CKPT_COMMIT_DELAY_FROM_EPOCH", nonneg_integer, "an integer >= 0", "train",
       "The first epoch whose checkpoint commit is delayed."),
};

#define N_PRODUCT ((int)(sizeof product_switches / sizeof product_switches[0]))
#define N_HOOKS ((int)(sizeof test_hooks / sizeof test_hooks[0]))

const sf_switch_def *sf_switch_at(int i)
{
  if (i < 0) return NULL;
  if (i < N_PRODUCT) return &product_switches[i];
  if (i < N_PRODUCT + N_HOOKS) return &test_hooks[i - N_PRODUCT];
  return NULL;
}

const sf_switch_def *sf_switch_find(const char *name)
{
  for (int i = 0; sf_switch_at(i); i++)
    if (!strcmp(sf_switch_at(i)->name, name)) return sf_switch_at(i);
  return NULL;
}

/* values is "a | b | c": 1 when v is one of them. */
static int one_of(const char *values, const char *v)
{
  size_t n = strlen(v);
  for (const char *p = values; *p;) {
    const char *bar = strstr(p, " | ");
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && !strncmp(p, v, n)) return 1;
    p += len + (bar ? 3 : 0);
  }
  return 0;
}

int sf_switch_value_ok(const sf_switch_def *s, const char *v)
{
  return s->valid ? s->valid(v) : one_of(s->values, v);
}

const char *sf_switch(const char *name)
{
  const sf_switch_def *s = sf_switch_find(name);
  if (!s) SF_ABORT("environment switch %s is not in the switch table (src/util/switches.c)", name);
  const char *v = getenv(name);
  if (!v || !*v) return NULL;
  if (!sf_switch_value_ok(s, v))
    sf_die(SF_EXIT_USAGE, "environment %s='%s': expected %s (docs/config.md, \"Environment switches\")", name, v,
           s->values);
  return v;
}

int sf_switch_is(const char *name, const char *value)
{
  const char *v = sf_switch(name);
  return v && !strcmp(v, value);
}

void sf_switches_check(void)
{
  for (int i = 0; sf_switch_at(i); i++) (void)sf_switch(sf_switch_at(i)->name);
}

void sf_switches_print(FILE *out)
{
  int any = 0;
  for (int i = 0; sf_switch_at(i); i++) {
    const sf_switch_def *s = sf_switch_at(i);
    const char *v = sf_switch(s->name);
    if (!v) continue;
    fprintf(out, "%s%s=%s%s", any ? " " : "# environment switches: ", s->name, v,
            s->scope == SF_SWITCH_TEST ? " (test hook)" : "");
    any = 1;
  }
  fprintf(out, any ? "\n" : "# environment switches: none set (docs/config.md lists them)\n");
}

/* A table cell: '|' escaped so that "0 | 1" stays in one cell. */
static void cell(FILE *out, const char *text)
{
  fputs("| ", out);
  for (const char *p = text; *p; p++) {
    if (*p == '|') fputc('\\', out);
    fputc(*p, out);
  }
  fputc(' ', out);
}

static void markdown_rows(FILE *out, sf_switch_scope scope)
{
  for (int i = 0; sf_switch_at(i); i++) {
    const sf_switch_def *s = sf_switch_at(i);
    if (s->scope != scope) continue;
    fprintf(out, "| `%s` ", s->name);
    cell(out, s->values);
    cell(out, s->unset);
    cell(out, s->layer);
    cell(out, s->replay ? "yes" : "no");
    cell(out, s->meaning);
    fputs("|\n", out);
  }
}

void sf_switches_write_markdown(FILE *out)
{
  fprintf(out, "\n| variable | values | when unset | read by | rerun applies it | meaning |\n"
               "|---|---|---|---|---|---|\n");
  markdown_rows(out, SF_SWITCH_PRODUCT);
  fprintf(out, "\nTest hooks (set only in a tester's own environment; never recorded in a result file, and "
               "`scaffold rerun` refuses a file that holds one):\n\n"
               "| variable | values | when unset | read by | rerun applies it | meaning |\n"
               "|---|---|---|---|---|---|\n");
  markdown_rows(out, SF_SWITCH_TEST);
  fprintf(out, "\n");
}

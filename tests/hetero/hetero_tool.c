/* Inspection tool for the heterogeneous-run tests and figures (tests/hetero/test_*.sh): reads a run
 * directory's trace.json and worker_stats.json.
 *   hetero_tool trace-check RUN_DIR   trace.json names a CPU and an OpenCL worker, has task events on
 *                                     both, a "bus transfers" counter track and otherData.transfer_bytes
 *                                     > 0, equal to worker_stats.json's transfers.bytes, whose by_kind
 *                                     task counts match the trace's; exit 1 saying what is missing
 *   hetero_tool shares RUN_DIR        one line: tasks and flops per kind of worker (counts and shares)
 *                                     and the bytes moved between memory nodes, from worker_stats.json
 *   hetero_tool tasks RUN_DIR KIND    prints the tasks run by workers of KIND ("CPU", "OpenCL"; 0 if none)
 *   hetero_tool have-opencl           exit 0 when an OpenCL device is visible, 77 (skip) otherwise */
#include <cjson/cJSON.h>
#include <starpu.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"
#include "scaffold/fsutil.h"

#define MAXW 64

static cJSON *load(const char *dir, const char *name)
{
  char *p = sf_path_join(dir, name), *err = NULL;
  cJSON *j = sf_json_load(p, &err);
  if (!j) {
    fprintf(stderr, "FAIL: cannot load %s: %s\n", p, err ? err : "?");
    exit(1);
  }
  free(p);
  return j;
}

static double num(const cJSON *o, const char *key, const char *where)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) {
    fprintf(stderr, "FAIL: %s has no number '%s'\n", where, key);
    exit(1);
  }
  return v->valuedouble;
}

/* worker kind from a StarPU worker name ("CPU 0", "OpenCL 0 (...)", "CUDA 0 (...)") */
static int kind_of(const char *name)
{
  if (!strncmp(name, "CPU", 3)) return 0;
  if (!strncmp(name, "OpenCL", 6)) return 1;
  return 2;
}

static int trace_check(const char *dir)
{
  int bad = 0;
  cJSON *t = load(dir, "trace.json");
  const cJSON *ev = cJSON_GetObjectItemCaseSensitive(t, "traceEvents");
  if (!cJSON_IsArray(ev)) {
    fprintf(stderr, "FAIL: trace.json has no traceEvents array\n");
    return 1;
  }
  int kind[MAXW];
  for (int i = 0; i < MAXW; i++) kind[i] = -1;
  long tasks[3] = {0, 0, 0}, counters = 0;
  double last_mib = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev)
  {
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph"), *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid"), *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    if (!cJSON_IsString(ph) || !cJSON_IsString(name)) continue;
    if (!strcmp(ph->valuestring, "M") && !strcmp(name->valuestring, "thread_name") && cJSON_IsNumber(tid)) {
      const cJSON *n = cJSON_GetObjectItemCaseSensitive(args, "name");
      if (cJSON_IsString(n) && tid->valueint >= 0 && tid->valueint < MAXW && strncmp(n->valuestring, "main", 4))
        kind[tid->valueint] = kind_of(n->valuestring);
    } else if (!strcmp(ph->valuestring, "X") && cJSON_IsNumber(tid)) {
      const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
      if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "task")) continue;
      int w = tid->valueint;
      if (w < 0 || w >= MAXW || kind[w] < 0) {
        fprintf(stderr, "FAIL: task event '%s' on tid %d, which no thread_name names as a worker\n", name->valuestring,
                w);
        bad = 1;
        continue;
      }
      tasks[kind[w]]++;
    } else if (!strcmp(ph->valuestring, "C") && !strcmp(name->valuestring, "bus transfers")) {
      counters++;
      last_mib = num(args, "MiB", "a 'bus transfers' counter event");
    }
  }
  const cJSON *od = cJSON_GetObjectItemCaseSensitive(t, "otherData");
  double tbytes = num(od, "transfer_bytes", "trace.json otherData"), tcount = num(od, "transfer_count", "otherData");
  printf("trace.json: task events CPU %ld, OpenCL %ld, other %ld; 'bus transfers' counter events %ld (last %.3f MiB); "
         "otherData transfer_bytes %.0f in %.0f transfers\n",
         tasks[0], tasks[1], tasks[2], counters, last_mib, tbytes, tcount);
  if (tasks[0] == 0 || tasks[1] == 0) {
    fprintf(stderr, "FAIL: trace.json shows %ld task events on CPU workers and %ld on OpenCL workers; want both > 0\n",
            tasks[0], tasks[1]);
    bad = 1;
  }
  if (counters == 0 || !(last_mib > 0)) {
    fprintf(stderr, "FAIL: trace.json: %ld 'bus transfers' counter events, last value %.6f MiB; want > 0\n", counters,
            last_mib);
    bad = 1;
  }
  if (!(tbytes > 0) || !(tcount > 0)) {
    fprintf(stderr, "FAIL: trace.json otherData: transfer_bytes %.0f, transfer_count %.0f; want both > 0\n", tbytes,
            tcount);
    bad = 1;
  }
  if (fabs(last_mib * 1048576.0 - tbytes) > 1048576.0 * 1e-6 + 1) {
    fprintf(stderr, "FAIL: the last counter event says %.6f MiB, otherData.transfer_bytes %.0f bytes\n", last_mib,
            tbytes);
    bad = 1;
  }

  cJSON *s = load(dir, "worker_stats.json");
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(s, "transfers");
  double sbytes = num(tr, "bytes", "worker_stats.json transfers");
  if (sbytes != tbytes) {
    fprintf(stderr, "FAIL: worker_stats.json transfers.bytes %.0f != trace.json transfer_bytes %.0f\n", sbytes, tbytes);
    bad = 1;
  }
  const cJSON *buses = cJSON_GetObjectItemCaseSensitive(tr, "buses"), *b;
  double sum = 0;
  int to_dev = 0, to_host = 0;
  cJSON_ArrayForEach(b, buses)
  {
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "src"), *dst = cJSON_GetObjectItemCaseSensitive(b, "dst");
    double by = num(b, "bytes", "a transfers.buses entry");
    sum += by;
    printf("  bus %s -> %s: %.0f bytes in %.0f transfers\n", cJSON_IsString(src) ? src->valuestring : "?",
           cJSON_IsString(dst) ? dst->valuestring : "?", by, num(b, "count", "a transfers.buses entry"));
    if (cJSON_IsString(dst) && !strncmp(dst->valuestring, "OpenCL", 6) && by > 0) to_dev = 1;
    if (cJSON_IsString(src) && !strncmp(src->valuestring, "OpenCL", 6) && by > 0) to_host = 1;
  }
  if (sum != sbytes || !to_dev || !to_host) {
    fprintf(stderr, "FAIL: worker_stats.json buses sum to %.0f bytes (total %.0f); transfers to an OpenCL node: %s, "
                    "from one: %s\n",
            sum, sbytes, to_dev ? "yes" : "no", to_host ? "yes" : "no");
    bad = 1;
  }
  const cJSON *bk = cJSON_GetObjectItemCaseSensitive(s, "by_kind");
  const char *names[2] = {"CPU", "OpenCL"};
  for (int k = 0; k < 2; k++) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(bk, names[k]);
    if (!o) {
      fprintf(stderr, "FAIL: worker_stats.json by_kind has no %s entry\n", names[k]);
      bad = 1;
      continue;
    }
    double n = num(o, "tasks", "by_kind entry");
    long dropped = (long)num(s, "events_dropped", "worker_stats.json");
    if (dropped == 0 && (long)n != tasks[k]) {
      fprintf(stderr, "FAIL: worker_stats.json by_kind.%s.tasks %.0f, trace.json has %ld task events there\n", names[k],
              n, tasks[k]);
      bad = 1;
    }
  }
  cJSON_Delete(t);
  cJSON_Delete(s);
  return bad;
}

static int shares(const char *dir)
{
  cJSON *s = load(dir, "worker_stats.json");
  const cJSON *bk = cJSON_GetObjectItemCaseSensitive(s, "by_kind"), *o;
  cJSON_ArrayForEach(o, bk)
  {
    printf("%s: %.0f workers, %.0f tasks (%.1f%%), %.3f GFLOP (%.1f%%), busy %.3f s | ", o->string,
           num(o, "workers", "by_kind"), num(o, "tasks", "by_kind"), num(o, "tasks_pct", "by_kind"),
           num(o, "flops", "by_kind") * 1e-9, num(o, "flops_pct", "by_kind"), num(o, "busy_s", "by_kind"));
  }
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(s, "transfers");
  printf("transfers %.3f MiB in %.0f\n", num(tr, "bytes", "transfers") / 1048576.0, num(tr, "count", "transfers"));
  const cJSON *buses = cJSON_GetObjectItemCaseSensitive(tr, "buses"), *b;
  cJSON_ArrayForEach(b, buses)
  {
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "src"), *dst = cJSON_GetObjectItemCaseSensitive(b, "dst");
    printf("  %s -> %s: %.3f MiB in %.0f transfers\n", cJSON_IsString(src) ? src->valuestring : "?",
           cJSON_IsString(dst) ? dst->valuestring : "?", num(b, "bytes", "bus") / 1048576.0, num(b, "count", "bus"));
  }
  cJSON_Delete(s);
  return 0;
}

static int kind_tasks(const char *dir, const char *kind)
{
  cJSON *s = load(dir, "worker_stats.json");
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "by_kind"), kind);
  printf("%.0f\n", o ? num(o, "tasks", "by_kind entry") : 0.0);
  cJSON_Delete(s);
  return 0;
}

static int have_opencl(void)
{
#ifdef STARPU_USE_OPENCL
  cl_platform_id plat[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plat, &np) == CL_SUCCESS)
    for (cl_uint i = 0; i < np && i < 16; i++) {
      cl_uint nd = 0;
      if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) == CL_SUCCESS && nd > 0) return 0;
    }
#endif
  printf("SKIPPED: no OpenCL device (install pocl-opencl-icd for a CPU OpenCL device; StarPU needs OpenCL)\n");
  return 77;
}

int main(int argc, char **argv)
{
  if (argc == 2 && !strcmp(argv[1], "have-opencl")) return have_opencl();
  if (argc == 4 && !strcmp(argv[1], "tasks")) return kind_tasks(argv[2], argv[3]);
  if (argc == 3 && !strcmp(argv[1], "trace-check")) return trace_check(argv[2]);
  if (argc == 3 && !strcmp(argv[1], "shares")) return shares(argv[2]);
  fprintf(stderr, "usage: hetero_tool trace-check RUN_DIR | shares RUN_DIR | tasks RUN_DIR KIND | have-opencl\n");
  return 2;
}

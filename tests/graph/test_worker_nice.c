/* Config key worker_nice (src/runtime/worker_priority.c): the runtime's worker threads, and only
 * they, run at the process's nice value plus worker_nice, at most 19. Read back independently of the
 * code under test, from /proc/self/task/<tid>/stat, for StarPU's CPU workers and the openmp runtime's
 * worker threads (CTest: worker_nice 0, where nothing moves, 5, 7, -1 (auto: 5 in one process), and 5
 * with the process already at nice 16, clamped to 19); and the run header's runtime description says
 * so. Then two training steps run, so the lowered workers still execute the graph. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "graph_testlib.h"
#include "scaffold/runtime.h"
#include "testutil.h"

#define MAX_THREADS 256

/* The ids and nice values of this process's threads (field 19 of /proc/self/task/<tid>/stat); returns their
 * count, and *main_at the index of the calling thread. */
static int thread_nices(long *tid, int *nice, int *main_at)
{
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  long me = syscall(SYS_gettid);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < MAX_THREADS) {
    if (e->d_name[0] == '.') continue;
    char path[300], line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* the thread has ended */
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    const char *p = ok ? strrchr(line, ')') : NULL; /* after the command name, fields 3.. */
    if (!p) continue;
    int field = 2, val = 0;
    for (const char *q = p + 1; *q && field < 19; q++)
      if (*q == ' ') field++, val = (int)strtol(q + 1, NULL, 10);
    if (field != 19) continue;
    if (atol(e->d_name) == me) *main_at = n;
    tid[n] = atol(e->d_name);
    nice[n++] = val;
  }
  closedir(d);
  return n;
}

static void check_case(const char *runtime, int ncpu, int worker_nice)
{
  errno = 0;
  int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
  int incr = worker_nice < 0 ? 5 : worker_nice; /* -1, auto: 5 in one process */
  int want = base + incr > 19 ? 19 : base + incr;
  long before[MAX_THREADS], tid[MAX_THREADS];
  int nice[MAX_THREADS], main_at = -1;
  int nbefore = thread_nices(before, nice, &main_at); /* e.g. OpenBLAS's pool, started at load time */
  gt_runtime_set_worker_nice(worker_nice);
  gt_runtime_start_on(runtime, NULL, ncpu);
  int n = thread_nices(tid, nice, &main_at);
  SF_CHECK(n > 0 && main_at >= 0, "%s: cannot read /proc/self/task (%d threads, main thread %s)", runtime, n,
           main_at >= 0 ? "found" : "not found");
  int lowered = 0, other = 0;
  for (int i = 0; i < n; i++) {
    int old = 0;
    for (int j = 0; j < nbefore; j++) old |= before[j] == tid[i];
    if (i == main_at || old || nice[i] == base) continue;
    if (nice[i] == want) lowered++;
    else other++;
  }
  if (main_at >= 0) SF_CHECK(nice[main_at] == base, "%s: the main thread is at nice %d, not the process's %d", runtime,
                             nice[main_at], base);
  int expect = want == base ? 0 : ncpu;
  SF_CHECK(lowered == expect && other == 0,
           "%s, %d workers, worker_nice %d from nice %d: %d threads at nice %d (expected %d), %d at other values",
           runtime, ncpu, worker_nice, base, lowered, want, expect, other);
  char desc[512], at[64];
  sf_runtime_describe(desc, sizeof desc);
  if (want == base) snprintf(at, sizeof at, "at the process's nice %d", base);
  else snprintf(at, sizeof at, "%d at nice %d", ncpu, want);
  SF_CHECK(strstr(desc, at) != NULL, "%s: the runtime description lacks '%s': %s", runtime, at, desc);
  if (worker_nice < 0)
    SF_CHECK(strstr(desc, "worker_nice auto: 5") != NULL, "%s: the description does not say worker_nice auto: 5: %s",
             runtime, desc);

  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 7);
  gt_result r;
  gt_run_graph(&p, 0, 0, 2, 1e-3, &r);
  SF_CHECK(isfinite(r.out[0][2]) && isfinite(r.out[1][2]), "%s: the training steps gave loss %g, %g", runtime,
           r.out[0][2], r.out[1][2]);
  gt_result_free(&r);
  gt_problem_free(&p);
  gt_runtime_stop();
  printf("%s, %d workers, worker_nice %d from nice %d: %d threads at nice %d, main thread at %d\n", runtime, ncpu,
         worker_nice, base, lowered, want, base);
}

/* test_worker_nice RUNTIME NCPU WORKER_NICE [PROCESS_NICE]: one case per process, so that threads left by an
 * earlier runtime (libgomp keeps its pool) do not count; PROCESS_NICE first raises the process's nice value
 * (a thread may lower its own priority), to check the clamp at 19. */
int main(int argc, char **argv)
{
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: test_worker_nice RUNTIME NCPU WORKER_NICE [PROCESS_NICE]\n");
    return 2;
  }
  if (argc == 5 && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), atoi(argv[4])) != 0) {
    printf("skipped: cannot set this thread's nice value to %s (errno %d)\n", argv[4], errno);
    return 77;
  }
  check_case(argv[1], atoi(argv[2]), atoi(argv[3]));
  gt_cleanup();
  return sf_test_end();
}

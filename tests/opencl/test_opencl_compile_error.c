/* SF_OPENCL_KERNEL_DIR and the kernel compile-error report. Writes the embedded kernel sources to
 * temp dirs and starts StarPU + sf_opencl_init in child processes: with the unmodified sources it must
 * succeed (the override path works); with a syntax error appended to reduce.cl it must exit with
 * status 1 and a message naming that file, the device (the one StarPU's OpenCL worker uses) and the
 * compiler's build log; with a source missing it must exit 1 naming the missing path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ocl_testutil.h"
#include "scaffold/common.h"

#define BROKEN "reduce.cl"
#define BAD_LINE "\n__kernel void sf_broken(__global float *p) { p[0] = sf_undeclared_symbol_42 }\n"

static void write_sources(const char *dir, const char *broken, const char *skip)
{
  if (mkdir(dir, 0700) != 0) {
    fprintf(stderr, "FAIL mkdir %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  for (int i = 0; i < sf_opencl_source_count(); i++) {
    const char *name = sf_opencl_source_name(i);
    if (skip && strcmp(name, skip) == 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
      fprintf(stderr, "FAIL cannot write %s: %s\n", path, strerror(errno));
      exit(1);
    }
    fputs(sf_opencl_source_text(i), f);
    if (broken && strcmp(name, broken) == 0) fputs(BAD_LINE, f);
    fclose(f);
  }
}

/* Runs StarPU + sf_opencl_init with SF_OPENCL_KERNEL_DIR=dir in a child; returns its exit status
 * (-1 if it died from a signal) and its stdout+stderr in out. */
static int run_child(const char *dir, const char *tmp, char *out, size_t cap)
{
  int fd[2];
  if (pipe(fd) != 0) exit(1);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    setenv("SF_OPENCL_KERNEL_DIR", dir, 1);
    setenv("TMPDIR", tmp, 1); /* the child's STARPU_HOME lands under tmp, removed by the parent */
    int rc = ocl_begin("child");
    if (rc) _exit(rc);
    int w[1];
    if (starpu_worker_get_ids_by_type(STARPU_OPENCL_WORKER, w, 1) == 1) {
      char name[256];
      starpu_worker_get_name(w[0], name, sizeof name);
      printf("worker: %s\n", name);
    }
    ocl_end();
    fflush(stdout);
    _exit(0);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t got;
  while ((got = read(fd[0], out + len, cap - 1 - len)) > 0) len += (size_t)got;
  out[len] = '\0';
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
  SF_CHECK(sf_opencl_source_count() >= 7, "only %d kernel sources embedded", sf_opencl_source_count());
  char *tmp = sf_test_tmpdir("ocl_compile_error");
  char good[4096], bad[4096], missing[4096];
  snprintf(good, sizeof good, "%s/good", tmp);
  snprintf(bad, sizeof bad, "%s/bad", tmp);
  snprintf(missing, sizeof missing, "%s/missing", tmp);
  write_sources(good, NULL, NULL);
  write_sources(bad, BROKEN, NULL);
  write_sources(missing, NULL, "loss.cl");
  static char out[1 << 20];

  int st = run_child(good, tmp, out, sizeof out);
  if (st == 77) {
    sf_rm_rf(tmp);
    return sf_test_skip("no OpenCL device (see the child's output above)");
  }
  SF_CHECK(st == 0, "unmodified sources from SF_OPENCL_KERNEL_DIR: exit status %d, output:\n%s", st, out);
  char worker[512] = "";
  char *wl = strstr(out, "worker: ");
  if (wl) sscanf(wl + 8, "%511[^\n]", worker);
  printf("good sources: exit %d, %s\n", st, worker[0] ? worker : "(no worker line)");

  st = run_child(bad, tmp, out, sizeof out);
  printf("---- broken %s: exit %d, output:\n%s----\n", BROKEN, st, out);
  SF_CHECK(st == 1, "broken source: exit status %d, expected 1 (a clean error exit, not a crash)", st);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", bad, BROKEN);
  SF_CHECK(strstr(out, path) != NULL, "the error does not name the broken file %s", path);
  SF_CHECK(strstr(out, "failed to compile") != NULL, "the error does not say the source failed to compile");
  char dev[256] = "";
  char *dq = strstr(out, "for device '");
  if (dq) sscanf(dq + 12, "%255[^']", dev);
  SF_CHECK(dev[0] && strcmp(dev, "?") != 0, "the error does not name the device");
  SF_CHECK(dev[0] && strstr(worker, dev) != NULL, "device '%s' in the error is not the OpenCL worker's (%s)", dev,
           worker);
  SF_CHECK(strstr(out, "--- build log ---") != NULL, "the error has no build log section");
  SF_CHECK(strstr(out, "sf_undeclared_symbol_42") != NULL, "the build log does not show the offending code/symbol");

  st = run_child(missing, tmp, out, sizeof out);
  printf("---- missing loss.cl: exit %d, output:\n%s----\n", st, out);
  snprintf(path, sizeof path, "%s/loss.cl", missing);
  SF_CHECK(st == 1, "missing source: exit status %d, expected 1", st);
  SF_CHECK(strstr(out, path) != NULL, "the error does not name the missing file %s", path);
  sf_rm_rf(tmp);
  free(tmp);
  return sf_test_end();
}

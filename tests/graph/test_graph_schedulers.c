/* The training step under every supported StarPU scheduler: eager, lws and dmda (3 slabs, 2 workers)
 * match the sequential reference in each of two steps (gt_check_vs_ref: from the run's own state,
 * losses, gradients and Adam moments within 1e-5, parameter update within 1e-3 lr); ws, dm, dmdas,
 * modular-heft and the "heft" alias each run a step matching it too; an unknown scheduler name is
 * refused with exit status 2 and a message naming it (runtime init, checked in a child process). */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "scaffold/common.h"
#include "testutil.h"

static void check_unknown_scheduler(void)
{
  int fds[2];
  if (pipe(fds) != 0) SF_ABORT("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    gt_runtime_start("no-such-policy", 1);
    _exit(0); /* must not get here */
  }
  close(fds[1]);
  char buf[4096] = "";
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
  buf[len] = '\0';
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  SF_CHECK(code == 2, "unknown scheduler: exit status %d, expected 2 (stderr: %s)", code, buf);
  SF_CHECK(strstr(buf, "no-such-policy") != NULL, "unknown scheduler: message does not name it: %s", buf);
  printf("ok   unknown scheduler refused with status %d: %s", code, buf);
}

/* nsteps training steps on 3 slabs under sched with ncpu workers, checked against the reference
 * (gt_check_vs_ref, 1e-5). */
static void check_vs_ref(const char *what, const gt_problem *p, const char *sched, int ncpu, int nsteps)
{
  gt_runtime_start(sched, ncpu);
  gt_result r;
  gt_run_graph(p, 3, 0, nsteps, 1e-3, &r);
  gt_runtime_stop();
  gt_check_vs_ref(what, p, &r, 1e-5);
  gt_result_free(&r);
}

/* The three ways slab contributions meet in a weight gradient (graph.c: choose_partial_grads) on a
 * model with 32-channel layers, 2 workers, 3 slabs: the default (small weights by per-slab
 * partials), every 3x3x3 conv weight with Cout >= 17 as two tap blocks accumulated separately
 * (SF_GRAD_PART_MAX_FLOATS=0), and COMMUTE alone (1 worker: neither applies). */
static void check_gradient_layouts(void)
{
  gt_problem p;
  gt_problem_init(&p, 4, 16, 4, 4, 13);
  const char *layouts[] = {"default", "tap blocks", "1 worker"};
  for (int i = 0; i < 3; i++) {
    if (i == 1) setenv("SF_GRAD_PART_MAX_FLOATS", "0", 1);
    char what[96];
    snprintf(what, sizeof what, "ps 4 base 16, weight gradients: %s", layouts[i]);
    check_vs_ref(what, &p, "lws", i == 2 ? 1 : 2, 2);
    unsetenv("SF_GRAD_PART_MAX_FLOATS");
  }
  gt_problem_free(&p);
}

int main(void)
{
  check_unknown_scheduler();
  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 11);
  const char *main_scheds[] = {"eager", "lws", "dmda"};
  for (int i = 0; i < 3; i++) check_vs_ref(main_scheds[i], &p, main_scheds[i], 2, 2);
  const char *others[] = {"ws", "dm", "dmdas", "modular-heft", "heft"};
  for (int i = 0; i < 5; i++) check_vs_ref(others[i], &p, others[i], 2, 1);
  gt_problem_free(&p);
  check_gradient_layouts();
  gt_cleanup();
  return sf_test_end();
}

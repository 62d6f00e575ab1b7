/* Any mix of worker counts works with every scheduler the training issue lists: for eager, lws, ws,
 * dm, dmda, dmdas and modular-heft, one training step with OpenCL only (0 CPU + 1 OpenCL), 1 CPU +
 * 1 OpenCL and 2 CPU + 1 OpenCL gets StarPU to create exactly those workers, runs tasks on the
 * OpenCL worker (and on the CPU workers when there are some) and matches the sequential reference's
 * step (losses, gradients, Adam moments within 1e-5, parameter update within 1e-3 lr:
 * gt_check_vs_ref). Plus OpenCL only under more_determinism (no CPU worker to keep codelets on: the
 * placement rule stays off). ps 4, base 8. */
#include <starpu.h>
#include <stdio.h>

#include "graph_compare.h"
#include "graph_testlib.h"
#include "hetero_testlib.h"
#include "scaffold/opencl.h"
#include "testutil.h"

#define LR 1e-3

int main(void)
{
  if (!het_have_opencl())
    return sf_test_skip("no OpenCL device (install pocl-opencl-icd for a CPU OpenCL device; StarPU needs OpenCL)");
  gt_problem p;
  gt_problem_init(&p, 4, 8, 4, 4, 3);
  long c, o, mixed_cpu = 0, mixed_ocl = 0;
  int mixed_both = 0;

  const char *scheds[] = {"eager", "lws", "ws", "dm", "dmda", "dmdas", "modular-heft"};
  const int ncpus[] = {0, 1, 2};
  for (int s = 0; s < 7; s++)
    for (int k = 0; k < 3; k++) {
      int ncpu = ncpus[k];
      het_start(scheds[s], ncpu, 1, 0);
      unsigned got_cpu = starpu_cpu_worker_get_count(), got_ocl = starpu_opencl_worker_get_count();
      gt_result r;
      gt_run_graph(&p, 0, 0, 1, LR, &r);
      het_task_counts(&c, &o);
      het_stop();
      printf("%-12s %d CPU + 1 OpenCL: workers %u CPU %u OpenCL, %d slabs, tasks cpu %ld opencl %ld, loss %.9g\n",
             scheds[s], ncpu, got_cpu, got_ocl, r.nslabs, c, o, r.out[0][2]);
      fflush(stdout);
      SF_CHECK(got_cpu == (unsigned)ncpu && got_ocl == 1, "%s: asked for %d CPU + 1 OpenCL workers, got %u + %u",
               scheds[s], ncpu, got_cpu, got_ocl);
      /* which worker grabs a task is the scheduler's business (eager with 2 fast CPU workers may leave
       * the OpenCL worker idle on a loaded machine): per run only the kinds that must run are checked,
       * over the whole matrix both kinds must have run tasks */
      SF_CHECK(c + o > 0 && (ncpu == 0 ? c == 0 && o > 0 : 1), "%s %d CPU + 1 OpenCL: tasks on CPU %ld, on OpenCL %ld",
               scheds[s], ncpu, c, o);
      if (ncpu > 0) {
        mixed_cpu += c;
        mixed_ocl += o;
        mixed_both += c > 0 && o > 0;
      }
      char what[96];
      snprintf(what, sizeof what, "%s %d CPU + 1 OpenCL", scheds[s], ncpu);
      gt_check_vs_ref(what, &p, &r, 1e-5);
      gt_result_free(&r);
    }

  SF_CHECK(mixed_cpu > 0 && mixed_ocl > 0 && mixed_both >= 7,
           "mixed runs: %ld tasks on CPU workers, %ld on the OpenCL worker, %d of 14 runs used both kinds (want >= 7)",
           mixed_cpu, mixed_ocl, mixed_both);
  printf("mixed runs: %ld tasks on CPU workers, %ld on the OpenCL worker, %d of 14 runs used both kinds\n", mixed_cpu,
         mixed_ocl, mixed_both);

  /* OpenCL only under more_determinism: everything on the OpenCL worker */
  het_start("dmda", 0, 1, 1);
  SF_CHECK(sf_opencl_placement() == SF_OCL_PLACE_ANY, "OpenCL-only run: placement %d, expected ANY (no CPU worker)",
           (int)sf_opencl_placement());
  gt_result r;
  gt_run_graph(&p, 0, 1, 1, LR, &r);
  het_task_counts(&c, &o);
  het_stop();
  SF_CHECK(c == 0 && o > 0, "OpenCL-only deterministic run: tasks on CPU %ld, on OpenCL %ld", c, o);
  gt_check_vs_ref("OpenCL only, more_determinism 1", &p, &r, 1e-5);
  gt_result_free(&r);

  gt_problem_free(&p);
  het_cleanup();
  return sf_test_end();
}

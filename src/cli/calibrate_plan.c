/* The runs of `scaffold calibrate` (calibrate_plan.h). StarPU trusts a perfmodel footprint (codelet x data
 * size) after 10 samples, and every footprint of a shape occurs at least once per training step, so each run
 * is 11 calibrating steps. A full calibration covers the shapes of the shipped configs and harness profiles:
 * ps 4 b8, ps 5 b8/b16/b64 on 2 workers, the 1-slab shapes of 1 worker, the slab counts of 4-8 workers (for
 * classes derived for bigger machines), torch_amp 1 where the CPU has a bf16 engine, and 1 CPU + 1 OpenCL
 * worker where an OpenCL device exists (last, so the bus files describe the machine with it) at ps 4 b8 and
 * ps 5 b16: on PoCL a calibrating ps 5 b64 step took 137 s (dmda sends every footprint to the OpenCL worker
 * for its first samples), 25 minutes for 11 steps, more than the whole rest of the plan. */
#include "calibrate_plan.h"

#include <stdio.h>

#include "scaffold/cpu_isa.h"

static void add(sf_calib_plan *p, long ps, long base, long ncpu, long nopencl, long slabs, long amp)
{
  if (p->n >= SF_CALIB_MAX_RUNS) return;
  /* a step's cost grows ~8x per problem scale and ~4x per doubling of channels (the wide layers) */
  double w = (ps >= 5 ? 8.0 : 1.0) * (double)(base * base) / 64.0 * (amp ? 2.0 : 1.0) * (nopencl ? 4.0 : 1.0);
  /* 1 worker: twice the steps. The footprints it shares with the 2-worker shapes (the deepest layers, the
   * optimizer) are timed there under the other worker's cache and memory traffic, and StarPU keeps one mean per
   * footprint: with equal samples, a 1-worker simulation of ps 5 b16 came out 11-14 % slow on a family 6
   * model 207 Xeon (docs/simulation.md, "Validation") */
  int steps = ncpu == 1 && !nopencl ? 22 : 11;
  w *= steps / 11.0;
  p->run[p->n++] = (sf_calib_run){ps, base, 1, ncpu, nopencl, slabs, amp, nopencl > 0, steps, w < 0.05 ? 0.05 : w};
}

void sf_calib_plan_make(sf_calib_plan *p, const sf_config *c, int quick)
{
  p->n = 0;
  int bf16 = sf_bf16_engine_active() != SF_BF16_NONE;
  if (quick) {
    add(p, c->problem_scale, c->unet_base_channels, c->ncpu, 0, c->slabs, 0);
    if (c->torch_amp && bf16) add(p, c->problem_scale, c->unet_base_channels, c->ncpu, 0, c->slabs, 1);
    for (int i = 0; i < p->n; i++) p->run[i].batch = c->local_batch_size;
    p->measured = p->run[p->n - 1];
    p->extra_passes = 4; /* a quick plan's pass takes seconds */
    return;
  }
  static const long two[][2] = {{4, 8}, {5, 8}, {5, 16}, {5, 64}}, one[][2] = {{4, 8}, {5, 16}, {5, 64}};
  static const long slabs[][3] = {{5, 16, 4}, {5, 16, 8}, {5, 64, 4}, {5, 64, 8}};
  for (int i = 0; i < 4; i++) add(p, two[i][0], two[i][1], 2, 0, 0, 0);
  for (int i = 0; i < 3; i++) add(p, one[i][0], one[i][1], 1, 0, 0, 0);
  for (int i = 0; i < 4; i++) add(p, slabs[i][0], slabs[i][1], 2, 0, slabs[i][2], 0);
  for (int i = 0; bf16 && i < 3; i++) add(p, one[i][0], one[i][1], 2, 0, 0, 1);
  add(p, 5, 16, 1, 1, 4, 0);
  add(p, 5, 16, 1, 1, 8, 0);
  for (int i = 0; i < 2; i++) add(p, one[i][0], one[i][1], 1, 1, 0, 0); /* not ps 5 b64: see the header */
  p->extra_passes = 1;
  p->measured = p->run[0]; /* ps 4 b8, 2 workers: the figure scripts/validate-sim and tests/sim check */
}

char *sf_calib_run_describe(const sf_calib_run *r, char *buf, size_t len)
{
  char slabs[32] = "", workers[48];
  if (r->slabs > 0) snprintf(slabs, sizeof slabs, ", %ld slabs", r->slabs);
  if (r->ncpu < 0) snprintf(workers, sizeof workers, "all cores");
  else snprintf(workers, sizeof workers, "%ld CPU worker%s", r->ncpu, r->ncpu == 1 ? "" : "s");
  snprintf(buf, len, "ps %ld base %ld batch %ld, %s%s%s%s", r->ps, r->base, r->batch, workers,
           r->nopencl ? " + 1 OpenCL worker" : "", slabs, r->amp ? ", torch_amp 1" : "");
  return buf;
}

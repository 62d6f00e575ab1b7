/* The learning-rate schedule of spec §6.4 (scaffold/lr_schedule.h): PyTorch's
 * CosineAnnealingWarmRestarts, stepped once per epoch by the trainer. Plain host arithmetic; the
 * golden test tests/kernels_elem/test_elem_golden checks it against torch over 75 epochs. */
#include "scaffold/lr_schedule.h"

#include <math.h>

#include "scaffold/common.h"

/* CosineAnnealingWarmRestarts: after construction T_cur = 0, T_i = T_0; each step() does
 * T_cur += 1, and if T_cur >= T_i then T_cur -= T_i, T_i *= T_mult. lr uses python's op order. */
double sf_cosine_warm_restart_lr(long epochs_done, double eta_max, double eta_min, long T_0, long T_mult)
{
  SF_ASSERT(T_0 >= 1 && T_mult >= 1 && epochs_done >= 0);
  long T_cur = 0, T_i = T_0;
  for (long e = 0; e < epochs_done; e++) {
    T_cur += 1;
    if (T_cur >= T_i) {
      T_cur -= T_i;
      T_i *= T_mult;
    }
  }
  return eta_min + (eta_max - eta_min) * (1.0 + cos(M_PI * (double)T_cur / (double)T_i)) / 2.0;
}

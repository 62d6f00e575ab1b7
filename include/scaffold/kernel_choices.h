/* Which variant each CPU kernel entry ran (the 3x3x3, transposed and 1x1x1 convolutions), counted per
 * op and direction in this process (src/kernels/choices.c). The entries count every call; the run's
 * summary line, the result file (`kernel_choices`) and the trace's statistics name them, so a
 * researcher reading a result or a perfmodel knows which kernel it measured. */
#ifndef SF_KERNEL_CHOICES_H
#define SF_KERNEL_CHOICES_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef enum {
  SF_KOP_CONV3D_FORWARD,
  SF_KOP_CONV3D_BACKWARD_DATA,
  SF_KOP_CONV3D_BACKWARD_WEIGHTS,
  SF_KOP_CONV3D_BACKWARD_WEIGHTS_TAPS,
  SF_KOP_UPCONV3D_FORWARD,
  SF_KOP_UPCONV3D_BACKWARD_DATA,
  SF_KOP_UPCONV3D_BACKWARD_WEIGHTS,
  SF_KOP_CONV1_FORWARD,
  SF_KOP_CONV1_BACKWARD_DATA,
  SF_KOP_CONV1_BACKWARD_WEIGHTS,
  SF_KOP_COUNT
} sf_kernel_op;

/* "conv3d forward", "upconv3d dW", ... */
const char *sf_kernel_op_name(sf_kernel_op op);
/* One call of op ran variant (a string that lives as long as the process, e.g. sf_conv3d_variant_name's). */
void sf_kernel_choice_note(sf_kernel_op op, const char *variant);
/* The i-th variant op ran (i from 0), with its call count; NULL past the last. */
const char *sf_kernel_choice_at(sf_kernel_op op, int i, unsigned long *calls);
/* {"conv3d forward": {"winograd-avx512": 24, "direct-avx512": 12}, ...}: the ops that ran, for the
 * result file and the trace */
cJSON *sf_kernel_choices_json(void);
/* Forgets every count (tests; a benchmark before its timed steps). */
void sf_kernel_choices_reset(void);
/* "conv3d forward: winograd-avx512 on 24 calls, direct-avx512 on 12; conv3d dX: ..." for every op that
 * ran, or "none ran" */
char *sf_kernel_choices_describe(char *buf, size_t len);

#endif

/* Yamada's weights_ins145.csv (spec §3.1, Appendix A): 145 rows x 12 multipliers for the IFS
 * parameters a..l. Rows 0-12 scale a by 0.4..1.6 (row 6 = all ones, the base instance); rows
 * 13+12(p-1)+k scale parameter p = b..l by v_k = 0.4..0.9, 1.1..1.6; everything else is 1.
 * Row 108 (parameter i, k = 11) holds 0.6 instead of 1.6, as in the original file (kept). */
#include <pthread.h>

#include "scaffold/datagen.h"

static double table[SF_N_INSTANCES][12];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
  /* Decimal literals, so each entry equals the value parsed from the CSV text. */
  static const double va[13] = {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6};
  static const double vk[12] = {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6};
  for (int r = 0; r < SF_N_INSTANCES; r++)
    for (int p = 0; p < 12; p++) table[r][p] = 1.0;
  for (int r = 0; r < 13; r++) table[r][0] = va[r];
  for (int p = 1; p < 12; p++)
    for (int k = 0; k < 12; k++) table[13 + 12 * (p - 1) + k][p] = vk[k];
  table[108][8] = 0.6; /* the upstream table's typo, reproduced (spec §11.6) */
}

const double (*sf_weights145(void))[12]
{
  pthread_once(&once, build);
  return (const double(*)[12])table;
}

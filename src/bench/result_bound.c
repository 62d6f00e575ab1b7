/* The `bound: 1` figures in a result JSON (docs/scheduling.md): the run directory's bound.json as
 * "bound", plus samples_per_s, the throughput the tightest available lower bound allows (a step of
 * step_samples samples in the dependency-aware bound, else in the area bound per step), which the
 * report sets against the measured samples/s ("% of bound"). */
#include <math.h>

#include "scaffold/bench.h"
#include "scaffold/common.h"

int sf_result_add_bound(sf_result *r, const char *bound_json, double step_samples)
{
  char *err = NULL;
  cJSON *b = sf_json_load(bound_json, &err);
  if (!b) {
    sf_warn("result: no bound figures: %s", err);
    free(err);
    return -1;
  }
  double step_s = sf_json_num(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "deps"), "bound_s"));
  if (!(step_s > 0)) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(b, "area");
    double bs = sf_json_num(cJSON_GetObjectItemCaseSensitive(a, "bound_s"));
    double steps = sf_json_num(cJSON_GetObjectItemCaseSensitive(a, "steps"));
    step_s = bs > 0 && steps > 0 ? bs / steps : NAN;
  }
  cJSON_AddNumberToObject(b, "step_samples", step_samples);
  if (step_s > 0) cJSON_AddNumberToObject(b, "samples_per_s", step_samples / step_s);
  else cJSON_AddNullToObject(b, "samples_per_s"); /* uncalibrated perfmodels */
  cJSON_AddItemToObject(sf_result_json(r), "bound", b);
  return 0;
}

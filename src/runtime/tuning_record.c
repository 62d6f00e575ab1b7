/* Kernel tuning records as files (scaffold/kernel_tuning_setup.h): JSON through cJSON, checked key by key
 * on reading (a record is data from wherever its class came from), written atomically.
 *   {"format": 1, "family": "conv3d", "identity": "36b21b0b", "date": "2026-12-07T22:00:00Z",
 *    "commit": "7db0594", "cpu": "Intel(R) Xeon(R) Processor, family 6 model 207", "kernel_set": "avx512",
 *    "entries": [{"direction": "forward", "bf16": false, "shape": [nd, H, W, Cin, Cout],
 *                 "variant": "winograd-avx512", "best_us": 812.5}, ...]} */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/json.h"
#include "scaffold/kernel_tuning_setup.h"

#include <sf_perfmodel_ids.h> /* SF_PMID_FAMILY_conv3d: generated (cmake/PerfmodelIds.cmake) */

#define FORMAT 1
#define MAX_ENTRIES 4096
#define MAX_EXTENT (1 << 20)

static const char *const dir_names[] = {"forward", "dX", "dW", "dW taps"};

const char *sf_tuning_record_name(void) { return "conv3d-" SF_PMID_FAMILY_conv3d ".json"; }

void sf_tuning_record_free(sf_tuning_record *r)
{
  free(r->entries);
  free(r->best_us);
  memset(r, 0, sizeof *r);
}

static int string_member(const cJSON *o, const char *key, char *out, size_t len)
{
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= len) return -1;
  snprintf(out, len, "%s", v->valuestring);
  return 0;
}

/* A variant name of a record measured on kernel set `set`: the set-independent names, and direct-<set> /
 * winograd-<set>; -1 for anything else */
static int variant_of(const char *name, const char *set)
{
  static const struct {
    const char *name;
    sf_conv3d_variant v;
  } fixed[] = {{"im2col", SF_CONV3D_IM2COL},
               {"vdpbf16ps", SF_CONV3D_VDPBF16},
               {"winograd-vdpbf16ps", SF_CONV3D_WINOGRAD_BF16},
               {"amx", SF_CONV3D_AMX},
               {"small", SF_CONV3D_SMALL}};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (!strcmp(name, fixed[i].name)) return (int)fixed[i].v;
  size_t sl = strlen(set);
  for (int wino = 0; wino < 2; wino++) {
    const char *stem = wino ? "winograd-" : "direct-";
    size_t n = strlen(stem);
    if (!strncmp(name, stem, n) && strlen(name) == n + sl && !strcmp(name + n, set))
      return (int)(wino ? SF_CONV3D_WINOGRAD : SF_CONV3D_DIRECT);
  }
  return -1;
}

static int read_entry(const cJSON *e, const char *set, sf_conv3d_tuned *t, double *best, char *why, size_t wl)
{
  char dir[16], variant[32];
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
  const cJSON *bf16 = cJSON_GetObjectItemCaseSensitive(e, "bf16");
  *best = sf_json_num(cJSON_GetObjectItemCaseSensitive(e, "best_us"));
  if (!cJSON_IsObject(e)) return snprintf(why, wl, "not an object"), -1;
  if (string_member(e, "direction", dir, sizeof dir) != 0) return snprintf(why, wl, "\"direction\" is not a string"), -1;
  int d = -1;
  for (int i = 0; i < 4; i++)
    if (!strcmp(dir, dir_names[i])) d = i;
  if (d < 0) return snprintf(why, wl, "\"direction\" '%s' is not forward, dX, dW or dW taps", dir), -1;
  if (!cJSON_IsBool(bf16)) return snprintf(why, wl, "\"bf16\" is not true or false"), -1;
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 5)
    return snprintf(why, wl, "\"shape\" is not [nd, H, W, Cin, Cout]"), -1;
  int v[5];
  for (int i = 0; i < 5; i++) {
    double x = sf_json_num(cJSON_GetArrayItem(shape, i));
    if (!(x >= 1 && x <= MAX_EXTENT) || x != (int)x)
      return snprintf(why, wl, "\"shape\"[%d] is not an integer in [1, %d]", i, MAX_EXTENT), -1;
    v[i] = (int)x;
  }
  if (string_member(e, "variant", variant, sizeof variant) != 0) return snprintf(why, wl, "\"variant\" is not a string"), -1;
  int var = variant_of(variant, set);
  if (var < 0)
    return snprintf(why, wl, "\"variant\" '%s' is not a 3x3x3 convolution variant of this build (kernel set %s)", variant,
                    set), -1;
  if (!(*best > 0 && *best < 1e12)) return snprintf(why, wl, "\"best_us\" is not a positive number"), -1;
  *t = (sf_conv3d_tuned){{(sf_conv3d_direction)d, cJSON_IsTrue(bf16), v[0], v[1], v[2], v[3], v[4]}, (sf_conv3d_variant)var};
  return 0;
}

static int read_header(const cJSON *j, sf_tuning_record *r, char *why, size_t wl)
{
  char family[16], identity[16];
  if (!cJSON_IsObject(j)) return snprintf(why, wl, "not a JSON object"), -1;
  if (sf_json_num(cJSON_GetObjectItemCaseSensitive(j, "format")) != FORMAT)
    return snprintf(why, wl, "\"format\" is not %d", FORMAT), -1;
  if (string_member(j, "family", family, sizeof family) != 0 || strcmp(family, "conv3d"))
    return snprintf(why, wl, "\"family\" is not \"conv3d\""), -1;
  if (string_member(j, "identity", identity, sizeof identity) != 0 || strcmp(identity, SF_PMID_FAMILY_conv3d))
    return snprintf(why, wl, "\"identity\" is not this build's conv3d identity %s", SF_PMID_FAMILY_conv3d), -1;
  if (string_member(j, "date", r->date, sizeof r->date) || string_member(j, "commit", r->commit, sizeof r->commit) ||
      string_member(j, "cpu", r->cpu, sizeof r->cpu) || string_member(j, "kernel_set", r->kernel_set, sizeof r->kernel_set))
    return snprintf(why, wl, "\"date\", \"commit\", \"cpu\" and \"kernel_set\" must be short strings"), -1;
  return 0;
}

int sf_tuning_record_read(const char *path, sf_tuning_record *r, char *err, size_t errlen)
{
  memset(r, 0, sizeof *r);
  char *perr = NULL, why[256] = "";
  cJSON *j = sf_json_load(path, &perr);
  if (!j) {
    snprintf(err, errlen, "tuning record %s: %s", path, perr ? perr : "cannot read");
    free(perr);
    return -1;
  }
  const cJSON *entries = cJSON_GetObjectItemCaseSensitive(j, "entries");
  int rc = read_header(j, r, why, sizeof why), n = cJSON_IsArray(entries) ? cJSON_GetArraySize(entries) : -1;
  if (rc == 0 && (n < 0 || n > MAX_ENTRIES)) rc = -1, snprintf(why, sizeof why, "\"entries\" is not a list of at most %d", MAX_ENTRIES);
  if (rc == 0) {
    r->entries = sf_calloc((size_t)n + 1, sizeof *r->entries, "tuning record");
    r->best_us = sf_calloc((size_t)n + 1, sizeof *r->best_us, "tuning record");
    for (int i = 0; i < n && rc == 0; i++) {
      char ewhy[200];
      rc = read_entry(cJSON_GetArrayItem(entries, i), r->kernel_set, &r->entries[i], &r->best_us[i], ewhy, sizeof ewhy);
      if (rc) snprintf(why, sizeof why, "entries[%d]: %s", i, ewhy);
    }
    r->n = n;
  }
  cJSON_Delete(j);
  if (rc) {
    snprintf(err, errlen, "tuning record %s: %s", path, why);
    sf_tuning_record_free(r);
  }
  return rc;
}

int sf_tuning_record_write(const char *path, const sf_tuning_record *r, char *err, size_t errlen)
{
  cJSON *j = cJSON_CreateObject(), *entries = cJSON_CreateArray();
  cJSON_AddNumberToObject(j, "format", FORMAT);
  cJSON_AddStringToObject(j, "family", "conv3d");
  cJSON_AddStringToObject(j, "identity", SF_PMID_FAMILY_conv3d);
  cJSON_AddStringToObject(j, "date", r->date);
  cJSON_AddStringToObject(j, "commit", r->commit);
  cJSON_AddStringToObject(j, "cpu", r->cpu);
  cJSON_AddStringToObject(j, "kernel_set", r->kernel_set);
  for (int i = 0; i < r->n; i++) {
    const sf_conv3d_shape *s = &r->entries[i].shape;
    cJSON *e = cJSON_CreateObject();
    int v[5] = {s->nd, s->H, s->W, s->Cin, s->Cout};
    cJSON_AddStringToObject(e, "direction", dir_names[s->dir]);
    cJSON_AddBoolToObject(e, "bf16", s->bf16);
    cJSON_AddItemToObject(e, "shape", cJSON_CreateIntArray(v, 5));
    cJSON_AddStringToObject(e, "variant", sf_conv3d_variant_name(r->entries[i].variant));
    cJSON_AddNumberToObject(e, "best_us", r->best_us[i]);
    cJSON_AddItemToArray(entries, e);
  }
  cJSON_AddItemToObject(j, "entries", entries);
  int rc = sf_json_write_rows_atomic(path, j);
  if (rc) snprintf(err, errlen, "cannot write the tuning record %s: %s", path, strerror(errno));
  cJSON_Delete(j);
  return rc;
}

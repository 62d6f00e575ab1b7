/* The machine's kernel tuning record at start-up (scaffold/kernel_tuning_setup.h): finds this machine's class,
 * reads <class>/tuning/<this build's record name> and installs its entries into the 3x3x3 convolution's
 * entry; remembers what it did for the run header and the result file. A record for other kernels (another
 * identity) is reported, never applied. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/fsutil.h"
#include "scaffold/kernel_tuning_setup.h"
#include "scaffold/machine_class.h"
#include "scaffold/switches.h"

static char g_class[64], g_record[PATH_MAX + 160], g_date[32], g_why[PATH_MAX + 256];
static int g_shapes = -1; /* entries installed; -1: built-in rules */

static int ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* Another conv3d-*.json in the folder (not a lock or a temporary file beside one): a record of other kernels */
static int other_record(const char *tuning_dir, char *name, size_t len)
{
  DIR *d = opendir(tuning_dir);
  if (!d) return 0;
  struct dirent *e;
  int found = 0;
  while (!found && (e = readdir(d)))
    if (!strncmp(e->d_name, "conv3d-", 7) && ends_with(e->d_name, ".json") && strcmp(e->d_name, sf_tuning_record_name())) {
      snprintf(name, len, "%s", e->d_name);
      found = 1;
    }
  closedir(d);
  return found;
}

void sf_kernel_tuning_setup(void)
{
  sf_conv3d_tuning_clear();
  sf_conv3d_tuning_counts_reset();
  g_class[0] = g_record[0] = g_date[0] = '\0';
  g_shapes = -1;
  const char *sw = sf_switch("SF_KERNEL_TUNING");
  if (sw && !strcmp(sw, "0")) {
    snprintf(g_why, sizeof g_why, "SF_KERNEL_TUNING=0");
    return;
  }
  sf_machine_class mc = {.name = "given by SF_KERNEL_TUNING"};
  char reasons[1024], need[128], other[256];
  snprintf(need, sizeof need, "tuning/%s", sf_tuning_record_name());
  if (sw && strcmp(sw, "1")) {
    snprintf(g_record, sizeof g_record, "%s", sw);
  } else if (!sf_machine_class_find(&mc, need, reasons, sizeof reasons)) {
    if (!sf_machine_class_find(&mc, "tuning", reasons, sizeof reasons)) {
      snprintf(g_why, sizeof g_why, "no tuning record for this machine; `scaffold tune` measures one");
    } else {
      char dir[PATH_MAX + 16];
      snprintf(dir, sizeof dir, "%s/tuning", mc.dir);
      if (!other_record(dir, other, sizeof other)) snprintf(other, sizeof other, "its record");
      snprintf(g_why, sizeof g_why, "class %s has a tuning record for other conv3d kernels (%s, this build: %s); "
               "`scaffold tune` refreshes it", mc.name, other, sf_tuning_record_name());
    }
    return;
  }
  snprintf(g_class, sizeof g_class, "%s", mc.name);
  if (!g_record[0]) snprintf(g_record, sizeof g_record, "%s/%s", mc.dir, need);
  sf_tuning_record r;
  char err[PATH_MAX + 512];
  if (sf_tuning_record_read(g_record, &r, err, sizeof err) != 0) {
    sf_warn("kernel tuning: %s; using the built-in rules", err);
    snprintf(g_why, sizeof g_why, "the tuning record %s could not be used (see the warning)", g_record);
    return;
  }
  /* direct and Winograd entries name the kernel set they were timed on (SF_CPU_ISA may cap it here) */
  int n = 0;
  for (int i = 0; i < r.n; i++) {
    sf_conv3d_variant v = r.entries[i].variant;
    if ((v != SF_CONV3D_DIRECT && v != SF_CONV3D_WINOGRAD) || !strcmp(r.kernel_set, sf_cpu_isa_name(sf_cpu_isa_active())))
      r.entries[n++] = r.entries[i];
  }
  g_shapes = sf_conv3d_tuning_install(r.entries, n);
  snprintf(g_date, sizeof g_date, "%.10s", r.date);
  g_why[0] = '\0';
  if (g_shapes < r.n)
    snprintf(g_why, sizeof g_why, "; %d of its %d entries name a variant this machine does not run now", r.n - g_shapes,
             r.n);
  sf_tuning_record_free(&r);
}

char *sf_kernel_tuning_describe(char *buf, size_t len)
{
  if (g_shapes >= 0)
    snprintf(buf, len, "kernel choices: tuned on this machine (%s, class %s, %d call shapes; built-in rules for the "
             "others%s)", g_date, g_class, g_shapes, g_why);
  else
    snprintf(buf, len, "kernel choices: built-in rules (%s)", g_why[0] ? g_why : "no tuning record");
  return buf;
}

cJSON *sf_kernel_tuning_json(void)
{
  unsigned long tuned, builtin_calls;
  sf_conv3d_tuning_counts(&tuned, &builtin_calls);
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "source", g_shapes >= 0 ? "tuned" : "built-in");
  if (g_class[0]) cJSON_AddStringToObject(j, "class", g_class);
  if (g_shapes >= 0) {
    cJSON_AddStringToObject(j, "record", g_record);
    cJSON_AddStringToObject(j, "date", g_date);
    cJSON_AddNumberToObject(j, "shapes", g_shapes);
  } else {
    cJSON_AddStringToObject(j, "why", g_why);
  }
  cJSON_AddNumberToObject(j, "conv3d_calls_tuned", (double)tuned);
  cJSON_AddNumberToObject(j, "conv3d_calls_builtin", (double)builtin_calls);
  return j;
}

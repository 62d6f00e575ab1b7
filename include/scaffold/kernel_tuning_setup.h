/* Kernel tuning records on disk (docs/performance.md, "Kernel tuning records"): the JSON file
 * <class folder>/tuning/conv3d-<identity>.json of the machine's class (scaffold/machine_class.h), where
 * <identity> is the conv3d family's source hash (the one its perfmodel symbols carry), so a record made for
 * other kernels is never applied. sf_runtime_init installs the record into the kernels (kernel_tuning.h);
 * `scaffold tune` writes it. A record is data from wherever the class came from: it can only choose among
 * the variants of this build that can run each shape; anything else in it is refused with a message. */
#ifndef SF_KERNEL_TUNING_SETUP_H
#define SF_KERNEL_TUNING_SETUP_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "scaffold/kernel_tuning.h"

/* A record in memory: its entries and what it says about where and when it was measured */
typedef struct {
  sf_conv3d_tuned *entries;
  double *best_us;     /* per entry: the winner's fastest call, in µs */
  int n;
  char date[32];       /* UTC, ISO 8601 */
  char commit[64];
  char cpu[256];       /* lscpu-style "model name, family F model M" */
  char kernel_set[16]; /* the CPU kernel set the timings ran on ("avx512") */
} sf_tuning_record;

/* "conv3d-<identity>.json": this build's record name */
const char *sf_tuning_record_name(void);
/* Reads and checks a record. 0, or -1 with err naming the file, the entry and the key. Entries naming a
 * variant this build does not have are an error (the direct and Winograd names carry the record's kernel set,
 * "direct-avx512"); entries this machine cannot run now are kept and skipped at install, with those of another
 * kernel set (SF_CPU_ISA caps the set). */
int sf_tuning_record_read(const char *path, sf_tuning_record *r, char *err, size_t errlen);
/* Writes r atomically (temporary name, then rename); 0 or -1 with err. */
int sf_tuning_record_write(const char *path, const sf_tuning_record *r, char *err, size_t errlen);
void sf_tuning_record_free(sf_tuning_record *r);

/* Called by sf_runtime_init: finds this machine's class and its record for this build (unless
 * SF_KERNEL_TUNING=0) and installs it. Never fails: a problem warns and leaves the built-in rules. */
void sf_kernel_tuning_setup(void);
/* "kernel choices: tuned on this machine (2026-12-07, class intel-f6m207-2core, 38 shapes)" or
 * "kernel choices: built-in rules (no tuning record for class X; `scaffold tune` measures one)" ... */
char *sf_kernel_tuning_describe(char *buf, size_t len);
/* {"source": "tuned"|"built-in", "class": ..., "record": ..., "date": ..., "shapes": N,
 *  "calls_tuned": N, "calls_builtin": N} for the result file */
cJSON *sf_kernel_tuning_json(void);

#endif

/* The folder a `scaffold tune` or `scaffold calibrate` writes into (docs/perfmodels.md): a class of the
 * user's own ($XDG_CACHE_HOME/scaffold-starpu/classes/<name>) by default, the source tree's perfmodels/<name>
 * with --ship. Internal to the CLI layer. */
#ifndef SF_CLASS_FOLDER_H
#define SF_CLASS_FOLDER_H

#include <limits.h>
#include <stddef.h>

typedef struct {
  char name[64];
  char dir[PATH_MAX];
  int created; /* the folder was made now (with a MATCH for this machine) */
} sf_class_folder;

/* Resolves the class: `name` when given (checked: [A-Za-z0-9._-]+), else the name of the class that fits this
 * machine, else a name made from this machine ("intel-f6m207-2core"). Checks only; creates nothing.
 * 0, or -1 with err. */
int sf_class_folder_resolve(const char *name, int ship, sf_class_folder *f, char *err, size_t errlen);
/* Creates the folder (and its parents) with a MATCH describing this machine when it has none. 0 or -1. */
int sf_class_folder_prepare(sf_class_folder *f, char *err, size_t errlen);
/* "Intel(R) Xeon(R) Processor, family 6 model 207, 2 cores": this machine, for records and notes */
char *sf_class_machine_line(char *buf, size_t len);
/* Now, UTC, ISO 8601 */
char *sf_class_utc_now(char *buf, size_t len);

#endif

/* Machine classes (docs/perfmodels.md): a folder of data measured on one kind of machine, selected by its
 * MATCH file: StarPU perfmodels and bus files (sampling/), MEASURED (the real figure a simulation of the
 * class is checked against), CALIBRATED (who measured it, when, with which code), the kernel tuning record
 * (tuning/) and a harness baseline. Two places hold classes, searched in this order:
 *   1. the user's own, written by `scaffold calibrate` / `scaffold tune`:
 *      $XDG_CACHE_HOME/scaffold-starpu/classes/<name> (default ~/.cache/...);
 *   2. the shipped ones: perfmodels/<name> of the source tree, or SF_PERFMODELS_DIR.
 * The first class whose MATCH fits this machine (in name order within a place) is the machine's class. */
#ifndef SF_MACHINE_CLASS_H
#define SF_MACHINE_CLASS_H

#include <limits.h>
#include <stddef.h>

typedef struct {
  char model_name[256]; /* /proc/cpuinfo "model name" ("" if none) */
  long family, model;   /* "cpu family", "model"; -1 if none */
  char flags[4096];     /* "flags" (x86) or "Features" (arm), space separated */
  int cores;            /* hwloc's HWLOC_OBJ_CORE count */
  int nvidia_gpus;      /* entries of /proc/driver/nvidia/gpus (0 without the NVIDIA driver) */
  char gpu_model[128];  /* the first GPU's "Model:" there ("" if none) */
} sf_machine;

void sf_machine_read(sf_machine *m);

typedef struct {
  char name[64];
  char dir[PATH_MAX]; /* the class's folder */
  int user;           /* 1: the user's own (calibrated here), 0: shipped */
} sf_machine_class;

/* The user's classes folder ($XDG_CACHE_HOME/scaffold-starpu/classes, else $HOME/.cache/...): 0, or -1 when
 * neither variable is set. */
int sf_machine_classes_user_root(char *out, size_t len);
/* The shipped folder: SF_PERFMODELS_DIR when set (*explicit_root = 1), else <source dir>/perfmodels. */
const char *sf_machine_classes_shipped_root(int *explicit_root);

/* Finds this machine's class for one kind of data: the first class that fits and holds `needs` (a path in
 * the class folder: "sampling" for perfmodels, "tuning/<record>" for a tuning record; NULL: any class that
 * fits), so a user's class with only a tuning record leaves the perfmodels to a shipped class. Returns 1
 * (found), 0 (none: `reasons` names each class and the key it failed, and any folder that could not be
 * read). A MATCH file that cannot be used warns and is skipped. */
int sf_machine_class_find(sf_machine_class *out, const char *needs, char *reasons, size_t rlen);

/* 1 if `name` can name a class: [A-Za-z0-9._-]+, at most 63 characters, not starting with '.'. */
int sf_machine_class_name_ok(const char *name);
/* A class name for this machine: "intel-f6m207-2core", "amd-f25m17-2core-1gpu". */
void sf_machine_class_default_name(const sf_machine *m, char *out, size_t len);
/* The MATCH text that selects machines like m: model name, family, cores, vector flags, GPU count and model.
 * `head` is a comment line written first. Returns a malloc'ed string. */
char *sf_machine_match_text(const sf_machine *m, const char *head);
/* Does the MATCH file at path fit m? 1 yes, 0 no (`why` says which key differs), -1 unusable (warned). */
int sf_machine_match_file(const char *path, const sf_machine *m, char *why, size_t wl);

#endif

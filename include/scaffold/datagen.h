/* Fractal library generation (spec §2, §3): IFS fractal classes found by a random search, and 145
 * weighted instances (point clouds) per class, both as StarPU task graphs. Volumes (spec §4) are
 * declared in scaffold/dataset.h.
 *
 * Layout (spec §2.6), with <root> = <fract_base_dir>/var<variance_threshold>/seed<seed>:
 *   <root>/3DIFS_param/np<point_num>/NNNNNN.csv    one class: 2 lines x 13 values, '%.18e', comma-separated
 *   <root>/3DIFS_param/np<point_num>/.rng_attempt  attempt counter (decimal), so reruns continue the stream
 *   <root>/instances/np<point_num>/CCCCCC/CCCCCC_IIII.npy   float32 (point_num, 3), raw coordinates
 *   <root>/.lock                               flock(2) held by the process generating the library
 * The class search depends on point_num (its acceptance test iterates point_num points; spec §11
 * item 19), so the classes are kept per point count like the instances: classes accepted at a small
 * scale may run away at a larger one, and a library shared between scales would depend on which
 * scale made it first (upstream keeps one 3DIFS_param for all scales). Each np<point_num> library is
 * what a fresh directory gives.
 * var<vt> is formatted like Python's str(float): 0.15 -> "var0.15", 1.0 -> "var1.0".
 * The category index of a class is its position in the sorted list of NNNNNN.csv names; the
 * first n_categories of them are the library's classes.
 *
 * RNG (docs/architecture.md §9: our own xoshiro256** streams, not PCG64/numba): with s = config seed,
 *   candidate `a` parameters: sf_rng_seed(s, sf_class_param_stream(a)), 26 draws U[-1,1) row-major
 *   candidate `a` points:     sf_ifs_points(..., s, sf_class_point_stream(a))
 *   instance (cat, inst):     sf_ifs_points(..., s, sf_instance_stream(cat, inst))
 * so every file depends only on (seed, attempt) or (seed, cat, inst): byte-identical output
 * whatever the worker count or scheduler. */
#ifndef SF_DATAGEN_H
#define SF_DATAGEN_H

#include <stddef.h>
#include <stdint.h>

#include "scaffold/config.h"
#include "scaffold/progress.h"

/* ---- layout (src/datagen/layout.c); all return malloc'ed strings ---------------------------- */

/* Python's str(float): shortest round-trip digits, "1.0", "0.15", "1e-05", "1e+16". */
void sf_format_pyfloat(double v, char *buf, size_t len);
char *sf_fractal_root_dir(const sf_config *c);      /* <base>/var<vt>/seed<seed> */
char *sf_fractal_param_dir(const sf_config *c);     /* <root>/3DIFS_param/np<point_num> */
char *sf_fractal_instances_root(const sf_config *c);/* <root>/instances */
char *sf_fractal_instance_dir(const sf_config *c);  /* <root>/instances/np<point_num> */
char *sf_fractal_class_instance_dir(const sf_config *c, int cat);          /* .../CCCCCC */
char *sf_fractal_instance_path(const sf_config *c, int cat, int inst);     /* .../CCCCCC/CCCCCC_IIII.npy */
/* Warns (once per call) if the legacy layout <base>/var<vt>/3DIFS_param exists; returns 1 if so. */
int sf_fractal_warn_legacy(const sf_config *c);

/* ---- IFS maps and point clouds (src/datagen/ifs.c; pure functions, no StarPU) --------------- */

#define SF_IFS_NCOLS 13
#define SF_IFS_RUNAWAY_LIMIT 1e10

/* Columns: 0-8 = 3x3 matrix row-major (a b c / d e f / g h i), 9-11 = translation (j k l),
 * 12 = selection probability (p0 in row 0 is the one used). */
typedef struct {
  double p[2][SF_IFS_NCOLS];
} sf_fractal_class;

/* Overwrites column 12 of both rows with p_t = |det M_t| / (|det M_0| + |det M_1|).
 * Returns 0, or -1 when both determinants are 0 (p = NaN then, and the candidate is invalid). */
int sf_ifs_set_probabilities(double params[2][SF_IFS_NCOLS]);

/* N points (row-major (N,3)): point 0 is the origin; point n applies map t to point n-1, where
 * t = 0 iff r < params[0][12] for r = the stream's next U[0,1) draw. Columns 0-11 of both maps
 * are multiplied by weights[0..11] when weights is non-NULL (column 12 unchanged). No burn-in.
 * Returns 1 (runaway) if any coordinate ever had |value| > SF_IFS_RUNAWAY_LIMIT, else 0. */
int sf_ifs_points(double *pts, size_t N, const double params[2][SF_IFS_NCOLS], const double *weights,
                  uint64_t seed, uint64_t stream);

/* The same iteration stored as float32 (each value = (float) of the double iterate, so it equals
 * sf_ifs_points cast to float) without a double buffer; *nonfinite (may be NULL) is set to 1 if
 * any iterate was NaN or infinite. */
int sf_ifs_points_f32(float *pts, size_t N, const double params[2][SF_IFS_NCOLS], const double *weights,
                      uint64_t seed, uint64_t stream, int *nonfinite);

typedef enum {
  SF_IFS_ACCEPT = 0,
  SF_IFS_INVALID,  /* NaN/inf values, a non-finite or zero per-axis range, non-finite normalised values */
  SF_IFS_VARIANCE, /* some axis has population variance <= threshold after normalisation */
  SF_IFS_RUNAWAY,  /* finite and varied enough, but the runaway flag was set */
} sf_ifs_verdict;

/* Spec §2.4 acceptance, in that order: finite; per-axis range > 0; q = (p - mean) *
 * (2*normalize/(max-min)) per axis; population variance of q > threshold on all 3 axes; no
 * runaway. var_out (may be NULL) receives the 3 variances (NaN when not computed). */
sf_ifs_verdict sf_ifs_check(const double *pts, size_t N, int runaway, double normalize, double threshold,
                            double var_out[3]);

/* ---- class search (src/datagen/classes.c) ------------------------------------------------- */

uint64_t sf_class_param_stream(uint64_t attempt);
uint64_t sf_class_point_stream(uint64_t attempt);
/* Candidate `attempt`: 26 draws U[-1,1) (row 0 columns 0..12, then row 1), then column 12 set
 * by sf_ifs_set_probabilities. */
void sf_class_candidate(uint64_t seed, uint64_t attempt, sf_fractal_class *out);
/* Round size (spec §2.5, compute_round_attempts) for `nranks` searchers. */
long sf_compute_round_attempts(long batch_size, long remaining, long accepted, long attempts, int nranks);

/* CSV I/O: np.savetxt(params, delimiter=",") format; load accepts any 2x13 numeric CSV. */
int sf_fractal_class_save(const char *path, const sf_fractal_class *cls, char *err, size_t errlen); /* atomic */
/* The same with flags; SF_CLASS_NO_FSYNC: still atomic (temporary file + rename) but not fsync'ed,
 * for callers that flush the directory themselves (the class search: one syncfs per round). */
#define SF_CLASS_NO_FSYNC 1u
int sf_fractal_class_save_flags(const char *path, const sf_fractal_class *cls, unsigned flags, char *err, size_t errlen);
int sf_fractal_class_load(const char *path, sf_fractal_class *out, char *err, size_t errlen);
/* Sorted NNNNNN.csv names (6 digits + ".csv") in param_dir; returns the count (0 if the directory is
 * missing), names is a malloc'ed array of malloc'ed strings (free with sf_free_names). */
int sf_fractal_list_class_files(const char *param_dir, char ***names);
void sf_free_names(char **names, int n);
/* Loads the first c->n_categories classes (category order). Dies (status 1) if fewer exist or one
 * is unreadable. Returns a malloc'ed array of n_categories classes. */
sf_fractal_class *sf_fractal_load_classes(const sf_config *c);

typedef struct {
  long existing;       /* classes present before the search */
  long saved;          /* classes written by this search */
  long duplicates;     /* accepted candidates skipped as exact duplicates */
  long attempts;       /* candidates evaluated by this search */
  long first_attempt;  /* attempt index the search started from */
  long accepted;       /* candidates that passed every check */
  long invalid, variance_fail, runaway;
  double seconds;
} sf_class_search_stats;

/* Makes <param_dir> hold at least n_categories classes (runtime must be initialised). Dies with a
 * message on I/O errors. Warns about class files directly in <root>/3DIFS_param (an older version's
 * classes, shared between point counts: ignored); when <param_dir> holds no class, removes
 * <root>/instances/np<point_num> (instances made from other classes). stats may be NULL. After SIGINT/SIGTERM (scaffold/signals.h) it returns
 * early, the round in flight abandoned. */
void sf_generate_classes(const sf_config *c, sf_class_search_stats *stats);

/* ---- instances (src/datagen/weights145.c, src/datagen/instances.c) ------------------------ */

#define SF_N_INSTANCES 145
/* Yamada's weights_ins145 table (spec Appendix A), row-108 quirk (0.6 instead of 1.6) included. */
const double (*sf_weights145(void))[12];
uint64_t sf_instance_stream(long cat, long inst);
/* Instance `inst` of class `cls` (category `cat`): weighted points; on runaway or non-finite values
 * retries with weights 1 + (w - 1)*f for f = 0.5, 0.25, 0.1 (same stream each time), then the
 * unweighted class. Returns the factor used (1, 0.5, 0.25, 0.1, 0 = unweighted) or -1 if even the
 * unweighted class fails. */
double sf_instance_points(double *pts, size_t N, const sf_fractal_class *cls, long cat, int inst, uint64_t seed);
/* The same, stored as float32 ((float) of the double iterates), as written to the .npy files. */
double sf_instance_points_f32(float *pts, size_t N, const sf_fractal_class *cls, long cat, int inst, uint64_t seed);

typedef struct {
  long total;        /* n_categories * 145 */
  long reused;       /* complete files kept */
  long removed;      /* truncated/corrupt files deleted before regeneration */
  long written;
  long attenuated;   /* written with f < 1 */
  long unweighted;   /* written with the unweighted class */
  double seconds;    /* generation phase only (task submission .. all done) */
} sf_instance_stats;

/* Writes every missing/incomplete instance of the first n_categories classes (runtime must be
 * initialised). Dies with a message on errors. stats may be NULL. After SIGINT/SIGTERM the tasks
 * not yet started are skipped (every file present stays whole). */
void sf_generate_instances(const sf_config *c, sf_instance_stats *stats);

/* `generate_fractals`: datagen_from_scratch handling, legacy-layout warning, classes, then
 * instances. Installs scaffold/signals.h's handlers. Logs a summary. Returns 0, or
 * SF_EXIT_INTERRUPTED after SIGINT/SIGTERM (dies on errors). */
int sf_generate_fractals(const sf_config *c);

/* Removes ".tmp-*" leftovers of interrupted atomic writes in dir (src/datagen/class_search.c). */
void sf_datagen_sweep_tmp(const char *dir);


#endif

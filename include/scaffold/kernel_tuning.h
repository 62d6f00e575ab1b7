/* Kernel choices measured on this machine (docs/performance.md, "Kernel tuning records"). The 3x3x3
 * convolution's entry (kernels/conv3d/conv3d.c) picks a variant per call by built-in rules measured on a
 * few CPUs; a tuning record replaces those rules, per (direction, precision, shape), by the variant that
 * was fastest when timed on the machine itself (`scaffold tune`, `scaffold calibrate`). This header is the
 * kernel side: the table the entry consults, the shapes a run asked for, and the timer of candidates. The
 * record file (JSON in the machine class's folder) is read and written above, in the runtime and CLI.
 *
 * Every variant is tested against the naive reference within its own tolerance, and each one is
 * deterministic, so a run with a given record gives the same bits every time. */
#ifndef SF_KERNEL_TUNING_H
#define SF_KERNEL_TUNING_H

#include <stddef.h>

#include "scaffold/ops.h"

/* One call shape of the 3x3x3 convolution: a depth slab of nd planes of H x W voxels, Cin -> Cout channels */
typedef struct {
  sf_conv3d_direction dir;
  int bf16; /* torch_amp: 1 (the bf16 entries) */
  int nd, H, W, Cin, Cout;
} sf_conv3d_shape;

typedef struct {
  sf_conv3d_shape shape;
  sf_conv3d_variant variant;
} sf_conv3d_tuned;

/* ---- the table the entry consults ---- */
/* Installs n entries (copied; replaces any earlier table). An entry whose variant cannot run its shape on this
 * machine and build (sf_conv3d_variant_runs) is left out. Returns the number installed. Call it before the
 * kernels run (runtime start-up), not while they run. */
int sf_conv3d_tuning_install(const sf_conv3d_tuned *e, int n);
void sf_conv3d_tuning_clear(void);
int sf_conv3d_tuning_size(void);
/* The tuned variant of a shape: 1 and *v, or 0 when the table has no entry for it. */
int sf_conv3d_tuning_lookup(const sf_conv3d_shape *s, sf_conv3d_variant *v);
/* Entry calls that took a tuned variant / that had no entry, since the last reset (a run's report). */
void sf_conv3d_tuning_counts(unsigned long *tuned, unsigned long *builtin);
void sf_conv3d_tuning_counts_reset(void);
void sf_conv3d_tuning_count_call(int tuned);

/* ---- the shapes a run asks for ---- */
/* While on, every entry call adds its shape to a set (a step of the network is run to list them). */
void sf_conv3d_shapes_record(int on);
/* The shapes recorded, in first-seen order: the count (at most max copied). Clears the set with clear. */
int sf_conv3d_shapes_seen(sf_conv3d_shape *out, int max, int clear);
void sf_conv3d_shapes_note(const sf_conv3d_shape *s);

/* ---- the variants ---- */
/* 1 if variant v can run shape s here (the kernel set, the bf16 engine, Winograd's fit and switch). */
int sf_conv3d_variant_runs(sf_conv3d_variant v, const sf_conv3d_shape *s);
/* "im2col", "direct-avx512", ...: the variant whose sf_conv3d_variant_name is name; -1 when none is. */
int sf_conv3d_variant_from_name(const char *name);
/* The variants that can run s, fastest-first order unknown: the count (at most max). */
int sf_conv3d_candidates(const sf_conv3d_shape *s, sf_conv3d_variant *out, int max);

/* Times variant v on shape s in the calling thread: runs it on synthetic data (interior slab: both halo planes
 * present) until budget_s has passed (at least once after one untimed call), returns the fastest call in
 * seconds. */
double sf_conv3d_time_variant(sf_conv3d_variant v, const sf_conv3d_shape *s, double budget_s);

#endif

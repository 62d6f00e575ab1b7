/* The tuning table of the 3x3x3 convolution (scaffold/kernel_tuning.h): the variant measured fastest on this
 * machine per (direction, precision, shape), installed from the machine class's record at start-up and read
 * by the entry on every call; the counts of calls that used it; and the set of shapes a run asked for, which
 * `scaffold tune` times. The table is written before the kernels run and only read while they do. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/kernel_tuning.h"

#include "conv3d_variants.h"

static sf_conv3d_tuned *g_table;
static int g_size;
static atomic_ulong g_tuned_calls, g_builtin_calls;

static int same_shape(const sf_conv3d_shape *a, const sf_conv3d_shape *b)
{
  return a->dir == b->dir && a->bf16 == b->bf16 && a->nd == b->nd && a->H == b->H && a->W == b->W &&
         a->Cin == b->Cin && a->Cout == b->Cout;
}

void sf_conv3d_tuning_clear(void)
{
  free(g_table);
  g_table = NULL;
  g_size = 0;
}

int sf_conv3d_tuning_install(const sf_conv3d_tuned *e, int n)
{
  sf_conv3d_tuning_clear();
  if (n <= 0) return 0;
  g_table = sf_calloc((size_t)n, sizeof *g_table, "conv3d tuning table");
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int j = 0; j < g_size && !dup; j++) dup = same_shape(&g_table[j].shape, &e[i].shape);
    if (!dup && sf_conv3d_variant_runs(e[i].variant, &e[i].shape)) g_table[g_size++] = e[i];
  }
  return g_size;
}

int sf_conv3d_tuning_size(void) { return g_size; }

int sf_conv3d_tuning_lookup(const sf_conv3d_shape *s, sf_conv3d_variant *v)
{
  for (int i = 0; i < g_size; i++)
    if (same_shape(&g_table[i].shape, s)) {
      *v = g_table[i].variant;
      return 1;
    }
  return 0;
}

void sf_conv3d_tuning_count_call(int tuned) { atomic_fetch_add(tuned ? &g_tuned_calls : &g_builtin_calls, 1); }

void sf_conv3d_tuning_counts(unsigned long *tuned, unsigned long *builtin)
{
  *tuned = atomic_load(&g_tuned_calls);
  *builtin = atomic_load(&g_builtin_calls);
}

void sf_conv3d_tuning_counts_reset(void)
{
  atomic_store(&g_tuned_calls, 0);
  atomic_store(&g_builtin_calls, 0);
}

/* ---- the shapes a run asks for ---- */
#define MAX_SHAPES 1024
static atomic_int g_recording;
static sf_conv3d_shape g_shapes[MAX_SHAPES];
static int g_nshapes;
static pthread_mutex_t g_shapes_lock = PTHREAD_MUTEX_INITIALIZER;

void sf_conv3d_shapes_record(int on) { atomic_store(&g_recording, on); }

void sf_conv3d_shapes_note(const sf_conv3d_shape *s)
{
  if (!atomic_load(&g_recording)) return;
  pthread_mutex_lock(&g_shapes_lock);
  int seen = 0;
  for (int i = 0; i < g_nshapes && !seen; i++) seen = same_shape(&g_shapes[i], s);
  if (!seen && g_nshapes < MAX_SHAPES) g_shapes[g_nshapes++] = *s;
  pthread_mutex_unlock(&g_shapes_lock);
}

int sf_conv3d_shapes_seen(sf_conv3d_shape *out, int max, int clear)
{
  pthread_mutex_lock(&g_shapes_lock);
  int n = g_nshapes;
  memcpy(out, g_shapes, (size_t)(n < max ? n : max) * sizeof *out);
  if (clear) g_nshapes = 0;
  pthread_mutex_unlock(&g_shapes_lock);
  return n;
}

/* The counts behind scaffold/kernel_choices.h: per op, a few slots of (variant name, calls). A slot is
 * claimed once under a lock; every later call of that variant is one atomic increment, so counting
 * costs nothing next to a kernel. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/kernel_choices.h"

#define SLOTS 8 /* variants per op: more than any op has */

typedef struct {
  _Atomic(const char *) name;
  atomic_ulong calls;
} slot;

static slot g_slots[SF_KOP_COUNT][SLOTS];
static pthread_mutex_t g_claim = PTHREAD_MUTEX_INITIALIZER;

static const char *const op_names[SF_KOP_COUNT] = {
  "conv3d forward", "conv3d dX", "conv3d dW", "conv3d dW taps",
  "upconv3d forward", "upconv3d dX", "upconv3d dW",
  "conv1 forward", "conv1 dX", "conv1 dW",
};

const char *sf_kernel_op_name(sf_kernel_op op) { return (unsigned)op < SF_KOP_COUNT ? op_names[op] : "?"; }

static slot *find(sf_kernel_op op, const char *variant)
{
  for (int i = 0; i < SLOTS; i++) {
    const char *n = atomic_load(&g_slots[op][i].name);
    if (!n) return NULL;
    if (n == variant || !strcmp(n, variant)) return &g_slots[op][i];
  }
  return NULL;
}

void sf_kernel_choice_note(sf_kernel_op op, const char *variant)
{
  SF_ASSERT((unsigned)op < SF_KOP_COUNT && variant);
  slot *s = find(op, variant);
  if (!s) {
    pthread_mutex_lock(&g_claim);
    s = find(op, variant);
    for (int i = 0; !s && i < SLOTS; i++)
      if (!atomic_load(&g_slots[op][i].name)) {
        s = &g_slots[op][i];
        atomic_store(&s->name, variant);
      }
    pthread_mutex_unlock(&g_claim);
    if (!s) SF_ABORT("more than %d variants of %s", SLOTS, op_names[op]);
  }
  atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
}

const char *sf_kernel_choice_at(sf_kernel_op op, int i, unsigned long *calls)
{
  if ((unsigned)op >= SF_KOP_COUNT || i < 0 || i >= SLOTS) return NULL;
  const char *n = atomic_load(&g_slots[op][i].name);
  if (n && calls) *calls = atomic_load(&g_slots[op][i].calls);
  return n;
}

void sf_kernel_choices_reset(void)
{
  for (int op = 0; op < SF_KOP_COUNT; op++)
    for (int i = 0; i < SLOTS; i++) atomic_store(&g_slots[op][i].calls, 0);
}

char *sf_kernel_choices_describe(char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  for (int op = 0; op < SF_KOP_COUNT; op++) {
    int first = 1;
    unsigned long n;
    for (int i = 0; sf_kernel_choice_at(op, i, &n); i++) {
      if (!n) continue;
      const char *sep = first ? (k ? "; " : "") : ", ";
      if (k < len)
        k += (size_t)snprintf(buf + k, len - k, "%s%s%s%s on %lu call%s", sep, first ? op_names[op] : "",
                              first ? ": " : "", sf_kernel_choice_at(op, i, NULL), n, n == 1 ? "" : "s");
      first = 0;
    }
  }
  if (!k) snprintf(buf, len, "none ran");
  return buf;
}

cJSON *sf_kernel_choices_json(void)
{
  cJSON *j = cJSON_CreateObject();
  for (int op = 0; op < SF_KOP_COUNT; op++) {
    cJSON *o = NULL;
    unsigned long n;
    for (int i = 0; sf_kernel_choice_at(op, i, &n); i++) {
      if (!n) continue;
      if (!o) o = cJSON_AddObjectToObject(j, op_names[op]);
      cJSON_AddNumberToObject(o, sf_kernel_choice_at(op, i, NULL), (double)n);
    }
  }
  return j;
}

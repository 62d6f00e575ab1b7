/* async_save: 1 (upstream's key): checkpoints written on a background thread that overlaps the
 * next epoch. The training thread copies everything the checkpoint holds (the state and the
 * parameters, Adam m and v) into the saver's snapshot at the epoch boundary, after the step's wait;
 * the thread then serialises, checksums and writes it with the same atomic writer as a synchronous
 * save (sf_checkpoint_write: temporary name, fsync, rename), so the files are bitwise the same.
 *
 * At most one save is in flight: the next save, the interrupt's checkpoint, the end of the run and
 * an exit() (atexit hook) join the previous one first. A write error is printed by the thread when
 * it happens and returned by the next join, which fails the run as a synchronous error would.
 * The thread blocks SIGINT/SIGTERM, so the training thread's handlers see them. Rank 0 only. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "train_internal.h"

struct sf_ckpt_saver {
  pthread_t thread;
  int in_flight;
  size_t N;
  float *p, *m, *v;       /* the snapshot */
  sf_ckpt_state st;
  char *last_path, *best_path;
  int write_best;
  int rc;                 /* the finished save's outcome */
  char err[1024];
};

static pthread_mutex_t g_exit_lock = PTHREAD_MUTEX_INITIALIZER;
static sf_ckpt_saver *g_live; /* the saver an exit() must wait for */
static pthread_once_t g_atexit_once = PTHREAD_ONCE_INIT;

static void *saver_main(void *arg)
{
  sf_ckpt_saver *sv = arg;
  sv->rc = sf_checkpoint_write(sv->last_path, &sv->st, sv->p, sv->m, sv->v, sv->err, sizeof sv->err);
  if (sv->rc == 0 && sv->write_best)
    sv->rc = sf_checkpoint_write(sv->best_path, &sv->st, sv->p, sv->m, sv->v, sv->err, sizeof sv->err);
  if (sv->rc != 0) fprintf(stderr, "scaffold: error: %s (background checkpoint write, async_save: 1)\n", sv->err);
  return NULL;
}

/* An exit() with a save in flight (an error exit deep in the program) lets it finish. */
static void join_at_exit(void)
{
  pthread_mutex_lock(&g_exit_lock);
  if (g_live) sf_ckpt_saver_join(g_live, NULL, NULL);
  pthread_mutex_unlock(&g_exit_lock);
}

static void register_atexit(void) { atexit(join_at_exit); }

sf_ckpt_saver *sf_ckpt_saver_new(size_t nparams)
{
  sf_ckpt_saver *sv = sf_malloc(sizeof *sv, "checkpoint saver");
  memset(sv, 0, sizeof *sv);
  sv->N = nparams;
  sv->p = sf_malloc(nparams * sizeof(float), "checkpoint snapshot (parameters)");
  sv->m = sf_malloc(nparams * sizeof(float), "checkpoint snapshot (Adam m)");
  sv->v = sf_malloc(nparams * sizeof(float), "checkpoint snapshot (Adam v)");
  pthread_once(&g_atexit_once, register_atexit);
  pthread_mutex_lock(&g_exit_lock);
  g_live = sv;
  pthread_mutex_unlock(&g_exit_lock);
  return sv;
}

int sf_ckpt_saver_join(sf_ckpt_saver *sv, long *epoch, char *err_copy)
{
  if (!sv || !sv->in_flight) return 0;
  pthread_join(sv->thread, NULL);
  sv->in_flight = 0;
  if (epoch) *epoch = sv->st.epoch;
  if (err_copy && sv->rc != 0) snprintf(err_copy, sizeof sv->err, "%s", sv->err);
  return sv->rc;
}

int sf_ckpt_saver_start(sf_ckpt_saver *sv, const sf_ckpt_state *st, const float *p, const float *m, const float *v,
                        const char *last_path, const char *best_path, int write_best)
{
  SF_ASSERT(!sv->in_flight && st->topo.nparams == sv->N);
  size_t n = sv->N * sizeof(float);
  memcpy(sv->p, p, n);
  memcpy(sv->m, m, n);
  memcpy(sv->v, v, n);
  sv->st = *st;
  free(sv->last_path);
  free(sv->best_path);
  sv->last_path = sf_strdup(last_path);
  sv->best_path = sf_strdup(best_path);
  sv->write_best = write_best;
  sv->rc = 0;
  sv->err[0] = '\0';
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* the thread inherits the mask: signals stay with training */
  int e = pthread_create(&sv->thread, NULL, saver_main, sv);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (e != 0) { /* no thread: write here, as a synchronous save would */
    saver_main(sv);
    return sv->rc;
  }
  sv->in_flight = 1;
  return 0;
}

void sf_ckpt_saver_free(sf_ckpt_saver *sv)
{
  if (!sv) return;
  sf_ckpt_saver_join(sv, NULL, NULL);
  pthread_mutex_lock(&g_exit_lock);
  if (g_live == sv) g_live = NULL;
  pthread_mutex_unlock(&g_exit_lock);
  free(sv->p);
  free(sv->m);
  free(sv->v);
  free(sv->last_path);
  free(sv->best_path);
  free(sv);
}

/* Resume and the run directory's training files (scaffold/trainer.h): the checkpoint directory,
 * stale temporary files of dead writers, checkpoints (write: last, and best on a new minimum of
 * val_loss_avg; read: last, else best, a corrupt one renamed *.corrupt; rank 0 reads and
 * broadcasts), train_stats.csv (truncated to the restored epochs on a resume, else created with
 * upstream's header) and the partial row of an epoch stopped by a signal. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/graph.h"
#include "train_internal.h"

/* ---- checkpoints ---- */

int sf_train_save_checkpoint(sf_tctx *t, int consider_best)
{
  char err[1024];
  int new_best = consider_best && t->st.epoch > 0 && t->st.partial_epoch == 0 &&
                 t->st.val_loss_avg < t->st.best_val_loss;
  if (new_best) t->st.best_val_loss = t->st.val_loss_avg;
  t->st.replicas = t->R;
  t->st.spatial_ranks = sf_dist_spatial();
  t->failed_epoch = t->st.epoch;
  snprintf(t->st.optimizer, sizeof t->st.optimizer, "%s", t->c->optimizer);
  int rc = 0;
  if (t->c->async_save && sf_train_join_checkpoint(t) != 0) return -1; /* at most one save in flight */
  if (t->c->async_save && sf_dist_is_root() && !t->saver) t->saver = sf_ckpt_saver_new(t->N);
  if (t->saver) { /* async_save: 1 (rank 0): snapshot here, write in the background */
    sf_graph_acquire_state(t->g, 0);
    rc = sf_ckpt_saver_start(t->saver, &t->st, sf_graph_params(t->g), sf_graph_adam_m(t->g), sf_graph_adam_v(t->g),
                             t->last_path, t->best_path, new_best);
    sf_graph_release_state(t->g);
  } else if (sf_dist_is_root()) { /* the parameters are the same on every rank */
    sf_graph_acquire_state(t->g, 0);
    const float *p = sf_graph_params(t->g), *m = sf_graph_adam_m(t->g), *v = sf_graph_adam_v(t->g);
    rc = sf_checkpoint_write(t->last_path, &t->st, p, m, v, err, sizeof err);
    if (rc == 0 && new_best) rc = sf_checkpoint_write(t->best_path, &t->st, p, m, v, err, sizeof err);
    sf_graph_release_state(t->g);
    if (rc != 0) fprintf(stderr, "scaffold: error: %s\n", err);
  }
  return sf_dist_agree(rc != 0) ? -1 : 0;
}

int sf_train_join_checkpoint(sf_tctx *t)
{
  if (!t->c->async_save) return 0;
  long epoch = 0;
  int rc = t->saver ? sf_ckpt_saver_join(t->saver, &epoch, NULL) : 0;
  if (rc != 0) t->failed_epoch = epoch;
  return sf_dist_agree(rc != 0) ? -1 : 0;
}

/* Loads checkpoint_last, else checkpoint_best. Returns 0 (loaded), 1 (none exists), -1 (error,
 * message in r->error, status in r->status). A corrupt file is renamed *.corrupt. */
static int load_checkpoint_here(sf_tctx *t, sf_train_result *r)
{
  const char *paths[2] = {t->last_path, t->best_path};
  sf_ckpt_topology want;
  sf_ckpt_topology_of(t->s->unet, &want);
  char problems[2][1100];
  int ncorrupt = 0;
  for (int i = 0; i < 2; i++) {
    char err[1024];
    sf_ckpt_state st;
    sf_graph_acquire_state(t->g, 1);
    sf_ckpt_status cs = sf_checkpoint_read(paths[i], &want, &st, sf_graph_params(t->g), sf_graph_adam_m(t->g),
                                           sf_graph_adam_v(t->g), err, sizeof err);
    sf_graph_release_state(t->g);
    switch (cs) {
    case SF_CKPT_OK:
      t->st = st;
      sf_info("resumed from %s: epoch %ld done (val_dice %.6g, val_loss_avg %.6g), %ld optimizer steps%s", paths[i],
              st.epoch, st.val_dice, st.val_loss_avg, st.total_optimizer_steps,
              st.partial_epoch ? "; continuing an interrupted epoch" : "");
      if (st.partial_epoch)
        sf_info("epoch %ld was stopped after step %ld; resuming it at step %ld", st.partial_epoch, st.partial_steps,
                st.partial_steps + 1);
      return 0;
    case SF_CKPT_MISSING:
      continue;
    case SF_CKPT_CORRUPT: {
      size_t n = strlen(paths[i]) + 16;
      char *dst = sf_malloc(n, "path");
      snprintf(dst, n, "%s.corrupt", paths[i]);
      int moved = rename(paths[i], dst) == 0;
      fprintf(stderr, "scaffold: warning: %s; %s%s%s\n", err, moved ? "renamed it to " : "could not rename it",
              moved ? dst : "", i == 0 ? "; trying checkpoint_best" : "");
      snprintf(problems[ncorrupt++], sizeof problems[0], "%s", err);
      free(dst);
      continue;
    }
    case SF_CKPT_MISMATCH:
      snprintf(r->error, sizeof r->error, "refusing to resume: %s", err);
      r->status = SF_EXIT_USAGE;
      return -1;
    case SF_CKPT_IOERR:
      snprintf(r->error, sizeof r->error, "%s", err);
      r->status = SF_EXIT_FAILURE;
      return -1;
    }
  }
  if (ncorrupt) {
    snprintf(r->error, sizeof r->error, "no usable checkpoint in %s: %s%s%s", t->ckpt_dir, problems[0],
             ncorrupt > 1 ? "; " : "", ncorrupt > 1 ? problems[1] : "");
    r->status = SF_EXIT_FAILURE;
    return -1;
  }
  return 1;
}

/* Distributed: rank 0 loads (as above) and broadcasts the outcome, the state (with the global
 * running sums of an interrupted epoch), the parameters and the Adam moments. An epoch stopped
 * midway resumes only with the replica count that ran it (its sampler positions). */
static int load_checkpoint(sf_tctx *t, sf_train_result *r)
{
  int lc = sf_dist_is_root() ? load_checkpoint_here(t, r) : 1;
  if (sf_dist_active()) {
    int hdr[2] = {lc, r->status};
    sf_dist_bcast(hdr, sizeof hdr);
    char *e = sf_dist_bcast_string(r->error);
    snprintf(r->error, sizeof r->error, "%s", e);
    free(e);
    lc = hdr[0];
    r->status = hdr[1];
    if (lc != 0) return lc;
    sf_dist_bcast(&t->st, sizeof t->st);
    sf_graph_acquire_state(t->g, 1);
    sf_dist_bcast(sf_graph_params(t->g), t->N * sizeof(float));
    sf_dist_bcast(sf_graph_adam_m(t->g), t->N * sizeof(float));
    sf_dist_bcast(sf_graph_adam_v(t->g), t->N * sizeof(float));
    sf_graph_release_state(t->g);
  }
  if (lc != 0) return lc;
  const sf_optimizer_info *was_opt = sf_optimizer_find(t->st.optimizer), *now_opt = sf_optimizer_find(t->c->optimizer);
  if (!was_opt || !now_opt || was_opt->kind != now_opt->kind) {
    snprintf(r->error, sizeof r->error,
             "refusing to resume: the checkpoint in %s holds the state of optimizer '%s', the config asks for '%s' "
             "(config key 'optimizer'); resume with optimizer: %s, or start a new run",
             t->ckpt_dir, t->st.optimizer, t->c->optimizer, t->st.optimizer);
    r->status = SF_EXIT_USAGE;
    return -1;
  }
  long was = t->st.replicas > 0 ? t->st.replicas : 1, spatial = t->st.spatial_ranks > 0 ? t->st.spatial_ranks : 1;
  if (t->st.partial_epoch && was != t->R) {
    snprintf(r->error, sizeof r->error,
             "refusing to resume: the checkpoint in %s stopped inside epoch %ld of a run with %ld replica(s) (%ld "
             "rank(s) x %ld spatial), and an epoch cannot be continued with %d replica(s); rerun with %ld replica(s), "
             "or resume from a checkpoint taken at the end of an epoch",
             t->ckpt_dir, t->st.partial_epoch, was, was * spatial, spatial, t->R, was);
    r->status = SF_EXIT_USAGE;
    return -1;
  }
  if (was != t->R || spatial != sf_dist_spatial())
    sf_info("the checkpoint was written by %ld replica(s) x %ld spatial rank(s); continuing with %d x %d", was, spatial,
            t->R, sf_dist_spatial());
  return 0;
}

/* Removes "<dir>/.tmp-<name>-<pid>" files (fsutil's atomic writes) of processes that no longer
 * exist: writes cut short by a crash, kill -9 or a second SIGINT. Files of this process (an open
 * trace) and of live processes are kept. */
static void sweep_stale_tmp(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, ".tmp-", 5) != 0) continue;
    const char *dash = strrchr(e->d_name, '-');
    char *end;
    long pid = dash ? strtol(dash + 1, &end, 10) : 0;
    if (!dash || end == dash + 1 || *end || pid <= 0 || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char *p = sf_path_join(dir, e->d_name);
    if (unlink(p) == 0) sf_info("removed %s, left by an interrupted write of process %ld", p, pid);
    free(p);
  }
  if (d) closedir(d);
}

/* ---- the run's files ---- */

void sf_train_fail(sf_train_result *r, int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
  r->status = status;
}

/* The partial row (sf_epoch_row_partial: training sums over the steps run, nan validation
 * columns); the resume cuts it and writes the finished epoch's row. A stop before the epoch's first
 * step writes no row. */
void sf_train_write_partial_row(sf_tctx *t, long epoch, int steps_done, long opt_steps, double loss_sum,
                                double dice_sum, double nsamp, char *note, size_t len)
{
  if (steps_done == 0) {
    snprintf(note, len, "no train_stats.csv row (no step of epoch %ld had run)", epoch);
    return;
  }
  sf_epoch_row row = sf_epoch_row_partial(epoch, loss_sum, dice_sum, nsamp, t->st.partial_seconds, opt_steps,
                                          t->st.total_optimizer_steps);
  int e = sf_dist_is_root() && sf_stats_csv_append(t->csv_path, &row) != 0 ? errno : 0;
  if (sf_dist_agree(e != 0))
    snprintf(note, len, "the partial row for epoch %ld could not be appended to %s: %s", epoch, t->csv_path,
             e ? strerror(e) : "failed on rank 0");
  else
    snprintf(note, len, "partial row for epoch %ld (%d steps, validation columns nan) appended to train_stats.csv",
             epoch, steps_done);
}

/* Resume from a checkpoint (s->resume; *loaded = 1 when one was loaded), or start fresh. */
static int resume_or_start(sf_tctx *t, sf_train_result *r, int *loaded)
{
  const sf_train_setup *s = t->s;
  *loaded = 0;
  if (!s->resume) return 0;
  int lc = load_checkpoint(t, r);
  if (lc < 0) return -1;
  if (lc == 1) {
    if (s->require_checkpoint) {
      sf_train_fail(r, SF_EXIT_USAGE,
                    "--restart: no checkpoint in %s (looked for checkpoint_last.bin and checkpoint_best.bin)",
                    t->ckpt_dir);
      return -1;
    }
    sf_info("no checkpoint in %s: starting from scratch", t->ckpt_dir);
  }
  *loaded = lc == 0;
  return 0;
}

/* train_stats.csv, which rank 0 keeps with the checkpoint files: cut to the restored epochs (their
 * rows in *rows), or created fresh (a fresh train_from_scratch run also removes the checkpoints). */
static int prepare_csv(sf_tctx *t, sf_train_result *r, int loaded, sf_epoch_row **rows, size_t *nrows)
{
  char err[1024];
  int csv_rc = 0;
  if (loaded && sf_dist_is_root()) {
    if (sf_stats_csv_truncate(t->csv_path, t->st.epoch + 1, rows, nrows, err, sizeof err) != 0) {
      sf_train_fail(r, SF_EXIT_FAILURE, "%s", err);
      csv_rc = 1;
    }
  } else if (sf_dist_is_root()) {
    if (!t->s->resume && t->c->train_from_scratch) {
      unlink(t->last_path);
      unlink(t->best_path);
    }
    if (sf_stats_csv_create(t->csv_path) != 0) {
      sf_train_fail(r, SF_EXIT_FAILURE, "cannot write %s: %s", t->csv_path, strerror(errno));
      csv_rc = 1;
    }
  }
  if (sf_dist_agree(csv_rc)) {
    if (!csv_rc) sf_train_fail(r, SF_EXIT_FAILURE, "rank 0 could not prepare %s (see its error)", t->csv_path);
    return -1;
  }
  return 0;
}

int sf_train_resume_setup(sf_tctx *t, sf_train_result *r)
{
  int mk = sf_dist_is_root() && sf_mkdir_p(t->ckpt_dir) != 0 ? errno : 0;
  if (sf_dist_agree(mk != 0)) {
    sf_train_fail(r, SF_EXIT_FAILURE, "cannot create %s: %s", t->ckpt_dir, mk ? strerror(mk) : "failed on rank 0");
    return -1;
  }
  if (sf_dist_is_root()) {
    sweep_stale_tmp(t->ckpt_dir);
    sweep_stale_tmp(t->s->run_dir);
  }
  int loaded;
  sf_epoch_row *rows = NULL;
  size_t nrows = 0;
  if (resume_or_start(t, r, &loaded) != 0 || prepare_csv(t, r, loaded, &rows, &nrows) != 0) {
    free(rows);
    return -1;
  }
  for (size_t i = 0; i < nrows; i++) { /* the restored epochs count in the run's totals */
    r->sum_epoch_time += rows[i].epoch_duration;
    if (rows[i].val_dice > r->best_val_dice) r->best_val_dice = rows[i].val_dice;
  }
  if (nrows) {
    r->final_val_loss = rows[nrows - 1].val_loss_avg;
    r->final_train_loss = rows[nrows - 1].overall_loss;
  }
  free(rows);
  t->saved_epoch = loaded && !t->st.partial_epoch ? t->st.epoch : -1;
  return 0;
}

/* The epoch loop of `scaffold benchmark` (spec §6.6-6.10): warm-up with rollback, training steps
 * in sampler order with the cosine warm-restart lr, validation with hard Dice, the per-epoch CSV
 * row and log line, checkpoints (every checkpoint_interval epochs, best on a new minimum of
 * val_loss_avg, at exit), resume from checkpoint_last/best, divergence and convergence tests,
 * --max-count and SIGINT/SIGTERM stops at a step boundary.
 *
 * local_batch_size B > 1: each sample's gradient comes from sf_graph_grad_step, the batch mean is
 * clipped and Adam is applied on the host (sf_adam_step). The batch-mean gradient weights each
 * sample's CE equally, where upstream pools the CE denominator over the batch (documented).
 *
 * A stop inside an epoch (signal, --max-count) saves the epoch's position and running sums in the
 * checkpoint; a resume finishes that epoch exactly as an uninterrupted run would. A signal also
 * appends a partial row (nan validation columns, sf_epoch_row_partial) to train_stats.csv, which
 * the resume's truncation replaces with the finished epoch's row; the header stays upstream's.
 *
 * Distributed (mpirun, scaffold/dist.h): each replica takes its DistributedSampler share; every
 * shard of a replica runs the same steps. Each step's loss, Dice and sample count are summed over
 * replicas (shard 0 of each contributes) before they enter the epoch's running sums, so every rank
 * holds the same global sums, in the same order, and a resumed epoch adds up exactly as an
 * uninterrupted one; validation sums are reduced once per epoch. Decisions
 * that end or redirect the loop (signals, --max-count, divergence, I/O failures) are agreed by
 * every rank at each step boundary, so no rank is left waiting in a collective. Rank 0 alone
 * writes the CSV and the checkpoints; a resume reads them on rank 0 and broadcasts. With B > 1 the
 * host's batch-mean gradient goes through the graph's all-reduce and Adam (sf_graph_apply_grads).
 * SF_CHECK_REPLICAS=1 compares the parameters of every rank after every step (tests). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "epoch_log.h"
#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/lr_schedule.h"
#include "scaffold/ops.h"
#include "scaffold/signals.h"
#include "scaffold/tasks.h"
#include "scaffold/trace.h"
#include "scaffold/trainer.h"

/* ---- signals (scaffold/signals.h) ---- */

void sf_train_install_signals(void) { sf_signals_install(); }

int sf_train_stop_requested(void) { return sf_stop_requested(); }

double sf_train_lr(const sf_config *c, long sched_steps)
{
  if (c->disable_scheduler) return c->starting_learning_rate;
  return sf_cosine_warm_restart_lr(sched_steps, c->starting_learning_rate, c->min_learning_rate, c->T_0, c->T_mult);
}

/* ---- per-run context ---- */

typedef struct {
  const sf_train_setup *s;
  const sf_config *c;
  sf_graph *g;
  size_t N;                 /* parameters */
  int B;                    /* local batch size */
  int n_train, n_val, per;  /* per = training samples per replica per epoch */
  float *x;                 /* one sample (G,G,G,cin) */
  uint16_t *lab;            /* (G,G,G) */
  float *gacc;              /* B > 1: batch gradient */
  int *order;
  sf_ckpt_state st;
  char *ckpt_dir, *last_path, *best_path, *csv_path;
  int tty;
  int R, rep;               /* replicas and this rank's replica (1, 0 in a single process) */
  int contrib;              /* 1: this rank's sums count in the global ones (shard 0 of its replica) */
  int check_replicas;       /* SF_CHECK_REPLICAS=1: parameters compared across ranks after each step */
  long checked;             /* steps whose parameters were compared */
} tctx;

typedef struct {
  double loss, dice, ce;    /* sums over the batch's samples */
  double flops;
  double norm;              /* gradient norm before clipping */
  int ok;                   /* all losses finite */
} step_out;

static void load_sample(tctx *t, sf_split split, int i)
{
  char err[1024];
  if (sf_dataset_load(t->s->data, split, i, t->x, t->lab, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "loading %s sample %d: %s", split == SF_SPLIT_TRAIN ? "training" : "validation", i, err);
}

/* One optimizer step on the samples idx[0..b-1] with lr at Adam step adam_step. */
static void train_batch(tctx *t, const int *idx, int b, double lr, long adam_step, step_out *o)
{
  memset(o, 0, sizeof *o);
  o->ok = 1;
  double out[3];
  if (b == 1) {
    load_sample(t, SF_SPLIT_TRAIN, idx[0]);
    int rc = sf_graph_train_step(t->g, t->x, t->lab, t->s->class_w, lr, adam_step, out);
    o->flops = sf_tasks_flops_counter();
    o->ce = out[0];
    o->dice = out[1];
    o->loss = out[2];
    o->norm = sf_graph_last_grad_norm(t->g);
    o->ok = rc == 0;
    return;
  }
  memset(t->gacc, 0, t->N * sizeof *t->gacc);
  for (int k = 0; k < b; k++) {
    load_sample(t, SF_SPLIT_TRAIN, idx[k]);
    int rc = sf_graph_grad_step(t->g, t->x, t->lab, t->s->class_w, out);
    o->flops += sf_tasks_flops_counter();
    o->ce += out[0];
    o->dice += out[1];
    o->loss += out[2];
    if (rc != 0) o->ok = 0;
    sf_graph_acquire_state(t->g, 0);
    const float *gr = sf_graph_grads(t->g);
    for (size_t i = 0; i < t->N; i++) t->gacc[i] += gr[i];
    sf_graph_release_state(t->g);
  }
  const float inv = 1.0f / (float)b;
  if (sf_dist_active()) { /* mean over the batch here, over replicas in the graph's all-reduce */
    for (size_t i = 0; i < t->N; i++) t->gacc[i] *= inv;
    sf_graph_apply_grads(t->g, t->gacc, lr, adam_step);
    o->norm = sf_graph_last_grad_norm(t->g);
    o->flops += 10.0 * (double)t->N;
    return;
  }
  double sumsq = 0;
  for (size_t i = 0; i < t->N; i++) {
    t->gacc[i] *= inv;
    sumsq += (double)t->gacc[i] * t->gacc[i];
  }
  o->norm = sqrt(sumsq);
  float coef = sf_clip_coef(sumsq, SF_CLIP_MAX_NORM);
  sf_graph_acquire_state(t->g, 1);
  sf_adam_step(sf_graph_params(t->g), sf_graph_adam_m(t->g), sf_graph_adam_v(t->g), t->gacc, t->N, lr,
               SF_ADAM_BETA1, SF_ADAM_BETA2, SF_ADAM_EPS, adam_step, coef);
  sf_graph_release_state(t->g);
  o->flops += 10.0 * (double)t->N;
}

/* SF_CHECK_REPLICAS=1: the weights must be bitwise identical on every rank after every step. */
static void check_replicas(tctx *t, const char *phase, long step)
{
  if (!t->check_replicas || !sf_dist_active()) return;
  char msg[4096];
  sf_graph_acquire_state(t->g, 0);
  int rc = sf_dist_check_identical(sf_graph_params(t->g), t->N * sizeof(float), msg, sizeof msg);
  sf_graph_release_state(t->g);
  if (rc != 0) sf_die(SF_EXIT_FAILURE, "replica check: the parameters differ across ranks after %s step %ld: %s", phase,
                      step, msg);
  t->checked++;
}

static void snapshot(tctx *t, float *buf, int restore)
{
  sf_graph_acquire_state(t->g, restore);
  float *a[3] = {sf_graph_params(t->g), sf_graph_adam_m(t->g), sf_graph_adam_v(t->g)};
  for (int i = 0; i < 3; i++) {
    if (restore) memcpy(a[i], buf + i * t->N, t->N * sizeof(float));
    else memcpy(buf + i * t->N, a[i], t->N * sizeof(float));
  }
  sf_graph_release_state(t->g);
}

static void tctx_init(tctx *t, const sf_train_setup *s)
{
  memset(t, 0, sizeof *t);
  t->s = s;
  t->c = s->cfg;
  t->g = s->graph;
  t->N = s->unet->total_params;
  t->B = (int)s->cfg->local_batch_size;
  t->n_train = s->data->n_train;
  t->n_val = s->data->n_val;
  t->R = sf_dist_replicas();
  t->rep = sf_dist_replica();
  t->contrib = sf_dist_shard() == 0;
  const char *chk = getenv("SF_CHECK_REPLICAS");
  t->check_replicas = chk && !strcmp(chk, "1");
  t->per = sf_sampler_per_replica(t->n_train, t->R);
  size_t G = (size_t)s->data->grid, vox = G * G * G;
  t->x = sf_aligned_alloc(vox * (size_t)s->unet->in_channels * sizeof(float), "sample image");
  t->lab = sf_aligned_alloc(vox * sizeof(uint16_t), "sample labels");
  if (t->B > 1) t->gacc = sf_aligned_alloc(t->N * sizeof(float), "batch gradient");
  t->order = sf_malloc((size_t)(t->per > 0 ? t->per : 1) * sizeof *t->order, "sampler order");
  sf_ckpt_state_init(&t->st, s->unet);
  t->ckpt_dir = sf_path_join(s->run_dir, s->cfg->checkpoint_dir);
  t->last_path = sf_path_join(t->ckpt_dir, "checkpoint_last.bin");
  t->best_path = sf_path_join(t->ckpt_dir, "checkpoint_best.bin");
  t->csv_path = sf_path_join(s->run_dir, "train_stats.csv");
  t->tty = isatty(2) && sf_dist_is_root();
}

static void tctx_free(tctx *t)
{
  free(t->x);
  free(t->lab);
  free(t->gacc);
  free(t->order);
  free(t->ckpt_dir);
  free(t->last_path);
  free(t->best_path);
  free(t->csv_path);
}

/* ---- warm-up (spec §6.10) ---- */

static double warmup(tctx *t)
{
  const sf_config *c = t->c;
  int steps = sf_sampler_steps(t->n_train, t->R, t->B);
  int nb = (int)(c->warmup_batches < steps ? c->warmup_batches : steps);
  if (nb <= 0) return 0;
  double t0 = sf_now(), tr0 = sf_trace_now();
  float *saved = sf_aligned_alloc(3 * t->N * sizeof(float), "warm-up snapshot");
  snapshot(t, saved, 0);
  sf_sampler_train_order(t->n_train, t->R, t->rep, 0, t->order);
  double lr = sf_train_lr(c, 0);
  step_out o;
  int bad = 0;
  for (int k = 0; k < nb; k++) {
    int b = t->per - k * t->B < t->B ? t->per - k * t->B : t->B;
    train_batch(t, t->order + (size_t)k * t->B, b, lr, k + 1, &o);
    bad += !o.ok;
    check_replicas(t, "warm-up", k + 1);
    sf_trace_collect();
  }
  /* one more step for the ragged final batch size, if warm-up did not reach it */
  int ragged = t->per % t->B;
  if (ragged && nb < steps) {
    train_batch(t, t->order + (size_t)(steps - 1) * t->B, ragged, lr, nb + 1, &o);
    bad += !o.ok;
    sf_trace_collect();
  }
  int nv = (int)(c->warmup_batches < t->n_val ? c->warmup_batches : t->n_val);
  for (int i = 0; i < nv; i++) {
    double out[4];
    load_sample(t, SF_SPLIT_VAL, i);
    sf_graph_eval(t->g, t->x, t->lab, t->s->class_w, out);
    sf_trace_collect();
  }
  snapshot(t, saved, 1);
  free(saved);
  if (bad) sf_warn("warm-up: %d step(s) had a non-finite loss (rolled back; training proper checks again)", bad);
  double secs = sf_now() - t0;
  sf_trace_span("warm-up (rolled back)", "phase", tr0, sf_trace_now());
  sf_info("Done warmup. Took %.2fs (%d training step(s)%s, %d validation sample(s); parameters, Adam state and "
          "step counter restored)", secs, nb + (ragged && nb < steps), ragged && nb < steps ? " incl. ragged" : "", nv);
  return secs;
}

double sf_train_warmup(const sf_train_setup *s)
{
  tctx t;
  tctx_init(&t, s);
  double secs = warmup(&t);
  tctx_free(&t);
  return secs;
}

/* ---- checkpoints ---- */

/* Writes checkpoint_last (and checkpoint_best on a new strict minimum of val_loss_avg when
 * consider_best). Returns 0 or -1 (message printed). */
static int save_checkpoint(tctx *t, int consider_best)
{
  char err[1024];
  int new_best = consider_best && t->st.epoch > 0 && t->st.partial_epoch == 0 &&
                 t->st.val_loss_avg < t->st.best_val_loss;
  if (new_best) t->st.best_val_loss = t->st.val_loss_avg;
  t->st.replicas = t->R;
  t->st.spatial_ranks = sf_dist_spatial();
  int rc = 0;
  if (sf_dist_is_root()) { /* the parameters are the same on every rank */
    sf_graph_acquire_state(t->g, 0);
    const float *p = sf_graph_params(t->g), *m = sf_graph_adam_m(t->g), *v = sf_graph_adam_v(t->g);
    rc = sf_checkpoint_write(t->last_path, &t->st, p, m, v, err, sizeof err);
    if (rc == 0 && new_best) rc = sf_checkpoint_write(t->best_path, &t->st, p, m, v, err, sizeof err);
    sf_graph_release_state(t->g);
    if (rc != 0) fprintf(stderr, "scaffold: error: %s\n", err);
  }
  return sf_dist_agree(rc != 0) ? -1 : 0;
}

/* Loads checkpoint_last, else checkpoint_best. Returns 0 (loaded), 1 (none exists), -1 (error,
 * message in r->error, status in r->status). A corrupt file is renamed *.corrupt. */
static int load_checkpoint_here(tctx *t, sf_train_result *r)
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
static int load_checkpoint(tctx *t, sf_train_result *r)
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

/* ---- the loop ---- */

static void clear_partial(sf_ckpt_state *st)
{
  st->partial_epoch = st->partial_steps = st->partial_opt_steps = 0;
  st->partial_loss = st->partial_dice = st->partial_samples = st->partial_seconds = 0;
}

static void progress(tctx *t, long epoch, int k, int steps, double loss, double rate)
{
  if (!t->tty) return;
  fprintf(stderr, "\r  epoch %ld [%d/%d] loss %.4f  %.2f samples/s ", epoch, k, steps, loss, rate);
  if (k == steps) fputs("\r\033[K", stderr);
  fflush(stderr);
}

static void fail(sf_train_result *r, int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->error, sizeof r->error, fmt, ap);
  va_end(ap);
  r->status = status;
}

/* SIGINT/SIGTERM inside an epoch: rank 0 appends the epoch's partial row (sf_epoch_row_partial:
 * training sums over the steps run, nan validation columns); the resume cuts it and writes the
 * finished epoch's row. A stop before the epoch's first step writes no row. */
static void write_partial_row(tctx *t, long epoch, int steps_done, long opt_steps, double loss_sum,
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

int sf_train(const sf_train_setup *s, sf_train_result *r)
{
  memset(r, 0, sizeof *r);
  const sf_config *c = s->cfg;
  FILE *log = s->log ? s->log : stdout;
  tctx t;
  tctx_init(&t, s);
  char err[1024];
  sf_epoch_row *rows = NULL;
  size_t nrows = 0;
  sf_epoch_log elog; /* upstream's "Epoch E completed ..." line and minibatch medians (epoch_log.c) */
  sf_epoch_log_init(&elog);

  if ((long)t.B * t.R > t.n_train || (long)t.B * t.R > t.n_val) {
    if (t.R > 1)
      fail(r, SF_EXIT_USAGE, "the global batch (local_batch_size %d x %d replicas) exceeds the training (%d) or "
           "validation (%d) sample count", t.B, t.R, t.n_train, t.n_val);
    else
      fail(r, SF_EXIT_USAGE, "local_batch_size %d exceeds the training (%d) or validation (%d) sample count", t.B,
           t.n_train, t.n_val);
    goto out;
  }
  int mk = sf_dist_is_root() && sf_mkdir_p(t.ckpt_dir) != 0 ? errno : 0;
  if (sf_dist_agree(mk != 0)) {
    fail(r, SF_EXIT_FAILURE, "cannot create %s: %s", t.ckpt_dir, mk ? strerror(mk) : "failed on rank 0");
    goto out;
  }
  if (sf_dist_is_root()) {
    sweep_stale_tmp(t.ckpt_dir);
    sweep_stale_tmp(s->run_dir);
  }

  /* resume or fresh start */
  int loaded = 0;
  if (s->resume) {
    int lc = load_checkpoint(&t, r);
    if (lc < 0) goto out;
    if (lc == 1) {
      if (s->require_checkpoint) {
        fail(r, SF_EXIT_USAGE, "--restart: no checkpoint in %s (looked for checkpoint_last.bin and checkpoint_best.bin)",
             t.ckpt_dir);
        goto out;
      }
      sf_info("no checkpoint in %s: starting from scratch", t.ckpt_dir);
    }
    loaded = lc == 0;
  }
  int csv_rc = 0; /* rank 0 keeps the CSV and the checkpoint files */
  if (loaded && sf_dist_is_root()) {
    if (sf_stats_csv_truncate(t.csv_path, t.st.epoch + 1, &rows, &nrows, err, sizeof err) != 0) {
      fail(r, SF_EXIT_FAILURE, "%s", err);
      csv_rc = 1;
    }
  } else if (sf_dist_is_root()) {
    if (!s->resume && c->train_from_scratch) {
      unlink(t.last_path);
      unlink(t.best_path);
    }
    if (sf_stats_csv_create(t.csv_path) != 0) {
      fail(r, SF_EXIT_FAILURE, "cannot write %s: %s", t.csv_path, strerror(errno));
      csv_rc = 1;
    }
  }
  if (sf_dist_agree(csv_rc)) {
    if (!csv_rc) fail(r, SF_EXIT_FAILURE, "rank 0 could not prepare %s (see its error)", t.csv_path);
    goto out;
  }
  for (size_t i = 0; i < nrows; i++) {
    r->sum_epoch_time += rows[i].epoch_duration;
    if (rows[i].val_dice > r->best_val_dice) r->best_val_dice = rows[i].val_dice;
  }
  if (nrows) {
    r->final_val_loss = rows[nrows - 1].val_loss_avg;
    r->final_train_loss = rows[nrows - 1].overall_loss;
  }

  long epoch = t.st.epoch + 1;
  r->start_epoch = epoch;
  r->epochs = t.st.epoch;
  r->total_optimizer_steps = t.st.total_optimizer_steps;
  r->final_val_dice = t.st.val_dice;
  double val_dice = t.st.val_dice;
  int steps = sf_sampler_steps(t.n_train, t.R, t.B);
  long saved_epoch = loaded && !t.st.partial_epoch ? t.st.epoch : -1;
  int checkpoint_every = c->checkpoint_interval > 0;

  if (val_dice >= c->target_dice) {
    r->converged = r->already_converged = 1;
    sf_info("the restored state already reached val_dice %.6g >= target_dice %g: nothing to train", val_dice,
            c->target_dice);
    goto out;
  }
  if (c->epochs != -1 && epoch > c->epochs) {
    sf_warn("epoch cap reached (epochs: %ld) before val_dice >= %g; nothing to train", c->epochs, c->target_dice);
    goto out;
  }
  r->warmup_seconds = warmup(&t);
  if (sf_train_stop_requested()) {
    r->interrupted = sf_train_stop_requested();
    fail(r, SF_EXIT_INTERRUPTED, "interrupted by %s during warm-up (rolled back; no step taken, nothing to save)",
         sf_signal_name(r->interrupted));
    goto out;
  }

  int stop_after_epoch = 0;
  sf_epoch_log_start(&elog);
  while (val_dice < c->target_dice) {
    if (c->epochs != -1 && epoch > c->epochs) {
      sf_warn("stopping: reached the epoch cap (epochs: %ld) with val_dice %.6g < target_dice %g", c->epochs, val_dice,
              c->target_dice);
      break;
    }
    /* ---- train ---- */
    double e0 = sf_now(), te0 = sf_trace_now();
    double prior_secs = 0, loss_sum = 0, dice_sum = 0, nsamp = 0;
    long opt_steps = 0;
    int k0 = 0;
    if (t.st.partial_epoch == epoch) {
      k0 = (int)t.st.partial_steps;
      prior_secs = t.st.partial_seconds;
      loss_sum = t.st.partial_loss; /* global sums (over replicas) */
      dice_sum = t.st.partial_dice;
      nsamp = t.st.partial_samples;
      opt_steps = t.st.partial_opt_steps;
    }
    clear_partial(&t.st);
    sf_sampler_train_order(t.n_train, t.R, t.rep, epoch, t.order);
    double lr = sf_train_lr(c, t.st.sched_steps);
    double flops = 0, train_secs = 0, here = 0;
    for (int k = k0; k < steps; k++) {
      int stop_sig = sf_train_stop_requested();
      int stop_count = sf_ratelog_done(s->rates) && k > k0;
      if (sf_dist_active()) { /* every rank stops at the same step boundary */
        int f[2] = {stop_sig, stop_count};
        sf_dist_allreduce_max(f, 2);
        stop_sig = f[0];
        stop_count = f[1];
      }
      if (stop_sig || stop_count) {
        /* stop at this step boundary: save the epoch's position */
        t.st.partial_epoch = epoch;
        t.st.partial_steps = k;
        t.st.partial_opt_steps = opt_steps;
        t.st.partial_loss = loss_sum;
        t.st.partial_dice = dice_sum;
        t.st.partial_samples = nsamp;
        t.st.partial_seconds = prior_secs + (sf_now() - e0);
        if (stop_sig) {
          r->interrupted = stop_sig;
          int rc = save_checkpoint(&t, 0);
          char row_note[PATH_MAX + 128];
          write_partial_row(&t, epoch, k, opt_steps, loss_sum, dice_sum, nsamp, row_note, sizeof row_note);
          fail(r, SF_EXIT_INTERRUPTED, "interrupted by %s in epoch %ld after step %d/%d; %s; %s",
               sf_signal_name(stop_sig), epoch, k, steps,
               rc == 0 ? "checkpoint saved: resume with restart.sh in the run directory"
                       : "the checkpoint could not be written",
               row_note);
        } else {
          r->stopped_max_count = 1;
          if (checkpoint_every) save_checkpoint(&t, 0);
          sf_info("stopping: --max-count %lld training samples reached in epoch %ld at step %d/%d",
                  s->rates->max_count, epoch, k, steps);
        }
        goto out;
      }
      int b = t.per - k * t.B < t.B ? t.per - k * t.B : t.B;
      double s0 = sf_now(), ts0 = sf_trace_now();
      step_out o;
      long adam_step = t.st.global_step + 1;
      sf_ratelog_iter_begin(s->rates);
      train_batch(&t, t.order + (size_t)k * t.B, b, lr, adam_step, &o);
      sf_ratelog_iter_end(s->rates, b * t.R, o.flops); /* global samples: every rank counts the same */
      check_replicas(&t, "training", adam_step);
      double bsum = b; /* samples of this step, over replicas */
      if (sf_dist_active()) { /* the step's global sums; a diverged replica stops them all */
        double v[4] = {t.contrib ? o.loss : 0, t.contrib ? o.dice : 0, t.contrib ? b : 0, o.ok ? 0 : 1};
        sf_dist_allreduce_sum(v, 4);
        o.loss = v[0];
        o.dice = v[1];
        bsum = v[2];
        o.ok = v[3] == 0;
      }
      double d = sf_now() - s0;
      sf_epoch_log_step(&elog, d, b == t.B);
      if (sf_trace_active()) {
        char name[64];
        snprintf(name, sizeof name, "step %ld", adam_step);
        sf_trace_collect();
        sf_trace_span(name, "step", ts0, sf_trace_now());
      }
      t.st.global_step++;
      t.st.total_optimizer_steps++;
      opt_steps++;
      loss_sum += o.loss;
      dice_sum += o.dice;
      nsamp += bsum;
      here += b * t.R;
      flops += o.flops;
      train_secs += d;
      r->train_samples += b * t.R;
      sf_ratelog_log(s->rates, "loss", o.loss / bsum);
      if (!o.ok) {
        fprintf(stderr,
                "scaffold: error: training diverged in epoch %ld at step %d/%d (global step %ld): non-finite loss\n"
                "  step statistics: ce %.9g | soft fg dice %.9g | loss %.9g | lr %.9g | grad norm %.9g | batch %d\n",
                epoch, k + 1, steps, t.st.global_step, o.ce / b, o.dice / bsum, o.loss / bsum, lr, o.norm, b);
        fail(r, SF_EXIT_FAILURE, "training diverged in epoch %ld at step %d/%d (global step %ld): loss %g", epoch,
             k + 1, steps, t.st.global_step, o.loss / bsum);
        goto out;
      }
      progress(&t, epoch, k + 1, steps, o.loss / bsum, train_secs > 0 ? here / train_secs : 0);
      if (sf_ratelog_done(s->rates) && k + 1 == steps) stop_after_epoch = 1;
    }
    /* ---- validate ---- */
    double tv0 = sf_trace_now();
    int vstart, vcount;
    sf_sampler_val_range(t.n_val, t.R, t.rep, &vstart, &vcount);
    double vloss = 0, vdice = 0, vn = vcount;
    int vbad = -1;
    for (int i = vstart; i < vstart + vcount; i++) {
      double out[4];
      load_sample(&t, SF_SPLIT_VAL, i);
      sf_graph_eval(t.g, t.x, t.lab, s->class_w, out);
      sf_trace_collect();
      vloss += out[2];
      vdice += out[3];
      if (!isfinite(out[2]) || isnan(out[3])) {
        fprintf(stderr, "scaffold: error: training diverged: validation in epoch %ld, sample %d: ce %.9g | soft fg "
                "dice %.9g | loss %.9g | hard fg dice %.9g\n", epoch, i, out[0], out[1], out[2], out[3]);
        if (!sf_dist_active()) {
          fail(r, SF_EXIT_FAILURE, "training diverged: non-finite validation loss in epoch %ld (sample %d)", epoch, i);
          goto out;
        }
        if (vbad < 0) vbad = i; /* distributed: finish the block, then agree */
      }
    }
    if (sf_dist_active()) { /* global sums over replicas (spec §6.6 step 4) */
      double sums[3] = {t.contrib ? vloss : 0, t.contrib ? vdice : 0, t.contrib ? vn : 0};
      sf_dist_allreduce_sum(sums, 3);
      int bad[1] = {vbad >= 0};
      sf_dist_allreduce_max(bad, 1);
      if (bad[0]) {
        fail(r, SF_EXIT_FAILURE, "training diverged: non-finite validation loss in epoch %ld (%s)", epoch,
             vbad >= 0 ? "see this rank's sample above" : "on another rank");
        goto out;
      }
      vloss = sums[0];
      vdice = sums[1];
      vn = sums[2];
    }
    sf_trace_span("validation", "phase", tv0, sf_trace_now());
    val_dice = vn > 0 ? vdice / vn : 0;
    double val_loss_avg = vn > 0 ? vloss / vn : 0;
    if (!isfinite(loss_sum)) {
      fail(r, SF_EXIT_FAILURE, "training diverged in epoch %ld: epoch loss %g", epoch, loss_sum);
      goto out;
    }
    /* ---- scheduler step, timing ---- */
    if (!c->disable_scheduler) t.st.sched_steps++;
    double next_lr = sf_train_lr(c, t.st.sched_steps);
    double duration = prior_secs + (sf_now() - e0);
    sf_trace_span("epoch", "epoch", te0, sf_trace_now());

    sf_epoch_row row = sf_epoch_row_partial(epoch, loss_sum, dice_sum, nsamp, duration, opt_steps,
                                            t.st.total_optimizer_steps); /* the training columns */
    row.val_loss_epoch = vloss;
    row.val_loss_avg = val_loss_avg;
    row.val_dice = val_dice;
    int app = sf_dist_is_root() && sf_stats_csv_append(t.csv_path, &row) != 0 ? errno : 0;
    if (sf_dist_agree(app != 0)) {
      fail(r, SF_EXIT_FAILURE, "cannot append to %s: %s", t.csv_path, app ? strerror(app) : "failed on rank 0");
      goto out;
    }
    t.st.epoch = epoch;
    t.st.val_dice = val_dice;
    t.st.val_loss_avg = val_loss_avg;
    r->epochs = epoch;
    r->epochs_run++;
    r->total_optimizer_steps = t.st.total_optimizer_steps;
    r->sum_epoch_time += duration;
    r->final_val_dice = val_dice;
    r->final_val_loss = val_loss_avg;
    r->final_train_loss = row.overall_loss;
    r->final_lr = next_lr;
    if (val_dice > r->best_val_dice) r->best_val_dice = val_dice;
    sf_ratelog_log(s->rates, "val_dice", val_dice);
    sf_ratelog_log(s->rates, "val_loss", val_loss_avg);

    fprintf(log,
            "epoch %ld | train_loss=%.6f | val_loss=%.6f | train_dice_score %.6f | val_dice_score %.6f | lr %.6g | "
            "optimizer_steps %ld | total_optimizer_steps %ld | %.2f s | %.2f samples/s | %.2f GFLOP/s\n",
            epoch, row.overall_loss, val_loss_avg, row.train_dice, val_dice, next_lr, opt_steps,
            t.st.total_optimizer_steps, duration, train_secs > 0 ? here / train_secs : 0.0,
            train_secs > 0 ? flops / train_secs * 1e-9 : 0.0);
    sf_epoch_log_epoch(&elog, log, epoch, duration, opt_steps, t.st.total_optimizer_steps);

    if (checkpoint_every && epoch % c->checkpoint_interval == 0) {
      if (save_checkpoint(&t, 1) != 0) {
        fail(r, SF_EXIT_FAILURE, "cannot write the checkpoint of epoch %ld", epoch);
        goto out;
      }
      saved_epoch = epoch;
    }
    epoch++;
    if (stop_after_epoch) {
      r->stopped_max_count = val_dice < c->target_dice;
      if (r->stopped_max_count)
        sf_info("stopping: --max-count %lld training samples reached at the end of epoch %ld", s->rates->max_count,
                epoch - 1);
      break;
    }
  }
  r->converged = val_dice >= c->target_dice;
  /* upstream: a final checkpoint when checkpointing is on and the last epoch was not saved */
  if (checkpoint_every && t.st.epoch > 0 && saved_epoch != t.st.epoch && save_checkpoint(&t, 1) != 0)
    fail(r, SF_EXIT_FAILURE, "cannot write the final checkpoint");

out:
  if (t.check_replicas && sf_dist_active() && !r->status)
    sf_info("replica check: parameters bitwise identical on all %d ranks after each of %ld steps", sf_dist_size(),
            t.checked);
  sf_epoch_log_finish(&elog, log, r->status == 0);
  free(rows);
  tctx_free(&t);
  return r->status;
}

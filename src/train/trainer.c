/* The epoch loop of `scaffold benchmark` (spec §6.6-6.10): after the resume (train_resume.c) and
 * the warm-up (train_step.c), each epoch trains in sampler order with the cosine warm-restart lr,
 * validates with hard Dice, then writes its CSV row and log line and, every checkpoint_interval
 * epochs, a checkpoint (best on a new minimum of val_loss_avg); the loop ends on convergence, the
 * epoch cap, divergence, --max-count or SIGINT/SIGTERM (at a step boundary), and a final
 * checkpoint follows when checkpointing is on. With async_save: 1 a checkpoint is written on a
 * background thread that overlaps the next epoch (ckpt_async.c); the next save, an interrupt's
 * checkpoint and the end of the run join it first, and its write error fails the run there.
 *
 * local_batch_size B > 1: a step is one batch through the task graph with upstream's semantics
 * (CE pooled over the batch, Dice averaged over it; sf_graph_train_batch); the epoch's sums add
 * batch mean x batch size, as upstream does.
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
 * uninterrupted one; validation sums are reduced once per epoch. Decisions that end or redirect
 * the loop (signals, --max-count, divergence, I/O failures) are agreed by every rank at each step
 * boundary, so no rank is left waiting in a collective. Rank 0 alone writes the CSV and the
 * checkpoints. SF_CHECK_REPLICAS=1 compares the parameters of every rank after every step (tests). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/host_exec.h"
#include "scaffold/progress.h"
#include "epoch_log.h"
#include "scaffold/signals.h"
#include "scaffold/tasks.h"
#include "scaffold/trace.h"
#include "train_internal.h"

/* One epoch in progress: its training sums (global over replicas), then its validation. */
typedef struct {
  long epoch;
  int k0, steps;                     /* first step to run (a resumed epoch: after the saved ones), steps */
  double e0, te0;                    /* wall clock and trace clock at its start */
  double prior_secs;                 /* seconds it ran before a resume */
  double loss_sum, dice_sum, nsamp;  /* Σ batch loss x size, Σ soft Dice, samples */
  long opt_steps;
  double lr, flops, train_secs, here; /* here: samples trained by this invocation (over replicas) */
  int stop_after;                    /* --max-count reached at its last step */
  double vloss, val_dice, val_loss_avg;
  sf_progress prog;                  /* the training steps' progress line */
} sf_epoch;

static void clear_partial(sf_ckpt_state *st)
{
  st->partial_epoch = st->partial_steps = st->partial_opt_steps = 0;
  st->partial_loss = st->partial_dice = st->partial_samples = st->partial_seconds = 0;
}

/* The training steps' progress line (scaffold/progress.h), with the loss and samples/s; rank 0 only. */
static void progress(sf_tctx *t, sf_epoch *e, int k, double loss, double rate)
{
  if (!sf_dist_is_root()) return;
  char note[96];
  snprintf(note, sizeof note, "loss %.4f, %.2f samples/s", loss, rate);
  sf_progress_update_note(&e->prog, k - e->k0, note);
  if (k == e->steps) sf_progress_clear(&e->prog);
}

/* The epoch's start: a resumed epoch continues from its saved position and sums. */
static void begin_epoch(sf_tctx *t, long epoch, sf_epoch *e)
{
  memset(e, 0, sizeof *e);
  e->epoch = epoch;
  e->steps = sf_sampler_steps(t->n_train, t->R, t->B);
  e->e0 = sf_now();
  e->te0 = sf_trace_now();
  if (t->st.partial_epoch == epoch) {
    e->k0 = (int)t->st.partial_steps;
    e->prior_secs = t->st.partial_seconds;
    e->loss_sum = t->st.partial_loss; /* global sums (over replicas) */
    e->dice_sum = t->st.partial_dice;
    e->nsamp = t->st.partial_samples;
    e->opt_steps = t->st.partial_opt_steps;
  }
  clear_partial(&t->st);
  sf_sampler_train_order(t->n_train, t->R, t->rep, epoch, t->order);
  e->lr = sf_train_lr(t->c, t->st.sched_steps);
  char what[64];
  if (e->k0) snprintf(what, sizeof what, "epoch %ld training steps after the %d resumed", epoch, e->k0);
  else snprintf(what, sizeof what, "epoch %ld training steps", epoch);
  sf_progress_begin(&e->prog, what, e->steps - e->k0);
}

/* SIGINT/SIGTERM or --max-count/--max-time at the boundary before step k, agreed by every rank: the epoch's
 * position goes into the state and a checkpoint (a signal: always, with the partial CSV row;
 * --max-count/--max-time: when checkpointing is on). Returns 1 when training stops here. */
static int stop_at_boundary(sf_tctx *t, sf_train_result *r, sf_epoch *e, int k)
{
  const sf_train_setup *s = t->s;
  int stop_sig = sf_train_stop_requested();
  int stop_count = sf_ratelog_done(s->rates) && k > e->k0;
  if (sf_dist_active()) { /* every rank stops at the same step boundary */
    int f[2] = {stop_sig, stop_count};
    sf_dist_allreduce_max(f, 2);
    stop_sig = f[0];
    stop_count = f[1];
  }
  if (!stop_sig && !stop_count) return 0;
  t->st.partial_epoch = e->epoch;
  t->st.partial_steps = k;
  t->st.partial_opt_steps = e->opt_steps;
  t->st.partial_loss = e->loss_sum;
  t->st.partial_dice = e->dice_sum;
  t->st.partial_samples = e->nsamp;
  t->st.partial_seconds = e->prior_secs + (sf_now() - e->e0);
  if (stop_sig) {
    r->interrupted = stop_sig;
    int rc = sf_train_save_checkpoint(t, 0);
    if (rc == 0) rc = sf_train_join_checkpoint(t); /* async_save: 1: written before the message says so */
    char row_note[PATH_MAX + 128];
    sf_train_write_partial_row(t, e->epoch, k, e->opt_steps, e->loss_sum, e->dice_sum, e->nsamp, row_note,
                               sizeof row_note);
    sf_train_fail(r, SF_EXIT_INTERRUPTED, "interrupted by %s in epoch %ld after step %d/%d; %s; %s",
                  sf_signal_name(stop_sig), e->epoch, k, e->steps,
                  rc == 0 ? "checkpoint saved: resume with restart.sh in the run directory"
                          : "the checkpoint could not be written",
                  row_note);
  } else {
    r->stopped_max_count = 1;
    if (t->c->checkpoint_interval > 0) sf_train_save_checkpoint(t, 0);
    char why[96];
    sf_info("stopping: %s in epoch %ld at step %d/%d", sf_ratelog_done_why(s->rates, why, sizeof why), e->epoch, k,
            e->steps);
  }
  return 1;
}

/* One timed step's share of the granularity record (scaffold/trainer.h): all but this invocation's first step */
static void note_granularity(sf_train_result *r, double step_s, double body_s)
{
  if (r->gran_steps == 0 && r->gran_tasks_per_step == 0) { /* the first step: kept apart */
    r->gran_tasks_per_step = sf_tasks_count_counter();
    r->gran_first_step_seconds = step_s;
    r->gran_first_body_seconds = body_s;
    return;
  }
  r->gran_steps++;
  r->gran_step_seconds += step_s;
  r->gran_body_seconds += body_s;
  r->gran_tasks_per_step = sf_tasks_count_counter(); /* this batch step's (reset by every one) */
}

/* Training step k of the epoch (one batch), its global sums, the divergence check. Returns 1 when
 * the loss is not finite (training stops, r says why). */
static int train_step(sf_tctx *t, sf_train_result *r, sf_epoch *e, int k)
{
  const sf_train_setup *s = t->s;
  int b = t->per - k * t->B < t->B ? t->per - k * t->B : t->B;
  double s0 = sf_now(), ts0 = sf_trace_now(), k0 = sf_host_kernel_seconds();
  sf_step_out o;
  long adam_step = t->st.global_step + 1;
  sf_ratelog_iter_begin(s->rates);
  sf_train_batch_step(t, t->order + (size_t)k * t->B, b, e->lr, adam_step, &o);
  sf_ratelog_iter_end(s->rates, b * t->R, o.flops); /* global samples: every rank counts the same */
  note_granularity(r, sf_now() - s0, sf_host_kernel_seconds() - k0);
  sf_train_check_replicas(t, "training", adam_step);
  double bsum = b; /* samples of this step, over replicas */
  if (sf_dist_active()) { /* the step's global sums; a diverged replica stops them all */
    double v[4] = {t->contrib ? o.loss : 0, t->contrib ? o.dice : 0, t->contrib ? b : 0, o.ok ? 0 : 1};
    sf_dist_allreduce_sum(v, 4);
    o.loss = v[0];
    o.dice = v[1];
    bsum = v[2];
    o.ok = v[3] == 0;
  }
  double d = sf_now() - s0;
  sf_epoch_log_step(&t->elog, d, b == t->B);
  if (sf_trace_active()) {
    char name[64];
    snprintf(name, sizeof name, "step %ld", adam_step);
    sf_trace_collect();
    sf_trace_span(name, "step", ts0, sf_trace_now());
  }
  t->st.global_step++;
  t->st.total_optimizer_steps++;
  e->opt_steps++;
  e->loss_sum += o.loss;
  e->dice_sum += o.dice;
  e->nsamp += bsum;
  e->here += b * t->R;
  e->flops += o.flops;
  e->train_secs += d;
  r->train_samples += b * t->R;
  sf_ratelog_log(s->rates, "loss", o.loss / bsum);
  if (!o.ok) {
    fprintf(stderr,
            "scaffold: error: training diverged in epoch %ld at step %d/%d (global step %ld): non-finite loss\n"
            "  step statistics: ce %.9g | soft fg dice %.9g | loss %.9g | lr %.9g | grad norm %.9g | batch %d\n",
            e->epoch, k + 1, e->steps, t->st.global_step, o.ce / b, o.dice / bsum, o.loss / bsum, e->lr, o.norm, b);
    sf_train_fail(r, SF_EXIT_FAILURE, "training diverged in epoch %ld at step %d/%d (global step %ld): loss %g",
                  e->epoch, k + 1, e->steps, t->st.global_step, o.loss / bsum);
    return 1;
  }
  progress(t, e, k + 1, o.loss / bsum, e->train_secs > 0 ? e->here / e->train_secs : 0);
  if (sf_ratelog_done(s->rates) && k + 1 == e->steps) e->stop_after = 1;
  return 0;
}

/* The epoch's training steps. Returns 1 when training stops inside it (r says why). */
static int train_epoch(sf_tctx *t, sf_train_result *r, sf_epoch *e)
{
  for (int k = e->k0; k < e->steps; k++)
    if (stop_at_boundary(t, r, e, k) || train_step(t, r, e, k)) return 1;
  return 0;
}

/* Validation over this replica's block, summed over replicas (spec §6.6 step 4). Returns 1 on a
 * non-finite validation loss or Dice (r says where). */
static int validate(sf_tctx *t, sf_train_result *r, sf_epoch *e)
{
  double tv0 = sf_trace_now();
  int vstart, vcount;
  sf_sampler_val_range(t->n_val, t->R, t->rep, &vstart, &vcount);
  double vloss = 0, vdice = 0, vn = vcount;
  int vbad = -1;
  sf_progress prog;
  char what[64];
  snprintf(what, sizeof what, "epoch %ld validation samples", e->epoch);
  sf_progress_begin(&prog, what, vcount);
  for (int i = vstart; i < vstart + vcount; i++) {
    double out[4];
    sf_train_load_sample(t, SF_SPLIT_VAL, i, 0);
    sf_graph_eval(t->g, t->x[0], t->lab[0], t->s->class_w, out);
    sf_trace_collect();
    if (sf_dist_is_root()) sf_progress_update(&prog, i - vstart + 1);
    if (sf_dist_is_root() && i + 1 == vstart + vcount) sf_progress_clear(&prog);
    vloss += out[2];
    vdice += out[3];
    if (!isfinite(out[2]) || isnan(out[3])) {
      fprintf(stderr, "scaffold: error: training diverged: validation in epoch %ld, sample %d: ce %.9g | soft fg "
              "dice %.9g | loss %.9g | hard fg dice %.9g\n", e->epoch, i, out[0], out[1], out[2], out[3]);
      if (!sf_dist_active()) {
        sf_train_fail(r, SF_EXIT_FAILURE, "training diverged: non-finite validation loss in epoch %ld (sample %d)",
                      e->epoch, i);
        return 1;
      }
      if (vbad < 0) vbad = i; /* distributed: finish the block, then agree */
    }
  }
  if (sf_dist_active()) { /* global sums over replicas */
    double sums[3] = {t->contrib ? vloss : 0, t->contrib ? vdice : 0, t->contrib ? vn : 0};
    sf_dist_allreduce_sum(sums, 3);
    int bad[1] = {vbad >= 0};
    sf_dist_allreduce_max(bad, 1);
    if (bad[0]) {
      sf_train_fail(r, SF_EXIT_FAILURE, "training diverged: non-finite validation loss in epoch %ld (%s)", e->epoch,
                    vbad >= 0 ? "see this rank's sample above" : "on another rank");
      return 1;
    }
    vloss = sums[0];
    vdice = sums[1];
    vn = sums[2];
  }
  sf_trace_span("validation", "phase", tv0, sf_trace_now());
  e->vloss = vloss;
  e->val_dice = vn > 0 ? vdice / vn : 0;
  e->val_loss_avg = vn > 0 ? vloss / vn : 0;
  return 0;
}

/* The end of a completed epoch: divergence of its sums, the scheduler step, its CSV row, the state,
 * the log line and (every checkpoint_interval epochs) a checkpoint. Returns 1 on a failure. */
static int end_epoch(sf_tctx *t, sf_train_result *r, sf_epoch *e)
{
  const sf_config *c = t->c;
  const sf_train_setup *s = t->s;
  if (!isfinite(e->loss_sum)) {
    sf_train_fail(r, SF_EXIT_FAILURE, "training diverged in epoch %ld: epoch loss %g", e->epoch, e->loss_sum);
    return 1;
  }
  if (!c->disable_scheduler) t->st.sched_steps++;
  double next_lr = sf_train_lr(c, t->st.sched_steps);
  double duration = e->prior_secs + (sf_now() - e->e0);
  sf_trace_span("epoch", "epoch", e->te0, sf_trace_now());

  sf_epoch_row row = sf_epoch_row_partial(e->epoch, e->loss_sum, e->dice_sum, e->nsamp, duration, e->opt_steps,
                                          t->st.total_optimizer_steps); /* the training columns */
  row.val_loss_epoch = e->vloss;
  row.val_loss_avg = e->val_loss_avg;
  row.val_dice = e->val_dice;
  int app = sf_dist_is_root() && sf_stats_csv_append(t->csv_path, &row) != 0 ? errno : 0;
  if (sf_dist_agree(app != 0)) {
    sf_train_fail(r, SF_EXIT_FAILURE, "cannot append to %s: %s", t->csv_path, app ? strerror(app) : "failed on rank 0");
    return 1;
  }
  t->st.epoch = e->epoch;
  t->st.val_dice = e->val_dice;
  t->st.val_loss_avg = e->val_loss_avg;
  r->epochs = e->epoch;
  r->epochs_run++;
  r->total_optimizer_steps = t->st.total_optimizer_steps;
  r->sum_epoch_time += duration;
  r->final_val_dice = e->val_dice;
  r->final_val_loss = e->val_loss_avg;
  r->final_train_loss = row.overall_loss;
  r->final_lr = next_lr;
  if (e->val_dice > r->best_val_dice) r->best_val_dice = e->val_dice;
  sf_ratelog_log(s->rates, "val_dice", e->val_dice);
  sf_ratelog_log(s->rates, "val_loss", e->val_loss_avg);

  FILE *log = s->log ? s->log : stdout;
  fprintf(log,
          "epoch %ld | train_loss=%.6f | val_loss=%.6f | train_dice_score %.6f | val_dice_score %.6f | lr %.6g | "
          "optimizer_steps %ld | total_optimizer_steps %ld | %.2f s | %.2f samples/s | %.2f GFLOP/s\n",
          e->epoch, row.overall_loss, e->val_loss_avg, row.train_dice, e->val_dice, next_lr, e->opt_steps,
          t->st.total_optimizer_steps, duration, e->train_secs > 0 ? e->here / e->train_secs : 0.0,
          e->train_secs > 0 ? e->flops / e->train_secs * 1e-9 : 0.0);
  sf_epoch_log_epoch(&t->elog, log, e->epoch, duration, e->opt_steps, t->st.total_optimizer_steps);

  if (c->checkpoint_interval > 0 && e->epoch % c->checkpoint_interval == 0) {
    if (sf_train_save_checkpoint(t, 1) != 0) {
      sf_train_fail(r, SF_EXIT_FAILURE, "cannot write the checkpoint of epoch %ld", t->failed_epoch);
      return 1;
    }
    t->saved_epoch = e->epoch;
  }
  return 0;
}

/* The restored state, and the warm-up unless there is nothing to train. Returns 1 when the run ends
 * before its first epoch (already converged, the epoch cap, a signal during warm-up). */
static int begin_run(sf_tctx *t, sf_train_result *r)
{
  const sf_config *c = t->c;
  long epoch = t->st.epoch + 1;
  r->start_epoch = epoch;
  r->epochs = t->st.epoch;
  r->total_optimizer_steps = t->st.total_optimizer_steps;
  r->final_val_dice = t->st.val_dice;
  if (t->st.val_dice >= c->target_dice) {
    r->converged = r->already_converged = 1;
    sf_info("the restored state already reached val_dice %.6g >= target_dice %g: nothing to train", t->st.val_dice,
            c->target_dice);
    return 1;
  }
  if (c->epochs != -1 && epoch > c->epochs) {
    sf_warn("epoch cap reached (epochs: %ld) before val_dice >= %g; nothing to train", c->epochs, c->target_dice);
    return 1;
  }
  r->warmup_seconds = sf_train_run_warmup(t);
  sf_step_probes_arm(t); /* bound / export_graph: the first steps after warm-up */
  if (sf_train_stop_requested()) {
    r->interrupted = sf_train_stop_requested();
    sf_train_fail(r, SF_EXIT_INTERRUPTED, "interrupted by %s during warm-up (rolled back; no step taken, nothing to save)",
                  sf_signal_name(r->interrupted));
    return 1;
  }
  return 0;
}

/* Epochs until val_dice >= target_dice, the epoch cap or --max-count/--max-time; then the final checkpoint
 * (upstream: when checkpointing is on and the last epoch was not saved). */
static void train_epochs(sf_tctx *t, sf_train_result *r)
{
  const sf_config *c = t->c;
  sf_epoch_log_start(&t->elog);
  for (long epoch = t->st.epoch + 1; t->st.val_dice < c->target_dice; epoch++) {
    if (c->epochs != -1 && epoch > c->epochs) {
      sf_warn("stopping: reached the epoch cap (epochs: %ld) with val_dice %.6g < target_dice %g", c->epochs,
              t->st.val_dice, c->target_dice);
      break;
    }
    sf_epoch e;
    begin_epoch(t, epoch, &e);
    if (train_epoch(t, r, &e) || validate(t, r, &e) || end_epoch(t, r, &e)) return;
    if (e.stop_after) {
      r->stopped_max_count = t->st.val_dice < c->target_dice;
      char why[96];
      if (r->stopped_max_count)
        sf_info("stopping: %s at the end of epoch %ld", sf_ratelog_done_why(t->s->rates, why, sizeof why), epoch);
      break;
    }
  }
  r->converged = t->st.val_dice >= c->target_dice;
  if (c->checkpoint_interval > 0 && t->st.epoch > 0 && t->saved_epoch != t->st.epoch &&
      sf_train_save_checkpoint(t, 1) != 0)
    sf_train_fail(r, SF_EXIT_FAILURE, "cannot write the final checkpoint");
}

/* The global batch must fit in both splits (upstream errors out too). */
static int check_batch(const sf_tctx *t, sf_train_result *r)
{
  if ((long)t->B * t->R <= t->n_train && (long)t->B * t->R <= t->n_val) return 0;
  if (t->R > 1)
    sf_train_fail(r, SF_EXIT_USAGE, "the global batch (local_batch_size %d x %d replicas) exceeds the training (%d) "
                  "or validation (%d) sample count", t->B, t->R, t->n_train, t->n_val);
  else
    sf_train_fail(r, SF_EXIT_USAGE, "local_batch_size %d exceeds the training (%d) or validation (%d) sample count",
                  t->B, t->n_train, t->n_val);
  return 1;
}

int sf_train(const sf_train_setup *s, sf_train_result *r)
{
  memset(r, 0, sizeof *r);
  sf_tctx t;
  sf_tctx_init(&t, s);
  sf_epoch_log_init(&t.elog); /* upstream's "Epoch E completed ..." line and minibatch medians */
  if (!check_batch(&t, r) && !sf_train_resume_setup(&t, r) && !begin_run(&t, r)) train_epochs(&t, r);
  if (sf_train_join_checkpoint(&t) != 0 && !r->status) /* async_save: 1: the last save in flight */
    sf_train_fail(r, SF_EXIT_FAILURE, "cannot write the checkpoint of epoch %ld", t.failed_epoch);
  if (t.check_replicas && sf_dist_active() && !r->status)
    sf_info("replica check: parameters bitwise identical on all %d ranks after each of %ld steps", sf_dist_size(),
            t.checked);
  sf_epoch_log_finish(&t.elog, s->log ? s->log : stdout, r->status == 0);
  sf_step_probes_finish(&t); /* bound: 1: the report, after the measured training */
  sf_train_report_reads(&t); /* "data read: N bytes per sample" (a spatial shard: its planes only) */
  sf_tctx_free(&t);
  return r->status;
}

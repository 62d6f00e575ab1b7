/* One optimizer step of `scaffold benchmark` and what surrounds it (scaffold/trainer.h): the per-run
 * context, sample loading (a spatial shard reads only its planes of each file, and counts the
 * bytes: the "data read:" line), the step itself (a batch of local_batch_size samples through the task
 * graph: upstream's pooled CE and mean Dice, one clip + Adam, all as tasks; scaffold/graph.h), the
 * replica check of SF_CHECK_REPLICAS=1, the learning rate of an epoch, and the warm-up with
 * rollback (spec §6.10). */
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/dist.h"
#include "scaffold/fsutil.h"
#include "scaffold/lr_schedule.h"
#include "scaffold/ops.h"
#include "scaffold/progress.h"
#include "scaffold/signals.h"
#include "scaffold/tasks.h"
#include "scaffold/trace.h"
#include "train_internal.h"
#include "scaffold/switches.h"

void sf_train_install_signals(void) { sf_signals_install(); }

int sf_train_stop_requested(void) { return sf_stop_requested(); }

double sf_train_lr(const sf_config *c, long sched_steps)
{
  if (c->disable_scheduler) return c->starting_learning_rate;
  return sf_cosine_warm_restart_lr(sched_steps, c->starting_learning_rate, c->min_learning_rate, c->T_0, c->T_mult);
}

void sf_tctx_init(sf_tctx *t, const sf_train_setup *s)
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
  t->check_replicas = sf_switch_is("SF_CHECK_REPLICAS", "1");
  t->per = sf_sampler_per_replica(t->n_train, t->R);
  sf_graph_sample_box(s->graph, t->box_lo, t->box_n); /* a spatial shard: its blocks only */
  size_t vox = (size_t)t->box_n[0] * t->box_n[1] * t->box_n[2];
  t->x = sf_calloc((size_t)t->B, sizeof *t->x, "batch images");
  t->lab = sf_calloc((size_t)t->B, sizeof *t->lab, "batch labels");
  for (int b = 0; b < t->B; b++) {
    t->x[b] = sf_aligned_alloc(vox * (size_t)s->unet->in_channels * sizeof(float), "sample image");
    t->lab[b] = sf_aligned_alloc(vox * sizeof(uint16_t), "sample labels");
  }
  t->order = sf_malloc((size_t)(t->per > 0 ? t->per : 1) * sizeof *t->order, "sampler order");
  sf_ckpt_state_init(&t->st, s->unet);
  t->ckpt_dir = sf_path_join(s->run_dir, s->cfg->checkpoint_dir);
  t->last_path = sf_path_join(t->ckpt_dir, "checkpoint_last.bin");
  t->best_path = sf_path_join(t->ckpt_dir, "checkpoint_best.bin");
  t->csv_path = sf_path_join(s->run_dir, "train_stats.csv");
  t->saved_epoch = -1;
}

void sf_tctx_free(sf_tctx *t)
{
  for (int b = 0; b < t->B; b++) {
    free(t->x[b]);
    free(t->lab[b]);
  }
  free(t->x);
  free(t->lab);
  free(t->order);
  free(t->ckpt_dir);
  free(t->last_path);
  free(t->best_path);
  free(t->csv_path);
  sf_ckpt_saver_free(t->saver); /* joins a save still in flight */
}

void sf_train_load_sample(sf_tctx *t, sf_split split, int i, int slot)
{
  char err[1024];
  const int *lo = t->box_lo, *n = t->box_n;
  sf_box box = {lo[0], lo[0] + n[0], lo[1], lo[1] + n[1], lo[2], lo[2] + n[2]};
  if (sf_dataset_load_box(t->s->data, split, i, &box, t->x[slot], t->lab[slot], &t->read_bytes, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "loading %s sample %d: %s", split == SF_SPLIT_TRAIN ? "training" : "validation", i, err);
  t->read_loads++;
}

void sf_train_report_reads(const sf_tctx *t)
{
  if (t->read_loads == 0) return;
  const int G = t->s->data->grid;
  unsigned long long per = t->read_bytes / (uint64_t)t->read_loads, whole = 0;
  sf_dataset_layout l;
  if (sf_dataset_layout_of((int)t->c->problem_scale, &l) == 0) whole = l.volume_file + l.mask_file;
  char who[64] = "";
  if (sf_dist_active()) snprintf(who, sizeof who, "rank %d (shard %d of %d): ", sf_dist_rank(), sf_dist_shard(),
                                 sf_dist_spatial());
  const int *lo = t->box_lo, *n = t->box_n;
  char box[128];
  if (n[1] == G && n[2] == G) snprintf(box, sizeof box, "planes [%d, %d) of %d", lo[0], lo[0] + n[0], G);
  else snprintf(box, sizeof box, "the box [%d, %d) x [%d, %d) x [%d, %d) of %d^3", lo[0], lo[0] + n[0], lo[1],
                lo[1] + n[1], lo[2], lo[2] + n[2], G);
  sf_info("data read: %s%llu bytes per sample (%ld sample loads, %llu bytes): %s of each volume and mask, headers "
          "included; a whole sample is %llu bytes", who, per, t->read_loads, (unsigned long long)t->read_bytes, box,
          whole);
}

void sf_train_batch_step(sf_tctx *t, const int *idx, int b, double lr, long adam_step, sf_step_out *o)
{
  memset(o, 0, sizeof *o);
  for (int k = 0; k < b; k++) sf_train_load_sample(t, SF_SPLIT_TRAIN, idx[k], k);
  double out[3];
  sf_step_probes_before(t);
  double p0 = sf_now();
  int rc = sf_graph_train_batch(t->g, b, (const float *const *)t->x, (const uint16_t *const *)t->lab,
                                t->s->class_w, lr, adam_step, out);
  sf_step_probes_after(t, sf_now() - p0);
  o->flops = sf_tasks_flops_counter();
  o->ce = out[0] * b; /* the batch means, as sums over its samples (upstream: batch mean x batch size) */
  o->dice = out[1] * b;
  o->loss = out[2] * b;
  o->norm = sf_graph_last_grad_norm(t->g);
  o->ok = rc == 0;
}

void sf_train_check_replicas(sf_tctx *t, const char *phase, long step)
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

/* Parameters and Adam moments to buf (3 N floats), or back from it (restore). */
static void snapshot(sf_tctx *t, float *buf, int restore)
{
  sf_graph_acquire_state(t->g, restore);
  float *a[3] = {sf_graph_params(t->g), sf_graph_adam_m(t->g), sf_graph_adam_v(t->g)};
  for (int i = 0; i < 3; i++) {
    if (restore) memcpy(a[i], buf + i * t->N, t->N * sizeof(float));
    else memcpy(buf + i * t->N, a[i], t->N * sizeof(float));
  }
  sf_graph_release_state(t->g);
}

double sf_train_run_warmup(sf_tctx *t)
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
  sf_step_out o;
  int bad = 0;
  int nv = (int)(c->warmup_batches < t->n_val ? c->warmup_batches : t->n_val);
  int root = sf_dist_is_root();
  if (root)
    sf_info("warm-up: %d training step(s) and %d validation sample(s), rolled back afterwards; the time it "
            "takes follows its first step", nb, nv);
  sf_progress prog;
  sf_progress_begin(&prog, "warm-up training steps", nb);
  for (int k = 0; k < nb; k++) {
    int b = t->per - k * t->B < t->B ? t->per - k * t->B : t->B;
    double s0 = sf_now();
    sf_train_batch_step(t, t->order + (size_t)k * t->B, b, lr, k + 1, &o);
    bad += !o.ok;
    sf_train_check_replicas(t, "warm-up", k + 1);
    sf_trace_collect();
    if (root && k == 0 && nb > 1) /* a validation sample: one forward pass, about a third of a step's per sample */
      sf_info("warm-up: the first step took %.2f s, so the warm-up should take about %.0f s", sf_now() - s0,
              (sf_now() - s0) * (nb + nv / (3.0 * t->B)));
    if (root) sf_progress_update(&prog, k + 1);
  }
  if (root) sf_progress_clear(&prog);
  /* one more step for the ragged final batch size, if warm-up did not reach it */
  int ragged = t->per % t->B;
  if (ragged && nb < steps) {
    sf_train_batch_step(t, t->order + (size_t)(steps - 1) * t->B, ragged, lr, nb + 1, &o);
    bad += !o.ok;
    sf_trace_collect();
  }
  for (int i = 0; i < nv; i++) {
    double out[4];
    sf_train_load_sample(t, SF_SPLIT_VAL, i, 0);
    sf_graph_eval(t->g, t->x[0], t->lab[0], t->s->class_w, out);
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
  sf_tctx t;
  sf_tctx_init(&t, s);
  double secs = sf_train_run_warmup(&t);
  sf_tctx_free(&t);
  return secs;
}

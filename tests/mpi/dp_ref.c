/* The single-process reference of data-parallel training (tests/mpi/test_dp_equiv.sh): what R
 * replicas of local_batch_size B compute in their first STEPS optimizer steps of epoch 1, in one
 * process. Upstream's DDP step is the mean over replicas of each replica's batch gradient (its CE
 * pooled over its own batch only), then one clip_grad_norm_ + Adam; so here, per step, each
 * replica's batch (its DistributedSampler share, sf_sampler_train_order) goes through the task
 * graph's gradient-only batch step, the host averages the R gradients and applies clip + Adam
 * (scaffold/ops.h), and the result is written as a checkpoint for `mpi_tool ckpt-close`.
 *   dp_ref REPLICAS STEPS OUT.bin -c CONFIG [--set key=value ...]
 * The dataset must exist already (a benchmark run of the same configuration made it); the
 * parameters start from the config's seed as in `scaffold benchmark`, and warm-up is skipped
 * (the benchmark rolls it back). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/graph.h"
#include "scaffold/model.h"
#include "scaffold/ops.h"
#include "scaffold/runtime.h"
#include "scaffold/trainer.h"

/* The batch gradient of replica r at step s, added to sum. */
static void replica_gradient(sf_graph *g, const sf_dataset *d, const float *cw, int R, int r, int s, int B,
                             size_t n, float **x, uint16_t **lab, double *sum)
{
  int per = sf_sampler_per_replica(d->n_train, R);
  int *order = sf_malloc((size_t)per * sizeof *order, "sampler order");
  sf_sampler_train_order(d->n_train, R, r, 1, order);
  int b = per - s * B < B ? per - s * B : B;
  char err[1024];
  for (int k = 0; k < b; k++)
    if (sf_dataset_load(d, SF_SPLIT_TRAIN, order[s * B + k], x[k], lab[k], err, sizeof err) != 0)
      sf_die(SF_EXIT_FAILURE, "dp_ref: %s", err);
  double out[3];
  sf_graph_grad_batch(g, b, (const float *const *)x, (const uint16_t *const *)lab, cw, out);
  sf_graph_acquire_state(g, 0);
  const float *gr = sf_graph_grads(g);
  for (size_t i = 0; i < n; i++) sum[i] += gr[i];
  sf_graph_release_state(g);
  printf("dp_ref: step %d replica %d: %d sample(s) from %d, batch loss %.9g\n", s + 1, r, b, order[s * B], out[2]);
  free(order);
}

/* clip_grad_norm_(SF_CLIP_MAX_NORM) + Adam on the graph's arenas, per tensor as the graph's tasks. */
static void optimizer_step(sf_graph *g, const sf_unet *u, const float *grad, double lr, long step)
{
  double sumsq = 0;
  for (int q = 0; q < u->nparams; q++) {
    double part = 0;
    sf_sumsq_partial(&part, grad + u->params[q].offset, u->params[q].numel);
    sumsq += part;
  }
  float coef = sf_clip_coef(sumsq, SF_CLIP_MAX_NORM);
  sf_graph_acquire_state(g, 1);
  for (int q = 0; q < u->nparams; q++) {
    size_t o = u->params[q].offset;
    sf_adam_step(sf_graph_params(g) + o, sf_graph_adam_m(g) + o, sf_graph_adam_v(g) + o, grad + o,
                 u->params[q].numel, lr, SF_ADAM_BETA1, SF_ADAM_BETA2, SF_ADAM_EPS, step, coef);
  }
  sf_graph_release_state(g);
}

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr, "usage: dp_ref REPLICAS STEPS OUT.bin -c CONFIG [--set key=value ...]\n");
    return 2;
  }
  int R = atoi(argv[1]), steps = atoi(argv[2]);
  const char *out_path = argv[3];
  if (R < 1 || steps < 1) sf_die(SF_EXIT_USAGE, "dp_ref: REPLICAS and STEPS must be >= 1 (got %s, %s)", argv[1], argv[2]);
  sf_config c;
  sf_config_init(&c);
  int verbose = 0;
  if (sf_config_from_cli(&c, argc, argv, 4, &verbose, NULL, NULL) != argc)
    sf_die(SF_EXIT_USAGE, "dp_ref: unexpected arguments after the config options");
  sf_runtime_init(&c);
  sf_dataset d;
  if (sf_dataset_prepare(&c, &d) != 0) sf_die(SF_EXIT_FAILURE, "dp_ref: no dataset for this configuration");
  char err[1024];
  sf_unet u;
  if (sf_unet_build(&u, (int)c.problem_scale, (int)c.unet_bottleneck_dim, (int)c.unet_base_channels,
                    (int)c.n_categories + 1, (int)c.group_norm_groups, err, sizeof err) != 0)
    sf_die(SF_EXIT_USAGE, "dp_ref: model: %s", err);
  size_t n = u.total_params, vox = (size_t)d.grid * d.grid * d.grid;
  float *params = sf_aligned_alloc(n * sizeof(float), "parameters");
  sf_unet_init_params(&u, params, (uint64_t)c.seed);
  float *cw = sf_malloc((size_t)u.n_classes * sizeof *cw, "class weights");
  if (sf_dataset_class_weights(&d, c.ce_weight_sample_fraction, cw, NULL, err, sizeof err) != 0)
    sf_die(SF_EXIT_FAILURE, "dp_ref: class weights: %s", err);
  sf_graph *g = sf_graph_create(&u, &c, params, err, sizeof err);
  if (!g) sf_die(SF_EXIT_USAGE, "dp_ref: task graph: %s", err);

  int B = (int)c.local_batch_size;
  float **x = sf_calloc((size_t)B, sizeof *x, "batch");
  uint16_t **lab = sf_calloc((size_t)B, sizeof *lab, "batch");
  for (int k = 0; k < B; k++) {
    x[k] = sf_aligned_alloc(vox * 3 * sizeof(float), "image");
    lab[k] = sf_aligned_alloc(vox * sizeof(uint16_t), "labels");
  }
  double *sum = sf_malloc(n * sizeof *sum, "gradient sum");
  float *mean = sf_malloc(n * sizeof *mean, "mean gradient");
  double lr = sf_train_lr(&c, 0);
  for (int s = 0; s < steps; s++) {
    memset(sum, 0, n * sizeof *sum);
    for (int r = 0; r < R; r++) replica_gradient(g, &d, cw, R, r, s, B, n, x, lab, sum);
    for (size_t i = 0; i < n; i++) mean[i] = (float)(sum[i] / R);
    optimizer_step(g, &u, mean, lr, s + 1);
  }

  sf_ckpt_state st;
  sf_ckpt_state_init(&st, &u);
  st.global_step = st.total_optimizer_steps = steps;
  st.replicas = R;
  st.spatial_ranks = 1;
  sf_graph_acquire_state(g, 0);
  int rc = sf_checkpoint_write(out_path, &st, sf_graph_params(g), sf_graph_adam_m(g), sf_graph_adam_v(g), err,
                               sizeof err);
  sf_graph_release_state(g);
  if (rc != 0) sf_die(SF_EXIT_FAILURE, "dp_ref: %s", err);
  printf("dp_ref: %d replica(s) x local_batch_size %d, %d step(s) at lr %g -> %s\n", R, B, steps, lr, out_path);

  sf_graph_destroy(g);
  for (int k = 0; k < B; k++) {
    free(x[k]);
    free(lab[k]);
  }
  free(x), free(lab), free(sum), free(mean), free(cw), free(params);
  sf_unet_free(&u);
  sf_dataset_free(&d);
  sf_runtime_shutdown();
  sf_config_free(&c);
  return 0;
}

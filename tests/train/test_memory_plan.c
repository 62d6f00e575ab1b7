/* The memory plan (src/train/memory_plan.c) against figures computed by hand for problem_scale 5,
 * bottleneck 3, base 64, 6 classes (edges 32/16/8, channels 64/128/256), and its response to the
 * rank layout, the batch, more_determinism, the warm-up, async_save and activation_checkpointing;
 * problem_scale 11 (2048^3) must come out far above any machine. The comparison with the measured peak RSS is the script
 * test memory_plan_rss. */
#include <stdio.h>

#include "scaffold/config.h"
#include "scaffold/memory_plan.h"
#include "scaffold/model.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)
#define EQ(got, want, what) SF_CHECK((got) == (want), "%s: %.0f bytes, expected %.0f", what, (double)(got), (double)(want))

static void plan(const sf_unet *u, const sf_config *c, int spatial, int workers, sf_memplan *m)
{
  sf_memplan_layout l = {.spatial = spatial, .replicas = 1, .cpu_workers = workers, .workers = workers};
  sf_memory_plan(u, c, &l, m);
}

int main(void)
{
  sf_unet u;
  char err[256];
  SF_CHECK(sf_unet_build(&u, 5, 3, 64, 6, 8, err, sizeof err) == 0, "unet: %s", err);
  sf_config c;
  sf_config_init(&c);
  c.slabs = 2;
  c.warmup_batches = 0;
  sf_memplan m;
  plan(&u, &c, 1, 1, &m);
  /* bytes per voxel: level 0 (32^3): input 3x4, labels 2, logits 6x4, enc + dec blocks 2 x 4x64x4,
   * concat 2x64x4 = 2598; level 1 (16^3): blocks 2 x 4x128x4, pool 64x4, argmax 64, concat 2x128x4
   * = 5440; level 2 (8^3): block 4x256x4, pool 128x4, argmax 128 = 4736 */
  EQ(m.activations, 2598.0 * 32768 + 5440.0 * 4096 + 4736.0 * 512, "activations");
  /* gradients: level 0: logits 6x4, two buffers 2x64x4, skip 64x4 = 792; level 1: 2x128x4, pool
   * 64x4, skip 128x4 = 1792; level 2: 2x256x4, pool 128x4 = 2560 */
  EQ(m.act_grads, 792.0 * 32768 + 1792.0 * 4096 + 2560.0 * 512, "activation gradients");
  EQ(m.halo, 0.0, "halo planes of one rank");
  const double N = (double)u.total_params * 4;
  EQ(m.params, N, "parameters");
  EQ(m.grads, N, "gradients (1 worker, no partials, batch 1)");
  EQ(m.optimizer, 2 * N, "Adam m and v without warm-up");
  /* batch 1: image 32^3 x 3 x 4 + labels 32^3 x 2, the loader's staging buffer (one channel's run:
   * 32^3 floats) */
  EQ(m.samples, 32768.0 * 14 + 32768.0 * 4, "sample buffers");
  SF_CHECK(m.slabs == 2, "slabs %d, expected 2", m.slabs);
  printf("ps 5 base 64, 1 worker:\n");
  char text[1024];
  sf_memory_plan_format(&m, "  ", text, sizeof text);
  printf("%s\n", text);

  /* more_determinism: every conv/upconv/outconv weight gets one partial per slab (64-byte rounded) */
  sf_config d = c;
  d.more_determinism = 1;
  double part = 0, gn = 0;
  for (int p = 0; p < u.nparams; p++) {
    size_t n = u.params[p].numel;
    if (u.params[p].kind == SF_PARAM_GN_GAMMA || u.params[p].kind == SF_PARAM_GN_BETA) gn += (double)n;
    else part += (double)((n + 15) & ~(size_t)15);
  }
  sf_memplan md;
  plan(&u, &d, 1, 1, &md);
  EQ(md.grads, N + 2 * part * 4, "gradients under more_determinism (2 slabs of partials)");

  /* batch 4: four sample buffers, per-sample GroupNorm gradients, per-sample loss sums */
  sf_config b = c;
  b.local_batch_size = 4;
  sf_memplan mb;
  plan(&u, &b, 1, 1, &mb);
  EQ(mb.samples, 4 * 32768.0 * 14 + 32768.0 * 4, "sample buffers of a batch of 4");
  EQ(mb.grads, N + 4 * gn * 4, "gradients of a batch of 4");
  EQ(mb.activations, m.activations, "activations do not depend on the batch");

  /* warm-up and async_save each snapshot parameters and both moments */
  sf_config w = c;
  w.warmup_batches = 64;
  w.async_save = 1;
  sf_memplan mw;
  plan(&u, &w, 1, 1, &mw);
  EQ(mw.optimizer, 8 * N, "optimizer state with warm-up and async_save snapshots");

  /* two ranks per volume: half the planes each, two boundary planes per halo tensor */
  sf_memplan ms;
  plan(&u, &c, 2, 1, &ms);
  EQ(ms.activations * 2, m.activations, "activations on each of 2 spatial ranks");
  /* two planes per halo tensor (all but labels and argmax): level 0 (32^2 voxels a plane): input 12,
   * logits and their gradient 2 x 24, blocks 2 x 1024, concat 512, gradients 512 + 256 = 3388 bytes;
   * level 1 (16^2): blocks 2 x 2048, pool and its gradient 2 x 256, concat 1024, gradients 1024 +
   * 512 = 7168; level 2 (8^2): block 4096, pool and gradient 2 x 512, gradients 2048 = 7168 */
  EQ(ms.halo, 2 * (3388.0 * 1024 + 7168.0 * 256 + 7168.0 * 64), "halo planes of 2 spatial ranks");
  EQ(ms.grads, 2 * N, "gradients + all-reduce buffer of a 2-rank run");
  /* a spatial shard holds and reads only its 16 of the 32 planes of each sample (shard-local data) */
  EQ(ms.samples * 2, m.samples, "sample buffers on each of 2 spatial ranks");

  /* activation_checkpointing: each level keeps two block buffers (A, B) instead of its encoder
   * block's four and its decoder block's four (level 2, the bottleneck, has no decoder block) */
  sf_config k = c;
  k.activation_checkpointing = 1;
  sf_memplan mk;
  plan(&u, &k, 1, 1, &mk);
  EQ(m.activations - mk.activations, 6 * 64 * 4 * 32768.0 + 6 * 128 * 4 * 4096.0 + 2 * 256 * 4 * 512.0,
     "activations saved by activation_checkpointing");
  /* and the skip gradients live in the encoder blocks' outputs */
  EQ(m.act_grads - mk.act_grads, 64 * 4 * 32768.0 + 128 * 4 * 4096.0,
     "activation gradients saved by activation_checkpointing");

  /* more CPU workers: more scratch */
  sf_memplan m2;
  plan(&u, &c, 1, 2, &m2);
  SF_CHECK(m2.workspace == 2 * m.workspace && m.workspace > 0, "scratch %.0f for 2 workers vs %.0f for 1",
           m2.workspace, m.workspace);
  sf_unet_free(&u);

  /* problem_scale 11, base 64: 2048^3 x 64 channels x 4 bytes is 2 TiB per tensor */
  SF_CHECK(sf_unet_build(&u, 11, 3, 64, 6, 8, err, sizeof err) == 0, "unet ps 11: %s", err);
  sf_config_free(&c);
  sf_config_init(&c);
  plan(&u, &c, 1, 2, &m);
  printf("ps 11 base 64: %.1f TiB per rank\n", m.total / (MIB * MIB));
  SF_CHECK(m.activations > 20.0 * MIB * MIB, "ps 11 activations %.3g bytes, expected > 20 TiB", m.activations);
  sf_unet_free(&u);
  sf_config_free(&c);
  /* H/W blocks [1, 2, 2]: each rank's tensors are a quarter, plus the convs' padded copies
   * (graph_blocks.c), per level and channel count: an input of C channels PADW (e x h x (w+2)), PAD and
   * OUT ((h+2) x (w+2)); an output gradient of C also PAD (its PADW is the input's). Level 0
   * (32 x 16 x 16 blocks): inputs 3 and 128, both sides of 64; level 1 (16 x 8 x 8): inputs 64 and
   * 256, both of 128; level 2 (8 x 4 x 4): input 128, both of 256. */
  {
    SF_CHECK(sf_unet_build(&u, 5, 3, 64, 6, 8, err, sizeof err) == 0, "unet: %s", err);
    sf_config_init(&c);
    c.warmup_batches = 0;
    sf_memplan flat, hw;
    sf_memplan_layout l1 = {.spatial = 1, .shards_h = 1, .shards_w = 1, .grid_depth = 1, .replicas = 1,
                            .cpu_workers = 1, .workers = 1};
    sf_memplan_layout l4 = l1;
    l4.shards_h = l4.shards_w = 2;
    sf_memory_plan(&u, &c, &l1, &flat);
    sf_memory_plan(&u, &c, &l4, &hw);
    double in0 = 32 * 16 * 18 + 2 * 32 * 18 * 18.0, both0 = 32 * 16 * 18 + 3 * 32 * 18 * 18.0;
    double in1 = 16 * 8 * 10 + 2 * 16 * 10 * 10.0, both1 = 16 * 8 * 10 + 3 * 16 * 10 * 10.0;
    double in2 = 8 * 4 * 6 + 2 * 8 * 6 * 6.0, both2 = 8 * 4 * 6 + 3 * 8 * 6 * 6.0;
    double pads = 4.0 * (in0 * (3 + 128) + both0 * 64 + in1 * (64 + 256) + both1 * 128 + in2 * 128 + both2 * 256);
    EQ(hw.activations, flat.activations / 4, "H/W blocks [1,2,2]: a quarter of the activations");
    EQ(hw.pad_copies, pads, "H/W blocks [1,2,2]: the padded conv copies");
    EQ(flat.pad_copies, 0, "no H/W blocks: no padded copies");
    EQ(hw.slabs, 1, "H/W blocks: one depth slab per depth shard");
    sf_unet_free(&u);
    sf_config_free(&c);
  }
  return sf_test_end();
}

/* The shard-grid refusals of sf_graph_check_config (src/train/graph.c), which the MPI tests reach only
 * with as many ranks as the grid has: at ps 4 with a 1-level U-Net (bottleneck edge 8) a grid finer
 * than 8 must be a power of two up to the input edge 16 (the bottleneck then merges blocks; 12 or 32
 * are refused), spatial_ranks
 * together with dc_num_shards is ambiguous, a grid whose product is not the ranks per volume is
 * refused, and dc_shard_dims places the counts ([2, 1, 1] along dims [3, 2, 4] is 2 row blocks). Each
 * refusal names the key and what was expected. */
#include <stdio.h>
#include <string.h>

#include "scaffold/config.h"
#include "scaffold/graph.h"
#include "scaffold/model.h"
#include "testutil.h"

static void expect(const sf_unet *u, const sf_config *c, int spatial, const char *key, const char *words)
{
  const char *got = NULL;
  char err[512] = "";
  int rc = sf_graph_check_config(u, c, spatial, &got, err, sizeof err);
  if (!key) {
    SF_CHECK(rc == 0, "grid [%ld, %ld, %ld] on %d ranks per volume refused: %s", c->dc_num_shards[0],
             c->dc_num_shards[1], c->dc_num_shards[2], spatial, err);
    return;
  }
  SF_CHECK(rc != 0 && got && !strcmp(got, key) && strstr(err, words),
           "grid [%ld, %ld, %ld] x spatial_ranks %ld on %d ranks: rc %d, key '%s', message '%s'; expected key '%s' "
           "and '%s'", c->dc_num_shards[0], c->dc_num_shards[1], c->dc_num_shards[2], c->spatial_ranks, spatial, rc,
           got ? got : "(none)", err, key, words);
  printf("refused: config key '%s': %s\n", got ? got : "?", err);
}

static void grid(sf_config *c, long d, long h, long w, long spatial_ranks)
{
  c->dc_num_shards[0] = d;
  c->dc_num_shards[1] = h;
  c->dc_num_shards[2] = w;
  c->spatial_ranks = spatial_ranks;
}

int main(void)
{
  sf_unet u;
  char err[256];
  if (sf_unet_build(&u, 4, 3, 8, 4, 8, err, sizeof err) != 0) {
    fprintf(stderr, "FAIL sf_unet_build: %s\n", err);
    return 1;
  }
  SF_CHECK(u.edge[u.levels] == 8, "bottleneck edge %d, the test assumes 8", u.edge[u.levels]);
  sf_config c;
  sf_config_init(&c);
  grid(&c, 1, 2, 2, 1);
  expect(&u, &c, 4, NULL, NULL);
  int g[3];
  sf_config_shard_grid(&c, g);
  SF_CHECK(g[0] == 1 && g[1] == 2 && g[2] == 2 && sf_config_spatial(&c) == 4, "grid %d x %d x %d", g[0], g[1], g[2]);
  grid(&c, 1, 16, 1, 1); /* finer than the bottleneck edge 8: merged at the bottleneck, accepted */
  expect(&u, &c, 16, NULL, NULL);
  grid(&c, 1, 32, 1, 1);
  expect(&u, &c, 32, "dc_num_shards", "32 shards along the rows; expected 1..8, or a power of two up to 16");
  grid(&c, 1, 12, 1, 1);
  expect(&u, &c, 12, "dc_num_shards", "12 shards along the rows; expected 1..8, or a power of two up to 16");
  grid(&c, 1, 1, 2, 2);
  expect(&u, &c, 4, "dc_num_shards", "spatial_ranks is the depth-only shorthand");
  grid(&c, 2, 2, 1, 1);
  expect(&u, &c, 8, "dc_num_shards", "a grid of 2 x 2 x 1 shards, but the distribution layout has 8 ranks per volume");
  grid(&c, 1, 1, 1, 16);
  expect(&u, &c, 16, NULL, NULL);
  grid(&c, 1, 1, 1, 32);
  expect(&u, &c, 32, "spatial_ranks", "32 shards along the depth");
  c.dc_shard_dims[0] = 3; /* [2, 1, 1] along dims [3, 2, 4]: 2 row blocks */
  c.dc_shard_dims[1] = 2;
  grid(&c, 2, 1, 1, 1);
  sf_config_shard_grid(&c, g);
  SF_CHECK(g[0] == 1 && g[1] == 2 && g[2] == 1, "dc_shard_dims [3, 2, 4] with [2, 1, 1]: grid %d x %d x %d, expected "
           "1 x 2 x 1", g[0], g[1], g[2]);
  sf_config_free(&c);
  sf_unet_free(&u);
  return sf_test_end();
}

/* Every shipped configs/<name>.yml loads strictly; benchmark_default.yml sets every upstream YAML key and
 * every key of ours to exactly the compiled-in default; quick.yml and tiny.yml hold the problems
 * the README and CI rely on. A file that fails to load exits 2 with the loader's message. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

/* Keys benchmark_default.yml does not set: upstream accepts them but its YAML lacks them
 * (spec §1.3), and the derived ones. */
static const char *const not_in_default_yml[] = {"job_name", "async_save", "dist", "scale",
                                                 "datagen_batch_size", "unet_layers", "vol_size",
                                                 "point_num"};

static int listed(const char *name)
{
  for (size_t i = 0; i < sizeof not_in_default_yml / sizeof *not_in_default_yml; i++)
    if (!strcmp(name, not_in_default_yml[i])) return 1;
  return 0;
}

static void load(sf_config *c, const char *path)
{
  sf_config_init(c);
  sf_config_load_file(c, path);
  sf_config_finalize(c);
}

int main(void)
{
  const char *src = getenv("SF_SOURCE_DIR");
  if (!src) src = SF_SOURCE_DIR;
  char *cfgdir = sf_path_join(src, "configs");
  DIR *d = opendir(cfgdir);
  SF_CHECK(d != NULL, "cannot open %s", cfgdir);
  int n = 0, seen_default = 0, seen_quick = 0, seen_tiny = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".yml")) continue;
    char *path = sf_path_join(cfgdir, e->d_name);
    sf_config c;
    load(&c, path);
    printf("loaded %s (problem_scale %ld, %ld U-Net levels)\n", path, c.problem_scale, c.unet_layers);
    seen_default |= !strcmp(e->d_name, "benchmark_default.yml");
    seen_quick |= !strcmp(e->d_name, "quick.yml");
    seen_tiny |= !strcmp(e->d_name, "tiny.yml");
    sf_config_free(&c);
    free(path);
    n++;
  }
  if (d) closedir(d);
  SF_CHECK(seen_default && seen_quick && seen_tiny,
           "missing shipped config(s): benchmark_default %d quick %d tiny %d", seen_default, seen_quick,
           seen_tiny);

  /* benchmark_default.yml == the defaults, and it sets every key except the listed ones. */
  char *p = sf_path_join(cfgdir, "benchmark_default.yml");
  sf_config def, yml;
  sf_config_init(&def);
  sf_config_finalize(&def);
  load(&yml, p);
  int nd = sf_config_compare(&def, &yml, stderr);
  SF_CHECK(nd == 0, "%d key(s) of %s differ from the compiled-in defaults (listed above)", nd, p);
  for (int k = 0; k < sf_config_nkeys(); k++) {
    const char *name = sf_config_key_name(k);
    sf_origin o = sf_config_origin_of(&yml, name);
    if (listed(name))
      SF_CHECK(o == SF_ORIGIN_DEFAULT, "%s sets '%s', which upstream's YAML does not have", p, name);
    else
      SF_CHECK(o == SF_ORIGIN_FILE, "%s does not set '%s'", p, name);
  }
  sf_config_free(&def);
  sf_config_free(&yml);
  free(p);

  /* quick.yml: the README job (docs/architecture.md §4). */
  sf_config q;
  p = sf_path_join(cfgdir, "quick.yml");
  load(&q, p);
  SF_CHECK(q.problem_scale == 5 && q.unet_bottleneck_dim == 3 && q.unet_base_channels == 16 &&
               q.n_categories == 5 && q.epochs == 20 && q.checkpoint_interval == 1 && q.torch_amp == 0 &&
               q.warmup_batches == 0,
           "%s: ps %ld b %ld base %ld ncat %ld epochs %ld ckpt %ld amp %ld warmup %ld; want 5 3 16 5 20 1 0 0",
           p, q.problem_scale, q.unet_bottleneck_dim, q.unet_base_channels, q.n_categories, q.epochs,
           q.checkpoint_interval, q.torch_amp, q.warmup_batches);
  SF_CHECK(!strcmp(q.fract_base_dir, "fractals") && !strcmp(q.dataset_dir, "datasets") &&
               !strcmp(q.base_run_dir, "benchmark_runs"),
           "%s: directories %s %s %s, want the defaults", p, q.fract_base_dir, q.dataset_dir, q.base_run_dir);
  sf_config_free(&q);
  free(p);

  /* tiny.yml: the CI convergence problem. */
  sf_config t;
  p = sf_path_join(cfgdir, "tiny.yml");
  load(&t, p);
  SF_CHECK(t.problem_scale == 4 && t.unet_base_channels == 8 && t.n_categories == 3 && t.epochs == 30 &&
               t.torch_amp == 0 && t.warmup_batches == 0 && t.unet_layers >= 1,
           "%s: ps %ld base %ld ncat %ld epochs %ld amp %ld warmup %ld layers %ld; want 4 8 3 30 0 0 >=1", p,
           t.problem_scale, t.unet_base_channels, t.n_categories, t.epochs, t.torch_amp, t.warmup_batches,
           t.unet_layers);
  sf_config_free(&t);
  free(p);

  printf("%d shipped config(s) loaded\n", n);
  free(cfgdir);
  return sf_test_end();
}

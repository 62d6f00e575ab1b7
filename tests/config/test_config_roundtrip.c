/* Round trip: configs/quick.yml plus overrides of every value type (strings that need escaping,
 * doubles that need 17 digits or are subnormal, a list, flags) -> sf_config_write_yaml -> reload ->
 * every key compares equal (doubles bitwise). Also: overrides.yaml holds exactly the override keys
 * and, loaded over quick.yml, gives the same configuration again. */
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/config.h"
#include "scaffold/fsutil.h"
#include "testutil.h"

static const char *const overrides[] = {
  "job_name=\"quote \\\" backslash \\\\ newline \\n tab \\t bell \\x07 caf\u00e9 \u2603 colon: hash #x\"",
  "base_run_dir='/tmp/a dir: with # signs'",
  "optimizer=SGD",
  "scheduler=dmda",
  "starting_learning_rate=0.30000000000000004",
  "min_learning_rate=1e-7",
  "val_split=33.333333333333336",
  "normalize=5e-324",
  "dc_num_shards=[1, 2, 1]",
  "dc_shard_dims=[4, 2, 3]",
  "trace=yes",
  "more_determinism=true",
  "seed=7",
  "ncpu=2",
};
#define NOV ((int)(sizeof overrides / sizeof overrides[0]))

static void load(sf_config *c, const char *src, const char *extra_file, int with_overrides)
{
  char *quick = sf_path_join(src, "configs/quick.yml");
  sf_config_init(c);
  sf_config_load_file(c, quick);
  if (extra_file) sf_config_load_file(c, extra_file);
  for (int i = 0; with_overrides && i < NOV; i++) sf_config_apply_override(c, overrides[i]);
  sf_config_finalize(c);
  free(quick);
}

static void check_value(const sf_config *c, const char *key, const char *want)
{
  char *got = sf_config_value_string(c, key);
  SF_CHECK(got && !strcmp(got, want), "%s written as %s, expected %s", key, got ? got : "(null)", want);
  free(got);
}

int main(void)
{
  const char *src = getenv("SF_SOURCE_DIR");
  if (!src) src = SF_SOURCE_DIR;
  char *dir = sf_test_tmpdir("config_roundtrip");
  char *full = sf_path_join(dir, "config.yaml"), *ovp = sf_path_join(dir, "overrides.yaml");

  sf_config a, b, o;
  load(&a, src, NULL, 1);
  SF_CHECK(a.problem_scale == 5 && a.unet_layers == 2 && a.vol_size == 32 && a.point_num == 128,
           "quick.yml derived keys: ps %ld layers %ld vol %ld points %ld (want 5 2 32 128)",
           a.problem_scale, a.unet_layers, a.vol_size, a.point_num);
  SF_CHECK(a.normalize > 0 && a.normalize < 1e-320, "normalize = %g, want the smallest subnormal", a.normalize);
  SF_CHECK(strstr(a.job_name, "\u2603") && strchr(a.job_name, '\n') && strchr(a.job_name, '\a'),
           "job_name lost characters: '%s'", a.job_name);
  check_value(&a, "starting_learning_rate", "0.30000000000000004");
  check_value(&a, "min_learning_rate", "1.0e-07");
  check_value(&a, "target_dice", "0.95");
  check_value(&a, "dc_num_shards", "[1, 2, 1]");
  check_value(&a, "trace", "1");
  SF_CHECK(sf_config_write_yaml(&a, full) == 0, "writing %s failed", full);

  /* Reload the full config on defaults: every key must compare equal. */
  sf_config_init(&b);
  sf_config_load_file(&b, full);
  sf_config_finalize(&b);
  int nd = sf_config_compare(&a, &b, stderr);
  SF_CHECK(nd == 0, "%d key(s) differ after write + reload of %s (listed above)", nd, full);
  for (int k = 0; k < sf_config_nkeys(); k++) {
    const char *name = sf_config_key_name(k);
    char *o1 = sf_config_origin_string(&b, name);
    int derived = !strcmp(o1, "derived");
    SF_CHECK(derived || sf_config_origin_of(&b, name) == SF_ORIGIN_FILE,
             "%s: origin after reload is '%s', expected %s:LINE", name, o1, full);
    free(o1);
  }

  /* overrides.yaml: exactly the overridden keys; quick.yml + it = the same config. */
  SF_CHECK(sf_config_write_overrides_yaml(&a, ovp) == 0, "writing %s failed", ovp);
  load(&o, src, ovp, 0);
  nd = sf_config_compare(&a, &o, stderr);
  SF_CHECK(nd == 0, "%d key(s) differ between quick.yml + --set and quick.yml + %s", nd, ovp);
  int from_ov = 0;
  for (int k = 0; k < sf_config_nkeys(); k++) {
    char *o1 = sf_config_origin_string(&o, sf_config_key_name(k));
    from_ov += !strncmp(o1, ovp, strlen(ovp));
    free(o1);
  }
  SF_CHECK(from_ov == NOV, "%s sets %d keys, expected the %d overridden ones", ovp, from_ov, NOV);

  /* No overrides: overrides.yaml is an empty mapping that still loads. */
  sf_config d;
  load(&d, src, NULL, 0);
  SF_CHECK(sf_config_write_overrides_yaml(&d, ovp) == 0, "writing %s failed", ovp);
  sf_config e;
  load(&e, src, ovp, 0);
  nd = sf_config_compare(&d, &e, stderr);
  SF_CHECK(nd == 0, "%d key(s) differ after loading an empty overrides.yaml", nd);

  sf_config_free(&a);
  sf_config_free(&b);
  sf_config_free(&o);
  sf_config_free(&d);
  sf_config_free(&e);
  sf_rm_rf(dir);
  free(dir);
  free(full);
  free(ovp);
  return sf_test_end();
}

/* The volume plan against spec Appendix C (seed 42): class colours, the first rows of
 * volumes_contents.csv, the first validation indices for val_split 25 and 30, distinct categories
 * per volume, and the default counts (240 volumes; 168/72 at val_split 30; 180/60 at 25). Also the
 * 145 -> 144 rounding, balanced classes above 145 instances, and the CE weight rule on counts.
 * Also SHA-256 (the cache's config_id) on FIPS 180-2 vectors. Pure functions only: no files, no
 * StarPU. */
#include <math.h>
#include <string.h>

#include "scaffold/dataset.h"
#include "scaffold/sha256.h"
#include "testutil.h"

static sf_volume_plan make(long seed, long ncat, long ninst, long nfpv, double val, int *rounded)
{
  sf_volume_plan p;
  char err[256];
  int rc = sf_volume_plan_make(&p, seed, ncat, ninst, nfpv, val, rounded, err, sizeof err);
  SF_CHECK(rc == 0, "sf_volume_plan_make failed: %s", err);
  return p;
}

static void test_appendix_c(void)
{
  static const double colours[5][3] = {{0.37454012, 0.95071431, 0.73199394},
                                       {0.59865848, 0.15601864, 0.15599452},
                                       {0.05808361, 0.86617615, 0.60111501},
                                       {0.70807258, 0.02058449, 0.96990985},
                                       {0.83244264, 0.21233911, 0.18182497}};
  static const int64_t rows[5][7] = {{0, 2, 50, 2, 116, 0, 79},
                                     {1, 1, 120, 3, 101, 0, 105},
                                     {2, 0, 94, 1, 116, 2, 108},
                                     {3, 2, 32, 4, 112, 3, 51},
                                     {4, 0, 12, 0, 132, 2, 132}};
  static const int val25[12] = {1, 6, 7, 8, 11, 20, 22, 23, 24, 26, 28, 31};
  static const int val30[12] = {1, 6, 7, 8, 11, 17, 20, 22, 23, 24, 26, 28};
  int rounded = 0;
  sf_volume_plan p = make(42, 5, 145, 3, 30, &rounded);
  SF_CHECK(rounded == 1, "145 instances with 3 per volume must be flagged as rounded (got %d)", rounded);
  SF_CHECK(p.n_inst == 144, "n_inst: got %d, want 144", p.n_inst);
  SF_CHECK(p.num_volumes == 240, "num_volumes: got %d, want 240", p.num_volumes);
  SF_CHECK(p.n_train == 168 && p.n_val == 72, "val_split 30: got %d train / %d val, want 168/72", p.n_train, p.n_val);
  for (int c = 0; c < 5; c++)
    for (int k = 0; k < 3; k++)
      SF_CHECK(fabs(p.colours[3 * c + k] - colours[c][k]) < 5e-9, "colour[%d][%d]: got %.10f, want %.8f (diff %.3g)", c,
               k, p.colours[3 * c + k], colours[c][k], p.colours[3 * c + k] - colours[c][k]);
  for (int r = 0; r < 5; r++)
    for (int k = 0; k < 7; k++)
      SF_CHECK(p.contents[r * 7 + k] == rows[r][k], "volumes_contents[%d][%d]: got %lld, want %lld", r, k,
               (long long)p.contents[r * 7 + k], (long long)rows[r][k]);
  for (int i = 0; i < 12; i++)
    SF_CHECK(p.val_ids[i] == val30[i], "val_split 30 val index #%d: got %d, want %d", i, p.val_ids[i], val30[i]);
  int hist[4] = {0, 0, 0, 0};
  for (int v = 0; v < p.num_volumes; v++) hist[sf_volume_plan_distinct(&p, v)]++;
  SF_CHECK(hist[3] == 121 && hist[2] == 107 && hist[1] == 12,
           "distinct categories per volume: got 3->%d 2->%d 1->%d, want 121/107/12", hist[3], hist[2], hist[1]);
  /* every category exactly 144 times */
  int per_cat[5] = {0};
  for (int v = 0; v < p.num_volumes; v++)
    for (int f = 0; f < 3; f++) per_cat[p.contents[v * 7 + 1 + 2 * f]]++;
  for (int c = 0; c < 5; c++) SF_CHECK(per_cat[c] == 144, "category %d appears %d times, want 144", c, per_cat[c]);
  sf_volume_plan_free(&p);

  p = make(42, 5, 145, 3, 25, NULL);
  SF_CHECK(p.n_train == 180 && p.n_val == 60, "val_split 25: got %d train / %d val, want 180/60", p.n_train, p.n_val);
  for (int i = 0; i < 12; i++)
    SF_CHECK(p.val_ids[i] == val25[i], "val_split 25 val index #%d: got %d, want %d", i, p.val_ids[i], val25[i]);
  /* train and val partition the volumes */
  int seen[240] = {0};
  for (int i = 0; i < p.n_train; i++) seen[p.train_ids[i]]++;
  for (int i = 0; i < p.n_val; i++) seen[p.val_ids[i]]++;
  int bad = 0;
  for (int v = 0; v < 240; v++) bad += seen[v] != 1;
  SF_CHECK(bad == 0, "%d volumes are not in exactly one split", bad);
  sf_volume_plan_free(&p);
}

static void test_sizes(void)
{
  int rounded = 1;
  sf_volume_plan p = make(7, 3, 300, 3, 30, &rounded); /* > 145: batches of 145 + 145 + 10 */
  SF_CHECK(rounded == 0, "300 is a multiple of 3, not rounded (flag %d)", rounded);
  SF_CHECK(p.num_volumes == 300, "3 classes x 300 / 3 per volume: got %d volumes, want 300", p.num_volumes);
  int per_cat[3] = {0}, range_bad = 0;
  for (int v = 0; v < p.num_volumes; v++)
    for (int f = 0; f < 3; f++) {
      per_cat[p.contents[v * 7 + 1 + 2 * f]]++;
      int64_t inst = p.contents[v * 7 + 2 + 2 * f];
      range_bad += inst < 0 || inst >= 145;
    }
  for (int c = 0; c < 3; c++) SF_CHECK(per_cat[c] == 300, "category %d appears %d times, want 300", c, per_cat[c]);
  SF_CHECK(range_bad == 0, "%d instance indices outside [0, 145)", range_bad);
  sf_volume_plan_free(&p);

  sf_volume_plan q;
  char err[256] = "";
  SF_CHECK(sf_volume_plan_make(&q, 42, 5, 2, 3, 30, NULL, err, sizeof err) != 0, "2 instances with 3 per volume must fail");
  SF_CHECK(strstr(err, "n_instances_used_per_fractal") != NULL, "error should name the key: '%s'", err);
  SF_CHECK(sf_volume_plan_make(&q, -1, 5, 145, 3, 30, NULL, err, sizeof err) != 0, "negative seed must fail");
}

static void test_class_weights(void)
{
  /* hand-made counts: bg 900, fg 60+40 = 100 -> w0 = 1000/900, wfg = 1000/100 */
  uint64_t c1[4] = {900, 60, 0, 40};
  float w[4];
  sf_ce_class_weights_from_counts(c1, 4, w);
  SF_CHECK(w[0] == (float)(1000.0 / 900.0), "w0: got %.9g, want %.9g", w[0], (float)(1000.0 / 900.0));
  for (int k = 1; k < 4; k++) SF_CHECK(w[k] == 10.0f, "w[%d]: got %.9g, want 10 (one shared fg weight)", k, w[k]);
  uint64_t c2[3] = {100, 0, 0}, c3[3] = {0, 5, 5};
  sf_ce_class_weights_from_counts(c2, 3, w);
  SF_CHECK(w[0] == 1.0f && w[1] == 1.0f && w[2] == 1.0f, "no foreground: got %g %g %g, want all 1", w[0], w[1], w[2]);
  sf_ce_class_weights_from_counts(c3, 3, w);
  SF_CHECK(w[0] == 1.0f && w[1] == 1.0f && w[2] == 1.0f, "no background: got %g %g %g, want all 1", w[0], w[1], w[2]);

  /* sample indices: 168 train, fraction 0.1 -> 17 masks, linspace(0, 167, 17) = 0, 10.4375, ... */
  int idx[400];
  int n = sf_ce_weight_sample_indices(168, 0.1, idx);
  SF_CHECK(n == 17, "count for 168 at 0.1: got %d, want 17", n);
  for (int i = 0; i < n; i++) {
    int want = (int)(i * 10.4375);
    SF_CHECK(idx[i] == want, "idx[%d]: got %d, want %d", i, idx[i], want);
  }
  n = sf_ce_weight_sample_indices(5, 0.1, idx);
  SF_CHECK(n == 1 && idx[0] == 0, "5 train at 0.1: got count %d idx0 %d, want 1 and 0", n, idx[0]);
  n = sf_ce_weight_sample_indices(3, 1.0, idx);
  SF_CHECK(n == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 2, "fraction 1 must take every index (count %d)", n);
  SF_CHECK(sf_ce_weight_sample_indices(0, 0.1, idx) == 0, "no training samples -> count 0");
}

static void test_sha256(void)
{
  static const struct {
    const char *msg, *hex;
  } v[] = {{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
           {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
           {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"}};
  for (int i = 0; i < 3; i++) {
    char hex[65];
    sf_sha256_hex(v[i].msg, strlen(v[i].msg), hex);
    SF_CHECK(!strcmp(hex, v[i].hex), "sha256(\"%s\") = %s, want %s", v[i].msg, hex, v[i].hex);
  }
  /* one million 'a' fed in uneven pieces (multi-block, streaming) */
  sf_sha256_ctx c;
  unsigned char d[32];
  char a[997];
  memset(a, 'a', sizeof a);
  sf_sha256_init(&c);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof a ? left : sizeof a;
    sf_sha256_update(&c, a, n);
    left -= n;
  }
  sf_sha256_final(&c, d);
  static const unsigned char want[4] = {0xcd, 0xc7, 0x6e, 0x5c};
  SF_CHECK(!memcmp(d, want, 4), "sha256(1e6 x 'a') starts %02x%02x%02x%02x, want cdc76e5c", d[0], d[1], d[2], d[3]);
}

int main(void)
{
  test_sha256();
  test_appendix_c();
  test_sizes();
  test_class_weights();
  return sf_test_end();
}

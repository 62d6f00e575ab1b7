/* Unit tests of the training support code (no StarPU): the samplers' DistributedSampler
 * semantics, the checkpoint format (round trip, a flipped byte, truncation, a wrong topology),
 * train_stats.csv rows in Python str() form, truncation on resume, and the lr schedule hook-up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/model.h"
#include "scaffold/trainer.h"
#include "testutil.h"

static void test_sampler(void)
{
  /* training: a permutation per epoch, deterministic, different between epochs */
  int n = 37, a[64], b[64], c[64];
  SF_CHECK(sf_sampler_train_order(n, 1, 0, 3, a) == n, "one replica takes all %d samples", n);
  sf_sampler_train_order(n, 1, 0, 3, b);
  sf_sampler_train_order(n, 1, 0, 4, c);
  int seen[64] = {0}, same = 1, diff = 0;
  for (int i = 0; i < n; i++) {
    SF_CHECK(a[i] >= 0 && a[i] < n, "index %d out of range at %d", a[i], i);
    if (a[i] >= 0 && a[i] < n) seen[a[i]]++;
    same &= a[i] == b[i];
    diff += a[i] != c[i];
  }
  for (int i = 0; i < n; i++) SF_CHECK(seen[i] == 1, "sample %d appears %d times in the epoch-3 order", i, seen[i]);
  SF_CHECK(same, "the epoch-3 order is not reproducible");
  SF_CHECK(diff > n / 2, "epochs 3 and 4 share %d of %d positions (reseeding per epoch expected)", n - diff, n);

  /* padding to ceil(n/R)*R by repeating the head, strided by rank */
  int R = 4, per = sf_sampler_per_replica(n, R), full[64], parts[4][16];
  SF_CHECK(per == 10, "per-replica count %d, expected ceil(37/4) = 10", per);
  sf_sampler_train_order(n, 1, 0, 5, full);
  for (int r = 0; r < R; r++) SF_CHECK(sf_sampler_train_order(n, R, r, 5, parts[r]) == per, "rank %d count", r);
  for (int i = 0; i < per * R; i++) {
    int want = full[i < n ? i : i - n];
    SF_CHECK(parts[i % R][i / R] == want, "padded position %d: rank %d has %d, expected %d", i, i % R,
             parts[i % R][i / R], want);
  }
  SF_CHECK(sf_sampler_steps(n, 1, 1) == 37 && sf_sampler_steps(n, 1, 4) == 10 && sf_sampler_steps(n, 4, 3) == 4,
           "steps per epoch: %d %d %d", sf_sampler_steps(n, 1, 1), sf_sampler_steps(n, 1, 4),
           sf_sampler_steps(n, 4, 3));

  /* validation: contiguous, unpadded, first n mod R replicas get one more; a replica may get none */
  int next = 0;
  for (int r = 0; r < 4; r++) {
    int s, k;
    sf_sampler_val_range(10, 4, r, &s, &k);
    SF_CHECK(s == next && k == (r < 2 ? 3 : 2), "val rank %d: start %d count %d (expected %d, %d)", r, s, k, next,
             r < 2 ? 3 : 2);
    next = s + k;
  }
  int s, k;
  sf_sampler_val_range(2, 3, 2, &s, &k);
  SF_CHECK(k == 0 && s == 2, "val with more replicas than samples: rank 2 got start %d count %d", s, k);
}

static void fill(float *x, size_t n, float base)
{
  for (size_t i = 0; i < n; i++) x[i] = base + (float)i * 0.001f;
}

static void test_checkpoint(const char *dir)
{
  sf_unet u, u2;
  char err[2048];
  SF_CHECK(sf_unet_build(&u, 4, 3, 8, 4, 8, err, sizeof err) == 0, "build: %s", err);
  SF_CHECK(sf_unet_build(&u2, 4, 3, 16, 4, 8, err, sizeof err) == 0, "build: %s", err);
  size_t n = u.total_params;
  float *p = sf_malloc(n * 4, "p"), *m = sf_malloc(n * 4, "m"), *v = sf_malloc(n * 4, "v");
  float *p2 = sf_malloc(n * 4, "p"), *m2 = sf_malloc(n * 4, "m"), *v2 = sf_malloc(n * 4, "v");
  fill(p, n, 1), fill(m, n, 2), fill(v, n, 3);
  sf_ckpt_state st, back;
  sf_ckpt_state_init(&st, &u);
  st.epoch = 7;
  st.val_dice = 0.8125;
  st.val_loss_avg = 0.3;
  st.best_val_loss = 0.25;
  st.global_step = 700;
  st.total_optimizer_steps = 700;
  st.sched_steps = 7;
  st.partial_epoch = 8;
  st.partial_steps = 13;
  st.partial_loss = 1.5;
  snprintf(st.optimizer, sizeof st.optimizer, "RMSProp");
  char *path = sf_path_join(dir, "ck.bin");
  SF_CHECK(sf_checkpoint_write(path, &st, p, m, v, err, sizeof err) == 0, "write: %s", err);
  sf_ckpt_topology want;
  sf_ckpt_topology_of(&u, &want);
  sf_ckpt_status cs = sf_checkpoint_read(path, &want, &back, p2, m2, v2, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_OK, "read back: status %d: %s", cs, err);
  SF_CHECK(back.epoch == 7 && back.global_step == 700 && back.sched_steps == 7 && back.partial_epoch == 8 &&
               back.partial_steps == 13 && back.val_dice == 0.8125 && back.best_val_loss == 0.25 &&
               back.partial_loss == 1.5,
           "state round trip: epoch %ld step %ld sched %ld partial %ld/%ld dice %g best %g", back.epoch,
           back.global_step, back.sched_steps, back.partial_epoch, back.partial_steps, back.val_dice,
           back.best_val_loss);
  sf_check_bitwise_f("params", p2, p, n);
  sf_check_bitwise_f("adam m", m2, m, n);
  sf_check_bitwise_f("adam v", v2, v, n);
  SF_CHECK(!strcmp(back.optimizer, "RMSProp"), "optimizer round trip: '%s', expected 'RMSProp'", back.optimizer);
  /* a file from before the optimizer field (zeros there) reads as ADAM, the only optimizer then */
  {
    sf_ckpt_state old = st;
    memset(old.optimizer, 0, sizeof old.optimizer);
    char *opath = sf_path_join(dir, "ck_old.bin");
    SF_CHECK(sf_checkpoint_write(opath, &old, p, m, v, err, sizeof err) == 0, "write: %s", err);
    cs = sf_checkpoint_read(opath, &want, &back, p2, m2, v2, err, sizeof err);
    SF_CHECK(cs == SF_CKPT_OK && !strcmp(back.optimizer, "ADAM"),
             "checkpoint without an optimizer name: status %d, optimizer '%s', expected ADAM", cs, back.optimizer);
    free(opath);
  }

  /* a flipped byte in the middle of the parameters */
  size_t len;
  char *bytes = sf_read_file(path, &len);
  SF_CHECK(len == 256 + 12 * n + 8, "file size %zu, expected %zu", len, 256 + 12 * n + 8);
  bytes[256 + 4 * (n / 2)] ^= 0x10;
  char *bad = sf_path_join(dir, "flipped.bin");
  sf_write_file_atomic(bad, bytes, len);
  cs = sf_checkpoint_read(bad, &want, &back, p2, m2, v2, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_CORRUPT && strstr(err, "flipped.bin") && strstr(err, "checksum"),
           "flipped byte: status %d, message '%s'", cs, err);
  bytes[256 + 4 * (n / 2)] ^= 0x10;

  /* truncated */
  char *trunc = sf_path_join(dir, "trunc.bin");
  sf_write_file_atomic(trunc, bytes, len - 1000);
  cs = sf_checkpoint_read(trunc, &want, &back, p2, m2, v2, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_CORRUPT && strstr(err, "trunc.bin") && strstr(err, "truncated"),
           "truncated: status %d, message '%s'", cs, err);
  sf_write_file_atomic(trunc, bytes, 100);
  cs = sf_checkpoint_read(trunc, &want, &back, p2, m2, v2, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_CORRUPT && strstr(err, "trunc.bin"), "truncated header: status %d, message '%s'", cs, err);

  /* not a checkpoint */
  sf_write_file_atomic(trunc, "hello world, this is not a checkpoint", 37);
  cs = sf_checkpoint_read(trunc, &want, &back, NULL, NULL, NULL, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_CORRUPT && strstr(err, "magic"), "bad magic: status %d, message '%s'", cs, err);

  /* another topology is refused (after the checksum passed) */
  sf_ckpt_topology other;
  sf_ckpt_topology_of(&u2, &other);
  cs = sf_checkpoint_read(path, &other, &back, NULL, NULL, NULL, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_MISMATCH && strstr(err, "another network") && strstr(err, "base channels 8"),
           "topology mismatch: status %d, message '%s'", cs, err);

  /* a future format version */
  bytes[8] = 9;
  sf_write_file_atomic(trunc, bytes, len);
  cs = sf_checkpoint_read(trunc, &want, &back, NULL, NULL, NULL, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_MISMATCH && strstr(err, "format version 9"), "version: status %d, message '%s'", cs, err);

  char *missing = sf_path_join(dir, "none.bin");
  cs = sf_checkpoint_read(missing, &want, &back, NULL, NULL, NULL, err, sizeof err);
  SF_CHECK(cs == SF_CKPT_MISSING, "missing file: status %d", cs);
  free(missing);
  free(bytes);
  free(bad);
  free(trunc);
  free(path);
  free(p), free(m), free(v), free(p2), free(m2), free(v2);
  sf_unet_free(&u);
  sf_unet_free(&u2);
}

static void test_csv(const char *dir)
{
  sf_epoch_row r = {.epoch = 3, .epoch_loss = 12.5, .overall_loss = 0.1, .val_loss_epoch = 1.0 / 3,
                    .val_loss_avg = 2.0, .train_dice = 1e-5, .val_dice = 0.95, .epoch_duration = 61.25,
                    .optimizer_steps = 168, .total_optimizer_steps = 504};
  char line[1024];
  sf_epoch_row_format(&r, line, sizeof line);
  const char *want = "3,12.5,0.1,0.3333333333333333,2.0,1e-05,0.95,61.25,168,504";
  SF_CHECK(!strcmp(line, want), "row formatted as '%s', expected Python str() form '%s'", line, want);
  sf_epoch_row back;
  SF_CHECK(sf_epoch_row_parse(line, &back) == 0 && back.val_loss_epoch == r.val_loss_epoch &&
               back.total_optimizer_steps == 504,
           "row parse round trip");
  SF_CHECK(sf_epoch_row_parse("1,2,3", &back) != 0, "a short row must not parse");

  char *csv = sf_path_join(dir, "train_stats.csv"), err[2048];
  SF_CHECK(sf_stats_csv_create(csv) == 0, "create");
  for (long e = 1; e <= 5; e++) {
    r.epoch = e;
    r.total_optimizer_steps = 168 * e;
    SF_CHECK(sf_stats_csv_append(csv, &r) == 0, "append %ld", e);
  }
  sf_epoch_row *rows;
  size_t n;
  SF_CHECK(sf_stats_csv_truncate(csv, 4, &rows, &n, err, sizeof err) == 0, "truncate: %s", err);
  SF_CHECK(n == 3 && rows[2].epoch == 3, "truncate at epoch 4 kept %zu rows (last epoch %ld), expected 3", n,
           n ? rows[n - 1].epoch : -1L);
  free(rows);
  SF_CHECK(sf_stats_csv_load(csv, &rows, &n, err, sizeof err) == 0 && n == 3, "reload after truncate: %zu rows", n);
  free(rows);
  char *text = sf_read_file(csv, NULL);
  SF_CHECK(text && !strncmp(text, SF_TRAIN_STATS_HEADER "\n", strlen(SF_TRAIN_STATS_HEADER) + 1),
           "header line differs: %.120s", text ? text : "(unreadable)");
  free(text);
  sf_write_file_atomic(csv, "epoch,loss\n1,2\n", 15);
  SF_CHECK(sf_stats_csv_load(csv, &rows, &n, err, sizeof err) != 0 && strstr(err, ":1:"),
           "a wrong header must be an error naming file:1 (got '%s')", err);
  free(csv);
}

static void test_lr(void)
{
  sf_config c;
  sf_config_init(&c);
  SF_CHECK(sf_train_lr(&c, 0) == 1e-3, "epoch 1 lr %g, expected 1e-3", sf_train_lr(&c, 0));
  double l10 = sf_train_lr(&c, 10);
  SF_CHECK(fabs(l10 - 1e-3) < 1e-15, "lr after the first restart (10 steps, T_0 10) is %g, expected 1e-3", l10);
  double l5 = sf_train_lr(&c, 5);
  SF_CHECK(fabs(l5 - 5.5e-4) < 1e-12, "lr at T_cur 5 of 10: %.12g, expected 5.5e-4", l5);
  c.disable_scheduler = 1;
  SF_CHECK(sf_train_lr(&c, 5) == 1e-3, "disable_scheduler keeps lr at %g, got %g", 1e-3, sf_train_lr(&c, 5));
  sf_config_free(&c);
}

int main(void)
{
  char *dir = sf_test_tmpdir("train_units");
  test_sampler();
  test_checkpoint(dir);
  test_csv(dir);
  test_lr();
  sf_rm_rf(dir);
  free(dir);
  return sf_test_end();
}

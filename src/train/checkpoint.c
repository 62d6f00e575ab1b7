/* Our checkpoint format (spec §6.8 semantics, docs/architecture.md §7), little-endian:
 *
 *   0    magic "SFCKPT\x1a\n" (8 bytes)        8  u32 format version     12 u32 header bytes (256)
 *   16   code version, NUL-padded (32 bytes)
 *   48   topology: i32 problem_scale, bottleneck, base_channels, n_classes, groups, in_channels;
 *        u64 parameter count
 *   80   state: i64 epoch, f64 val_loss_avg, f64 val_dice, f64 best_val_loss, i64 global_step,
 *        i64 total_optimizer_steps, i64 sched_steps, i64 sampler_seed, i64 partial_epoch,
 *        i64 partial_steps, i64 partial_opt_steps, f64 partial_loss, f64 partial_dice,
 *        f64 partial_samples, f64 partial_seconds, i64 replicas, i64 spatial_ranks (0 in files written
 *        before these two: read as one rank), optimizer name NUL-padded (16 bytes; zeros in files
 *        written before it: read as "ADAM"); zeros up to the header size
 *   256  params, optimizer state m, v: 3 x nparams float32 (Adam m and v; RMSprop: m zero, v its
 *        square_avg; SGD: both zero)
 *   end  u64 FNV-1a 64 of every byte before it
 *
 * Written atomically (temporary file, fsync, rename). Reading checks magic, version, size,
 * checksum and topology, and says which file is wrong and how.
 *
 * Test hook (tests only, tests/reliability/test_async_kill9.sh): SF_TEST_CKPT_COMMIT_DELAY_MS=ms
 * sleeps that long between writing the temporary file and its commit, for checkpoints of epoch >=
 * SF_TEST_CKPT_COMMIT_DELAY_FROM_EPOCH (default 0: every one), so that a test can kill the process
 * while a (background) write is in progress. Unset: no delay. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "scaffold/common.h"
#include "scaffold/fsutil.h"
#include "scaffold/trainer.h"
#include "scaffold/switches.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c writes float arrays in host order and assumes a little-endian host"
#endif

#define HDR_BYTES 256u
#define CHUNK (1u << 20)

uint64_t sf_fnv1a64(uint64_t h, const void *data, size_t len)
{
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

void sf_ckpt_topology_of(const sf_unet *u, sf_ckpt_topology *t)
{
  memset(t, 0, sizeof *t);
  t->problem_scale = u->problem_scale;
  t->bottleneck = u->bottleneck;
  t->base_channels = u->base_channels;
  t->n_classes = u->n_classes;
  t->groups = u->groups;
  t->in_channels = u->in_channels;
  t->nparams = u->total_params;
}

void sf_ckpt_state_init(sf_ckpt_state *s, const sf_unet *u)
{
  memset(s, 0, sizeof *s);
  sf_ckpt_topology_of(u, &s->topo);
  snprintf(s->code_version, sizeof s->code_version, "%s", SF_VERSION);
  s->val_loss_avg = NAN;
  s->best_val_loss = INFINITY;
  s->sampler_seed = SF_SAMPLER_SEED;
  snprintf(s->optimizer, sizeof s->optimizer, "ADAM");
}

/* ---- header (de)serialisation ---- */
static void put_u32(unsigned char *b, size_t *o, uint32_t v)
{
  for (int i = 0; i < 4; i++) b[(*o)++] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *b, size_t *o, uint64_t v)
{
  for (int i = 0; i < 8; i++) b[(*o)++] = (unsigned char)(v >> (8 * i));
}
static void put_f64(unsigned char *b, size_t *o, double v)
{
  uint64_t u;
  memcpy(&u, &v, 8);
  put_u64(b, o, u);
}
static uint32_t get_u32(const unsigned char *b, size_t *o)
{
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)b[(*o)++] << (8 * i);
  return v;
}
static uint64_t get_u64(const unsigned char *b, size_t *o)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)b[(*o)++] << (8 * i);
  return v;
}
static double get_f64(const unsigned char *b, size_t *o)
{
  uint64_t u = get_u64(b, o);
  double v;
  memcpy(&v, &u, 8);
  return v;
}

static void encode_header(unsigned char *b, const sf_ckpt_state *s)
{
  memset(b, 0, HDR_BYTES);
  size_t o = 0;
  memcpy(b, SF_CKPT_MAGIC, 8);
  o = 8;
  put_u32(b, &o, SF_CKPT_FORMAT_VERSION);
  put_u32(b, &o, HDR_BYTES);
  memcpy(b + o, s->code_version, strnlen(s->code_version, 31));
  o += 32;
  const sf_ckpt_topology *t = &s->topo;
  put_u32(b, &o, (uint32_t)t->problem_scale);
  put_u32(b, &o, (uint32_t)t->bottleneck);
  put_u32(b, &o, (uint32_t)t->base_channels);
  put_u32(b, &o, (uint32_t)t->n_classes);
  put_u32(b, &o, (uint32_t)t->groups);
  put_u32(b, &o, (uint32_t)t->in_channels);
  put_u64(b, &o, t->nparams);
  put_u64(b, &o, (uint64_t)s->epoch);
  put_f64(b, &o, s->val_loss_avg);
  put_f64(b, &o, s->val_dice);
  put_f64(b, &o, s->best_val_loss);
  put_u64(b, &o, (uint64_t)s->global_step);
  put_u64(b, &o, (uint64_t)s->total_optimizer_steps);
  put_u64(b, &o, (uint64_t)s->sched_steps);
  put_u64(b, &o, (uint64_t)s->sampler_seed);
  put_u64(b, &o, (uint64_t)s->partial_epoch);
  put_u64(b, &o, (uint64_t)s->partial_steps);
  put_u64(b, &o, (uint64_t)s->partial_opt_steps);
  put_f64(b, &o, s->partial_loss);
  put_f64(b, &o, s->partial_dice);
  put_f64(b, &o, s->partial_samples);
  put_f64(b, &o, s->partial_seconds);
  put_u64(b, &o, (uint64_t)s->replicas);
  put_u64(b, &o, (uint64_t)s->spatial_ranks);
  memcpy(b + o, s->optimizer, strnlen(s->optimizer, sizeof s->optimizer - 1));
  o += sizeof s->optimizer;
  SF_ASSERT(o <= HDR_BYTES);
}

static void decode_header(const unsigned char *b, sf_ckpt_state *s)
{
  memset(s, 0, sizeof *s);
  size_t o = 16;
  memcpy(s->code_version, b + o, 31);
  s->code_version[31] = '\0';
  o += 32;
  sf_ckpt_topology *t = &s->topo;
  t->problem_scale = (int32_t)get_u32(b, &o);
  t->bottleneck = (int32_t)get_u32(b, &o);
  t->base_channels = (int32_t)get_u32(b, &o);
  t->n_classes = (int32_t)get_u32(b, &o);
  t->groups = (int32_t)get_u32(b, &o);
  t->in_channels = (int32_t)get_u32(b, &o);
  t->nparams = get_u64(b, &o);
  s->epoch = (long)get_u64(b, &o);
  s->val_loss_avg = get_f64(b, &o);
  s->val_dice = get_f64(b, &o);
  s->best_val_loss = get_f64(b, &o);
  s->global_step = (long)get_u64(b, &o);
  s->total_optimizer_steps = (long)get_u64(b, &o);
  s->sched_steps = (long)get_u64(b, &o);
  s->sampler_seed = (long)get_u64(b, &o);
  s->partial_epoch = (long)get_u64(b, &o);
  s->partial_steps = (long)get_u64(b, &o);
  s->partial_opt_steps = (long)get_u64(b, &o);
  s->partial_loss = get_f64(b, &o);
  s->partial_dice = get_f64(b, &o);
  s->partial_samples = get_f64(b, &o);
  s->partial_seconds = get_f64(b, &o);
  s->replicas = (long)get_u64(b, &o);
  s->spatial_ranks = (long)get_u64(b, &o);
  memcpy(s->optimizer, b + o, sizeof s->optimizer - 1);
  s->optimizer[sizeof s->optimizer - 1] = '\0';
  if (!s->optimizer[0]) snprintf(s->optimizer, sizeof s->optimizer, "ADAM"); /* written before the field */
}

/* ---- writing ---- */
static void test_commit_delay(long epoch)
{
  const char *ms = sf_switch("SF_TEST_CKPT_COMMIT_DELAY_MS"), *from = sf_switch("SF_TEST_CKPT_COMMIT_DELAY_FROM_EPOCH");
  long d = ms && *ms ? atol(ms) : 0;
  if (d <= 0 || (from && *from && epoch < atol(from))) return;
  struct timespec ts = {d / 1000, (d % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int put_block(sf_atomic_file *a, uint64_t *h, const void *p, size_t len)
{
  *h = sf_fnv1a64(*h, p, len);
  return fwrite(p, 1, len, a->f) == len ? 0 : -1;
}

int sf_checkpoint_write(const char *path, const sf_ckpt_state *s, const float *params, const float *m,
                        const float *v, char *err, size_t errlen)
{
  unsigned char hdr[HDR_BYTES];
  encode_header(hdr, s);
  sf_atomic_file a;
  if (sf_atomic_open(&a, path) != 0) {
    snprintf(err, errlen, "cannot create checkpoint %s: %s", path, strerror(errno));
    return -1;
  }
  uint64_t h = SF_FNV1A64_INIT;
  size_t n = (size_t)s->topo.nparams * sizeof(float);
  int rc = put_block(&a, &h, hdr, HDR_BYTES);
  if (rc == 0) rc = put_block(&a, &h, params, n);
  if (rc == 0) rc = put_block(&a, &h, m, n);
  if (rc == 0) rc = put_block(&a, &h, v, n);
  unsigned char tail[8];
  size_t o = 0;
  put_u64(tail, &o, h);
  if (rc == 0) rc = fwrite(tail, 1, 8, a.f) == 8 ? 0 : -1;
  if (rc != 0) {
    snprintf(err, errlen, "cannot write checkpoint %s: %s", path, strerror(errno ? errno : EIO));
    sf_atomic_abort(&a);
    return -1;
  }
  test_commit_delay(s->epoch);
  if (sf_atomic_commit(&a) != 0) {
    snprintf(err, errlen, "cannot write checkpoint %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* ---- reading ---- */
static int topo_equal(const sf_ckpt_topology *a, const sf_ckpt_topology *b)
{
  return a->problem_scale == b->problem_scale && a->bottleneck == b->bottleneck &&
         a->base_channels == b->base_channels && a->n_classes == b->n_classes && a->groups == b->groups &&
         a->in_channels == b->in_channels && a->nparams == b->nparams;
}

static void topo_string(const sf_ckpt_topology *t, char *buf, size_t len)
{
  snprintf(buf, len, "problem_scale %d, bottleneck %d, base channels %d, %d classes, %d groups, %d input channels, "
           "%llu parameters", t->problem_scale, t->bottleneck, t->base_channels, t->n_classes, t->groups,
           t->in_channels, (unsigned long long)t->nparams);
}

sf_ckpt_status sf_checkpoint_read(const char *path, const sf_ckpt_topology *expect, sf_ckpt_state *s,
                                  float *params, float *m, float *v, char *err, size_t errlen)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "checkpoint %s: %s", path, strerror(errno));
    return errno == ENOENT ? SF_CKPT_MISSING : SF_CKPT_IOERR;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open checkpoint %s: %s", path, strerror(errno));
    return SF_CKPT_IOERR;
  }
  unsigned char hdr[HDR_BYTES];
  sf_ckpt_status status = SF_CKPT_OK;
  size_t got = fread(hdr, 1, HDR_BYTES, f);
  if (got < 16 || memcmp(hdr, SF_CKPT_MAGIC, 8) != 0) {
    snprintf(err, errlen, "checkpoint %s is corrupt: %s", path,
             got < 16 ? "shorter than its header" : "bad magic (not a scaffold checkpoint)");
    fclose(f);
    return SF_CKPT_CORRUPT;
  }
  size_t o = 8;
  uint32_t version = get_u32(hdr, &o), hbytes = get_u32(hdr, &o);
  if (version != SF_CKPT_FORMAT_VERSION) {
    snprintf(err, errlen, "checkpoint %s has format version %u; this build reads version %u", path, version,
             SF_CKPT_FORMAT_VERSION);
    fclose(f);
    return SF_CKPT_MISMATCH;
  }
  if (hbytes != HDR_BYTES || got < HDR_BYTES) {
    snprintf(err, errlen, "checkpoint %s is corrupt: %s", path,
             got < HDR_BYTES ? "truncated inside its header" : "bad header size");
    fclose(f);
    return SF_CKPT_CORRUPT;
  }
  sf_ckpt_state st_local;
  sf_ckpt_state *state = s ? s : &st_local;
  decode_header(hdr, state);
  uint64_t n = state->topo.nparams;
  /* nparams comes from the file: check it against the size before trusting it */
  uint64_t want = (uint64_t)HDR_BYTES + 12u * n + 8u;
  if (n > ((uint64_t)1 << 40) || (uint64_t)st.st_size != want) {
    snprintf(err, errlen, "checkpoint %s is corrupt or truncated: %lld bytes, expected %llu for %llu parameters",
             path, (long long)st.st_size, (unsigned long long)want, (unsigned long long)n);
    fclose(f);
    return SF_CKPT_CORRUPT;
  }
  int keep = expect == NULL || topo_equal(expect, &state->topo);
  uint64_t h = sf_fnv1a64(SF_FNV1A64_INIT, hdr, HDR_BYTES);
  unsigned char *buf = sf_malloc(CHUNK, "checkpoint read buffer");
  float *dst[3] = {params, m, v};
  for (int a = 0; a < 3 && status == SF_CKPT_OK; a++) {
    size_t left = (size_t)n * sizeof(float), off = 0;
    while (left > 0) {
      size_t want_now = left < CHUNK ? left : CHUNK;
      if (fread(buf, 1, want_now, f) != want_now) {
        snprintf(err, errlen, "checkpoint %s is truncated: read error in %s", path,
                 a == 0 ? "the parameters" : a == 1 ? "Adam m" : "Adam v");
        status = SF_CKPT_CORRUPT;
        break;
      }
      h = sf_fnv1a64(h, buf, want_now);
      if (keep && dst[a]) memcpy((unsigned char *)dst[a] + off, buf, want_now);
      off += want_now;
      left -= want_now;
    }
  }
  free(buf);
  unsigned char tail[8];
  if (status == SF_CKPT_OK && fread(tail, 1, 8, f) != 8) {
    snprintf(err, errlen, "checkpoint %s is truncated: no checksum", path);
    status = SF_CKPT_CORRUPT;
  }
  fclose(f);
  if (status != SF_CKPT_OK) return status;
  o = 0;
  uint64_t stored = get_u64(tail, &o);
  if (stored != h) {
    snprintf(err, errlen, "checkpoint %s is corrupt: checksum mismatch (stored %016llx, computed %016llx)", path,
             (unsigned long long)stored, (unsigned long long)h);
    return SF_CKPT_CORRUPT;
  }
  if (!keep) {
    char a[256], b[256];
    topo_string(&state->topo, a, sizeof a);
    topo_string(expect, b, sizeof b);
    snprintf(err, errlen, "checkpoint %s is for another network: it has %s; this run has %s", path, a, b);
    return SF_CKPT_MISMATCH;
  }
  return SF_CKPT_OK;
}

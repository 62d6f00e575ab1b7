/* MT19937 parity with the real CPython `random`, NumPy legacy RandomState and torch.linspace, run
 * through /usr/bin/python3: raw draws, getrandbits, random(), randrange, random.sample (pool and set
 * branches), np.random.rand, np.random.shuffle (1-D and row-wise 2-D), whole volume plans
 * simulated with upstream's exact calls, the v5 voxelizer on clouds NumPy writes (upstream's
 * points_to_voxel_indices, float32 boundary cases included), the cache config_id (JSON + SHA-256,
 * hashlib), and the CE-weight sample indices (torch.linspace). Each side prints
 * "<tag>: values" lines; they must match exactly (doubles compared as their bit patterns).
 * Skips (77) when /usr/bin/python3 or numpy is missing; the torch part is skipped alone. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaffold/config.h"
#include "scaffold/dataset.h"
#include "scaffold/mt19937.h"
#include "scaffold/npy.h"
#include "testutil.h"

static const char *PY =
    "import random, struct, sys\n"
    "try:\n"
    "    import numpy as np\n"
    "except Exception:\n"
    "    print('NO_NUMPY'); sys.exit(0)\n"
    "B = lambda x: struct.unpack('<Q', struct.pack('<d', x))[0]\n"
    "J = lambda t, v: print(t + ':' + ''.join(' %d' % int(x) for x in v))\n"
    "for s in [0, 1, 42, 12345, 4294967295, 2**32 + 5]:\n"
    "    random.seed(s)\n"
    "    J('bits32 %d' % s, [random.getrandbits(32) for _ in range(10)])\n"
    "    J('bits7 %d' % s, [random.getrandbits(7) for _ in range(5)])\n"
    "    J('bits40 %d' % s, [random.getrandbits(40) for _ in range(3)])\n"
    "    J('random %d' % s, [B(random.random()) for _ in range(3)])\n"
    "    J('randrange %d' % s, [random.randrange(1000) for _ in range(5)])\n"
    "for s, n, k in [(42, 145, 144), (42, 145, 10), (3, 1000, 10), (3, 240, 72), (5, 50, 3), (9, 100000, 7),\n"
    "                (11, 30, 0), (13, 22, 6), (17, 5000, 400)]:\n"
    "    random.seed(s)\n"
    "    J('sample %d %d %d' % (s, n, k), random.sample(range(n), k))\n"
    "for s in [0, 42, 12345, 4294967295]:\n"
    "    np.random.seed(s)\n"
    "    J('rand %d' % s, [B(x) for x in np.random.rand(7)])\n"
    "    a = np.arange(37); np.random.shuffle(a); J('shuf1 %d' % s, a)\n"
    "    b = np.arange(40).reshape(20, 2); np.random.shuffle(b); J('shuf2 %d' % s, b.ravel())\n"
    "def plan(seed, ncat, ninst, nfpv, val):\n"
    "    random.seed(seed); np.random.seed(seed)\n"
    "    ninst = ninst // nfpv * nfpv\n"
    "    lst = []\n"
    "    for c in range(ncat):\n"
    "        rem = ninst; got = []\n"
    "        while rem > 0:\n"
    "            got.extend(random.sample(range(145), min(145, rem))); rem -= min(145, rem)\n"
    "        lst.extend([[c, i] for i in got])\n"
    "    lst = np.array(lst, dtype=int); np.random.shuffle(lst)\n"
    "    vc = lst.reshape(-1, 2 * nfpv)\n"
    "    vc = np.hstack([np.arange(vc.shape[0]).reshape(-1, 1), vc])\n"
    "    nv = len(vc)\n"
    "    random.seed(seed)\n"
    "    v = sorted(random.sample(range(nv), int(nv * val / 100)))\n"
    "    np.random.seed(seed)\n"
    "    col = np.random.rand(ncat, 3)\n"
    "    tag = 'plan %d %d %d %d %s' % (seed, ncat, ninst, nfpv, repr(float(val)))\n"
    "    J(tag + ' contents', vc.ravel()); J(tag + ' val', v); J(tag + ' colours', [B(x) for x in col.ravel()])\n"
    "for args in [(42, 5, 145, 3, 30), (0, 3, 10, 2, 25), (1234, 4, 300, 3, 33.3), (7, 2, 7, 1, 50), (99, 1, 146, 2, 10)]:\n"
    "    plan(*args)\n"
    "def vox(points, grid_size, eps=1e-6):\n"  /* upstream volumegen.points_to_voxel_indices (v5) */
    "    mins = points.min(axis=0); maxs = points.max(axis=0)\n"
    "    max_extent = float((maxs - mins).max())\n"
    "    voxel_size = (max_extent + eps) / grid_size\n"
    "    scaled = (points - mins) / voxel_size\n"
    "    span = scaled.max(axis=0)\n"
    "    offset = (grid_size - span) / 2.0\n"
    "    idx = np.floor(scaled + offset).astype(int)\n"
    "    idx = np.clip(idx, 0, grid_size - 1)\n"
    "    return np.unique(idx, axis=0)\n"
    "np.random.seed(3)\n"
    "clouds = []\n"
    "for sc, off in [((1, 1, 1), 0), ((2, 1, 0.5), 1000.0), ((1e-3, 2e-3, 1e-3), -5.0), ((7, 7, 7), 0.1)]:\n"
    "    clouds.append((np.random.rand(2000, 3) * np.array(sc) + off).astype(np.float32))\n"
    "g = np.stack(np.meshgrid(*[np.arange(65)] * 3, indexing='ij'), -1).reshape(-1, 3)\n"
    "clouds.append((g / 64.0 * np.array([1.0, 0.5, 0.25])).astype(np.float32))\n"
    "clouds.append((g / 3.0 - 11.1).astype(np.float32))\n"
    "for i, c in enumerate(clouds):\n"
    "    np.save('%s/cloud%d.npy' % (sys.argv[1], i), c)\n"
    "    for G in (16, 32, 128):\n"
    "        v = vox(c, G)\n"
    "        J('vox %d %d' % (i, G), v[:, 0] * G * G + v[:, 1] * G + v[:, 2])\n"
    "import hashlib, json\n"  /* upstream get_dataset._hash_volume_config with the v5 shard canonicalization */
    "def cid(d):\n"
    "    lay = sorted((int(sd), int(ns)) for ns, sd in zip(d['dc_num_shards'], d['dc_shard_dims']))\n"
    "    d = dict(d, dc_shard_dims=[a for a, _ in lay], dc_num_shards=[b for _, b in lay])\n"
    "    s = json.dumps(d, separators=(',', ':'), sort_keys=True)\n"
    "    print('cfgjson: ' + s); print('cfgid: ' + hashlib.sha256(s.encode()).hexdigest()[:12])\n"
    "base = dict(dataset_format_version=5, n_categories=5, n_instances_used_per_fractal=145, problem_scale=7, seed=42,\n"
    "            variance_threshold=0.15, n_fracts_per_vol=3, val_split=30, dc_num_shards=[1, 1, 1], dc_shard_dims=[2, 3, 4])\n"
    "cid(base)\n"
    "cid(dict(base, val_split=33.5, variance_threshold=0.2, seed=7, dc_num_shards=[1, 2, 1], dc_shard_dims=[4, 2, 3]))\n"
    "try:\n"
    "    import math, torch\n"
    "except Exception:\n"
    "    print('NO_TORCH'); sys.exit(0)\n"
    "for f in [0.1, 0.05, 0.37, 0.5]:\n"
    "    for n in range(1, 700):\n"
    "        c = min(max(math.ceil(n * float(f)), 1), n)\n"
    "        idx = list(range(n)) if c == n else torch.linspace(0, n - 1, steps=c).long().tolist()\n"
    "        J('linspace %d %s' % (n, repr(f)), idx)\n";

typedef struct {
  char *buf;
  size_t len, cap;
} sbuf;

static void put(sbuf *s, const char *fmt, ...)
{
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    if ((size_t)n < s->cap - s->len) {
      s->len += (size_t)n;
      return;
    }
    s->cap = s->cap * 2 + (size_t)n + 64;
    s->buf = realloc(s->buf, s->cap);
  }
}

static uint64_t dbits(double x)
{
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}

static void ours(sbuf *o, int with_torch, const char *dir)
{
  sf_mt19937 m;
  const int64_t seeds[] = {0, 1, 42, 12345, 4294967295LL, 4294967296LL + 5};
  for (int si = 0; si < 6; si++) {
    int64_t s = seeds[si];
    sf_mt_seed_python(&m, s);
    put(o, "bits32 %" PRId64 ":", s);
    for (int i = 0; i < 10; i++) put(o, " %" PRIu64, sf_py_getrandbits(&m, 32));
    put(o, "\nbits7 %" PRId64 ":", s);
    for (int i = 0; i < 5; i++) put(o, " %" PRIu64, sf_py_getrandbits(&m, 7));
    put(o, "\nbits40 %" PRId64 ":", s);
    for (int i = 0; i < 3; i++) put(o, " %" PRIu64, sf_py_getrandbits(&m, 40));
    put(o, "\nrandom %" PRId64 ":", s);
    for (int i = 0; i < 3; i++) put(o, " %" PRIu64, dbits(sf_py_random(&m)));
    put(o, "\nrandrange %" PRId64 ":", s);
    for (int i = 0; i < 5; i++) put(o, " %" PRIu64, sf_py_randbelow(&m, 1000));
    put(o, "\n");
  }
  const int64_t snk[][3] = {{42, 145, 144}, {42, 145, 10}, {3, 1000, 10}, {3, 240, 72}, {5, 50, 3},
                            {9, 100000, 7}, {11, 30, 0},   {13, 22, 6},   {17, 5000, 400}};
  for (int i = 0; i < 9; i++) {
    int64_t out[400];
    sf_mt_seed_python(&m, snk[i][0]);
    sf_py_sample_range(&m, snk[i][1], snk[i][2], out);
    put(o, "sample %" PRId64 " %" PRId64 " %" PRId64 ":", snk[i][0], snk[i][1], snk[i][2]);
    for (int j = 0; j < snk[i][2]; j++) put(o, " %" PRId64, out[j]);
    put(o, "\n");
  }
  const uint32_t nseeds[] = {0, 42, 12345, 4294967295u};
  for (int si = 0; si < 4; si++) {
    sf_mt_seed_numpy(&m, nseeds[si]);
    put(o, "rand %u:", nseeds[si]);
    for (int i = 0; i < 7; i++) put(o, " %" PRIu64, dbits(sf_np_rand(&m)));
    int64_t a[37], b[40];
    for (int i = 0; i < 37; i++) a[i] = i;
    for (int i = 0; i < 40; i++) b[i] = i;
    sf_np_shuffle_rows(&m, a, 37, sizeof a[0]);
    sf_np_shuffle_rows(&m, b, 20, 2 * sizeof b[0]);
    put(o, "\nshuf1 %u:", nseeds[si]);
    for (int i = 0; i < 37; i++) put(o, " %" PRId64, a[i]);
    put(o, "\nshuf2 %u:", nseeds[si]);
    for (int i = 0; i < 40; i++) put(o, " %" PRId64, b[i]);
    put(o, "\n");
  }
  const struct {
    long seed, ncat, ninst, nfpv;
    double val;
    const char *vrepr;
  } plans[] = {{42, 5, 145, 3, 30, "30.0"}, {0, 3, 10, 2, 25, "25.0"}, {1234, 4, 300, 3, 33.3, "33.3"},
               {7, 2, 7, 1, 50, "50.0"},    {99, 1, 146, 2, 10, "10.0"}};
  for (int i = 0; i < 5; i++) {
    sf_volume_plan p;
    char err[256];
    if (sf_volume_plan_make(&p, plans[i].seed, plans[i].ncat, plans[i].ninst, plans[i].nfpv, plans[i].val, NULL, err,
                            sizeof err) != 0) {
      put(o, "plan error: %s\n", err);
      continue;
    }
    char tag[128];
    snprintf(tag, sizeof tag, "plan %ld %ld %d %ld %s", plans[i].seed, plans[i].ncat, p.n_inst, plans[i].nfpv,
             plans[i].vrepr);
    put(o, "%s contents:", tag);
    for (size_t j = 0; j < (size_t)p.num_volumes * (size_t)p.row_len; j++) put(o, " %" PRId64, p.contents[j]);
    put(o, "\n%s val:", tag);
    for (int j = 0; j < p.n_val; j++) put(o, " %d", p.val_ids[j]);
    put(o, "\n%s colours:", tag);
    for (int j = 0; j < 3 * p.n_categories; j++) put(o, " %" PRIu64, dbits(p.colours[j]));
    put(o, "\n");
    sf_volume_plan_free(&p);
  }
  for (int i = 0; i < 6; i++) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/cloud%d.npy", dir, i);
    sf_npy a;
    if (sf_npy_read(path, &a, err, sizeof err) != 0) {
      put(o, "vox read error: %s\n", err);
      continue;
    }
    uint64_t *lin = malloc(a.shape[0] * sizeof *lin);
    for (int gi = 0; gi < 3; gi++) {
      int G = gi == 0 ? 16 : gi == 1 ? 32 : 128;
      size_t nv = 0;
      sf_voxelize(a.data, a.shape[0], G, lin, &nv);
      put(o, "vox %d %d:", i, G);
      for (size_t j = 0; j < nv; j++) put(o, " %llu", (unsigned long long)lin[j]);
      put(o, "\n");
    }
    free(lin);
    free(a.data);
  }
  sf_config c;
  sf_config_init(&c);
  sf_config_finalize(&c);
  for (int k = 0; k < 2; k++) {
    if (k == 1) {
      c.val_split = 33.5, c.variance_threshold = 0.2, c.seed = 7;
      c.dc_num_shards[0] = 1, c.dc_num_shards[1] = 2, c.dc_num_shards[2] = 1;
      c.dc_shard_dims[0] = 4, c.dc_shard_dims[1] = 2, c.dc_shard_dims[2] = 3;
    }
    char *js = sf_dataset_config_json(&c, 1), id[13];
    sf_dataset_config_id(&c, id);
    put(o, "cfgjson: %s\ncfgid: %s\n", js, id);
    free(js);
  }
  sf_config_free(&c);
  if (!with_torch) return;
  const double fr[] = {0.1, 0.05, 0.37, 0.5};
  const char *frs[] = {"0.1", "0.05", "0.37", "0.5"};
  static int idx[700];
  for (int f = 0; f < 4; f++)
    for (int n = 1; n < 700; n++) {
      int c = sf_ce_weight_sample_indices(n, fr[f], idx);
      put(o, "linspace %d %s:", n, frs[f]);
      for (int j = 0; j < c; j++) put(o, " %d", idx[j]);
      put(o, "\n");
    }
}

int main(void)
{
  if (access("/usr/bin/python3", X_OK) != 0) return sf_test_skip("/usr/bin/python3 is not available");
  if (system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    return sf_test_skip("numpy is not importable by /usr/bin/python3");
  char *dir = sf_test_tmpdir("dspy");
  char script[4096];
  snprintf(script, sizeof script, "%s/parity.py", dir);
  FILE *f = fopen(script, "w");
  SF_CHECK(f != NULL, "cannot write %s", script);
  if (!f) return sf_test_end();
  fputs(PY, f);
  fclose(f);
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", script, dir);
  FILE *pp = popen(cmd, "r");
  sbuf py = {0}, us = {0};
  char line[1 << 16];
  while (pp && fgets(line, sizeof line, pp)) put(&py, "%s", line);
  int st = pp ? pclose(pp) : -1;
  SF_CHECK(st == 0 && py.buf, "the parity script failed (status %d): %s", st, cmd);
  if (st != 0 || !py.buf) {
    sf_rm_rf(dir);
    return sf_test_end();
  }
  int with_torch = strstr(py.buf, "NO_TORCH") == NULL;
  if (!with_torch) printf("SKIPPED part: torch is not importable, linspace indices not compared\n");
  ours(&us, with_torch, dir);
  sf_rm_rf(dir);
  free(dir);

  /* compare line by line */
  char *a = py.buf, *b = us.buf;
  int nlines = 0, ndiff = 0;
  while (*a && *b) {
    if (!with_torch && strncmp(a, "NO_TORCH", 8) == 0) break;
    char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
    size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
    nlines++;
    if (la != lb || memcmp(a, b, la) != 0) {
      if (ndiff++ < 5)
        fprintf(stderr, "MISMATCH line %d\n  python: %.*s\n  ours:   %.*s\n", nlines, (int)(la > 300 ? 300 : la), a,
                (int)(lb > 300 ? 300 : lb), b);
    }
    a = ea ? ea + 1 : a + la;
    b = eb ? eb + 1 : b + lb;
  }
  SF_CHECK(ndiff == 0, "%d of %d lines differ from CPython/NumPy/torch", ndiff, nlines);
  SF_CHECK(*a == '\0' || (!with_torch && strncmp(a, "NO_TORCH", 8) == 0), "our output ended early after %d lines", nlines);
  SF_CHECK(*b == '\0', "python output ended early after %d lines", nlines);
  SF_CHECK(nlines > 60, "only %d lines compared", nlines);
  printf("compared %d lines with CPython random / NumPy RandomState / upstream's voxelizer%s\n", nlines,
         with_torch ? " / torch.linspace" : "");
  free(py.buf);
  free(us.buf);
  return sf_test_end();
}

/* Pure pieces of fractal generation, no StarPU running: the IFS iteration (origin first, map
 * choice, runaway flag), acceptance verdicts, map probabilities, the weight table (Appendix A with
 * the row-108 quirk, rebuilt here from the spec's rule), compute_round_attempts, the class CSV
 * format, Python-style var<vt> formatting and the layout paths, and the scheduler-name check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/config.h"
#include "scaffold/datagen.h"
#include "scaffold/fsutil.h"
#include "scaffold/rng.h"
#include "scaffold/runtime.h"
#include "testutil.h"

static void set_diag(double m[SF_IFS_NCOLS], double s, double tx, double ty, double tz)
{
  memset(m, 0, SF_IFS_NCOLS * sizeof(double));
  m[0] = m[4] = m[8] = s;
  m[9] = tx, m[10] = ty, m[11] = tz;
}

static void test_iteration(void)
{
  enum { N = 1000 };
  double *pts = malloc(N * 3 * sizeof(double));
  double P[2][SF_IFS_NCOLS];
  /* contractive 0.5*I maps: bounded, no runaway */
  set_diag(P[0], 0.5, 1, 0, 0);
  set_diag(P[1], 0.5, 0, 1, -1);
  SF_CHECK(sf_ifs_set_probabilities(P) == 0, "probabilities of 0.5*I maps");
  SF_CHECK(P[0][12] == 0.5 && P[1][12] == 0.5, "equal |det| must give p = 0.5/0.5, got %g/%g", P[0][12], P[1][12]);
  int ra = sf_ifs_points(pts, N, P, NULL, 7, 1);
  SF_CHECK(ra == 0, "contractive 0.5*I map flagged as runaway");
  SF_CHECK(pts[0] == 0 && pts[1] == 0 && pts[2] == 0, "point 0 is not the origin: (%g, %g, %g)", pts[0], pts[1], pts[2]);
  double mx = 0;
  for (int i = 0; i < 3 * N; i++) mx = fmax(mx, fabs(pts[i]));
  SF_CHECK(mx <= 2.0 + 1e-12, "contractive map left the attractor's bound 2: max |x| = %g", mx);
  /* replay the chaos game with our own RNG draws: same map sequence, same points */
  sf_rng r;
  sf_rng_seed(&r, 7, 1);
  double x = 0, y = 0, z = 0, maxdiff = 0;
  int n0 = 0;
  for (int n = 1; n < N; n++) {
    int t = sf_rng_uniform(&r) < P[0][12] ? 0 : 1;
    n0 += t == 0;
    const double *a = P[t];
    double nx = a[0] * x + a[9], ny = a[4] * y + a[10], nz = a[8] * z + a[11];
    x = nx, y = ny, z = nz;
    maxdiff = fmax(maxdiff, fabs(pts[3 * n] - x) + fabs(pts[3 * n + 1] - y) + fabs(pts[3 * n + 2] - z));
  }
  SF_CHECK(maxdiff == 0, "points differ from an independent replay by %g", maxdiff);
  SF_CHECK(n0 > 400 && n0 < 600, "map 0 chosen %d of %d times with p0 = 0.5", n0, N - 1);

  /* weights multiply columns 0..11 only: weights of 2 on the 0.5*I maps = 1*I + 2*t */
  double w[12];
  for (int k = 0; k < 12; k++) w[k] = 2.0;
  sf_ifs_points(pts, 3, P, w, 7, 1);
  SF_CHECK(fabs(pts[3] - 2.0) + fabs(pts[4]) + fabs(pts[5]) < 1e-15 || fabs(pts[3]) + fabs(pts[4] - 2.0) + fabs(pts[5] + 2.0) < 1e-15,
           "weighted first step (%g, %g, %g) is not 2*translation", pts[3], pts[4], pts[5]);

  /* expansive 2*I maps: runaway flag set, candidate rejected */
  set_diag(P[0], 2.0, 1, 0, 0);
  set_diag(P[1], 2.0, 0, 1, -1);
  sf_ifs_set_probabilities(P);
  ra = sf_ifs_points(pts, N, P, NULL, 7, 1);
  SF_CHECK(ra == 1, "expansive 2*I map not flagged as runaway");
  sf_ifs_verdict v = sf_ifs_check(pts, N, ra, 1.0, 0.15, NULL);
  SF_CHECK(v != SF_IFS_ACCEPT, "expansive 2*I map accepted");
  /* the float32 variant: same flags, values = (float) of the double iterates; 2^1100 overflows */
  {
    enum { M = 1100 };
    double *d = malloc(M * 3 * sizeof(double));
    float *f = malloc(M * 3 * sizeof(float));
    int nonfinite = 0, ra2 = sf_ifs_points_f32(f, M, P, NULL, 7, 1, &nonfinite);
    sf_ifs_points(d, M, P, NULL, 7, 1);
    int own_nonfinite = 0, same = 1;
    for (int i = 0; i < 3 * M; i++) {
      own_nonfinite |= !isfinite(d[i]);
      float e = (float)d[i];
      same &= !memcmp(&e, &f[i], sizeof e);
    }
    SF_CHECK(ra2 == 1 && nonfinite == 1 && own_nonfinite == 1, "2*I over %d points: runaway %d nonfinite %d (own %d)", M,
             ra2, nonfinite, own_nonfinite);
    SF_CHECK(same, "sf_ifs_points_f32 differs from (float) sf_ifs_points on the 2*I maps");
    sf_fractal_class k;
    sf_class_candidate(3, 11, &k);
    ra2 = sf_ifs_points_f32(f, M, k.p, NULL, 5, 6, &nonfinite);
    int ra3 = sf_ifs_points(d, M, k.p, NULL, 5, 6);
    same = ra2 == ra3;
    for (int i = 0; i < 3 * M; i++) {
      float e = (float)d[i];
      same &= !memcmp(&e, &f[i], sizeof e);
    }
    SF_CHECK(same, "sf_ifs_points_f32 differs from (float) sf_ifs_points on a random class");
    free(d);
    free(f);
  }
  /* a finite, well-spread cloud with |x| > 1e10: only the runaway rule rejects it */
  memset(P, 0, sizeof P);
  P[0][9] = P[0][10] = P[0][11] = 1e11;
  P[1][9] = P[1][10] = P[1][11] = -1e11;
  P[0][12] = 0.5;
  ra = sf_ifs_points(pts, N, P, NULL, 3, 9);
  v = sf_ifs_check(pts, N, ra, 1.0, 0.15, NULL);
  SF_CHECK(ra == 1 && v == SF_IFS_RUNAWAY, "+-1e11 jumps: runaway %d verdict %d, want 1 and RUNAWAY", ra, (int)v);
  SF_CHECK(sf_ifs_check(pts, N, 0, 1.0, 0.15, NULL) == SF_IFS_ACCEPT, "the same cloud without the runaway flag is rejected");

  /* verdicts on hand-made clouds */
  double cube[8 * 3];
  for (int i = 0; i < 8; i++) cube[3 * i] = i & 1, cube[3 * i + 1] = (i >> 1) & 1, cube[3 * i + 2] = (i >> 2) & 1;
  double var[3];
  v = sf_ifs_check(cube, 8, 0, 1.0, 0.15, var);
  SF_CHECK(v == SF_IFS_ACCEPT && fabs(var[0] - 1.0) < 1e-15, "cube corners: verdict %d, var %g (want ACCEPT, 1)", (int)v,
           var[0]);
  v = sf_ifs_check(cube, 8, 0, 1.0, 1.0, var);
  SF_CHECK(v == SF_IFS_VARIANCE, "variance 1 must fail a threshold of 1 (strict >): verdict %d", (int)v);
  v = sf_ifs_check(cube, 8, 0, 0.5, 0.2, var);
  SF_CHECK(v == SF_IFS_ACCEPT && fabs(var[1] - 0.25) < 1e-15, "normalize 0.5 scales var to 0.25: %g", var[1]);
  double flat[8 * 3];
  memcpy(flat, cube, sizeof cube);
  for (int i = 0; i < 8; i++) flat[3 * i + 2] = 3.0;
  SF_CHECK(sf_ifs_check(flat, 8, 0, 1.0, 0.15, NULL) == SF_IFS_INVALID, "zero range on z not INVALID");
  cube[5] = NAN;
  SF_CHECK(sf_ifs_check(cube, 8, 0, 1.0, 0.15, NULL) == SF_IFS_INVALID, "NaN not INVALID");
  cube[5] = INFINITY;
  SF_CHECK(sf_ifs_check(cube, 8, 1, 1.0, 0.15, NULL) == SF_IFS_INVALID, "inf not INVALID");
  SF_CHECK(sf_ifs_check(cube, 0, 0, 1.0, 0.15, NULL) == SF_IFS_INVALID, "zero points not INVALID");
  SF_CHECK(sf_ifs_points(pts, 0, P, NULL, 1, 1) == 0, "zero points must be safe and not runaway");
  free(pts);

  /* |det| probabilities on a generic pair */
  double Q[2][SF_IFS_NCOLS] = {{1, 2, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 9}, {0.5, 0, 0, 0, -1, 0, 0, 0, 2, 0, 0, 0, 9}};
  sf_ifs_set_probabilities(Q); /* det 3 and -1 */
  SF_CHECK(fabs(Q[0][12] - 0.75) < 1e-15 && fabs(Q[1][12] - 0.25) < 1e-15, "p = (%g, %g), want (0.75, 0.25)",
           Q[0][12], Q[1][12]);
}

static void test_weights(void)
{
  const double(*W)[12] = sf_weights145();
  static const double vk[12] = {0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6};
  int bad = 0;
  for (int r = 0; r < 145; r++)
    for (int p = 0; p < 12; p++) {
      double want = 1.0;
      if (r < 13 && p == 0) want = (double)(4 + r) / 10.0;
      if (r >= 13 && p == 1 + (r - 13) / 12) want = vk[(r - 13) % 12];
      if (r == 108 && p == 8) want = 0.6; /* the quirk */
      if (W[r][p] != want) {
        if (bad++ < 5) fprintf(stderr, "FAIL weights[%d][%d] = %.17g, want %.17g\n", r, p, W[r][p], want);
      }
    }
  SF_CHECK(bad == 0, "%d weight-table entries differ from spec Appendix A", bad);
  int ones = 1;
  for (int p = 0; p < 12; p++) ones &= W[6][p] == 1.0;
  SF_CHECK(ones, "row 6 is not all ones (the base instance)");
  SF_CHECK(W[108][8] == 0.6 && W[107][8] == 1.5 && W[99][8] == 0.6, "row-108 quirk: W[108][8]=%g W[107][8]=%g", W[108][8],
           W[107][8]);
  int n16 = 0;
  for (int r = 0; r < 145; r++) n16 += W[r][8] == 1.6;
  SF_CHECK(n16 == 0, "column 8 takes 1.6 %d times; the quirk means never", n16);
}

static void test_round_attempts(void)
{
  SF_CHECK(sf_compute_round_attempts(10000, 5, 0, 0, 1) == 10000, "no acceptance data -> batch size");
  SF_CHECK(sf_compute_round_attempts(10000, 5, 0, 500, 1) == 10000, "zero accepted -> batch size");
  /* rate 0.1, remaining 3: ceil(1.1*3/0.1) = 33 */
  SF_CHECK(sf_compute_round_attempts(10000, 3, 10, 100, 1) == 33, "got %ld, want 33",
           sf_compute_round_attempts(10000, 3, 10, 100, 1));
  SF_CHECK(sf_compute_round_attempts(10000, 3, 10, 100, 4) == 9, "4 ranks: got %ld, want ceil(33/4) = 9",
           sf_compute_round_attempts(10000, 3, 10, 100, 4));
  SF_CHECK(sf_compute_round_attempts(20, 3, 10, 100, 1) == 20, "capped by the batch size");
  SF_CHECK(sf_compute_round_attempts(20, 1, 100, 100, 8) == 1, "at least 1");
}

static void test_csv_and_layout(void)
{
  char *dir = sf_test_tmpdir("ifs_csv");
  sf_fractal_class c;
  sf_class_candidate(42, 5, &c);
  char *p = sf_path_join(dir, "000000.csv"), err[512];
  SF_CHECK(sf_fractal_class_save(p, &c, err, sizeof err) == 0, "save: %s", err);
  char *text = sf_read_file(p, NULL);
  char want[2048];
  size_t k = 0;
  for (int t = 0; t < 2; t++)
    for (int j = 0; j < 13; j++) k += (size_t)snprintf(want + k, sizeof want - k, "%.18e%s", c.p[t][j], j < 12 ? "," : "\n");
  SF_CHECK(text && !strcmp(text, want), "CSV text differs from np.savetxt's '%%.18e' format:\n%s\nwant:\n%s", text, want);
  free(text);
  sf_fractal_class back;
  SF_CHECK(sf_fractal_class_load(p, &back, err, sizeof err) == 0, "load: %s", err);
  SF_CHECK(!memcmp(&back, &c, sizeof c), "CSV round trip is not exact");
  for (int t = 0; t < 2; t++)
    for (int j = 0; j < 12; j++)
      SF_CHECK(c.p[t][j] >= -1 && c.p[t][j] < 1, "candidate param [%d][%d] = %g outside [-1, 1)", t, j, c.p[t][j]);
  SF_CHECK(fabs(c.p[0][12] + c.p[1][12] - 1) < 1e-15, "p0 + p1 = %.17g", c.p[0][12] + c.p[1][12]);
  sf_write_file_atomic(p, "1,2,3\n4,5,6\n", 12);
  SF_CHECK(sf_fractal_class_load(p, &back, err, sizeof err) != 0 && strstr(err, "000000.csv"),
           "a 2x3 CSV must be rejected naming the file: '%s'", err);
  free(p);
  /* listing: only 6-digit names, sorted */
  const char *names[] = {"000010.csv", "000002.csv", "abc.csv", "00001.csv", "000003.txt"};
  for (int i = 0; i < 5; i++) {
    char *q = sf_path_join(dir, names[i]);
    sf_write_file_atomic(q, "x", 1);
    free(q);
  }
  char **list;
  int n = sf_fractal_list_class_files(dir, &list);
  SF_CHECK(n == 3 && !strcmp(list[0], "000000.csv") && !strcmp(list[1], "000002.csv") && !strcmp(list[2], "000010.csv"),
           "listing: %d names (want 000000, 000002, 000010)", n);
  sf_free_names(list, n);
  sf_rm_rf(dir);
  free(dir);

  char buf[64];
  struct {
    double v;
    const char *s;
  } fl[] = {{0.15, "0.15"}, {1.0, "1.0"}, {0.1, "0.1"}, {2.5e-5, "2.5e-05"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
            {0.0001, "0.0001"}, {0.3333333333333333, "0.3333333333333333"}, {12.0, "12.0"}, {-0.5, "-0.5"},
            {0.0, "0.0"}, {1.5e300, "1.5e+300"}};
  for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
    sf_format_pyfloat(fl[i].v, buf, sizeof buf);
    SF_CHECK(!strcmp(buf, fl[i].s), "str(%.17g) = '%s', want '%s'", fl[i].v, buf, fl[i].s);
  }
  sf_config c2;
  memset(&c2, 0, sizeof c2);
  c2.fract_base_dir = "fr";
  c2.variance_threshold = 0.15;
  c2.seed = 42;
  c2.point_num = 1024;
  char *ip = sf_fractal_instance_path(&c2, 3, 17), *pd = sf_fractal_param_dir(&c2);
  SF_CHECK(!strcmp(ip, "fr/var0.15/seed42/instances/np1024/000003/000003_0017.npy"), "instance path '%s'", ip);
  /* classes per point count like the instances (the class search depends on it) */
  SF_CHECK(!strcmp(pd, "fr/var0.15/seed42/3DIFS_param/np1024"), "param dir '%s'", pd);
  free(ip);
  free(pd);

  /* legacy layout <base>/var<vt>/3DIFS_param: detected (and warned about), never used */
  char *t = sf_test_tmpdir("legacy");
  c2.fract_base_dir = t;
  SF_CHECK(sf_fractal_warn_legacy(&c2) == 0, "legacy layout reported in an empty directory");
  char *leg = sf_path_join(t, "var0.15/3DIFS_param");
  sf_mkdir_p(leg);
  SF_CHECK(sf_fractal_warn_legacy(&c2) == 1, "legacy layout %s not detected", leg);
  sf_rm_rf(t);
  free(leg);
  free(t);
}

static void test_scheduler_names(void)
{
  char valid[2048];
  const char *s = sf_runtime_resolve_scheduler("heft", NULL, 0);
  SF_CHECK(s && !strcmp(s, "modular-heft"), "heft -> '%s', want modular-heft", s ? s : "(null)");
  const char *names[] = {"eager", "prio", "random", "lws", "ws", "dm", "dmda", "dmdas", "modular-heft"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    s = sf_runtime_resolve_scheduler(names[i], NULL, 0);
    SF_CHECK(s && !strcmp(s, names[i]), "scheduler '%s' not recognised", names[i]);
  }
  s = sf_runtime_resolve_scheduler("fastest", valid, sizeof valid);
  SF_CHECK(s == NULL && strstr(valid, "dmda") && strstr(valid, "eager"), "unknown 'fastest': got %s, list '%s'",
           s ? s : "NULL", valid);
}

int main(void)
{
  test_iteration();
  test_weights();
  test_round_attempts();
  test_csv_and_layout();
  test_scheduler_names();
  return sf_test_end();
}

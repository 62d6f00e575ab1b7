/* U-Net topology: parameter counts against spec §5.2/§9 (exact integers) and against the §5.2
 * formula recomputed here; forward FLOPs against §5.4/§9; PyTorch names, order, offsets and
 * layer shapes; layout conversion round trips; build errors; the printed summary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/model.h"
#include "testutil.h"

/* spec §5.2, item by item: 3^3 conv weights, transposed convs (w+b), GroupNorm, OutConv. */
static void formula(int ps, int b, long long base, long long K, long long out[5])
{
  int L = ps - b;
  long long c[SF_MAX_LEVELS + 1] = {0};
  for (int i = 0; i <= L; i++) c[i] = base << i;
  long long conv = 3 * c[0] + c[0] * c[0], convt = 0, gn = 2 * c[0];
  for (int i = 1; i <= L; i++) conv += c[i - 1] * c[i] + c[i] * c[i], gn += 2 * c[i];
  for (int j = 1; j <= L; j++) {
    conv += c[j] * c[j - 1] + c[j - 1] * c[j - 1];
    convt += 8 * c[j] * c[j - 1] + c[j - 1];
    gn += 2 * c[j - 1];
  }
  out[0] = 27 * conv;
  out[1] = convt;
  out[2] = 2 * gn;
  out[3] = c[0] * K + K;
  out[4] = out[0] + out[1] + out[2] + out[3];
}

static void kind_totals(const sf_unet *u, long long out[5])
{
  memset(out, 0, 5 * sizeof *out);
  for (int i = 0; i < u->nparams; i++) {
    const sf_param_desc *p = &u->params[i];
    int slot = p->kind == SF_PARAM_CONV3_W                                   ? 0
               : p->kind == SF_PARAM_UPCONV_W || p->kind == SF_PARAM_UPCONV_B ? 1
               : p->kind == SF_PARAM_GN_GAMMA || p->kind == SF_PARAM_GN_BETA  ? 2
                                                                              : 3;
    out[slot] += (long long)p->numel;
    out[4] += (long long)p->numel;
  }
}

static void check_counts(void)
{
  /* spec §9 (b = 3, K = 6, base 64) */
  static const long long want[] = {1178118LL,   5423238LL,     22400390LL,    90302342LL,
                                   361896838LL, 1448248198LL, 5793600390LL, 23174902662LL};
  static const double gflop[] = {4.42, 49.2, 448.9, 3813, 31392, 254683, 2051654, 16469997};
  static const double half_ulp[] = {0.005, 0.05, 0.05, 0.5, 0.5, 0.5, 0.5, 0.5}; /* of the printed digits */
  for (int ps = 4; ps <= 11; ps++) {
    sf_unet u;
    char err[256];
    SF_CHECK(sf_unet_build(&u, ps, 3, 64, 6, 8, err, sizeof err) == 0, "ps %d: %s", ps, err);
    SF_CHECK((long long)u.total_params == want[ps - 4], "ps %d: %zu parameters, spec §9 says %lld", ps,
             u.total_params, want[ps - 4]);
    long long f[5], k[5];
    formula(ps, 3, 64, 6, f);
    kind_totals(&u, k);
    for (int i = 0; i < 5; i++)
      SF_CHECK(k[i] == f[i], "ps %d: parameter group %d has %lld, the §5.2 formula gives %lld", ps, i, k[i], f[i]);
    double g = u.forward_flops / 1e9;
    SF_CHECK(fabs(g - gflop[ps - 4]) <= half_ulp[ps - 4], "ps %d: %.3f GFLOP, spec §9 says %g", ps, g,
             gflop[ps - 4]);
    printf("ps %2d: %14zu parameters, %12.2f GFLOP forward\n", ps, u.total_params, g);
    sf_unet_free(&u);
  }

  /* spec §5.2 breakdown at ps 6 and ps 7 */
  static const long long brk[2][4] = {{21017664LL, 1376704LL, 5632LL, 390LL}, {84718656LL, 5571520LL, 11776LL, 390LL}};
  for (int ps = 6; ps <= 7; ps++) {
    sf_unet u;
    char err[256];
    SF_CHECK(sf_unet_build(&u, ps, 3, 64, 6, 8, err, sizeof err) == 0, "%s", err);
    long long k[5];
    kind_totals(&u, k);
    for (int i = 0; i < 4; i++)
      SF_CHECK(k[i] == brk[ps - 6][i], "ps %d group %d: %lld, spec §5.2 says %lld", ps, i, k[i], brk[ps - 6][i]);
    /* §5.4: exact MAC counts */
    double macs = u.forward_flops / 2;
    double want_macs = ps == 6 ? 224462372864.0 : 1906562826240.0;
    SF_CHECK(macs == want_macs, "ps %d: %.0f MACs, spec §5.4 says %.0f", ps, macs, want_macs);
    double want_g = ps == 6 ? 448.92 : 3813.13;
    SF_CHECK(fabs(u.forward_flops / 1e9 - want_g) < 0.005, "ps %d: %.4f GFLOP, spec §5.4 says %.2f", ps,
             u.forward_flops / 1e9, want_g);
    sf_unet_free(&u);
  }

  /* small configurations vs the formula */
  static const int cfg[][4] = {{4, 3, 8, 4}, {5, 3, 8, 6}, {6, 2, 16, 3}, {7, 3, 4, 2}};
  for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
    sf_unet u;
    char err[256];
    int groups = cfg[t][2] % 8 == 0 ? 8 : 4;
    SF_CHECK(sf_unet_build(&u, cfg[t][0], cfg[t][1], cfg[t][2], cfg[t][3], groups, err, sizeof err) == 0, "%s",
             err);
    long long f[5], k[5];
    formula(cfg[t][0], cfg[t][1], cfg[t][2], cfg[t][3], f);
    kind_totals(&u, k);
    SF_CHECK(k[4] == f[4] && (long long)u.total_params == f[4],
             "ps %d b %d base %d K %d: %zu parameters, formula %lld", cfg[t][0], cfg[t][1], cfg[t][2], cfg[t][3],
             u.total_params, f[4]);
    sf_unet_free(&u);
  }
}

static void check_table(void)
{
  sf_unet u;
  char err[256];
  SF_CHECK(sf_unet_build(&u, 6, 3, 64, 6, 8, err, sizeof err) == 0, "%s", err);
  int L = u.levels;
  SF_CHECK(L == 3, "levels %d, want 3", L);
  SF_CHECK(u.nparams == 6 * (L + 1) + 8 * L + 2, "%d tensors, want %d", u.nparams, 6 * (L + 1) + 8 * L + 2);
  for (int i = 0; i <= L; i++) {
    SF_CHECK(u.edge[i] == 64 >> i, "edge[%d] = %d, want %d", i, u.edge[i], 64 >> i);
    SF_CHECK(u.channels[i] == 64 << i, "channels[%d] = %d, want %d", i, u.channels[i], 64 << i);
  }
  size_t off = 0;
  for (int i = 0; i < u.nparams; i++) {
    SF_CHECK(u.params[i].offset == off, "%s: offset %zu, want %zu (contiguous)", u.params[i].name,
             u.params[i].offset, off);
    off += u.params[i].numel;
    SF_CHECK(sf_unet_find_param(&u, u.params[i].name) == i, "find(%s) != %d", u.params[i].name, i);
  }
  SF_CHECK(off == u.total_params, "sum of numel %zu != total %zu", off, u.total_params);
  SF_CHECK(sf_unet_find_param(&u, "up4.up.weight") == -1, "up4 must not exist at L 3");

  /* named_parameters() order and shapes */
  struct { int idx; const char *name; sf_param_kind kind; int cin, cout; size_t numel; } want[] = {
      {0, "inc.double_conv.0.weight", SF_PARAM_CONV3_W, 3, 64, 27 * 3 * 64},
      {1, "inc.double_conv.1.weight", SF_PARAM_GN_GAMMA, 64, 64, 64},
      {2, "inc.double_conv.1.bias", SF_PARAM_GN_BETA, 64, 64, 64},
      {3, "inc.double_conv.3.weight", SF_PARAM_CONV3_W, 64, 64, 27 * 64 * 64},
      {5, "inc.double_conv.4.bias", SF_PARAM_GN_BETA, 64, 64, 64},
      {6, "down1.maxpool_conv.1.double_conv.0.weight", SF_PARAM_CONV3_W, 64, 128, 27 * 64 * 128},
      {18, "down3.maxpool_conv.1.double_conv.0.weight", SF_PARAM_CONV3_W, 256, 512, 27 * 256 * 512},
      {24, "up1.up.weight", SF_PARAM_UPCONV_W, 512, 256, 8 * 512 * 256},
      {25, "up1.up.bias", SF_PARAM_UPCONV_B, 512, 256, 256},
      {26, "up1.conv.double_conv.0.weight", SF_PARAM_CONV3_W, 512, 256, 27 * 512 * 256},
      {29, "up1.conv.double_conv.3.weight", SF_PARAM_CONV3_W, 256, 256, 27 * 256 * 256},
      {40, "up3.up.weight", SF_PARAM_UPCONV_W, 128, 64, 8 * 128 * 64},
      {42, "up3.conv.double_conv.0.weight", SF_PARAM_CONV3_W, 128, 64, 27 * 128 * 64},
      {47, "up3.conv.double_conv.4.bias", SF_PARAM_GN_BETA, 64, 64, 64},
      {48, "outc.conv.weight", SF_PARAM_OUT_W, 64, 6, 64 * 6},
      {49, "outc.conv.bias", SF_PARAM_OUT_B, 64, 6, 6},
  };
  for (size_t t = 0; t < sizeof want / sizeof want[0]; t++) {
    const sf_param_desc *p = &u.params[want[t].idx];
    SF_CHECK(strcmp(p->name, want[t].name) == 0, "param %d is %s, want %s", want[t].idx, p->name, want[t].name);
    SF_CHECK(p->kind == want[t].kind && p->cin == want[t].cin && p->cout == want[t].cout &&
                 p->numel == want[t].numel,
             "%s: kind %d cin %d cout %d numel %zu; want %d %d %d %zu", p->name, p->kind, p->cin, p->cout, p->numel,
             want[t].kind, want[t].cin, want[t].cout, want[t].numel);
  }
  /* init bounds (spec §5.3) */
  SF_CHECK(fabsf(u.params[0].init_bound - (float)(1 / sqrt(81.0))) < 1e-7f, "inc conv bound %g", u.params[0].init_bound);
  SF_CHECK(fabsf(u.params[24].init_bound - (float)(1 / sqrt(256 * 8.0))) < 1e-7f, "up1 bound %g",
           u.params[24].init_bound);
  SF_CHECK(fabsf(u.params[49].init_bound - 0.125f) < 1e-7f, "outc bias bound %g", u.params[49].init_bound);
  sf_unet_free(&u);
}

static void check_layouts(void)
{
  /* one element of each kind, then full round trips */
  sf_param_desc c3 = {"c3", SF_PARAM_CONV3_W, 3, 5, 27 * 15, 0, 0};
  sf_param_desc up = {"up", SF_PARAM_UPCONV_W, 4, 2, 8 * 8, 0, 0};
  sf_param_desc o1 = {"o1", SF_PARAM_OUT_W, 5, 3, 15, 0, 0};
  sf_param_desc gb = {"g", SF_PARAM_GN_GAMMA, 7, 7, 7, 0, 0};
  sf_param_desc *all[] = {&c3, &up, &o1, &gb};
  float torch[405], ours[405], back[405];
  for (int i = 0; i < 405; i++) torch[i] = (float)i;
  sf_param_from_torch(&c3, ours, torch);
  /* torch (co=4, ci=2, kd=1, kh=2, kw=0) -> ours (kd,kh,kw,ci,co) */
  int k = (1 * 3 + 2) * 3 + 0, ti = (4 * 3 + 2) * 27 + k, oi = (k * 3 + 2) * 5 + 4;
  SF_CHECK(ours[oi] == torch[ti], "conv3 layout: ours[%d] = %g, want %g", oi, ours[oi], torch[ti]);
  sf_param_from_torch(&up, ours, torch);
  /* torch (ci=3, co=1, a=1, p=0, q=1) -> ours (ci, a,p,q, co) */
  k = 1 * 4 + 0 * 2 + 1;
  ti = (3 * 2 + 1) * 8 + k;
  oi = (3 * 8 + k) * 2 + 1;
  SF_CHECK(ours[oi] == torch[ti], "upconv layout: ours[%d] = %g, want %g", oi, ours[oi], torch[ti]);
  sf_param_from_torch(&o1, ours, torch);
  SF_CHECK(ours[4 * 3 + 1] == torch[1 * 5 + 4], "conv1 layout: ours[13] = %g, want %g", ours[13], torch[9]);
  for (size_t t = 0; t < 4; t++) {
    sf_param_from_torch(all[t], ours, torch);
    sf_param_to_torch(all[t], back, ours);
    SF_CHECK(memcmp(back, torch, all[t]->numel * sizeof(float)) == 0, "%s: torch -> ours -> torch differs",
             all[t]->name);
  }
}

static void check_errors(void)
{
  sf_unet u;
  char err[256] = "";
  SF_CHECK(sf_unet_build(&u, 3, 3, 64, 6, 8, err, sizeof err) == -1 && strstr(err, "level"),
           "ps 3 b 3 must fail with a message about levels, got \"%s\"", err);
  err[0] = '\0';
  SF_CHECK(sf_unet_build(&u, 6, 3, 12, 6, 8, err, sizeof err) == -1 && strstr(err, "divisible"),
           "base 12 with 8 groups must fail, got \"%s\"", err);
  err[0] = '\0';
  SF_CHECK(sf_unet_build(&u, 20, 3, 64, 6, 8, err, sizeof err) == -1 && strstr(err, "17"),
           "17 levels must be refused, got \"%s\"", err);
  err[0] = '\0';
  SF_CHECK(sf_unet_build(&u, 6, 3, 64, 1, 8, err, sizeof err) == -1 && strstr(err, "n_classes"),
           "1 class must be refused, got \"%s\"", err);
}

static void check_print(void)
{
  sf_unet u;
  char err[256], *buf = NULL;
  size_t len = 0;
  SF_CHECK(sf_unet_build(&u, 6, 3, 64, 6, 8, err, sizeof err) == 0, "%s", err);
  FILE *f = open_memstream(&buf, &len);
  sf_unet_print(&u, f);
  fclose(f);
  fputs(buf, stdout);
  SF_CHECK(strstr(buf, "22,400,390") != NULL, "summary lacks the total 22,400,390");
  SF_CHECK(strstr(buf, "8x8x8") != NULL && strstr(buf, "64x64x64") != NULL, "summary lacks the level shapes");
  SF_CHECK(strstr(buf, "448.92") != NULL, "summary lacks the 448.92 GFLOP forward");
  free(buf);
  sf_unet_free(&u);
}

int main(void)
{
  check_counts();
  check_table();
  check_layouts();
  check_errors();
  check_print();
  return sf_test_end();
}

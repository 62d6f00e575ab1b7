/* The ScaFFold U-Net topology (spec §5): levels, channels, the parameter table in PyTorch's
 * named_parameters() order (inc, down1..downL, up1..upL with up1 the deepest, outc), forward FLOPs,
 * the per-level summary printed by `scaffold benchmark -v`, and conversion of one parameter tensor
 * between PyTorch's layout and ours (ops.h). */
#include "scaffold/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "scaffold/common.h"

static void add_param(sf_unet *u, const char *name, sf_param_kind kind, int cin, int cout, size_t numel,
                      double bound)
{
  sf_param_desc *p = &u->params[u->nparams++];
  SF_ASSERT(strlen(name) < sizeof p->name);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->kind = kind;
  p->cin = cin;
  p->cout = cout;
  p->numel = numel;
  p->offset = u->total_params;
  p->init_bound = (float)bound;
  u->total_params += numel;
}

/* DoubleConv(cin, cout) under `prefix`: conv (no bias), GN, ReLU, conv, GN, ReLU. */
static void add_double_conv(sf_unet *u, const char *prefix, int cin, int cout)
{
  char n[64];
  snprintf(n, sizeof n, "%s.double_conv.0.weight", prefix);
  add_param(u, n, SF_PARAM_CONV3_W, cin, cout, (size_t)27 * cin * cout, 1.0 / sqrt(27.0 * cin));
  snprintf(n, sizeof n, "%s.double_conv.1.weight", prefix);
  add_param(u, n, SF_PARAM_GN_GAMMA, cout, cout, (size_t)cout, 0);
  snprintf(n, sizeof n, "%s.double_conv.1.bias", prefix);
  add_param(u, n, SF_PARAM_GN_BETA, cout, cout, (size_t)cout, 0);
  snprintf(n, sizeof n, "%s.double_conv.3.weight", prefix);
  add_param(u, n, SF_PARAM_CONV3_W, cout, cout, (size_t)27 * cout * cout, 1.0 / sqrt(27.0 * cout));
  snprintf(n, sizeof n, "%s.double_conv.4.weight", prefix);
  add_param(u, n, SF_PARAM_GN_GAMMA, cout, cout, (size_t)cout, 0);
  snprintf(n, sizeof n, "%s.double_conv.4.bias", prefix);
  add_param(u, n, SF_PARAM_GN_BETA, cout, cout, (size_t)cout, 0);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int sf_unet_build(sf_unet *u, int problem_scale, int bottleneck, int base_channels, int n_classes,
                  int groups, char *err, size_t errlen)
{
  memset(u, 0, sizeof *u);
  int L = problem_scale - bottleneck;
  if (problem_scale < 1 || problem_scale > 30)
    return fail(err, errlen, "problem_scale %d is out of range (expected 1..30)", problem_scale);
  if (bottleneck < 0)
    return fail(err, errlen, "bottleneck %d is out of range (expected >= 0)", bottleneck);
  if (L < 1)
    return fail(err, errlen, "problem_scale %d - bottleneck %d = %d U-Net levels; at least 1 is needed",
                problem_scale, bottleneck, L);
  if (L > SF_MAX_LEVELS)
    return fail(err, errlen, "problem_scale %d - bottleneck %d = %d U-Net levels; at most %d are supported",
                problem_scale, bottleneck, L, SF_MAX_LEVELS);
  if (base_channels < 1) return fail(err, errlen, "base channels %d must be >= 1", base_channels);
  if ((long long)base_channels << L > (1 << 24))
    return fail(err, errlen, "base channels %d x 2^%d exceeds %d channels", base_channels, L, 1 << 24);
  if (n_classes < 2) return fail(err, errlen, "n_classes %d must be >= 2 (background + 1)", n_classes);
  if (groups < 1) return fail(err, errlen, "group_norm_groups %d must be >= 1", groups);
  if (base_channels % groups != 0)
    return fail(err, errlen, "base channels %d are not divisible by group_norm_groups %d", base_channels,
                groups);

  u->problem_scale = problem_scale;
  u->bottleneck = bottleneck;
  u->levels = L;
  u->base_channels = base_channels;
  u->n_classes = n_classes;
  u->groups = groups;
  u->in_channels = 3;
  for (int i = 0; i <= L; i++) {
    u->edge[i] = 1 << (problem_scale - i);
    u->channels[i] = base_channels << i;
  }

  int max_params = 6 * (L + 1) + 8 * L + 2;
  u->params = sf_calloc((size_t)max_params, sizeof *u->params, "U-Net parameter table");
  const int *c = u->channels;
  char n[64];

  add_double_conv(u, "inc", u->in_channels, c[0]);
  for (int i = 1; i <= L; i++) {
    snprintf(n, sizeof n, "down%d.maxpool_conv.1", i);
    add_double_conv(u, n, c[i - 1], c[i]);
  }
  for (int k = 1; k <= L; k++) { /* up1 is the deepest: Up(c_L, c_{L-1}) */
    int j = L - k + 1, cin = c[j], cout = c[j - 1];
    double bound = 1.0 / sqrt(8.0 * (cin / 2)); /* torch's fan_in: weight dim 1 (out channels) x 8 */
    snprintf(n, sizeof n, "up%d.up.weight", k);
    add_param(u, n, SF_PARAM_UPCONV_W, cin, cin / 2, (size_t)8 * cin * (cin / 2), bound);
    snprintf(n, sizeof n, "up%d.up.bias", k);
    add_param(u, n, SF_PARAM_UPCONV_B, cin, cin / 2, (size_t)(cin / 2), bound);
    snprintf(n, sizeof n, "up%d.conv", k);
    add_double_conv(u, n, cin, cout);
  }
  add_param(u, "outc.conv.weight", SF_PARAM_OUT_W, c[0], n_classes, (size_t)c[0] * n_classes, 1.0 / sqrt(c[0]));
  add_param(u, "outc.conv.bias", SF_PARAM_OUT_B, c[0], n_classes, (size_t)n_classes, 1.0 / sqrt(c[0]));
  SF_ASSERT(u->nparams == max_params);

  /* Forward FLOPs (spec §5.4): 2 x MACs of the 3^3 convs, the transposed convs and the OutConv. */
  double macs = 0;
  for (int i = 0; i <= L; i++) {
    double v = pow((double)u->edge[i], 3), cin = i == 0 ? u->in_channels : c[i - 1];
    macs += v * 27.0 * (cin * c[i] + (double)c[i] * c[i]); /* encoder DoubleConv at level i */
  }
  for (int j = 1; j <= L; j++) {
    double v = pow((double)u->edge[j - 1], 3);
    macs += v * c[j] * (double)c[j - 1];                                          /* ConvTranspose */
    macs += v * 27.0 * ((double)c[j] * c[j - 1] + (double)c[j - 1] * c[j - 1]); /* decoder DoubleConv */
  }
  macs += pow((double)u->edge[0], 3) * c[0] * (double)n_classes; /* OutConv */
  u->forward_flops = 2.0 * macs;
  return 0;
}

void sf_unet_free(sf_unet *u)
{
  if (!u) return;
  free(u->params);
  u->params = NULL;
  u->nparams = 0;
}

int sf_unet_find_param(const sf_unet *u, const char *name)
{
  for (int i = 0; i < u->nparams; i++)
    if (strcmp(u->params[i].name, name) == 0) return i;
  return -1;
}

/* Sum of the numels of every parameter whose name starts with prefix. */
static size_t params_with_prefix(const sf_unet *u, const char *prefix)
{
  size_t n = 0, len = strlen(prefix);
  for (int i = 0; i < u->nparams; i++)
    if (strncmp(u->params[i].name, prefix, len) == 0) n += u->params[i].numel;
  return n;
}

static void fmt_count(char *buf, size_t len, size_t v)
{
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "%zu", v), o = 0;
  for (int i = 0; i < n && o + 2 < (int)len; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = tmp[i];
  }
  buf[o] = '\0';
}

void sf_unet_print(const sf_unet *u, FILE *out)
{
  int L = u->levels;
  char a[32], b[32], t[32];
  fprintf(out, "U-Net: problem_scale %d, bottleneck %d -> %d levels, base %d channels, %d classes, "
               "GroupNorm %d groups\n",
          u->problem_scale, u->bottleneck, L, u->base_channels, u->n_classes, u->groups);
  fprintf(out, "  %-5s %-16s %8s  %-22s %12s  %-18s %12s\n", "level", "shape (DHW)", "channels", "encoder",
          "params", "decoder", "params");
  for (int i = 0; i <= L; i++) {
    char enc[32], dec[32], shape[32];
    size_t pe, pd = 0;
    if (i == 0) {
      snprintf(enc, sizeof enc, "inc");
      pe = params_with_prefix(u, "inc.");
    } else {
      snprintf(enc, sizeof enc, "down%d (pool+conv)", i);
      char p[32];
      snprintf(p, sizeof p, "down%d.", i);
      pe = params_with_prefix(u, p);
    }
    if (i < L) { /* the Up whose output is this level: up_{L-i} */
      char p[32];
      snprintf(p, sizeof p, "up%d.", L - i);
      pd = params_with_prefix(u, p);
      snprintf(dec, sizeof dec, "up%d%s", L - i, i == 0 ? " + outc" : "");
      if (i == 0) pd += params_with_prefix(u, "outc.");
    } else {
      snprintf(dec, sizeof dec, "-");
    }
    snprintf(shape, sizeof shape, "%dx%dx%d", u->edge[i], u->edge[i], u->edge[i]);
    fmt_count(a, sizeof a, pe);
    fmt_count(b, sizeof b, pd);
    fprintf(out, "  %-5d %-16s %8d  %-22s %12s  %-18s %12s\n", i, shape, u->channels[i], enc, a, dec,
            i < L ? b : "-");
  }
  fmt_count(t, sizeof t, u->total_params);
  fprintf(out, "  total: %s parameters in %d tensors (%.1f MiB fp32), forward %.2f GFLOP/sample\n", t,
          u->nparams, (double)u->total_params * 4.0 / (1024.0 * 1024.0), u->forward_flops / 1e9);
}

/* Layouts (ops.h):   ours                       PyTorch
 *   CONV3_W   (3,3,3,Cin,Cout) [k][ci][co]     (Cout,Cin,3,3,3) [co][ci][k]
 *   UPCONV_W  (Cin,2,2,2,Cout) [ci][k][co]     (Cin,Cout,2,2,2) [ci][co][k]
 *   OUT_W     (Cin,Cout)       [ci][co]        (Cout,Cin,1,1,1) [co][ci]
 *   vectors: identical. to_torch != 0 converts ours -> torch. */
static void convert(const sf_param_desc *p, float *dst, const float *src, int to_torch)
{
  SF_ASSERT(dst != src);
  size_t ci_n = (size_t)p->cin, co_n = (size_t)p->cout;
  switch (p->kind) {
  case SF_PARAM_CONV3_W:
    for (size_t k = 0; k < 27; k++)
      for (size_t ci = 0; ci < ci_n; ci++)
        for (size_t co = 0; co < co_n; co++) {
          size_t ours = (k * ci_n + ci) * co_n + co, torch = (co * ci_n + ci) * 27 + k;
          if (to_torch) dst[torch] = src[ours];
          else dst[ours] = src[torch];
        }
    break;
  case SF_PARAM_UPCONV_W:
    for (size_t ci = 0; ci < ci_n; ci++)
      for (size_t k = 0; k < 8; k++)
        for (size_t co = 0; co < co_n; co++) {
          size_t ours = (ci * 8 + k) * co_n + co, torch = (ci * co_n + co) * 8 + k;
          if (to_torch) dst[torch] = src[ours];
          else dst[ours] = src[torch];
        }
    break;
  case SF_PARAM_OUT_W:
    for (size_t ci = 0; ci < ci_n; ci++)
      for (size_t co = 0; co < co_n; co++) {
        size_t ours = ci * co_n + co, torch = co * ci_n + ci;
        if (to_torch) dst[torch] = src[ours];
        else dst[ours] = src[torch];
      }
    break;
  case SF_PARAM_GN_GAMMA:
  case SF_PARAM_GN_BETA:
  case SF_PARAM_UPCONV_B:
  case SF_PARAM_OUT_B:
    memcpy(dst, src, p->numel * sizeof(float));
    break;
  default:
    SF_ABORT("parameter %s has unknown kind %d", p->name, (int)p->kind);
  }
}

void sf_param_from_torch(const sf_param_desc *p, float *ours, const float *torch_layout)
{
  convert(p, ours, torch_layout, 0);
}

void sf_param_to_torch(const sf_param_desc *p, float *torch_layout, const float *ours)
{
  convert(p, torch_layout, ours, 1);
}

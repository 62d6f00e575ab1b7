/* The 3x3x3 convolution's variants by name and by shape: what each is called in reports and tuning records,
 * which can run a given call (kernel set, bf16 engine, Winograd's fit), and one dispatcher that runs a named
 * variant for any direction. The entry (conv3d.c) runs what its rules or the tuning record chose through it,
 * and the tuner (conv3d_tune.c) times candidates through it, so both run exactly the same code. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "scaffold/common.h"
#include "scaffold/cpu_isa.h"
#include "scaffold/kernel_tuning.h"
#include "scaffold/ops.h"
#include "scaffold/switches.h"

#include "conv3d_bf16_internal.h"
#include "conv3d_small.h"
#include "conv3d_variants.h"

/* ---- the Winograd switch ----------------------------------------------------------------------------- */
static int wino_on = -1;
static pthread_once_t wino_once = PTHREAD_ONCE_INIT;
static void wino_decide(void)
{
  wino_on = !sf_switch_is("SF_CONV_WINOGRAD", "0");
}

int sf_conv_winograd_active(void)
{
  pthread_once(&wino_once, wino_decide);
  return wino_on && sf_cpu_isa_active() >= SF_ISA_AVX2;
}

void sf_conv_winograd_set_for_testing(int on)
{
  pthread_once(&wino_once, wino_decide);
  wino_on = on;
}

/* ---- names ---- */
const char *sf_conv3d_variant_name(sf_conv3d_variant v)
{
  static char names[2][4][32]; /* [winograd?][kernel set] */
  sf_cpu_isa isa = sf_cpu_isa_active();
  switch (v) {
  case SF_CONV3D_IM2COL: return "im2col";
  case SF_CONV3D_VDPBF16: return "vdpbf16ps";
  case SF_CONV3D_WINOGRAD_BF16: return "winograd-vdpbf16ps";
  case SF_CONV3D_AMX: return "amx";
  case SF_CONV3D_SMALL: return "small";
  case SF_CONV3D_DIRECT:
  case SF_CONV3D_WINOGRAD: {
    int wino = v == SF_CONV3D_WINOGRAD, i = (int)isa & 3;
    if (!names[wino][i][0]) /* a race writes the same bytes */
      snprintf(names[wino][i], sizeof names[wino][i], "%s-%s", wino ? "winograd" : "direct", sf_cpu_isa_name(isa));
    return names[wino][i];
  }
  }
  return "?";
}

static const sf_conv3d_variant all_variants[] = {SF_CONV3D_IM2COL, SF_CONV3D_DIRECT,  SF_CONV3D_WINOGRAD,
                                                 SF_CONV3D_VDPBF16, SF_CONV3D_AMX, SF_CONV3D_WINOGRAD_BF16,
                                                 SF_CONV3D_SMALL};
#define NVARIANTS ((int)(sizeof all_variants / sizeof all_variants[0]))

int sf_conv3d_variant_from_name(const char *name)
{
  for (int i = 0; i < NVARIANTS; i++)
    if (!strcmp(name, sf_conv3d_variant_name(all_variants[i]))) return (int)all_variants[i];
  return -1;
}

/* dX is a forward conv of dy: its Winograd fit is for K, N = Cout, Cin */
static int wino_fits(const sf_conv3d_shape *s, int bf16)
{
  int back = s->dir == SF_CONV3D_BACKWARD_DATA;
  int K = back ? s->Cout : s->Cin, N = back ? s->Cin : s->Cout;
  if (!sf_conv_winograd_active()) return 0;
  return bf16 ? sf_conv3d_winograd_bf16_fits(s->nd, s->H, s->W, K, N) : sf_conv3d_winograd_fits(s->nd, s->H, s->W, K, N);
}

int sf_conv3d_variant_runs(sf_conv3d_variant v, const sf_conv3d_shape *s)
{
  int taps = s->dir == SF_CONV3D_BACKWARD_WEIGHTS_TAPS, dw = s->dir == SF_CONV3D_BACKWARD_WEIGHTS;
  sf_bf16_engine engine = sf_bf16_engine_active();
  if (s->bf16) {
    if (dw) return 0; /* bf16 weight gradients run per range of taps */
    switch (v) {
    case SF_CONV3D_AMX: return engine == SF_BF16_AMX;
    case SF_CONV3D_VDPBF16: return engine == SF_BF16_VDPBF16PS;
    case SF_CONV3D_WINOGRAD_BF16: return engine == SF_BF16_VDPBF16PS && wino_fits(s, 1); /* taps: K, N = Cin, Cout */
    default: return 0;
    }
  }
  switch (v) {
  case SF_CONV3D_IM2COL: return !taps || s->Cout >= SF_CONV_DW_T_COUT;
  case SF_CONV3D_DIRECT: return sf_conv3d_direct_available() && (!taps || s->Cout >= SF_CONV_DW_T_COUT);
  case SF_CONV3D_WINOGRAD: return !taps && wino_fits(s, 0);
  case SF_CONV3D_SMALL: return !taps && s->Cin <= SF_CONV_SMALL_MAX_C && s->Cout <= SF_CONV_SMALL_MAX_C;
  default: return 0;
  }
}

int sf_conv3d_candidates(const sf_conv3d_shape *s, sf_conv3d_variant *out, int max)
{
  int n = 0;
  for (int i = 0; i < NVARIANTS; i++)
    if (sf_conv3d_variant_runs(all_variants[i], s) && n < max) out[n++] = all_variants[i];
  return n;
}

/* One call of variant v. Arguments in the order of the direction's entry: forward (y; x planes; w),
 * dX (dx; dy planes; w), dW (dw; x planes; dy), dW taps t0..t1 (the same). */
void sf_conv3d_run(sf_conv3d_variant v, const sf_conv3d_shape *s, float *out, const float *lo, const float *mid,
                   const float *hi, const float *other, int t0, int t1)
{
  int nd = s->nd, H = s->H, W = s->W, Cin = s->Cin, Cout = s->Cout;
  switch (s->dir) {
  case SF_CONV3D_FORWARD:
  case SF_CONV3D_BACKWARD_DATA: {
    int back = s->dir == SF_CONV3D_BACKWARD_DATA;
    switch (v) {
    case SF_CONV3D_AMX: sf_conv3d_amx(out, lo, mid, hi, other, nd, H, W, Cin, Cout, back); return;
    case SF_CONV3D_VDPBF16: sf_conv3d_vdpbf16(out, lo, mid, hi, other, nd, H, W, Cin, Cout, back); return;
    case SF_CONV3D_WINOGRAD_BF16:
      (back ? sf_conv3d_backward_data_winograd_bf16 : sf_conv3d_forward_winograd_bf16)(out, lo, mid, hi, other, nd, H,
                                                                                         W, Cin, Cout);
      return;
    case SF_CONV3D_WINOGRAD:
      (back ? sf_conv3d_backward_data_winograd : sf_conv3d_forward_winograd)(out, lo, mid, hi, other, nd, H, W, Cin,
                                                                             Cout);
      return;
    case SF_CONV3D_DIRECT:
      (back ? sf_conv3d_backward_data_direct : sf_conv3d_forward_direct)(out, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    case SF_CONV3D_IM2COL:
      (back ? sf_conv3d_backward_data_im2col : sf_conv3d_forward_im2col)(out, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    case SF_CONV3D_SMALL:
      (back ? sf_conv3d_backward_data_small : sf_conv3d_forward_small)(out, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    }
    break;
  }
  case SF_CONV3D_BACKWARD_WEIGHTS:
    switch (v) {
    case SF_CONV3D_WINOGRAD: sf_conv3d_backward_weights_winograd(out, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    case SF_CONV3D_DIRECT: sf_conv3d_backward_weights_direct(out, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    case SF_CONV3D_IM2COL: sf_conv3d_backward_weights_im2col(out, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    case SF_CONV3D_SMALL: sf_conv3d_backward_weights_small(out, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    default: break;
    }
    break;
  case SF_CONV3D_BACKWARD_WEIGHTS_TAPS:
    switch (v) {
    case SF_CONV3D_AMX: sf_conv3d_weights_amx(out, t0, t1, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    case SF_CONV3D_VDPBF16: sf_conv3d_weights_vdpbf16(out, t0, t1, lo, mid, hi, other, nd, H, W, Cin, Cout); return;
    case SF_CONV3D_WINOGRAD_BF16:
      sf_conv3d_backward_weights_winograd_bf16(out, t0, t1, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    case SF_CONV3D_DIRECT:
      sf_conv3d_backward_weights_taps_direct(out, t0, t1, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    case SF_CONV3D_IM2COL:
      sf_conv3d_backward_weights_taps_im2col(out, t0, t1, lo, mid, hi, other, nd, H, W, Cin, Cout);
      return;
    default: break;
    }
    break;
  }
  SF_ABORT("sf_conv3d_run: variant %s cannot run direction %d", sf_conv3d_variant_name(v), (int)s->dir);
}

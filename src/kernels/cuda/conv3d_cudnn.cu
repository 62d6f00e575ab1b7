/* cuDNN engine for the 3x3x3 convolution (SF_GPU_CUDNN; built only with cuDNN, CUDA only). The slab
 * and its halo planes are first assembled into one (nd+2)-plane NDHWC buffer (zero planes at the
 * volume's faces), then:
 *   forward:  y  = conv(xa, pad (0,1,1))                        xa: (nd+2,H,W,Cin)
 *   dX:       dx = backward-data with dya as the output of a conv with pad (2,1,1) over (nd,H,W,Cin)
 *   dW:       dw += backward-filter(xa, dy, pad (0,1,1)), transposed from cuDNN's (Cout,3,3,3,Cin)
 * Weights are converted to cuDNN's KTRSC layout per call (small). fp32 runs with CUDNN_FMA_MATH (no
 * TF32, like the cuBLAS path), TF32 with the default math; bf16 uses bf16 tensors with fp32 compute (PSEUDO_BFLOAT16), its
 * output converted back to fp32. Each thread keeps one cuDNN handle (bound to the call's stream) and a
 * small cache of descriptors + the algorithm cudnnFind* picked for each shape (first use of a shape
 * synchronises the device once while cuDNN benchmarks its algorithms). A shape cuDNN cannot run (no
 * algorithm, or over 2^31 elements) returns -1 and the caller uses im2col + cuBLAS. */
#include <cudnn.h>
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

#define SF_DNN_CHECK(call)                                                                            \
  do {                                                                                                \
    cudnnStatus_t sf_d_ = (call);                                                                     \
    if (sf_d_ != CUDNN_STATUS_SUCCESS) sf_gpu_fail(__FILE__, __LINE__, #call, cudnnGetErrorString(sf_d_)); \
  } while (0)

#define PLAN_CACHE 48
#define DNN_MAX_WS ((size_t)4 << 30)

typedef struct {
  int used, dir, prec, nd, H, W, Cin, Cout, device;
  cudnnTensorDescriptor_t xd, yd; /* the conv's input x and output y (as cuDNN sees them) */
  cudnnFilterDescriptor_t fd;
  cudnnConvolutionDescriptor_t cd;
  int algo;
  size_t ws;
} dnn_plan;

static thread_local cudnnHandle_t g_dnn;
static thread_local int g_dnn_dev = -1;
static thread_local dnn_plan g_plans[PLAN_CACHE];
static thread_local int g_next;

static void plan_destroy(dnn_plan *p)
{
  if (!p->used) return;
  cudnnDestroyTensorDescriptor(p->xd);
  cudnnDestroyTensorDescriptor(p->yd);
  cudnnDestroyFilterDescriptor(p->fd);
  cudnnDestroyConvolutionDescriptor(p->cd);
  p->used = 0;
}

void sf_gpu_dnn_release(void)
{
  for (int i = 0; i < PLAN_CACHE; i++) plan_destroy(&g_plans[i]);
  if (g_dnn_dev >= 0) cudnnDestroy(g_dnn);
  g_dnn_dev = -1;
}

static cudnnHandle_t dnn_handle(cudaStream_t s)
{
  int dev = 0;
  SF_CUDA_CHECK(cudaGetDevice(&dev));
  if (g_dnn_dev != dev) {
    if (g_dnn_dev >= 0) sf_gpu_dnn_release();
    SF_DNN_CHECK(cudnnCreate(&g_dnn));
    g_dnn_dev = dev;
  }
  SF_DNN_CHECK(cudnnSetStream(g_dnn, s));
  return g_dnn;
}

static void set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t t, int C, int D, int H, int W)
{
  int dims[5] = {1, C, D, H, W};
  SF_DNN_CHECK(cudnnSetTensorNdDescriptorEx(d, CUDNN_TENSOR_NHWC, t, 5, dims));
}

/* Descriptors + algorithm for one (direction, precision, shape), from the cache or cudnnFind*. */
static dnn_plan *get_plan(cudnnHandle_t hd, int dir, int prec, int nd, int H, int W, int Cin, int Cout)
{
  for (int i = 0; i < PLAN_CACHE; i++) {
    dnn_plan *p = &g_plans[i];
    if (p->used && p->dir == dir && p->prec == prec && p->nd == nd && p->H == H && p->W == W && p->Cin == Cin &&
        p->Cout == Cout && p->device == g_dnn_dev)
      return p;
  }
  dnn_plan *p = &g_plans[g_next];
  g_next = (g_next + 1) % PLAN_CACHE;
  plan_destroy(p);
  const int bf16 = prec == SF_PREC_BF16, strict = prec == SF_PREC_FP32;
  const cudnnDataType_t t = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  SF_DNN_CHECK(cudnnCreateTensorDescriptor(&p->xd));
  SF_DNN_CHECK(cudnnCreateTensorDescriptor(&p->yd));
  SF_DNN_CHECK(cudnnCreateFilterDescriptor(&p->fd));
  SF_DNN_CHECK(cudnnCreateConvolutionDescriptor(&p->cd));
  p->used = 1;
  p->dir = dir, p->prec = prec, p->nd = nd, p->H = H, p->W = W, p->Cin = Cin, p->Cout = Cout;
  p->device = g_dnn_dev;
  /* forward and dW: x = assembled (nd+2) planes, y = nd planes, pad_d 0; dX: x = nd planes, y = the
   * assembled (nd+2) dy planes, pad_d 2 */
  const int xD = dir == SF_CONV_BWD_DATA ? nd : nd + 2, yD = dir == SF_CONV_BWD_DATA ? nd + 2 : nd;
  set_tensor(p->xd, t, Cin, xD, H, W);
  set_tensor(p->yd, t, Cout, yD, H, W);
  int fdims[5] = {Cout, Cin, 3, 3, 3};
  SF_DNN_CHECK(cudnnSetFilterNdDescriptor(p->fd, t, CUDNN_TENSOR_NHWC, 5, fdims));
  int pad[3] = {dir == SF_CONV_BWD_DATA ? 2 : 0, 1, 1}, one[3] = {1, 1, 1};
  SF_DNN_CHECK(cudnnSetConvolutionNdDescriptor(p->cd, 3, pad, one, one, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  /* fp32: FMA only (no TF32); TF32: the default math, which allows TF32 on fp32 data */
  const cudnnMathType_t math = bf16 ? CUDNN_TENSOR_OP_MATH : strict ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  SF_DNN_CHECK(cudnnSetConvolutionMathType(p->cd, math));

  enum { NALGO = 16 };
  int got = 0, pick = -1;
  size_t pick_ws = 0;
  cudnnMathType_t pick_math = math;
  if (dir == SF_CONV_FWD) {
    cudnnConvolutionFwdAlgoPerf_t r[NALGO];
    SF_DNN_CHECK(cudnnFindConvolutionForwardAlgorithm(hd, p->xd, p->fd, p->cd, p->yd, NALGO, &got, r));
    for (int i = 0; i < got && pick < 0; i++)
      if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].memory <= DNN_MAX_WS && (!strict || r[i].mathType == CUDNN_FMA_MATH))
        pick = (int)r[i].algo, pick_ws = r[i].memory, pick_math = r[i].mathType;
  } else if (dir == SF_CONV_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t r[NALGO];
    SF_DNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(hd, p->fd, p->yd, p->cd, p->xd, NALGO, &got, r));
    for (int i = 0; i < got && pick < 0; i++)
      if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].memory <= DNN_MAX_WS && (!strict || r[i].mathType == CUDNN_FMA_MATH))
        pick = (int)r[i].algo, pick_ws = r[i].memory, pick_math = r[i].mathType;
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t r[NALGO];
    SF_DNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(hd, p->xd, p->yd, p->cd, p->fd, NALGO, &got, r));
    for (int i = 0; i < got && pick < 0; i++)
      if (r[i].status == CUDNN_STATUS_SUCCESS && r[i].memory <= DNN_MAX_WS && (!strict || r[i].mathType == CUDNN_FMA_MATH))
        pick = (int)r[i].algo, pick_ws = r[i].memory, pick_math = r[i].mathType;
  }
  if (pick < 0) { /* remembered: the caller falls back to cuBLAS for this shape */
    fprintf(stderr,
            "scaffold: cuDNN offers no usable %s algorithm for conv3d %s (nd=%d H=%d W=%d Cin=%d Cout=%d, %d tried); "
            "using im2col + cuBLAS for this shape\n",
            bf16 ? "bf16" : strict ? "fp32 (FMA, no TF32)" : "tf32", dir == SF_CONV_FWD ? "forward" : dir == SF_CONV_BWD_DATA ? "dX" : "dW",
            nd, H, W, Cin, Cout, got);
    p->algo = -1;
    p->ws = 0;
    return p;
  }
  SF_DNN_CHECK(cudnnSetConvolutionMathType(p->cd, pick_math));
  p->algo = pick;
  p->ws = pick_ws;
  return p;
}

/* xa: (nd+2,H,W,C) of T from the slab mid: (nd,H,W,C) and halo planes lo, hi (NULL -> zeros).
 * blockIdx.y = plane. */
template <typename T>
static __global__ void assemble_kernel(T *__restrict__ xa, const float *lo, const float *mid, const float *hi, int nd,
                                       unsigned plane)
{
  const int e = blockIdx.y;
  const float *src = e == 0 ? lo : e == nd + 1 ? hi : mid + (size_t)(e - 1) * plane;
  T *dst = xa + (size_t)e * plane;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < plane; i += gridDim.x * blockDim.x)
    dst[i] = sf_cvt<T>(src ? src[i] : 0.0f);
}

/* wc: (Cout,3,3,3,Cin) of T from w: (3,3,3,Cin,Cout) */
template <typename T>
static __global__ void to_krsc_kernel(T *__restrict__ wc, const float *__restrict__ w, int Cin, int Cout)
{
  const size_t n = (size_t)27 * Cin * Cout;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int ci = (int)(i % Cin);
    size_t t = i / Cin;
    int k = (int)(t % 27), co = (int)(t / 27);
    wc[i] = sf_cvt<T>(w[((size_t)k * Cin + ci) * Cout + co]);
  }
}

/* dw: (3,3,3,Cin,Cout) += dwc: (Cout,3,3,3,Cin) of T */
template <typename T>
static __global__ void add_from_krsc_kernel(float *__restrict__ dw, const T *__restrict__ dwc, int Cin, int Cout)
{
  const size_t n = (size_t)27 * Cin * Cout;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int co = (int)(i % Cout);
    size_t t = i / Cout;
    int ci = (int)(t % Cin), k = (int)(t / Cin);
    dw[i] += sf_tof<T>(dwc[((size_t)co * 27 + k) * Cin + ci]);
  }
}

static __global__ void bf16_to_f32_kernel(float *__restrict__ dst, const uint16_t *__restrict__ src, size_t n)
{
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = sf_bf2f(src[i]);
}

static void *assemble(int slot, int bf16, const float *lo, const float *mid, const float *hi, int nd, size_t plane,
                      cudaStream_t s)
{
  const size_t elem = bf16 ? 2 : 4;
  void *xa = sf_gpu_ws(slot, (size_t)(nd + 2) * plane * elem, s);
  dim3 grid(sf_gpu_blocks(plane) / (unsigned)(nd + 2) + 1, (unsigned)(nd + 2));
  if (bf16) assemble_kernel<uint16_t><<<grid, SF_GPU_THREADS, 0, s>>>((uint16_t *)xa, lo, mid, hi, nd, (unsigned)plane);
  else assemble_kernel<float><<<grid, SF_GPU_THREADS, 0, s>>>((float *)xa, lo, mid, hi, nd, (unsigned)plane);
  SF_LAUNCH_CHECK(assemble_kernel);
  return xa;
}

static void *weights_krsc(int bf16, const float *w, int Cin, int Cout, cudaStream_t s)
{
  const size_t nw = (size_t)27 * Cin * Cout;
  void *wc = sf_gpu_ws(SF_WS_WEIGHTS, nw * (bf16 ? 2 : 4), s);
  if (bf16) to_krsc_kernel<uint16_t><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>((uint16_t *)wc, w, Cin, Cout);
  else to_krsc_kernel<float><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>((float *)wc, w, Cin, Cout);
  SF_LAUNCH_CHECK(to_krsc_kernel);
  return wc;
}

int sf_gpu_conv3d_cudnn(int dir, cudaStream_t s, int prec, float *out, const float *lo, const float *mid,
                        const float *hi, const float *other, int nd, int H, int W, int Cin, int Cout)
{
  if ((size_t)(nd + 2) * H * W * (Cin > Cout ? Cin : Cout) >= ((size_t)1 << 31) || nd + 2 > 65535)
    return -1; /* too large for one cuDNN call: cuBLAS chunks it */
  cudnnHandle_t hd = dnn_handle(s);
  const int bf16 = prec == SF_PREC_BF16;
  dnn_plan *p = get_plan(hd, dir, prec, nd, H, W, Cin, Cout);
  if (p->algo < 0) return -1;
  void *ws = p->ws ? sf_gpu_ws(SF_WS_DNN, p->ws, s) : NULL;
  const float one = 1.0f, zero = 0.0f;
  const size_t nvox = (size_t)nd * H * W;
  if (dir == SF_CONV_FWD || dir == SF_CONV_BWD_DATA) {
    const int Cmid = dir == SF_CONV_FWD ? Cin : Cout, Co = dir == SF_CONV_FWD ? Cout : Cin;
    void *a = assemble(SF_WS_XA, bf16, lo, mid, hi, nd, (size_t)H * W * Cmid, s);
    void *wc = weights_krsc(bf16, other, Cin, Cout, s);
    void *dst = bf16 ? sf_gpu_ws(SF_WS_TMP, nvox * Co * 2, s) : (void *)out;
    if (dir == SF_CONV_FWD)
      SF_DNN_CHECK(cudnnConvolutionForward(hd, &one, p->xd, a, p->fd, wc, p->cd, (cudnnConvolutionFwdAlgo_t)p->algo, ws,
                                           p->ws, &zero, p->yd, dst));
    else
      SF_DNN_CHECK(cudnnConvolutionBackwardData(hd, &one, p->fd, wc, p->yd, a, p->cd,
                                                (cudnnConvolutionBwdDataAlgo_t)p->algo, ws, p->ws, &zero, p->xd, dst));
    if (bf16) {
      bf16_to_f32_kernel<<<sf_gpu_blocks(nvox * Co), SF_GPU_THREADS, 0, s>>>(out, (const uint16_t *)dst, nvox * Co);
      SF_LAUNCH_CHECK(bf16_to_f32_kernel);
    }
    return 0;
  }
  /* dW */
  void *xa = assemble(SF_WS_XA, bf16, lo, mid, hi, nd, (size_t)H * W * Cin, s);
  const void *g = bf16 ? (const void *)sf_gpu_bf16_copy(SF_WS_BF16_A, other, nvox * Cout, s) : (const void *)other;
  const size_t nw = (size_t)27 * Cin * Cout;
  void *dwc = sf_gpu_ws(SF_WS_WEIGHTS, nw * (bf16 ? 2 : 4), s);
  SF_DNN_CHECK(cudnnConvolutionBackwardFilter(hd, &one, p->xd, xa, p->yd, g, p->cd,
                                              (cudnnConvolutionBwdFilterAlgo_t)p->algo, ws, p->ws, &zero, p->fd, dwc));
  if (bf16)
    add_from_krsc_kernel<uint16_t><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>(out, (const uint16_t *)dwc, Cin, Cout);
  else
    add_from_krsc_kernel<float><<<sf_gpu_blocks(nw), SF_GPU_THREADS, 0, s>>>(out, (const float *)dwc, Cin, Cout);
  SF_LAUNCH_CHECK(add_from_krsc_kernel);
  return 0;
}

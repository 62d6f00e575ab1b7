/* OpenCL C: elementwise accumulation used by the fixed-order reductions (sum_f, sum_d and the
 * GroupNorm backward reduce): out += in. The host copies part 0 and launches one add per further
 * part on the in-order queue, so the order is parts[0] + parts[1] + ... exactly like the CPU. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* out: (n) float += in: (n) */
__kernel void sf_add_f(__global float *out, ulong out_off, __global const float *in, ulong in_off, ulong n)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  out[out_off + i] += in[in_off + i];
}

/* out: (n) double += in: (n) */
__kernel void sf_add_d(__global double *out, ulong out_off, __global const double *in, ulong in_off, ulong n)
{
  ulong i = get_global_id(0);
  if (i >= n) return;
  out[out_off + i] += in[in_off + i];
}

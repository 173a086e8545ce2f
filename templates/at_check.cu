// at_check.cu: the kernels every worker needs, whatever the op: the output check of every
// candidate on every shape (docs/timing.md): each element must satisfy
// |out - ref| <= atol + rtol * |ref| + gamma * absref, absref being the op's |A| * |B| (the
// dot-product error bound), and NaN or Inf anywhere fails; the absolute value that makes absref;
// random FP8 fill; and the L2 scrub between kernels timed in turn.
#include "at_support.cuh"

// out: n bf16 values; ref, absref: n floats (absref may be null: no gamma term). Accumulates the
// number of failing elements, the smallest failing index, the largest |out - ref| and the largest
// |out - ref| / bound (both as float bits: non-negative floats order like their bits; +Inf stands
// for NaN/Inf outputs). The caller zeroes bad, max_err and max_ratio, and sets first_bad to all
// ones, before the launch.
extern "C" __global__ void at_compare_bf16(const unsigned short *out, const float *ref, const float *absref, at_u64 n,
                                           float atol, float rtol, float gamma, at_u64 *bad, at_u64 *first_bad,
                                           at_u32 *max_err_bits, at_u32 *max_ratio_bits) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x;
  const at_u64 rounded = (n + 31) / 32 * 32;  // whole warps stay in the loop together
  const float inf = __int_as_float(0x7f800000);
  for (at_u64 i = (at_u64)blockIdx.x * blockDim.x + threadIdx.x; i < rounded; i += stride) {
    float err = 0.f, ratio = 0.f;
    bool fail = false;
    if (i < n) {
      const at_u32 bits = (at_u32)out[i] << 16;
      const float o = __uint_as_float(bits), r = ref[i];
      if ((bits & 0x7f800000u) == 0x7f800000u) {
        err = ratio = inf;
        fail = true;
      } else {
        err = fabsf(o - r);
        const float bound = atol + rtol * fabsf(r) + (absref ? gamma * absref[i] : 0.f);
        fail = !(err <= bound);
        // err / bound is <= 1 exactly when the element passes (division rounds monotonically);
        // 0 / 0 is a perfect element, and anything that is not a number is the worst.
        ratio = err == 0.f ? 0.f : err / bound;
        if (!(ratio >= 0.f)) ratio = inf;
        if (!(err >= 0.f)) err = inf;
      }
    }
    const at_u32 fails = __ballot_sync(0xffffffffu, fail);
    const at_u32 emax = __reduce_max_sync(0xffffffffu, __float_as_uint(err));
    const at_u32 rmax = __reduce_max_sync(0xffffffffu, __float_as_uint(ratio));
    if ((threadIdx.x & 31) == 0) {
      if (fails) atomicAdd(bad, (at_u64)__popc(fails));
      if (emax) atomicMax(max_err_bits, emax);
      if (rmax) atomicMax(max_ratio_bits, rmax);
    }
    if (fail) atomicMin(first_bad, i);
  }
}

// p[i] = |p[i]| for n floats: the dequantized inputs of the absref GEMM.
extern "C" __global__ void at_abs_f32(float *p, at_u64 n) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x;
  for (at_u64 i = (at_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = fabsf(p[i]);
}

// n random e4m3 bytes (normal values scaled to use the format's range), for the peak FP8 rate:
// matrices of zeros would run faster than real data.
extern "C" __global__ void at_fill_e4m3(unsigned char *q, at_u64 n, at_u64 seed) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x * 4;
  for (at_u64 i = ((at_u64)blockIdx.x * blockDim.x + threadIdx.x) * 4; i + 3 < n; i += stride)
    *(at_u32 *)(q + i) = at_pack_e4m3x4(at_normal(seed, i) * 64.f, at_normal(seed, i + 1) * 64.f,
                                        at_normal(seed, i + 2) * 64.f, at_normal(seed, i + 3) * 64.f);
}

// Reads n 16-byte words with the default cache policy, to fill L2 with clean lines of its own
// between the samples of different kernels timed in turn (engine/gpu/scrub.h). *sink is written
// only if the sum is a value the buffer (zeroed) never gives, which keeps the loads.
extern "C" __global__ void at_l2_scrub(const uint4 *p, at_u64 n, unsigned *sink) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x;
  unsigned x = 0;
  for (at_u64 i = (at_u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = p[i];
    x += v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;
}

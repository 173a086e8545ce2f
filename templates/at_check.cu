// at_check.cu: the kernels every worker needs, whatever the op: the output check of every
// candidate on every shape (docs/timing.md): each element must satisfy
// |out - ref| <= atol + rtol * |ref|, and NaN or Inf anywhere fails; and random FP8 fill.
#include "at_support.cuh"

// out: n bf16 values; ref: n floats. Accumulates the number of failing elements, the smallest
// failing index, and the largest |out - ref| (as float bits: non-negative floats order like their
// bits; +Inf stands for NaN/Inf outputs). The caller zeroes bad and max_err, and sets first_bad to
// all ones, before the launch.
extern "C" __global__ void at_compare_bf16(const unsigned short *out, const float *ref, at_u64 n, float atol,
                                           float rtol, at_u64 *bad, at_u64 *first_bad, at_u32 *max_err_bits) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x;
  const at_u64 rounded = (n + 31) / 32 * 32;  // whole warps stay in the loop together
  for (at_u64 i = (at_u64)blockIdx.x * blockDim.x + threadIdx.x; i < rounded; i += stride) {
    float err = 0.f;
    bool fail = false;
    if (i < n) {
      const at_u32 bits = (at_u32)out[i] << 16;
      const float o = __uint_as_float(bits), r = ref[i];
      if ((bits & 0x7f800000u) == 0x7f800000u) {
        err = __int_as_float(0x7f800000);
        fail = true;
      } else {
        err = fabsf(o - r);
        fail = !(err <= atol + rtol * fabsf(r));
      }
    }
    const at_u32 fails = __ballot_sync(0xffffffffu, fail);
    const at_u32 emax = __reduce_max_sync(0xffffffffu, __float_as_uint(err));
    if ((threadIdx.x & 31) == 0) {
      if (fails) atomicAdd(bad, (at_u64)__popc(fails));
      if (emax) atomicMax(max_err_bits, emax);
    }
    if (fail) atomicMin(first_bad, i);
  }
}

// n random e4m3 bytes (normal values scaled to use the format's range), for the peak FP8 rate:
// matrices of zeros would run faster than real data.
extern "C" __global__ void at_fill_e4m3(unsigned char *q, at_u64 n, at_u64 seed) {
  const at_u64 stride = (at_u64)gridDim.x * blockDim.x * 4;
  for (at_u64 i = ((at_u64)blockIdx.x * blockDim.x + threadIdx.x) * 4; i + 3 < n; i += stride)
    *(at_u32 *)(q + i) = at_pack_e4m3x4(at_normal(seed, i) * 64.f, at_normal(seed, i + 1) * 64.f,
                                        at_normal(seed, i + 2) * 64.f, at_normal(seed, i + 3) * 64.f);
}

// at_support.cuh: device helpers of the support kernels (inputs, references, checks), which are
// extern "C" kernels compiled by NVRTC inside a worker. Not used by candidate kernels.
#ifndef AT_SUPPORT_CUH
#define AT_SUPPORT_CUH

typedef unsigned int at_u32;
typedef unsigned long long at_u64;

// A counter-based generator: the value at index i depends on (seed, i) alone, so inputs can be
// regenerated anywhere, in any order, by any number of threads.
__device__ __forceinline__ at_u64 at_mix64(at_u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1), never 0 or 1.
__device__ __forceinline__ float at_uniform(at_u64 seed, at_u64 i) {
  return ((float)(at_mix64(seed ^ at_mix64(i)) >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

// Standard normal (Box-Muller).
__device__ __forceinline__ float at_normal(at_u64 seed, at_u64 i) {
  float u1 = at_uniform(seed, 2 * i), u2 = at_uniform(seed, 2 * i + 1);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

// Four floats to four e4m3 bytes (round to nearest even, saturating at +-448).
__device__ __forceinline__ at_u32 at_pack_e4m3x4(float v0, float v1, float v2, float v3) {
  unsigned short lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(v1), "f"(v0));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(v3), "f"(v2));
  return (at_u32)lo | ((at_u32)hi << 16);
}

// e4m3 (OCP E4M3FN: bias 7, no infinities, S.1111.111 is NaN) to float, written out in full so
// that the reference does not share the tensor cores' conversion.
__device__ __forceinline__ float at_e4m3_to_float(unsigned char v) {
  const int e = (v >> 3) & 15, m = v & 7;
  float f;
  if (e == 15 && m == 7)
    f = __int_as_float(0x7fc00000);
  else if (e == 0)
    f = (float)m * 0.001953125f;  // m / 8 * 2^-6
  else
    f = (1.0f + (float)m * 0.125f) * exp2f((float)(e - 7));
  return (v & 0x80) ? -f : f;
}

__device__ __forceinline__ float at_bf16_to_float(unsigned short v) { return __uint_as_float((at_u32)v << 16); }

__device__ __forceinline__ float at_warp_max(float v) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

#endif

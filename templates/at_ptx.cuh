// at_ptx.cuh: the PTX instructions the templates use, one small inline function each (sm_80+
// unless noted). No CUDA headers are included, so NVRTC parses almost nothing but the template.
#ifndef AT_PTX_CUH
#define AT_PTX_CUH

typedef unsigned int at_u32;
typedef unsigned long long at_u64;

__device__ __forceinline__ at_u32 at_smem_addr(const void *p) {
  return (at_u32)__cvta_generic_to_shared(p);
}

// 16-byte async copy global -> shared; bytes past src_size (0 or 16) are zero-filled, which is
// how rows outside the matrix become zeros without a branch around the copy.
__device__ __forceinline__ void at_cp_async_16(void *dst, const void *src, int src_size) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(at_smem_addr(dst)), "l"(src), "r"(src_size)
               : "memory");
}

// The same with an L2 cache policy (from at_l2_policy_*).
__device__ __forceinline__ void at_cp_async_16_hint(void *dst, const void *src, int src_size, at_u64 policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(at_smem_addr(dst)), "l"(src),
               "r"(src_size), "l"(policy)
               : "memory");
}

// 4-byte async copy (scales); zero-filled when src_size is 0.
__device__ __forceinline__ void at_cp_async_4(void *dst, const void *src, int src_size) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(at_smem_addr(dst)), "l"(src), "r"(src_size)
               : "memory");
}

__device__ __forceinline__ void at_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void at_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ at_u64 at_l2_policy_evict_last() {
  at_u64 p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

__device__ __forceinline__ at_u64 at_l2_policy_evict_first() {
  at_u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// Four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each) from shared memory; lane i gives
// the address of row i%8 of matrix i/8, and receives in r[j] its part of matrix j.
__device__ __forceinline__ void at_ldmatrix_x4(at_u32 (&r)[4], at_u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A * B + D for a 16x8x32 tile: A 16x32 e4m3 (row), B 32x8 e4m3 (col), D fp32 (sm_89+).
__device__ __forceinline__ void at_mma_e4m3_16832(float (&d)[4], const at_u32 (&a)[4], at_u32 b0, at_u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats to a packed bf16 pair, round to nearest even; lo lands in the low half.
__device__ __forceinline__ at_u32 at_pack_bf16x2(float lo, float hi) {
  at_u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ at_u32 at_dynamic_smem_size() {
  at_u32 r;
  asm("mov.u32 %0, %%dynamic_smem_size;\n" : "=r"(r));
  return r;
}

#endif

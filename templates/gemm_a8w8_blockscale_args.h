/* gemm_a8w8_blockscale_args.h: the kernel ABI of the a8w8 blockscale GEMM, shared by the host (C)
 * and every template family (CUDA C++). All kernels of the op take this one struct by value.
 *
 *   C[m][n] = sum_k A[m][k] * As[m][k/128] * B[n][k] * Bs[n/128][k/128]      (fp32 math, bf16 out)
 *
 *   a        M x K   e4m3, row-major, row stride K bytes
 *   a_scale  M x K/128 fp32, row-major, row stride K/128
 *   b        N x K   e4m3, row-major, row stride K bytes (the weights)
 *   b_scale  ceil(N/128) x K/128 fp32, row-major, row stride K/128
 *   c        M x N   bf16, row-major, row stride N
 *   workspace  split-K scratch, zeroed once before the first launch and left zeroed by every
 *            launch that completes; size from the family's launch rule (engine/ops).
 *
 * Rules: M >= 1; K a multiple of 128; N a multiple of 8; a, b, c 16-byte aligned; scales 4-byte
 * aligned. Pointers are carried as 64-bit integers so that C and C++ agree on the layout. */
#ifndef AT_GEMM_A8W8_BLOCKSCALE_ARGS_H
#define AT_GEMM_A8W8_BLOCKSCALE_ARGS_H

typedef struct at_gemm_a8w8_blockscale_args {
  unsigned long long a, a_scale, b, b_scale, c, workspace;
  int m, n, k;
  int reserved; /* keeps the struct a multiple of 8 bytes */
} at_gemm_a8w8_blockscale_args;

#endif

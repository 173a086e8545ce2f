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
 *   workspace  split-K scratch (below); 0 for launches that do not split K
 *   ws_counters  the number of arrival counters at the start of the workspace
 *
 * The split-K workspace, as every family and every owner of a workspace (the worker, the runtime)
 * must keep it, whatever ran before on any stream:
 *   bytes [0, 4 * ws_counters)           u32 arrival counters, one per output tile. Zero whenever
 *                                        no launch that uses them is running: each launch leaves
 *                                        every counter it incremented at zero again.
 *   bytes [AT_WS_PARTIALS(ws_counters), ...)  fp32 partial tiles; no state between launches.
 * Counters and partials never alias, so a launch with more tiles than the last one still finds
 * zeros. A kernel that needs more counters than ws_counters traps (a fault, never a wrong answer).
 *
 * Rules: M >= 1; K a multiple of 128; N a multiple of 8; a, b, c 16-byte aligned; scales 4-byte
 * aligned. Pointers are carried as 64-bit integers so that C and C++ agree on the layout. */
#ifndef AT_GEMM_A8W8_BLOCKSCALE_ARGS_H
#define AT_GEMM_A8W8_BLOCKSCALE_ARGS_H

typedef struct at_gemm_a8w8_blockscale_args {
  unsigned long long a, a_scale, b, b_scale, c, workspace;
  int m, n, k;
  int ws_counters; /* split-K arrival counters at the start of the workspace */
} at_gemm_a8w8_blockscale_args;

/* Byte offset of the partial tiles in a workspace with `counters` counters. */
#define AT_WS_PARTIALS(counters) ((((unsigned long long)(counters) * 4ull + 255ull) / 256ull) * 256ull)

#endif

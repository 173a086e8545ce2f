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
 *   partials   split-K scratch: fp32 partial tiles, no state between launches
 *   counters   split-K arrival counters: ws_counters u32, one per output tile (or per tile and
 *            math warpgroup), never aliasing the partials
 *   ws_counters  how many counters there are; 0 and null pointers when K is not split
 *   group_m, split_k  the candidate's GROUP_M and SPLIT_K, always set by the host from the
 *            candidate's parameters. A kernel instantiated with 0 for either takes it from here
 *            (a launch parameter: candidates that differ only in it share one compiled kernel);
 *            one instantiated with a positive value uses its own.
 *   ldc      C's row stride in elements; 0 means N. Set by the runtime when it computes a part of C
 *            (the tail below); honoured by the sm90 family, the host passes 0 to the others.
 *   unit_end the persistent walk stops before unit unit_end (0: no limit): the runtime leaves the last
 *            units of a call's partial last wave to a second launch, the tail (docs/runtime.md).
 *   late_wait 1: the kernel reads its inputs at once, and the grid's last CTA waits for the stream's
 *            preceding kernel (griddepcontrol.wait) before it exits, which is enough to keep the
 *            grid from completing before it (the other CTAs exit at once, freeing their SMs for
 *            the CTAs not yet started). The runtime sets it for a tail launched
 *            right after its main launch: the tail reads what the main launch reads, which the
 *            kernel before the main launch had finished (the main launch let the tail start only
 *            after its own wait), writes what the main launch does not, and must not finish before
 *            it (the next kernel waits for the tail alone). sm90 only; 0 elsewhere.
 *
 * The split-K invariant, which every family and every owner of counters (the worker, the runtime)
 * keeps whatever ran before on any stream: the counters are zero whenever no launch that uses them
 * is running, because each launch leaves every counter it incremented at zero again. So counters
 * may live in memory that persists across launches and CUDA-graph replays without ever being
 * cleared again, while partials may come from anywhere (the graph's own memory included). A kernel
 * that needs more counters than ws_counters traps (a fault, never a wrong answer).
 *
 * Rules: M >= 1; K a multiple of 128; N a multiple of 8; a, b, c 16-byte aligned; scales 4-byte
 * aligned. Pointers are carried as 64-bit integers so that C and C++ agree on the layout. */
#ifndef AT_GEMM_A8W8_BLOCKSCALE_ARGS_H
#define AT_GEMM_A8W8_BLOCKSCALE_ARGS_H

typedef struct at_gemm_a8w8_blockscale_args {
  unsigned long long a, a_scale, b, b_scale, c, partials, counters;
  int m, n, k;
  int ws_counters; /* split-K arrival counters at `counters` */
  int group_m, split_k;
  int ldc, unit_end, late_wait; /* sm90: a part of C and of the walk (the runtime's tail), see above */
} at_gemm_a8w8_blockscale_args;

#endif

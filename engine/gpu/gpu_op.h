/* gpu_op.h: the GPU half of an operator, used by worker processes only: input sets, the
 * reference output, the kernel's parameter block, and the baselines a user compares against.
 * The interface belongs to the worker's layer (engine/gpu); each op implements it in engine/ops
 * (gemm_a8w8_blockscale_gpu.c) and gpu_registry.c lists them: ops include gpu, never the reverse. */
#ifndef AT_GPU_OP_H
#define AT_GPU_OP_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"
#include "check.h"
#include "gpuctx.h"
#include "launch.h"
#include "../core/op.h"

typedef struct at_gpu_op {
  const char *name;
  /* Distinct bytes one input set holds (inputs and output), to size the rotation. */
  double (*set_bytes)(const at_shape *s);
  /* Allocates `sets` input sets with random data (set i from seed and i) and the reference
   * output of set 0. */
  int (*setup)(const at_gpu *g, const at_shape *s, uint64_t seed, int sets, void **state);
  void (*teardown)(void *state);
  /* The output buffer of a set: bf16 elements. */
  void (*output)(void *state, int set, CUdeviceptr *ptr, size_t *count);
  /* The reference output of set 0, fp32, same element count. */
  CUdeviceptr (*reference)(void *state);
  /* (|A| * |B|) of set 0's inputs, fp32, same element count: the scale of the dot-product error
   * bound (check.h). NULL, or 0 returned, for an op that has none: its spaces need gamma = 0. */
  CUdeviceptr (*reference_abs)(void *state);
  /* The buffers of a set in the order of the op's runtime launch function (autotune.h); for the
   * a8w8 GEMM: a, a_scale, b, b_scale, c. Returns how many (at most cap). */
  int (*operands)(void *state, int set, CUdeviceptr *ptrs, int cap);
  /* The parameters of a launch of a candidate of `family` on a set, with the split-K workspace
   * (ws, holding ws_counters counters; 0 when the launch has none). */
  int (*kernel_params)(void *state, int set, const char *family, const at_params *p, CUdeviceptr ws,
                       int64_t ws_counters, at_kparams *out);
  /* The cuBLAS FP32 GEMM that made the reference, timed. */
  int (*time_reference)(void *state, const at_bench_cfg *cfg, at_bench_result *r);
  /* The vendor's own kernel for this op. vendor_prepare readies it for the shape (once) and sets
   * *available, with a note saying why not when 0; then vendor_enqueue launches it on a set, like
   * a candidate. */
  int (*vendor_prepare)(void *state, int *available, char *name, size_t name_len, char *note, size_t note_len);
  at_enqueue_fn vendor_enqueue;
  /* After vendor_prepare made it available: which of its algorithms the vendor library picked for
   * the shape (tile, stages, split, cluster), for `compare` to print; "" when it cannot say. NULL
   * for an op whose vendor kernel has no such choice. */
  void (*vendor_describe)(void *state, char *buf, size_t len);
  /* The vendor's kernel prepared, checked against the reference and timed; r->samples = 0 with a
   * note when it is not available or fails the check. *check_ratio: its worst error / bound (-1
   * when it was not checked). */
  int (*time_vendor)(void *state, const at_bench_cfg *cfg, const at_check_bound *bound, at_bench_result *r,
                     double *check_ratio, char *name, size_t name_len, char *note, size_t note_len);
} at_gpu_op;

const at_gpu_op *at_gpu_op_find(const char *name);

#endif

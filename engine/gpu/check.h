/* check.h: the element-wise check of an output against its reference, on the GPU
 * (templates/at_check.cu). Worker-side. */
#ifndef AT_GPU_CHECK_H
#define AT_GPU_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctx.h"

/* The bound every element must meet: |out - ref| <= atol + rtol * |ref| + gamma * absref, where
 * absref is (|A| * |B|) of the op's inputs: the forward error bound of a dot product
 * (docs/timing.md). gamma = 0 is the plain atol/rtol rule. */
typedef struct at_check_bound {
  double atol, rtol, gamma;
} at_check_bound;

typedef struct at_check_result {
  int64_t bad;        /* elements that fail */
  int64_t first_bad;  /* smallest failing index, -1 when none */
  double max_err;     /* largest |out - ref|; +inf when an output is NaN or Inf */
  double worst_ratio; /* largest |out - ref| / bound: above 1 fails; +inf for NaN or Inf outputs */
} at_check_result;

/* Compares n bf16 outputs with n fp32 reference values. absref (n floats, or 0 when the op has
 * none) is read only when gamma > 0, and is required then. */
int at_check_bf16(const at_gpu *g, CUdeviceptr out, CUdeviceptr ref, CUdeviceptr absref, size_t n,
                  const at_check_bound *bound, at_check_result *r);

/* "B of N elements out of tolerance, first at index I, max |error| E, worst error/bound R": what a
 * failed check says, the same wherever a check fails. */
void at_check_describe(const at_check_result *r, size_t n, char *out, size_t len);

/* Fills n bf16 values with NaN, so that an element the kernel never writes fails the check. */
int at_poison_bf16(const at_gpu *g, CUdeviceptr out, size_t n);

/* p[i] = |p[i]| for n floats, on the worker's stream: the inputs of an op's absref GEMM. */
int at_abs_f32(const at_gpu *g, CUdeviceptr p, size_t n);

#endif

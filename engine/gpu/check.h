/* check.h: the element-wise check of an output against its reference, on the GPU
 * (templates/at_check.cu). Worker-side. */
#ifndef AT_GPU_CHECK_H
#define AT_GPU_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gpuctx.h"

typedef struct at_check_result {
  int64_t bad;       /* elements that fail */
  int64_t first_bad; /* smallest failing index, -1 when none */
  double max_err;    /* largest |out - ref|; +inf when an output is NaN or Inf */
} at_check_result;

/* Compares n bf16 outputs with n fp32 reference values. */
int at_check_bf16(const at_gpu *g, CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol,
                  at_check_result *r);

/* Fills n bf16 values with NaN, so that an element the kernel never writes fails the check. */
int at_poison_bf16(const at_gpu *g, CUdeviceptr out, size_t n);

#endif

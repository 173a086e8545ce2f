// cuda_check.cuh: CK(call), for the single-file CUDA benchmarks of bench/ (each built by a bare
// nvcc command): on an error, says where and which call, and returns 1 from the enclosing function.
#pragma once
#include <cstdio>

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

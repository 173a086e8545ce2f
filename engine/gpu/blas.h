/* blas.h: cuBLAS and cuBLASLt, opened with dlopen when a worker first needs them: the reference
 * GEMM (cuBLAS SGEMM, FP32 compute, no TF32), the FP8 peak measurement and the vendor baseline
 * (cuBLASLt). Worker-side only. */
#ifndef AT_GPU_BLAS_H
#define AT_GPU_BLAS_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "../core/error.h"

#define AT_CUBLAS_FUNCS(X)                                                                                             \
  X(Create, cublasCreate_v2, "cublasCreate_v2")                                                                        \
  X(Destroy, cublasDestroy_v2, "cublasDestroy_v2")                                                                     \
  X(SetStream, cublasSetStream_v2, "cublasSetStream_v2")                                                               \
  X(SetMathMode, cublasSetMathMode, "cublasSetMathMode")                                                               \
  X(Sgemm, cublasSgemm_v2, "cublasSgemm_v2")

#define AT_CUBLASLT_FUNCS(X)                                                                                           \
  X(LtCreate, cublasLtCreate, "cublasLtCreate")                                                                        \
  X(LtDestroy, cublasLtDestroy, "cublasLtDestroy")                                                                     \
  X(LtGetStatusString, cublasLtGetStatusString, "cublasLtGetStatusString")                                             \
  X(LtGetVersion, cublasLtGetVersion, "cublasLtGetVersion")                                                            \
  X(LtMatmulDescCreate, cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate")                                          \
  X(LtMatmulDescDestroy, cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy")                                       \
  X(LtMatmulDescSetAttribute, cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute")                        \
  X(LtMatrixLayoutCreate, cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate")                                    \
  X(LtMatrixLayoutDestroy, cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy")                                 \
  X(LtMatmulPreferenceCreate, cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate")                        \
  X(LtMatmulPreferenceDestroy, cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy")                     \
  X(LtMatmulPreferenceSetAttribute, cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute")      \
  X(LtMatmulAlgoGetHeuristic, cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic")                        \
  X(LtMatmulAlgoConfigGetAttribute, cublasLtMatmulAlgoConfigGetAttribute, "cublasLtMatmulAlgoConfigGetAttribute")      \
  X(LtMatmul, cublasLtMatmul, "cublasLtMatmul")

typedef struct at_blas_api {
#define AT_BLAS_FIELD(field, proto, sym) __typeof__(&proto) field;
  AT_CUBLAS_FUNCS(AT_BLAS_FIELD)
  AT_CUBLASLT_FUNCS(AT_BLAS_FIELD)
#undef AT_BLAS_FIELD
} at_blas_api;

/* Loads libcublas.so.13 and libcublasLt.so.13 (or the unversioned names) once. */
int at_blas_load(const at_blas_api **out);

const char *at_cublas_status_name(cublasStatus_t s);
#define CUBLAS_CHECK(expr) AT_API_CHECK("cuBLAS", cublasStatus_t, expr, CUBLAS_STATUS_SUCCESS, at_cublas_status_name, at_cublas_status_name)

#endif

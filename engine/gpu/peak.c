/* peak.c: see peak.h. */
#include "peak.h"

#include <stdio.h>
#include <string.h>

#include "../core/util.h"
#include "bench.h"
#include "blas.h"

/* A device-to-device copy of 1 GiB: (bytes read + bytes written) / time, median of 7. */
static int copy_rate(const at_gpu *g, double *gbs) {
  size_t bytes = (size_t)1 << 30, free_b = 0, total_b = 0;
  CU_CHECK(at_cu->MemGetInfo(&free_b, &total_b));
  while (bytes > (64u << 20) && 2 * bytes > free_b / 2) bytes /= 2;
  CUdeviceptr a = 0, b = 0;
  CUevent e0 = NULL, e1 = NULL;
  int rc = at_gpu_alloc(&a, bytes);
  if (rc == AT_OK) rc = at_gpu_alloc(&b, bytes);
  double v[7];
  int n = 0;
  if (rc == AT_OK && at_cu->EventCreate(&e0, 0) == CUDA_SUCCESS && at_cu->EventCreate(&e1, 0) == CUDA_SUCCESS) {
    at_cu->MemsetD8Async(a, 0x5a, bytes, g->stream);
    for (int i = -2; i < 7; i++) {
      at_cu->EventRecord(e0, g->stream);
      at_cu->MemcpyDtoDAsync(b, a, bytes, g->stream);
      at_cu->EventRecord(e1, g->stream);
      if (at_cu->EventSynchronize(e1) != CUDA_SUCCESS) break;
      float ms = 0;
      at_cu->EventElapsedTime(&ms, e0, e1);
      if (i >= 0) v[n++] = 2.0 * (double)bytes / ((double)ms * 1e-3) / 1e9;
    }
  }
  if (e0) at_cu->EventDestroy(e0);
  if (e1) at_cu->EventDestroy(e1);
  at_gpu_free(&a);
  at_gpu_free(&b);
  AT_TRY(rc);
  *gbs = n ? at_median(v, n) : 0;
  return AT_OK;
}

typedef struct fp8_gemm {
  const at_blas_api *api;
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
  CUdeviceptr a, b, d, ws;
  size_t ws_bytes;
} fp8_gemm;

static int enqueue_fp8(void *p, int set, CUstream s) {
  (void)set;
  fp8_gemm *f = p;
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(f->api->LtMatmul(f->lt, f->desc, &one, (void *)(uintptr_t)f->a, f->la, (void *)(uintptr_t)f->b, f->lb, &zero,
                                (void *)(uintptr_t)f->d, f->ld, (void *)(uintptr_t)f->d, f->ld, &f->algo,
                                (void *)(uintptr_t)f->ws, f->ws_bytes, (cudaStream_t)s));
  return AT_OK;
}

static int fp8_setup(const at_gpu *g, fp8_gemm *f, int64_t n) {
  AT_TRY(at_blas_load(&f->api));
  const at_blas_api *api = f->api;
  CUBLAS_CHECK(api->LtCreate(&f->lt));
  AT_TRY(at_gpu_alloc(&f->a, (size_t)(n * n)));
  AT_TRY(at_gpu_alloc(&f->b, (size_t)(n * n)));
  AT_TRY(at_gpu_alloc(&f->d, (size_t)(n * n * 2)));
  f->ws_bytes = 32u << 20;
  AT_TRY(at_gpu_alloc(&f->ws, f->ws_bytes));
  CUmodule mod;
  CUfunction fill;
  AT_TRY(at_gpu_support_module(g, "at_check.cu", &mod));
  CU_CHECK(at_cu->ModuleGetFunction(&fill, mod, "at_fill_e4m3"));
  unsigned long long count = (unsigned long long)(n * n), seed1 = 1, seed2 = 2;
  void *a1[] = {&f->a, &count, &seed1}, *a2[] = {&f->b, &count, &seed2};
  CU_CHECK(at_cu->LaunchKernel(fill, (unsigned)g->info.sm_count * 8, 1, 1, 256, 1, 1, 0, g->stream, a1, NULL));
  CU_CHECK(at_cu->LaunchKernel(fill, (unsigned)g->info.sm_count * 8, 1, 1, 256, 1, 1, 0, g->stream, a2, NULL));
  int32_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  CUBLAS_CHECK(api->LtMatmulDescCreate(&f->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(api->LtMatmulDescSetAttribute(f->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
  CUBLAS_CHECK(api->LtMatmulDescSetAttribute(f->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
  CUBLAS_CHECK(api->LtMatrixLayoutCreate(&f->la, CUDA_R_8F_E4M3, (uint64_t)n, (uint64_t)n, n));
  CUBLAS_CHECK(api->LtMatrixLayoutCreate(&f->lb, CUDA_R_8F_E4M3, (uint64_t)n, (uint64_t)n, n));
  CUBLAS_CHECK(api->LtMatrixLayoutCreate(&f->ld, CUDA_R_16BF, (uint64_t)n, (uint64_t)n, n));
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(api->LtMatmulPreferenceCreate(&pref));
  uint64_t ws = f->ws_bytes;
  api->LtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  cublasStatus_t st = api->LtMatmulAlgoGetHeuristic(f->lt, f->desc, f->la, f->lb, f->ld, f->ld, pref, 1, &heur, &found);
  api->LtMatmulPreferenceDestroy(pref);
  CUBLAS_CHECK(st);
  if (found < 1) return at_fail(AT_ERR_RUNTIME, "cuBLASLt offers no FP8 GEMM algorithm");
  f->algo = heur.algo;
  return AT_OK;
}

static void fp8_free(fp8_gemm *f) {
  if (f->api) {
    if (f->la) f->api->LtMatrixLayoutDestroy(f->la);
    if (f->lb) f->api->LtMatrixLayoutDestroy(f->lb);
    if (f->ld) f->api->LtMatrixLayoutDestroy(f->ld);
    if (f->desc) f->api->LtMatmulDescDestroy(f->desc);
    if (f->lt) f->api->LtDestroy(f->lt);
  }
  at_gpu_free(&f->a), at_gpu_free(&f->b), at_gpu_free(&f->d), at_gpu_free(&f->ws);
}

int at_measure_peaks(const at_gpu *g, at_peak_reply *r) {
  memset(r, 0, sizeof *r);
  int rc = copy_rate(g, &r->copy_gbs);
  if (rc) snprintf(r->note, sizeof r->note, "copy bandwidth not measured: %s", at_errmsg());
  const int64_t n = 8192;
  fp8_gemm f;
  memset(&f, 0, sizeof f);
  rc = fp8_setup(g, &f, n);
  at_bench_result b = {0};
  if (rc == AT_OK) {
    at_bench_cfg cfg = {.sets = 1, .warmup = 3, .samples = 10};
    rc = at_bench(g, enqueue_fp8, &f, &cfg, &b);
  }
  fp8_free(&f);
  if (rc == AT_OK && b.median_us > 0)
    r->fp8_tflops = 2.0 * (double)n * (double)n * (double)n / (b.median_us * 1e-6) / 1e12;
  else {
    size_t used = strlen(r->note);
    snprintf(r->note + used, sizeof r->note - used, "%sFP8 peak not measured (roofline uses bandwidth alone): %s",
             used ? "; " : "", at_errmsg());
  }
  return AT_OK;
}

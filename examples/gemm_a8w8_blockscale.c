/* gemm_a8w8_blockscale.c: using libautotune from an inference process.
 *
 *   gemm_a8w8_blockscale [--configs DIR] [--db PATH] [M N K]
 *
 * Makes random FP8 inputs with per-group scales (as a quantizing inference stack does), runs the
 * tuned GEMM through the library, checks every element against cuBLAS (FP32 on the dequantized
 * inputs), and prints the host time of one launch through the library next to the host time of
 * one cuBLASLt block-scaled FP8 GEMM of the same shape. Exit 0 when the check passes, 1 when it
 * fails, 77 when there is no GPU. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autotune.h"

#define CUDA_OK(x)                                                                                                     \
  do {                                                                                                                 \
    cudaError_t e_ = (x);                                                                                              \
    if (e_ != cudaSuccess) {                                                                                           \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                            \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)
#define BLAS_OK(x)                                                                                                     \
  do {                                                                                                                 \
    cublasStatus_t s_ = (x);                                                                                           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                                 \
      fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, (int)s_);                              \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)

/* ---- FP8 e4m3 on the host --------------------------------------------------------------------- */

static float e4m3_value(uint8_t v) {
  int e = (v >> 3) & 15, m = v & 7;
  float f = e == 0 ? (float)m / 512.0f : (1.0f + (float)m / 8.0f) * ldexpf(1.0f, e - 7);
  return (v & 0x80) ? -f : f;
}

/* Round to the nearest e4m3 (ties to even code), saturating at 448. */
static uint8_t e4m3_encode(float x) {
  uint8_t sign = x < 0 ? 0x80 : 0;
  float a = fabsf(x);
  uint8_t best = 0;
  float best_d = INFINITY;
  for (int c = 0; c < 0x7f; c++) { /* 0x7f is NaN */
    float d = fabsf(e4m3_value((uint8_t)c) - a);
    if (d < best_d || (d == best_d && !(c & 1))) best = (uint8_t)c, best_d = d;
  }
  return sign | best;
}

static double uniform(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

static float normal(uint64_t *s) { return (float)(sqrt(-2.0 * log(uniform(s))) * cos(6.283185307179586 * uniform(s))); }

/* Quantizes rows x K values: one scale per (row block of rb rows, 128 columns). */
static void quantize(const float *x, int rows, int K, int rb, uint8_t *q, float *scale) {
  int groups = K / 128;
  for (int r0 = 0; r0 < rows; r0 += rb)
    for (int g = 0; g < groups; g++) {
      float amax = 0;
      for (int r = r0; r < rows && r < r0 + rb; r++)
        for (int k = g * 128; k < g * 128 + 128; k++) amax = fmaxf(amax, fabsf(x[(size_t)r * K + k]));
      float s = amax > 0 ? amax / 448.0f : 1.0f;
      scale[(size_t)(r0 / rb) * groups + g] = s;
      for (int r = r0; r < rows && r < r0 + rb; r++)
        for (int k = g * 128; k < g * 128 + 128; k++) q[(size_t)r * K + k] = e4m3_encode(x[(size_t)r * K + k] / s);
    }
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static float bf16_to_float(uint16_t v) {
  uint32_t u = (uint32_t)v << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The op's bound (docs/timing.md, the shipped space's check): |out - ref| <= atol + rtol |ref| +
 * gamma (|A| |B|^T), atol = rtol = 1e-2, gamma = 2^-10. Prints and returns the elements out of it. */
static long check(const void *dev, uint16_t *host, const float *ref, const float *absref, size_t n, const char *who) {
  const double atol = 1e-2, rtol = 1e-2, gamma = 1.0 / 1024;
  CUDA_OK(cudaMemcpy(host, dev, n * 2, cudaMemcpyDeviceToHost));
  long bad = 0;
  double max_err = 0, worst = 0;
  for (size_t i = 0; i < n; i++) {
    float o = bf16_to_float(host[i]);
    double err = fabs((double)o - ref[i]), bound = atol + rtol * fabs(ref[i]) + gamma * absref[i];
    if (!isfinite(o) || err > bound) bad++;
    if (isfinite(o) && err > max_err) max_err = err;
    if (isfinite(o) && err / bound > worst) worst = err / bound;
  }
  printf("check of %s against cuBLAS FP32: %ld of %zu elements out of bound (atol = rtol = 1e-2, gamma = 2^-10), "
         "max |error| %.3g, worst error / bound %.3g: %s\n",
         who, bad, n, max_err, worst, bad ? "FAIL" : "pass");
  return bad;
}

int main(int argc, char **argv) {
  const char *configs = "configs", *db = NULL;
  int M = 128, N = 4096, K = 1024, pos = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--configs") && i + 1 < argc) configs = argv[++i];
    else if (!strcmp(argv[i], "--db") && i + 1 < argc) db = argv[++i];
    else if (pos < 3) (pos == 0 ? (M = atoi(argv[i])) : pos == 1 ? (N = atoi(argv[i])) : (K = atoi(argv[i]))), pos++;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no GPU: nothing to run\n");
    return 77;
  }
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  int G = K / 128, NB = (N + 127) / 128;
  printf("gemm_a8w8_blockscale M=%d N=%d K=%d\n", M, N, K);

  /* Inputs: activations with per-row magnitudes, weights with per-block magnitudes. */
  uint64_t seed = 0x1234567ull;
  float *xa = malloc(sizeof(float) * (size_t)M * K), *xb = malloc(sizeof(float) * (size_t)N * K);
  for (int r = 0; r < M; r++) {
    float mag = ldexpf(1.0f, (int)(uniform(&seed) * 4) - 2);
    for (int k = 0; k < K; k++) xa[(size_t)r * K + k] = normal(&seed) * mag;
  }
  for (size_t i = 0; i < (size_t)N * K; i++) xb[i] = normal(&seed) * 0.02f;
  uint8_t *qa = malloc((size_t)M * K), *qb = malloc((size_t)N * K);
  float *sa = malloc(sizeof(float) * (size_t)M * G), *sb = malloc(sizeof(float) * (size_t)NB * G);
  quantize(xa, M, K, 1, qa, sa);
  quantize(xb, N, K, 128, qb, sb);
  /* The reference sees exactly what the kernel sees: the dequantized values. */
  for (int r = 0; r < M; r++)
    for (int k = 0; k < K; k++) xa[(size_t)r * K + k] = e4m3_value(qa[(size_t)r * K + k]) * sa[(size_t)r * G + k / 128];
  for (int r = 0; r < N; r++)
    for (int k = 0; k < K; k++) xb[(size_t)r * K + k] = e4m3_value(qb[(size_t)r * K + k]) * sb[(size_t)(r / 128) * G + k / 128];

  void *dA, *dB, *dC, *dC2;
  float *dAs, *dBs, *dXa, *dXb, *dRef, *dAsT, *dBsP;
  int G4 = (G + 3) / 4 * 4;
  CUDA_OK(cudaMalloc(&dA, (size_t)M * K));
  CUDA_OK(cudaMalloc(&dB, (size_t)N * K));
  CUDA_OK(cudaMalloc(&dC, (size_t)M * N * 2));
  CUDA_OK(cudaMalloc(&dC2, (size_t)M * N * 2));
  CUDA_OK(cudaMalloc((void **)&dAs, sizeof(float) * (size_t)M * G));
  CUDA_OK(cudaMalloc((void **)&dBs, sizeof(float) * (size_t)NB * G));
  CUDA_OK(cudaMalloc((void **)&dXa, sizeof(float) * (size_t)M * K));
  CUDA_OK(cudaMalloc((void **)&dXb, sizeof(float) * (size_t)N * K));
  CUDA_OK(cudaMalloc((void **)&dRef, sizeof(float) * (size_t)M * N));
  CUDA_OK(cudaMalloc((void **)&dAsT, sizeof(float) * (size_t)M * G));
  CUDA_OK(cudaMalloc((void **)&dBsP, sizeof(float) * (size_t)NB * G4));
  CUDA_OK(cudaMemcpy(dA, qa, (size_t)M * K, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dB, qb, (size_t)N * K, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dAs, sa, sizeof(float) * (size_t)M * G, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dBs, sb, sizeof(float) * (size_t)NB * G, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dXa, xa, sizeof(float) * (size_t)M * K, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dXb, xb, sizeof(float) * (size_t)N * K, cudaMemcpyHostToDevice));

  /* cuBLAS FP32 reference: C^T = B A^T in column-major terms. */
  cublasHandle_t blas;
  BLAS_OK(cublasCreate(&blas));
  BLAS_OK(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH));
  const float one = 1.0f, zero = 0.0f;
  BLAS_OK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dXb, K, dXa, K, &zero, dRef, N));
  /* |A| |B|^T, the scale of the bound's dot-product term: FP8 tensor cores accumulate a k-block in
   * fewer bits than FP32, so the error grows with K (docs/timing.md; cuBLASLt's own kernel needs it). */
  float *dAbs;
  CUDA_OK(cudaMalloc((void **)&dAbs, sizeof(float) * (size_t)M * N));
  for (size_t i = 0; i < (size_t)M * K; i++) xa[i] = fabsf(xa[i]);
  for (size_t i = 0; i < (size_t)N * K; i++) xb[i] = fabsf(xb[i]);
  CUDA_OK(cudaMemcpy(dXa, xa, sizeof(float) * (size_t)M * K, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dXb, xb, sizeof(float) * (size_t)N * K, cudaMemcpyHostToDevice));
  BLAS_OK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dXb, K, dXa, K, &zero, dAbs, N));

  /* The tuned GEMM through the library. */
  at_runtime_options opts = {.db_path = db, .configs_dir = configs};
  at_runtime *rt;
  at_runtime_open(&opts, &rt);
  at_selection sel;
  if (at_runtime_select(rt, "gemm_a8w8_blockscale", M, N, K, NULL, &sel) != AT_STATUS_OK) {
    fprintf(stderr, "select: %s\n", at_runtime_last_error());
    return 1;
  }
  printf("config: %s (source %s, bucket %s, %s)\n", sel.kernel, sel.source, sel.bucket, sel.path);
  CUDA_OK(cudaMemset(dC, 0xff, (size_t)M * N * 2)); /* NaN poison: unwritten elements fail */
  if (at_gemm_a8w8_blockscale(rt, dA, dAs, dB, dBs, dC, M, N, K, stream) != AT_STATUS_OK) {
    fprintf(stderr, "launch: %s\n", at_runtime_last_error());
    return 1;
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  uint16_t *hc = malloc((size_t)M * N * 2);
  float *ref = malloc(sizeof(float) * (size_t)M * N), *absref = malloc(sizeof(float) * (size_t)M * N);
  CUDA_OK(cudaMemcpy(ref, dRef, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(absref, dAbs, sizeof(float) * (size_t)M * N, cudaMemcpyDeviceToHost));
  long bad = check(dC, hc, ref, absref, (size_t)M * N, "libautotune");

  /* Host time per launch, after warm-up: the library against cuBLASLt's block-scaled FP8 GEMM.
   * Each call is timed on its own and the stream drained every 8 calls, so that a full launch
   * queue never blocks the host and what is measured is the host's own work. */
  enum { ITERS = 2000, DRAIN = 8 };
  static double lib_t[ITERS], lt_t[ITERS];
  for (int i = 0; i < ITERS; i++) {
    double t0 = now_us();
    at_gemm_a8w8_blockscale(rt, dA, dAs, dB, dBs, dC, M, N, K, stream);
    lib_t[i] = now_us() - t0;
    if (i % DRAIN == DRAIN - 1) CUDA_OK(cudaStreamSynchronize(stream));
  }
  double lib_us = median(lib_t, ITERS);

  /* cuBLASLt wants the activation scales token-major and the weight-scale rows padded to 4. */
  float *asT = malloc(sizeof(float) * (size_t)M * G), *bsP = calloc((size_t)NB * G4, sizeof(float));
  for (int r = 0; r < M; r++)
    for (int g = 0; g < G; g++) asT[(size_t)g * M + r] = sa[(size_t)r * G + g];
  for (int r = 0; r < NB; r++)
    for (int g = 0; g < G; g++) bsP[(size_t)r * G4 + g] = sb[(size_t)r * G + g];
  CUDA_OK(cudaMemcpy(dAsT, asT, sizeof(float) * (size_t)M * G, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dBsP, bsP, sizeof(float) * (size_t)NB * G4, cudaMemcpyHostToDevice));
  double lt_us = -1;
  if (M % 4 || N % 4) {
    printf("host time per launch: libautotune %.2f us (median of %d); cuBLASLt block scaling needs M and N to be "
           "multiples of 4\n", lib_us, ITERS);
  } else {
    cublasLtHandle_t lt;
    BLAS_OK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t desc;
    BLAS_OK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dBsP, sizeof dBsP));
    BLAS_OK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dAsT, sizeof dAsT));
    cublasLtMatrixLayout_t la, lb, ld;
    BLAS_OK(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, K, N, K));
    BLAS_OK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, K, M, K));
    BLAS_OK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N));
    cublasLtMatmulPreference_t pref;
    BLAS_OK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws_bytes = 32u << 20;
    void *ws;
    CUDA_OK(cudaMalloc(&ws, ws_bytes));
    BLAS_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    BLAS_OK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &heur, &found));
    if (found) {
      CUDA_OK(cudaMemset(dC2, 0xff, (size_t)M * N * 2));
      BLAS_OK(cublasLtMatmul(lt, desc, &one, dB, la, dA, lb, &zero, dC2, ld, dC2, ld, &heur.algo, ws, ws_bytes, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      check(dC2, hc, ref, absref, (size_t)M * N, "cuBLASLt (for comparison)");
      for (int i = 0; i < ITERS; i++) {
        double t0 = now_us();
        cublasLtMatmul(lt, desc, &one, dB, la, dA, lb, &zero, dC2, ld, dC2, ld, &heur.algo, ws, ws_bytes, stream);
        lt_t[i] = now_us() - t0;
        if (i % DRAIN == DRAIN - 1) CUDA_OK(cudaStreamSynchronize(stream));
      }
      lt_us = median(lt_t, ITERS);
    }
    printf("host time per launch: libautotune %.2f us, cuBLASLt block-scaled FP8 %.2f us (median of %d calls each)\n",
           lib_us, lt_us, ITERS);
  }

  at_runtime_close(rt);
  return bad ? 1 : 0;
}

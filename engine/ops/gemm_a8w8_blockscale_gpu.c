/* gemm_a8w8_blockscale_gpu.c: the a8w8 blockscale GEMM on the GPU (worker side): random input
 * sets, the cuBLAS FP32 reference, the kernel parameter block, and the cuBLASLt block-scaled FP8
 * GEMM as the vendor baseline. Layouts: templates/gemm_a8w8_blockscale_args.h. */
#include <stdlib.h>
#include <string.h>

#include "../../templates/gemm_a8w8_blockscale_args.h"
#include "../core/util.h"
#include "../gpu/blas.h"
#include "../gpu/check.h"
#include "../gpu/lt_names.h"
#include "gemm_a8w8_blockscale_kparams.h"
#include "../gpu/gpu_op.h"

typedef struct gset {
  CUdeviceptr a, as, b, bs, c;
  CUdeviceptr vas, vbs;       /* the scales as cuBLASLt wants them (vendor baseline only) */
  cublasLtMatmulDesc_t vdesc; /* carries that set's scale pointers */
} gset;

typedef struct state {
  const at_gpu *g;
  at_shape s;
  int sets;
  gset *set;
  CUdeviceptr af, bf, ref; /* set 0 dequantized, and C = af bf^T in fp32 */
  CUdeviceptr absref;      /* |af| |bf|^T: the scale of the dot-product error bound (check.h) */
  int lt_ready;            /* the vendor baseline: 1 prepared, -1 failed to prepare, 0 not tried */
  CUdeviceptr lt_ws;
  size_t lt_ws_bytes;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo;
} state;

/* Per worker: the support kernels and the library handles, made once. */
static CUmodule g_mod;
static CUfunction f_gen_a, f_gen_b, f_dequant, f_transpose, f_pad;
static cublasHandle_t g_blas;
static cublasLtHandle_t g_lt;
static const at_blas_api *g_api;

static int64_t groups_of(const at_shape *s) { return s->k / 128; }
static int64_t nblocks_of(const at_shape *s) { return (s->n + 127) / 128; }

static double set_bytes(const at_shape *s) {
  double m = (double)s->m, n = (double)s->n, k = (double)s->k, g = (double)groups_of(s);
  return m * k + n * k + (m + (double)nblocks_of(s)) * g * 4 + m * n * 2;
}

static int load_support(const at_gpu *g) {
  if (g_mod) return AT_OK;
  AT_TRY(at_gpu_support_module(g, "gemm_a8w8_blockscale_support.cu", &g_mod));
  CU_CHECK(at_cu->ModuleGetFunction(&f_gen_a, g_mod, "at_gen_activations"));
  CU_CHECK(at_cu->ModuleGetFunction(&f_gen_b, g_mod, "at_gen_weights"));
  CU_CHECK(at_cu->ModuleGetFunction(&f_dequant, g_mod, "at_dequantize"));
  CU_CHECK(at_cu->ModuleGetFunction(&f_transpose, g_mod, "at_transpose_f32"));
  CU_CHECK(at_cu->ModuleGetFunction(&f_pad, g_mod, "at_pad_rows_f32"));
  AT_TRY(at_blas_load(&g_api));
  CUBLAS_CHECK(g_api->Create(&g_blas));
  /* Pedantic: FP32 all the way, never TF32. */
  CUBLAS_CHECK(g_api->SetMathMode(g_blas, CUBLAS_PEDANTIC_MATH));
  return AT_OK;
}

static unsigned grid_for(int64_t n, unsigned threads, const at_gpu *g) {
  int64_t b = (n + threads - 1) / threads, cap = (int64_t)g->info.sm_count * 32;
  return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int make_set(state *st, gset *set, uint64_t seed) {
  const at_shape *s = &st->s;
  int64_t G = groups_of(s);
  AT_TRY(at_gpu_alloc(&set->a, (size_t)(s->m * s->k)));
  AT_TRY(at_gpu_alloc(&set->as, (size_t)(s->m * G * 4)));
  AT_TRY(at_gpu_alloc(&set->b, (size_t)(s->n * s->k)));
  AT_TRY(at_gpu_alloc(&set->bs, (size_t)(nblocks_of(s) * G * 4)));
  AT_TRY(at_gpu_alloc(&set->c, (size_t)(s->m * s->n * 2)));
  int m = (int)s->m, n = (int)s->n, k = (int)s->k;
  unsigned long long sa = mix(seed ^ 1), sb = mix(seed ^ 2);
  void *ga[] = {&set->a, &set->as, &m, &k, &sa};
  int64_t warps = s->m * G;
  CU_CHECK(at_cu->LaunchKernel(f_gen_a, (unsigned)((warps * 32 + 255) / 256), 1, 1, 256, 1, 1, 0, st->g->stream, ga, NULL));
  void *gb[] = {&set->b, &set->bs, &n, &k, &sb};
  CU_CHECK(at_cu->LaunchKernel(f_gen_b, (unsigned)(nblocks_of(s) * G), 1, 1, 256, 1, 1, 0, st->g->stream, gb, NULL));
  return AT_OK;
}

static int dequantize(state *st, CUdeviceptr q, CUdeviceptr scale, CUdeviceptr out, int rows, int row_block) {
  int k = (int)st->s.k;
  void *args[] = {&q, &scale, &out, &rows, &k, &row_block};
  CU_CHECK(at_cu->LaunchKernel(f_dequant, grid_for((int64_t)rows * k, 256, st->g), 1, 1, 256, 1, 1, 0, st->g->stream,
                               args, NULL));
  return AT_OK;
}

/* C (M x N row-major) = A (M x K) B (N x K)^T, as cuBLAS sees it: C^T = B A^T in column-major. */
static int sgemm(state *st, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream stream) {
  const float one = 1.0f, zero = 0.0f;
  int m = (int)st->s.m, n = (int)st->s.n, k = (int)st->s.k;
  CUBLAS_CHECK(g_api->SetStream(g_blas, (cudaStream_t)stream));
  CUBLAS_CHECK(g_api->Sgemm(g_blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, (const float *)b, k, (const float *)a, k,
                            &zero, (float *)c, n));
  return AT_OK;
}

/* absref = |A| |B|^T of set 0: the dequantized copies made absolute, one more SGEMM, then the
 * copies made again (the timed reference GEMM reads them). */
static int make_absref(state *st) {
  const at_shape *s = &st->s;
  AT_TRY(at_gpu_alloc(&st->absref, (size_t)(s->m * s->n * 4)));
  AT_TRY(at_abs_f32(st->g, st->af, (size_t)(s->m * s->k)));
  AT_TRY(at_abs_f32(st->g, st->bf, (size_t)(s->n * s->k)));
  AT_TRY(sgemm(st, st->af, st->bf, st->absref, st->g->stream));
  AT_TRY(dequantize(st, st->set[0].a, st->set[0].as, st->af, (int)s->m, 1));
  return dequantize(st, st->set[0].b, st->set[0].bs, st->bf, (int)s->n, 128);
}

static void teardown(void *p) {
  state *st = p;
  if (!st) return;
  for (int i = 0; i < st->sets; i++) {
    gset *s = &st->set[i];
    at_gpu_free(&s->a), at_gpu_free(&s->as), at_gpu_free(&s->b), at_gpu_free(&s->bs), at_gpu_free(&s->c);
    at_gpu_free(&s->vas), at_gpu_free(&s->vbs);
    if (s->vdesc) g_api->LtMatmulDescDestroy(s->vdesc);
  }
  if (st->la) g_api->LtMatrixLayoutDestroy(st->la);
  if (st->lb) g_api->LtMatrixLayoutDestroy(st->lb);
  if (st->ld) g_api->LtMatrixLayoutDestroy(st->ld);
  at_gpu_free(&st->af), at_gpu_free(&st->bf), at_gpu_free(&st->ref), at_gpu_free(&st->absref), at_gpu_free(&st->lt_ws);
  free(st->set);
  free(st);
}

static int setup(const at_gpu *g, const at_shape *s, uint64_t seed, int sets, void **out) {
  *out = NULL;
  AT_TRY(load_support(g));
  state *st = at_xcalloc(1, sizeof *st);
  st->g = g;
  st->s = *s;
  st->set = at_xcalloc((size_t)sets, sizeof *st->set);
  int rc = AT_OK;
  for (int i = 0; i < sets && rc == AT_OK; i++, st->sets++) rc = make_set(st, &st->set[i], mix(seed + (uint64_t)i));
  if (rc == AT_OK) rc = at_gpu_alloc(&st->af, (size_t)(s->m * s->k * 4));
  if (rc == AT_OK) rc = at_gpu_alloc(&st->bf, (size_t)(s->n * s->k * 4));
  if (rc == AT_OK) rc = at_gpu_alloc(&st->ref, (size_t)(s->m * s->n * 4));
  if (rc == AT_OK) rc = dequantize(st, st->set[0].a, st->set[0].as, st->af, (int)s->m, 1);
  if (rc == AT_OK) rc = dequantize(st, st->set[0].b, st->set[0].bs, st->bf, (int)s->n, 128);
  if (rc == AT_OK) rc = sgemm(st, st->af, st->bf, st->ref, g->stream);
  if (rc == AT_OK) rc = make_absref(st);
  if (rc == AT_OK) {
    CUresult r = at_cu->StreamSynchronize(g->stream);
    if (r != CUDA_SUCCESS) rc = at_fail_api("CUDA", "inputs and reference", __FILE__, __LINE__, r, at_cu_error_name(r), at_cu_error_text(r));
  }
  if (rc) {
    teardown(st);
    return rc;
  }
  *out = st;
  return AT_OK;
}

static void output(void *p, int set, CUdeviceptr *ptr, size_t *count) {
  state *st = p;
  *ptr = st->set[set].c;
  *count = (size_t)(st->s.m * st->s.n);
}

static CUdeviceptr reference(void *p) { return ((state *)p)->ref; }

static CUdeviceptr reference_abs(void *p) { return ((state *)p)->absref; }

static int operands(void *p, int set, CUdeviceptr *ptrs, int cap) {
  const gset *s = &((state *)p)->set[set];
  const CUdeviceptr all[5] = {s->a, s->as, s->b, s->bs, s->c};
  int n = cap < 5 ? cap : 5;
  for (int i = 0; i < n; i++) ptrs[i] = all[i];
  return n;
}

static int kernel_params(void *p, int set, const char *family, const at_params *params, CUdeviceptr ws,
                         int64_t ws_counters, at_kparams *out) {
  state *st = p;
  const gset *s = &st->set[set];
  at_a8w8_plan plan;
  AT_TRY(at_a8w8_plan_of(family, params, &plan));
  /* The worker's workspace: its counters, then the partials (op.h's at_ws_bytes layout). */
  CUdeviceptr partials = ws ? ws + at_ws_bytes(ws_counters, 0) : 0;
  at_gemm_a8w8_blockscale_args a = {s->a, s->as, s->b, s->bs, s->c, partials, ws, (int)st->s.m, (int)st->s.n,
                                    (int)st->s.k, (int)ws_counters};
  return at_a8w8_kparams(&plan, &a, out);
}

static int enqueue_reference(void *p, int set, CUstream stream) {
  (void)set;
  state *st = p;
  return sgemm(st, st->af, st->bf, st->ref, stream);
}

static int time_reference(void *p, const at_bench_cfg *cfg, at_bench_result *r) {
  state *st = p;
  /* One fp32 copy of the inputs exists: the reference is timed on it alone (docs/timing.md). */
  at_bench_cfg c = *cfg;
  c.sets = 1;
  c.cut_us = 0;
  return at_bench(st->g, enqueue_reference, st, &c, r);
}

/* ---- the vendor baseline: cuBLASLt block-scaled FP8 ------------------------------------------- */

#define LT_CHECK(expr) CUBLAS_CHECK(expr)

static int lt_prepare(state *st) {
  const at_shape *s = &st->s;
  int M = (int)s->m, G = (int)groups_of(s), NB = (int)nblocks_of(s), G4 = (G + 3) / 4 * 4;
  if (!g_lt) LT_CHECK(g_api->LtCreate(&g_lt));
  st->lt_ws_bytes = 32u << 20;
  AT_TRY(at_gpu_alloc(&st->lt_ws, st->lt_ws_bytes));
  int32_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F; /* cuBLASLt's A is our B */
  int32_t mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;     /* cuBLASLt's B is our A */
  for (int i = 0; i < st->sets; i++) {
    gset *set = &st->set[i];
    AT_TRY(at_gpu_alloc(&set->vas, (size_t)M * G * 4));
    AT_TRY(at_gpu_alloc(&set->vbs, (size_t)NB * G4 * 4));
    void *ta[] = {&set->as, &set->vas, &M, &G};
    CU_CHECK(at_cu->LaunchKernel(f_transpose, grid_for((int64_t)M * G, 256, st->g), 1, 1, 256, 1, 1, 0, st->g->stream, ta, NULL));
    void *pa[] = {&set->bs, &set->vbs, &NB, &G, &G4};
    CU_CHECK(at_cu->LaunchKernel(f_pad, grid_for((int64_t)NB * G4, 256, st->g), 1, 1, 256, 1, 1, 0, st->g->stream, pa, NULL));
    LT_CHECK(g_api->LtMatmulDescCreate(&set->vdesc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a));
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b));
    void *pa_ptr = (void *)(uintptr_t)set->vbs, *pb_ptr = (void *)(uintptr_t)set->vas;
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa_ptr, sizeof pa_ptr));
    LT_CHECK(g_api->LtMatmulDescSetAttribute(set->vdesc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb_ptr, sizeof pb_ptr));
  }
  LT_CHECK(g_api->LtMatrixLayoutCreate(&st->la, CUDA_R_8F_E4M3, (uint64_t)s->k, (uint64_t)s->n, s->k));
  LT_CHECK(g_api->LtMatrixLayoutCreate(&st->lb, CUDA_R_8F_E4M3, (uint64_t)s->k, (uint64_t)s->m, s->k));
  LT_CHECK(g_api->LtMatrixLayoutCreate(&st->ld, CUDA_R_16BF, (uint64_t)s->n, (uint64_t)s->m, s->n));
  cublasLtMatmulPreference_t pref;
  LT_CHECK(g_api->LtMatmulPreferenceCreate(&pref));
  uint64_t ws = st->lt_ws_bytes;
  cublasStatus_t sr = g_api->LtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  if (sr == CUBLAS_STATUS_SUCCESS)
    sr = g_api->LtMatmulAlgoGetHeuristic(g_lt, st->set[0].vdesc, st->la, st->lb, st->ld, st->ld, pref, 1, &heur, &found);
  g_api->LtMatmulPreferenceDestroy(pref);
  LT_CHECK(sr);
  if (found < 1) return at_fail(AT_ERR_RUNTIME, "cuBLASLt has no block-scaled FP8 algorithm for this shape");
  st->algo = heur.algo;
  return AT_OK;
}

static int enqueue_vendor(void *p, int set, CUstream stream) {
  state *st = p;
  gset *s = &st->set[set];
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(g_api->LtMatmul(g_lt, s->vdesc, &one, (const void *)(uintptr_t)s->b, st->la, (const void *)(uintptr_t)s->a,
                           st->lb, &zero, (const void *)(uintptr_t)s->c, st->ld, (void *)(uintptr_t)s->c, st->ld,
                           &st->algo, (void *)(uintptr_t)st->lt_ws, st->lt_ws_bytes, (cudaStream_t)stream));
  return AT_OK;
}

static int vendor_prepare(void *p, int *available, char *name, size_t name_len, char *note, size_t note_len) {
  state *st = p;
  *available = 0;
  snprintf(name, name_len, "cublaslt_blockscale_fp8");
  if (st->s.m % 4 || st->s.n % 4) {
    snprintf(note, note_len, "cuBLASLt block scaling needs M and N to be multiples of 4");
    return AT_OK;
  }
  if (st->lt_ready == 0) st->lt_ready = lt_prepare(st) == AT_OK ? 1 : -1;
  if (st->lt_ready < 0) {
    snprintf(note, note_len, "cuBLASLt block-scaled FP8 unavailable: %s", at_errmsg());
    return AT_OK; /* a missing baseline is a note, not a failed run */
  }
  *available = 1;
  return AT_OK;
}

/* Names one of cublasLt.h's enum values, or prints its number (a value newer than lt_names.h). */
static const char *lt_name(const char *const *names, size_t n, unsigned v, char *num, size_t len) {
  if (v < n && names[v][0]) return names[v];
  snprintf(num, len, "#%u", v);
  return num;
}

/* How cuBLASLt reduces the partials of a split K. */
static const char *lt_reduction(int32_t splitk, uint32_t scheme) {
  if (splitk <= 1) return "";
  switch (scheme) {
  case CUBLASLT_REDUCTION_SCHEME_INPLACE: return " reduced in place";
  case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return " reduced in a compute-type workspace";
  case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return " reduced in an output-type workspace";
  default: return "";
  }
}

/* The algorithm cuBLASLt's heuristic picked (lt_prepare). Its matrix A is our B, so its tile is
 * BLOCK_N x BLOCK_M in this op's terms, and its cluster's first extent runs along N. */
static void vendor_describe(void *p, char *buf, size_t len) {
  state *st = p;
  buf[0] = 0;
  if (st->lt_ready != 1 || !g_api->LtMatmulAlgoConfigGetAttribute) return;
  int32_t id = -1, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0, scheme = 0;
  uint16_t cluster = 0;
  size_t w;
  const cublasLtMatmulAlgo_t *a = &st->algo;
  if (g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w) ||
      g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w) ||
      g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w) ||
      g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme, &w) ||
      g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, &w) ||
      g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w))
    return;
  /* The cluster shape is newer than the other attributes; a library without it leaves it auto. */
  if (g_api->LtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w))
    cluster = 0;
  char t[16], s[16], c[16];
  snprintf(buf, len, "algo %d, tile %s (N x M), stages %s, split K %d%s, cluster %s, swizzle %u", (int)id,
           lt_name(at_lt_tile_names, AT_ARRAY_LEN(at_lt_tile_names), tile, t, sizeof t),
           lt_name(at_lt_stage_names, AT_ARRAY_LEN(at_lt_stage_names), stages, s, sizeof s), (int)splitk,
           lt_reduction(splitk, scheme),
           cluster ? lt_name(at_lt_cluster_names, AT_ARRAY_LEN(at_lt_cluster_names), cluster, c, sizeof c) : "auto",
           (unsigned)swizzle);
}

static int time_vendor(void *p, const at_bench_cfg *cfg, const at_check_bound *bound, at_bench_result *r,
                       double *check_ratio, char *name, size_t name_len, char *note, size_t note_len) {
  state *st = p;
  memset(r, 0, sizeof *r);
  *check_ratio = -1;
  int available;
  AT_TRY(vendor_prepare(st, &available, name, name_len, note, note_len));
  if (!available) return AT_OK;
  size_t count = (size_t)(st->s.m * st->s.n);
  AT_TRY(at_poison_bf16(st->g, st->set[0].c, count));
  AT_TRY(enqueue_vendor(st, 0, st->g->stream));
  at_check_result chk;
  AT_TRY(at_check_bf16(st->g, st->set[0].c, st->ref, st->absref, count, bound, &chk));
  *check_ratio = chk.worst_ratio;
  if (chk.bad) {
    snprintf(note, note_len,
             "cuBLASLt block-scaled FP8 failed the check (%lld bad, max error %g, worst error/bound %.3g): not timed",
             (long long)chk.bad, chk.max_err, chk.worst_ratio);
    return AT_OK;
  }
  at_bench_cfg c = *cfg;
  c.cut_us = 0;
  return at_bench(st->g, enqueue_vendor, st, &c, r);
}

const at_gpu_op at_gpu_op_gemm_a8w8_blockscale = {
    .name = "gemm_a8w8_blockscale",
    .set_bytes = set_bytes,
    .setup = setup,
    .teardown = teardown,
    .output = output,
    .reference = reference,
    .reference_abs = reference_abs,
    .operands = operands,
    .kernel_params = kernel_params,
    .time_reference = time_reference,
    .vendor_prepare = vendor_prepare,
    .vendor_enqueue = enqueue_vendor,
    .vendor_describe = vendor_describe,
    .time_vendor = time_vendor,
};

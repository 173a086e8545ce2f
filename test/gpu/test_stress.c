/* test_stress.c: the runtime library used the way a serving process uses it (GPU suite; exits 77
 * where there is no GPU). One process, one at_runtime:
 *   - THREADS threads, each with its own streams and its per-thread default stream, make CALLS
 *     calls in bursts of one to three launches without a sync in between, on shapes drawn at
 *     random from a pool (M from 1 to 4096; the shipped (N, K), which the committed configs tune,
 *     two that no file tunes, and two whose test-made config files split K in most buckets, one
 *     with each template family (the sm90 file with the operands swapped, SWAP_AB, up to M = 32;
 *     the mma file leaves GROUP_M and SPLIT_K to the launch: buckets that share an instantiation
 *     each launch with their own SPLIT_K, checked on M = 64 and 128 one after the other);
 *   - each thread then captures two launches in CUDA graphs on a stream the library has never
 *     seen, replays both graphs at once on two other streams, launches eagerly on one of them,
 *     and replays again;
 *   - in global capture mode as PyTorch captures, a split-K shape warmed up on one stream is
 *     captured on a new one and replayed; and a persistent grid of clusters of four, whose first
 *     launch in a thread (where the library asks how many clusters fit) is captured;
 *   - inputs with blocks quantized from zeros (values and scale zero, in the first k-block
 *     and later ones, of A rows and of B blocks) on shapes whose tuned config rescales in place
 *     (sm90 RESCALE, whose units skip zero scales);
 *   - shapes the runtime splits into a main launch and a tail (docs/runtime.md), back to back on
 *     one stream and captured in a graph;
 *   - kernels made ready by at_runtime_prepare on an empty compile cache, all by its compiles ahead
 *     in threads (none by a load: what $AUTOTUNE_DEBUG makes it say): no first call after it waits
 *     for a compile (each returns within 10 ms; a compile takes longer, which is checked);
 *   - the same kernels compiled into a cache by `autotune warm` (argv[2]), for this GPU as probed and
 *     as named without one: the same cubins; a runtime on that cache prepares without compiling;
 *   - a second runtime answering from a tuning DB (made by the autotune binary, argv[2]) that is
 *     rewritten three times while two threads call it, each time so that another config wins: the
 *     runtime must switch within five seconds;
 *   - with a second GPU (said and skipped without one), a pool of the same kinds on GPU 1
 *     and the threads' eager calls and graphs again, half of the threads on each GPU at once, all
 *     through the one at_runtime (a serving process that drives several GPUs);
 *   - finally, the primary context reset (cudaDeviceReset) under the open runtime, and a new pool
 *     called on the default stream, a new one and in a graph.
 * The whole sequence runs once per launch mode (a test each, argv[1]): plain launches, and
 * programmatic dependent launch, where a kernel may start while the one before it on the stream
 * (often the previous call) still runs.
 * Every output is poisoned with NaN before every call and every element is checked against a
 * cuBLAS FP32 reference of the same inputs. The sequence is drawn from a seed ($AT_STRESS_SEED, or
 * the clock), which every failure message carries.
 *
 * Uses only the public runtime API plus the engine's input generation and cuBLAS loading, so the
 * same file builds against older trees (to show that it catches the bugs they had). */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../engine/runtime/autotune.h"
#include "../unit/check.h"
#include "../unit/dbq.h"
#include "../unit/proc.h"
#include "../unit/tail_shapes.h"
#include "core/config.h"
#include "core/lookup.h"
#include "core/store.h"
#include "core/util.h"
#include "ops/gemm_a8w8_blockscale_tail.h"
#include "gpu/blas.h"
#include "gpu/gpuctx.h"

enum { THREADS = 4, CALLS = 64, BUFS = 3, MAX_PROBLEMS = 18 };

/* The bound every output element must meet (docs/timing.md): atol + rtol |ref| + gamma (|A||B|). */
static const double ATOL = 1e-2, RTOL = 1e-2, GAMMA = 1.0 / 512;

typedef struct problem {
  int64_t m, n, k;
  CUdeviceptr a, as, b, bs;
  float *ref, *absref; /* host: C of the dequantized inputs, and of their absolute values */
  int split;           /* the config the library picks splits K */
} problem;

/* A GPU and what the test made on it: the support kernels (inputs, dequantized copies), a cuBLAS
 * handle for the references, and the pool of problems whose inputs live there. */
typedef struct device {
  at_gpu g;
  CUfunction gen_a, gen_b, dequant;
  cublasHandle_t blas;
  problem p[MAX_PROBLEMS];
  int np;
} device;

/* D[0] for everything but the two-device phase, whose threads work on D[0] and D[1] at once; each
 * thread's helpers use the device it set as its own (CUR). */
static device D[2];
static _Thread_local device *CUR = &D[0];
static at_runtime *RT;
static int PDL_MODE; /* the test's launch mode (argv[1]), for every runtime it opens */
static unsigned long long SEED;
static const at_blas_api *BLAS;
static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&report_mu);
  fprintf(stderr, "FAIL (seed %llu, rerun with AT_STRESS_SEED=%llu): ", SEED, SEED);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  check_failures++;
  pthread_mutex_unlock(&report_mu);
  va_end(ap);
}

#define CUX(expr)                                                                                                      \
  do {                                                                                                                 \
    CUresult r_ = (expr);                                                                                              \
    if (r_ != CUDA_SUCCESS) {                                                                                          \
      fail("%s:%d: %s: %s", __FILE__, __LINE__, #expr, at_cu_error_name(r_));                                          \
      exit(1);                                                                                                         \
    }                                                                                                                  \
  } while (0)

static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ---- inputs and references ------------------------------------------------------------------- */

static void sgemm(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int m, int n, int k) {
  const float one = 1.0f, zero = 0.0f;
  if (BLAS->SetStream(CUR->blas, (cudaStream_t)CUR->g.stream) != CUBLAS_STATUS_SUCCESS ||
      BLAS->Sgemm(CUR->blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, (const float *)b, k, (const float *)a, k, &zero,
                  (float *)c, n) != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLAS SGEMM failed");
    exit(1);
  }
}

static void dequantize(CUdeviceptr q, CUdeviceptr scale, CUdeviceptr out, int rows, int k, int row_block) {
  void *args[] = {&q, &scale, &out, &rows, &k, &row_block};
  CUX(at_cu->LaunchKernel(CUR->dequant, (unsigned)CUR->g.info.sm_count * 8, 1, 1, 256, 1, 1, 0, CUR->g.stream, args, NULL));
}

static float *to_host_f32(CUdeviceptr p, size_t count) {
  float *h = at_xmalloc(count * sizeof *h);
  CUX(at_cu->StreamSynchronize(CUR->g.stream));
  CUX(at_cu->MemcpyDtoH(h, p, count * sizeof *h));
  return h;
}

/* Blocks quantized from zeros: their values and their scale are zero. A rows r = 3 (mod 7) at
 * k-blocks 1, 4, 7, ... and rows r = 5 (mod 7) at k-block 0; B's 128 x 128 blocks (nb, g) with
 * nb + g = 2 (mod 4), and block (0, 0). */
static void plant_zero_blocks(problem *p) {
  const int M = (int)p->m, N = (int)p->n, K = (int)p->k, G_ = K / 128, NB = (N + 127) / 128;
  unsigned char *a = at_xmalloc((size_t)M * K), *b = at_xmalloc((size_t)N * K);
  float *as = at_xmalloc((size_t)M * G_ * 4), *bs = at_xmalloc((size_t)NB * G_ * 4);
  CUX(at_cu->StreamSynchronize(CUR->g.stream));
  CUX(at_cu->MemcpyDtoH(a, p->a, (size_t)M * K));
  CUX(at_cu->MemcpyDtoH(as, p->as, (size_t)M * G_ * 4));
  CUX(at_cu->MemcpyDtoH(b, p->b, (size_t)N * K));
  CUX(at_cu->MemcpyDtoH(bs, p->bs, (size_t)NB * G_ * 4));
  for (int r = 0; r < M; r++)
    for (int g = 0; g < G_; g++)
      if ((r % 7 == 3 && g % 3 == 1) || (r % 7 == 5 && g == 0)) {
        memset(a + (size_t)r * K + (size_t)g * 128, 0, 128);
        as[(size_t)r * G_ + g] = 0.f;
      }
  for (int nb = 0; nb < NB; nb++)
    for (int g = 0; g < G_; g++)
      if ((nb + g) % 4 == 2 || (nb == 0 && g == 0)) {
        for (int r = nb * 128; r < N && r < nb * 128 + 128; r++) memset(b + (size_t)r * K + (size_t)g * 128, 0, 128);
        bs[(size_t)nb * G_ + g] = 0.f;
      }
  CUX(at_cu->MemcpyHtoD(p->a, a, (size_t)M * K));
  CUX(at_cu->MemcpyHtoD(p->as, as, (size_t)M * G_ * 4));
  CUX(at_cu->MemcpyHtoD(p->b, b, (size_t)N * K));
  CUX(at_cu->MemcpyHtoD(p->bs, bs, (size_t)NB * G_ * 4));
  free(a), free(b), free(as), free(bs);
}

static void make_problem(problem *p, int64_t m, int64_t n, int64_t k, uint64_t seed, int zero_blocks) {
  *p = (problem){m, n, k, 0, 0, 0, 0, NULL, NULL, 0};
  int M = (int)m, N = (int)n, K = (int)k, G_ = K / 128, NB = (N + 127) / 128;
  CUX(at_cu->MemAlloc(&p->a, (size_t)M * K));
  CUX(at_cu->MemAlloc(&p->as, (size_t)M * G_ * 4));
  CUX(at_cu->MemAlloc(&p->b, (size_t)N * K));
  CUX(at_cu->MemAlloc(&p->bs, (size_t)NB * G_ * 4));
  unsigned long long sa = seed ^ 0x1111, sb = seed ^ 0x2222;
  void *ga[] = {&p->a, &p->as, &M, &K, &sa};
  CUX(at_cu->LaunchKernel(CUR->gen_a, (unsigned)(((int64_t)M * G_ * 32 + 255) / 256), 1, 1, 256, 1, 1, 0, CUR->g.stream, ga, NULL));
  void *gb[] = {&p->b, &p->bs, &N, &K, &sb};
  CUX(at_cu->LaunchKernel(CUR->gen_b, (unsigned)(NB * G_), 1, 1, 256, 1, 1, 0, CUR->g.stream, gb, NULL));
  if (zero_blocks) plant_zero_blocks(p);
  CUdeviceptr af, bf, c;
  CUX(at_cu->MemAlloc(&af, (size_t)M * K * 4));
  CUX(at_cu->MemAlloc(&bf, (size_t)N * K * 4));
  CUX(at_cu->MemAlloc(&c, (size_t)M * N * 4));
  dequantize(p->a, p->as, af, M, K, 1);
  dequantize(p->b, p->bs, bf, N, K, 128);
  sgemm(af, bf, c, M, N, K);
  p->ref = to_host_f32(c, (size_t)M * N);
  /* |A| |B|: the same GEMM on the absolute values, made on the host. */
  float *ha = to_host_f32(af, (size_t)M * K), *hb = to_host_f32(bf, (size_t)N * K);
  for (size_t i = 0; i < (size_t)M * K; i++) ha[i] = fabsf(ha[i]);
  for (size_t i = 0; i < (size_t)N * K; i++) hb[i] = fabsf(hb[i]);
  CUX(at_cu->MemcpyHtoD(af, ha, (size_t)M * K * 4));
  CUX(at_cu->MemcpyHtoD(bf, hb, (size_t)N * K * 4));
  sgemm(af, bf, c, M, N, K);
  p->absref = to_host_f32(c, (size_t)M * N);
  free(ha), free(hb);
  at_cu->MemFree(af), at_cu->MemFree(bf), at_cu->MemFree(c);
  at_selection sel;
  if (at_runtime_select(RT, "gemm_a8w8_blockscale", m, n, k, NULL, &sel) != AT_STATUS_OK) {
    fail("at_runtime_select %lldx%lldx%lld: %s", (long long)m, (long long)n, (long long)k, at_runtime_last_error());
    exit(1);
  }
  p->split = strstr(sel.params, "\"SPLIT_K\":1,") == NULL && strstr(sel.params, "\"SPLIT_K\":1}") == NULL &&
             strstr(sel.params, "SPLIT_K") != NULL;
}

static void free_problem(problem *p) {
  at_cu->MemFree(p->a), at_cu->MemFree(p->as), at_cu->MemFree(p->b), at_cu->MemFree(p->bs);
  free(p->ref), free(p->absref);
}

/* Every element of a bf16 output against the reference. */
static void check_output(const problem *p, CUdeviceptr out, unsigned short *host, const char *what, int call) {
  size_t count = (size_t)(p->m * p->n);
  CUX(at_cu->MemcpyDtoH(host, out, count * 2));
  size_t bad = 0, first = 0, nan = 0;
  double worst = 0;
  for (size_t i = 0; i < count; i++) {
    uint32_t bits = (uint32_t)host[i] << 16;
    float o;
    memcpy(&o, &bits, 4);
    double err = fabs((double)o - p->ref[i]);
    double bound = ATOL + RTOL * fabs(p->ref[i]) + GAMMA * p->absref[i];
    if (!(err <= bound)) {
      if (!bad) first = i;
      bad++;
      if (isnan(o)) nan++;
      else if (err / bound > worst) worst = err / bound;
    }
  }
  if (bad)
    fail("%s call %d, M=%lld N=%lld K=%lld%s: %zu of %zu elements wrong (%zu never written, NaN), first at row %zu col "
         "%zu, worst finite error %.3g x the bound",
         what, call, (long long)p->m, (long long)p->n, (long long)p->k, p->split ? " (split-K)" : "", bad, count, nan,
         first / (size_t)p->n, first % (size_t)p->n, worst);
}

/* One call through the library; a failure is reported. */
static int call_library(const problem *p, CUdeviceptr out, CUstream s, const char *what, int call) {
  int rc = at_gemm_a8w8_blockscale(RT, (void *)(uintptr_t)p->a, (const float *)(uintptr_t)p->as,
                                   (void *)(uintptr_t)p->b, (const float *)(uintptr_t)p->bs, (void *)(uintptr_t)out,
                                   p->m, p->n, p->k, s);
  if (rc != AT_STATUS_OK)
    fail("%s call %d, M=%lld N=%lld K=%lld: status %d: %s", what, call, (long long)p->m, (long long)p->n,
         (long long)p->k, rc, at_runtime_last_error());
  return rc;
}

/* The output poisoned with NaN (unwritten stays NaN), then one call. */
static int gemm(const problem *p, CUdeviceptr out, CUstream s, const char *what, int call) {
  CUX(at_cu->MemsetD16Async(out, 0x7fc0, (size_t)(p->m * p->n), s));
  return call_library(p, out, s, what, call);
}

/* ---- the threads ------------------------------------------------------------------------------ */

typedef struct worker {
  int id;
  device *dev; /* the GPU of its streams, buffers and problems */
  uint64_t rng;
  CUstream s[2];
  CUdeviceptr out[BUFS];
  unsigned short *host;
  int calls, split, untuned; /* eager calls made: all, of split-K problems, on (N, K) no file tunes */
  int own_calls, own_split;  /* those made on the thread's own default stream (CU_STREAM_PER_THREAD) */
} worker;

static size_t max_out_elems(void) {
  size_t mx = 0;
  for (int i = 0; i < CUR->np; i++)
    if ((size_t)(CUR->p[i].m * CUR->p[i].n) > mx) mx = (size_t)(CUR->p[i].m * CUR->p[i].n);
  return mx;
}

static const problem *pick(worker *w, int want_split) {
  for (int tries = 0; tries < 64; tries++) {
    const problem *p = &CUR->p[next_rand(&w->rng) % (uint64_t)CUR->np];
    if (!want_split || p->split) return p;
  }
  return &CUR->p[0];
}

/* Bursts of one to three launches on one stream, then a check of each. The stream: one of the
 * thread's two, or its per-thread default stream (CU_STREAM_PER_THREAD: one handle in every thread,
 * a different stream in each, which must not share a split-K workspace). */
static void eager_calls(worker *w) {
  for (int call = 0; call < CALLS;) {
    const int which = (int)(next_rand(&w->rng) % 3);
    CUstream s = which < 2 ? w->s[which] : CU_STREAM_PER_THREAD;
    int burst = 1 + (int)(next_rand(&w->rng) % BUFS);
    const problem *q[BUFS];
    int ok[BUFS];
    for (int j = 0; j < burst; j++) {
      /* every third call a split-K problem: the share the coverage check below asks for, whatever
       * the random pool holds */
      q[j] = pick(w, (call + j) % 3 == 0);
      ok[j] = gemm(q[j], w->out[j], s, "eager", call + j) == AT_STATUS_OK;
    }
    CUX(at_cu->StreamSynchronize(s));
    for (int j = 0; j < burst; j++) {
      if (ok[j]) check_output(q[j], w->out[j], w->host, "eager", call + j);
      w->calls++, w->split += q[j]->split, w->untuned += q[j]->n == 1536 || q[j]->n == 512;
      if (which == 2) w->own_calls++, w->own_split += q[j]->split;
    }
    call += burst;
  }
}

/* Kernel nodes of a captured graph: what the runtime launched; with max_grid, the largest grid (x)
 * among them. */
static int kernel_nodes(CUgraph g, unsigned *max_grid) {
  size_t n = 0;
  if (max_grid) *max_grid = 0;
  if (at_cu->GraphGetNodes(g, NULL, &n) != CUDA_SUCCESS) return -1;
  CUgraphNode *nodes = at_xmalloc((n + 1) * sizeof *nodes);
  int kernels = 0;
  if (at_cu->GraphGetNodes(g, nodes, &n) == CUDA_SUCCESS)
    for (size_t i = 0; i < n; i++) {
      CUgraphNodeType t;
      CUDA_KERNEL_NODE_PARAMS kp;
      if (at_cu->GraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS || t != CU_GRAPH_NODE_TYPE_KERNEL) continue;
      kernels++;
      if (max_grid && at_cu->GraphKernelNodeGetParams(nodes[i], &kp) == CUDA_SUCCESS && kp.gridDimX > *max_grid)
        *max_grid = kp.gridDimX;
    }
  free(nodes);
  return kernels;
}

/* One call (poisoned output, then the library) captured on s and instantiated; with max_grid, the
 * largest grid (x) of the graph's kernels. */
static CUgraphExec capture(const problem *p, CUdeviceptr out, CUstream s, CUstreamCaptureMode mode, const char *what,
                           unsigned *max_grid) {
  CUgraph graph;
  CUgraphExec exec;
  CUX(at_cu->StreamBeginCapture(s, mode));
  gemm(p, out, s, what, 0);
  CUresult r = at_cu->StreamEndCapture(s, &graph);
  if (r != CUDA_SUCCESS) {
    fail("%s: capture of M=%lld N=%lld K=%lld failed: %s", what, (long long)p->m, (long long)p->n, (long long)p->k,
         at_cu_error_name(r));
    return NULL;
  }
  if (max_grid) kernel_nodes(graph, max_grid);
  CUX(at_cu->GraphInstantiate(&exec, graph, 0));
  CUX(at_cu->GraphDestroy(graph));
  return exec;
}

/* Two graphs captured on one new stream, replayed at once on two others; an eager launch on one of
 * them in between; replayed again. */
static void graph_calls(worker *w) {
  CUstream cs;
  CUX(at_cu->StreamCreate(&cs, CU_STREAM_NON_BLOCKING));
  const problem *p1 = pick(w, 1), *p2 = pick(w, 1), *p3 = pick(w, 0);
  /* Warmed up on another stream first, as frameworks do before they capture. */
  const problem *warm[2] = {p1, p2};
  for (int i = 0; i < 2; i++)
    if (gemm(warm[i], w->out[i], w->s[1], "warm-up before capture", i) == AT_STATUS_OK) {
      CUX(at_cu->StreamSynchronize(w->s[1]));
      check_output(warm[i], w->out[i], w->host, "warm-up before capture", i);
    }
  CUgraphExec g1 = capture(p1, w->out[0], cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "graph 1", NULL);
  CUgraphExec g2 = capture(p2, w->out[1], cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "graph 2", NULL);
  if (g1 && g2) {
    for (int round = 0; round < 2; round++) {
      CUX(at_cu->GraphLaunch(g1, w->s[0]));
      CUX(at_cu->GraphLaunch(g2, w->s[1]));
      if (round == 0) gemm(p3, w->out[2], w->s[0], "eager between replays", 0);
      CUX(at_cu->StreamSynchronize(w->s[0]));
      CUX(at_cu->StreamSynchronize(w->s[1]));
      check_output(p1, w->out[0], w->host, "graph 1 replay", round);
      check_output(p2, w->out[1], w->host, "graph 2 replay", round);
      if (round == 0) check_output(p3, w->out[2], w->host, "eager between replays", 0);
    }
  }
  if (g1) at_cu->GraphExecDestroy(g1);
  if (g2) at_cu->GraphExecDestroy(g2);
  CUX(at_cu->StreamDestroy(cs));
}

static void *thread_main(void *arg) {
  worker *w = arg;
  CUR = w->dev;
  CUX(at_cu->CtxSetCurrent(CUR->g.ctx));
  eager_calls(w);
  graph_calls(w);
  return NULL;
}

/* ---- main ------------------------------------------------------------------------------------- */

/* Config files that split K in most buckets, so that split-K launches with many tiles (M = 4096:
 * 2,048 tiles) follow launches with few on one stream: (N, K) = (2048, 2048) with the mma family,
 * and on sm_90 GPUs (2560, 4096) with the sm90 family. */
static const char *const BUCKETS[] = {"small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge", "any"};

static void write_configs(const char *dir, int n, int k, const char *const entries[7]) {
  char *path = at_xasprintf("%s/sm90-GEMM-A8W8_BLOCKSCALE-N=%d-K=%d.json", dir, n, k);
  FILE *f = fopen(path, "w");
  if (!f) {
    fail("cannot write %s", path);
    exit(1);
  }
  fprintf(f, "{\"format\": \"autotune-configs/1\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"A8W8_BLOCKSCALE\", "
             "\"device\": \"sm90\", \"device_name\": \"test\", \"arch\": \"sm_90a\", \"N\": %d, \"K\": %d, \"buckets\": {", n, k);
  for (int i = 0; i < 7; i++) fprintf(f, "%s\"%s\": {%s, \"tuned_M\": [1], \"time_us\": [1.0]}", i ? ", " : "", BUCKETS[i], entries[i]);
  fprintf(f, "}}\n");
  fclose(f);
  free(path);
}

/* mma entries leave GROUP_M and SPLIT_K to the launch (as the shipped spaces do): the buckets of one
 * BLOCK_M share one instantiation, each with its own SPLIT_K (the runtime's entries per config). */
#define MMA_ENTRY(bm, split)                                                                                           \
  "\"variant\": \"mma\", \"family\": \"mma\", \"template\": \"gemm_a8w8_blockscale_mma.cuh\", \"entry\": "                   \
  "\"gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, 0, 0, B_HINT>\", "                  \
  "\"params\": {\"BLOCK_K\":128,\"BLOCK_M\":" #bm ",\"BLOCK_N\":64,\"B_HINT\":0,\"GROUP_M\":1,\"SPLIT_K\":" #split        \
  ",\"STAGES\":3,\"WARPS_M\":1,\"WARPS_N\":2}"
/* sm90 entries with clusters (cm x cn CTAs) and kp k-blocks in flight: split-K counters are then
 * numbered per CTA of a cluster tile, which the runtime's workspace must size. */
#define SM90_ENTRY(bm, bn, split, pp, cm, cn, kp)                                                                      \
  "\"variant\": \"sm90\", \"family\": \"sm90\", \"template\": \"gemm_a8w8_blockscale_sm90.cuh\", \"entry\": "                \
  "\"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE>\", "   \
  "\"params\": {\"PINGPONG\":" #pp ",\"BLOCK_M\":" #bm ",\"BLOCK_N\":" #bn ",\"CLUSTER_M\":" #cm ",\"CLUSTER_N\":" #cn     \
  ",\"GROUP_M\":8,\"KPIPE\":" #kp ",\"SPLIT_K\":" #split ",\"STAGES\":4}"

/* sm90 entries with the operands swapped (SWAP_AB: bm tokens on the wgmma's N side), for decode M. */
#define SWAP_ENTRY(bm, bn, split, cm, cn, kp)                                                                          \
  "\"variant\": \"sm90_swap\", \"family\": \"sm90\", \"template\": \"gemm_a8w8_blockscale_sm90.cuh\", \"entry\": "           \
  "\"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE, 0, 0, 1, "  \
  "SWAP_AB>\", \"params\": {\"PINGPONG\":0,\"BLOCK_M\":" #bm ",\"BLOCK_N\":" #bn ",\"CLUSTER_M\":" #cm               \
  ",\"CLUSTER_N\":" #cn ",\"GROUP_M\":8,\"KPIPE\":" #kp ",\"SPLIT_K\":" #split ",\"STAGES\":8,\"SWAP_AB\":1}"

/* sm90 entries of clusters of four (64 x 64 tiles, pairs along N, each tile split in K by a pair:
 * CLUSTER_N 2 x CLUSTER_K 2), persistent: the H100 holds fewer of them (30) than sm_count / 4. */
#define QUAD_ENTRY                                                                                                     \
  "\"variant\": \"sm90_ksplit\", \"family\": \"sm90\", \"template\": \"gemm_a8w8_blockscale_sm90.cuh\", \"entry\": "         \
  "\"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE, RESCALE, " \
  "STORE, CLUSTER_K>\", \"params\": {\"PINGPONG\":0,\"BLOCK_M\":64,\"BLOCK_N\":64,\"CLUSTER_M\":1,\"CLUSTER_N\":2,"           \
  "\"CLUSTER_K\":2,\"GROUP_M\":8,\"KPIPE\":2,\"RESCALE\":0,\"STORE\":0,\"SPLIT_K\":1,\"STAGES\":6}"

static void write_split_configs(const char *dir) {
  static const char *const MMA[7] = {MMA_ENTRY(16, 8), MMA_ENTRY(32, 4), MMA_ENTRY(64, 2), MMA_ENTRY(64, 4),
                                     MMA_ENTRY(64, 2), MMA_ENTRY(64, 2), MMA_ENTRY(64, 4)};
  static const char *const SM90[7] = {
      SWAP_ENTRY(16, 128, 2, 2, 1, 2),      SWAP_ENTRY(32, 64, 4, 1, 2, 1),      SM90_ENTRY(64, 112, 8, 0, 1, 2, 1),
      SM90_ENTRY(128, 128, 2, 1, 1, 1, 1),  SM90_ENTRY(128, 160, 1, 1, 1, 1, 1), SM90_ENTRY(128, 128, 2, 0, 2, 1, 2),
      SM90_ENTRY(128, 128, 1, 1, 1, 1, 1)};
  write_configs(dir, 2048, 2048, MMA);
  if (CUR->g.info.cc == 90) write_configs(dir, 2560, 4096, SM90);
  static const char *const QUAD[7] = {QUAD_ENTRY, QUAD_ENTRY, QUAD_ENTRY, QUAD_ENTRY, QUAD_ENTRY, QUAD_ENTRY, QUAD_ENTRY};
  if (CUR->g.info.cc == 90) write_configs(dir, 3072, 4096, QUAD);
}

static void copy_configs(const char *from, const char *to) {
  char *cmd = at_xasprintf("mkdir -p '%s' && cp '%s'/*.json '%s'/", to, from, to);
  if (system(cmd) != 0) {
    fail("cannot copy configs: %s", cmd);
    exit(1);
  }
  free(cmd);
}

static void global_capture(void) {
  const problem *p = NULL;
  for (int i = 0; i < CUR->np && !p; i++)
    if (CUR->p[i].split) p = &CUR->p[i];
  if (!p) return fail("no split-K problem in the pool");
  CUstream warm, fresh;
  CUdeviceptr out;
  unsigned short *host = at_xmalloc((size_t)(p->m * p->n) * 2);
  CUX(at_cu->StreamCreate(&warm, CU_STREAM_NON_BLOCKING));
  CUX(at_cu->StreamCreate(&fresh, CU_STREAM_NON_BLOCKING));
  CUX(at_cu->MemAlloc(&out, (size_t)(p->m * p->n) * 2));
  gemm(p, out, warm, "global-mode warm-up", 0);
  CUX(at_cu->StreamSynchronize(warm));
  check_output(p, out, host, "global-mode warm-up", 0);
  CUgraphExec g = capture(p, out, fresh, CU_STREAM_CAPTURE_MODE_GLOBAL, "global-mode capture", NULL);
  for (int round = 0; g && round < 3; round++) {
    CUX(at_cu->GraphLaunch(g, round == 1 ? warm : fresh));
    CUX(at_cu->StreamSynchronize(round == 1 ? warm : fresh));
    check_output(p, out, host, "global-mode replay", round);
  }
  if (g) at_cu->GraphExecDestroy(g);
  at_cu->MemFree(out);
  at_cu->StreamDestroy(warm), at_cu->StreamDestroy(fresh);
  free(host);
}

/* One call captured in global mode on a new stream: the largest grid it launched, then the graph
 * replayed twice and its output checked. */
typedef struct quad_capture {
  device *dev;
  const problem *p;
  CUdeviceptr out;
  unsigned short *host;
  unsigned grid;
  const char *what;
} quad_capture;

static void *capture_and_replay(void *arg) {
  quad_capture *q = arg;
  CUR = q->dev;
  CUX(at_cu->CtxSetCurrent(CUR->g.ctx));
  CUstream s;
  CUX(at_cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUgraphExec exec = capture(q->p, q->out, s, CU_STREAM_CAPTURE_MODE_GLOBAL, q->what, &q->grid);
  for (int round = 0; exec && round < 2; round++) {
    CUX(at_cu->GraphLaunch(exec, s));
    CUX(at_cu->StreamSynchronize(s));
    check_output(q->p, q->out, q->host, q->what, round);
  }
  if (exec) at_cu->GraphExecDestroy(exec);
  at_cu->StreamDestroy(s);
  return NULL;
}

/* A persistent grid of clusters is launched with only the clusters the GPU holds at once, a count
 * the library asks the driver for at a kernel's first launch in each thread (docs/design.md).
 * Here that first launch is captured into a graph, in a thread that never launched the kernel
 * (global mode, as PyTorch captures): the captured grid must be the one a thread that asked
 * outside a capture gets, and the replays right. The kernel is loaded (eager warm-up) first:
 * loading a module during a capture is a separate matter. Clusters of four, of which the H100
 * holds 30 where sm_count / 4 is 33, so that the count changes the grid there. */
static void occupancy_in_capture(void) {
  if (CUR->g.info.cc != 90) return;
  problem p;
  make_problem(&p, 512, 3072, 4096, SEED + 4242, 0);
  at_selection sel;
  CHECK(at_runtime_select(RT, "gemm_a8w8_blockscale", p.m, p.n, p.k, NULL, &sel) == AT_STATUS_OK &&
        strstr(sel.params, "\"CLUSTER_K\":2") && strstr(sel.params, "\"CLUSTER_N\":2"));
  CUdeviceptr out;
  unsigned short *host = at_xmalloc((size_t)(p.m * p.n) * 2);
  CUX(at_cu->MemAlloc(&out, (size_t)(p.m * p.n) * 2));
  if (gemm(&p, out, NULL, "clusters of four, eager", 0) == AT_STATUS_OK) {
    CUX(at_cu->StreamSynchronize(NULL));
    check_output(&p, out, host, "clusters of four, eager", 0);
  }
  quad_capture known = {CUR, &p, out, host, 0, "clusters of four, captured where the count is known"};
  capture_and_replay(&known);
  quad_capture first = {CUR, &p, out, host, 0, "clusters of four, first launch of the thread captured"};
  pthread_t t;
  pthread_create(&t, NULL, capture_and_replay, &first);
  pthread_join(t, NULL);
  fprintf(stderr, "stress: clusters of four: captured grids %u (count known) and %u (first launch in capture), %d SMs\n",
          known.grid, first.grid, CUR->g.info.sm_count);
  CHECK(known.grid > 0 && known.grid % 4 == 0 && known.grid <= (unsigned)CUR->g.info.sm_count);
  CHECK_EQ_INT(first.grid, known.grid);
  at_cu->MemFree(out), free(host);
  free_problem(&p);
}

/* Blocks quantized from zeros, on shapes the committed configs give to RESCALE kernels (and one
 * small M for the other kind): every element checked as everywhere else. */
static void zero_scale_blocks(void) {
  static const int64_t S[][3] = {{4096, 4096, 4096}, {2048, 6144, 4096}, {4096, 1024, 3072}, {64, 4096, 4096}};
  int rescaled = 0;
  for (int i = 0; i < 4; i++) {
    problem p;
    make_problem(&p, S[i][0], S[i][1], S[i][2], SEED + 77 * (uint64_t)i, 1);
    at_selection sel;
    if (at_runtime_select(RT, "gemm_a8w8_blockscale", p.m, p.n, p.k, NULL, &sel) == AT_STATUS_OK &&
        strstr(sel.params, "\"RESCALE\":1"))
      rescaled++;
    CUdeviceptr out;
    unsigned short *host = at_xmalloc((size_t)(p.m * p.n) * 2);
    CUX(at_cu->MemAlloc(&out, (size_t)(p.m * p.n) * 2));
    if (gemm(&p, out, NULL, "zero-scale blocks", i) == AT_STATUS_OK) {
      CUX(at_cu->StreamSynchronize(NULL));
      check_output(&p, out, host, "zero-scale blocks", i);
    }
    at_cu->MemFree(out), free(host);
    free_problem(&p);
  }
  fprintf(stderr, "stress: zero-scale blocks on 4 shapes, %d of them through RESCALE kernels\n", rescaled);
  CHECK(rescaled >= 2); /* the committed configs rescale at M >= 2048 on these (N, K) */
}

/* Two calls back to back with nothing between them: out[0..2] poisoned first, a call into out[0],
 * a call into out[1] (its main launch may start while the first call's tail still runs), then at
 * once a copy of out[1] into out[2]: what the next operation on the stream reads, which must find
 * the second call's main launch complete although that call's last kernel was its tail (whose
 * late wait is what guarantees it). */
static int tail_sequence(const problem *p, CUdeviceptr out[3], CUstream s, const char *what) {
  const size_t count = (size_t)(p->m * p->n);
  for (int j = 0; j < 3; j++) CUX(at_cu->MemsetD16Async(out[j], 0x7fc0, count, s));
  for (int j = 0; j < 2; j++)
    if (call_library(p, out[j], s, what, j) != AT_STATUS_OK) return 0;
  CUX(at_cu->MemcpyDtoDAsync(out[2], out[1], count * 2, s));
  return 1;
}

/* The runtime's plan for a shape (the config it selects, and the tail that config gets). */
static void tail_plan_of(int64_t m, int64_t n, int64_t k, at_a8w8_tail *t) {
  at_selection sel;
  at_config c = {0};
  memset(t, 0, sizeof *t);
  if (at_runtime_select(RT, "gemm_a8w8_blockscale", m, n, k, NULL, &sel) == AT_STATUS_OK &&
      at_config_set_params(&c, sel.params) == AT_OK && strstr(sel.kernel, "_sm90<")) {
    const char *names[AT_MAX_PARAMS];
    at_params prm = at_config_params(&c, names);
    at_shape shape = {m, n, k};
    at_a8w8_tail_plan("sm90", &prm, &shape, CUR->g.info.sm_count, at_source_name_untuned(sel.source), t);
  }
}

/* The runtime's tail (docs/runtime.md): shapes whose committed config leaves the units of its
 * partial last wave, or a last column of tiles that is mostly padding, to a second launch over their
 * part of C, or (untuned, filling less than half the GPU) runs as a tail config whole. Each: the
 * sequence above eagerly, then captured in a graph and replayed twice, every output checked; the
 * graph must hold the kernels the plan says (two a call with a tail, one for a whole call), so that
 * a tail the runtime failed to launch is seen. The plans must include each kind (unless the
 * runtime's tail is off by $AUTOTUNE_TAIL), from TAIL_SHAPES (tail_shapes.h). */
static void tail_calls(void) {
  /* The first shapes of TAIL_SHAPES (tail_shapes.h) whose plans give each kind of tail; the test
   * fails when the list runs out. */
  const int64_t(*C)[3] = TAIL_SHAPES;
  enum { NC = TAIL_SHAPES_LEN, WANT_WAVES = 3, MAX_S = 6 };
  int64_t S[MAX_S][3];
  at_a8w8_tail T[MAX_S]; /* each shape's plan */
  int NS = 0, waves = 0, wholes = 0, columns = 0, rows = 0;
  const int on = at_tail_env() == 1 && CUR->g.info.cc == 90;
  for (int i = 0; on && i < NC && NS < MAX_S; i++) {
    at_a8w8_tail t;
    tail_plan_of(C[i][0], C[i][1], C[i][2], &t);
    const int wave = t.split && t.unit_end > 0 && !t.main_n && !t.main_m, whole = t.split && t.unit_end == 0,
              column = t.split && t.main_n, row = t.split && t.main_m;
    if ((wave && waves < WANT_WAVES) || (whole && !wholes) || (column && !columns) || (row && !rows)) {
      memcpy(S[NS], C[i], sizeof C[i]);
      T[NS++] = t;
      waves += wave, wholes += whole, columns += column, rows += row;
    }
  }
  if (!on) /* without tails: the first shapes, one launch a call */
    for (NS = 0; NS < 5; NS++) memcpy(S[NS], C[NS], sizeof C[NS]), memset(&T[NS], 0, sizeof T[NS]);
  CUstream s;
  CUX(at_cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < NS; i++) {
    problem p;
    make_problem(&p, S[i][0], S[i][1], S[i][2], SEED + 91 * (uint64_t)i, 0);
    const at_a8w8_tail t = T[i];
    if (t.split)
      fprintf(stderr,
              "stress: %lld x %lld x %lld: tail C[%lld:][%lld:] after %lld units of %lld rows x %lld columns, tile %d, "
              "CLUSTER_K %d%s\n",
              (long long)p.m, (long long)p.n, (long long)p.k, (long long)t.m0, (long long)t.n0,
              (long long)t.unit_end, (long long)(t.main_m ? t.main_m : p.m), (long long)(t.main_n ? t.main_n : p.n),
              t.tile, t.cluster_k, t.grid_all ? ", a cluster per tile" : "");
    const int per_call = t.split && t.unit_end > 0 ? 2 : 1; /* kernels a call launches */
    CUdeviceptr out[3];
    unsigned short *host = at_xmalloc((size_t)(p.m * p.n) * 2);
    for (int j = 0; j < 3; j++) CUX(at_cu->MemAlloc(&out[j], (size_t)(p.m * p.n) * 2));
    int ok = tail_sequence(&p, out, s, "tail, back to back");
    CUX(at_cu->StreamSynchronize(s));
    for (int j = 0; ok && j < 3; j++) check_output(&p, out[j], host, "tail, back to back", j);
    CUgraph graph;
    CUgraphExec exec = NULL;
    CUX(at_cu->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    ok = tail_sequence(&p, out, s, "tail, captured");
    if (at_cu->StreamEndCapture(s, &graph) != CUDA_SUCCESS) {
      fail("tail: capture of M=%lld N=%lld K=%lld failed", (long long)p.m, (long long)p.n, (long long)p.k);
      ok = 0;
    } else {
      const int kernels = kernel_nodes(graph, NULL);
      if (ok && kernels != 2 * per_call)
        fail("tail: M=%lld N=%lld K=%lld: the graph of two calls holds %d kernels, the plan says %d",
             (long long)p.m, (long long)p.n, (long long)p.k, kernels, 2 * per_call);
      CUX(at_cu->GraphInstantiate(&exec, graph, 0));
      CUX(at_cu->GraphDestroy(graph));
    }
    for (int round = 0; ok && exec && round < 2; round++) {
      CUX(at_cu->GraphLaunch(exec, s));
      CUX(at_cu->StreamSynchronize(s));
      for (int j = 0; j < 3; j++) check_output(&p, out[j], host, "tail, graph replay", 3 * round + j);
    }
    if (exec) at_cu->GraphExecDestroy(exec);
    for (int j = 0; j < 3; j++) at_cu->MemFree(out[j]);
    free(host);
    free_problem(&p);
  }
  at_cu->StreamDestroy(s);
  fprintf(stderr, "stress: tails planned: %d of the last wave, %d whole calls, %d of padding, %d by rows (of %d shapes)\n",
          waves, wholes, columns, rows, (int)NS);
  if (on) CHECK(waves >= 3 && wholes >= 1 && columns >= 1 && rows >= 1);
}

/* ---- kernels made ready at start-up ----------------------------------------------------------- */

/* A runtime on configs_dir with the compile cache `cache`. */
static at_runtime *runtime_on_cache(const char *configs_dir, const char *cache) {
  at_runtime_options o = {0};
  o.configs_dir = configs_dir;
  o.cache_dir = cache;
  o.tag = "A8W8_BLOCKSCALE";
  o.pdl = PDL_MODE;
  at_runtime *rt = NULL;
  if (at_runtime_open(&o, &rt) != AT_STATUS_OK) fail("at_runtime_open: %s", at_runtime_last_error());
  return rt;
}

/* A compile cache of the test's own, made empty: its path, malloc'd. */
static char *empty_cache(const char *name) {
  const char *tmp = getenv("AT_TEST_TMP") ? getenv("AT_TEST_TMP") : "/tmp";
  char *cache = at_xasprintf("%s/%s-%d", tmp, name, (int)getpid());
  char *cmd = at_xasprintf("rm -rf '%s'", cache);
  if (system(cmd) != 0) fail("cannot empty %s", cache);
  free(cmd);
  return cache;
}

/* A runtime on configs_dir with a compile cache of its own, made empty. */
static at_runtime *runtime_on_empty_cache(const char *configs_dir, const char *name) {
  char *cache = empty_cache(name);
  at_runtime *rt = runtime_on_cache(configs_dir, cache);
  free(cache);
  return rt;
}

/* One first call on a new problem through RT, timed on the host (what the caller waits before the
 * launch returns), its output checked. */
static double first_call(int64_t m, int64_t n, int64_t k, uint64_t seed, const char *what) {
  problem p;
  make_problem(&p, m, n, k, seed, 0);
  CUdeviceptr out;
  unsigned short *host = at_xmalloc((size_t)(m * n) * 2);
  CUX(at_cu->MemAlloc(&out, (size_t)(m * n) * 2));
  CUX(at_cu->MemsetD16Async(out, 0x7fc0, (size_t)(m * n), NULL));
  CUX(at_cu->CtxSynchronize());
  const double t0 = at_now_s();
  const int rc = call_library(&p, out, NULL, what, 0);
  const double t = at_now_s() - t0;
  CUX(at_cu->CtxSynchronize());
  if (rc == AT_STATUS_OK) check_output(&p, out, host, what, 0);
  at_cu->MemFree(out), free(host);
  free_problem(&p);
  return t;
}

/* at_runtime_prepare (docs/runtime.md): on an empty compile cache, the kernels of three (N, K) up to
 * M = 4096 made ready (a tuned sm90 file, an (N, K) the time model answers, with its tails, and the
 * file that splits K and swaps operands); then the first calls at M across that range each return
 * within 10 ms, every output checked: none waits for NVRTC (on an H200 host a call after prepare
 * returned within 0.3 ms, a first call that compiled after 0.3-0.7 s). On another empty cache, without
 * prepare, a first call must take longer than that, so that the check can tell. sm_90 GPUs only
 * (said and skipped elsewhere). */
/* Between what a prepared first call took on H200 hosts (0.3 ms at most) and what a first call
 * that compiles took (0.3-0.7 s; 42-75 ms when NVRTC's own cache answered): 4x and more either side. */
static const double PREPARED_CALL_S = 0.010;

static void prepared(const char *configs_dir) {
  if (CUR->g.info.cc != 90) {
    fprintf(stderr, "stress: the prepare phase skipped (not an sm_90 GPU)\n");
    return;
  }
  static const int64_t NK[][2] = {{4096, 1024}, {1536, 1536}, {2560, 4096}};
  static const int64_t MS[] = {1, 16, 32, 64, 100, 128, 200, 256, 384, 512, 1000, 2048, 3000, 4096};
  enum { NNK = sizeof NK / sizeof NK[0], NMS = sizeof MS / sizeof MS[0] };
  at_runtime *const main_rt = RT;
  RT = runtime_on_empty_cache(configs_dir, "stress-prepare-cache");
  int kernels = 0;
  /* What the prepare compiled, and where: $AUTOTUNE_DEBUG makes the runtime say (stderr, kept in a
   * file for the while) how many kernels its compiles ahead stored, and each kernel a load had to
   * compile. From an empty cache the compiles ahead must have made every kernel: no load compiles. */
  const char *tmp = getenv("AT_TEST_TMP") ? getenv("AT_TEST_TMP") : "/tmp";
  char *log = at_xasprintf("%s/stress-prepare-debug-%d.txt", tmp, (int)getpid());
  fflush(stderr);
  const int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) dup2(fd, 2);
  const char *had = getenv("AUTOTUNE_DEBUG");
  char *debug_before = had ? at_xstrdup(had) : NULL; /* the caller's setting, put back after */
  setenv("AUTOTUNE_DEBUG", "1", 1);
  const double t0 = at_now_s();
  for (int i = 0; i < NNK; i++) {
    int ready = 0;
    if (at_runtime_prepare(RT, "gemm_a8w8_blockscale", NK[i][0], NK[i][1], 4096, &ready) != AT_STATUS_OK)
      fail("at_runtime_prepare N=%lld K=%lld: %s", (long long)NK[i][0], (long long)NK[i][1], at_runtime_last_error());
    kernels += ready;
  }
  const double prep = at_now_s() - t0;
  if (debug_before)
    setenv("AUTOTUNE_DEBUG", debug_before, 1);
  else
    unsetenv("AUTOTUNE_DEBUG");
  free(debug_before);
  fflush(stderr);
  if (fd >= 0) dup2(saved, 2), close(fd);
  close(saved);
  char *said = slurp(log);
  unlink(log);
  fprintf(stderr, "%s", said); /* what the prepare said, and any failure above, in the test's log */
  int ahead = 0, lines = 0;
  for (const char *q = said; (q = strstr(q, "kernels compiled ahead")) != NULL; q++) {
    const char *c = q;
    while (c > said && c[-1] != ':') c--; /* "...: <compiled> of <n> kernels compiled ahead" */
    ahead += atoi(c), lines++;
  }
  CHECK(fd >= 0);
  CHECK_EQ_INT(lines, NNK); /* each (N, K) had kernels to make (the cache was empty) */
  CHECK(ahead >= 1);         /* (a later (N, K) may find its kernels made for an earlier one) */
  if (strstr(said, "at its load")) fail("prepare: a load compiled a kernel that the compiles ahead had not made");
  free(said), free(log);
  double slowest = 0;
  for (int i = 0; i < NNK; i++)
    for (int j = 0; j < NMS; j++) {
      const double t = first_call(MS[j], NK[i][0], NK[i][1], SEED + 7 * (uint64_t)(i * NMS + j), "after prepare");
      if (t > PREPARED_CALL_S)
        fail("after prepare: the first call of M=%lld N=%lld K=%lld took %.3f s", (long long)MS[j],
             (long long)NK[i][0], (long long)NK[i][1], t);
      if (t > slowest) slowest = t;
    }
  at_runtime_close(RT);
  RT = runtime_on_empty_cache(configs_dir, "stress-unprepared-cache");
  const double cold = first_call(64, NK[0][0], NK[0][1], SEED + 999, "without prepare");
  at_runtime_close(RT);
  RT = main_rt;
  fprintf(stderr,
          "stress: prepare: %d kernels of %d (N, K) ready in %.2f s from an empty cache; %d first calls after it, the "
          "slowest %.1f ms; without prepare a first call %.2f s\n",
          kernels, NNK, prep, NNK * NMS, 1e3 * slowest, cold);
  CHECK(kernels >= NNK);
  CHECK(cold > PREPARED_CALL_S);
}

/* The cubins in a compile cache, sorted by name (their compile keys), one per line; malloc'd. */
static char *cache_listing(const char *cache) {
  char *cmd = at_xasprintf("cd '%s' 2>/dev/null && find . -name '*.cubin' | sort", cache);
  FILE *f = popen(cmd, "r");
  at_buf b = {0};
  char line[512];
  while (f && fgets(line, sizeof line, f)) at_buf_puts(&b, line);
  if (f) pclose(f);
  free(cmd);
  return b.data ? b.data : at_xstrdup("");
}

/* `autotune warm` (docs/runtime.md): the same three (N, K) as the prepare phase, up to M = 4096,
 * compiled by the CLI into an empty cache, once for this GPU as it probes it and once for the GPU
 * named as a machine without one would name it (--device PRODUCT --arch --sm-count): the two caches
 * hold the same cubins, and so does the prepare phase's cache (its compiles ahead added none). A
 * runtime on the first then prepares every kernel without compiling one (no cubin added), and its
 * first calls add none either and each return within the prepared bound,
 * every output checked. (The CLI probes the first GPU; the test runs this on GPU 0.)
 * sm_90 GPUs only (said and skipped elsewhere, or without the autotune binary). */
static void warmed(const char *exe, const char *configs_dir) {
  if (!exe || CUR->g.info.cc != 90) {
    fprintf(stderr, "stress: the warm phase skipped (%s)\n", exe ? "not an sm_90 GPU" : "no autotune binary given");
    return;
  }
  static const int64_t NK[][2] = {{4096, 1024}, {1536, 1536}, {2560, 4096}};
  static const int64_t MS[] = {1, 64, 200, 512, 3000, 4096};
  enum { NNK = sizeof NK / sizeof NK[0], NMS = sizeof MS / sizeof MS[0] };
  char *probed = empty_cache("stress-warm-probed"), *named = empty_cache("stress-warm-named");
  char product[128], sms[16];
  at_device_export_name(&CUR->g.info, 1, product, sizeof product);
  snprintf(sms, sizeof sms, "%d", CUR->g.info.sm_count);
  char *out = at_xasprintf("%s.txt", probed);
  char *a[] = {(char *)exe, "warm", "--configs", (char *)configs_dir, "--cache", probed, "--m-max", "4096",
               "4096,1024", "1536,1536", "2560,4096", NULL};
  const double t0 = at_now_s();
  int rc = proc_run(a, out, 900);
  const double took = at_now_s() - t0;
  char *text = slurp(out);
  CHECK_EQ_INT(rc, 0);
  CHECK(strstr(text, product) != NULL); /* it answered for this GPU */
  char *b[] = {(char *)exe, "warm", "--configs", (char *)configs_dir, "--cache", named, "--m-max", "4096",
               "--device", product, "--arch", "sm_90a", "--sm-count", sms, "4096,1024", "1536,1536", "2560,4096", NULL};
  CHECK_EQ_INT(proc_run(b, out, 900), 0);
  char *listing = cache_listing(probed), *named_listing = cache_listing(named);
  const int cubins = count_of(listing, ".cubin");
  CHECK(cubins >= NNK);
  CHECK(strcmp(listing, named_listing) == 0);
  if (rc != 0) fprintf(stderr, "---- autotune warm (exit %d)\n%s----\n", rc, text);
  /* The prepare phase's cache (at_runtime_prepare from empty, which compiles ahead in threads before
   * its loads): the same cubins, none more (a kernel compiled ahead that no load took would be one). */
  const char *tmp = getenv("AT_TEST_TMP") ? getenv("AT_TEST_TMP") : "/tmp";
  char *prep_cache = at_xasprintf("%s/stress-prepare-cache-%d", tmp, (int)getpid());
  char *prep_listing = cache_listing(prep_cache);
  if (strcmp(prep_listing, listing) != 0) fail("warmed: prepare's cache is not warm's:\n%s----\n%s", prep_listing, listing);
  free(prep_cache), free(prep_listing);

  at_runtime *const main_rt = RT;
  RT = runtime_on_cache(configs_dir, probed);
  int kernels = 0;
  for (int i = 0; i < NNK; i++) {
    int ready = 0;
    if (at_runtime_prepare(RT, "gemm_a8w8_blockscale", NK[i][0], NK[i][1], 4096, &ready) != AT_STATUS_OK)
      fail("warmed: at_runtime_prepare N=%lld K=%lld: %s", (long long)NK[i][0], (long long)NK[i][1],
           at_runtime_last_error());
    kernels += ready;
  }
  char *after = cache_listing(probed);
  if (strcmp(after, listing) != 0) fail("warmed: the runtime compiled kernels warm had not:\n%s----\n%s", listing, after);
  double slowest = 0;
  for (int i = 0; i < NNK; i++)
    for (int j = 0; j < NMS; j++) {
      const double t = first_call(MS[j], NK[i][0], NK[i][1], SEED + 11 * (uint64_t)(i * NMS + j), "after warm");
      if (t > PREPARED_CALL_S)
        fail("after warm: the first call of M=%lld N=%lld K=%lld took %.3f s", (long long)MS[j], (long long)NK[i][0],
             (long long)NK[i][1], t);
      if (t > slowest) slowest = t;
    }
  char *calls_after = cache_listing(probed);
  if (strcmp(calls_after, listing) != 0) fail("warmed: the first calls compiled kernels warm had not:\n%s", calls_after);
  CHECK(kernels >= NNK);
  free(calls_after);
  at_runtime_close(RT);
  RT = main_rt;
  fprintf(stderr,
          "stress: warm: %d cubins for %d (N, K) compiled by the CLI in %.1f s (the same named as %s, sm_90a, %s SMs); "
          "a runtime on them prepared %d kernels compiling none; %d first calls, the slowest %.1f ms\n",
          cubins, NNK, took, product, sms, kernels, NNK * NMS, 1e3 * slowest);
  free(probed), free(named), free(out), free(text), free(listing), free(named_listing), free(after);
}

/* ---- a tuner rewriting the DB under the process ------------------------------------------------ */

/* Problems of the DB phase, and the flag that ends its threads' calls. */
enum { RELOAD_PROBLEMS = 3 };
static problem RELOAD[RELOAD_PROBLEMS];
static _Atomic int reload_stop;

/* Calls on the DB phase's problems until reload_stop, each poisoned and checked: bursts of one to
 * three on one of the thread's streams, as eager_calls makes them. */
static void *reload_thread(void *arg) {
  worker *w = arg;
  CUR = w->dev;
  CUX(at_cu->CtxSetCurrent(CUR->g.ctx));
  while (!atomic_load(&reload_stop)) {
    CUstream s = w->s[next_rand(&w->rng) & 1];
    int burst = 1 + (int)(next_rand(&w->rng) % BUFS), ok[BUFS];
    const problem *q[BUFS];
    for (int j = 0; j < burst; j++) {
      q[j] = &RELOAD[next_rand(&w->rng) % RELOAD_PROBLEMS];
      ok[j] = gemm(q[j], w->out[j], s, "DB rewritten", w->calls + j) == AT_STATUS_OK;
    }
    CUX(at_cu->StreamSynchronize(s));
    for (int j = 0; j < burst; j++)
      if (ok[j]) check_output(q[j], w->out[j], w->host, "DB rewritten", w->calls + j);
    w->calls += burst;
  }
  return NULL;
}

/* The runtime reads a tuning DB that a tuner rewrites while it serves (docs/runtime.md: a watcher
 * notices within a second or so and publishes a new table): `exe` tunes four sm90 candidates of
 * (N, K) = (3072, 2048), which no file tunes, into a fresh DB; a second runtime answers from it
 * while two threads call it without pause; three times the DB is then rewritten so that another
 * candidate wins every M (as a later tuning run's results would), and the runtime must switch to it
 * within five seconds, every output checked throughout. sm_90 GPUs only (said and skipped
 * elsewhere, or without the autotune binary). */
static void db_rewritten(const char *exe) {
  if (!exe || CUR->g.info.cc != 90) {
    fprintf(stderr, "stress: the DB phase skipped (%s)\n", exe ? "not an sm_90 GPU" : "no autotune binary given");
    return;
  }
  const char *tmp = getenv("AT_TEST_TMP") ? getenv("AT_TEST_TMP") : "/tmp";
  char *space = at_xasprintf("%s/stress-reload-%d.yaml", tmp, (int)getpid());
  char *db = at_xasprintf("%s/stress-reload-%d.db", tmp, (int)getpid()), *out = at_xasprintf("%s.txt", db);
  char *yaml = at_xasprintf(
      "op: gemm_a8w8_blockscale\ntag: A8W8_BLOCKSCALE\nvariants:\n  - name: sm90\n    family: sm90\n"
      "    template: %s/templates/gemm_a8w8_blockscale_sm90.cuh\n"
      "    entry: \"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, 0, UNSPLIT, PINGPONG, CLUSTER_M, CLUSTER_N, "
      "KPIPE, RESCALE, STORE, CLUSTER_K>\"\n"
      "    params: {BLOCK_M: 128, BLOCK_N: [64, 128], STAGES: 4, GROUP_M: 1, SPLIT_K: [1, 2], UNSPLIT: [0, 1], "
      "PINGPONG: 0, CLUSTER_M: 1, CLUSTER_N: 1, KPIPE: 2, RESCALE: 0, STORE: 0, CLUSTER_K: 1}\n"
      "    constraints: {unsplit: \"(UNSPLIT == 1) == (SPLIT_K == 1)\"}\n"
      "shapes:\n  - {N: 3072, K: 2048, M: [64, 512]}\ntiming: {samples: 10}\n",
      getenv("AT_TEST_SOURCE_ROOT") ? getenv("AT_TEST_SOURCE_ROOT") : ".");
  at_write_file_atomic(space, yaml, strlen(yaml));
  unlink(db);
  char *argv[] = {(char *)exe, "--db", db, "--no-judge", "--no-baselines", space, NULL};
  const int rc = proc_run(argv, out, 900);
  CHECK_EQ_INT(rc, 0);
  const int64_t ncand = dbq(db, "SELECT count(*) FROM candidates WHERE status = 'ok'");
  CHECK_EQ_INT(ncand, 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status = 'ok'"), 8);
  if (rc != 0 || ncand != 4) {
    char *text = slurp(out);
    fprintf(stderr, "---- autotune (exit %d)\n%s----\n", rc, text);
    free(text), free(space), free(db), free(out), free(yaml);
    return;
  }

  at_runtime_options o = {0};
  o.db_path = db;
  o.tag = "A8W8_BLOCKSCALE";
  o.pdl = PDL_MODE;
  at_runtime *served;
  if (at_runtime_open(&o, &served) != AT_STATUS_OK) {
    fail("at_runtime_open with the DB: %s", at_runtime_last_error());
    return;
  }
  at_runtime *const main_rt = RT;
  RT = served; /* gemm() and make_problem() call RT */
  static const int64_t MS[RELOAD_PROBLEMS] = {64, 512, 300};
  for (int i = 0; i < RELOAD_PROBLEMS; i++) make_problem(&RELOAD[i], MS[i], 3072, 2048, SEED + 313 * (uint64_t)i, 0);
  worker w[2];
  pthread_t t[2];
  for (int i = 0; i < 2; i++) {
    w[i] = (worker){.id = i, .dev = CUR, .rng = SEED * 31 + (uint64_t)i};
    CUX(at_cu->StreamCreate(&w[i].s[0], CU_STREAM_NON_BLOCKING));
    CUX(at_cu->StreamCreate(&w[i].s[1], CU_STREAM_NON_BLOCKING));
    for (int j = 0; j < BUFS; j++) CUX(at_cu->MemAlloc(&w[i].out[j], 512 * 3072 * 2));
    w[i].host = at_xmalloc(512 * 3072 * 2);
  }
  atomic_store(&reload_stop, 0);
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, reload_thread, &w[i]);

  int switched = 0;
  for (int round = 1; round <= 3; round++) {
    usleep(300000);
    /* The candidate that wins next: the next by id from the round's own that the runtime does not
     * answer with now, so that every round is a switch. */
    at_selection before;
    CHECK_EQ_INT(at_runtime_select(served, "gemm_a8w8_blockscale", MS[0], 3072, 2048, NULL, &before), AT_STATUS_OK);
    int64_t win = -1;
    char want_bn[32] = "", want_sk[32] = "";
    for (int j = 0; j < 4 && win < 0; j++) {
      const int64_t id =
          dbq(db, "SELECT id FROM candidates WHERE status = 'ok' ORDER BY id LIMIT 1 OFFSET %d", (round + j) % 4);
      snprintf(want_bn, sizeof want_bn, "\"BLOCK_N\":%lld,",
               (long long)dbq(db, "SELECT json_extract(params, '$.BLOCK_N') FROM candidates WHERE id = %lld", (long long)id));
      snprintf(want_sk, sizeof want_sk, "\"SPLIT_K\":%lld,",
               (long long)dbq(db, "SELECT json_extract(params, '$.SPLIT_K') FROM candidates WHERE id = %lld", (long long)id));
      if (!strstr(before.params, want_bn) || !strstr(before.params, want_sk)) win = id;
    }
    CHECK(win >= 0);
    at_store *st;
    CHECK_EQ_INT(at_store_open(db, &st), AT_OK);
    char *sql = at_xasprintf("UPDATE results SET time_us = CASE WHEN candidate_id = %lld THEN 1 ELSE 1000 END, "
                             "retime_us = CASE WHEN candidate_id = %lld THEN 1 ELSE 1000 END WHERE status = 'ok';"
                             "UPDATE winners SET candidate_id = %lld, time_us = 1;",
                             (long long)win, (long long)win, (long long)win);
    CHECK_EQ_INT(at_store_exec(st, sql), AT_OK);
    at_store_close(st);
    free(sql);
    int now = 0;
    for (int i = 0; i < 50 && !now; i++) {
      at_selection sel;
      usleep(100000);
      now = 1;
      for (int m = 0; m < RELOAD_PROBLEMS; m++)
        now &= at_runtime_select(served, "gemm_a8w8_blockscale", MS[m], 3072, 2048, NULL, &sel) == AT_STATUS_OK &&
               strcmp(sel.source, "db") == 0 && strstr(sel.params, want_bn) && strstr(sel.params, want_sk);
    }
    if (!now) fail("DB rewritten (round %d): the runtime did not switch to %s, %s within 5 s", round, want_bn, want_sk);
    switched += now;
    usleep(300000); /* calls on the new answer */
  }
  atomic_store(&reload_stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "stress: a DB rewritten under the runtime: %d of 3 switches seen, %d and %d calls meanwhile\n",
          switched, w[0].calls, w[1].calls);
  CHECK(w[0].calls >= 30 && w[1].calls >= 30);
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < BUFS; j++) at_cu->MemFree(w[i].out[j]);
    at_cu->StreamDestroy(w[i].s[0]), at_cu->StreamDestroy(w[i].s[1]);
    free(w[i].host);
  }
  for (int i = 0; i < RELOAD_PROBLEMS; i++) free_problem(&RELOAD[i]);
  RT = main_rt;
  at_runtime_close(served);
  free(space), free(db), free(out), free(yaml);
}

/* GPU `ordinal` as d, its context made current in this thread: the support kernels loaded and a
 * cuBLAS handle made (cuBLAS loaded first if need be). 0 when the GPU cannot be opened (at_errmsg
 * says why). */
static int device_open(int ordinal, device *d) {
  if (at_gpu_open(ordinal, &d->g) != AT_OK) return 0;
  CUX(at_cu->CtxSetCurrent(d->g.ctx));
  CUmodule mod;
  if ((!BLAS && at_blas_load(&BLAS)) || at_gpu_support_module(&d->g, "gemm_a8w8_blockscale_support.cu", &mod)) {
    fail("setup of GPU %d: %s", ordinal, at_errmsg());
    exit(1);
  }
  CUX(at_cu->ModuleGetFunction(&d->gen_a, mod, "at_gen_activations"));
  CUX(at_cu->ModuleGetFunction(&d->gen_b, mod, "at_gen_weights"));
  CUX(at_cu->ModuleGetFunction(&d->dequant, mod, "at_dequantize"));
  if (BLAS->Create(&d->blas) != CUBLAS_STATUS_SUCCESS || BLAS->SetMathMode(d->blas, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
    fail("cuBLAS handle on GPU %d", ordinal);
    exit(1);
  }
  return 1;
}

/* CUR's pool: tuned (N, K), untuned ones, and the split-everywhere file; at most three M >= 2048. */
static void make_pool(uint64_t rng) {
  static const int64_t NK[][2] = {{1024, 1024}, {4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072},
                                  {2048, 2048}, {1536, 1536}, {2048, 2048}, {512, 4096}, {2560, 4096}};
  static const int64_t MS[] = {1, 5, 16, 32, 48, 64, 100, 128, 200, 256, 384, 512, 1000, 2048, 4096};
  /* The problems that reproduce the reported failure come first: 256x1024x2048, 64x1024x3072,
   * 256x1024x3072 in that order on one stream; then one with many tiles, two (N, K) that no file
   * tunes, so that every sequence has some, and the swapped buckets of the sm90 split file. */
  static const int64_t FIXED[][3] = {{256, 1024, 2048}, {64, 1024, 3072}, {256, 1024, 3072}, {4096, 2048, 2048},
                                     {100, 1536, 1536}, {7, 512, 4096},   {64, 2048, 2048},  {128, 2048, 2048},
                                     {5, 2560, 4096},   {32, 2560, 4096}};
  for (size_t i = 0; i < sizeof FIXED / sizeof FIXED[0]; i++, CUR->np++)
    make_problem(&CUR->p[CUR->np], FIXED[i][0], FIXED[i][1], FIXED[i][2], next_rand(&rng), 0);
  int big = 1;
  while (CUR->np < MAX_PROBLEMS) {
    int64_t m = MS[next_rand(&rng) % (sizeof MS / sizeof MS[0])];
    const int64_t *nk = NK[next_rand(&rng) % (sizeof NK / sizeof NK[0])];
    if (nk[0] == 2560 && CUR->g.info.cc != 90) continue; /* the sm90 file is written for sm_90 GPUs only */
    if (m >= 2048 && big >= 3) continue;
    big += m >= 2048;
    make_problem(&CUR->p[CUR->np++], m, nk[0], nk[1], next_rand(&rng), 0);
  }
}

/* n workers (id, dev and rng set) given streams and output buffers on their GPUs, run in a thread
 * each at once (eager calls, then graphs), joined and their resources freed. */
static void run_workers(worker *w, int n) {
  device *const self = CUR;
  pthread_t t[THREADS];
  for (int i = 0; i < n; i++) {
    CUR = w[i].dev;
    CUX(at_cu->CtxSetCurrent(CUR->g.ctx));
    size_t mx = max_out_elems();
    CUX(at_cu->StreamCreate(&w[i].s[0], CU_STREAM_NON_BLOCKING));
    CUX(at_cu->StreamCreate(&w[i].s[1], CU_STREAM_NON_BLOCKING));
    for (int j = 0; j < BUFS; j++) CUX(at_cu->MemAlloc(&w[i].out[j], mx * 2));
    w[i].host = at_xmalloc(mx * 2);
  }
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, thread_main, &w[i]);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < n; i++) {
    CUX(at_cu->CtxSetCurrent(w[i].dev->g.ctx));
    for (int j = 0; j < BUFS; j++) at_cu->MemFree(w[i].out[j]);
    at_cu->StreamDestroy(w[i].s[0]), at_cu->StreamDestroy(w[i].s[1]);
    free(w[i].host);
  }
  CUR = self;
  CUX(at_cu->CtxSetCurrent(CUR->g.ctx));
}

/* One runtime, two GPUs at once (skipped, and said, with one): a pool of the same kinds on GPU 1,
 * then THREADS threads, every other one on GPU 1, making their eager calls and graphs at the same
 * time. The library keeps entries, kernels, tensor maps, workspaces and capture counters per
 * context: each launch must find those of its own GPU, made there on its first launch while the
 * other GPU's threads launch the same (N, K). */
static void two_devices(void) {
  if (!device_open(1, &D[1])) {
    fprintf(stderr, "stress: no second GPU (%s): the two-GPU phase skipped\n", at_errmsg());
    CUX(at_cu->CtxSetCurrent(D[0].g.ctx));
    return;
  }
  CUR = &D[1];
  make_pool(SEED ^ 0x2d2d2d2dull);
  CUR = &D[0];
  CUX(at_cu->CtxSetCurrent(D[0].g.ctx));
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) w[i] = (worker){.id = i, .dev = &D[i % 2], .rng = SEED * 104729 + (uint64_t)i};
  run_workers(w, THREADS);
  int calls[2] = {0, 0}, split[2] = {0, 0};
  for (int i = 0; i < THREADS; i++) calls[i % 2] += w[i].calls, split[i % 2] += w[i].split;
  fprintf(stderr, "stress: two GPUs at once, one runtime: %d and %d eager calls (%d and %d split-K), %d graphs each\n",
          calls[0], calls[1], split[0], split[1], THREADS);
  for (int d = 0; d < 2; d++) CHECK(calls[d] >= 100 && split[d] >= calls[d] / 5);
  CUX(at_cu->CtxSetCurrent(D[1].g.ctx));
  for (int i = 0; i < D[1].np; i++) free_problem(&D[1].p[i]);
  CUX(at_cu->CtxSetCurrent(D[0].g.ctx));
}

/* The primary context reset in the middle of the process (what cudaDeviceReset does): what the
 * runtime made in the old context (modules, split-K workspaces, the arena of captured launches'
 * counters) went with it, though the context keeps its handle, and the driver may hand the freed
 * addresses to the new context's allocations. Calls after the reset, on split-K and plain problems,
 * on the default stream and a new one, eager and captured, must make their own and be right; the
 * runtime's close must not free the new context's memory (the pool is freed after it and checked). */
static void context_reset(void) {
  const CUcontext before = D[0].g.ctx;
  unsigned long long id_before = 0, id_after = 0;
  CUX(at_cu->CtxGetId(before, &id_before));
  for (int i = 0; i < D[0].np; i++) free(D[0].p[i].ref), free(D[0].p[i].absref); /* their device memory goes */
  D[0].np = 0;
  CUX(at_cu->DevicePrimaryCtxReset(D[0].g.dev));
  device_open(0, &D[0]);
  CUX(at_cu->CtxGetId(D[0].g.ctx, &id_after));
  fprintf(stderr, "stress: primary context reset: handle %s, id %llu -> %llu\n", D[0].g.ctx == before ? "kept" : "new",
          id_before, id_after);
  CHECK(id_after != id_before);
  CUR = &D[0];
  make_pool(SEED + 1);
  CUstream s;
  CUdeviceptr out;
  const size_t elems = max_out_elems();
  unsigned short *host = at_xmalloc(elems * 2);
  CUX(at_cu->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUX(at_cu->MemAlloc(&out, elems * 2));
  int split = 0;
  for (int i = 0; i < CUR->np; i++) {
    const problem *p = &CUR->p[i];
    split += p->split;
    for (int on = 0; on < 2; on++) /* the legacy default stream, then a new one */
      if (gemm(p, out, on ? s : NULL, "after the context reset", i) == AT_STATUS_OK) {
        CUX(at_cu->StreamSynchronize(on ? s : NULL));
        check_output(p, out, host, "after the context reset", i);
      }
  }
  CHECK(split > 0);
  const problem *p = NULL;
  for (int i = 0; i < CUR->np && !p; i++)
    if (CUR->p[i].split) p = &CUR->p[i];
  CUgraphExec g = p ? capture(p, out, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "capture after the context reset", NULL) : NULL;
  for (int round = 0; g && round < 2; round++) {
    CUX(at_cu->MemsetD16Async(out, 0x7fc0, (size_t)(p->m * p->n), s));
    CUX(at_cu->GraphLaunch(g, s));
    CUX(at_cu->StreamSynchronize(s));
    check_output(p, out, host, "replay after the context reset", round);
  }
  if (g) at_cu->GraphExecDestroy(g);
  CUX(at_cu->StreamDestroy(s));
  at_cu->MemFree(out);
  free(host);
}

int main(int argc, char **argv) {
  /* argv[1]: the runtime's launch mode, "off" or "on" (AT_PDL_*); default the library's. argv[2]:
   * the autotune binary, for the DB phase (skipped without it). */
  static const char *const PDL[] = {"default", "off", "on"};
  int pdl = AT_PDL_DEFAULT;
  for (int i = 0; argc > 1 && i < 3; i++)
    if (strcmp(argv[1], PDL[i]) == 0) pdl = i;
  if (argc > 1 && strcmp(argv[1], PDL[pdl]) != 0) {
    fprintf(stderr, "usage: test_stress [off|on [AUTOTUNE]]\n");
    return 2;
  }
  if (!device_open(0, &D[0])) check_skip(at_errmsg());
  const char *env_seed = getenv("AT_STRESS_SEED");
  SEED = env_seed && *env_seed ? strtoull(env_seed, NULL, 10) : (unsigned long long)time(NULL);
  fprintf(stderr, "stress: seed %llu (AT_STRESS_SEED=%llu reruns this sequence), pdl %s\n", SEED, SEED, PDL[pdl]);

  char *dir = at_path_join(getenv("AT_TEST_TMP") ? getenv("AT_TEST_TMP") : "/tmp", "stress-configs");
  char *src = at_path_join(getenv("AT_TEST_SOURCE_ROOT") ? getenv("AT_TEST_SOURCE_ROOT") : ".", "configs");
  copy_configs(src, dir);
  write_split_configs(dir);
  PDL_MODE = pdl;
  at_runtime_options o = {0};
  o.pdl = pdl;
  o.configs_dir = dir;
  o.tag = "A8W8_BLOCKSCALE";
  if (at_runtime_open(&o, &RT) != AT_STATUS_OK) {
    fail("at_runtime_open: %s", at_runtime_last_error());
    return 1;
  }
  make_pool(SEED);

  /* The reported sequence, on the default stream, in order. */
  {
    CUdeviceptr out;
    unsigned short *host = at_xmalloc(4096 * 2048 * 2);
    CUX(at_cu->MemAlloc(&out, 4096 * 2048 * 2));
    for (int i = 0; i < 4; i++) {
      if (gemm(&CUR->p[i], out, NULL, "reported sequence", i) == AT_STATUS_OK) {
        CUX(at_cu->StreamSynchronize(NULL));
        check_output(&CUR->p[i], out, host, "reported sequence", i);
      }
    }
    /* Two buckets of one mma instantiation that differ in SPLIT_K (a launch parameter): each must
     * launch with its own, one after the other on one stream. */
    at_selection s64, s128;
    CHECK(at_runtime_select(RT, "gemm_a8w8_blockscale", 64, 2048, 2048, NULL, &s64) == AT_STATUS_OK &&
          at_runtime_select(RT, "gemm_a8w8_blockscale", 128, 2048, 2048, NULL, &s128) == AT_STATUS_OK &&
          strcmp(s64.kernel, s128.kernel) == 0 && strstr(s64.params, "\"SPLIT_K\":2,") &&
          strstr(s128.params, "\"SPLIT_K\":4,"));
    for (int i = 6; i < 8; i++)
      if (gemm(&CUR->p[i], out, NULL, "one instantiation, two splits", i) == AT_STATUS_OK) {
        CUX(at_cu->StreamSynchronize(NULL));
        check_output(&CUR->p[i], out, host, "one instantiation, two splits", i);
      }
    at_cu->MemFree(out);
    free(host);
  }

  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) w[i] = (worker){.id = i, .dev = &D[0], .rng = SEED * 7919 + (uint64_t)i};
  run_workers(w, THREADS);
  int calls = 0, split = 0, untuned = 0, own = 0, own_split = 0;
  for (int i = 0; i < THREADS; i++)
    calls += w[i].calls, split += w[i].split, untuned += w[i].untuned, own += w[i].own_calls, own_split += w[i].own_split;
  global_capture();
  occupancy_in_capture();
  zero_scale_blocks();
  tail_calls();
  db_rewritten(argc > 2 ? argv[2] : NULL);
  prepared(dir);
  warmed(argc > 2 ? argv[2] : NULL, dir);
  two_devices();
  context_reset();

  fprintf(stderr,
          "stress: %d eager calls (%d split-K, %d on untuned (N, K); %d on per-thread default streams, %d of them "
          "split-K) in %d threads, %d graphs, %d problems\n",
          calls, split, untuned, own, own_split, THREADS, 2 * THREADS + 1, CUR->np);
  /* The test must have tested what it is for. */
  CHECK(calls >= 200);
  CHECK(split >= calls / 5);
  CHECK(untuned > 0);
  CHECK(own >= calls / 6 && own_split > 0);
  at_runtime_close(RT);
  /* The pool's memory is the new context's: still there after the runtime's close, whose workspaces
   * of the old context it must not have freed (a MemFree of an address of the pool would fail here). */
  for (int i = 0; i < CUR->np; i++) {
    CHECK(at_cu->MemFree(CUR->p[i].a) == CUDA_SUCCESS && at_cu->MemFree(CUR->p[i].b) == CUDA_SUCCESS);
    CUR->p[i].a = CUR->p[i].b = 0;
    free_problem(&CUR->p[i]);
  }
  free(dir), free(src);
  return check_summary();
}

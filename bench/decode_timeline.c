/* decode_timeline.c: where the time of back-to-back calls goes, CTA by CTA, through the library's own
 * launch path (PDL included). It runs the library on M x N x K over S input sets in a CUDA graph
 * (each call its own cold set, as `autotune compare` does) with templates instrumented by
 * scripts/timeline_template.py, reads each CTA's %globaltimer stamps back from C, and prints per
 * call, in us from the first printed call's earliest CTA entry, the earliest and latest CTA at each
 * point: entry, end of setup, return of griddepcontrol.wait, first stage full, last TMA issued, end of
 * the math loop, end of the CLUSTER_K exchange, end of the stores.
 *
 *   python3 scripts/timeline_template.py templates /tmp/tpl_tl
 *   AUTOTUNE_TEMPLATES=/tmp/tpl_tl build/bench/decode_timeline 16 4096 4096 configs
 * DECODE_TIMELINE_RANDOM=1 fills the inputs with random values instead of constants.
 * DECODE_TIMELINE_TILES=1 also prints every tile's stamps of the first call shown ("tile block B sm S
 * entry E" then the deltas after entry, us, -1 for none): with persistent CTAs that take several
 * units, each unit's end of loop and of stores.
 * (built by meson where the CUDA runtime is found; docs/perf.md, "Where a decode call's time goes").
 *
 * Each CTA stamps every unit it takes (the last one's stamps stay: "CTAs" counts the tiles whose
 * stamps were found, one per CTA when each takes one unit, as decode calls do). The stamps come from
 * several threads without a barrier before math thread 0 copies them out, so one may be missing
 * ("-") or another warpgroup's; with clusters "last TMA" is after the producer's wait for its last
 * stages' release. Configs with store warps (STORE 1, 2) may copy their tile over the stamps.
 * The outputs are wrong where the stamps are written (that is why the templates are a copy); the
 * stamps need BLOCK_N / CLUSTER_K >= 32 and BLOCK_M a multiple of 64 (every sm90 decode config),
 * and their 64 bytes of static shared memory push the dynamic area to the next 1 KB: a config whose
 * shared memory is within 1 KB of the limit does not load instrumented (512 x 4096 x 4096's 128 x 128,
 * 6 stages, failed with CUDA_ERROR_INVALID_VALUE). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune.h"

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)
#define AT(x)                                                                                     \
  do {                                                                                            \
    if ((x) != AT_STATUS_OK) {                                                                    \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, at_runtime_last_error());        \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

enum { EVENTS = 8, MAX_CTAS = 4096 };
static const char *EVENT_NAMES[EVENTS] = {"entry", "setup", "wait", "1st full", "last TMA", "loop", "xchg", "stored"};

typedef struct {
  void *a, *b, *c;
  float *as, *bs;
} set;

typedef struct {
  unsigned long long entry; /* %globaltimer ns (since the epoch: too large for a double's 1 ns) */
  long long d[EVENTS];      /* ns after entry; < 0 when not stamped */
  unsigned sm, block;
} cta;

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: decode_timeline M N K [CONFIGS_DIR]\n");
    return 2;
  }
  const long m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  if (m < 1 || n < 8 || n % 8 || k < 128 || k % 128) {
    fprintf(stderr, "decode_timeline: M >= 1, N a multiple of 8, K a multiple of 128\n");
    return 2;
  }
  const long kb = k / 128, nb = (n + 127) / 128;
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  long sets = (4L * l2) / (n * k) + 1;
  if (sets < 8) sets = 8;
  if (sets > 256) sets = 256;

  float *ones = malloc(sizeof(float) * (size_t)(m > nb ? m : nb) * kb);
  for (long i = 0; i < (m > nb ? m : nb) * kb; i++) ones[i] = 1.0f / 64;
  /* DECODE_TIMELINE_RANDOM=1: random e4m3 values of magnitude 0.5 to 1.875 (random sign, exponent and
   * mantissa bits) instead of constants: the tensor cores draw more power on random bits, and the
   * board's clock follows (docs/perf.md, "Where a tile's time goes"). */
  unsigned char *rnd = NULL;
  if (getenv("DECODE_TIMELINE_RANDOM")) {
    const size_t big = (size_t)(m > n ? m : n) * (size_t)k;
    rnd = malloc(big);
    unsigned long long x = 88172645463325252ull;
    for (size_t i = 0; i < big; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      rnd[i] = (unsigned char)((x >> 8 & 0x80) | ((6 + (x >> 16) % 2) << 3) | (x >> 24 & 7));
    }
  }
  set *S = calloc((size_t)sets, sizeof(set));
  for (long i = 0; i < sets; i++) {
    CK(cudaMalloc(&S[i].a, (size_t)(m * k)));
    CK(cudaMalloc(&S[i].b, (size_t)(n * k)));
    CK(cudaMalloc(&S[i].c, (size_t)(m * n * 2)));
    CK(cudaMalloc((void **)&S[i].as, sizeof(float) * (size_t)(m * kb)));
    CK(cudaMalloc((void **)&S[i].bs, sizeof(float) * (size_t)(nb * kb)));
    if (rnd) {
      CK(cudaMemcpy(S[i].a, rnd, (size_t)(m * k), cudaMemcpyHostToDevice));
      CK(cudaMemcpy(S[i].b, rnd, (size_t)(n * k), cudaMemcpyHostToDevice));
    } else {
      CK(cudaMemset(S[i].a, 0x38, (size_t)(m * k))); /* e4m3 1.0 */
      CK(cudaMemset(S[i].b, 0x30, (size_t)(n * k))); /* e4m3 0.5 */
    }
    CK(cudaMemcpy(S[i].as, ones, sizeof(float) * (size_t)(m * kb), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(S[i].bs, ones, sizeof(float) * (size_t)(nb * kb), cudaMemcpyHostToDevice));
  }
  free(rnd);

  at_runtime_options o;
  memset(&o, 0, sizeof o);
  o.configs_dir = argc > 4 ? argv[4] : NULL;
  at_runtime *rt;
  AT(at_runtime_open(&o, &rt));
  at_selection sel;
  AT(at_runtime_select(rt, "gemm_a8w8_blockscale", m, n, k, NULL, &sel));
  printf("%ld x %ld x %ld: %s (%s), %ld input sets\n", m, n, k, sel.kernel, sel.source, sets);
  if (!strstr(sel.params, "\"STORE\":0"))
    printf("warning: a config with store warps (STORE 1, 2) may copy its tile over the stamps\n");

  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (long i = 0; i < sets; i++) /* compiles and loads the kernel first */
    AT(at_gemm_a8w8_blockscale(rt, S[i].a, S[i].as, S[i].b, S[i].bs, S[i].c, m, n, k, st));
  CK(cudaStreamSynchronize(st));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (long i = 0; i < sets; i++)
    AT(at_gemm_a8w8_blockscale(rt, S[i].a, S[i].as, S[i].b, S[i].bs, S[i].c, m, n, k, st));
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(ge, st));
  CK(cudaEventRecord(e0, st));
  for (int r = 0; r < 5; r++) CK(cudaGraphLaunch(ge, st));
  CK(cudaEventRecord(e1, st));
  CK(cudaStreamSynchronize(st));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  printf("%.2f us per call (5 replays of %ld calls)\n", ms * 1000.0 / (5.0 * sets), sets);

  /* The stamps of the last replay: 64 bytes at each tile's first row, 32-column chunks. */
  unsigned short *row = malloc((size_t)n * 2);
  cta *ctas = malloc(sizeof(cta) * MAX_CTAS);
  unsigned long long base = 0; /* the first printed call's earliest entry */
  const long first = 2, shown = 6; /* calls 2..7: away from the graph's start */
  printf("us from call %ld's first entry: earliest .. latest CTA\n%-5s", first, "call");
  for (int e = 0; e < EVENTS; e++) printf(" | %-15s", EVENT_NAMES[e]);
  printf(" | CTAs SMs\n");
  for (long i = first; i < first + shown && i < sets; i++) {
    int nc = 0;
    for (long r0 = 0; r0 < m; r0 += 64) {
      CK(cudaMemcpy(row, (char *)S[i].c + r0 * n * 2, (size_t)n * 2, cudaMemcpyDeviceToHost));
      /* A stamp starts at a multiple of 8 columns (a tile's, or its second half's with CLUSTER_K 2). */
      for (long c0 = 0; c0 + 32 <= n && nc < MAX_CTAS; c0 += 8) {
        const unsigned *u = (const unsigned *)(row + c0);
        if (u[11] != 0xA7A7A7A7u) continue;
        cta *x = &ctas[nc++];
        x->entry = ((unsigned long long)u[1] << 32) | u[0];
        x->d[0] = 0;
        for (int e = 1; e < EVENTS; e++) x->d[e] = u[1 + e] == 0xFFFFFFFFu ? -1 : (long long)u[1 + e];
        x->sm = u[9];
        x->block = u[10];
        c0 += 24; /* past this stamp */
      }
    }
    if (!nc) {
      printf("call %ld: no stamps (not an instrumented sm90 kernel?)\n", i);
      continue;
    }
    if (!base) {
      base = ctas[0].entry;
      for (int j = 1; j < nc; j++)
        if (ctas[j].entry < base) base = ctas[j].entry;
    }
    printf("%-5ld", i);
    double v[MAX_CTAS];
    for (int e = 0; e < EVENTS; e++) {
      int nv = 0;
      for (int j = 0; j < nc; j++)
        if (ctas[j].d[e] >= 0) v[nv++] = ((double)(long long)(ctas[j].entry - base) + (double)ctas[j].d[e]) / 1000.0;
      if (!nv) {
        printf(" | %-15s", "-");
        continue;
      }
      qsort(v, (size_t)nv, sizeof(double), cmp_double);
      char buf[32];
      snprintf(buf, sizeof buf, "%.2f..%.2f", v[0], v[nv - 1]);
      printf(" | %-15s", buf);
    }
    if (i == first && getenv("DECODE_TIMELINE_TILES")) {
      /* Every tile's stamps of this call (a CTA that takes several units stamps each in its own first
       * row: its loop and stored times are that unit's), for per-unit analysis elsewhere. */
      for (int j = 0; j < nc; j++) {
        printf("tile block %u sm %u entry %.3f", ctas[j].block, ctas[j].sm,
               (double)(long long)(ctas[j].entry - base) / 1000.0);
        for (int e = 1; e < EVENTS; e++) printf(" %.3f", ctas[j].d[e] < 0 ? -1.0 : (double)ctas[j].d[e] / 1000.0);
        printf("\n");
      }
    }
    int sms = 0;
    unsigned char seen[1024] = {0};
    for (int j = 0; j < nc; j++)
      if (ctas[j].sm < 1024 && !seen[ctas[j].sm]) seen[ctas[j].sm] = 1, sms++;
    printf(" | %d %d\n", nc, sms);
  }
  at_runtime_close(rt);
  return 0;
}

/* bench_prepare.c: what at_runtime_prepare saves a server at start-up. For each (N, K) given, from a
 * compile cache made empty for the run: the time of at_runtime_prepare up to M = m_max and the
 * kernels it made ready; the same again on a new runtime with that cache warm (a restart on the same
 * machine); then, on a runtime with another empty cache and no prepare, the first call of the first
 * (N, K) at M = 64: the wait a request meets when nothing was prepared.
 *
 *   build/bench/bench_prepare configs 8192 6144,4096 4096,4096 28672,4096 4096,14336
 * (built by meson where the CUDA runtime is found; docs/perf.md, "Kernels made ready at start-up").
 * The cache directories are made new under $TMPDIR (else /tmp) and left there. *kernels of
 * at_runtime_prepare counts per weight: a kernel two weights share counts for each. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autotune.h"

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

enum { MAX_NK = 32 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static at_runtime *open_runtime(const char *configs, const char *cache) {
  at_runtime_options o = {0};
  o.configs_dir = configs;
  o.cache_dir = cache;
  o.tag = "A8W8_BLOCKSCALE";
  at_runtime *rt;
  if (at_runtime_open(&o, &rt) != AT_STATUS_OK) {
    fprintf(stderr, "at_runtime_open: %s\n", at_runtime_last_error());
    exit(1);
  }
  return rt;
}

/* at_runtime_prepare on every (N, K), one line each and a total; `what` names the pass. */
static void prepare_all(const char *what, at_runtime *rt, long long m_max, const long long nk[][2], int count) {
  double total = 0;
  int kernels_all = 0;
  for (int i = 0; i < count; i++) {
    int kernels = 0;
    double t0 = now_s();
    int rc = at_runtime_prepare(rt, "gemm_a8w8_blockscale", nk[i][0], nk[i][1], m_max, &kernels);
    double t = now_s() - t0;
    printf("%-10s N=%-6lld K=%-6lld M 1-%lld: %3d kernels ready in %7.3f s%s%s\n", what, nk[i][0], nk[i][1], m_max,
           kernels, t, rc ? ": " : "", rc ? at_runtime_last_error() : "");
    total += t, kernels_all += kernels;
  }
  printf("%-10s all: %d kernels in %.3f s\n", what, kernels_all, total);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_prepare CONFIGS_DIR M_MAX N,K [N,K ...]\n");
    return 2;
  }
  const char *configs = argv[1];
  const long long m_max = atoll(argv[2]);
  long long nk[MAX_NK][2];
  int count = 0;
  for (int i = 3; i < argc && count < MAX_NK; i++, count++)
    if (sscanf(argv[i], "%lld,%lld", &nk[count][0], &nk[count][1]) != 2) {
      fprintf(stderr, "bench_prepare: expected N,K, got '%s'\n", argv[i]);
      return 2;
    }
  CK(cudaSetDevice(0));
  CK(cudaFree(0)); /* the primary context, current in this thread */
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s, %ld CPUs; configs %s\n", prop.name, sysconf(_SC_NPROCESSORS_ONLN), configs);

  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char cold[512], first[512];
  snprintf(cold, sizeof cold, "%s/bench-prepare-XXXXXX", tmp);
  snprintf(first, sizeof first, "%s/bench-prepare-first-XXXXXX", tmp);
  if (!mkdtemp(cold) || !mkdtemp(first)) {
    perror("bench_prepare: mkdtemp");
    return 1;
  }
  at_runtime *rt = open_runtime(configs, cold);
  prepare_all("cold cache", rt, m_max, (const long long(*)[2])nk, count);
  at_runtime_close(rt);
  rt = open_runtime(configs, cold);
  prepare_all("warm cache", rt, m_max, (const long long(*)[2])nk, count);
  at_runtime_close(rt);

  /* No prepare: a first call's wait (its inputs' values do not matter to the time). */
  const long long m = 64, n = nk[0][0], k = nk[0][1];
  void *a, *b, *c;
  float *as, *bs;
  CK(cudaMalloc(&a, (size_t)(m * k)));
  CK(cudaMalloc(&b, (size_t)(n * k)));
  CK(cudaMalloc(&c, (size_t)(m * n * 2)));
  CK(cudaMalloc((void **)&as, (size_t)(m * k / 128 * 4)));
  CK(cudaMalloc((void **)&bs, (size_t)((n + 127) / 128 * (k / 128) * 4)));
  rt = open_runtime(configs, first);
  for (int i = 0; i < 2; i++) {
    double t0 = now_s();
    int rc = at_gemm_a8w8_blockscale(rt, a, as, b, bs, c, m, n, k, NULL);
    double t = now_s() - t0;
    CK(cudaDeviceSynchronize());
    printf("no prepare: %s call of %lld x %lld x %lld returned after %.3f s%s%s\n", i ? "second" : "first", m, n, k, t,
           rc ? ": " : "", rc ? at_runtime_last_error() : "");
  }
  at_runtime_close(rt);
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(as), cudaFree(bs);
  return 0;
}

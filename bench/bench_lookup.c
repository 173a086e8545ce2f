/* bench_lookup.c: the cost of one configuration lookup through the runtime library after warm-up
 * (at_runtime_select with a named device: the hash lookup and bucket choice a launch makes, minus
 * the driver calls). Runs on any CPU; needs no GPU.
 *
 *   bench_lookup [CONFIGS_DIR [DEVICE]]     (default: configs sm90)
 *
 * Prints ns per lookup over a mix of shipped (N, K) and M values, median of 7 runs; and before that
 * what a process pays the first time it meets an (N, K) no file tunes (the time model's answer made
 * for it, then kept): the first of 50 such (N, K), which also parses the model file, and the median
 * of the other 49. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autotune.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *configs = argc > 1 ? argv[1] : "configs", *device = argc > 2 ? argv[2] : "sm90";
  at_runtime_options o = {.configs_dir = configs};
  at_runtime *rt;
  if (at_runtime_open(&o, &rt) != AT_STATUS_OK) return 1;
  static const int64_t NK[][2] = {{1024, 1024}, {4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
  static const int64_t MS[] = {1, 16, 31, 32, 33, 64, 100, 128, 129, 256, 257, 4096};
  enum { NNK = 5, NM = 12, ITERS = 2000000 };
  at_selection sel;
  /* First lookups of (N, K) nobody tuned: N = 2056, 2064, ... (no file has them), K = 4096. */
  enum { NFIRST = 50 };
  double first[NFIRST];
  for (int i = 0; i < NFIRST; i++) {
    double t0 = now_ns();
    if (at_runtime_select(rt, "gemm_a8w8_blockscale", 64, 2056 + 8 * i, 4096, device, &sel) != AT_STATUS_OK) {
      fprintf(stderr, "select: %s\n", at_runtime_last_error());
      return 1;
    }
    first[i] = (now_ns() - t0) / 1e6;
  }
  qsort(first + 1, NFIRST - 1, sizeof first[0], cmp);
  printf("first lookup of an untuned (N, K): %.2f ms the first (%s: %s), then %.2f ms (median of %d)\n", first[0],
         sel.source, sel.path, first[NFIRST / 2], NFIRST - 1);
  /* Warm-up: every (N, K) looked up once, which reads the files. */
  for (int i = 0; i < NNK; i++)
    if (at_runtime_select(rt, "gemm_a8w8_blockscale", 64, NK[i][0], NK[i][1], device, &sel) != AT_STATUS_OK) {
      fprintf(stderr, "select: %s\n", at_runtime_last_error());
      return 1;
    }
  printf("source of the answers: %s (%s)\n", sel.source, sel.path);
  double runs[7];
  volatile const char *sink = NULL;
  for (int r = 0; r < 7; r++) {
    double t0 = now_ns();
    for (int i = 0; i < ITERS; i++) {
      at_runtime_select(rt, "gemm_a8w8_blockscale", MS[i % NM], NK[i % NNK][0], NK[i % NNK][1], device, &sel);
      sink = sel.kernel;
    }
    runs[r] = (now_ns() - t0) / ITERS;
  }
  (void)sink;
  qsort(runs, 7, sizeof runs[0], cmp);
  printf("lookup: %.1f ns per call (median of 7 runs of %d; min %.1f, max %.1f)\n", runs[3], ITERS, runs[0], runs[6]);
  at_runtime_close(rt);
  return 0;
}

/* check.c: see check.h. */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static CUmodule g_mod;
static CUfunction g_compare, g_abs;
static CUdeviceptr g_counters; /* bad (u64), first_bad (u64), max_err bits (u32), max_ratio bits (u32) */

static int ready(const at_gpu *g) {
  if (g_compare) return AT_OK;
  AT_TRY(at_gpu_support_module(g, "at_check.cu", &g_mod));
  CU_CHECK(at_cu->ModuleGetFunction(&g_abs, g_mod, "at_abs_f32"));
  AT_TRY(at_gpu_alloc(&g_counters, 32));
  CU_CHECK(at_cu->ModuleGetFunction(&g_compare, g_mod, "at_compare_bf16")); /* last: it marks readiness */
  return AT_OK;
}

static unsigned blocks_for(const at_gpu *g, size_t n) {
  unsigned blocks = (unsigned)((n + 255) / 256);
  if (blocks > (unsigned)g->info.sm_count * 16) blocks = (unsigned)g->info.sm_count * 16;
  return blocks ? blocks : 1;
}

static double from_bits(uint64_t word) {
  uint32_t bits = (uint32_t)word;
  float v;
  memcpy(&v, &bits, sizeof v);
  return isinf(v) ? INFINITY : v;
}

int at_poison_bf16(const at_gpu *g, CUdeviceptr out, size_t n) {
  CU_CHECK(at_cu->MemsetD16Async(out, 0x7fc0, n, g->stream)); /* bf16 quiet NaN */
  return AT_OK;
}

int at_abs_f32(const at_gpu *g, CUdeviceptr p, size_t n) {
  AT_TRY(ready(g));
  unsigned long long count = n;
  void *args[] = {&p, &count};
  CU_CHECK(at_cu->LaunchKernel(g_abs, blocks_for(g, n), 1, 1, 256, 1, 1, 0, g->stream, args, NULL));
  return AT_OK;
}

int at_check_bf16(const at_gpu *g, CUdeviceptr out, CUdeviceptr ref, CUdeviceptr absref, size_t n,
                  const at_check_bound *bound, at_check_result *r) {
  /* A gamma term without its |A| * |B| would silently check less than the space asks. */
  if (bound->gamma > 0 && !absref)
    return at_fail(AT_ERR_RUNTIME, "the check's gamma (%g) needs the op's |A|*|B| reference, which this op does not make",
                   bound->gamma);
  AT_TRY(ready(g));
  uint64_t init[3] = {0, UINT64_MAX, 0};
  CU_CHECK(at_cu->MemcpyHtoD(g_counters, init, 24));
  unsigned long long count = n;
  float fa = (float)bound->atol, fr = (float)bound->rtol, fg = (float)bound->gamma;
  CUdeviceptr ab = bound->gamma > 0 ? absref : 0;
  CUdeviceptr bad = g_counters, first = g_counters + 8, maxe = g_counters + 16, maxr = g_counters + 20;
  void *args[] = {&out, &ref, &ab, &count, &fa, &fr, &fg, &bad, &first, &maxe, &maxr};
  CU_CHECK(at_cu->LaunchKernel(g_compare, blocks_for(g, n), 1, 1, 256, 1, 1, 0, g->stream, args, NULL));
  CU_CHECK(at_cu->StreamSynchronize(g->stream));
  uint64_t host[3] = {0, 0, 0};
  CU_CHECK(at_cu->MemcpyDtoH(host, g_counters, 24));
  r->bad = (int64_t)host[0];
  r->first_bad = host[1] == UINT64_MAX ? -1 : (int64_t)host[1];
  r->max_err = from_bits(host[2]);
  r->worst_ratio = from_bits(host[2] >> 32);
  return AT_OK;
}

void at_check_describe(const at_check_result *r, size_t n, char *out, size_t len) {
  snprintf(out, len, "%lld of %zu elements out of tolerance, first at index %lld, max |error| %g, worst error/bound %.3g",
           (long long)r->bad, n, (long long)r->first_bad, r->max_err, r->worst_ratio);
}

/* check.c: see check.h. */
#include "check.h"

#include <math.h>
#include <string.h>

static CUmodule g_mod;
static CUfunction g_compare;
static CUdeviceptr g_counters; /* bad (u64), first_bad (u64), max_err bits (u32) */

static int ready(const at_gpu *g) {
  if (g_compare) return AT_OK;
  AT_TRY(at_gpu_support_module(g, "at_check.cu", &g_mod));
  CU_CHECK(at_cu->ModuleGetFunction(&g_compare, g_mod, "at_compare_bf16"));
  AT_TRY(at_gpu_alloc(&g_counters, 32));
  return AT_OK;
}

int at_poison_bf16(const at_gpu *g, CUdeviceptr out, size_t n) {
  CU_CHECK(at_cu->MemsetD16Async(out, 0x7fc0, n, g->stream)); /* bf16 quiet NaN */
  return AT_OK;
}

int at_check_bf16(const at_gpu *g, CUdeviceptr out, CUdeviceptr ref, size_t n, double atol, double rtol,
                  at_check_result *r) {
  AT_TRY(ready(g));
  uint64_t init[3] = {0, UINT64_MAX, 0};
  CU_CHECK(at_cu->MemcpyHtoD(g_counters, init, 20));
  unsigned long long count = n;
  float fa = (float)atol, fr = (float)rtol;
  CUdeviceptr bad = g_counters, first = g_counters + 8, maxe = g_counters + 16;
  void *args[] = {&out, &ref, &count, &fa, &fr, &bad, &first, &maxe};
  unsigned blocks = (unsigned)((n + 255) / 256);
  if (blocks > (unsigned)g->info.sm_count * 16) blocks = (unsigned)g->info.sm_count * 16;
  if (blocks == 0) blocks = 1;
  CU_CHECK(at_cu->LaunchKernel(g_compare, blocks, 1, 1, 256, 1, 1, 0, g->stream, args, NULL));
  CU_CHECK(at_cu->StreamSynchronize(g->stream));
  uint64_t host[3] = {0, 0, 0};
  CU_CHECK(at_cu->MemcpyDtoH(host, g_counters, 20));
  uint32_t bits = (uint32_t)host[2];
  float err;
  memcpy(&err, &bits, sizeof err);
  r->bad = (int64_t)host[0];
  r->first_bad = host[1] == UINT64_MAX ? -1 : (int64_t)host[1];
  r->max_err = isinf(err) ? INFINITY : err;
  return AT_OK;
}

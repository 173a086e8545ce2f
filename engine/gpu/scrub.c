/* scrub.c: see scrub.h. */
#include "scrub.h"

static CUfunction g_scrub;
static CUdeviceptr g_buf, g_sink;
static size_t g_words;

static int ready(const at_gpu *g) {
  if (g_scrub) return AT_OK;
  size_t bytes = (size_t)(g->info.l2_bytes > 0 ? g->info.l2_bytes : 64 << 20) * 2;
  CUmodule mod; /* shared with check.c (at_gpu_support_module keeps it) */
  AT_TRY(at_gpu_support_module(g, "at_check.cu", &mod));
  if (!g_sink) AT_TRY(at_gpu_alloc(&g_sink, 16));
  if (!g_buf) {
    AT_TRY(at_gpu_alloc(&g_buf, bytes));
    CU_CHECK(at_cu->MemsetD8Async(g_buf, 0, bytes, g->stream));
  }
  g_words = bytes / 16;
  CU_CHECK(at_cu->ModuleGetFunction(&g_scrub, mod, "at_l2_scrub")); /* last: it marks readiness */
  return AT_OK;
}

int at_l2_scrub(const at_gpu *g) {
  AT_TRY(ready(g));
  unsigned long long n = g_words;
  void *args[] = {&g_buf, &n, &g_sink};
  CU_CHECK(at_cu->LaunchKernel(g_scrub, (unsigned)g->info.sm_count * 4, 1, 1, 512, 1, 1, 0, g->stream, args, NULL));
  return AT_OK;
}

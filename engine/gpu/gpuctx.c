/* gpuctx.c: see gpuctx.h. */
#include "gpuctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cache.h"
#include "../core/jit.h"
#include "../core/util.h"
#include "devinfo.h"

int at_gpu_open(int ordinal, at_gpu *g) {
  const at_cuda_api *cu;
  memset(g, 0, sizeof *g);
  AT_TRY(at_cuda_load(&cu));
  AT_TRY(at_gpu_device_info(ordinal, &g->info));
  CU_CHECK(cu->DeviceGet(&g->dev, ordinal));
  CU_CHECK(cu->DevicePrimaryCtxRetain(&g->ctx, g->dev));
  CU_CHECK(cu->CtxSetCurrent(g->ctx));
  CU_CHECK(cu->StreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
  at_arch_for_cc(g->info.cc, g->arch);
  return AT_OK;
}

/* Support modules loaded so far, per context instance (by id: a reset context's modules are gone)
 * and file: check.c, peak.c and scrub.c all use at_check.cu, which a process then compiles (from the
 * cache) and loads once. None is unloaded. A process making GPU calls does so from one thread (the
 * worker's), so no lock. */
enum { MAX_SUPPORT = 16 }; /* files (three) times contexts a process makes (a worker: one; a test: a few) */
static struct {
  unsigned long long ctx_id;
  char file[64];
  CUmodule mod;
} g_support[MAX_SUPPORT];

int at_gpu_support_module(const at_gpu *g, const char *file, CUmodule *out) {
  unsigned long long ctx_id = 0;
  CU_CHECK(at_cu->CtxGetId(g->ctx, &ctx_id));
  for (int i = 0; i < MAX_SUPPORT; i++)
    if (g_support[i].mod && g_support[i].ctx_id == ctx_id && strcmp(g_support[i].file, file) == 0) {
      *out = g_support[i].mod;
      return AT_OK;
    }
  char *path = at_path_join(at_templates_dir(), file);
  at_jit_source *src = NULL;
  int rc = at_jit_source_load(path, at_templates_dir(), &src);
  free(path);
  AT_TRY(rc);
  char *cache = at_cache_dir();
  at_jit_options o = {g->arch, 0};
  at_jit_result r;
  rc = at_jit_compile(src, NULL, &o, cache, &r);
  free(cache);
  at_jit_source_free(src);
  AT_TRY(rc);
  if (!r.ok) {
    rc = at_fail(AT_ERR_RUNTIME, "support kernels %s do not compile:\n%s", file, r.log);
    at_jit_result_free(&r);
    return rc;
  }
  CUresult cr = at_cu->ModuleLoadData(out, r.cubin);
  at_jit_result_free(&r);
  CU_CHECK(cr);
  for (int i = 0; i < MAX_SUPPORT; i++)
    if ((!g_support[i].mod || i == MAX_SUPPORT - 1) && strlen(file) < sizeof g_support[i].file) {
      g_support[i].ctx_id = ctx_id, g_support[i].mod = *out; /* full: the last slot is reused */
      snprintf(g_support[i].file, sizeof g_support[i].file, "%s", file);
      break;
    }
  return AT_OK;
}

int at_gpu_alloc(CUdeviceptr *p, size_t bytes) {
  *p = 0;
  CU_CHECK(at_cu->MemAlloc(p, bytes ? bytes : 256));
  return AT_OK;
}

void at_gpu_free(CUdeviceptr *p) {
  if (*p) at_cu->MemFree(*p);
  *p = 0;
}

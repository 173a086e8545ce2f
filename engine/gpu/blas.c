/* blas.c: dlopen of cuBLAS and cuBLASLt; see blas.h. */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static at_blas_api g_api;
static int g_rc;
static char g_msg[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void *open_first(const char *const *names) {
  for (; *names; names++) {
    void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  return NULL;
}

static void load(void) {
  static const char *const LT[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
  static const char *const BLAS[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
  void *lt = open_first(LT), *blas = open_first(BLAS);
  if (!lt || !blas) {
    snprintf(g_msg, sizeof g_msg, "cannot open cuBLAS (%s): is the CUDA toolkit's lib64 on the library path?", dlerror());
    g_rc = AT_ERR_RUNTIME;
    return;
  }
#define AT_BLAS_LOAD_FROM(handle, libname, field, sym)                                                                            \
  if (!(g_api.field = (__typeof__(g_api.field))dlsym(handle, sym))) {                                                  \
    snprintf(g_msg, sizeof g_msg, "%s lacks %s", libname, sym);                                                        \
    g_rc = AT_ERR_RUNTIME;                                                                                             \
    return;                                                                                                            \
  }
#define AT_BLAS_LOAD(field, proto, sym) AT_BLAS_LOAD_FROM(blas, "libcublas", field, sym)
#define AT_LT_LOAD(field, proto, sym) AT_BLAS_LOAD_FROM(lt, "libcublasLt", field, sym)
  AT_CUBLAS_FUNCS(AT_BLAS_LOAD)
  AT_CUBLASLT_FUNCS(AT_LT_LOAD)
#undef AT_BLAS_LOAD
#undef AT_LT_LOAD
#undef AT_BLAS_LOAD_FROM
}

int at_blas_load(const at_blas_api **out) {
  pthread_once(&g_once, load);
  *out = g_rc ? NULL : &g_api;
  if (g_rc) return at_fail(g_rc, "%s", g_msg);
  return AT_OK;
}

const char *at_cublas_status_name(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  default: return "CUBLAS_STATUS_?";
  }
}

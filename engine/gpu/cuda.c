/* cuda.c: dlopen of the driver API; see cuda.h. */
#include "cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static at_cuda_api g_api;
const at_cuda_api *at_cu;
static int g_rc;
static char g_msg[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_msg, sizeof g_msg, "no NVIDIA driver: cannot open libcuda.so.1 (%s)", dlerror());
    g_rc = AT_ERR_RUNTIME;
    return;
  }
#define AT_CUDA_LOAD(field, proto, sym)                                                                                \
  if (!(g_api.field = (__typeof__(g_api.field))dlsym(h, sym))) {                                                       \
    snprintf(g_msg, sizeof g_msg, "libcuda.so.1 lacks %s: the driver is too old", sym);                                \
    g_rc = AT_ERR_RUNTIME;                                                                                             \
    return;                                                                                                            \
  }
  AT_CUDA_FUNCS(AT_CUDA_LOAD)
#undef AT_CUDA_LOAD
  CUresult r = g_api.Init(0);
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    g_api.GetErrorName(r, &name);
    snprintf(g_msg, sizeof g_msg, "cuInit failed: %s (no usable GPU)", name);
    g_rc = AT_ERR_RUNTIME;
    return;
  }
  at_cu = &g_api;
}

int at_cuda_load(const at_cuda_api **out) {
  pthread_once(&g_once, load);
  *out = at_cu;
  if (g_rc) return at_fail(g_rc, "%s", g_msg);
  return AT_OK;
}

const char *at_cu_error_name(CUresult r) {
  const char *s = "CUDA_ERROR_UNKNOWN";
  if (at_cu) at_cu->GetErrorName(r, &s);
  return s;
}

const char *at_cu_error_text(CUresult r) {
  const char *s = "";
  if (at_cu) at_cu->GetErrorString(r, &s);
  return s;
}

int at_cu_is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_CONTEXT_ALREADY_IN_USE:
  case CUDA_ERROR_TOO_MANY_PEERS:
    return 1;
  default:
    return 0;
  }
}

/* gpuctx.h: a worker's hold on its GPU: the primary context, one stream, and the device's
 * properties. Worker-side only. */
#ifndef AT_GPU_GPUCTX_H
#define AT_GPU_GPUCTX_H

#include "../core/device.h"
#include "cuda.h"

typedef struct at_gpu {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  at_device_info info;
  char arch[16]; /* NVRTC target for this device */
} at_gpu;

int at_gpu_open(int ordinal, at_gpu *g);

/* Compiles (or takes from the compile cache) a support file of templates/ whose kernels are
 * extern "C", and loads it. */
int at_gpu_support_module(const at_gpu *g, const char *file, CUmodule *out);

/* Device memory that frees itself on the error paths of the caller. */
int at_gpu_alloc(CUdeviceptr *p, size_t bytes);
void at_gpu_free(CUdeviceptr *p);

#endif

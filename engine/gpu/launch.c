/* launch.c: see launch.h. */
#include "launch.h"

#include <string.h>

void *at_kparams_push(at_kparams *k, size_t bytes, size_t align) {
  size_t at = (k->used + align - 1) / align * align;
  if (k->count >= AT_KPARAMS_MAX || at + bytes > sizeof k->storage) return NULL;
  k->ptr[k->count++] = k->storage + at;
  k->used = at + bytes;
  return k->storage + at;
}

CUresult at_launch_kernel(CUfunction fn, const at_launch *L, CUstream stream, at_kparams *k, int pdl) {
  pdl = pdl && L->griddep;
  if (L->cluster <= 1 && !pdl)
    return at_cu->LaunchKernel(fn, L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1], L->block[2],
                               L->smem_bytes, stream, k->ptr, NULL);
  CUlaunchAttribute attr[2];
  unsigned n = 0;
  memset(attr, 0, sizeof attr);
  if (L->cluster > 1) {
    attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[n].value.clusterDim.x = L->cluster;
    attr[n].value.clusterDim.y = 1;
    attr[n].value.clusterDim.z = 1;
    n++;
  }
  if (pdl) {
    attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr[n].value.programmaticStreamSerializationAllowed = 1;
    n++;
  }
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = L->grid[0], cfg.gridDimY = L->grid[1], cfg.gridDimZ = L->grid[2];
  cfg.blockDimX = L->block[0], cfg.blockDimY = L->block[1], cfg.blockDimZ = L->block[2];
  cfg.sharedMemBytes = L->smem_bytes;
  cfg.hStream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return at_cu->LaunchKernelEx(&cfg, fn, k->ptr, NULL);
}

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

/* The clusters of `cluster` CTAs of fn that the GPU holds at once with cfg's block and shared
 * memory: fewer than sm_count / cluster where the GPCs' SM counts are not multiples of the cluster
 * size (the H100 of docs/perf.md: 30 clusters of four on 132 SMs, 66 of two). Remembered per
 * thread for the last SLOTS (kernel, block, shared memory) seen, so that a launch of a kernel seen
 * lately costs no driver call; 0 when the driver does not say (not remembered: asked again).
 * A module unloaded and another loaded at the same handle may find a count made for the old
 * kernel: it can only lower the grid below what fits (time, not results). */
static int max_clusters(CUfunction fn, const CUlaunchConfig *cfg, unsigned cluster) {
  enum { SLOTS = 32 };
  static _Thread_local struct {
    CUfunction fn;
    unsigned block, smem, cluster;
    int n;
  } seen[SLOTS];
  static _Thread_local unsigned next;
  for (unsigned i = 0; i < SLOTS; i++)
    if (seen[i].fn == fn && seen[i].block == cfg->blockDimX && seen[i].smem == cfg->sharedMemBytes &&
        seen[i].cluster == cluster)
      return seen[i].n;
  int n = 0;
  if (at_cu->OccupancyMaxActiveClusters(&n, fn, cfg) != CUDA_SUCCESS || n < 1) return 0;
  const unsigned i = next++ % SLOTS;
  seen[i].fn = fn, seen[i].block = cfg->blockDimX, seen[i].smem = cfg->sharedMemBytes, seen[i].cluster = cluster;
  seen[i].n = n;
  return n;
}

unsigned at_launch_grid_fit(unsigned grid_x, unsigned cluster, int fit) {
  if (cluster < 1 || fit < 1 || grid_x / cluster <= (unsigned)fit) return grid_x;
  return (unsigned)fit * cluster;
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
  /* A persistent grid of clusters: launch only the clusters that fit at once, else those that do
   * not run as a second wave after the first has walked every unit (clusters of four on the H100:
   * 1.8x the time, docs/perf.md). A grid of one cluster per tile (the runtime's tail by rows) is
   * launched whole: its clusters start as SMs free. */
  if (L->persistent && L->cluster > 1)
    cfg.gridDimX = at_launch_grid_fit(cfg.gridDimX, L->cluster, max_clusters(fn, &cfg, L->cluster));
  return at_cu->LaunchKernelEx(&cfg, fn, k->ptr, NULL);
}

// cluster_occupancy.cu: how many clusters of 1 to 8 CTAs the GPU holds at once, for the sm90
// family's block (384 threads) and a few dynamic shared-memory sizes. The launch rule asks for
// sm_count / cluster clusters (engine/ops/gemm_a8w8_blockscale.c); until session 27 the runtime
// launched them all, and those that did not fit ran as a second wave (clusters of four 2x slower);
// since then at_launch_kernel (engine/gpu/launch.c) launches only the ones this count allows
// (docs/perf.md, "Clusters of four, launched as many as fit"). Sizes 3, 5, 6 and 7: what a split of
// K in three or more CTAs of a cluster would have (docs/perf.md, "Narrow weights at mid M").
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/cluster_occupancy.cu -o cluster_occupancy
#include <cstdio>

#include "cuda_check.cuh"

__global__ void empty_kernel(int *p) {
  extern __shared__ int s[];
  if (p) p[threadIdx.x] = s[threadIdx.x];
}

int main() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  printf("%d SMs\n| dynamic smem |", sms);
  for (int c = 1; c <= 8; c++) printf(" cluster %d |", c);
  printf("\n| ---: |");
  for (int c = 1; c <= 8; c++) printf(" ---: |");
  printf("\n");
  const int kib[] = {64, 128, 200, 227};
  for (int s : kib) {
    printf("| %d KiB |", s);
    for (int c = 1; c <= 8; c++) {
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute attr = {};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = c;
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(c * 64);
      cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = s * 1024;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int n = 0;
      CK(cudaOccupancyMaxActiveClusters(&n, empty_kernel, &cfg));
      printf(" %d (%d CTAs) |", n, n * c);
    }
    printf("\n");
  }
  return 0;
}

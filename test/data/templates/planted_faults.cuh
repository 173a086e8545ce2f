// planted_faults.cuh: three deliberately broken kernels for the GPU suite. Each wraps the real
// mma kernel, so that only the planted defect differs from a correct candidate:
//   planted_oob        one thread reads 1 TiB past A: an illegal address, a `fault`
//   planted_hang       one block never finishes: a `timeout`
//   planted_unwritten  the last tile of C is never written: poisoned output, `wrong`
#include "gemm_a8w8_blockscale_mma.cuh"

#define AT_PLANTED_PARAMS int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARPS_M, int WARPS_N, int STAGES, int GROUP_M, \
                          int SPLIT_K, int B_HINT
#define AT_PLANTED_ARGS BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT

template <AT_PLANTED_PARAMS>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    planted_oob(const __grid_constant__ at_gemm_a8w8_blockscale_args args) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    volatile const unsigned char *far = (const unsigned char *)args.a + (1ull << 40);
    const unsigned char x = *far;
    (void)x;
  }
  gemm_a8w8_blockscale_mma_body<AT_PLANTED_ARGS>(args);
}

template <AT_PLANTED_PARAMS>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    planted_hang(const __grid_constant__ at_gemm_a8w8_blockscale_args args) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    volatile int spin = 1;  // volatile: the loop stays in the code, and nothing ever clears it
    while (spin) __nanosleep(1000);
  }
  gemm_a8w8_blockscale_mma_body<AT_PLANTED_ARGS>(args);
}

template <AT_PLANTED_PARAMS>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    planted_unwritten(const __grid_constant__ at_gemm_a8w8_blockscale_args args) {
  if (blockIdx.x == gridDim.x - 1) return;
  gemm_a8w8_blockscale_mma_body<AT_PLANTED_ARGS>(args);
}

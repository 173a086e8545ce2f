// mma_peak.cu: the ceiling of the `mma` family on this GPU: dense mma.sync.m16n8k32 e4m3 issue
// rate with operands in registers (no memory traffic), all SMs busy. Compare the tuned kernel's
// TFLOP/s with this, not only with the wgmma peak the roofline uses.
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/mma_peak.cu -o /tmp/mma_peak && /tmp/mma_peak
#include <cstdio>

__global__ void __launch_bounds__(256) mma_loop(float *out, int iters, unsigned seed) {
  unsigned a0 = seed * 0x9E3779B9u + threadIdx.x, a1 = a0 * 3, a2 = a0 * 5, a3 = a0 * 7, b0 = a0 * 11, b1 = a0 * 13;
  float d[8][4] = {};
  for (int i = 0; i < iters; i++) {
#pragma unroll
    for (int j = 0; j < 8; j++)  // 8 independent accumulators keep the tensor pipe full
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = sms * 4, threads = 256, iters = 20000;
  float *out;
  cudaMalloc(&out, sizeof(float) * blocks * threads);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  mma_loop<<<blocks, threads>>>(out, 100, 1);
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(e0);
    mma_loop<<<blocks, threads>>>(out, iters, r);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  double flops = 2.0 * 16 * 8 * 32 * 8.0 * iters * (blocks * threads / 32.0);
  printf("mma.sync m16n8k32 e4m3 peak: %.0f TFLOP/s (%d SMs, best of 5, %s)\n", flops / (best * 1e-3) / 1e12, sms,
         cudaGetErrorString(cudaGetLastError()));
  return 0;
}

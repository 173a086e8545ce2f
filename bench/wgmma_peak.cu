// wgmma_peak.cu: the FP8 wgmma issue rate by tile width. Every SM runs one CTA of WGS warpgroups,
// each issuing batches of four wgmma.mma_async m64nNk32 e4m3 (one 128-wide k-block, both operands
// in shared memory, 128-byte swizzled descriptors as the sm90 kernels build them) into its own
// accumulator, two batches in flight; no memory traffic, no promotion. TFLOP/s per N is the
// ceiling of a kernel whose math warpgroups run m64nN tiles: what the tile width costs the tensor
// cores alone (docs/perf.md, "Tile widths and the tensor cores").
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Itemplates bench/wgmma_peak.cu -o /tmp/wgmma_peak
//   /tmp/wgmma_peak
#include <cstdio>

#include "at_sm90.cuh"
#include "at_wgmma_e4m3.cuh"

constexpr int A_BYTES = 64 * 128, B_BYTES = 256 * 128;

template <int N>
__global__ void __launch_bounds__(384, 1) wgmma_loop(float *out, int iters) {
  extern __shared__ __align__(1024) unsigned char smem[];
  // Operands: bytes of a hash, no NaN encodings (e4m3 0x7f and 0xff), so that the tensor cores
  // see changing data (zeros draw less power and would run at a higher clock).
  for (int i = threadIdx.x; i < A_BYTES + B_BYTES; i += blockDim.x) {
    unsigned h = (unsigned)i * 0x9E3779B9u ^ (unsigned)blockIdx.x * 0x85EBCA6Bu;
    h ^= h >> 15;
    smem[i] = (unsigned char)((h & 0x7f) == 0x7f ? 0x3c : h & 0xff);
  }
  __syncthreads();
  const at_u32 base = at_smem_addr(smem);
  const at_u64 da = at_wgmma_desc_sw128(base), db = at_wgmma_desc_sw128(base + A_BYTES);
  float acc[N / 2];
#pragma unroll
  for (int j = 0; j < N / 2; j++) acc[j] = 0.f;
  for (int it = 0; it < iters; it++) {
    at_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<N>::mma(acc, da + 2 * ks, db + 2 * ks, 1);
    at_wgmma_commit();
    at_wgmma_wait<1>();
  }
  at_wgmma_wait<0>();
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < N / 2; j++) s += acc[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <int N>
static void run(int sms, int wgs, float *out) {
  const int smem = A_BYTES + B_BYTES, threads = 128 * wgs;
  cudaFuncSetAttribute(wgmma_loop<N>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const int iters = 4 * 1024 * 1024 / N;  // about the same time for every N
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  wgmma_loop<N><<<sms, threads, smem>>>(out, 64);
  float best = 1e30f;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(e0);
    wgmma_loop<N><<<sms, threads, smem>>>(out, iters);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (ms < best) best = ms;
  }
  const double flops = 2.0 * 64 * N * 128 * (double)iters * wgs * sms;
  printf("m64n%dk32 x4, %d warpgroups: %6.0f TFLOP/s (%.3f ms, best of 5) %s\n", N, wgs,
         flops / (best * 1e-3) / 1e12, best, cudaGetErrorString(cudaGetLastError()));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float *out;
  cudaMalloc(&out, sizeof(float) * sms * 384);
  for (int wgs = 2; wgs <= 3; wgs++) {
    run<64>(sms, wgs, out);
    run<96>(sms, wgs, out);
    run<112>(sms, wgs, out);
    run<128>(sms, wgs, out);
    run<144>(sms, wgs, out);
    run<160>(sms, wgs, out);
    run<192>(sms, wgs, out);
    run<256>(sms, wgs, out);
  }
  return 0;
}

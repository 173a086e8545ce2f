// launch_floor.cu: what a call costs beyond its bytes when calls run back to back, as the library's
// calls run in `autotune compare` and in a serving process: a CUDA graph of launches, each reading
// its own cold buffer (the buffers together several times the L2), with and without programmatic
// dependent launch (PDL). The kernel does nothing but stream: each CTA reads its share of the
// buffer in 16-byte loads, many in flight, and writes one word. So its time per call is the floor
// that any GEMM reading that many bytes meets on this GPU in that chain, and its time at 0 bytes
// the fixed cost of a dependent launch. Modes:
//   plain  no PDL: each launch starts once the one before has finished
//   pdl    PDL, the read after griddepcontrol.wait (as the sm90 kernels do)
//   early  PDL, the read before the wait (legal here: nothing writes the buffers): does reading
//          while the kernel before still runs pay? (docs/perf.md, "Where a decode call's time goes")
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/launch_floor.cu -o /tmp/launch_floor && /tmp/launch_floor
#include <cstdio>
#include <vector>

#include "graph_chain.cuh"

constexpr int THREADS = 512, UNROLL = 8;

template <bool EARLY>
__global__ void __launch_bounds__(THREADS, 1) stream(const uint4 *buf, long n16, unsigned *out) {
  if (!EARLY) asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  // CTA b reads the b-th contiguous share, each thread UNROLL loads in flight per step.
  const long per = (n16 + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = min(n16, lo + per);
  unsigned acc = 0;
  for (long i = lo + threadIdx.x; i < hi; i += (long)THREADS * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
      const long j = i + (long)u * THREADS;
      v[u] = j < hi ? __ldcs(buf + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (EARLY) asm volatile("griddepcontrol.wait;\n" ::: "memory");
  if (acc == 0x12345678u) out[blockIdx.x] = acc;  // keeps the loads; practically never stores
}

// Time per launch (us) of a graph of launches, buffer i % nbuf each (at least 32 launches).
static int time_chain(int mode, const std::vector<uint4 *> &bufs, long n16, unsigned *out, int sms, float *us) {
  const int launches = (int)bufs.size() < 32 ? 32 : (int)bufs.size();
  return graph_chain_us(
      launches,
      [&](cudaStream_t s, int i) {
        chain_launch l(sms, THREADS, s, mode != 0);
        const uint4 *b = bufs[i % bufs.size()];
        return mode == 2 ? cudaLaunchKernelEx(&l.cfg, stream<true>, b, n16, out)
                         : cudaLaunchKernelEx(&l.cfg, stream<false>, b, n16, out);
      },
      us);
}

int main() {
  int sms = 0, l2 = 0;
  unsigned *out = nullptr;
  if (chain_device(&sms, &l2, &out)) return 1;
  // The weights of the Llama-3-8B decode calls (N x K bytes) and smaller.
  const long sizes[] = {0, 1L << 20, 4L << 20, 4096L * 4096, 6144L * 4096, 4096L * 14336, 28672L * 4096};
  printf("%d SMs, L2 %d MB; us per call, back to back in a CUDA graph, buffers rotated past 4x L2\n", sms, l2 >> 20);
  printf("| MB read | plain us | PDL us | PDL, read before the wait us | GB/s (PDL) |\n| ---: | ---: | ---: | ---: | ---: |\n");
  for (long bytes : sizes) {
    const long alloc = bytes > 0 ? bytes : 16;
    int nbuf = bytes > 0 ? (int)((4L * l2 + bytes - 1) / bytes) + 1 : 1;
    if (nbuf < 2) nbuf = 2;
    if (nbuf > 256) nbuf = 256;
    std::vector<uint4 *> bufs(nbuf);
    for (auto &b : bufs) {
      CK(cudaMalloc(&b, alloc));
      CK(cudaMemset(b, 1, alloc));
    }
    float us[3];
    for (int mode = 0; mode < 3; mode++)
      if (time_chain(mode, bufs, bytes / 16, out, sms, &us[mode])) return 1;
    printf("| %.1f | %.2f | %.2f | %.2f | %.0f |\n", bytes / 1048576.0, us[0], us[1], us[2], bytes > 0 ? bytes / (us[1] * 1e3) : 0.0);
    for (auto b : bufs) CK(cudaFree(b));
  }
  return 0;
}

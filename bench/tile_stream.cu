// tile_stream.cu: does the order in which a decode call reads its weights cost bandwidth? A decode
// GEMM reads each weight tile a k-block at a time: BN rows of 128 bytes, rows K bytes apart, the
// next k-block of the same rows a step later. A kernel that streams a buffer reads it contiguously.
// This kernel reads the same bytes in the same work split, units of (BN rows) x (a range of
// k-blocks) over a persistent grid, with the same bytes in flight, in one of two address orders:
//   rows    the weights row-major [N][K] (the op's layout): k-block kb of tile t is BN pieces of
//           128 bytes at a stride of K bytes
//   packed  the weights packed by tile: k-block kb of tile t is one contiguous piece of BN x 128
//           bytes, and the k-blocks of a tile follow each other (so a unit reads one contiguous range)
// Each call in a CUDA graph of calls back to back, each on its own cold buffer (rotated past 4x L2),
// with programmatic dependent launch, as `autotune compare` runs the library's calls.
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a bench/tile_stream.cu -o /tmp/tile_stream && /tmp/tile_stream
#include <cstdio>
#include <vector>

#include "graph_chain.cuh"

constexpr int THREADS = 512;

// AHEAD 16-byte loads in flight per thread: THREADS x 16 x AHEAD bytes per CTA (8: 64 KiB, about
// what the GEMM's 7-8 stages of 64 x 128 hold; 16: 128 KiB). A unit's pieces are read in the
// order k-block, row, 16 bytes of the row: the order of the GEMM's stages.
template <int BN, bool PACKED, int AHEAD>
__global__ void __launch_bounds__(THREADS, 1)
    stream_tiles(const uint4 *buf, int n, int k, int ksplit, unsigned *out) {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  constexpr int PIECES = BN * 8;  // 16-byte pieces of one k-block of a tile
  const int kb_total = k / 128, tiles = n / BN, units = tiles * ksplit, per = kb_total / ksplit;
  const long unit_pieces = (long)per * PIECES;
  unsigned acc = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int t = u % tiles, kb0 = (u / tiles) * per;
    for (long p0 = threadIdx.x; p0 < unit_pieces; p0 += (long)THREADS * AHEAD) {
      uint4 v[AHEAD];
#pragma unroll
      for (int a = 0; a < AHEAD; a++) {
        const long p = p0 + (long)a * THREADS;
        const int b = kb0 + (int)(p / PIECES), rem = (int)(p % PIECES), row = rem / 8, col = rem % 8;
        const long idx = PACKED ? (((long)t * kb_total + b) * BN + row) * 8 + col
                                : ((long)t * BN + row) * (k / 16) + (long)b * 8 + col;
        v[a] = p < unit_pieces ? __ldcs(buf + idx) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int a = 0; a < AHEAD; a++) acc ^= v[a].x ^ v[a].y ^ v[a].z ^ v[a].w;
    }
  }
  if (acc == 0x12345678u) out[blockIdx.x] = acc;  // keeps the loads; practically never stores
}

template <int BN, bool PACKED, int AHEAD>
static float time_chain(const std::vector<uint4 *> &bufs, int n, int k, int ksplit, int grid, unsigned *out) {
  const int launches = (int)bufs.size() < 32 ? 32 : (int)bufs.size();
  float us = -1.f;
  graph_chain_us(
      launches,
      [&](cudaStream_t s, int i) {
        chain_launch l(grid, THREADS, s, true);
        return cudaLaunchKernelEx(&l.cfg, stream_tiles<BN, PACKED, AHEAD>, (const uint4 *)bufs[i % bufs.size()], n, k,
                                  ksplit, out);
      },
      &us);
  return us;
}

template <int BN>
static void row(const std::vector<uint4 *> &bufs, int n, int k, int ksplit, int sms, unsigned *out) {
  const int units = n / BN * ksplit, grid = units < sms ? units : sms;
  const double mb = (double)n * k / 1e6;
  const float r8 = time_chain<BN, false, 8>(bufs, n, k, ksplit, grid, out);
  const float p8 = time_chain<BN, true, 8>(bufs, n, k, ksplit, grid, out);
  const float r16 = time_chain<BN, false, 16>(bufs, n, k, ksplit, grid, out);
  const float p16 = time_chain<BN, true, 16>(bufs, n, k, ksplit, grid, out);
  printf("| %d x %d | %d | %d | %d | %.2f (%.0f) | %.2f (%.0f) | %.2f (%.0f) | %.2f (%.0f) |\n", n, k, BN, ksplit, grid, r8,
         mb * 1e3 / r8, p8, mb * 1e3 / p8, r16, mb * 1e3 / r16, p16, mb * 1e3 / p16);
}

int main() {
  int sms = 0, l2 = 0;
  unsigned *out = nullptr;
  if (chain_device(&sms, &l2, &out)) return 1;
  printf("%d SMs, L2 %d MB; us per call (GB/s), PDL chain in a CUDA graph, buffers rotated past 4x L2\n", sms, l2 >> 20);
  printf("| weights N x K | BN | k splits | CTAs | rows, 64 KiB in flight | packed, 64 KiB | rows, 128 KiB | packed, 128 KiB |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  const int shapes[][2] = {{4096, 4096}, {6144, 4096}, {4096, 14336}, {28672, 4096}};
  for (auto &sh : shapes) {
    const int n = sh[0], k = sh[1];
    const long bytes = (long)n * k;
    int nbuf = (int)((4L * l2 + bytes - 1) / bytes) + 1;
    if (nbuf < 2) nbuf = 2;
    std::vector<uint4 *> bufs(nbuf);
    for (auto &b : bufs) {
      CK(cudaMalloc(&b, bytes));
      CK(cudaMemset(b, 1, bytes));
    }
    // The splits of the committed decode configs: 64-wide tiles in two k halves at 4096 x 4096 and
    // 4096 x 14336, one at the others; then 128-wide and 32-wide.
    const int ks = n == 4096 ? 2 : 1;
    row<64>(bufs, n, k, ks, sms, out);
    row<128>(bufs, n, k, n == 4096 ? 4 : 1, sms, out);
    row<32>(bufs, n, k, 1, sms, out);
    for (auto b : bufs) CK(cudaFree(b));
  }
  return 0;
}

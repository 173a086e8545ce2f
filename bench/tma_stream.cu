// tma_stream.cu: what does a decode GEMM's way of reading its weights cost, and what does each part
// of its k-block add? bench/tile_stream.cu reads a decode call's weights in the GEMM's work split
// with plain 16-byte loads; this kernel reads them the GEMM's way: one producer thread issuing TMA
// boxes (the 16 token rows of A and BN weight rows, 128 bytes of K each, 128-byte swizzled, the
// weights with an L2 evict_first policy) into a ring of S stages with full/empty mbarriers, and
// consumers that wait for each stage and free it. MATH, what a consumer does with a stage:
//   0  nothing (the ring alone)
//   1  four wgmma m64nBNk32 on it (the GEMM's k-block without scales or promotion), waited for
//      before the stage is freed
//   2  the same, one batch behind: the stage is freed once the next one's batch is issued and this
//      one's has completed (the GEMM's KPIPE 2)
//   3  2, plus the k-block's scale loads (used at once, where the GEMM loads them two k-blocks
//      ahead) and, per unit, the result's 16 rows stored as bf16
//   4  1 by two consumer warpgroups, each taking every other stage (S even)
// Units of BN weight rows by a range of k-blocks, over a persistent grid: taken in turn (DYN 0,
// unit b, b + grid, ...) or, after its first, from a counter in global memory asked one unit ahead
// (DYN 1: a CTA that got its bytes early takes more units; the last CTA out resets the counter).
// CL 2 launches clusters of two (a cluster sync after the setup, nothing shared), as CLUSTER_K does.
// Each call in a CUDA graph of calls back to back, each on its own cold weights (rotated past 4x
// L2), with programmatic dependent launch, as `autotune compare` runs the library's calls.
// Environment: TMA_STREAM_TIMELINE=1 prints, instead of the table, %globaltimer stamps of one call
// mid-chain for some variants (the wait's return, first and last stage full, the end; the stamps
// cost 0.1-0.5 us a call); TMA_STREAM_LAUNCHES=n captures n calls a graph (bench/decode_timeline
// captures 13 at 4096 x 4096: the graph's ends then add 0.2 us a call); TMA_STREAM_ROTATE_A=1 gives
// each call its own activations. docs/perf.md, "Where a decode call's time goes, part by part".
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Itemplates -Ibench bench/tma_stream.cu -o /tmp/tma_stream -ldl
//   /tmp/tma_stream
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "at_sm90.cuh"
#include "at_wgmma_e4m3.cuh"
#include "graph_chain.cuh"

constexpr int MAX_LAUNCHES = 256, MAX_GRID = 1024;  // calls a graph; CTAs a call (stamps)
constexpr int TOK = 16;           // token rows of A a stage loads (M = 16)
constexpr int A_TILE = 64 * 128;  // the wgmma's 64-row A tile; rows past TOK stay stale, as in the GEMM

template <int BN, int S>
constexpr int ring_bytes() {
  return S * (A_TILE + BN * 128) + S * 16 + S * 4;
}

template <int BN, int S, int MATH, int DYN, int CL>
__global__ void __launch_bounds__(384, 1)
    tma_ring(const __grid_constant__ at_tmap mb, const __grid_constant__ at_tmap ma, int n, int k, int ksplit,
             unsigned *ctr, unsigned *out, const float *as, const float *bs, void *cout,
             unsigned long long *stamps) {
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int STAGE = A_TILE + BN * 128;
  int *uq = (int *)(smem + S * STAGE + S * 16);  // the unit whose first k-block a stage holds (DYN)
  const at_u32 base = at_smem_addr(smem), full0 = base + S * STAGE, empty0 = full0 + 8 * S;
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < S; s++) {
      at_mbar_init(full0 + 8 * s, 1);
      at_mbar_init(empty0 + 8 * s, 4);
    }
    at_mbar_init_fence();
    at_tma_prefetch(&mb);
    at_tma_prefetch(&ma);
  }
  __syncthreads();
  if (CL > 1) at_cluster_sync_relaxed();  // as the GEMM's clusters do after their barrier inits
  at_griddep_wait();
  at_griddep_launch_dependents();
  // Stamps (%globaltimer, ns): [0] the wait's return, [1] the first stage full, [2] the last one,
  // [3] the consumer's end.
  auto now = [] { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; };
  // No stamps (null) outside TMA_STREAM_TIMELINE: the table's figures are taken without them.
  unsigned long long *st = stamps ? stamps + 4 * blockIdx.x : nullptr;
  if (st && tid == 0) st[0] = now();
  const int tiles = n / BN, units = tiles * ksplit, per = k / 128 / ksplit;
  // Unit u: with DYN a tile's splits are neighbours (u / ksplit, u % ksplit), else the splits of
  // tile t are `tiles` apart (u % tiles, u / tiles) as in the GEMM's walk.
  if (tid == 0) {
    const at_u64 pol = at_l2_evict_first();
    int it = 0, next = 0;
    for (int i = 0;; i++) {
      // DYN: the first unit is the CTA's own, each later one comes from the counter, asked for
      // one unit ahead (an atomic's round trip is about a microsecond under load).
      const int u = DYN && i > 0 ? next : blockIdx.x + i * gridDim.x;
      if (DYN) next = (int)gridDim.x + (int)atomicAdd(ctr, 1u);
      if (u >= units) {
        if (DYN) {  // a stage without bytes that says "no more units"
          const int s = it % S, ph = (it / S) & 1;
          at_mbar_wait(empty0 + 8 * s, ph ^ 1);
          uq[s] = -1;
          at_mbar_arrive(full0 + 8 * s);
        }
        break;
      }
      const int t = DYN ? u / ksplit : u % tiles, kb0 = (DYN ? u % ksplit : u / tiles) * per;
      for (int j = 0; j < per; j++, it++) {
        const int s = it % S, ph = (it / S) & 1;
        at_mbar_wait(empty0 + 8 * s, ph ^ 1);
        if (j == 0) uq[s] = u;
        at_mbar_arrive_expect_tx(full0 + 8 * s, TOK * 128 + BN * 128);
        at_tma_load_2d(base + s * STAGE, &ma, (kb0 + j) * 128, 0, full0 + 8 * s);
        at_tma_load_2d_pol(base + s * STAGE + A_TILE, &mb, (kb0 + j) * 128, t * BN, full0 + 8 * s, pol);
      }
    }
  } else if (tid >= 128 && (MATH == 4 || tid < 256)) {
    // MATH 4: two consumer warpgroups, each taking every other stage (S even), each freeing its
    // stage once its own wgmmas on it are done.
    const int cw = MATH == 4 ? (tid - 128) / 128 : 0;
    float acc[BN / 2];
#pragma unroll
    for (int j = 0; j < BN / 2; j++) acc[j] = 0.f;
    int it = 0;
    float sc = 1.f;
    for (int i = 0;; i++) {
      int u = blockIdx.x + i * gridDim.x;
      if (DYN) {
        const int s = it % S, ph = (it / S) & 1;
        at_mbar_wait(full0 + 8 * s, ph);
        if ((u = uq[s]) < 0) break;
      } else if (u >= units) {
        break;
      }
      for (int j = 0; j < per; j++, it++) {
        const int s = it % S, ph = (it / S) & 1;
        if (MATH == 4 && (it & 1) != cw) continue;
        if (!DYN || j > 0) at_mbar_wait(full0 + 8 * s, ph);
        if (st && (tid == 128 || tid == 256)) st[it == 0 ? 1 : 2] = now();
        if (MATH) {
          const at_u64 da = at_wgmma_desc_sw128(base + s * STAGE), db = at_wgmma_desc_sw128(base + s * STAGE + A_TILE);
          if (MATH == 3) {  // the GEMM's scale loads for this k-block: two A rows' and the tile's weight block
            const int kb = (DYN ? (u % ksplit) : (u / tiles)) * per + j, r = (tid & 127) / 4 % 8;
            sc += __ldg(as + r * (k / 128) + kb) * __ldg(as + (r + 8) * (k / 128) + kb) *
                  __ldg(bs + (long)(DYN ? u / ksplit : u % tiles) * BN / 128 * (k / 128) + kb);
          }
          at_wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<BN>::mma(acc, da + 2 * ks, db + 2 * ks, 1);
          at_wgmma_commit();
          if (MATH == 1 || MATH == 4) at_wgmma_wait<0>();
          else at_wgmma_wait<1>();  // MATH 2, 3: the previous k-block's batch is done, this one runs on
        }
        // MATH 1: this stage is free; MATH 2, 3: the previous one (this one after the loop).
        if (MATH <= 1 || MATH == 4) at_mbar_arrive_if(empty0 + 8 * s, (tid & 31) == 0);
        else if (j > 0) at_mbar_arrive_if(empty0 + 8 * ((it - 1) % S), (tid & 31) == 0);
      }
      if (MATH == 2 || MATH == 3) {  // the unit's last batch: waited for, its stage freed, as a GEMM's epilogue must
        at_wgmma_wait<0>();
        at_mbar_arrive_if(empty0 + 8 * ((it - 1) % S), (tid & 31) == 0);
      }
      if (MATH == 3 && (tid & 127) < 32) {  // the unit's 16 x BN result rows out, bf16 (warp 0 holds them)
        unsigned short *c = (unsigned short *)cout + (long)(DYN ? u / ksplit : u % tiles) * BN;
        const int r = (tid & 31) / 4, q = (tid & 3) * 2;
#pragma unroll
        for (int g = 0; g < BN / 8; g++) {
          c[(long)r * n + 8 * g + q] = (unsigned short)(__float_as_uint(acc[4 * g] * sc) >> 16);
          c[(long)(r + 8) * n + 8 * g + q] = (unsigned short)(__float_as_uint(acc[4 * g + 2] * sc) >> 16);
        }
      }
    }
    float x = sc;
#pragma unroll
    for (int j = 0; j < BN / 2; j++) x += acc[j];
    if (x == 1234.5f) out[blockIdx.x] = 1;  // keeps the wgmmas; practically never stores
    if (st && tid == 128) st[3] = now();
  }
  if (DYN) {
    __syncthreads();
    if (tid == 0 && atomicAdd(ctr + 1, 1u) == gridDim.x - 1) ctr[0] = 0, ctr[1] = 0;
  }
}

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static encode_fn encode;

// A map of rows x k bytes, boxes of 128 bytes x box_rows, 128-byte swizzle (as the library's).
static at_tmap map_of(void *p, int rows, int k, int box_rows) {
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)k};
  const cuuint32_t box[2] = {128, (cuuint32_t)box_rows}, es[2] = {1, 1};
  const CUresult r = encode(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r), exit(1);
  at_tmap t;
  static_assert(sizeof t == sizeof m, "a tensor map is 128 bytes");
  memcpy(&t, &m, sizeof t);
  return t;
}

struct bench {
  std::vector<void *> bufs;
  void *a, *as, *bs, *c;
  unsigned *ctr, *out;
  unsigned long long *stamps;
  int n, k, sms;
};

template <int BN, int S, int MATH, int DYN, int CL = 1>
static float run(bench &b, int ksplit, const char *name = nullptr) {
  auto kern = tma_ring<BN, S, MATH, DYN, CL>;
  const int smem = ring_bytes<BN, S>();
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int units = b.n / BN * ksplit, grid = DYN || units > b.sms ? b.sms : units;
  // TMA_STREAM_LAUNCHES=n: n calls a graph instead of at least 32 (bench/decode_timeline.c
  // captures one a weight buffer: 13 at 4096 x 4096); TMA_STREAM_ROTATE_A=1: each call its own
  // activations (the A of weight buffer i), as the library's calls in compare and decode_timeline.
  const char *nl = getenv("TMA_STREAM_LAUNCHES");
  const int launches = nl ? atoi(nl) : (int)b.bufs.size() < 32 ? 32 : (int)b.bufs.size();
  // MAX_LAUNCHES counters and stamp slots; the stamps printed are call 10's.
  if (launches < 11 || launches > MAX_LAUNCHES)
    fprintf(stderr, "TMA_STREAM_LAUNCHES: 11 to %d calls a graph, not %d\n", MAX_LAUNCHES, launches), exit(2);
  const bool rot_a = getenv("TMA_STREAM_ROTATE_A") != nullptr;
  std::vector<at_tmap> mas(b.bufs.size());
  for (size_t i = 0; i < b.bufs.size(); i++) mas[i] = map_of((char *)b.a + i * (size_t)TOK * b.k, TOK, b.k, TOK);
  std::vector<at_tmap> mb(b.bufs.size());
  for (size_t i = 0; i < b.bufs.size(); i++) mb[i] = map_of(b.bufs[i], b.n, b.k, BN);
  const at_tmap ma = map_of(b.a, TOK, b.k, TOK);
  float us = -1.f;
  graph_chain_us(
      launches,
      [&](cudaStream_t s, int i) {
        chain_launch l(grid, MATH == 4 ? 384 : 256, s, true);
        l.cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute at2[2] = {l.at[0], {}};
        if (CL > 1) {
          at2[1].id = cudaLaunchAttributeClusterDimension;
          at2[1].val.clusterDim.x = CL, at2[1].val.clusterDim.y = 1, at2[1].val.clusterDim.z = 1;
          l.cfg.attrs = at2, l.cfg.numAttrs = 2;
        }
        return cudaLaunchKernelEx(&l.cfg, kern, mb[i % mb.size()], rot_a ? mas[i % mas.size()] : ma, b.n, b.k, ksplit, b.ctr + 2 * i, b.out,
                                  (const float *)b.as, (const float *)b.bs, b.c,
                                  name ? b.stamps + (long)i * 4 * MAX_GRID : nullptr);
      },
      &us);
  if (name) {  // call 10's stamps, us from the earliest CTA's wait: earliest .. latest CTA
    std::vector<unsigned long long> h(4 * grid);
    CK(cudaMemcpy(h.data(), b.stamps + 10L * 4 * MAX_GRID, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < grid; c++) t0 = h[4 * c] < t0 ? h[4 * c] : t0;
    printf("  %-34s %6.2f us a call; call 10 from its first wait:", name, us);
    const char *ev[4] = {"wait", "1st full", "last full", "end"};
    for (int e = 0; e < 4; e++) {
      double lo = 1e30, hi = -1e30;
      for (int c = 0; c < grid; c++) {
        const double v = ((double)h[4 * c + e] - (double)t0) / 1e3;
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
      }
      printf(" %s %.2f..%.2f |", ev[e], lo, hi);
    }
    printf("\n");
  }
  return us;
}

int main() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib || !(encode = (encode_fn)dlsym(lib, "cuTensorMapEncodeTiled"))) return fprintf(stderr, "no libcuda\n"), 1;
  int sms = 0, l2 = 0;
  unsigned *out = nullptr, *ctr = nullptr;
  if (chain_device(&sms, &l2, &out)) return 1;
  CK(cudaMalloc(&ctr, 2 * MAX_LAUNCHES * sizeof(unsigned)));
  CK(cudaMemset(ctr, 0, 2 * MAX_LAUNCHES * sizeof(unsigned)));
  unsigned long long *stamps = nullptr;
  CK(cudaMalloc(&stamps, (size_t)MAX_LAUNCHES * 4 * MAX_GRID * 8));
  const char *only = getenv("TMA_STREAM_TIMELINE");
  printf("%d SMs, L2 %d MB; us per call, PDL chain in a CUDA graph, weights rotated past 4x L2; TMA ring of S stages\n", sms,
         l2 >> 20);
  printf("| weights N x K | BN, k splits | load only | wgmma, wait 0 | wgmma pipelined | + scales, stores | S4 | dyn, 8 kb a unit | dyn, 4 kb |\n"
         "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  const int shapes[][2] = {{4096, 4096}, {6144, 4096}, {4096, 14336}, {28672, 4096}};
  for (auto &sh : shapes) {
    bench b;
    b.n = sh[0], b.k = sh[1], b.sms = sms, b.ctr = ctr, b.out = out, b.stamps = stamps;
    const long bytes = (long)b.n * b.k;
    int nbuf = (int)((4L * l2 + bytes - 1) / bytes) + 1;
    if (nbuf < 2) nbuf = 2;
    b.bufs.resize(nbuf);
    for (auto &p : b.bufs) {
      CK(cudaMalloc(&p, bytes));
      CK(cudaMemset(p, 1, bytes));
    }
    const int kbt = b.k / 128;
    CK(cudaMalloc(&b.a, (size_t)TOK * b.k * nbuf));
    CK(cudaMemset(b.a, 0x38, (size_t)TOK * b.k * nbuf));
    CK(cudaMalloc(&b.as, (size_t)TOK * kbt * 4));
    CK(cudaMemset(b.as, 0, (size_t)TOK * kbt * 4));
    CK(cudaMalloc(&b.bs, (size_t)(b.n / 128) * kbt * 4));
    CK(cudaMemset(b.bs, 0, (size_t)(b.n / 128) * kbt * 4));
    CK(cudaMalloc(&b.c, (size_t)TOK * b.n * 2));
    if (only) {  // TMA_STREAM_TIMELINE=1: one table of stamps instead (the 4096-wide shapes' split)
      const int ks = b.n == 4096 ? 2 : 1;
      printf("%d x %d, BN 64, %d k splits:\n", b.n, b.k, ks);
      run<64, 8, 0, 0>(b, ks, "load only");
      run<64, 8, 0, 0, 2>(b, ks, "load only, clusters of 2");
      run<64, 8, 2, 0>(b, ks, "wgmma pipelined");
      run<64, 8, 2, 0, 2>(b, ks, "wgmma pipelined, clusters of 2");
      run<64, 8, 3, 0>(b, ks, "+ scales, stores");
      run<64, 8, 1, 0>(b, ks, "wgmma, wait 0");
      run<64, 8, 4, 0>(b, ks, "two warpgroups, every other stage");
      for (auto p : b.bufs) CK(cudaFree(p));
      for (void *p : {b.a, b.as, b.bs, b.c}) CK(cudaFree(p));
      continue;
    }
    float t[7];
    if (b.n == 28672) {  // the files' tile: 128 wide, 224 units over the grid
      t[0] = run<128, 8, 0, 0>(b, 1), t[1] = run<128, 8, 1, 0>(b, 1), t[2] = run<128, 8, 2, 0>(b, 1);
      t[3] = run<128, 8, 3, 0>(b, 1), t[4] = run<128, 4, 3, 0>(b, 1);
    } else {  // 64 wide: two k halves at N = 4096 (128 CTAs), one at 6144 (96)
      const int ks = b.n == 4096 ? 2 : 1;
      t[0] = run<64, 8, 0, 0>(b, ks), t[1] = run<64, 8, 1, 0>(b, ks), t[2] = run<64, 8, 2, 0>(b, ks);
      t[3] = run<64, 8, 3, 0>(b, ks), t[4] = run<64, 4, 3, 0>(b, ks);
    }
    t[5] = run<64, 8, 3, 1>(b, kbt / 8), t[6] = run<64, 8, 3, 1>(b, kbt / 4);
    printf("| %d x %d | %d, %d |", b.n, b.k, b.n == 28672 ? 128 : 64, b.n == 4096 ? 2 : 1);
    for (float x : t) printf(" %.2f |", x);
    printf("\n");
    for (auto p : b.bufs) CK(cudaFree(p));
    for (void *p : {b.a, b.as, b.bs, b.c}) CK(cudaFree(p));
  }
  return 0;
}

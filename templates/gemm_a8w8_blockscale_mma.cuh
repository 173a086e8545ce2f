// gemm_a8w8_blockscale_mma.cuh: the portable `mma` family of the a8w8 blockscale GEMM (sm_89 and
// sm_90): FP8 tensor-core mma.sync m16n8k32 tiles fed by a cp.async multi-stage pipeline.
//
// C[m][n] = sum over k-blocks kb of  As[m][kb] * Bs[n/128][kb] * sum_{k in kb} A[m][k] * B[n][k]
//
// Each block computes a BLOCK_M x BLOCK_N tile of C over a range of 128-wide k-blocks (all of them,
// or its share when SPLIT_K > 1). Per k-block the tensor cores accumulate 128 products of K in a
// fresh fp32 partial, which is then promoted into the running fp32 result with the two scales of
// that k-block: scales change every 128 of K, so they cannot be folded into the FP8 operands.
//
// Shared memory, per pipeline stage (the launch rule in engine/ops/gemm_a8w8_blockscale.c):
//   A tile  BLOCK_M rows x 128 bytes   rows are 8 chunks of 16 bytes, chunk c of row r stored at
//   B tile  BLOCK_N rows x 128 bytes   chunk c ^ (r % 8): ldmatrix then reads 8 rows of one chunk
//   A scales BLOCK_M floats            from 8 different banks groups (no conflicts)
//   B scales up to 4 floats
// The kernel traps if it is launched with fewer threads or less dynamic shared memory than that
// rule says, so a mismatch between host and template is a recorded fault, never a wrong answer.
//
// Split-K (SPLIT_K > 1): every split writes its fp32 partial tile to the workspace, then counts
// itself in the tile's arrival counter; the last to arrive sums the partials in split order (the
// result does not depend on arrival order), writes C, and resets the counter to zero for the next
// launch (the invariant of gemm_a8w8_blockscale_args.h): this launch uses the first `tiles` of
// args.ws_counters counters, and SPLIT_K x tiles partial tiles. Too few counters traps.
//
// Parameters: BLOCK_M, BLOCK_N (tile), BLOCK_K (must be 128: the scale granularity), WARPS_M x
// WARPS_N warps (each owns a (BLOCK_M/WARPS_M) x (BLOCK_N/WARPS_N) sub-tile), STAGES (pipeline
// depth, >= 2), GROUP_M (rows of tiles walked together, for L2 reuse of B), SPLIT_K, B_HINT (L2
// policy for B: 0 none, 1 evict_last, 2 evict_first). GROUP_M and SPLIT_K instantiated as 0 are
// taken from args at run time (launch parameters: one compiled kernel serves every value).
#include "at_ptx.cuh"
#include "gemm_a8w8_blockscale_args.h"

namespace at_mma {

__host__ __device__ constexpr int align_up(int x, int a) { return (x + a - 1) / a * a; }

template <int BLOCK_M, int BLOCK_N>
struct stage_layout {
  static constexpr int a_bytes = BLOCK_M * 128;
  static constexpr int b_offset = a_bytes;
  static constexpr int sa_offset = b_offset + BLOCK_N * 128;
  static constexpr int sb_offset = sa_offset + BLOCK_M * 4;
  static constexpr int bytes = align_up(sb_offset + 16, 128);
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled 128-byte-row tile.
__device__ __forceinline__ int swz(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

}  // namespace at_mma

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARPS_M, int WARPS_N, int STAGES, int GROUP_M, int SPLIT_K,
          int B_HINT, bool RESCALE = false>
__device__ __forceinline__ void gemm_a8w8_blockscale_mma_body(const at_gemm_a8w8_blockscale_args &args) {
  using layout = at_mma::stage_layout<BLOCK_M, BLOCK_N>;
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  constexpr int WM = BLOCK_M / WARPS_M, WN = BLOCK_N / WARPS_N;
  constexpr int MT = WM / 16, NT = WN / 8;
  constexpr int B_SCALES = BLOCK_N >= 128 ? BLOCK_N / 128 : 1;
  static_assert(BLOCK_K == 128, "BLOCK_K must be 128, the K granularity of the scales");
  static_assert(BLOCK_M % WARPS_M == 0 && WM % 16 == 0, "BLOCK_M / WARPS_M must be a multiple of 16");
  static_assert(BLOCK_N % WARPS_N == 0 && WN % 16 == 0, "BLOCK_N / WARPS_N must be a multiple of 16");
  static_assert(BLOCK_N % 128 == 0 || 128 % BLOCK_N == 0, "BLOCK_N must divide 128 or be a multiple of it");
  static_assert(B_SCALES <= 4, "BLOCK_N must be at most 512");
  static_assert(STAGES >= 2, "STAGES must be at least 2");
  static_assert(GROUP_M >= 0 && SPLIT_K >= 0, "GROUP_M and SPLIT_K: positive, or 0 to take them from args");
  static_assert(B_HINT >= 0 && B_HINT <= 2, "B_HINT is 0, 1 or 2");

  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // Launch parameters: the instantiation's own, or (0) the candidate's, passed in args.
  const int group = GROUP_M ? GROUP_M : args.group_m, split_k = SPLIT_K ? SPLIT_K : args.split_k;
  if (tid == 0 && (blockDim.x != THREADS || at_dynamic_smem_size() < STAGES * layout::bytes || group < 1 ||
                   split_k < 1 || (int)gridDim.z != split_k))
    __trap();

  const unsigned char *A = (const unsigned char *)args.a;
  const unsigned char *B = (const unsigned char *)args.b;
  const float *As = (const float *)args.a_scale;
  const float *Bs = (const float *)args.b_scale;
  const int M = args.m, N = args.n, K = args.k;
  const int KB = K / 128;  // k-blocks, also the row stride of both scale tensors

  // Tile of this block: GROUP_M rows of tiles are walked column by column, so that the blocks
  // running together share their B tiles in L2.
  const int tiles_m = (M + BLOCK_M - 1) / BLOCK_M, tiles_n = (N + BLOCK_N - 1) / BLOCK_N;
  const int pid = blockIdx.x;
  const int group_size = group * tiles_n;
  const int first_m = pid / group_size * group;
  const int group_m = min(tiles_m - first_m, group);
  const int pid_m = first_m + (pid % group_size) % group_m;
  const int pid_n = (pid % group_size) / group_m;
  const int m0 = pid_m * BLOCK_M, n0 = pid_n * BLOCK_N;

  // k-blocks of this split.
  const int kb_per_split = (KB + split_k - 1) / split_k;
  const int kb_begin = min(KB, (int)blockIdx.z * kb_per_split);
  const int nkb = min(KB, kb_begin + kb_per_split) - kb_begin;

  at_u64 policy = 0;
  if (B_HINT == 1) policy = at_l2_policy_evict_last();
  if (B_HINT == 2) policy = at_l2_policy_evict_first();

  auto load_stage = [&](int stage, int kb) {
    unsigned char *sa = smem + stage * layout::bytes;
    unsigned char *sb = sa + layout::b_offset;
    float *ssa = (float *)(sa + layout::sa_offset);
    float *ssb = (float *)(sa + layout::sb_offset);
    const long kofs = (long)kb * 128;
#pragma unroll
    for (int i = 0; i < (BLOCK_M * 8 + THREADS - 1) / THREADS; i++) {
      const int c = tid + i * THREADS;
      if ((BLOCK_M * 8) % THREADS != 0 && c >= BLOCK_M * 8) break;
      const int row = c >> 3, chunk = c & 7, gm = m0 + row;
      const bool in = gm < M;
      at_cp_async_16(sa + at_mma::swz(row, chunk), A + (long)(in ? gm : 0) * K + kofs + chunk * 16, in ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < (BLOCK_N * 8 + THREADS - 1) / THREADS; i++) {
      const int c = tid + i * THREADS;
      if ((BLOCK_N * 8) % THREADS != 0 && c >= BLOCK_N * 8) break;
      const int row = c >> 3, chunk = c & 7, gn = n0 + row;
      const bool in = gn < N;
      const unsigned char *src = B + (long)(in ? gn : 0) * K + kofs + chunk * 16;
      if (B_HINT == 0)
        at_cp_async_16(sb + at_mma::swz(row, chunk), src, in ? 16 : 0);
      else
        at_cp_async_16_hint(sb + at_mma::swz(row, chunk), src, in ? 16 : 0, policy);
    }
    for (int r = tid; r < BLOCK_M; r += THREADS) {
      const int gm = m0 + r;
      const bool in = gm < M;
      at_cp_async_4(ssa + r, As + (long)(in ? gm : 0) * KB + kb, in ? 4 : 0);
    }
    if (tid < B_SCALES) {
      const int nb = n0 / 128 + tid;
      const bool in = nb * 128 < N;
      at_cp_async_4(ssb + tid, Bs + (long)(in ? nb : 0) * KB + kb, in ? 4 : 0);
    }
  };

  const int warp = tid >> 5, lane = tid & 31;
  const int warp_m = warp % WARPS_M, warp_n = warp / WARPS_M;
  const int g = lane >> 2, t = lane & 3;  // the mma fragment's row group and column pair

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
      for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;

  float unit[RESCALE ? MT : 1][2];  // RESCALE: the scale acc is currently expressed in, per row
#pragma unroll
  for (int i = 0; i < (RESCALE ? MT : 1); i++) unit[i][0] = unit[i][1] = 1.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < nkb) load_stage(s, kb_begin + s);
    at_cp_async_commit();
  }

  for (int it = 0; it < nkb; it++) {
    at_cp_async_wait<STAGES - 2>();
    __syncthreads();
    // Refill the stage everyone finished reading in the previous iteration.
    const int pf = it + STAGES - 1;
    if (pf < nkb) load_stage(pf % STAGES, kb_begin + pf);
    at_cp_async_commit();

    const unsigned char *sa = smem + (it % STAGES) * layout::bytes;
    const at_u32 sa_addr = at_smem_addr(sa), sb_addr = sa_addr + layout::b_offset;
    const float *ssa = (const float *)(sa + layout::sa_offset);
    const float *ssb = (const float *)(sa + layout::sb_offset);

    // With RESCALE the tensor cores accumulate straight into acc, kept in units of the current
    // k-block's scale: before the k-block, acc *= previous scale / this scale, per row.
    if (RESCALE) {
      const float sb = ssb[((n0 & 127) + warp_n * WN) >> 7];  // one 128-column block per warp
#pragma unroll
      for (int i = 0; i < MT; i++) {
        float s_lo = ssa[warp_m * WM + i * 16 + g] * sb, s_hi = ssa[warp_m * WM + i * 16 + g + 8] * sb;
        s_lo = fabsf(s_lo) < 1e-20f ? 1e-20f : s_lo;  // zero scales contribute ~1e-20 x partial: nothing
        s_hi = fabsf(s_hi) < 1e-20f ? 1e-20f : s_hi;
        const float r_lo = unit[i][0] / s_lo, r_hi = unit[i][1] / s_hi;
        unit[i][0] = s_lo;
        unit[i][1] = s_hi;
#pragma unroll
        for (int j = 0; j < NT; j++) {
          acc[i][j][0] *= r_lo;
          acc[i][j][1] *= r_lo;
          acc[i][j][2] *= r_hi;
          acc[i][j][3] *= r_hi;
        }
      }
    }
    float part[RESCALE ? 1 : MT][RESCALE ? 1 : NT][4];
    if (!RESCALE) {
#pragma unroll
      for (int i = 0; i < (RESCALE ? 1 : MT); i++)
#pragma unroll
        for (int j = 0; j < (RESCALE ? 1 : NT); j++)
#pragma unroll
          for (int q = 0; q < 4; q++) part[i][j][q] = 0.f;
    }

#pragma unroll
    for (int ks = 0; ks < 4; ks++) {  // four k32 steps make one 128-wide k-block
      at_u32 af[MT][4];
#pragma unroll
      for (int i = 0; i < MT; i++) {
        const int row = warp_m * WM + i * 16 + (lane & 15);
        at_ldmatrix_x4(af[i], sa_addr + at_mma::swz(row, ks * 2 + (lane >> 4)));
      }
      at_u32 bf[NT][2];
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        const int row = warp_n * WN + j * 8 + (lane & 7) + ((lane >> 4) << 3);
        at_u32 r[4];
        at_ldmatrix_x4(r, sb_addr + at_mma::swz(row, ks * 2 + ((lane >> 3) & 1)));
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++) {
          if (RESCALE)
            at_mma_e4m3_16832(acc[i][j], af[i], bf[j][0], bf[j][1]);
          else
            at_mma_e4m3_16832(part[RESCALE ? 0 : i][RESCALE ? 0 : j], af[i], bf[j][0], bf[j][1]);
        }
    }
    if (RESCALE) continue;

    // Promote: result += partial * As[row][kb] * Bs[col/128][kb].
#pragma unroll
    for (int i = 0; i < MT; i++) {
      const float s_lo = ssa[warp_m * WM + i * 16 + g], s_hi = ssa[warp_m * WM + i * 16 + g + 8];
#pragma unroll
      for (int j = 0; j < NT; j++) {
        const float sb = ssb[((n0 & 127) + warp_n * WN + j * 8) >> 7];
        acc[i][j][0] += part[RESCALE ? 0 : i][RESCALE ? 0 : j][0] * (s_lo * sb);
        acc[i][j][1] += part[RESCALE ? 0 : i][RESCALE ? 0 : j][1] * (s_lo * sb);
        acc[i][j][2] += part[RESCALE ? 0 : i][RESCALE ? 0 : j][2] * (s_hi * sb);
        acc[i][j][3] += part[RESCALE ? 0 : i][RESCALE ? 0 : j][3] * (s_hi * sb);
      }
    }
  }
  at_cp_async_wait<0>();
  if (RESCALE) {  // back to real units
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
      for (int j = 0; j < NT; j++) {
        acc[i][j][0] *= unit[i][0];
        acc[i][j][1] *= unit[i][0];
        acc[i][j][2] *= unit[i][1];
        acc[i][j][3] *= unit[i][1];
      }
  }

  unsigned short *C = (unsigned short *)args.c;
  auto store = [&](int i, int j, const float (&v)[4]) {
    const int row = m0 + warp_m * WM + i * 16 + g;
    const int col = n0 + warp_n * WN + j * 8 + t * 2;
    if (col >= N) return;  // N % 8 == 0: the pair (col, col + 1) is inside or outside together
    if (row < M) *(at_u32 *)(C + (long)row * N + col) = at_pack_bf16x2(v[0], v[1]);
    if (row + 8 < M) *(at_u32 *)(C + (long)(row + 8) * N + col) = at_pack_bf16x2(v[2], v[3]);
  };

  if (split_k == 1) {
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
      for (int j = 0; j < NT; j++) store(i, j, acc[i][j]);
    return;
  }

  // Split-K: publish this split's partial tile, then the last split to arrive reduces.
  const int tiles = tiles_m * tiles_n;
  if (tiles > args.ws_counters) __trap();
  unsigned *counters = (unsigned *)args.counters;
  float *partials = (float *)args.partials;
  const int tile = blockIdx.x;
  constexpr int TILE_FLOATS = BLOCK_M * BLOCK_N;
  float *mine = partials + ((long)blockIdx.z * tiles + tile) * TILE_FLOATS;
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NT; j++)
      *(float4 *)(mine + ((i * NT + j) * THREADS + tid) * 4) = make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
  __threadfence();
  __syncthreads();
  __shared__ int is_last;
  if (tid == 0) is_last = atomicAdd(&counters[tile], 1u) == (unsigned)(split_k - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NT; j++) {
      float v[4] = {0.f, 0.f, 0.f, 0.f};
      for (int s = 0; s < split_k; s++) {
        const float4 p = __ldcg((const float4 *)(partials + ((long)s * tiles + tile) * TILE_FLOATS +
                                                 ((i * NT + j) * THREADS + tid) * 4));
        v[0] += p.x;
        v[1] += p.y;
        v[2] += p.z;
        v[3] += p.w;
      }
      store(i, j, v);
    }
  if (tid == 0) counters[tile] = 0;
}

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARPS_M, int WARPS_N, int STAGES, int GROUP_M, int SPLIT_K,
          int B_HINT>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    gemm_a8w8_blockscale_mma(const __grid_constant__ at_gemm_a8w8_blockscale_args args) {
  gemm_a8w8_blockscale_mma_body<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>(args);
}

// The same kernel with one fp32 accumulator per output instead of two: the running result is kept in
// units of the current k-block's scale and rescaled (a multiply per element) when the scale changes,
// so the tensor cores accumulate straight into it. Half the accumulator registers, which allows
// 64 x 64 warp tiles. Scales of magnitude below 1e-20 are taken as 1e-20 (their k-blocks then add
// about 1e-20 x their partial sums: nothing at bf16 precision).
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARPS_M, int WARPS_N, int STAGES, int GROUP_M, int SPLIT_K,
          int B_HINT>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32)
    gemm_a8w8_blockscale_mma_rs(const __grid_constant__ at_gemm_a8w8_blockscale_args args) {
  static_assert(BLOCK_N <= 128 || 128 % (BLOCK_N / WARPS_N) == 0,
                "a warp's columns must lie in one 128-column scale block: BLOCK_N / WARPS_N must divide 128");
  gemm_a8w8_blockscale_mma_body<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT, true>(args);
}

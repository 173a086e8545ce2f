// gemm_a8w8_blockscale_sm90.cuh: the Hopper family of the a8w8 blockscale GEMM (sm_90a only):
// TMA loads into an mbarrier ring, FP8 wgmma from shared memory, warp-specialised, persistent.
//
// C[m][n] = sum over k-blocks kb of  As[m][kb] * Bs[n/128][kb] * sum_{k in kb} A[m][k] * B[n][k]
//
// Roles. A block has 1 + MATH_WG warpgroups (MATH_WG: 1 for BLOCK_M 64, 2 for 128 and 256, 3 for
// 192, each math warpgroup taking 64-row slices; three keep two batches queued on the tensor cores
// while one promotes, with 160 registers a thread):
//   warpgroup 0, the producer: one thread issues every TMA load; with two math warpgroups the
//     producer gives its registers away (setmaxnreg.dec to 40) and the math warpgroups take them
//     (setmaxnreg.inc to 232): a math thread holds 2 x BLOCK_N / 2 fp32 accumulators;
//   warpgroup 1 + w, a math warpgroup: rows [64 w, 64 w + 64) of the tile, all BLOCK_N columns.
// Work. The grid is persistent: block b takes units b, b + gridDim.x, ... of tiles x SPLIT_K units
// (unit u: split u / tiles, tile u % tiles, tiles walked GROUP_M rows of tiles at a time so that
// the blocks running together share A and B in L2). Producer and math warpgroups walk the same
// sequence of (unit, k-block), so stage s and phase of k-block number i are i % STAGES and
// (i / STAGES) & 1 for both sides, across tiles.
// Pipeline (one stage = one 128-wide k-block: A tile BLOCK_M x 128 bytes, B tile BLOCK_N x 128
// bytes, each 128-byte swizzled by TMA, 1024-byte aligned; with one row of tiles, when each weight
// tile is read by one CTA or one multicast only, the B loads carry an L2 evict_first policy):
//   full[s]   count 1: the producer's arrive.expect_tx(A + B bytes); TMA completes the bytes.
//   empty[s]  count 4 x MATH_WG: lane 0 of every math warp arrives once its warpgroup's wgmmas
//             that read stage s have completed (wgmma.wait_group 0 precedes the arrive).
//   The producer waits empty[s] with parity phase ^ 1 (a fresh barrier passes parity 1 at once),
//   math threads wait full[s] with parity phase.
// Math per k-block: four wgmma m64nBLOCK_Nk32 (K = 32 bytes each) into a fresh accumulator
// (the first with scale-d = 0), commit, wait; the stage is released, then, in fp32 FFMAs,
// result += acc * (As * Bs) with the row's A scale and the column's B scale. While a warpgroup
// promotes, the tensor cores have only the other warpgroup's wgmmas to run. With PINGPONG = 1 or 2
// (two math warpgroups) the two take turns through named barriers: warpgroup 1 issues a batch once
// warpgroup 0's batch has completed (1) or has been issued (2), warpgroup 0 its next one likewise
// after warpgroup 1's, so that each promotes while the other's wgmmas run instead of both waiting
// on interleaved ones. (Measured with BLOCK 128 x 128: 1 costs 7%, its wait for completion leaves
// the tensor cores idle between batches; 2 keeps the order without that wait.) KPIPE 2: two
// accumulators per warpgroup, k-block i + 1 issued before i is promoted (see the loop for how it
// keeps ptxas from serializing them).
// RESCALE 1: no separate result. The wgmmas accumulate in place into one register set that holds
// the sum so far divided by the current k-block's scales ("units": As[row][kb] x Bs[blk][kb], a
// zero scale keeping the previous units); between k-blocks it is multiplied by old units / new
// units (one product per register, as a promotion costs), and by the units at the end. Half the
// registers: 64 x 256 per warpgroup fits (128 x 256 and 256 x 128 tiles), which halves the
// shared-memory reads of A per product against 128 x 128. Exact for zero-scale blocks whose
// values are zero (how a zero scale arises); a zero scale over non-zero values is not supported.
// A 64 x 256 slice (HALVES) is issued as two 128-column batches, each committed on its own: per
// k-block the warpgroup waits for the first (wait_group 1), rescales it while the second runs,
// waits for the second and frees the stage, issues the next k-block's first half, rescales the
// second half while that runs, then issues it. ptxas serializes every wgmma of the kernel (C7514)
// when an accumulator is rewritten while a batch issued before a loop's back edge is in flight,
// so no batch is in flight across one: the loop takes HU k-blocks an iteration and drains at its
// end, where the next iteration's first half is rescaled with no batch of its own running.
// SWAP_AB 1 (decode-sized M: BLOCK_M 16, 32 or 64 tokens, BLOCK_N 64 or 128): the wgmma's operands
// swapped. Math warpgroup w (BLOCK_N / 64 of them) takes the tile's weight rows (C's columns)
// n0 + 64 w + [0, 64) as the wgmma's A (64 rows of the B stage) and all BLOCK_M tokens as its B
// (the A stage): m64nBLOCK_Mk32, no token row padded to 64. Its accumulator is C's slice
// transposed: a thread holds weight rows lrow and lrow + 8 and tokens 8 g + colq + {0, 1}; its
// weight rows lie in one 128-row scale block (one B scale), each token column has its own A scale
// (BLOCK_M / 4 a thread, loaded a k-block ahead like the unswapped rows'). Stages, TMA loads,
// clusters, the walk and split-K (partials in fragment order) are the unswapped kernel's; the
// epilogue stages the transposed slice one bf16 at a time and copies C's rows out in 16-byte
// stores. With RESCALE 0, STORE 0, CLUSTER_K 1 and no turns. (On the H100 it ties the unswapped
// tiles at best, at M = 16, and loses above: docs/perf.md, "Swapped operands".)
// Scales are read from global memory by the math threads when a k-block is issued and used when
// it is promoted, so their latency hides behind tensor work: As is [M][K/128] row-major, which TMA
// cannot fetch one k-column at a time. A thread's scales come from rows of K / 128 floats, each a
// 32-byte sector every 8 k-blocks; unless K / 128 is a multiple of 8 the rows cross into their
// next sectors at different k-blocks, so some load misses L1 at (nearly) every k-block, and one
// k-block of tensor work did not hide that (RESCALE 1, 128 x 256: up to 18% slower at odd
// K / 128). KPIPE 1 (RESCALE among it) therefore loads the scales two k-blocks ahead when a math
// warpgroup has one 64-row slice and there are one or two of them (AHEAD2 in the kernel). The
// KPIPE 2 loop of 128-wide tiles with two math warpgroups (KP2_AHEAD2) keeps one set of scales per
// accumulator, each loaded two waits before it is used: one set copied a wait ahead, as the other
// KPIPE 2 tiles still do, ran those tiles 6-13% slower at M = 512 when K / 128 is not a multiple
// of 8 and up to 3% slower at M = 2048; on 128 x 64 tiles, tiles split in a cluster, and with the
// scales in shared memory the two sets ran 1.5-3% slower (docs/perf.md, "Scales two waits ahead
// with two k-blocks in flight").
// SCALE_KB > 0 (STORE 0 or 3, SWAP_AB 0): the scales of a unit come into shared memory instead. The
// tile's rows of A's scales, [rows][K / 128], and the rows of the weight-scale blocks it touches
// are each contiguous in the op's layout, so the producer's warp 1 (the scale loader, idle
// without store warps) copies them with two bulk copies per unit, whatever the unit's k range,
// into slot su % 2 of two ([BLOCK_M + NB][SCALE_KB] floats each):
//   sfull[q]  count 1: the loader's arrive.expect_tx(bytes); the bulk copies complete them.
//   sempty[q] count 4 x MATH_WG: lane 0 of every math warp, after the unit's last k-block is
//             promoted (a proxy fence first: the slot's next writes are the async proxy's).
//   su counts the units with k-blocks on both sides; parity (su / 2) & 1 (sempty: ^ 1).
// The math threads wait sfull once, before a unit's first scales, and then read every k-block's
// scales from the slot with the same (generic) loads through pointers that point there: no
// barrier or branch inside the k loop (the scale groups of docs/perf.md lost on exactly those).
// A unit's copy queues behind the stages the producer has already requested, so the loader runs
// up to two units ahead (with one slot, copied during the unit's epilogue, 128 x 128 tiles at
// steady state gained 1.5% instead of 2.3%: H100, docs/perf.md). The slots hold whole rows:
// K / 128 <= SCALE_KB, K / 128 a multiple of 4 and 16-byte aligned scale pointers, else (sc_smem
// false, uniform over the launch) the pointers point into global memory and nothing is copied.
// A tile's columns may straddle two or three 128-column weight-scale blocks (BLOCK_N that does
// not divide 128, or tiles that do not start on a block): each 8-column accumulator group lies in
// one block, picked per group; with BLOCK_N 192 each 64-column segment does (tiles start on
// multiples of 64), picked per segment, which keeps the promotion and the rescale as cheap as in a
// tile of one block (per group they cost 25% at 128 x 192, docs/perf.md). Tiles that touch at most
// two blocks (BLOCK_N 48, 80, 96, 112, 144, 160: TWO_BLOCKS) branch once per promotion to a copy
// of it for the tile's first group in the second block, every group's block then known at compile
// time (H100: 7-12% faster calls with 96-wide tiles, docs/perf.md, "Two weight-scale blocks").
// Epilogue. SPLIT_K == 1: each math warpgroup packs its 64 x BLOCK_N result to bf16 in its own
// shared-memory staging area (rows padded by 16 or 32 bytes: no bank conflicts; tiles wider than 128 in
// two column passes; with STORE 0 by stmatrix, four 8 x 8 tiles an instruction, else by four-byte
// stores), then copies it out in 16-byte coalesced stores, rows >= M and columns >= N
// skipped. STORE 1 hands the copy to the producer warpgroup's warps 1-3, which are idle otherwise:
// per pass the math warpgroup waits on its area's named barrier "free", stages, writes the pass's
// first row and column into the padding of staging row 0 and arrives on the area's "staged"; the
// store warps wait "staged", copy, arrive "free" (once more at the start: the areas begin free,
// and the math warpgroup takes that last arrival before exit). The math warpgroups then start the
// next tile while the copy runs. STORE 2 gives each math warpgroup two areas, used in turn: it
// stages a pass while the previous one is being copied (a 128 x 256 tile's two passes without
// waiting). STORE 3 (passes of whole 64-column boxes) stages by stmatrix into 64 x 64 boxes laid
// out as a 128-byte swizzled tensor map of C reads them (16-byte chunk c of row r at c ^ (r % 8),
// which keeps stmatrix free of bank conflicts), fences them for the async proxy, and one thread of
// the warpgroup issues a TMA tensor store per box (cp.async.bulk.tensor, bulk group); the map
// (args c, m, n, ldc: the kernel's fifth tensor map) clips rows >= M and columns >= N. The
// warpgroup goes on at once; that thread waits for the stores' reads of the area before the area
// is staged again (the next pass, or with CLUSTER_K 2 before the peer may send into it), and for
// their completion before the CTA exits. On the H100 it ran 128 x 256 in-place tiles 1-4% faster
// than STORE 0 and 128 x 128 tiles 1-2% slower (docs/perf.md, "Tensor stores"): the tuner picks.
// SPLIT_K > 1: each math warpgroup
// writes its fp32 partial to the workspace and counts itself in counter (tile * MATH_WG + w); the
// last of the SPLIT_K to arrive sums the partials in split order (arrival order does not change
// the result), resets the counter to zero, and stores as above: the invariant of
// gemm_a8w8_blockscale_args.h, with tiles * MATH_WG counters (too few traps).
// Tails: only rows inside A and B are fetched. Each operand has two tensor maps: boxes of the
// whole share (BLOCK_M / CLUSTER_N rows of A, BLOCK_N / CLUSTER_M of B) and boxes of the rows left
// at the end (M or N modulo that), for the one share a tile row or column may end in; a share past
// the end is not loaded, and the full barrier expects the bytes of the rows inside. The shared
// memory rows not loaded keep what they held (stale, even NaN), so the tile's rows and columns
// past M and N hold garbage, which nothing stores: a row (column) of C depends on its own row of A
// (B) alone. (Boxes partly past the end, zero-filled by TMA, ran the whole call 1.3-1.6x slower on
// the H100 at M = 200-448, docs/perf.md, "Rows past M".) Scale reads are clamped to the last row or
// block.
// Programmatic dependent launch: every thread waits (griddepcontrol.wait) after the setup (barriers,
// cluster sync, descriptor prefetch) and before any global memory access, then lets the stream's
// next kernel be scheduled; launched with the attribute (the runtime's default), the setup overlaps
// the end of the preceding kernel. Launched without it, both are no-ops.
// The runtime's tail (docs/runtime.md): a call whose last wave would leave most SMs idle runs its
// first unit_end units in this kernel and the rest of C, a rectangle at the end of the walk or the
// rows after main_m (this kernel launched on those first rows), as a second launch of a finer
// config on that part of the matrices (pointers offset, C's row stride ldc); that tail launch has
// late_wait set: it reads at once, and its last CTA waits for the main launch before it exits.
// The kernel traps when launched with other threads or less dynamic shared memory than its launch
// rule (engine/ops/gemm_a8w8_blockscale.c) promises: a host/template mismatch is a fault.
//
// Split K inside a cluster (CLUSTER_K 2; SPLIT_K 1, STORE 0 or 3, one slice). For shapes whose tiles
// do not fill the GPU: two CTAs take each tile, rank r the half kr = r / CLUSTER_MN of its
// k-blocks, each with its own pipeline. With CLUSTER_M or CLUSTER_N 2 as well (clusters of four),
// the CTAs of one k half multicast among themselves as below, ranks offset by kr CLUSTER_MN: a
// tile of 128 x 256 split in K alone loads 1.5 times the bytes per product of one that shares B.
// (Measured on the H100, docs/perf.md: 21.4 us for 512 x 4096 x 4096 split, 19.6 us unsplit in
// 128 x 128 tiles paired along M; clusters of four twice as slow, not all of them resident.) Clusters are
// scheduled whole, so each CTA may wait on its peer, which the split-K of the workspace (whose
// splits need not run at the same time) cannot. After its k-blocks, rank kr keeps columns
// [kr BLOCK_N / 2, (kr + 1) BLOCK_N / 2) of the tile and sends its partial of the other half to
// the peer's thread of the same index (same fragment layout), in chunks of xf floats a thread,
// through the peer's staging area:
//   xfull[w] (in the receiver, count 1): a receiving thread announces the chunk's bytes
//     (arrive.expect_tx); the sender's st.async stores complete them, no fence needed (the peer's
//     bytes may land first: the phase cannot complete while the local arrival is pending);
//   xfree[w] (in the sender, count 4): lane 0 of each of the receiver's warps, once the warp has
//     read a chunk (for the last chunk of a unit, once its epilogue, which stages through the
//     same area, is done). Before it, each thread fences the proxies (fence.proxy.async): its
//     generic reads and writes of the area precede the peer's st.async writes into it. Without
//     that fence some chunks were corrupted (about 1 check in 5 at 128 x 160 RESCALE, 2 stages;
//     scripts/bisect_ksplit2.yaml, docs/perf.md), even though the reads had completed.
//   Both are waited with parity of the chunk count xc (xfree with xc & 1 ^ 1: a fresh barrier
//   passes the first round), the same on both ranks: they walk the same units.
// Each rank then stores its half. Each element is summed once, by one rank, as own + peer's: the
// same bits whichever finishes first (two terms, and addition commutes).
// CLUSTER_K 4 (STORE 0, no multicast, BLOCK_N a multiple of 32): four CTAs take each tile, rank kr
// the part kr of its k-blocks in four (at_sm90::k_part), and rank kr keeps the columns of quarter
// kr (whole 8-column groups: res[kr Q, (kr + 1) Q), Q = NACC / 4). In one round per unit each rank
// sends its three other quarters to the ranks that keep them, whole, into three slots of the
// receiver's staging area (slot (sender - receiver + 3) % 4, one per peer):
//   xfull[w] (in the receiver, count 1): one local arrival announcing the three slots' bytes, which
//     the peers' st.async complete;
//   xfree[w] (in the sender, count 12): lane 0 of each of the three receivers' four warps, once the
//     receiver's epilogue (which stages in the same area) is done with the unit, proxy-fenced as
//     above; not after the last unit.
//   Both are waited with the parity of the units exchanged (xc), the same on all four ranks.
// The receiver adds slot 0, 1, 2 to its own quarter in that order (the same bits whichever rank
// finishes first) and stores that quarter. Three slots of a quarter take the place of CLUSTER_K
// 2's chunk; for tiles of few columns (64 x 32: 6 KB a math warpgroup) that costs no stage.
// Measured (H200, docs/perf.md, "Split K four ways"): decode calls on weights of few tiles and
// long K (576 x 7168, 1280 x 8192, 1536 x 7168 at M <= 64) 11-25% faster than split in two; on
// wider weights, where split in two already fills the GPU, slower.
//
// Clusters (CLUSTER_M x CLUSTER_N CTAs, each 1 or 2). The CTAs of a cluster take the tiles of one
// cluster tile of (CLUSTER_M BLOCK_M) x (CLUSTER_N BLOCK_N): rank r is at (rm, rn) = (r % CLUSTER_M,
// r / CLUSTER_M) in it. CTAs of one cluster row (same rm) share their A tile, of one cluster column
// (same rn) their B tile: each loads 1 / CLUSTER_N of the shared A tile (1 / CLUSTER_M of B) and
// multicasts it to the CTAs that share it, so L2 serves each shared byte once per cluster. Every
// stage of every CTA is then written by several producers: a producer may overwrite stage s only
// once the consumers of every CTA it writes to have released s. So each math warp arrives on the
// empty barrier of every CTA of its multicast group (empty counts 4 x MATH_WG x CLUSTER_M x
// CLUSTER_N arrivals: the whole cluster unless CLUSTER_K is 2), and each
// producer waits only on its own. A full barrier expects the bytes of the whole A and B tiles' rows
// inside the matrices (see "Tails"), its own share and its peers' alike; bytes from a peer may land before the local arrive.expect_tx, which the phase tolerates (it cannot
// complete while the local arrival is pending). The walk is per cluster (cluster c takes units c,
// c + clusters, ...), so the CTAs of a cluster see the same k-blocks in the same order. A CTA whose
// tile lies past M or N loads none of its A (B) share but still its share of the other operand,
// which its peers need, and computes rows that the store drops. The cluster is synchronised after the barriers are initialised (no
// remote arrival or multicast before). At exit, no cluster barrier (its release would cost every
// thread a wait for its stores); instead no CTA exits while another may still write into it:
// multicast bytes land before the receiver's consumers pass its full barrier, and each producer
// waits, after its last load, until the last STAGES k-blocks have been released by every consumer
// of its multicast group, which are all the remote arrivals into this CTA (the tail).
//
// Parameters: BLOCK_M (64, 128, 192 or 256; with SWAP_AB 16, 32 or 64), BLOCK_N (a multiple of 16,
// at most 256), STAGES (>= 2), GROUP_M (rows of tiles walked together), SPLIT_K, PINGPONG (0, 1, 2:
// how math warpgroups take turns), CLUSTER_M and CLUSTER_N (1 or 2), KPIPE (k-blocks in flight per
// math warpgroup, 1 or 2), RESCALE (0, 1), STORE (0, 1, 2, 3), CLUSTER_K (1, 2, 4), SWAP_AB (0, 1),
// SCALE_KB (0, or a multiple of 4: the scales in shared memory for K / 128 up to it).
// GROUP_M and SPLIT_K instantiated as 0 are read from args (launch parameters: one compiled kernel
// serves every value).
#include "at_sm90.cuh"
#include "at_wgmma_e4m3.cuh"
#include "gemm_a8w8_blockscale_args.h"

namespace at_sm90 {

// Math warpgroups: with SWAP_AB one per 64 weight rows (BLOCK_N / 64), else one for 64 rows of
// tokens, two for 128 and 256 (each takes BLOCK_M / 128 slices of 64 rows), three for 192.
__host__ __device__ constexpr int math_wgs(int block_m, int block_n, int swap_ab) {
  return swap_ab ? block_n / 64 : block_m == 192 ? 3 : block_m >= 128 ? 2 : 1;
}

__host__ __device__ constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

// The weight-scale blocks a tile of BLOCK_N columns may touch, as the kernel keeps them (NB there):
// one when BLOCK_N divides 128; two when each 64-column segment lies in one block (SEG64) or the
// tile touches at most two (TWO_BLOCKS); else three.
__host__ __device__ constexpr int scale_blocks(int block_n) {
  return 128 % block_n == 0                                     ? 1
         : block_n % 64 == 0 && block_n % 128 != 0              ? 2
         : block_n % 128 != 0 && 128 - gcd(block_n, 128) + block_n <= 256 ? 2
                                                                : 3;
}

template <int BLOCK_M, int BLOCK_N, int STAGES, int CLUSTER_K = 1, int STORE = 0, int SWAP_AB = 0, int SCALE_KB = 0>
struct layout {
  static constexpr int math_wg = math_wgs(BLOCK_M, BLOCK_N, SWAP_AB);  // math warpgroups
  static constexpr int waves = SWAP_AB ? 1 : BLOCK_M / (64 * math_wg);  // 64-row slices per math warpgroup
  static constexpr int threads = 128 * (1 + math_wg);
  static constexpr int a_stage = BLOCK_M * 128, b_stage = BLOCK_N * 128;
  // The epilogue stages a slice in column passes of epi_n columns: tiles wider than 128 in two
  // halves, which leaves room for a fourth stage at 128 x 256; with CLUSTER_K 2 a CTA stores one
  // half of its tile, a pass.
  // SWAP_AB: a math warpgroup's slice is BLOCK_M rows of C (tokens) by its 64 columns (weight rows),
  // staged whole.
  // With CLUSTER_K 4 a CTA stores one quarter of its tile, a pass.
  static constexpr int epi_n = SWAP_AB          ? 64
                               : CLUSTER_K == 4 ? BLOCK_N / 4
                               : BLOCK_N > 128 || CLUSTER_K == 2 ? BLOCK_N / 2
                                                                 : BLOCK_N;
  static constexpr int c_rows = SWAP_AB ? BLOCK_M : 64;  // staged rows of a slice
  // STORE 3: a pass leaves by TMA tensor stores of 64 x 64 boxes, staged 128-byte swizzled (the
  // kernel's epilogue).
  static constexpr bool tma_store = STORE == 3;
  // Bytes per staged output row, padded so that the 8 rows a warp writes at once start in distinct
  // 16-byte bank groups (a row of pitch / 4 words that is 4 mod 8): 16 bytes, or 32 when epi_n is
  // an odd multiple of 8 (a pitch of 128 bytes would put all 8 rows in one group).
  static constexpr int c_pitch = epi_n * 2 + (epi_n % 16 == 8 ? 32 : 16);
  // CLUSTER_K 2: the floats per thread of one exchange chunk: half of its accumulators (BLOCK_N / 4,
  // a multiple of 4) in the fewest equal chunks of whole float4s, at most 32 floats each.
  static constexpr int x_half = BLOCK_N / 4;
  static constexpr int xf = x_half <= 32 ? x_half : x_half % 8 == 0 ? x_half / 2 : x_half % 12 == 0 ? x_half / 3 : 4;
  // CLUSTER_K 4: three slots of a quarter of the accumulators (BLOCK_N / 8 floats a thread), one
  // for each peer's.
  static constexpr int x_slot = 128 * (BLOCK_N / 8) * 4;
  static constexpr int x_bytes = CLUSTER_K == 2 ? 128 * xf * 4 : CLUSTER_K == 4 ? 3 * x_slot : 0;
  // A math warpgroup's staging area, which the exchange of CLUSTER_K 2 borrows before the epilogue.
  static constexpr int c_wg = c_rows * c_pitch > x_bytes ? c_rows * c_pitch : x_bytes;
  static constexpr int c_bufs = STORE == 2 ? 2 : 1;  // STORE 2: two staging areas per math warpgroup
  static constexpr int a_off = 0;
  static constexpr int b_off = STAGES * a_stage;
  static constexpr int c_off = b_off + STAGES * b_stage;
  // SCALE_KB: two slots of a unit's scales, each [BLOCK_M][K / 128] A scales (the tile's rows) then
  // s_rows - BLOCK_M rows of [K / 128] weight scales (the blocks the tile touches), K / 128 <=
  // SCALE_KB; their barriers sfull[2], sempty[2] after the exchange's.
  static constexpr int s_rows = BLOCK_M + scale_blocks(BLOCK_N);
  static constexpr int s_slot = SCALE_KB * s_rows * 4;
  static constexpr int s_off = c_off + math_wg * c_bufs * c_wg;
  static constexpr int bar_off = s_off + 2 * s_slot;
  static constexpr int xbar_off = bar_off + 2 * STAGES * 8;  // CLUSTER_K 2, 4: xfull, xfree per math warpgroup
  static constexpr int sbar_off = xbar_off + (CLUSTER_K > 1 ? 16 * math_wg : 0);
  static constexpr int flag_off = sbar_off + (SCALE_KB ? 32 : 0);
  static constexpr int bytes = flag_off + 16;
};

// CLUSTER_K 2: this thread's exchange with its peer thread (kernel comment), chunk by chunk: send
// res[SEND, SEND + NACC / 2) into the peer's area, add the peer's into res[KEEP, KEEP + NACC / 2).
// xc counts the chunks exchanged so far (both ranks alike); xbuf, xfull, xfree are this CTA's,
// peer_buf, peer_full the peer's (at_mapa), peer its rank.
template <int SEND, int KEEP, int NACC, int XF>
__device__ __forceinline__ void exchange(float (&res)[NACC], int &xc, at_u32 peer_buf, at_u32 peer_full, at_u32 peer,
                                         at_u32 xbuf, at_u32 xfull, at_u32 xfree, int t) {
  constexpr int NCH = NACC / 2 / XF;
#pragma unroll
  for (int c = 0; c < NCH; c++, xc++) {
    // The chunk's bytes, announced by one thread; the peer's stores may land before (the phase
    // cannot complete while this arrival is pending).
    if (t == 0) at_mbar_arrive_expect_tx(xfull, 128 * XF * 4);
    at_mbar_wait(xfree, ((at_u32)xc & 1u) ^ 1u);  // the peer's area is free
#pragma unroll
    for (int j = 0; j < XF / 4; j++) {
      const int i = SEND + c * XF + 4 * j;
      at_st_async_v4(peer_buf + (j * 128 + t) * 16, res[i], res[i + 1], res[i + 2], res[i + 3], peer_full);
    }
    at_mbar_wait(xfull, (at_u32)xc & 1u);  // the peer's chunk is here
#pragma unroll
    for (int j = 0; j < XF / 4; j++) {
      const int i = KEEP + c * XF + 4 * j;
      float x0, x1, x2, x3;
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                   : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3)
                   : "r"(xbuf + (j * 128 + t) * 16)
                   : "memory");
      res[i] += x0, res[i + 1] += x1, res[i + 2] += x2, res[i + 3] += x3;
    }
    if (c + 1 < NCH) {
      // Free the area only once the loads have returned: the sums that use them are emitted before
      // the arrival (else ptxas may place the adds after it, and the peer's next chunk could land
      // before a load has read this one). The proxy fence orders these generic reads before the
      // peer's st.async writes of the next chunk. Then the warp's lane 0 frees it (xfree counts 4).
#pragma unroll
      for (int i = KEEP + c * XF; i < KEEP + (c + 1) * XF; i++) at_reg_fence(res[i]);
      at_fence_proxy_async_smem();
      __syncwarp();
      at_mbar_arrive_cluster_if(xfree, peer, (t % 32) == 0);
    }
  }
}

// CLUSTER_K 4: this thread's part of the cluster's reduction (kernel comment). Rank OWN keeps
// quarter OWN of the accumulators, res[OWN Q, (OWN + 1) Q) with Q = NACC / 4 (8-column groups
// 2 OWN Q / 8 on: whole groups, BLOCK_N a multiple of 32); it sends quarter q != OWN to rank q, into
// slot (OWN - q + 3) % 4 of rank q's area (float4 j of thread t at (j 128 + t) 16 bytes), and adds
// the three slots of its own area into its quarter, slot 0 first: the same bits whichever rank
// finishes first. xu counts the units exchanged (parity of xfull and xfree, both ranks alike);
// xbuf, xfull, xfree are this CTA's (the peers' from at_mapa).
template <int OWN, int NACC>
__device__ __forceinline__ void exchange4(float (&res)[NACC], int xu, at_u32 xbuf, at_u32 xfull, at_u32 xfree, int t) {
  constexpr int Q = NACC / 4, SLOT = 128 * Q * 4;
  static_assert(Q % 4 == 0, "quarters of whole float4s");
  // The three slots' bytes, announced by one thread; the peers' stores may land before (the phase
  // cannot complete while this arrival is pending).
  if (t == 0) at_mbar_arrive_expect_tx(xfull, 3 * SLOT);
  at_mbar_wait(xfree, ((at_u32)xu & 1u) ^ 1u);  // every peer's area is free
#pragma unroll
  for (int q = 0; q < 4; q++) {
    if (q == OWN) continue;
    const at_u32 dst = at_mapa(xbuf, (at_u32)q) + (at_u32)(((OWN - q + 3) % 4) * SLOT);
    const at_u32 dst_full = at_mapa(xfull, (at_u32)q);
#pragma unroll
    for (int j = 0; j < Q / 4; j++) {
      const int i = q * Q + 4 * j;
      at_st_async_v4(dst + (j * 128 + t) * 16, res[i], res[i + 1], res[i + 2], res[i + 3], dst_full);
    }
  }
  at_mbar_wait(xfull, (at_u32)xu & 1u);  // the three peers' quarters are here
#pragma unroll
  for (int k = 0; k < 3; k++)
#pragma unroll
    for (int j = 0; j < Q / 4; j++) {
      const int i = OWN * Q + 4 * j;
      float x0, x1, x2, x3;
      asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                   : "=f"(x0), "=f"(x1), "=f"(x2), "=f"(x3)
                   : "r"(xbuf + k * SLOT + (j * 128 + t) * 16)
                   : "memory");
      res[i] += x0, res[i + 1] += x1, res[i + 2] += x2, res[i + 3] += x3;
    }
}

// The scales of one k-block for one thread: its two rows' A scales in each wave, and up to three
// weight-scale blocks that the tile's columns touch.
// (NA: 2 x WAVES; with SWAP_AB the A scales of its BLOCK_M / 4 token columns.)
template <int NA>
struct kscales {
  float a[NA], b[3];
};

// RESCALE's units (the kernel's RESCALE paragraph): a k-block's scales, except that a zero scale
// keeps the previous units. The first k-block's, for NA row and NB block scales:
template <int NA, int NB, int NSA>
__device__ __forceinline__ void first_units(const kscales<NSA> &cur, float *ua, float *ub) {
#pragma unroll
  for (int i = 0; i < NA; i++) ua[i] = cur.a[i] != 0.f ? cur.a[i] : 1.f;
#pragma unroll
  for (int i = 0; i < NB; i++) ub[i] = cur.b[i] != 0.f ? cur.b[i] : 1.f;
}

// The next k-block's units (scales in nxt), and the factors old / new that take the accumulator
// there.
template <int NA, int NB, int NSA>
__device__ __forceinline__ void next_units(const kscales<NSA> &nxt, float *ua, float *ub, float *fa, float *fb) {
#pragma unroll
  for (int i = 0; i < NA; i++) {
    const float nu = nxt.a[i] != 0.f ? nxt.a[i] : ua[i];
    fa[i] = __fdividef(ua[i], nu), ua[i] = nu;
  }
#pragma unroll
  for (int i = 0; i < NB; i++) {
    const float nu = nxt.b[i] != 0.f ? nxt.b[i] : ub[i];
    fb[i] = __fdividef(ub[i], nu), ub[i] = nu;
  }
}

// Promotion or rescale of 8-column group g of a slice: d = src x s0 in the rows of lrow, x s1 in
// those of lrow + 8 (a row factor times the group's weight-block factor), plus d when add.
template <int NACC>
__device__ __forceinline__ void scale_group(float (&d)[NACC], const float (&src)[NACC], bool add, int g, float s0,
                                            float s1) {
  d[4 * g + 0] = src[4 * g + 0] * s0 + (add ? d[4 * g + 0] : 0.f);
  d[4 * g + 1] = src[4 * g + 1] * s0 + (add ? d[4 * g + 1] : 0.f);
  d[4 * g + 2] = src[4 * g + 2] * s1 + (add ? d[4 * g + 2] : 0.f);
  d[4 * g + 3] = src[4 * g + 3] * s1 + (add ? d[4 * g + 3] : 0.f);
}

// A slice whose 8-column groups from GB on lie in the second of two weight-scale blocks
// (TWO_BLOCKS in the kernel), every group's block known at compile time. sRB: row r's (0: lrow,
// 1: lrow + 8) factor times block B's.
template <int GB, int NACC>
__device__ __forceinline__ void scale_two(float (&d)[NACC], const float (&src)[NACC], bool add, float s00, float s10,
                                          float s01, float s11) {
#pragma unroll
  for (int g = 0; g < NACC / 4; g++) scale_group(d, src, add, g, g < GB ? s00 : s01, g < GB ? s10 : s11);
}

// scale_two<gb> for gb, one of STEP, 2 STEP, ..., 16 (16 when none is): a chain of uniform
// branches to a copy of the code per value, each with every group's block known at compile time.
template <int G, int STEP, int NACC>
__device__ __forceinline__ void scale_two_at(int gb, float (&d)[NACC], const float (&src)[NACC], bool add, float s00,
                                             float s10, float s01, float s11) {
  if constexpr (G >= 16) {
    scale_two<16>(d, src, add, s00, s10, s01, s11);
  } else {
    if (gb == G)
      scale_two<G>(d, src, add, s00, s10, s01, s11);
    else
      scale_two_at<G + STEP, STEP>(gb, d, src, add, s00, s10, s01, s11);
  }
}

// Unit u of the persistent walk: its tile's first row and column, and its range of k-blocks.
struct unit_pos {
  int tile, split, m0, n0, kb0, kb1;
};

template <int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ unit_pos locate(int u, int tiles_m, int tiles_n, int kb_total, int group, int split_k) {
  unit_pos p;
  const int tiles = tiles_m * tiles_n;
  p.split = u / tiles;
  p.tile = u - p.split * tiles;
  const int group_size = group * tiles_n;
  const int first_m = p.tile / group_size * group;
  const int group_m = min(tiles_m - first_m, group);
  const int in_group = p.tile % group_size;
  p.m0 = (first_m + in_group % group_m) * BLOCK_M;
  p.n0 = (in_group / group_m) * BLOCK_N;
  const int per = (kb_total + split_k - 1) / split_k;
  p.kb0 = min(kb_total, p.split * per);
  p.kb1 = min(kb_total, p.kb0 + per);
  return p;
}

// CLUSTER_K 2 or 4: the unit's k-blocks are shared by the cluster's PARTS CTAs in consecutive
// parts as equal as can be, the larger first (rank kr takes part kr; with two, the first half
// rounded up to rank 0). Fewer k-blocks than parts leave the last ranks none: they contribute zeros.
template <int PARTS>
__device__ __forceinline__ void k_part(unit_pos &p, int kr) {
  const int n = p.kb1 - p.kb0, q = n / PARTS, r = n % PARTS;
  p.kb0 += kr * q + min(kr, r);
  p.kb1 = p.kb0 + q + (kr < r ? 1 : 0);
}

}  // namespace at_sm90

template <int BLOCK_M, int BLOCK_N, int STAGES, int GROUP_M, int SPLIT_K, int PINGPONG, int CLUSTER_M = 1,
          int CLUSTER_N = 1, int KPIPE = 1, int RESCALE = 0, int STORE = 0, int CLUSTER_K = 1, int SWAP_AB = 0,
          int SCALE_KB = 0>
__global__ void __launch_bounds__(128 * (1 + at_sm90::math_wgs(BLOCK_M, BLOCK_N, SWAP_AB)), 1)
    gemm_a8w8_blockscale_sm90(const __grid_constant__ at_gemm_a8w8_blockscale_args args,
                              const __grid_constant__ at_tmap tmap_a, const __grid_constant__ at_tmap tmap_a_end,
                              const __grid_constant__ at_tmap tmap_b, const __grid_constant__ at_tmap tmap_b_end,
                              const __grid_constant__ at_tmap tmap_c) {
  using L = at_sm90::layout<BLOCK_M, BLOCK_N, STAGES, CLUSTER_K, STORE, SWAP_AB, SCALE_KB>;
  constexpr int MATH_WG = L::math_wg, WAVES = L::waves;
  // The wgmma's N: BLOCK_N, or with SWAP_AB the tokens (the wgmma's M side is then 64 weight rows).
  constexpr int WG_N = SWAP_AB ? BLOCK_M : BLOCK_N;
  constexpr int NACC = WG_N / 2;  // fp32 accumulators per thread for a 64 x WG_N slice
  constexpr int NSA = SWAP_AB ? BLOCK_M / 4 : 2 * WAVES;  // A scales a thread applies per k-block
  // Registers a math thread holds for accumulators: the result of every slice, and with RESCALE 0
  // one accumulator per k-block in flight.
  constexpr int ACC_REGS = RESCALE ? WAVES * NACC : (WAVES + KPIPE) * NACC;
  constexpr bool PINGPONG_ON = PINGPONG >= 1 && MATH_WG == 2;
  // RESCALE 1 on one 64 x 256 or 64 x 192 slice a warpgroup: its two column halves are batches of
  // their own (the HALVES loop).
  // (Not with three math warpgroups, which keep two batches queued while one rescales: 192 x 192
  // in halves ran 3-5% slower on the H100.)
  constexpr bool HALVES = RESCALE == 1 && WAVES == 1 && (WG_N == 256 || (WG_N == 192 && MATH_WG <= 2)) && !SWAP_AB &&
                          !PINGPONG_ON && KPIPE == 1;
  // CTAs sharing A or B tiles (multicast), and the cluster: CLUSTER_K 2 pairs two CTAs that take
  // the two halves of one tile's k-blocks.
  constexpr int CLUSTER_MN = CLUSTER_M * CLUSTER_N, CLUSTER = CLUSTER_MN * CLUSTER_K;
  constexpr int CM_ROWS = BLOCK_M * CLUSTER_M, CN_COLS = BLOCK_N * CLUSTER_N;  // a cluster tile
  // Every tile lies inside one 128-column weight-scale block (tiles start at multiples of BLOCK_N).
  constexpr bool ONE_SCALE_BLOCK = 128 % BLOCK_N == 0;
  // Every tile starts on a weight-scale block: which block each column group lies in is known here.
  constexpr bool BLOCK_ALIGNED = BLOCK_N % 128 == 0;
  // Tiles whose 64-column segments each lie in one weight-scale block (BLOCK_N 192: a tile starts
  // on a multiple of 64, column 0 or 64 of a block, so it touches two blocks): the block is picked
  // per segment.
  constexpr bool SEG64 = BLOCK_N % 64 == 0 && !ONE_SCALE_BLOCK && !BLOCK_ALIGNED;
  // Tiles that touch at most two weight-scale blocks (BLOCK_N 48, 80, 96, 112, 144, 160: a tile
  // starts at a multiple of G = gcd(BLOCK_N, 128) in its block, at most 128 - G, and ends inside
  // the next one): the 8-column groups from gb = (128 - start) / 8 on lie in the second block. gb
  // takes at most 128 / G values, and the promotion has a copy for each with the block of every
  // group known at compile time (picked per group at run time, it cost 25% at 128 x 192).
  constexpr int SCALE_G = at_sm90::gcd(BLOCK_N, 128);
  constexpr bool TWO_BLOCKS = !ONE_SCALE_BLOCK && !BLOCK_ALIGNED && !SEG64 && 128 - SCALE_G + BLOCK_N <= 256;
  constexpr int NB = ONE_SCALE_BLOCK ? 1 : SEG64 || TWO_BLOCKS ? 2 : 3;  // weight-scale blocks a tile may touch
  static_assert(NB == at_sm90::scale_blocks(BLOCK_N), "at_sm90::scale_blocks must agree with NB");
  // Named barriers: 0 is __syncthreads, 1 + w a math warpgroup's own (epilogue), and the turns.
  constexpr int BAR_TURN_0 = 5, BAR_TURN_1 = 6;  // "warpgroup 0 (1) may issue"
  // STORE 1, 2: "staging area a holds a pass" (BAR_STAGED + a) and "... is free" (BAR_FREE + a),
  // between its math warpgroup (128 threads) and the producer's three store warps (96). Area a =
  // w NBUF + b: buffer b of math warpgroup w (NBUF 2 with STORE 2, else 1).
  constexpr int NBUF = L::c_bufs, BAR_STAGED = 7, BAR_FREE = 7 + MATH_WG * NBUF, STORE_THREADS = 128 + 96;
  static_assert(SWAP_AB || BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 192 || BLOCK_M == 256,
                "BLOCK_M must be 64, 128, 192 or 256");
  static_assert(SWAP_AB == 0 || (SWAP_AB == 1 && (BLOCK_M == 16 || BLOCK_M == 32 || BLOCK_M == 64) &&
                                 (BLOCK_N == 64 || BLOCK_N == 128) && RESCALE == 0 && STORE == 0 &&
                                 CLUSTER_K == 1 && PINGPONG == 0),
                "SWAP_AB 1: BLOCK_M 16, 32 or 64 tokens, BLOCK_N 64 or 128, RESCALE 0, STORE 0, CLUSTER_K 1, PINGPONG 0");
  static_assert(RESCALE == 0 || RESCALE == 1, "RESCALE must be 0 or 1");
  static_assert(SCALE_KB == 0 || (SCALE_KB % 4 == 0 && SWAP_AB == 0 && (STORE == 0 || STORE == 3)),
                "SCALE_KB: a multiple of 4, SWAP_AB 0, STORE 0 or 3 (the producer's warp 1 copies the scales)");
  static_assert(STORE == 0 || STORE == 1 || (STORE == 2 && MATH_WG <= 2) || STORE == 3,
                "STORE must be 0, 1, 2 or 3 (2: two math warpgroups at most)");
  static_assert(STORE != 3 || (!SWAP_AB && L::epi_n % 64 == 0),
                "STORE 3 (tensor stores): SWAP_AB 0 and passes of whole 64-column boxes: BLOCK_N 64, 128 or 256 "
                "(128 or 256 with CLUSTER_K 2)");
  static_assert(RESCALE == 0 || KPIPE == 1, "RESCALE accumulates in place: one k-block in flight (KPIPE 1)");
  static_assert(MATH_WG != 3 || (RESCALE ? BLOCK_N <= 192 : (KPIPE + 1) * BLOCK_N <= 256),
                "three math warpgroups hold at most 160 registers a thread: (1 + KPIPE) x BLOCK_N / 2 <= 128");
  static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 256, "BLOCK_N must be a multiple of 16, at most 256");
  static_assert(STAGES >= 2, "STAGES must be at least 2");
  static_assert(GROUP_M >= 0 && SPLIT_K >= 0, "GROUP_M and SPLIT_K: positive, or 0 to take them from args");
  static_assert(PINGPONG >= 0 && PINGPONG <= 2, "PINGPONG must be 0, 1 or 2");
  static_assert((CLUSTER_M == 1 || CLUSTER_M == 2) && (CLUSTER_N == 1 || CLUSTER_N == 2), "CLUSTER_M, CLUSTER_N: 1 or 2");
  static_assert(KPIPE == 1 || (KPIPE == 2 && WAVES == 1 && !PINGPONG_ON), "KPIPE 2 needs one slice and no turns");
  static_assert(CLUSTER_K != 2 || (SPLIT_K == 1 && (STORE == 0 || STORE == 3) && WAVES == 1),
                "CLUSTER_K 2 (split K in a cluster): SPLIT_K 1, STORE 0 or 3, BLOCK_M <= 128");
  static_assert(CLUSTER_K != 4 ||
                    (SPLIT_K == 1 && STORE == 0 && WAVES == 1 && CLUSTER_MN == 1 && !SWAP_AB && BLOCK_N % 32 == 0),
                "CLUSTER_K 4 (split K four ways in a cluster): SPLIT_K 1, STORE 0, BLOCK_M <= 128, CLUSTER_M and "
                "CLUSTER_N 1, SWAP_AB 0, BLOCK_N a multiple of 32");
  static_assert(CLUSTER_K == 1 || CLUSTER_K == 2 || CLUSTER_K == 4, "CLUSTER_K must be 1, 2 or 4");
  static_assert(MATH_WG != 2 || (RESCALE ? WAVES * BLOCK_N <= 256 : (WAVES + KPIPE) * BLOCK_N <= 416),
                "two math warpgroups hold at most 232 registers a thread: (WAVES + KPIPE) x BLOCK_N / 2 <= 208, "
                "or WAVES x BLOCK_N / 2 <= 128 with RESCALE");

  extern __shared__ __align__(1024) unsigned char smem[];
  const at_u32 base = at_smem_addr(smem);
  const at_u32 full0 = base + L::bar_off, empty0 = full0 + STAGES * 8;
  int *const last_flag = (int *)(smem + L::flag_off);  // per math warpgroup: "this split arrived last"
  // Launch parameters: the instantiation's own, or (0) the candidate's, passed in args.
  const int group_m = GROUP_M ? GROUP_M : args.group_m, split_k = SPLIT_K ? SPLIT_K : args.split_k;

  const int tid = threadIdx.x;
  if (tid == 0) {
    // Swizzled tiles need a 1024-byte aligned base, which the declaration asks for.
    if (blockDim.x != L::threads || at_dynamic_smem_size() < (at_u32)L::bytes || (base & 1023)) __trap();
    if (at_cluster_size() != CLUSTER || group_m < 1 || split_k < 1) __trap();
    for (int s = 0; s < STAGES; s++) {
      at_mbar_init(full0 + s * 8, 1);
      at_mbar_init(empty0 + s * 8, 4 * MATH_WG * CLUSTER_MN);
    }
    // CLUSTER_K 2, per math warpgroup: xfull (one local arrival with the chunk's bytes, which the
    // peer's stores complete), xfree (the peer's four warps). CLUSTER_K 4: the same with the three
    // peers' slots' bytes, and their twelve warps.
    for (int i = 0; i < (CLUSTER_K > 1 ? MATH_WG : 0); i++) {
      at_mbar_init(base + L::xbar_off + i * 16, 1);
      at_mbar_init(base + L::xbar_off + i * 16 + 8, CLUSTER_K == 4 ? 12 : 4);
    }
    // SCALE_KB, per slot: sfull (the scale loader's arrive.expect_tx; its bulk copies complete the
    // bytes), sempty (lane 0 of every math warp, once the unit's last k-block is promoted).
    for (int q = 0; q < (SCALE_KB ? 2 : 0); q++) {
      at_mbar_init(base + L::sbar_off + q * 8, 1);
      at_mbar_init(base + L::sbar_off + 16 + q * 8, 4 * MATH_WG);
    }
    at_mbar_init_fence();
    at_tma_prefetch(&tmap_a);
    at_tma_prefetch(&tmap_b);
    if (args.m % (BLOCK_M / CLUSTER_N)) at_tma_prefetch(&tmap_a_end);
    if (args.n % (BLOCK_N / CLUSTER_M)) at_tma_prefetch(&tmap_b_end);
    if (L::tma_store) at_tma_prefetch(&tmap_c);
  }
  // No remote arrival or multicast into a barrier before it is initialised (its init fenced above).
  if (CLUSTER > 1)
    at_cluster_sync_relaxed();
  else
    __syncthreads();

  // Programmatic dependent launch (docs/runtime.md): launched with it, this grid may start while the
  // stream's preceding kernel still runs. Nothing that kernel may write (any global memory) is
  // touched before at_griddep_wait; the setup above touches none. Only then may the next kernel be
  // scheduled, which waits for this grid in turn: launching it before this wait could let it start
  // while the kernel before this one still runs. Launched without the attribute, both return at once.
  // A tail launched with late_wait (gemm_a8w8_blockscale_args.h) reads its inputs at once and waits
  // only before it exits.
  if (!args.late_wait) at_griddep_wait();
  at_griddep_launch_dependents();

  const int M = args.m, N = args.n, KB = args.k / 128;
  // SCALE_KB: the unit's scales come into shared memory by two bulk copies (the tile's rows of A's
  // scales and of the weights', each contiguous), which need whole 16-byte pieces; otherwise (and
  // for K / 128 > SCALE_KB) the math threads read them from global memory through the same
  // generic loads (correct; 2-3% slower than the __ldg of SCALE_KB 0 at K = 14336, H100).
  const bool sc_smem = SCALE_KB > 0 && KB <= SCALE_KB && KB % 4 == 0 && ((args.a_scale | args.b_scale) & 15) == 0;
  const int nblocks = (N + 127) / 128;
  const long ldc = args.ldc ? args.ldc : N;  // C's row stride: N, or the whole C's for a tail
  // Tiles of the cluster (one CTA's tile without clusters) are what the walk hands out, up to
  // unit_end when the runtime leaves the last ones to a tail launch.
  const int tiles_m = (M + CM_ROWS - 1) / CM_ROWS, tiles_n = (N + CN_COLS - 1) / CN_COLS;
  const int tiles = tiles_m * tiles_n;
  const int units = args.unit_end > 0 && args.unit_end < tiles * split_k ? args.unit_end : tiles * split_k;
  const int wg = tid / 128;
  const int rank = CLUSTER > 1 ? (int)at_cluster_rank() : 0;
  // Rank r: k part kr = r / CLUSTER_MN (CLUSTER_K 2 or 4), and (rm, rn) in the cluster tile from
  // r % CLUSTER_MN. The CTAs of one k part (ranks kbase + [0, CLUSTER_MN)) share tiles by multicast
  // among themselves.
  const int mn_rank = rank % CLUSTER_MN, kr = CLUSTER_K > 1 ? rank / CLUSTER_MN : 0, kbase = kr * CLUSTER_MN;
  const int rm = mn_rank % CLUSTER_M, rn = mn_rank / CLUSTER_M;
  const int first_unit = blockIdx.x / CLUSTER, unit_step = gridDim.x / CLUSTER;
  // STORE 1 or 2 without split-K: the producer's warps 1-3 copy the staged results out while the math
  // warpgroups go on with the next tile (split-K keeps the math warpgroups' own store: whether a
  // split stores is known only after its count).
  const bool offload = (STORE == 1 || STORE == 2) && split_k == 1;
  constexpr int EPI_N = L::epi_n, CHUNKS = EPI_N / 8;  // 16-byte chunks per staged row
  constexpr bool TMA_STORE = L::tma_store;
  static_assert(!TMA_STORE || (L::c_off % 1024 == 0 && L::c_wg % 1024 == 0 && EPI_N / 64 * 8192 <= L::c_wg),
                "TMA stores: staging areas 1024-byte aligned, a pass's 64 x 64 boxes inside one");

  if (wg == 0) {
    // ---- producer ----
    // The register file (64 K) is shared out: 40 + 2 x 232 per lane with two math warpgroups,
    // 32 + 3 x 160 with three.
    if (MATH_WG == 2) at_setmaxnreg_dec<40>();
    if (MATH_WG == 3) at_setmaxnreg_dec<32>();
    if (tid == 0) {
      // This CTA's share of the A tile (rows of its cluster row) and of the B tile, and who else
      // receives them.
      constexpr int A_ROWS = BLOCK_M / CLUSTER_N, B_ROWS = BLOCK_N / CLUSTER_M;
      const unsigned short a_mask = (unsigned short)(((1u << rm) | (1u << (rm + CLUSTER_M * (CLUSTER_N - 1)))) << kbase);
      const unsigned short b_mask = (unsigned short)((((1u << CLUSTER_M) - 1u) << (CLUSTER_M * rn)) << kbase);
      // One row of (cluster) tiles: each weight tile is read by this CTA (or its multicast) alone, so it is loaded
      // with an evict_first policy (the weights stream through L2 once; what stays is the rest).
      // Measured on the H100 (docs/perf.md): decode-sized calls 3-9% faster; with several rows of
      // tiles, which read each weight tile once per row, up to 9% slower, hence the rule.
      const bool b_once = tiles_m == 1;
      const at_u64 pol_b = at_l2_evict_first();
      int it = 0;
      for (int u = first_unit; u < units; u += unit_step) {
        at_sm90::unit_pos p = at_sm90::locate<CM_ROWS, CN_COLS>(u, tiles_m, tiles_n, KB, group_m, split_k);
        if (CLUSTER_K > 1) at_sm90::k_part<CLUSTER_K>(p, kr);
        // This CTA's A and B tiles, and its shares of them. Only rows inside A and B are fetched
        // (see "Tails" at the top): a share wholly inside by the tensor map of whole boxes, the one
        // share that ends at M (N) by the map whose box is the rows left there, one past it not at
        // all; every CTA that shares a tile expects the bytes of its rows inside.
        const int a_tile = p.m0 + rm * BLOCK_M, b_tile = p.n0 + rn * BLOCK_N;
        const int a_row = a_tile + rn * A_ROWS, b_row = b_tile + rm * B_ROWS;
        const int a_left = M - a_row, b_left = N - b_row;
        const at_tmap *const map_a = a_left >= A_ROWS ? &tmap_a : &tmap_a_end;
        const at_tmap *const map_b = b_left >= B_ROWS ? &tmap_b : &tmap_b_end;
        const at_u32 tx = 128u * (at_u32)(min(max(M - a_tile, 0), BLOCK_M) + min(max(N - b_tile, 0), BLOCK_N));
        const at_u32 a_dst = base + L::a_off + rn * A_ROWS * 128, b_dst = base + L::b_off + rm * B_ROWS * 128;
        for (int kb = p.kb0; kb < p.kb1; kb++, it++) {
          const int s = it % STAGES;
          const at_u32 phase = (at_u32)(it / STAGES) & 1u;
          at_mbar_wait(empty0 + s * 8, phase ^ 1u);
          at_mbar_arrive_expect_tx(full0 + s * 8, tx);
          if (a_left <= 0)
            ;
          else if (CLUSTER_N > 1)
            at_tma_load_2d_mc(a_dst + s * L::a_stage, map_a, kb * 128, a_row, full0 + s * 8, a_mask);
          else
            at_tma_load_2d(a_dst + s * L::a_stage, map_a, kb * 128, a_row, full0 + s * 8);
          if (b_left <= 0)
            ;
          else if (CLUSTER_M > 1 && b_once)
            at_tma_load_2d_mc_pol(b_dst + s * L::b_stage, map_b, kb * 128, b_row, full0 + s * 8, b_mask, pol_b);
          else if (CLUSTER_M > 1)
            at_tma_load_2d_mc(b_dst + s * L::b_stage, map_b, kb * 128, b_row, full0 + s * 8, b_mask);
          else if (b_once)
            at_tma_load_2d_pol(b_dst + s * L::b_stage, map_b, kb * 128, b_row, full0 + s * 8, pol_b);
          else
            at_tma_load_2d(b_dst + s * L::b_stage, map_b, kb * 128, b_row, full0 + s * 8);
        }
      }
      // The tail: wait until every consumer of the multicast group, in this CTA and the others, has
      // released the last STAGES k-blocks, so that no remote arrival into this CTA's barriers is
      // left when it exits (no cluster barrier at exit: its release would make every thread wait
      // for its stores).
      for (int i = 0; i < (CLUSTER_MN > 1 ? STAGES : 0); i++, it++)
        at_mbar_wait(empty0 + (it % STAGES) * 8, ((at_u32)(it / STAGES) & 1u) ^ 1u);
    }
    if (SCALE_KB && sc_smem && tid == 32) {
      // The scale loader (warp 1, idle: SCALE_KB has no store warps). For every unit with k-blocks,
      // once the math warps have released the slot's previous unit, it copies this CTA's tile's
      // rows of A's scales (rows past M not) and its weight-scale blocks' rows into slot su % 2.
      // Both are contiguous in the op's row-major layout: one bulk copy each, no matter the
      // unit's k range. Up to two units ahead of the math warps: a unit's copy queues behind the
      // stages already requested, and lands during the unit before.
      const float *const As = (const float *)args.a_scale;
      const float *const Bs = (const float *)args.b_scale;
      int su = 0;
      for (int u = first_unit; u < units; u += unit_step) {
        at_sm90::unit_pos p = at_sm90::locate<CM_ROWS, CN_COLS>(u, tiles_m, tiles_n, KB, group_m, split_k);
        if (CLUSTER_K > 1) at_sm90::k_part<CLUSTER_K>(p, kr);
        if (p.kb0 >= p.kb1) continue;  // the math warps skip it too
        const int m0 = p.m0 + rm * BLOCK_M, nb0 = (p.n0 + rn * BLOCK_N) / 128;
        const int rows = min(max(M - m0, 0), BLOCK_M), brows = min(max(nblocks - nb0, 0), NB);
        const at_u32 sfull = base + L::sbar_off + (su & 1) * 8, sempty = sfull + 16;
        const at_u32 dst = base + L::s_off + (su & 1) * L::s_slot;
        at_mbar_wait(sempty, ((at_u32)(su >> 1) & 1u) ^ 1u);
        at_mbar_arrive_expect_tx(sfull, (at_u32)((rows + brows) * KB * 4));
        if (rows > 0) at_bulk_load(dst, As + (long)m0 * KB, (at_u32)(rows * KB * 4), sfull);
        if (brows > 0) at_bulk_load(dst + BLOCK_M * KB * 4, Bs + (long)nb0 * KB, (at_u32)(brows * KB * 4), sfull);
        su++;
      }
    }
    if (offload && tid >= 32) {
      // The store warps: for every pass that a math warpgroup stages (in the order the math
      // warpgroups stage them: unit, slice, column pass, warpgroup), copy the 64 staged rows out
      // in 16-byte stores, rows >= M and columns >= N skipped. The pass's first row and column
      // are in the padding of its staging area's row 0.
      const int st = tid - 32;
#pragma unroll 1
      for (int i = 0; i < MATH_WG * NBUF; i++) at_named_arrive(BAR_FREE + i, STORE_THREADS);  // all free at first
      unsigned short *const C = (unsigned short *)args.c;
      int passes = 0;
      for (int u = first_unit; u < units; u += unit_step) passes += WAVES * (BLOCK_N / EPI_N) * MATH_WG;
#pragma unroll 1
      for (int i = 0; i < passes; i++) {
        const int w = i % MATH_WG, area = w * NBUF + (i / MATH_WG) % NBUF;  // the warpgroup's passes alternate
        const unsigned char *const src = smem + L::c_off + area * L::c_wg;
        at_named_barrier(BAR_STAGED + area, STORE_THREADS);
        const int row0 = *(const int *)(src + EPI_N * 2), col0 = *(const int *)(src + EPI_N * 2 + 4);
#pragma unroll 4
        for (int c = st; c < 64 * CHUNKS; c += 96) {
          const int r = c / CHUNKS, cc = c % CHUNKS;
          const int grow = row0 + r, gcol = col0 + cc * 8;
          if (grow < M && gcol < N)
            *(uint4 *)(C + grow * ldc + gcol) = *(const uint4 *)(src + r * L::c_pitch + cc * 16);
        }
        at_named_arrive(BAR_FREE + area, STORE_THREADS);
      }
    }
    return;
  }

  // ---- math warpgroup w: rows 128 v + 64 w + [0, 64) of the tile in wave v ----
  if (MATH_WG == 2) at_setmaxnreg_inc<232>();
  if (MATH_WG == 3) at_setmaxnreg_inc<160>();
  const int w = __shfl_sync(0xffffffffu, wg - 1, 0);  // warp-uniform to ptxas: wgmmas sit in its branches
  const int t = tid % 128, warp = t / 32, lane = t % 32;
  // AHEAD2: the KPIPE 1 loop loads the scales two k-blocks ahead (why: the top of the file, on
  // scales), with one 64-row slice per math warpgroup and one or two of them. Three (160 registers
  // a thread) spilled (192 x 192 RESCALE: 12 bytes instead of 4), and so did two slices (256-row
  // tiles: 256 x 112 up to 116 bytes instead of 36, 256 x 128 12 instead of none).
  constexpr bool AHEAD2 = KPIPE == 1 && MATH_WG < 3 && WAVES == 1;
  // KP2_AHEAD2: the KPIPE 2 loop keeps one set of scales per accumulator, loaded two waits
  // ahead, on the tiles where that gained (the top of the file, on scales).
  constexpr bool KP2_AHEAD2 =
      KPIPE == 2 && MATH_WG == 2 && BLOCK_N >= 128 && SCALE_KB == 0 && CLUSTER_K == 1 && !SWAP_AB;
  // Zero, which ptxas cannot prove: added to the weight-scale pointers with AHEAD2, it keeps those
  // scales (the same in every lane) in per-thread registers. Loaded two k-blocks ahead, ptxas
  // otherwise moved each into a uniform register as soon as it was loaded (R2UR), which waited for
  // the load and cost 1% (docs/perf.md, "The k-block count").
  const int zero = AHEAD2 ? __shfl_xor_sync(0xffffffffu, lane, 1) - (lane ^ 1) : 0;
  const int lrow = warp * 16 + lane / 4;  // this thread's rows in a 64-row slice: lrow, lrow + 8
  const int colq = 2 * (lane % 4);        // and its columns in each 8-column group
  const float *const As = (const float *)args.a_scale;
  const float *const Bs = (const float *)args.b_scale;
  unsigned char *const stage_c0 = smem + L::c_off + w * NBUF * L::c_wg;
  // it: k-blocks taken (stage and phase); xc: exchange chunks with CLUSTER_K 2, units exchanged with 4
  // (parity of xfull and xfree); pc: passes staged for the store warps (STORE 2: which of the two areas).
  // su: units whose scales were taken (SCALE_KB: parity of sfull and sempty).
  int it = 0, xc = 0, pc = 0, su = 0;
  const at_u32 peer = (at_u32)(rank + (kr ? -CLUSTER_MN : CLUSTER_MN));  // CLUSTER_K 2: same (rm, rn), other k half

  for (int u = first_unit; u < units; u += unit_step) {
    at_sm90::unit_pos p = at_sm90::locate<CM_ROWS, CN_COLS>(u, tiles_m, tiles_n, KB, group_m, split_k);
    if (CLUSTER_K > 1) at_sm90::k_part<CLUSTER_K>(p, kr);
    p.m0 += rm * BLOCK_M, p.n0 += rn * BLOCK_N;  // this CTA's tile of the cluster tile
    // The tile's result; with RESCALE also the wgmma accumulator, in the units of the k-block it
    // last took (see rescale).
    float res[WAVES][NACC];
    if (!RESCALE || p.kb0 >= p.kb1) {
#pragma unroll
      for (int v = 0; v < WAVES; v++)
#pragma unroll
        for (int i = 0; i < NACC; i++) res[v][i] = 0.f;
    }

    // Scale rows of this thread, clamped into the matrix (rows past M are dropped at the store).
    const float *as[2 * WAVES];
    // SWAP_AB: this thread's token columns 8 g + colq + e (A scale a[2 g + e]), read from one row
    // pointer at a stride of KB; those past M are not read (their sums are never stored).
    const float *const as_sw = As + (long)min(p.m0 + colq, M - 1) * KB;
    unsigned tok_in = 0;
    if constexpr (SWAP_AB) {
#pragma unroll
      for (int i = 0; i < NSA; i++) tok_in |= (unsigned)(p.m0 + 8 * (i / 2) + colq + (i & 1) < M) << i;
    } else {
#pragma unroll
      for (int v = 0; v < WAVES; v++) {
        const int r = p.m0 + v * 128 + w * 64 + lrow;
        as[2 * v] = As + (long)min(r, M - 1) * KB;
        as[2 * v + 1] = As + (long)min(r + 8, M - 1) * KB;
        if (SCALE_KB && sc_smem) {
          // The same rows in the buffer (rows past M: the last row inside, or any for a tile wholly
          // past M, whose rows are not stored).
          const float *const sa = (const float *)(smem + L::s_off + (su & 1) * L::s_slot);
          as[2 * v] = sa + (long)max(min(r, M - 1) - p.m0, 0) * KB;
          as[2 * v + 1] = sa + (long)max(min(r + 8, M - 1) - p.m0, 0) * KB;
        }
      }
    }
    // SWAP_AB: the warpgroup's 64 weight rows lie in one weight-scale block (they start on a
    // multiple of 64).
    const int nb0 = SWAP_AB ? (p.n0 + 64 * w) / 128 : p.n0 / 128;
    const float *bs[NB];
#pragma unroll
    for (int i = 0; i < NB; i++) {
      bs[i] = Bs + (long)min(nb0 + i, nblocks - 1) * KB + zero;
      if (SCALE_KB && sc_smem)
        bs[i] = (const float *)(smem + L::s_off + (su & 1) * L::s_slot + BLOCK_M * KB * 4) +
                (long)max(min(nb0 + i, nblocks - 1) - nb0, 0) * KB + zero;
    }
    const int ncol0 = BLOCK_ALIGNED ? 0 : p.n0 & 127;  // the tile's first column inside its weight-scale block
    const bool one_block = ONE_SCALE_BLOCK || ncol0 + BLOCK_N <= 128;  // uniform over the tile
    if (SEG64 && (ncol0 & 63)) __trap();  // a segment would straddle two blocks
    // The weight-scale block of 8-column group g (compile-time when BLOCK_N divides 128 or 128 it).
    auto blk_of = [&](int g) { return ONE_SCALE_BLOCK ? 0 : (ncol0 + 8 * g) >> 7; };
    auto pick = [&](const float(&b)[3], int g) {
      const int blk = blk_of(g);
      return blk == 0 ? b[0] : NB == 2 || blk == 1 ? b[1] : b[2];
    };

    // The scales of the first k-block; each iteration then loads the next one's, so that their
    // latency hides behind a k-block of tensor work.
    at_sm90::kscales<NSA> cur, nxt;
    auto load_scales = [&](int kb, at_sm90::kscales<NSA> &sc) {
      if constexpr (SWAP_AB) {
#pragma unroll
        for (int i = 0; i < NSA; i++) sc.a[i] = tok_in >> i & 1u ? __ldg(as_sw + (long)(8 * (i / 2) + (i & 1)) * KB + kb) : 0.f;
      } else {
#pragma unroll
        for (int i = 0; i < 2 * WAVES; i++) sc.a[i] = SCALE_KB ? as[i][kb] : __ldg(as[i] + kb);
      }
#pragma unroll
      for (int i = 0; i < NB; i++) sc.b[i] = SCALE_KB ? bs[i][kb] : __ldg(bs[i] + kb);
    };
    // A math warp's release of a stage: its lane 0 arrives on the stage's empty barrier in every
    // CTA of the cluster (their producers may all write into this CTA's stage).
    auto release = [&](int s) {
      if (CLUSTER_MN == 1) {
        at_mbar_arrive_if(empty0 + s * 8, lane == 0);
      } else {
#pragma unroll
        for (int c = 0; c < CLUSTER_MN; c++) at_mbar_arrive_cluster_if(empty0 + s * 8, kbase + c, lane == 0);
      }
    };
    // Shared-memory descriptors of stage s: the wgmma's A, 64 rows (slice v of this warpgroup's
    // token rows; with SWAP_AB its 64 weight rows), and its B (the weight tile; with SWAP_AB the
    // token tile).
    auto desc_a = [&](int s, int v) {
      return at_wgmma_desc_sw128(SWAP_AB ? base + L::b_off + s * L::b_stage + w * 64 * 128
                                         : base + L::a_off + s * L::a_stage + (v * 128 + w * 64) * 128);
    };
    auto desc_b = [&](int s) {
      return at_wgmma_desc_sw128(SWAP_AB ? base + L::a_off + s * L::a_stage : base + L::b_off + s * L::b_stage);
    };
    // Multiply slice v by a row factor (fa) times a weight-block factor (fb), per 8-column group:
    // with one weight-scale block two products per call.
    auto scale_slice = [&](float(&d)[NACC], const float(&src)[NACC], bool add, int v, const float *fa,
                           const float(&fb)[3]) {
      if (one_block) {
        const float s0 = fa[2 * v] * fb[0], s1 = fa[2 * v + 1] * fb[0];
#pragma unroll
        for (int g = 0; g < BLOCK_N / 8; g++) {
          at_sm90::scale_group(d, src, add, g, s0, s1);
        }
      } else if constexpr (SEG64) {
        float s0[BLOCK_N / 64], s1[BLOCK_N / 64];
#pragma unroll
        for (int q = 0; q < BLOCK_N / 64; q++) {
          const float sb = pick(fb, 8 * q);
          s0[q] = fa[2 * v] * sb, s1[q] = fa[2 * v + 1] * sb;
        }
#pragma unroll
        for (int g = 0; g < BLOCK_N / 8; g++) {
          at_sm90::scale_group(d, src, add, g, s0[g / 8], s1[g / 8]);
        }
      } else if constexpr (TWO_BLOCKS) {
        const float s00 = fa[2 * v] * fb[0], s10 = fa[2 * v + 1] * fb[0];
        const float s01 = fa[2 * v] * fb[1], s11 = fa[2 * v + 1] * fb[1];
        const int gb = (128 - ncol0) >> 3;  // the first 8-column group in the second block
        at_sm90::scale_two_at<SCALE_G / 8, SCALE_G / 8>(gb, d, src, add, s00, s10, s01, s11);
      } else {
#pragma unroll
        for (int g = 0; g < BLOCK_N / 8; g++) {
          const float sb = pick(fb, g);
          const float s0 = fa[2 * v] * sb, s1 = fa[2 * v + 1] * sb;
          at_sm90::scale_group(d, src, add, g, s0, s1);
        }
      }
    };
    // Promote a k-block of slice v: result += acc * As[row][kb] * Bs[col / 128][kb].
    // With SWAP_AB the accumulator's rows are weight rows (one block: b[0]) and its columns tokens:
    // a[4 g + e] is token 8 g + colq + (e & 1).
    auto promote = [&](float(&a)[NACC], int v, const at_sm90::kscales<NSA> &sc) {
      if constexpr (SWAP_AB) {
#pragma unroll
        for (int g = 0; g < NACC / 4; g++) {
          const float f0 = sc.a[2 * g] * sc.b[0], f1 = sc.a[2 * g + 1] * sc.b[0];
          res[0][4 * g + 0] += a[4 * g + 0] * f0;
          res[0][4 * g + 1] += a[4 * g + 1] * f1;
          res[0][4 * g + 2] += a[4 * g + 2] * f0;
          res[0][4 * g + 3] += a[4 * g + 3] * f1;
        }
      } else {
        scale_slice(res[v], a, true, v, sc.a, sc.b);
      }
    };

    // SCALE_KB: the unit's scales are in the buffer (generic loads: shared or global memory).
    const bool unit_sc = SCALE_KB && sc_smem && p.kb0 < p.kb1;
    if (unit_sc) at_mbar_wait(base + L::sbar_off + (su & 1) * 8, (at_u32)(su >> 1) & 1u);
    if (p.kb0 < p.kb1) load_scales(p.kb0, nxt);
    // The one-k-block loops (KPIPE 1, the halves among them) with AHEAD2: nx2 holds the scales
    // two k-blocks ahead of cur (kb + 1 before the loop).
    at_sm90::kscales<NSA> nx2;
    if (AHEAD2 && p.kb0 + 1 < p.kb1) load_scales(p.kb0 + 1, nx2);
    // cur takes k-block kb's scales, nxt kb + 1's (loaded a k-block earlier, or two with AHEAD2);
    // the next load goes out.
    auto shift_scales = [&](int kb) {
      cur = nxt;
      if constexpr (AHEAD2) {
        nxt = nx2;
        if (kb + 2 < p.kb1) load_scales(kb + 2, nx2);
      } else {
        if (kb + 1 < p.kb1) load_scales(kb + 1, nxt);
      }
    };
    if constexpr (KPIPE == 2) {
      // Two k-blocks in flight: k-block kb + 1 is issued into the other accumulator before kb is
      // waited for (wait_group 1), so this warpgroup's next batch is queued on the tensor cores
      // while it promotes. The two accumulators alternate in a loop unrolled by two, so that
      // neither is touched while its wgmmas are in flight (ptxas would serialize them).
      float acc[NACC], acc2[NACC];
      auto issue = [&](float(&a)[NACC], int i) {
        const int s = i % STAGES;
        at_mbar_wait(full0 + s * 8, (at_u32)(i / STAGES) & 1u);
        const at_u64 db = desc_b(s), da = desc_a(s, 0);
#pragma unroll
        for (int j = 0; j < NACC; j++) at_reg_fence(a[j]);
        at_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<WG_N>::mma(a, da + 2 * ks, db + 2 * ks, ks);
        at_wgmma_commit();
      };
      // The scales (why two ways: the top of the file). KP2_AHEAD2: nxt holds those of acc's
      // k-block and sc2 acc2's, each set loaded as soon as its previous k-block is promoted, two
      // waits before its own promotion. Otherwise cur holds the k-block being promoted, copied
      // from nxt one wait before (the copy waits for the load), and nxt takes the next load.
      at_sm90::kscales<NSA> sc2;
      at_sm90::kscales<NSA> &s_acc = KP2_AHEAD2 ? nxt : cur, &s_acc2 = KP2_AHEAD2 ? sc2 : cur;
      // The older batch (k-block `it`) has completed: release its stage, promote it with sc.
      auto finish = [&](float(&a)[NACC], const at_sm90::kscales<NSA> &sc) {
#pragma unroll
        for (int j = 0; j < NACC; j++) at_reg_fence(a[j]);
        release(it % STAGES);
        promote(a, 0, sc);
        if (!KP2_AHEAD2) cur = nxt;
        it++;
      };
      // Every join point of this control flow has the same batches in flight on both of its
      // sides (none, or acc's alone), so ptxas needs no wait of its own in a branch (C7518).
      const int n = p.kb1 - p.kb0, last = p.kb1 - 1;
      if (n > 0) {
        int j = 0;  // k-block p.kb0 + j is in flight in acc
        // The first batch before the scales' copy or the next load: the copy waits for the load
        // of the unit's first scales, just issued, which the batch then runs under.
        issue(acc, it);
        if (KP2_AHEAD2) load_scales(min(p.kb0 + 1, last), sc2);
        else cur = nxt;
        for (; j + 2 < n; j += 2) {
          if (!KP2_AHEAD2) load_scales(p.kb0 + j + 1, nxt);
          issue(acc2, it + 1);
          at_wgmma_wait<1>();
          finish(acc, s_acc);
          load_scales(p.kb0 + j + 2, nxt);
          issue(acc, it + 1);
          at_wgmma_wait<1>();
          finish(acc2, s_acc2);
          if (KP2_AHEAD2) load_scales(min(p.kb0 + j + 3, last), sc2);
        }
        if (n - j == 2) {
          if (!KP2_AHEAD2) load_scales(p.kb0 + j + 1, nxt);
          issue(acc2, it + 1);
          at_wgmma_wait<1>();
          finish(acc, s_acc);
          at_wgmma_wait<0>();
          finish(acc2, s_acc2);
        } else {
          at_wgmma_wait<0>();
          finish(acc, s_acc);
        }
      }
    } else if constexpr (HALVES) {
      // RESCALE 1 with one 64 x 256 or 64 x 192 slice: its two column halves (with 256, one
      // weight-scale block each; with 192 each group's 64-column segment picks its block, as in
      // scale_slice) are batches of their own (wgmma m64n128k32, m64n96k32), so that the
      // warpgroup rescales one half while a batch of the other runs, and frees the stage as soon
      // as both halves of its k-block have completed. (One batch of the whole slice, waited for
      // before the rescale, left the tensor cores to the other warpgroup while this one
      // rescaled; the halves with the stage freed only after the next k-block's first half was
      // issued gained 1% on the H100, freed first 4-6%: docs/perf.md, "The in-place rescale in
      // two halves".) The units are those of the RESCALE loop below (at_sm90::next_units).
      constexpr int HN = NACC / 2, HU = 2;
      float(&h0)[HN] = *reinterpret_cast<float(*)[HN]>(&res[0][0]);
      float(&h1)[HN] = *reinterpret_cast<float(*)[HN]>(&res[0][HN]);
      float ua[2], ub[3], fa[2] = {1.f, 1.f}, fb[3] = {1.f, 1.f, 1.f};
      // Half h of k-block number i (its stage waited for with the first half).
      auto issue_half = [&](float(&d)[HN], int h, int i, int keep) {
        const int s = i % STAGES;
        if (h == 0) at_mbar_wait(full0 + s * 8, (at_u32)(i / STAGES) & 1u);
        const at_u64 da = desc_a(s, 0), db = desc_b(s) + (at_u64)(h * (WG_N / 2 * 128 / 16));  // rows h WG_N / 2 on
#pragma unroll
        for (int j = 0; j < HN; j++) at_reg_fence(d[j]);
        at_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<WG_N / 2>::mma(d, da + 2 * ks, db + 2 * ks, keep | ks);
        at_wgmma_commit();
      };
      auto rescale_half = [&](float(&d)[HN], int h) {
#pragma unroll
        for (int j = 0; j < HN; j++) at_reg_fence(d[j]);
        if constexpr (SEG64) {
          // Group g of the half is the tile's 8-column group HN / 4 h + g, in 64-column segment q.
          float s0[3], s1[3];
#pragma unroll
          for (int q = 0; q < 3; q++) {
            const float sb = pick(fb, 8 * q);
            s0[q] = fa[0] * sb, s1[q] = fa[1] * sb;
          }
#pragma unroll
          for (int g = 0; g < HN / 4; g++) {
            const int q = (HN / 4 * h + g) / 8;
            at_sm90::scale_group(d, d, false, g, s0[q], s1[q]);
          }
        } else {
          const float s0 = fa[0] * fb[h], s1 = fa[1] * fb[h];
#pragma unroll
          for (int g = 0; g < HN / 4; g++) at_sm90::scale_group(d, d, false, g, s0, s1);
        }
      };
      // The tile's two weight-scale blocks (NB is 3 for 256 columns, which start on a block).
      auto next_units = [&]() { at_sm90::next_units<2, 2>(nxt, ua, ub, fa, fb); };
      if (p.kb0 < p.kb1) {
        issue_half(h0, 0, it, 0);
        issue_half(h1, 1, it, 0);
        shift_scales(p.kb0);
        at_sm90::first_units<2, 2>(cur, ua, ub);
        ub[2] = 1.f;
        at_wgmma_wait<0>();
        // Per k-block: wait for its first half, rescale it while the second half runs, wait for
        // the second (the stage is free), issue the next k-block's first half, rescale the second
        // half while that runs, issue the next second half. ptxas serializes every wgmma (C7514)
        // when a register is rescaled while a batch issued before a loop's back edge is in flight
        // (within an iteration it tracks the batches), so HU k-blocks per iteration, none in
        // flight across the back edge: the first of them rescales its first half with no batch
        // of its own warpgroup running.
        int kb = p.kb0;
        for (; kb + HU < p.kb1; kb += HU) {
#pragma unroll
          for (int u = 0; u < HU; u++) {
            next_units();
            if (u > 0) at_wgmma_wait<1>();
            rescale_half(h0, 0);
            at_wgmma_wait<0>();
            release(it % STAGES);
            issue_half(h0, 0, it + 1, 1);
            rescale_half(h1, 1);
            issue_half(h1, 1, it + 1, 1);
            shift_scales(kb + u + 1);
            it++;
          }
          at_wgmma_wait<0>();
        }
        for (; kb + 1 < p.kb1; kb++, it++) {
          next_units();
          rescale_half(h0, 0);
          release(it % STAGES);
          issue_half(h0, 0, it + 1, 1);
          rescale_half(h1, 1);
          issue_half(h1, 1, it + 1, 1);
          shift_scales(kb + 1);
          at_wgmma_wait<0>();
        }
#pragma unroll
        for (int j = 0; j < NACC; j++) at_reg_fence(res[0][j]);
        release(it % STAGES);
        it++;
        // Back from the last k-block's units.
        scale_slice(res[0], res[0], false, 0, ua, ub);
      }
    } else {
      // RESCALE: the accumulator holds sum over the k-blocks taken of As * Bs * (A B) divided by
      // the current units ua[row] * ub[block]; before the next k-block adds its raw products, it is
      // multiplied by (old units / new units), and at the end by the units. The units are the
      // k-block's scales, except that a zero scale keeps the previous units (a block quantized
      // with scale 0 is all zeros, whose products add nothing): no division by zero, and exact.
      float ua[2 * WAVES], ub[3], fa[2 * WAVES], fb[3];
      float acc[RESCALE ? 1 : NACC];
      (void)ua, (void)ub, (void)fa, (void)fb;
      for (int kb = p.kb0; kb < p.kb1; kb++, it++) {
        // This k-block's scales (cur) are copied, and the next one's loaded, once its first batch
        // is issued (shift_scales): the copy waits for their load, which at a unit's first k-block
        // was issued just before and comes from memory; the batch runs meanwhile. (Copied at the
        // top of the loop, the wait held every unit's first batch back: the largest stall of a
        // stream-K run on the H100, docs/perf.md.)
        const int s = it % STAGES;
        at_mbar_wait(full0 + s * 8, (at_u32)(it / STAGES) & 1u);
        const at_u64 db = desc_b(s);
#pragma unroll
        for (int v = 0; v < WAVES; v++) {
          const at_u64 da = desc_a(s, v);
          if (PINGPONG_ON) {
            // Warpgroup 0 issues after warpgroup 1's previous batch (except the first), warpgroup 1
            // after warpgroup 0's current one: with PINGPONG 1 once that batch has completed, with 2
            // once it has been issued (the tensor cores then have the other's batch queued behind
            // it, in order, while this one promotes).
            if (w == 0 && (it > 0 || v > 0)) at_named_barrier(BAR_TURN_0, 256);
            if (w == 1) at_named_barrier(BAR_TURN_1, 256);
          }
          if constexpr (RESCALE) {
#pragma unroll
            for (int i = 0; i < NACC; i++) at_reg_fence(res[v][i]);
            at_wgmma_fence();
            const int keep = kb > p.kb0;
#pragma unroll
            for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<WG_N>::mma(res[v], da + 2 * ks, db + 2 * ks, keep | ks);
          } else {
#pragma unroll
            for (int i = 0; i < NACC; i++) at_reg_fence(acc[i]);
            at_wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < 4; ks++) at_wgmma_e4m3<WG_N>::mma(acc, da + 2 * ks, db + 2 * ks, ks);
          }
          at_wgmma_commit();
          if (v == 0) shift_scales(kb);
          if (PINGPONG_ON && PINGPONG == 2) at_named_arrive(w == 0 ? BAR_TURN_1 : BAR_TURN_0, 256);
          at_wgmma_wait<0>();
          if constexpr (RESCALE) {
#pragma unroll
            for (int i = 0; i < NACC; i++) at_reg_fence(res[v][i]);
          } else {
#pragma unroll
            for (int i = 0; i < NACC; i++) at_reg_fence(acc[i]);
          }
          if (PINGPONG_ON && PINGPONG == 1) at_named_arrive(w == 0 ? BAR_TURN_1 : BAR_TURN_0, 256);
          if (v == WAVES - 1) release(s);
          if constexpr (RESCALE) {
            if (v == 0) {
              if (kb == p.kb0) at_sm90::first_units<2 * WAVES, NB>(cur, ua, ub);
              if (kb + 1 < p.kb1) at_sm90::next_units<2 * WAVES, NB>(nxt, ua, ub, fa, fb);
            }
            if (kb + 1 < p.kb1) scale_slice(res[v], res[v], false, v, fa, fb);
          } else {
            promote(acc, v, cur);
          }
        }
      }
      if constexpr (RESCALE) {
        // Back from the last k-block's units.
        if (p.kb0 < p.kb1) {
#pragma unroll
          for (int v = 0; v < WAVES; v++) scale_slice(res[v], res[v], false, v, ua, ub);
        }
      }
    }

    if (unit_sc) {
      // Every scale of the unit has been read (and used): the loader may copy the next unit's.
      // The proxy fence orders these generic reads before its bulk copies' writes.
      at_fence_proxy_async_smem();
      __syncwarp();
      at_mbar_arrive_if(base + L::sbar_off + 16 + (su & 1) * 8, lane == 0);
      su++;
    }

    if constexpr (CLUSTER_K == 2) {
      // The two halves of the k-blocks meet: rank kr keeps the columns of half kr of the tile and
      // sends the other half to its peer, chunk by chunk, through the peer's staging area
      // (asynchronous remote stores that complete the transactions of the peer's xfull).
      // The peer frees its area (an arrival on this CTA's xfree) once it has read a chunk, and
      // after the last one once its epilogue, which stages through the same area, is done.
      constexpr int HALF = NACC / 2, XF = L::xf;
      static_assert(HALF % XF == 0 && XF % 4 == 0, "exchange chunks of whole float4s");
      const at_u32 xbuf = base + L::c_off + w * NBUF * L::c_wg;  // this warpgroup's staging area
      const at_u32 xfull = base + L::xbar_off + w * 16, xfree = xfull + 8;
      const at_u32 peer_buf = at_mapa(xbuf, peer), peer_full = at_mapa(xfull, peer);
      // One copy of the code per rank (indexing res by kr would put it in local memory).
      if (kr == 0)
        at_sm90::exchange<HALF, 0, NACC, XF>(res[0], xc, peer_buf, peer_full, peer, xbuf, xfull, xfree, t);
      else
        at_sm90::exchange<0, HALF, NACC, XF>(res[0], xc, peer_buf, peer_full, peer, xbuf, xfull, xfree, t);
      at_named_barrier(1 + w, 128);  // every thread has read its chunk: the epilogue may stage
    }
    if constexpr (CLUSTER_K == 4) {
      // The four parts meet: rank kr keeps the columns of quarter kr of the tile, and sends each
      // other quarter to the rank that keeps it (at_sm90::exchange4).
      const at_u32 xbuf = base + L::c_off + w * NBUF * L::c_wg;
      const at_u32 xfull = base + L::xbar_off + w * 16, xfree = xfull + 8;
      // One copy of the code per rank (indexing res by kr would put it in local memory).
      if (kr == 0)
        at_sm90::exchange4<0, NACC>(res[0], xc, xbuf, xfull, xfree, t);
      else if (kr == 1)
        at_sm90::exchange4<1, NACC>(res[0], xc, xbuf, xfull, xfree, t);
      else if (kr == 2)
        at_sm90::exchange4<2, NACC>(res[0], xc, xbuf, xfull, xfree, t);
      else
        at_sm90::exchange4<3, NACC>(res[0], xc, xbuf, xfull, xfree, t);
      xc++;
      at_named_barrier(1 + w, 128);  // every thread has read the slots: the epilogue may stage
    }

    if (split_k > 1) {
      // Publish this split's partial, count it; the last split to arrive reduces.
      // CTA tiles are numbered cluster tile by cluster tile: tile x CLUSTER + rank.
      const int ctile = p.tile * CLUSTER + rank, ctiles = tiles * CLUSTER;
      const int counter = ctile * MATH_WG + w;
      if (ctiles * MATH_WG > args.ws_counters) __trap();
      unsigned *const counters = (unsigned *)args.counters;
      float *const partials = (float *)args.partials;
      const long tile_floats = (long)BLOCK_M * BLOCK_N;
      // This thread's float4s of the partial: one base, the rest at constant offsets, so that
      // the stores are 16-byte stores with immediate offsets (computing each address, ptxas made
      // them four 4-byte stores each, whose address registers waited on the stores before them:
      // a fifth of the stall samples of a split tail on the H100, docs/perf.md).
      // A math warpgroup's partial: 128 threads x NACC floats a slice (64 x BLOCK_N, or BLOCK_M x 64
      // with SWAP_AB), in fragment order (every split the same).
      float4 *const mine = (float4 *)(partials + ((long)p.split * ctiles + ctile) * tile_floats +
                                      (long)w * 128 * NACC) + t;
#pragma unroll
      for (int v = 0; v < WAVES; v++)
#pragma unroll
        for (int j = 0; j < NACC / 4; j++)
          __stcg(mine + (v * MATH_WG * 32 * NACC + j * 128),
                 make_float4(res[v][4 * j], res[v][4 * j + 1], res[v][4 * j + 2], res[v][4 * j + 3]));
      // Release and acquire by one thread: the warpgroup's barrier orders its stores before thread
      // 0's fence, which orders them before the count at GPU scope; the last split's thread 0
      // fences after the count, and its barrier then orders the other splits' partials before
      // every thread's reads (a fence in every thread made each wait for its own stores).
      at_named_barrier(1 + w, 128);
      if (t == 0) {
        __threadfence();
        const bool last = atomicAdd(&counters[counter], 1u) == (unsigned)(split_k - 1);
        if (last) __threadfence();
        last_flag[w] = last;
      }
      at_named_barrier(1 + w, 128);
      if (!last_flag[w]) continue;
#pragma unroll
      for (int v = 0; v < WAVES; v++)
#pragma unroll
        for (int i = 0; i < NACC; i++) res[v][i] = 0.f;
      for (int sp = 0; sp < split_k; sp++) {
        const float4 *const src = (const float4 *)(partials + ((long)sp * ctiles + ctile) * tile_floats +
                                                   (long)w * 128 * NACC) + t;
#pragma unroll
        for (int v = 0; v < WAVES; v++)
#pragma unroll
          for (int j = 0; j < NACC / 4; j++) {
            const float4 x = __ldcg(src + (v * MATH_WG * 32 * NACC + j * 128));
            res[v][4 * j] += x.x, res[v][4 * j + 1] += x.y, res[v][4 * j + 2] += x.z, res[v][4 * j + 3] += x.w;
          }
      }
      if (t == 0) counters[counter] = 0;
    }

    // Epilogue, slice by slice and pass by pass (epi_n columns each): bf16 through this
    // warpgroup's staging area, then 16-byte coalesced stores, by this warpgroup or (offload) by
    // the store warps.
    unsigned short *const C = (unsigned short *)args.c;
    if constexpr (SWAP_AB) {
      // The slice is C's rows m0 + [0, BLOCK_M) by its columns n0 + 64 w + [0, 64), transposed in
      // the accumulator: staged one bf16 at a time (a warp's 32 stores fall in distinct banks or
      // words), then copied out in 16-byte stores along C's rows.
#pragma unroll
      for (int g = 0; g < NACC / 4; g++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int tok = 8 * g + colq + (e & 1), col = lrow + (e & 2 ? 8 : 0);
          *(unsigned short *)(stage_c0 + tok * L::c_pitch + col * 2) =
              (unsigned short)(at_pack_bf16x2(res[0][4 * g + e], 0.f) & 0xffffu);
        }
      at_named_barrier(1 + w, 128);
#pragma unroll 2
      for (int c = t; c < BLOCK_M * 8; c += 128) {
        const int r = c / 8, cc = c % 8;
        const int grow = p.m0 + r, gcol = p.n0 + w * 64 + cc * 8;
        if (grow < M && gcol < N) *(uint4 *)(C + grow * ldc + gcol) = *(const uint4 *)(stage_c0 + r * L::c_pitch + cc * 16);
      }
      at_named_barrier(1 + w, 128);  // the staging area is free again
    } else {
#pragma unroll
      for (int v = 0; v < WAVES; v++) {
#pragma unroll
        for (int h = 0; h < BLOCK_N / EPI_N; h++) {
          if (CLUSTER_K > 1 && h != kr) continue;  // a peer stores this part
          const int buf = offload ? pc % NBUF : 0, area = w * NBUF + buf;
          unsigned char *const stage_c = stage_c0 + buf * L::c_wg;
          if (offload) at_named_barrier(BAR_FREE + area, STORE_THREADS);  // the store warps are done with it
          if constexpr (TMA_STORE) {
            // The area is free once the tensor stores of its previous pass have read it (issued by
            // thread 0, so thread 0 waits; for a tile's first pass they finished long ago).
            if (t == 0) at_bulk_wait_read();
            at_named_barrier(1 + w, 128);
            // Staged by stmatrix (as below) into 64 x 64 boxes of 128-byte rows, 8 KB apart, as the
            // tensor map's 128-byte swizzle lays them out: 16-byte chunk c of row r at c ^ (r % 8),
            // which also puts the 8 rows of an 8 x 8 tile in distinct bank groups. This lane's tile
            // row r = lane % 8 (rows of 8 start at multiples of 8) and chunk j + (tm >> 1) for the
            // pair of groups j, j + 1: (j % 8) ^ x with x = (tm >> 1) ^ r.
            const int tm = lane >> 3, x = ((tm >> 1) ^ (lane & 7)) * 16;
            const at_u32 rowb = base + (at_u32)at_opaque((int)(L::c_off + (w * NBUF + buf) * L::c_wg) +
                                                         (warp * 16 + (tm & 1) * 8 + (lane & 7)) * 128);
#pragma unroll
            for (int j = 0; j < CHUNKS; j += 2) {
              const int q = h * CHUNKS + j;  // the 8-column group in the slice
              at_stmatrix_x4(rowb + (j / 8) * 8192 + (((j % 8) * 16) ^ x), at_pack_bf16x2(res[v][4 * q], res[v][4 * q + 1]),
                             at_pack_bf16x2(res[v][4 * q + 2], res[v][4 * q + 3]),
                             at_pack_bf16x2(res[v][4 * q + 4], res[v][4 * q + 5]),
                             at_pack_bf16x2(res[v][4 * q + 6], res[v][4 * q + 7]));
            }
            // Every thread's staging before the tensor stores' reads (async proxy), then one
            // thread stores the pass's boxes that start inside C (the map clips the rest).
            at_fence_proxy_async_smem();
            at_named_barrier(1 + w, 128);
            const int row0 = p.m0 + v * 128 + w * 64;
            if (t == 0 && row0 < M) {
#pragma unroll
              for (int b = 0; b < EPI_N / 64; b++) {
                const int col0 = p.n0 + h * EPI_N + b * 64;
                if (col0 < N) at_tma_store_2d(&tmap_c, col0, row0, base + L::c_off + (w * NBUF + buf) * L::c_wg + b * 8192);
              }
              at_bulk_commit();
            }
            continue;
          } else if constexpr (STORE == 0) {
            // Staged by stmatrix, a pair of 8-column groups (four 8 x 8 tiles: this warp's 16 rows by
            // 16 columns) an instruction. This lane's tile row: lanes 8 m + r give row r of tile m,
            // tiles 0 and 1 the group's rows 0-7 and 8-15, 2 and 3 the next group's. at_opaque keeps
            // the one address in its register (ptxas hoisted the per-group addresses of the stores
            // before this out of the tile loop and spilled them across the k-loop: docs/perf.md).
            // 0.7% faster than four-byte stores at steady state and on the shipped set (H100,
            // docs/perf.md, "The epilogue staged by stmatrix").
            const int tm = lane >> 3;
            const at_u32 mine = base + (at_u32)at_opaque((int)(L::c_off + (w * NBUF + buf) * L::c_wg) +
                                                         (warp * 16 + (tm & 1) * 8 + (lane & 7)) * L::c_pitch +
                                                         (tm >> 1) * 16);
#pragma unroll
            for (int j = 0; j + 1 < CHUNKS; j += 2) {
              const int q = h * CHUNKS + j;  // the 8-column group in the slice
              at_stmatrix_x4(mine + 16 * j, at_pack_bf16x2(res[v][4 * q], res[v][4 * q + 1]),
                             at_pack_bf16x2(res[v][4 * q + 2], res[v][4 * q + 3]),
                             at_pack_bf16x2(res[v][4 * q + 4], res[v][4 * q + 5]),
                             at_pack_bf16x2(res[v][4 * q + 6], res[v][4 * q + 7]));
            }
            if constexpr (CHUNKS % 2 == 1) {
              const int q = h * CHUNKS + CHUNKS - 1;
              at_stmatrix_x2(mine + 16 * (CHUNKS - 1), at_pack_bf16x2(res[v][4 * q], res[v][4 * q + 1]),
                             at_pack_bf16x2(res[v][4 * q + 2], res[v][4 * q + 3]));
            }
          } else {
            // With store warps, four-byte stores: stmatrix there ran the files' 128 x 256 `ST2`
            // calls 1.2% slower (H100, docs/perf.md, "The epilogue staged by stmatrix").
            // This thread's place in the area. Kernels whose accumulators take 192 registers or more
            // compute it here (at_opaque: one register, the column groups' offsets immediates of the
            // stores): ptxas otherwise hoists all 32 addresses out of the tile loop and spills some
            // across the k-loop, whose reloads after it cost 128 x 128 with two k-blocks in flight 4-6%
            // (H100, docs/perf.md). Elsewhere the hoisted addresses fit, and are 1% faster.
            if constexpr (ACC_REGS >= 192) {
              unsigned char *const mine = stage_c + at_opaque(lrow * L::c_pitch + colq * 2);
#pragma unroll
              for (int j = 0; j < CHUNKS; j++) {
                const int q = h * CHUNKS + j;  // the 8-column group in the slice
                *(at_u32 *)(mine + 16 * j) = at_pack_bf16x2(res[v][4 * q], res[v][4 * q + 1]);
                *(at_u32 *)(mine + 8 * L::c_pitch + 16 * j) = at_pack_bf16x2(res[v][4 * q + 2], res[v][4 * q + 3]);
              }
            } else {
#pragma unroll
              for (int j = 0; j < CHUNKS; j++) {
                const int q = h * CHUNKS + j;
                *(at_u32 *)(stage_c + lrow * L::c_pitch + (8 * j + colq) * 2) =
                    at_pack_bf16x2(res[v][4 * q], res[v][4 * q + 1]);
                *(at_u32 *)(stage_c + (lrow + 8) * L::c_pitch + (8 * j + colq) * 2) =
                    at_pack_bf16x2(res[v][4 * q + 2], res[v][4 * q + 3]);
              }
            }
          }
          if (offload) {
            if (t == 0) {
              *(int *)(stage_c + EPI_N * 2) = p.m0 + v * 128 + w * 64;
              *(int *)(stage_c + EPI_N * 2 + 4) = p.n0 + h * EPI_N;
            }
            at_named_arrive(BAR_STAGED + area, STORE_THREADS);
            pc++;
            continue;
          }
          at_named_barrier(1 + w, 128);
#pragma unroll 4
          for (int c = t; c < 64 * CHUNKS; c += 128) {
            const int r = c / CHUNKS, cc = c % CHUNKS;
            const int grow = p.m0 + v * 128 + w * 64 + r, gcol = p.n0 + h * EPI_N + cc * 8;
            if (grow < M && gcol < N)
              *(uint4 *)(C + grow * ldc + gcol) = *(const uint4 *)(stage_c + r * L::c_pitch + cc * 16);
          }
          at_named_barrier(1 + w, 128);  // the staging area is free again
        }
      }
    }
    if constexpr (CLUSTER_K == 2) {
      // The epilogue is done with the staging area (its last barrier): the peer may send into it,
      // once the epilogue's generic accesses are ordered before its st.async (the proxy fence).
      // Not after the last unit: the peer waits for no more, and may have exited.
      // With tensor stores the area is free once they have read it: thread 0, which issued them,
      // waits before its warp's arrival (the peer waits for all four warps').
      if (TMA_STORE && t == 0) at_bulk_wait_read();
      at_fence_proxy_async_smem();
      __syncwarp();
      at_mbar_arrive_cluster_if(base + L::xbar_off + w * 16 + 8, peer,
                                lane == 0 && u + unit_step < units);
    }
    if constexpr (CLUSTER_K == 4) {
      // The same for the three ranks that sent into this area (one arrival of each warp on each
      // sender's xfree, which counts twelve); not after the last unit.
      at_fence_proxy_async_smem();
      __syncwarp();
#pragma unroll
      for (int q = 1; q < 4; q++)
        at_mbar_arrive_cluster_if(base + L::xbar_off + w * 16 + 8, (at_u32)((kr + q) % 4),
                                  lane == 0 && u + unit_step < units);
    }
  }
  // The tensor stores complete (their writes performed) before the CTA exits: its shared memory
  // must outlive their reads, and the grid's completion is what the next kernel waits for.
  if (TMA_STORE && t == 0) at_bulk_wait();
  // Warpgroup 1's arrival after the very last batch has no batch of warpgroup 0 to wait for it:
  // take it here, so that no barrier is left half-arrived.
  if (PINGPONG_ON && w == 0 && it > 0) at_named_barrier(BAR_TURN_0, 256);
  // The store warps' arrival after the last copy into each area likewise: this also waits for the
  // copies.
  if (offload) {
#pragma unroll
    for (int b = 0; b < NBUF; b++) at_named_barrier(BAR_FREE + w * NBUF + b, STORE_THREADS);
  }
  // A tail (late_wait) finishes only after the stream's preceding kernel, its main launch: the next
  // kernel waits for this grid alone. One CTA waiting is enough for that (a grid completes when its
  // last CTA exits), and the grid's last one does: a CTA that waited would keep its SM from the
  // tail's CTAs not yet started until the main launch ends (H100: a tail of two rounds of clusters
  // then ran them after the main launch, not on the SMs its last wave freed; docs/perf.md).
  // The tail's correctness rests on this one wait: the math warpgroups of every CTA, units or
  // none, must reach it (no early return on their path).
  if (args.late_wait && blockIdx.x == gridDim.x - 1) at_griddep_wait();
}

// at_sm90.cuh: the Hopper (sm_90a) PTX the sm90 templates use, one small inline function each:
// mbarriers, TMA loads (multicast, L2 cache policies) and stores, clusters and their shared memory, wgmma control and
// descriptors, register reallocation, named barriers, programmatic dependent launch.
// No CUDA headers, so NVRTC parses little more than the template itself.
#ifndef AT_SM90_CUH
#define AT_SM90_CUH

#include "at_ptx.cuh"

// A CUtensorMap as the driver encodes it (cuTensorMapEncodeTiled): 128 opaque bytes, 64-aligned.
struct __align__(64) at_tmap {
  at_u64 opaque[16];
};

// ---- mbarrier ----------------------------------------------------------------------------------

__device__ __forceinline__ void at_mbar_init(at_u32 bar, at_u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA) and the rest of the CTA.
__device__ __forceinline__ void at_mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of transactions (TMA writes) the phase must wait for.
__device__ __forceinline__ void at_mbar_arrive_expect_tx(at_u32 bar, at_u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void at_mbar_arrive(at_u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// An arrival by the threads for which `pred` is non-zero, as a predicated instruction rather than
// a branch: no divergent path while wgmmas are in flight (ptxas would serialize them, C7518).
__device__ __forceinline__ void at_mbar_arrive_if(at_u32 bar, at_u32 pred) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.u32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar),
               "r"(pred)
               : "memory");
}

// Waits until the phase of parity `parity` has completed. A fresh barrier is in phase 0, so
// waiting for parity 1 returns at once: that is how a producer passes its first round of empty
// barriers.
__device__ __forceinline__ void at_mbar_wait(at_u32 bar, at_u32 parity) {
  // The loop is inside the asm (labels are local to the braces): to ptxas it is one construct.
  asm volatile(
      "{\n.reg .pred p;\nAT_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra AT_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// ---- TMA ---------------------------------------------------------------------------------------

__device__ __forceinline__ void at_tma_prefetch(const at_tmap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"((at_u64)map) : "memory");
}

// A 2D box at (c0 = inner coordinate, c1 = row) into shared memory at dst; completes `bar`'s
// transactions by the box's bytes (out-of-bounds elements read as zero and still count).
__device__ __forceinline__ void at_tma_load_2d(at_u32 dst, const at_tmap *map, int c0, int c1, at_u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"((at_u64)map), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The same box multicast into the shared memory of every CTA of the cluster named in `mask` (bit
// i: the CTA of rank i), at the same offset `dst` and completing the barrier at offset `bar` in each.
__device__ __forceinline__ void at_tma_load_2d_mc(at_u32 dst, const at_tmap *map, int c0, int c1, at_u32 bar,
                                                  unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"((at_u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}

// The same two loads with an L2 cache policy `pol` (at_l2_evict_first).
__device__ __forceinline__ void at_tma_load_2d_pol(at_u32 dst, const at_tmap *map, int c0, int c1, at_u32 bar, at_u64 pol) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"((at_u64)map), "r"(c0), "r"(c1), "r"(bar), "l"(pol)
      : "memory");
}
__device__ __forceinline__ void at_tma_load_2d_mc_pol(at_u32 dst, const at_tmap *map, int c0, int c1, at_u32 bar,
                                                      unsigned short mask, at_u64 pol) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(dst),
      "l"((at_u64)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask), "l"(pol)
      : "memory");
}

// A 2D box of shared memory at src (1024-byte aligned, laid out as the map's swizzle says) stored
// to global memory at (c0 = inner coordinate, c1 = row) of `map`; elements outside the map's
// dimensions are not written. Asynchronous: part of this thread's current bulk group
// (at_bulk_commit); src may be written again only after at_bulk_wait_read, and the writes are
// visible to others only after at_bulk_wait. The generic writes of src must precede it through
// at_fence_proxy_async_smem (every writing thread) and a barrier.
__device__ __forceinline__ void at_tma_store_2d(const at_tmap *map, int c0, int c1, at_u32 src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"((at_u64)map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void at_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until every bulk group of this thread has finished reading its shared memory.
__device__ __forceinline__ void at_bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// Until every bulk group of this thread has completed (its global writes performed).
__device__ __forceinline__ void at_bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// A contiguous copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from global memory
// at src into this CTA's shared memory at dst (the non-tensor bulk copy), completing `bar`'s
// transactions by its bytes.
__device__ __forceinline__ void at_bulk_load(at_u32 dst, const void *src, at_u32 bytes, at_u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"((at_u64)src), "r"(bytes), "r"(bar)
               : "memory");
}

// An L2 cache policy for data read once: its lines are the first evicted.
__device__ __forceinline__ at_u64 at_l2_evict_first() {
  at_u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// ---- clusters ----------------------------------------------------------------------------------

__device__ __forceinline__ at_u32 at_cluster_rank() {
  at_u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// x, as a value the compiler cannot see through (volatile): what is computed from it stays where
// it is used. The epilogue's staging addresses are loop-invariant, and ptxas hoisted all 32 of them
// (16 column groups x 2 rows) out of the tile loop, spilling a third of them across the k-loop.
__device__ __forceinline__ int at_opaque(int x) {
  int r;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

__device__ __forceinline__ at_u32 at_cluster_size() {
  at_u32 r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every CTA of the cluster, arriving without release (a release here costs each
// thread a MEMBAR.GPU, which waits for its outstanding stores): what must be visible to the other
// CTAs is published otherwise (mbarrier inits by at_mbar_init_fence). Once all have arrived, the
// wait returns: no CTA of the cluster is still before its arrival.
__device__ __forceinline__ void at_cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

// An arrival on the barrier at offset `bar` in the shared memory of the cluster's CTA `cta`, by the
// threads for which `pred` is non-zero (predicated, as at_mbar_arrive_if). Default (CTA-scope)
// release: what the arrival publishes is that this CTA's wgmmas finished reading a stage, which
// wgmma.wait_group already ordered; a cluster-scope release would cost a MEMBAR.GPU per k-block.
__device__ __forceinline__ void at_mbar_arrive_cluster_if(at_u32 bar, at_u32 cta, at_u32 pred) {
  asm volatile(
      "{\n.reg .pred p;\n.reg .b32 ra;\nsetp.ne.u32 p, %2, 0;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "@p mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
      "r"(cta), "r"(pred)
      : "memory");
}

// ---- distributed shared memory (split-K inside a cluster) ---------------------------------------

// Orders this thread's generic-proxy accesses of shared memory (ld/st.shared) before later
// async-proxy writes to it, st.async from a peer CTA included: a thread runs it before it tells a
// peer (mbarrier arrival) that the peer may write where it has just read or written. Without it,
// CLUSTER_K 2 gave wrong elements in about 1 check in 5 (128 x 160 RESCALE, 2 stages, H100): the
// peer's next chunk could meet this CTA's reads or staging of the last one.
__device__ __forceinline__ void at_fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The address of this CTA's shared-memory location `addr` in the cluster's CTA `cta`.
__device__ __forceinline__ at_u32 at_mapa(at_u32 addr, at_u32 cta) {
  at_u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(cta));
  return r;
}

// Four floats into another CTA's shared memory at `addr`, completing 16 bytes of the transactions
// of the barrier `bar` there (both from at_mapa): an asynchronous store that needs no fence on
// this side; the receiver sees the data once the barrier's phase completes (arrive.expect_tx on
// its side), and fences the proxies before it lets the next one overwrite the area
// (at_fence_proxy_async_smem).
// stmatrix: 8 x 8 tiles of bf16 pairs into shared memory, 16 bytes a tile row; lane i gives the
// address of row i % 8 of tile i / 8 (x2: lanes 0-15), and each register holds the thread's pair of
// a tile (row lane / 4, columns 2 (lane % 4) and + 1): the wgmma accumulator's own layout.
__device__ __forceinline__ void at_stmatrix_x4(at_u32 addr, at_u32 a, at_u32 b, at_u32 c, at_u32 d) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               :
               : "r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}
__device__ __forceinline__ void at_stmatrix_x2(at_u32 addr, at_u32 a, at_u32 b) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" : : "r"(addr), "r"(a), "r"(b) : "memory");
}

__device__ __forceinline__ void at_st_async_v4(at_u32 addr, float a, float b, float c, float d, at_u32 bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(addr),
               "f"(a), "f"(b), "f"(c), "f"(d), "r"(bar)
               : "memory");
}

// ---- wgmma -------------------------------------------------------------------------------------

__device__ __forceinline__ void at_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void at_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void at_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of an accumulator register across the
// asynchronous wgmma boundaries (the register is in flight between the mma and the wait).
__device__ __forceinline__ void at_reg_fence(float &r) { asm volatile("" : "+f"(r)::"memory"); }

// Shared-memory matrix descriptor of a K-major tile whose rows are 128 bytes, 128-byte swizzled
// as TMA writes it (16-byte chunk c of row r at chunk c ^ (r % 8)): 8-row groups 1024 bytes apart.
// The tile must start 1024-byte aligned. Adding 2 advances it by 32 bytes of K (one k32 step).
__device__ __forceinline__ at_u64 at_wgmma_desc_sw128(at_u32 smem_addr) {
  at_u64 d = (at_u64)((smem_addr & 0x3FFFF) >> 4);
  d |= (at_u64)1 << 16;          // leading byte offset: unused by swizzled K-major layouts
  d |= (at_u64)(1024 >> 4) << 32; // stride byte offset: one 8-row group
  d |= (at_u64)1 << 62;          // 128-byte swizzle
  return d;
}

// ---- registers and barriers --------------------------------------------------------------------

template <int N>
__device__ __forceinline__ void at_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void at_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// A barrier among `count` threads (a multiple of 32), independent of __syncthreads (id 0).
__device__ __forceinline__ void at_named_barrier(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Arrives on a named barrier without waiting: the other side's bar.sync (with the same count)
// completes once every arrival is in. One-way signalling between warpgroups.
__device__ __forceinline__ void at_named_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---- programmatic dependent launch ---------------------------------------------------------------

// Waits until the grids this one depends on (the stream's preceding kernel, when this one was
// launched with programmatic stream serialization) have completed and their memory is visible.
// Without that launch attribute there is nothing to wait for and it returns at once.
__device__ __forceinline__ void at_griddep_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// Lets the stream's next kernel, if launched with the attribute, be scheduled once every CTA of this
// grid has said so or exited: it only starts early, its own at_griddep_wait still waits for this grid.
__device__ __forceinline__ void at_griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

#endif

/* gemm_a8w8_blockscale_kparams.c: see gemm_a8w8_blockscale_kparams.h. */
#include "gemm_a8w8_blockscale_kparams.h"

#include <string.h>

int at_a8w8_plan_of(const char *family, const at_params *p, at_a8w8_plan *out) {
  memset(out, 0, sizeof *out);
  out->group_m = (int)at_params_get(p, "GROUP_M", 1);
  out->split_k = (int)at_params_get(p, "SPLIT_K", 1);
  if (out->group_m < 1 || out->split_k < 1)
    return at_fail(AT_ERR_INPUT, "GROUP_M and SPLIT_K must be positive (got %d, %d)", out->group_m, out->split_k);
  if (strcmp(family, "mma") == 0) return AT_OK;
  if (strcmp(family, "sm90") != 0) return at_fail(AT_ERR_INPUT, "unknown family '%s' (gemm_a8w8_blockscale has: mma, sm90)", family);
  out->tma = 1;
  out->c_map = at_params_get(p, "STORE", 0) == 3;
  /* With clusters each CTA loads its share of the tile its cluster row (column) shares. */
  out->box_m = (int)(at_params_get(p, "BLOCK_M", 0) / at_params_get(p, "CLUSTER_N", 1));
  out->box_n = (int)(at_params_get(p, "BLOCK_N", 0) / at_params_get(p, "CLUSTER_M", 1));
  if (out->box_m < 1 || out->box_m > 256 || out->box_n < 1 || out->box_n > 256)
    return at_fail(AT_ERR_INPUT, "family sm90: BLOCK_M and BLOCK_N must be from 1 to 256 (TMA boxes)");
  return AT_OK;
}

/* ---- tensor maps, cached per thread ----------------------------------------------------------- */

/* A slot holds the maps of one key: an operand's (pointer, rows, K, box) with two maps (whole and
 * end boxes), or C's (pointer, rows, cols, ld) with one. Operands and C have caches of their own: C
 * changes more often than the weights and would evict their maps. */
typedef struct map_slot {
  uint64_t ptr;
  int d[3];
  CUtensorMap map[2];
} map_slot;

enum { TMAP_SLOTS = 16, CMAP_SLOTS = 8 }; /* operands: two a launch, two launches a call (the tail), a few shapes */
static _Thread_local map_slot tl_maps[TMAP_SLOTS], tl_cmaps[CMAP_SLOTS];
static _Thread_local unsigned tl_next, tl_cnext;

/* The slot of (ptr, d0, d1, d2) in slots[n]: found (*hit 1), or the next one round, emptied for the
 * caller to encode into and then claim with claim(). */
static map_slot *lookup(map_slot *slots, unsigned n, unsigned *next, uint64_t ptr, int d0, int d1, int d2, int *hit) {
  for (unsigned i = 0; i < n; i++) {
    map_slot *s = &slots[i];
    if (s->ptr == ptr && s->d[0] == d0 && s->d[1] == d1 && s->d[2] == d2) return *hit = 1, s;
  }
  map_slot *s = &slots[(*next)++ % n];
  s->ptr = 0; /* no key matches it until its maps are whole */
  return *hit = 0, s;
}

static void claim(map_slot *s, uint64_t ptr, int d0, int d1, int d2) {
  s->ptr = ptr, s->d[0] = d0, s->d[1] = d1, s->d[2] = d2;
}

/* How far L2 rounds up a TMA load's fetch from memory (a compile-time choice, for measuring). On
 * the H100 (docs/perf.md, "The k-block count"), 128 bytes or none instead of 256 changed
 * neither the cost of odd k-block counts nor the Llama-3-8B set beyond the noise (three rounds:
 * 0.859x, 0.861x, 0.854x with 256; 0.863x, 0.863x, 0.855x with 128). */
#ifndef AT_TMA_L2_PROMOTION
#define AT_TMA_L2_PROMOTION CU_TENSOR_MAP_L2_PROMOTION_L2_256B
#endif

static int encode(uint64_t ptr, int rows, int k, int box, CUtensorMap *out) {
  const cuuint64_t dim[2] = {(cuuint64_t)k, (cuuint64_t)rows};
  const cuuint64_t stride[1] = {(cuuint64_t)k};
  const cuuint32_t boxdim[2] = {128, (cuuint32_t)box};
  const cuuint32_t estride[2] = {1, 1};
  CU_CHECK(at_cu->TensorMapEncodeTiled(out, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)ptr, dim, stride,
                                       boxdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                       AT_TMA_L2_PROMOTION, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return AT_OK;
}

/* A row-major rows x K matrix of bytes, read in boxes of 128 bytes of K, 128-byte swizzled in
 * shared memory: into whole, boxes of `box` rows (a CTA's share of a tile); into end, boxes of the
 * rows left at the end (rows modulo box; box when nothing is left over), for the one share that
 * ends inside, so that no load reaches past the last row. An operand shorter than one share loads
 * its end box only (decode-sized M): one map, encoded once, in both places. Cached per thread by
 * (pointer, rows, K, box): one scan a launch per operand, one or two encodes per new M. */
static int tensor_maps(uint64_t ptr, int rows, int k, int box, CUtensorMap *whole, CUtensorMap *end) {
  int hit;
  map_slot *s = lookup(tl_maps, TMAP_SLOTS, &tl_next, ptr, rows, k, box, &hit);
  if (!hit) {
    const int left = rows % box ? rows % box : box;
    AT_TRY(encode(ptr, rows, k, left, &s->map[1]));
    if (rows < box || left == box) /* whole never used, or the same boxes */
      s->map[0] = s->map[1];
    else
      AT_TRY(encode(ptr, rows, k, box, &s->map[0]));
    claim(s, ptr, rows, k, box);
  }
  *whole = s->map[0], *end = s->map[1];
  return AT_OK;
}

/* C as the sm90 epilogue's tensor stores see it: rows x cols bf16 (as 16-bit words) with a row
 * stride of ld elements, boxes of 64 x 64, 128-byte swizzled in shared memory. Cached per thread
 * by (pointer, rows, cols, ld). */
static int c_map(uint64_t ptr, int rows, int cols, int ld, CUtensorMap *out) {
  int hit;
  map_slot *s = lookup(tl_cmaps, CMAP_SLOTS, &tl_cnext, ptr, rows, cols, ld, &hit);
  if (!hit) {
    const cuuint64_t dim[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t stride[1] = {(cuuint64_t)ld * 2};
    const cuuint32_t boxdim[2] = {64, 64};
    const cuuint32_t estride[2] = {1, 1};
    CU_CHECK(at_cu->TensorMapEncodeTiled(&s->map[0], CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, (void *)(uintptr_t)ptr, dim,
                                         stride, boxdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    claim(s, ptr, rows, cols, ld);
  }
  *out = s->map[0];
  return AT_OK;
}

int at_a8w8_kparams(const at_a8w8_plan *plan, const at_gemm_a8w8_blockscale_args *args, at_kparams *out) {
  out->count = 0;
  out->used = 0;
  at_gemm_a8w8_blockscale_args *a = at_kparams_push(out, sizeof *args, 8);
  if (!a) return at_fail(AT_ERR_RUNTIME, "kernel parameters do not fit");
  *a = *args;
  a->group_m = plan->group_m;
  a->split_k = plan->split_k;
  if (!plan->tma) return AT_OK;
  /* The kernel's order: A whole, A end, B whole, B end, C. */
  CUtensorMap *ma = at_kparams_push(out, sizeof(CUtensorMap), 64);
  CUtensorMap *ma_end = at_kparams_push(out, sizeof(CUtensorMap), 64);
  CUtensorMap *mb = at_kparams_push(out, sizeof(CUtensorMap), 64);
  CUtensorMap *mb_end = at_kparams_push(out, sizeof(CUtensorMap), 64);
  CUtensorMap *mc = at_kparams_push(out, sizeof(CUtensorMap), 64);
  if (!ma || !ma_end || !mb || !mb_end || !mc) return at_fail(AT_ERR_RUNTIME, "kernel parameters do not fit");
  AT_TRY(tensor_maps(args->a, args->m, args->k, plan->box_m, ma, ma_end));
  AT_TRY(tensor_maps(args->b, args->n, args->k, plan->box_n, mb, mb_end));
  if (plan->c_map)
    AT_TRY(c_map(args->c, args->m, args->n, args->ldc ? args->ldc : args->n, mc));
  else
    memset(mc, 0, sizeof *mc);
  return AT_OK;
}

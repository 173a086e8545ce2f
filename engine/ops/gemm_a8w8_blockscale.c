/* gemm_a8w8_blockscale.c: the FP8 blockscale GEMM, CPU side: shape rules, the launch geometry of
 * its template families (`mma`, portable; `sm90`, Hopper), derived values for constraints, FLOPs
 * and bytes. Launch parameters (tensor maps) are the GPU side's: gemm_a8w8_blockscale_kparams.c.
 *
 * The launch rules here and the kernels in templates/gemm_a8w8_blockscale_*.cuh must agree; the
 * kernel traps when it is given less shared memory or other threads than these rules promise, so a
 * disagreement is a recorded fault, never a silent wrong answer. */
#include <string.h>

#include "../../templates/gemm_a8w8_blockscale_args.h"
#include "../core/error.h"
#include "../core/limits.h"
#include "../core/op.h"
#include "gemm_a8w8_blockscale_tail.h"

static const char *const FAMILIES[] = {"mma", "sm90", NULL};
static const char *const DERIVED[] = {"threads", "smem_bytes", NULL};
/* Both families read these from args (group_m, split_k) when instantiated with 0 for them. */
static const char *const LAUNCH_PARAMS[] = {"GROUP_M", "SPLIT_K", NULL};

/* What each family's template accepts: its parameters with their ranges (the rest of its rules are
 * static_asserts, reported as compile errors, or constraints of the space). The bounds also keep
 * the launch arithmetic far from overflow. */
typedef struct param_range {
  const char *name;
  int64_t lo, hi;
  int64_t absent; /* an optional parameter's value when the space leaves it out */
} param_range;

static const param_range MMA_PARAMS[] = {{"BLOCK_M", 16, 512}, {"BLOCK_N", 16, 512}, {"BLOCK_K", 128, 128},
                                         {"WARPS_M", 1, 16},   {"WARPS_N", 1, 16},   {"STAGES", 2, 16},
                                         {"SPLIT_K", 1, 64},   {NULL, 0, 0}};
static const param_range MMA_OPTIONAL[] = {{"GROUP_M", 1, 64, 1}, {"B_HINT", 0, 2, 0}, {NULL, 0, 0, 0}};
static const param_range SM90_PARAMS[] = {{"BLOCK_M", 16, 256}, {"BLOCK_N", 16, 256}, {"STAGES", 2, 16},
                                          {"GROUP_M", 1, 64},   {"SPLIT_K", 1, 64},   {"PINGPONG", 0, 2},
                                          {NULL, 0, 0}};
/* Optional sm90 parameters, with the template's defaults: clusters (CTAs along M sharing B, along N
 * sharing A), k-blocks in flight per math warpgroup, RESCALE (one accumulator rescaled in place
 * instead of a separate result), STORE (the producer's idle warps store the results; 2: from two
 * staging areas per math warpgroup; 3: TMA tensor stores issued by the math warpgroups), CLUSTER_K
 * (two or four CTAs of a cluster split a tile's k-blocks and exchange halves or quarters of their
 * partials through shared memory), SWAP_AB
 * (the weights on the wgmma's M side, the tokens on its N: decode-sized tiles of 16 to 64 rows),
 * SCALE_KB (a unit's scales copied into shared memory, for K / 128 up to SCALE_KB; 0: read from
 * global memory by the math threads). */
static const param_range SM90_OPTIONAL[] = {{"CLUSTER_M", 1, 2, 1}, {"CLUSTER_N", 1, 2, 1}, {"KPIPE", 1, 2, 1},
                                            {"RESCALE", 0, 1, 0},   {"STORE", 0, 3, 0},     {"CLUSTER_K", 1, 4, 1},
                                            {"SWAP_AB", 0, 1, 0},   {"SCALE_KB", 0, 128, 0}, {NULL, 0, 0, 0}};

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t align_up(int64_t a, int64_t b) { return div_up(a, b) * b; }

/* Bytes of one pipeline stage of the mma family: the A and B tiles (128 bytes of K per row), the
 * A scales of the tile's rows, and up to four B scales; padded to 128 bytes. */
static int64_t mma_stage_bytes(int64_t bm, int64_t bn) { return align_up((bm + bn) * 128 + bm * 4 + 16, 128); }

/* The sm90 family's math warpgroups: one for BLOCK_M = 64, three for 192, two for 128 and 256 (each takes BLOCK_M / 128
 * slices of 64 rows); with SWAP_AB one per 64 columns (weight rows) of BLOCK_N. */
static int64_t sm90_math_wg(int64_t bm, int64_t bn, int64_t swap) {
  return swap ? bn / 64 : bm == 192 ? 3 : bm >= 128 ? 2 : 1;
}

static int64_t gcd64(int64_t a, int64_t b) { return b == 0 ? a : gcd64(b, a % b); }

/* The weight-scale blocks a tile of BLOCK_N columns may touch, as the kernel keeps them
 * (at_sm90::scale_blocks): one when BLOCK_N divides 128, two when each 64-column segment lies in
 * one block or the tile touches at most two, else three. */
static int64_t sm90_scale_blocks(int64_t bn) {
  if (128 % bn == 0) return 1;
  if (bn % 64 == 0 && bn % 128 != 0) return 2;
  if (bn % 128 != 0 && 128 - gcd64(bn, 128) + bn <= 256) return 2;
  return 3;
}

/* The sm90 family's shared memory (templates/gemm_a8w8_blockscale_sm90.cuh, at_sm90::layout):
 * STAGES x (A + B tiles), a bf16 staging area of 64 rows x (2 EPI_N + 16 or 32) bytes per math
 * warpgroup (EPI_N: BLOCK_N, or half of it above 128 or with CLUSTER_K 2, staged in two passes; a
 * quarter with CLUSTER_K 4), with CLUSTER_K 2 at least one exchange chunk (128 threads x up to 32
 * floats, at_sm90::layout), with CLUSTER_K 4 three slots of a quarter's floats, and two more
 * mbarriers per math warpgroup, two mbarriers per stage and flags. STORE 2 doubles the staging
 * areas (the store warps copy one while the math warpgroup stages into the other). With SWAP_AB a
 * math warpgroup stages BLOCK_M rows of its 64 columns. SCALE_KB: two slots of (BLOCK_M + the
 * weight-scale blocks a tile may touch) x SCALE_KB floats (a unit's scales) and four mbarriers. */
static int64_t sm90_smem_bytes(int64_t bm, int64_t bn, int64_t stages, int64_t ck, int64_t store, int64_t swap,
                               int64_t scale_kb) {
  const int64_t epi_n = swap ? 64 : ck == 4 ? bn / 4 : bn > 128 || ck == 2 ? bn / 2 : bn, half = bn / 4;
  /* the fewest equal chunks of whole float4s, at most 32 floats each */
  const int64_t xf = half <= 32 ? half : half % 8 == 0 ? half / 2 : half % 12 == 0 ? half / 3 : 4;
  const int64_t x_bytes = ck == 2 ? 128 * xf * 4 : ck == 4 ? 3 * 128 * (bn / 8) * 4 : 0;
  const int64_t pitch = epi_n * 2 + (epi_n % 16 == 8 ? 32 : 16); /* padded against bank conflicts */
  const int64_t rows = swap ? bm : 64, c_wg = rows * pitch > x_bytes ? rows * pitch : x_bytes;
  const int64_t wg = sm90_math_wg(bm, bn, swap);
  const int64_t scales = scale_kb ? 2 * scale_kb * (bm + sm90_scale_blocks(bn)) * 4 + 32 : 0;
  return stages * (bm + bn) * 128 + wg * c_wg * (store == 2 ? 2 : 1) + scales + 2 * stages * 8 + (ck > 1 ? 16 * wg : 0) +
         16;
}

static int has_param(const at_params *p, const char *name) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->names[i], name) == 0) return 1;
  return 0;
}

static const param_range *find_range(const param_range *r, const char *name) {
  for (; r->name; r++)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}

static int check_param(const char *family, const char *name, int64_t v) {
  const param_range *r = NULL;
  if (strcmp(family, "mma") == 0) {
    r = find_range(MMA_PARAMS, name);
    if (!r) r = find_range(MMA_OPTIONAL, name);
  } else if (strcmp(family, "sm90") == 0) {
    r = find_range(SM90_PARAMS, name);
    if (!r) r = find_range(SM90_OPTIONAL, name);
  }
  if (r && (v < r->lo || v > r->hi))
    return at_fail(AT_ERR_INPUT, "%s = %lld is outside %lld..%lld for family %s", name, (long long)v, (long long)r->lo,
                   (long long)r->hi, family);
  return AT_OK;
}

static int require(const char *family, const param_range *r, const at_params *p) {
  for (; r->name; r++) {
    if (!has_param(p, r->name)) return at_fail(AT_ERR_INPUT, "family %s needs the parameter %s", family, r->name);
    AT_TRY(check_param(family, r->name, at_params_get(p, r->name, 0)));
  }
  return AT_OK;
}

static int derive(const char *family, const at_params *p, int64_t *out) {
  int64_t bm = at_params_get(p, "BLOCK_M", 0), bn = at_params_get(p, "BLOCK_N", 0);
  if (strcmp(family, "mma") == 0) {
    AT_TRY(require(family, MMA_PARAMS, p));
    out[0] = at_params_get(p, "WARPS_M", 0) * at_params_get(p, "WARPS_N", 0) * 32;
    out[1] = at_params_get(p, "STAGES", 0) * mma_stage_bytes(bm, bn);
    return AT_OK;
  }
  if (strcmp(family, "sm90") == 0) {
    AT_TRY(require(family, SM90_PARAMS, p));
    for (const param_range *r = SM90_OPTIONAL; r->name; r++)
      AT_TRY(check_param(family, r->name, at_params_get(p, r->name, r->absent)));
    const int64_t swap = at_params_get(p, "SWAP_AB", 0);
    if (swap && bm != 16 && bm != 32 && bm != 64)
      return at_fail(AT_ERR_INPUT, "family sm90: with SWAP_AB, BLOCK_M must be 16, 32 or 64 (got %lld)", (long long)bm);
    if (swap && bn != 64 && bn != 128)
      return at_fail(AT_ERR_INPUT, "family sm90: with SWAP_AB, BLOCK_N must be 64 or 128 (got %lld)", (long long)bn);
    if (!swap && bm != 64 && bm != 128 && bm != 192 && bm != 256)
      return at_fail(AT_ERR_INPUT, "family sm90: BLOCK_M must be 64, 128, 192 or 256 (got %lld)", (long long)bm);
    if (at_params_get(p, "CLUSTER_M", 1) == 2 && bn % 16)
      return at_fail(AT_ERR_INPUT, "family sm90: CLUSTER_M = 2 needs BLOCK_N a multiple of 16 (got %lld)", (long long)bn);
    const int64_t scale_kb = at_params_get(p, "SCALE_KB", 0);
    if (scale_kb % 4)
      return at_fail(AT_ERR_INPUT, "family sm90: SCALE_KB must be a multiple of 4 (got %lld)", (long long)scale_kb);
    const int64_t store = at_params_get(p, "STORE", 0), ck = at_params_get(p, "CLUSTER_K", 1);
    if (scale_kb && (swap || store == 1 || store == 2))
      return at_fail(AT_ERR_INPUT,
                     "family sm90: SCALE_KB needs SWAP_AB 0 and STORE 0 or 3 (its scales are copied by the producer's warp 1)");
    if (ck != 1 && ck != 2 && ck != 4)
      return at_fail(AT_ERR_INPUT, "family sm90: CLUSTER_K must be 1, 2 or 4 (got %lld)", (long long)ck);
    const int64_t split = at_params_get(p, "SPLIT_K", 1);
    const int64_t cm = at_params_get(p, "CLUSTER_M", 1), cn = at_params_get(p, "CLUSTER_N", 1);
    if (ck == 4 && (store != 0 || split != 1 || bm > 128 || swap || cm * cn != 1 || bn % 32))
      return at_fail(AT_ERR_INPUT,
                     "family sm90: CLUSTER_K 4 needs STORE 0, SPLIT_K 1, BLOCK_M <= 128, SWAP_AB 0, CLUSTER_M and "
                     "CLUSTER_N 1 and BLOCK_N a multiple of 32 (got STORE %lld, SPLIT_K %lld, BLOCK_M %lld, "
                     "SWAP_AB %lld, CLUSTER_M %lld, CLUSTER_N %lld, BLOCK_N %lld)",
                     (long long)store, (long long)split, (long long)bm, (long long)swap, (long long)cm, (long long)cn,
                     (long long)bn);
    if (store == 3 && (swap || (bn > 128 || ck == 2 ? bn / 2 : bn) % 64))
      return at_fail(AT_ERR_INPUT,
                     "family sm90: STORE 3 (tensor stores) needs SWAP_AB 0 and BLOCK_N 64, 128 or 256 (128 or 256 with CLUSTER_K 2; got %lld)",
                     (long long)bn);
    out[0] = 128 * (1 + sm90_math_wg(bm, bn, swap));
    out[1] = sm90_smem_bytes(bm, bn, at_params_get(p, "STAGES", 0), ck, store, swap, scale_kb);
    return AT_OK;
  }
  return at_fail(AT_ERR_INPUT, "unknown family '%s' (gemm_a8w8_blockscale has: mma, sm90)", family);
}

/* sm90 needs wgmma and setmaxnreg: sm_90a exactly (sm_100 has neither in this form). */
static const char *family_unsupported(const char *family, const char *arch) {
  if (strcmp(family, "sm90") == 0 && strcmp(arch, "sm_90a") != 0)
    return "family sm90 needs sm_90a (wgmma, setmaxnreg, TMA)";
  return NULL;
}

static int check_shape(const at_shape *s, int *dim) {
  /* M and N up to 2^28 keep the kernel's int tile arithmetic (GROUP_M x tiles) far from overflow. */
  const int64_t big = (int64_t)1 << 30, big_mn = (int64_t)1 << 28;
  *dim = 0;
  if (s->m < 1) return at_fail(AT_ERR_INPUT, "M must be at least 1 (got %lld)", (long long)s->m);
  if (s->m > big_mn) return at_fail(AT_ERR_INPUT, "M must be at most 2^28 (got %lld)", (long long)s->m);
  *dim = 1;
  if (s->n < 8 || s->n % 8) return at_fail(AT_ERR_INPUT, "N must be a positive multiple of 8 (got %lld)", (long long)s->n);
  if (s->n > big_mn) return at_fail(AT_ERR_INPUT, "N must be at most 2^28 (got %lld)", (long long)s->n);
  *dim = 2;
  if (s->k < 128 || s->k % 128)
    return at_fail(AT_ERR_INPUT, "K must be a positive multiple of 128 (got %lld)", (long long)s->k);
  if (s->k > big) return at_fail(AT_ERR_INPUT, "K must be at most 2^30 (got %lld)", (long long)s->k);
  return AT_OK;
}

static int launch(const char *family, const at_params *p, const at_shape *s, int sm_count, at_launch *out) {
  int64_t derived[2];
  AT_TRY(derive(family, p, derived));
  int64_t bm = at_params_get(p, "BLOCK_M", 0), bn = at_params_get(p, "BLOCK_N", 0);
  int64_t split = at_params_get(p, "SPLIT_K", 1);
  int64_t tiles = div_up(s->m, bm) * div_up(s->n, bn);
  if (tiles * split > 0x7fffffff || split > 65535)
    return at_fail(AT_ERR_INPUT, "grid too large for M=%lld N=%lld", (long long)s->m, (long long)s->n);
  memset(out, 0, sizeof *out);
  if (strcmp(family, "sm90") == 0) {
    /* Persistent: one cluster per `cluster` SMs walks the cluster tiles x SPLIT_K units; each math
     * warpgroup of each CTA tile has its own split-K counter. CLUSTER_K 2 makes a cluster of two
     * CTAs per tile (its k halves). */
    int64_t cm = at_params_get(p, "CLUSTER_M", 1), cn = at_params_get(p, "CLUSTER_N", 1);
    int64_t cluster = cm * cn * at_params_get(p, "CLUSTER_K", 1);
    int64_t ctiles = div_up(s->m, bm * cm) * div_up(s->n, bn * cn), units = ctiles * split;
    int64_t clusters = sm_count > 0 && units > sm_count / cluster ? sm_count / cluster : units;
    if (clusters < 1) clusters = 1;
    out->grid[0] = (unsigned)(clusters * cluster);
    out->grid[1] = out->grid[2] = 1;
    out->block[0] = (unsigned)derived[0];
    out->block[1] = out->block[2] = 1;
    out->cluster = (unsigned)cluster;
    out->smem_bytes = (unsigned)derived[1];
    out->griddep = 1;
    out->persistent = 1;
    if (split > 1) {
      out->ws_counters = ctiles * cluster * sm90_math_wg(bm, bn, at_params_get(p, "SWAP_AB", 0));
      out->ws_partial_bytes = (size_t)(split * ctiles * cluster * bm * bn * 4);
    }
    return AT_OK;
  }
  out->grid[0] = (unsigned)tiles;
  out->grid[1] = 1;
  out->grid[2] = (unsigned)split;
  out->block[0] = (unsigned)derived[0];
  out->block[1] = out->block[2] = 1;
  out->cluster = 1;
  out->smem_bytes = (unsigned)derived[1];
  /* Split-K: one arrival counter per tile, then every split's fp32 partial tile. */
  if (split > 1) {
    out->ws_counters = tiles;
    out->ws_partial_bytes = (size_t)(split * tiles * bm * bn * 4);
  }
  return AT_OK;
}

static double flops(const at_shape *s) { return 2.0 * (double)s->m * (double)s->n * (double)s->k; }

static double min_bytes(const at_shape *s) {
  double m = (double)s->m, n = (double)s->n, k = (double)s->k;
  return m * k + n * k + m * (k / 128) * 4 + ((double)((s->n + 127) / 128)) * (k / 128) * 4 + m * n * 2;
}

/* The tail plan's own estimate (after / before) of what the runtime's split saves (mode: op.h). */
static double plan_factor(const char *family, const at_params *p, const at_shape *s, int sm_count, int mode) {
  at_a8w8_tail t;
  at_a8w8_tail_plan(family, p, s, sm_count, mode == AT_PLAN_UNTUNED, &t);
  if (mode == AT_PLAN_LAST_WAVE && strcmp(at_a8w8_tail_kind(&t), "last wave") != 0) return 1.0;
  return t.split && t.before > 0 && t.after > 0 ? t.after / t.before : 1.0;
}

/* SCALE_KB on shape s: K / 128, where the slots can hold it (a multiple of 4 up to the parameter's
 * range, and the shared memory of the config's stages with slots of that size within sm_90a's
 * opt-in limit); 0 elsewhere, the form without it. A larger SCALE_KB would take shared memory for
 * nothing; with a smaller one the kernel reads the scales from global memory through generic loads,
 * 2-3% slower than the form without it (docs/perf.md, "A unit's scales in shared memory"). */
static int64_t shape_value(const char *family, const at_params *p, const at_shape *s) {
  const int64_t kb = s->k / 128;
  at_limits lim;
  if (strcmp(family, "sm90") != 0 || kb % 4 || kb > 128 || at_limits_for_arch("sm_90a", &lim)) return 0;
  const int64_t bm = at_params_get(p, "BLOCK_M", 0), bn = at_params_get(p, "BLOCK_N", 0);
  const int64_t smem = sm90_smem_bytes(bm, bn, at_params_get(p, "STAGES", 0), at_params_get(p, "CLUSTER_K", 1),
                                       at_params_get(p, "STORE", 0), at_params_get(p, "SWAP_AB", 0), kb);
  return smem <= lim.max_smem_per_block ? kb : 0;
}

const at_op at_op_gemm_a8w8_blockscale = {
    .name = "gemm_a8w8_blockscale",
    .builtin = {"mma", "mma", "gemm_a8w8_blockscale_mma.cuh",
                "gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>",
                "{\"BLOCK_K\":128,\"BLOCK_M\":64,\"BLOCK_N\":128,\"B_HINT\":0,\"GROUP_M\":8,\"SPLIT_K\":1,"
                "\"STAGES\":3,\"WARPS_M\":2,\"WARPS_N\":2}"},
    .families = FAMILIES,
    .derived = DERIVED,
    .launch_params = LAUNCH_PARAMS,
    .derive = derive,
    .check_param = check_param,
    .family_unsupported = family_unsupported,
    .check_shape = check_shape,
    .launch = launch,
    .flops = flops,
    .min_bytes = min_bytes,
    .plan_factor = plan_factor,
    .shape_param = "SCALE_KB",
    .shape_value = shape_value,
};

_Static_assert(sizeof(at_gemm_a8w8_blockscale_args) == 96, "kernel ABI struct changed size");

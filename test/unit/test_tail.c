/* test_tail.c: the runtime's tail plan (engine/ops/gemm_a8w8_blockscale_tail.h), on the CPU.
 *
 * For configs and shapes where the plan splits, the units the main launch leaves (unit_end and
 * after, walked as the sm90 template's locate() walks them) must be exactly the cluster tiles of
 * the tail's rectangle C[m0:M][n0:N], n0 on a weight-scale block, and the main launch must end at
 * least a wave earlier. Where it must not split (one wave, a full last wave, split K, CLUSTER_K 2,
 * the mma family), it does not. And the two shapes it exists for split as docs/perf.md says. Beside
 * the plan, the launch rule's persistent grids, which at_launch_kernel caps at the clusters the GPU
 * holds (the tail by rows, a cluster per tile, is not one: runtime.c clears the flag), and the
 * rules of STORE 3 (TMA tensor stores) in the launch rule and the launch protocol's plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/core/error.h"
#include "../../engine/core/op.h"
#include "../../engine/gpu/launch.h"
#include "../../engine/ops/gemm_a8w8_blockscale_kparams.h"
#include "../../engine/ops/gemm_a8w8_blockscale_tail.h"
#include "check.h"

typedef struct cfg {
  int64_t bm, bn, cm, cn, group, split_k, cluster_k;
} cfg;

static void plan(const cfg *c, int64_t m, int64_t n, int64_t k, int sm, at_a8w8_tail *t) {
  const char *names[] = {"BLOCK_M", "BLOCK_N", "CLUSTER_K", "CLUSTER_M", "CLUSTER_N", "GROUP_M", "SPLIT_K"};
  const int64_t values[] = {c->bm, c->bn, c->cluster_k, c->cm, c->cn, c->group, c->split_k};
  at_params p = {names, values, 7};
  at_shape s = {m, n, k};
  at_a8w8_tail_plan("sm90", &p, &s, sm, 0, t);
}

/* The template's walk (locate): unit u's cluster tile, GROUP_M rows of tiles at a time. */
static void locate(int64_t u, int64_t tiles_m, int64_t tiles_n, int64_t group, int64_t *tm, int64_t *tn) {
  const int64_t group_size = group * tiles_n, first_m = u / group_size * group;
  const int64_t gm = tiles_m - first_m < group ? tiles_m - first_m : group, in_group = u % group_size;
  *tm = first_m + in_group % gm;
  *tn = in_group / gm;
}

/* Checks a split plan against the walk; returns whether it split. */
static int check_plan(const cfg *c, int64_t m, int64_t n, int64_t k, int sm) {
  at_a8w8_tail t;
  plan(c, m, n, k, sm, &t);
  if (!t.split) return 0;
  const int64_t rows = c->bm * c->cm, cols = c->bn * c->cn;
  const int64_t tiles_m = (m + rows - 1) / rows, tiles_n = (n + cols - 1) / cols, units = tiles_m * tiles_n;
  const int64_t slots = sm / (c->cm * c->cn);
  if (t.main_n) {
    /* Padding: the main launch takes the whole columns of tiles, the tail the last one. */
    CHECK(t.main_n == (tiles_n - 1) * cols && t.main_n % 128 == 0 && t.n0 == t.main_n && t.m0 == 0);
    CHECK(tiles_n * cols - n > n / 10);
    CHECK_EQ_INT(t.unit_end, tiles_m * (tiles_n - 1));
    CHECK(t.after <= 0.99 * t.before);
    return 1;
  }
  if (t.main_m) {
    /* By rows: the main launch takes whole rows of cluster tiles, a wave less; the tail the rows
     * after, in 128 x 256 tiles split in K, a cluster per tile. */
    CHECK(t.main_m % rows == 0 && t.main_m < m && t.m0 == t.main_m && t.n0 == 0);
    CHECK_EQ_INT(t.unit_end, t.main_m / rows * tiles_n);
    CHECK((t.unit_end - 1) / slots < (units - 1) / slots);
    CHECK(t.tile == 2 && t.cluster_k == 2 && t.grid_all && k / 128 >= 16);
    CHECK_EQ_INT(at_a8w8_tail_grid(&t, m - t.m0, n), (m - t.m0 + 127) / 128 * ((n + 255) / 256) * 2);
    CHECK(t.after <= 0.95 * t.before);
    return 1;
  }
  CHECK(!t.grid_all && at_a8w8_tail_grid(&t, m - t.m0, n - t.n0) == 0);
  CHECK(t.unit_end > 0 && t.unit_end < units);
  CHECK((units - 1) / slots > (t.unit_end - 1) / slots); /* a wave less */
  CHECK(t.n0 % 128 == 0 && t.n0 % cols == 0 && t.m0 % rows == 0 && t.m0 < m && t.n0 < n);
  CHECK(t.cluster_k == 1 || t.cluster_k == 2);
  char json[256];
  CHECK((t.tile == 0 || t.tile == 1) && at_a8w8_tail_params(t.tile, t.cluster_k, json, sizeof json) == 0);
  CHECK(t.after <= 0.99 * t.before);
  int64_t inside = 0, wrong = 0;
  for (int64_t u = 0; u < units; u++) {
    int64_t tm, tn;
    locate(u, tiles_m, tiles_n, c->group, &tm, &tn);
    const int in_rect = tm * rows >= t.m0 && tn * cols >= t.n0;
    if (u >= t.unit_end) inside += in_rect;
    if ((u >= t.unit_end) != in_rect) wrong++;
  }
  CHECK_EQ_INT(wrong, 0);
  CHECK_EQ_INT(inside, units - t.unit_end);
  return 1;
}

/* A split of the last wave as given, in 128 x 128 tail tiles split in K by a cluster of two. */
static void expect_tail(const cfg *c, int64_t m, int64_t n, int64_t k, int64_t unit_end, int64_t m0, int64_t n0) {
  at_a8w8_tail t;
  plan(c, m, n, k, 132, &t);
  CHECK(t.split);
  CHECK_EQ_INT(t.unit_end, unit_end);
  CHECK_EQ_INT(t.m0, m0);
  CHECK_EQ_INT(t.n0, n0);
  CHECK_EQ_INT(t.tile, 0);
  CHECK_EQ_INT(t.cluster_k, 2);
}

/* The sm90 launch rule: a persistent grid of sm_count / cluster clusters (or one per unit when
 * fewer), marked persistent so that the launch may cap it; the mma family's grid is one block per
 * tile and split, not persistent. */
static void launch_rule(void) {
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  CHECK(op != NULL && op->launch != NULL);
  if (!op || !op->launch) return;
  const char *names[] = {"BLOCK_M", "BLOCK_N", "STAGES", "GROUP_M", "SPLIT_K", "PINGPONG", "CLUSTER_M", "CLUSTER_N"};
  const int64_t four[] = {128, 128, 6, 8, 1, 0, 2, 2}; /* clusters of four */
  at_params p = {names, four, 8};
  at_shape big = {3072, 28672, 4096}, small = {256, 512, 4096};
  at_launch l;
  CHECK(op->launch("sm90", &p, &big, 132, &l) == AT_OK);
  CHECK(l.persistent == 1 && l.cluster == 4 && l.grid[0] == 132 && l.griddep == 1);
  CHECK(op->launch("sm90", &p, &small, 132, &l) == AT_OK); /* 1 x 2 cluster tiles: 2 clusters */
  CHECK(l.persistent == 1 && l.cluster == 4 && l.grid[0] == 8);
  const char *mnames[] = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS_M", "WARPS_N", "STAGES", "SPLIT_K"};
  const int64_t mvals[] = {64, 64, 128, 2, 2, 3, 1};
  at_params mp = {mnames, mvals, 7};
  CHECK(op->launch("mma", &mp, &big, 132, &l) == AT_OK);
  CHECK(l.persistent == 0 && l.cluster == 1 && l.grid[0] == 48 * 448);
  /* What at_launch_kernel launches of a persistent grid: the H100 holds 30 clusters of four, 66 of
   * two; a grid within them, or an unknown count, is unchanged. */
  CHECK(at_launch_grid_fit(132, 4, 30) == 120 && at_launch_grid_fit(132, 2, 66) == 132);
  CHECK(at_launch_grid_fit(8, 4, 30) == 8 && at_launch_grid_fit(132, 4, 0) == 132);
  CHECK(at_launch_grid_fit(120, 4, 30) == 120 && at_launch_grid_fit(124, 4, 30) == 120);
}

/* STORE 3 (TMA tensor stores): passes of whole 64-column boxes only, the shared memory of STORE 0
 * (one staging area), and the launch protocol makes C's tensor map for those kernels alone. */
static void tensor_stores(void) {
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  if (!op || !op->launch) return;
  const char *names[] = {"BLOCK_M", "BLOCK_N", "STAGES", "GROUP_M", "SPLIT_K", "PINGPONG", "RESCALE", "STORE", "CLUSTER_K"};
  at_shape s = {2048, 4096, 4096};
  at_launch l0, l3, bad;
  const int64_t s0[] = {128, 256, 4, 8, 1, 0, 1, 0, 1}, s3[] = {128, 256, 4, 8, 1, 0, 1, 3, 1};
  at_params p0 = {names, s0, 9}, p3 = {names, s3, 9};
  CHECK(op->launch("sm90", &p0, &s, 132, &l0) == AT_OK);
  CHECK(op->launch("sm90", &p3, &s, 132, &l3) == AT_OK);
  CHECK(l3.smem_bytes == l0.smem_bytes && l3.block[0] == l0.block[0]);
  const int64_t ck[] = {128, 128, 4, 8, 1, 0, 0, 3, 2}; /* split K in a cluster: halves of 64 columns */
  at_params pck = {names, ck, 9};
  CHECK(op->launch("sm90", &pck, &s, 132, &l3) == AT_OK);
  const int64_t w96[] = {128, 96, 4, 8, 1, 0, 0, 3, 1}, ck64[] = {128, 64, 4, 8, 1, 0, 0, 3, 2},
                s4[] = {128, 256, 4, 8, 1, 0, 1, 4, 1};
  at_params p96 = {names, w96, 9}, p64 = {names, ck64, 9}, p4 = {names, s4, 9};
  CHECK(op->launch("sm90", &p96, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "STORE 3 (tensor stores) needs") && strstr(at_errmsg(), "got 96"));
  CHECK(op->launch("sm90", &p64, &s, 132, &bad) == AT_ERR_INPUT); /* a 32-column half */
  CHECK(op->launch("sm90", &p4, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "STORE = 4 is outside 0..3") != NULL);
  at_a8w8_plan plan;
  CHECK(at_a8w8_plan_of("sm90", &p3, &plan) == AT_OK && plan.tma == 1 && plan.c_map == 1);
  CHECK(at_a8w8_plan_of("sm90", &p0, &plan) == AT_OK && plan.tma == 1 && plan.c_map == 0);
}

/* CLUSTER_K 4 (split K four ways in a cluster): clusters of four, the staging area grown to three
 * slots of a quarter's floats where that is larger, and the configs the kernel cannot run refused
 * with their values named. */
static void split_k_four(void) {
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  if (!op || !op->launch) return;
  const char *names[] = {"BLOCK_M", "BLOCK_N", "STAGES", "GROUP_M", "SPLIT_K", "PINGPONG", "KPIPE", "STORE", "CLUSTER_K",
                         "CLUSTER_N"};
  at_shape s = {16, 576, 7168};
  at_launch l2, l4, bad;
  const int64_t k2[] = {64, 32, 8, 1, 1, 0, 2, 0, 2, 1}, k4[] = {64, 32, 8, 1, 1, 0, 2, 0, 4, 1};
  at_params p2 = {names, k2, 10}, p4 = {names, k4, 10};
  CHECK(op->launch("sm90", &p2, &s, 132, &l2) == AT_OK);
  CHECK(op->launch("sm90", &p4, &s, 132, &l4) == AT_OK);
  /* 18 tiles of 64 x 32: 18 clusters of four; the staging area (64 rows of 8 columns padded to 48
   * bytes: 3 KB) holds the three 2 KB slots only as 6 KB */
  CHECK(l4.cluster == 4 && l4.grid[0] == 72 && l4.persistent == 1);
  CHECK(l2.cluster == 2 && l2.grid[0] == 36);
  CHECK(l4.smem_bytes == 8 * (64 + 32) * 128 + 3 * 128 * 4 * 4 + 2 * 8 * 8 + 16 + 16);
  const int64_t wide[] = {128, 256, 2, 1, 1, 0, 1, 0, 4, 1}; /* 256 wide: three 16 KB slots a warpgroup */
  at_params pw = {names, wide, 10};
  CHECK(op->launch("sm90", &pw, &s, 132, &l4) == AT_OK);
  CHECK(l4.smem_bytes == 2 * (128 + 256) * 128 + 2 * 3 * 128 * 32 * 4 + 2 * 2 * 8 + 2 * 16 + 16);
  const int64_t three[] = {64, 32, 8, 1, 1, 0, 2, 0, 3, 1}, stored[] = {64, 32, 8, 1, 1, 0, 2, 3, 4, 1},
                shared[] = {64, 32, 8, 1, 1, 0, 2, 0, 4, 2}, odd[] = {64, 48, 8, 1, 1, 0, 2, 0, 4, 1};
  at_params p3 = {names, three, 10}, ps = {names, stored, 10}, pn = {names, shared, 10}, po = {names, odd, 10};
  CHECK(op->launch("sm90", &p3, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "CLUSTER_K must be 1, 2 or 4 (got 3)") != NULL);
  CHECK(op->launch("sm90", &ps, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "CLUSTER_K 4 needs") && strstr(at_errmsg(), "STORE 3"));
  CHECK(op->launch("sm90", &pn, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "CLUSTER_N 2"));
  CHECK(op->launch("sm90", &po, &s, 132, &bad) == AT_ERR_INPUT);
  CHECK(strstr(at_errmsg(), "BLOCK_N 48"));
  /* no tail is planned on it (as on CLUSTER_K 2) */
  at_a8w8_tail t;
  at_a8w8_tail_plan("sm90", &p4, &s, 132, 0, &t);
  CHECK(t.split == 0);
}

int main(void) {
  launch_rule();
  tensor_stores();
  split_k_four();
  /* 4096 x 28672 x 4096 with the committed 128 x 256 tiles in clusters of two along M: 1,792 units
   * on 66 clusters, 10 in the last wave; the tail takes the last 2 columns of the last 8 rows of
   * cluster tiles (2048 x 512), 64 tiles of 128 x 128 split in K over 128 CTAs. */
  const cfg big = {128, 256, 2, 1, 8, 1, 1};
  at_a8w8_tail t;
  expect_tail(&big, 4096, 28672, 4096, 1776, 2048, 28672 - 512);
  /* 512 x 6144 x 4096 in 128 x 128 tiles paired along M: 96 units on 66 clusters; the tail is the
   * last 15 columns (512 x 1920): one wave and a half become one wave and a split tail. */
  const cfg mid = {128, 128, 2, 1, 8, 1, 1};
  expect_tail(&mid, 512, 6144, 4096, 66, 0, 6144 - 1920);

  /* 6000 x 1792 x 12288 in the default file's 128 x 256 tiles paired along M: 168 units on 66
   * clusters (2.55 waves), whose last group of rows holds fewer than the 36 past the second wave. By
   * rows: the main launch takes the first 18 rows of cluster tiles (4608 rows, 126 units), the tail
   * the 1392 rows after, 77 tiles of 128 x 256 split in K (154 CTAs), 12 SMs of them from the main
   * launch's second wave on. The same call in 128 x 128 tiles (no cluster, 47 x 14 units: 4.98
   * waves) is left whole. */
  plan(&big, 6000, 1792, 12288, 132, &t);
  CHECK(t.split && t.main_m == 4608 && t.m0 == 4608 && t.n0 == 0 && t.unit_end == 126);
  CHECK(t.tile == 2 && t.cluster_k == 2 && t.grid_all && t.after < 0.95 * t.before);
  CHECK(strcmp(at_a8w8_tail_kind(&t), "last rows") == 0);
  CHECK_EQ_INT(at_a8w8_tail_grid(&t, 6000 - 4608, 1792), 154);
  const cfg flat = {128, 128, 1, 1, 8, 1, 1};
  plan(&flat, 6000, 1792, 12288, 132, &t);
  CHECK(!t.split);
  /* K shorter than 2048 (halves of 8 k-blocks) never: 640 x 7168 in 192 x 192 tiles (76 units, 1.15
   * waves) splits by rows at K = 2048 (predicted 0.60 of one launch), and by the last wave at K =
   * 1024, where by rows would be predicted 0.69. */
  const cfg tall = {192, 192, 1, 1, 8, 1, 1};
  plan(&tall, 640, 7168, 2048, 132, &t);
  CHECK(t.split && t.main_m == 384 && t.unit_end == 76);
  plan(&tall, 640, 7168, 1024, 132, &t);
  CHECK(t.split && !t.main_m);

  /* Never: one wave or less, a full last wave, split K, CLUSTER_K 2, another family. */
  plan(&mid, 512, 4096, 4096, 132, &t); /* 64 units */
  CHECK(!t.split);
  const cfg one = {128, 128, 1, 1, 1, 1, 1};
  plan(&one, 128 * 12, 128 * 11, 4096, 132, &t); /* 132 units: exactly one wave */
  CHECK(!t.split);
  plan(&one, 128 * 24, 128 * 11, 4096, 132, &t); /* two full waves */
  CHECK(!t.split);
  const cfg split = {128, 128, 1, 1, 8, 2, 1}, ck = {128, 128, 1, 1, 1, 1, 2};
  plan(&split, 4096, 28672, 4096, 132, &t);
  CHECK(!t.split);
  plan(&ck, 4096, 28672, 4096, 132, &t);
  CHECK(!t.split);
  {
    const char *names[] = {"BLOCK_M", "BLOCK_N"};
    const int64_t values[] = {128, 256};
    at_params p = {names, values, 2};
    at_shape s = {4096, 28672, 4096};
    at_a8w8_tail_plan("mma", &p, &s, 132, 1, &t);
    CHECK(!t.split);
  }

  /* A whole call for a tail config: only with `whole` (an untuned shape), one wave less than half
   * full, a predicted gain of 10%. 512 x 576 x 7168 in the default file's 128 x 128 tiles paired
   * along M: 10 units on 66 clusters. */
  {
    const char *names[] = {"BLOCK_M", "BLOCK_N", "CLUSTER_K", "CLUSTER_M", "CLUSTER_N", "GROUP_M", "SPLIT_K"};
    const int64_t values[] = {128, 128, 1, 2, 1, 8, 1};
    at_params p = {names, values, 7};
    at_shape s = {512, 576, 7168};
    at_a8w8_tail_plan("sm90", &p, &s, 132, 0, &t);
    CHECK(!t.split);
    at_a8w8_tail_plan("sm90", &p, &s, 132, 1, &t);
    CHECK(t.split && t.unit_end == 0 && t.m0 == 0 && t.n0 == 0 && t.after <= 0.9 * t.before);
    s.n = 7168; /* 2 x 56 = 112 units in 1.7 waves: neither a tail nor the whole call predicts a gain */
    at_a8w8_tail_plan("sm90", &p, &s, 132, 1, &t);
    CHECK(!t.split || t.unit_end > 0);
    /* 256 x 7168 x 8192 in the default file's 64 x 128 tiles paired along M (112 units, 1.7 waves):
     * whole, in 128 x 128 tiles (H100: 1.27x cuBLASLt's time to 1.11x). */
    const int64_t v64[] = {64, 128, 1, 2, 1, 8, 1};
    at_params p64 = {names, v64, 7};
    at_shape s256 = {256, 7168, 8192};
    at_a8w8_tail_plan("sm90", &p64, &s256, 132, 1, &t);
    CHECK(t.split && t.unit_end == 0 && t.tile == 0);
    at_a8w8_tail_plan("sm90", &p64, &s256, 132, 0, &t); /* tuned: never whole */
    CHECK(!t.split || t.unit_end > 0);
    s.n = 576, s.m = 128; /* decode-sized M: never whole */
    at_a8w8_tail_plan("sm90", &p, &s, 132, 1, &t);
    CHECK(!t.split || t.unit_end > 0);
  }

  /* Every split plan over a grid of configs and shapes covers exactly the units it leaves. */
  const int64_t bms[] = {64, 128, 192, 256}, bns[] = {64, 96, 112, 128, 192, 256}, groups[] = {1, 8};
  const int64_t ms[] = {129, 512, 1000, 2048, 3000, 4096, 8192}, ns[] = {576, 1024, 1280, 4096, 6144, 7168, 28672};
  int splits = 0, plans = 0;
  for (size_t a = 0; a < sizeof bms / sizeof *bms; a++)
    for (size_t b = 0; b < sizeof bns / sizeof *bns; b++)
      for (int64_t cm = 1; cm <= 2; cm++)
        for (int64_t cn = 1; cn <= 2; cn++)
          for (size_t g = 0; g < 2; g++)
            for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
              for (size_t j = 0; j < sizeof ns / sizeof *ns; j++) {
                if (cm * cn > 2) continue;
                const cfg c = {bms[a], bns[b], cm, cn, groups[g], 1, 1};
                splits += check_plan(&c, ms[i], ns[j], 4096, 132);
                splits += check_plan(&c, ms[i], ns[j], 1024, 114);
                plans += 2;
              }
  /* 8192 x 576 x 7168 in 256 x 256 cluster tiles: 3 columns of tiles compute 768 columns; the main
   * launch takes 512 (one wave of 64 units), the tail the last 64 columns. */
  plan(&big, 8192, 576, 7168, 132, &t);
  CHECK(t.split && t.main_n == 512 && t.n0 == 512 && t.m0 == 0 && t.unit_end == 64);
  /* The tail configs' parameters: 128 x 128 (six stages) and 64 x 64 (seven), CLUSTER_K as asked,
   * GROUP_M 8. */
  for (int tile = 0; tile < 2; tile++)
    for (int kk = 1; kk <= 2; kk++) {
      char json[256], want[64];
      const int rc = at_a8w8_tail_params(tile, kk, json, sizeof json);
      snprintf(want, sizeof want, "\"BLOCK_M\":%d,\"BLOCK_N\":%d,\"CLUSTER_K\":%d", tile ? 64 : 128, tile ? 64 : 128, kk);
      CHECK(rc == 0 && strstr(json, want));
      CHECK(rc == 0 && strstr(json, tile ? "\"STAGES\":7" : "\"STAGES\":6"));
      CHECK(rc == 0 && strstr(json, "\"GROUP_M\":8,")); /* CTAs running together share weight tiles */
    }
  {
    char json[256];
    CHECK(at_a8w8_tail_params(2, 2, json, sizeof json) == 0);
    CHECK(strstr(json, "\"BLOCK_M\":128,\"BLOCK_N\":256,\"CLUSTER_K\":2") && strstr(json, "\"RESCALE\":1") &&
          strstr(json, "\"KPIPE\":1") && strstr(json, "\"STAGES\":4"));
    int r = 0, c = 0;
    CHECK(at_a8w8_tail_tile(2, &r, &c) == 0 && r == 128 && c == 256);
    CHECK(at_a8w8_tail_tile(3, &r, &c) == -1);
  }
  char json_buf[256], small[8];
  CHECK(at_a8w8_tail_params(2, 1, json_buf, sizeof json_buf) == -1 &&
        at_a8w8_tail_params(0, 3, json_buf, sizeof json_buf) == -1);
  CHECK(at_a8w8_tail_params(0, 1, small, sizeof small) == -1);
  fprintf(stderr, "tail: %d of %d plans split\n", splits, plans);
  CHECK(splits > plans / 20);
  return check_summary();
}

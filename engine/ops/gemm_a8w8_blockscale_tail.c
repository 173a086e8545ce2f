/* gemm_a8w8_blockscale_tail.c: see gemm_a8w8_blockscale_tail.h. */
#include "gemm_a8w8_blockscale_tail.h"

#include <stdio.h>
#include <string.h>

const char AT_A8W8_TAIL_ENTRY[] = "gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, UNSPLIT, PINGPONG, "
                                  "CLUSTER_M, CLUSTER_N, KPIPE, RESCALE, STORE, CLUSTER_K>";

/* The tail configs: 128 x 128 with six stages (the deepest that fits with the staging areas) and
 * 64 x 64 with seven, each with two k-blocks in flight, as the tuner picked them for M = 512 to 2048
 * and for decode shapes; with CLUSTER_K 2 the exchange of their halves. Each with the penalty of its
 * time per product against the main config's, which the model assumes. Walked GROUP_M 8 rows of
 * tiles at a time, so that the CTAs running together share their weight tiles: a row at a time, a
 * whole call of two rows whose weights exceed L2 read them twice from memory (H100, docs/perf.md:
 * 256 x 16384 x 6656 ran 1.63x cuBLASLt's time). The third, for the tail by rows only: the large-M
 * tile, 128 x 256 accumulating in place (RESCALE 1) with four stages, always split in K by a cluster
 * of two (its halves' exchange); its penalty is per half tile (H100, docs/perf.md: the whole call
 * 6000 x 1792 x 12288 in it ran 0.946x the time of 128 x 256 pairs, whose 3 waves against its 2.5
 * put a half at 1.14x its share). */
typedef struct tail_tile {
  int m, n, stages, kpipe, rescale;
  double penalty;
} tail_tile;
/* The 64 x 64 tile's penalty (a comparison build may set another). 1.8 until session 39, when the
 * H100 ran every shape whose plan a larger one changes (over the Llama, shipped, llm.yaml and seven
 * unseen sets): with 2.5 the seven calls that lost with their 64 x 64 tail (320 x 28672 x 8192
 * 1.10x cuBLASLt's time, 512 x 5120 x 12800-27648, a full wave of 64 x 64 tiles over K of 8192 and
 * more) ran 0.89x-0.92x their time (8192 x 32768 x 6144: 0.995x), the others as before; 3.5 also
 * moved 30 tails to 128 x 128 CK2, 0.97x-1.05x (docs/perf.md, "The 64 x 64 tail's penalty"). */
#ifndef TAIL_PENALTY_64
#define TAIL_PENALTY_64 2.5
#endif
static const tail_tile MENU[] = {{128, 128, 6, 2, 0, 1.3}, {64, 64, 7, 2, 0, TAIL_PENALTY_64}, {128, 256, 4, 1, 1, 1.15}};
enum { MENU_LEN = sizeof MENU / sizeof MENU[0], RECT_MENU_LEN = 2, ROWS_TILE = 2 };

int at_a8w8_tail_params(int tile, int cluster_k, char *buf, size_t len) {
  if (tile < 0 || tile >= MENU_LEN || cluster_k < 1 || cluster_k > 2 || (tile == ROWS_TILE && cluster_k != 2)) return -1;
  const int n = snprintf(buf, len,
                         "{\"BLOCK_M\":%d,\"BLOCK_N\":%d,\"CLUSTER_K\":%d,\"CLUSTER_M\":1,\"CLUSTER_N\":1,\"GROUP_M\":8,"
                         "\"KPIPE\":%d,\"PINGPONG\":0,\"RESCALE\":%d,\"SPLIT_K\":1,\"STAGES\":%d,\"STORE\":0,\"UNSPLIT\":1}",
                         MENU[tile].m, MENU[tile].n, cluster_k, MENU[tile].kpipe, MENU[tile].rescale, MENU[tile].stages);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

const char *at_a8w8_tail_kind(const at_a8w8_tail *t) {
  return !t->split         ? "none"
         : t->unit_end == 0 ? "whole call"
         : t->main_n        ? "padding"
         : t->main_m        ? "last rows"
                            : "last wave";
}

int at_a8w8_tail_tile(int tile, int *rows, int *cols) {
  if (tile < 0 || tile >= MENU_LEN) return -1;
  *rows = MENU[tile].m, *cols = MENU[tile].n;
  return 0;
}

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t at_a8w8_tail_grid(const at_a8w8_tail *t, int64_t tail_m, int64_t tail_n) {
  if (!t->split || !t->grid_all || t->tile < 0 || t->tile >= MENU_LEN) return 0;
  return div_up(tail_m, MENU[t->tile].m) * div_up(tail_n, MENU[t->tile].n) * t->cluster_k;
}

#define TAIL_MIN_GAIN 0.99
#define WHOLE_MIN_GAIN 0.9 /* a tail config instead of the whole call: a wider margin */
#define PAD_MIN 0.1        /* padding of the last column of tiles worth a column tail: 10% of N */
#define WHOLE_RATE_64 0.5  /* see the whole call below */
#ifndef ROWS_MIN_GAIN
#define ROWS_MIN_GAIN 0.925 /* the tail by rows: see there (0 turns it off, for a comparison build) */
#endif
#define ROWS_TRIES 3       /* main launches of r_max, r_max - 1, ... rows of cluster tiles */
/* The tail's fixed cost (its pipeline's fill, the exchange of halves, the epilogue, its wait for
 * the main launch), and an SM's rate, which turns it into main units: on the H100 a tail cost 2-3
 * us more than its share of the products, which lost where K is short (1024 x 3072 x 1536: 1.11x
 * cuBLASLt's time with the tail, 1.00x without; docs/perf.md). */
#define TAIL_FIXED_US 3.0
#define SM_FLOP_PER_US 9.0e6

/* The tail's fixed cost in main units (of a bm x bn CTA tile's time over K at SM_FLOP_PER_US). */
static double fixed_units(int64_t bm, int64_t bn, int64_t k) {
  return TAIL_FIXED_US / (2.0 * (double)bm * (double)bn * (double)k / SM_FLOP_PER_US);
}

/* The cheapest tail config for C[m0:M][n0:N], in main units (of a bm x bn CTA tile's time over K,
 * times `rate`: the main tile's time per product against the reference); sets out->tile and
 * out->cluster_k. */
static double cheapest_tail(const at_shape *s, int64_t m0, int64_t n0, int64_t bm, int64_t bn, int sm_count,
                            double rate, at_a8w8_tail *out) {
  double best = 0;
  for (int i = 0; i < RECT_MENU_LEN; i++) {
    /* Its tiles, whether they fit the GPU twice over (each split in K by a cluster of two, which
     * needs 8 k-blocks: 4 a CTA), its waves. */
    const int64_t tail_tiles = div_up(s->m - m0, MENU[i].m) * div_up(s->n - n0, MENU[i].n);
    const int ck = 2 * tail_tiles <= sm_count && s->k / 128 >= 8 ? 2 : 1;
    const int64_t tail_waves = div_up(tail_tiles, sm_count / ck);
    const double per_cta = (double)MENU[i].m * MENU[i].n / ck / ((double)bm * (double)bn) * MENU[i].penalty * rate;
    const double t = (double)tail_waves * per_cta + fixed_units(bm, bn, s->k);
    if (i == 0 || t < best) best = t, out->tile = i, out->cluster_k = ck;
  }
  return best;
}

/* The tail by rows, its time in main units: the main launch's clusters (cs SMs each) walk main_units
 * units, cluster c of the persistent grid finishing after ceil((main_units - c) / slots) of them, so
 * its SMs free at no more than three times (0 for those it leaves idle); the tail's clusters (ck SMs
 * each, d main units long), all in its grid, start in launch order on the SMs that free first.
 * Identical clusters on slots that free at a few times: each round takes the earliest group of
 * slots, which then frees d later. O(groups x rounds), no allocation: the runtime plans on its
 * launch path, for every shape it has not just launched. */
static double rows_finish(int sm_count, int64_t cs, int64_t slots, int64_t main_units, int64_t tail_tiles, int ck,
                          double d) {
  const int64_t grid = main_units < slots ? main_units : slots;
  const int64_t q = main_units / slots, r = main_units % slots;
  /* Tail slots (ck SMs) per time the SMs free: idle ones at 0, the grid's at q or q + 1 units. */
  double t[3] = {0, main_units >= slots ? (double)q : 1.0, (double)q + 1};
  int64_t n[3] = {(sm_count - grid * cs) / ck, (main_units >= slots ? grid - r : grid) * cs / ck,
                  main_units >= slots ? r * cs / ck : 0};
  double end = main_units >= slots && r ? (double)q + 1 : t[1];
  for (int64_t left = tail_tiles; left > 0;) {
    int g = -1;
    for (int i = 0; i < 3; i++)
      if (n[i] > 0 && (g < 0 || t[i] < t[g])) g = i;
    if (g < 0) return -1; /* no slot at all (a cluster wider than the GPU): no plan */
    const int64_t take = left < n[g] ? left : n[g];
    left -= take;
    t[g] += d;
    if (t[g] > end) end = t[g];
  }
  return end;
}

/* Takes a candidate plan if it predicts less time than the best so far and than `limit` x before. */
static void consider(at_a8w8_tail *best, const at_a8w8_tail *c, double limit) {
  if (c->after > limit * c->before) return;
  if (best->split && c->after / c->before >= best->after / best->before) return;
  *best = *c;
  best->split = 1;
}

void at_a8w8_tail_plan(const char *family, const at_params *p, const at_shape *s, int sm_count, int whole,
                       at_a8w8_tail *out) {
  memset(out, 0, sizeof *out);
  if (strcmp(family, "sm90") != 0 || sm_count < 2) return;
  if (at_params_get(p, "SPLIT_K", 1) != 1 || at_params_get(p, "CLUSTER_K", 1) != 1) return;
  const int64_t bm = at_params_get(p, "BLOCK_M", 0), bn = at_params_get(p, "BLOCK_N", 0);
  const int64_t cm = at_params_get(p, "CLUSTER_M", 1), cn = at_params_get(p, "CLUSTER_N", 1);
  const int64_t group = at_params_get(p, "GROUP_M", 1);
  if (bm < 1 || bn < 1 || cm < 1 || cn < 1 || group < 1) return;
  const int64_t rows = bm * cm, cols = bn * cn; /* a unit: one cluster tile */
  const int64_t tiles_m = div_up(s->m, rows), tiles_n = div_up(s->n, cols), units = tiles_m * tiles_n;
  const int64_t slots = sm_count / (cm * cn); /* clusters resident at once: units per wave */
  if (slots < 1) return;
  const double before = (double)div_up(units, slots);
  at_a8w8_tail c;

  /* The partial last wave: the last group of rows of tiles, walked column by column, gm tiles a
   * column: its last k columns are the last k x gm units of the walk. Enough columns for the
   * partial wave, and starting on a weight-scale block. */
  if (units > slots && units % slots != 0) {
    const int64_t last_first = (units - 1) / (group * tiles_n) * group;
    const int64_t gm = tiles_m - last_first < group ? tiles_m - last_first : group;
    int64_t k = div_up(units % slots, gm);
    while (k < tiles_n && ((tiles_n - k) * cols) % 128 != 0) k++;
    if (k <= tiles_n && k * gm < units) {
      memset(&c, 0, sizeof c);
      c.unit_end = units - k * gm, c.m0 = last_first * rows, c.n0 = (tiles_n - k) * cols;
      c.before = before;
      c.after = (double)div_up(c.unit_end, slots) + cheapest_tail(s, c.m0, c.n0, bm, bn, sm_count, 1.0, &c);
      consider(out, &c, TAIL_MIN_GAIN);
    }
  }
  /* Padding: the last column of tiles mostly past N (576 columns in 256-wide tiles compute 768).
   * The main launch then computes the whole columns of tiles only, as a GEMM of main_n columns
   * (C's row stride N), and the tail the rest. */
  const int64_t main_n = (tiles_n - 1) * cols;
  if (tiles_n >= 2 && (double)(tiles_n * cols - s->n) > PAD_MIN * (double)s->n && main_n % 128 == 0) {
    memset(&c, 0, sizeof c);
    c.unit_end = tiles_m * (tiles_n - 1), c.n0 = main_n, c.main_n = main_n;
    c.before = before;
    c.after = (double)div_up(c.unit_end, slots) + cheapest_tail(s, 0, main_n, bm, bn, sm_count, 1.0, &c);
    consider(out, &c, TAIL_MIN_GAIN);
  }
  /* With `whole` (a config not tuned for this shape): a tail config over all of C instead (unit_end
   * 0: no main launch). Not for decode-sized M (128 and less), where the weights' bytes, which the
   * model does not count, take the time. A main tile of 64 rows (one math warpgroup) is taken to
   * do half the products an SM-second of the two-warpgroup tiles the penalties were fitted against
   * (H100, docs/perf.md: the default file's 64 x 128 tiles at M = 256 lost to a tail config whole
   * on every shape where this changed the choice). */
  if (whole && s->m > 128) {
    memset(&c, 0, sizeof c);
    c.before = before;
    c.after = cheapest_tail(s, 0, 0, bm, bn, sm_count, bm == 64 ? WHOLE_RATE_64 : 1.0, &c);
    consider(out, &c, WHOLE_MIN_GAIN);
  }
  /* By rows, last: the main launch takes whole rows of cluster tiles, a wave less (or fewer rows:
   * up to ROWS_TRIES), the tail the rows after in 128 x 256 tiles split in K by a cluster of two,
   * its grid all of them. Where each half has 8 k-blocks at least, and only where it predicts
   * ROWS_MIN_GAIN of the time of the best plan so far (or of one launch): its schedule is simulated
   * with the tail on the SMs the main launch frees, which the H100 ran about 5% slower than
   * predicted (docs/perf.md, "The tail by rows"); with K of 1024 or 2048 it lost by 9-19%. */
  if (units > slots && units % slots != 0 && s->k / 128 >= 16) {
    const tail_tile *tt = &MENU[ROWS_TILE];
    const double d = (double)tt->m * tt->n / 2 / ((double)bm * (double)bn) * tt->penalty;
    const int64_t r_max = ((int64_t)before - 1) * slots / tiles_n; /* a wave less than one launch */
    double limit = ROWS_MIN_GAIN * (out->split ? out->after : before);
    for (int64_t r = r_max; r >= 1 && r > r_max - ROWS_TRIES; r--) {
      if (r * rows >= s->m) continue;
      memset(&c, 0, sizeof c);
      c.main_m = c.m0 = r * rows, c.unit_end = r * tiles_n;
      c.tile = ROWS_TILE, c.cluster_k = 2, c.grid_all = 1;
      const int64_t tail_tiles = div_up(s->m - c.m0, tt->m) * div_up(s->n, tt->n);
      const double fin = rows_finish(sm_count, cm * cn, slots, c.unit_end, tail_tiles, 2, d);
      if (fin < 0) continue;
      c.before = before;
      c.after = fin + fixed_units(bm, bn, s->k);
      if (c.after <= limit) *out = c, out->split = 1, limit = c.after * (1 - 1e-9); /* ties: more rows main */
    }
  }
}

/* gemm_a8w8_blockscale_tail.h: the runtime's tail of an sm90 call (docs/runtime.md, "The tail").
 *
 * A persistent sm90 kernel walks its units (cluster tiles) in waves of one unit per cluster. When
 * the units do not fill the last wave, that wave keeps the GPU for a whole unit's time with most
 * SMs idle. The tail plan moves the units at the end of the walk, which always form a rectangle of
 * C (the last columns of tiles of the last group of rows: the walk's order, locate() in the
 * template), out of the main launch (args.unit_end) into a second launch of a finer config, the
 * tail config (128 x 128 or 64 x 64 tiles, two k-blocks in flight, and the split of K in a cluster
 * of two when its tiles fit the GPU twice), over that part of the matrices. The main launch then
 * ends a wave earlier, and the tail spreads over every SM (with programmatic dependent launch it
 * starts on the SMs the main launch's last wave leaves idle).
 *
 * When the last wave cannot be moved so (its units are not a rectangle at the end of the walk, as
 * with narrow N: 6000 x 1792 in 128 x 256 tiles, seven columns), the call may be split by rows: the
 * main launch computes the first main_m rows of C (whole rows of its cluster tiles, a wave less),
 * and the tail the rows after, in the main config's own 128 x 256 tile with K split in a cluster of
 * two, one cluster per tile (no persistent walk: each starts on the first SMs to free, the main
 * launch's idle ones first). Its model simulates that schedule.
 *
 * The same applies to padding: when the last column of tiles lies mostly past N (N = 576 in
 * 256-wide tiles computes 768 columns), the main launch computes the whole columns of tiles only
 * (a GEMM of fewer columns, C's row stride N) and the tail the last columns. And, for a config that
 * was not tuned for the shape (the default file's), a call with M above 128 may run as a tail
 * config whole.
 *
 * The plan is pure arithmetic on the config's parameters, the shape and the SM count: the same on
 * every call, cached with the launch geometry. A cost model in units of one main unit's time (T)
 * decides: before, ceil(U / G) waves; after, the main launch's waves plus the tail's waves times the
 * work of a tail CTA relative to a main CTA's, times a penalty for the smaller tile (1.3 for 128 x
 * 128, 1.8 for 64 x 64), plus the tail's fixed cost (3 us, in units of a main CTA's tile at 9
 * TFLOP/s an SM); the tail config with the least is the tail. A split is used when it predicts at
 * least 1% less time (10% for a whole call), the one that predicts the least; by rows, the schedule
 * simulated, when it predicts at most 0.925 of the best of those (or of one launch). Calibrated on
 * the H100 (docs/perf.md, "The tail", "The tail by rows"). */
#ifndef AT_OPS_GEMM_A8W8_BLOCKSCALE_TAIL_H
#define AT_OPS_GEMM_A8W8_BLOCKSCALE_TAIL_H

#include <stddef.h>
#include <stdint.h>

#include "../core/op.h"

typedef struct at_a8w8_tail {
  int split;         /* 0: one launch, the rest says nothing */
  int64_t unit_end;  /* the main launch walks units [0, unit_end); 0: no main launch, the tail is all */
  int64_t main_n;    /* 0, or the main launch computes the first main_n columns of C only (C's row
                        stride N): the last column of tiles was mostly padding, the tail has it */
  int64_t main_m;    /* 0, or the main launch computes the first main_m rows of C only (a GEMM of
                        main_m rows), the tail the rest (m0 = main_m, n0 = 0) */
  int64_t m0, n0;    /* the tail computes C[m0:M][n0:N]; n0 a multiple of 128 (a weight-scale block) */
  int tile;          /* the tail config: 0 (128 x 128 tiles), 1 (64 x 64) or 2 (128 x 256: by rows) */
  int cluster_k;     /* its CLUSTER_K: 1 or 2 */
  int grid_all;      /* 1: the tail's grid holds all its clusters (one tile each), not a wave */
  double before, after; /* the model's times, in main units */
} at_a8w8_tail;

/* The plan for a config (family, parameters) on a shape and a GPU of sm_count SMs. Never fails: a
 * config the tail does not apply to (another family, split K, CLUSTER_K 2, one wave or less, a last
 * wave that is full) gets split 0. With `whole` (the caller's config was not tuned for this (N, K):
 * the default file's), a call (M > 128) may be given to a tail config whole (unit_end 0, m0 = n0 =
 * 0), where the model predicts at most 90% of the time: the tuner, which tried such configs on
 * tuned shapes, is not second-guessed there. */
void at_a8w8_tail_plan(const char *family, const at_params *p, const at_shape *s, int sm_count, int whole,
                       at_a8w8_tail *out);

/* What a plan does, in words: "none", "last wave", "last rows", "padding" or "whole call" (the cases
 * above). */
const char *at_a8w8_tail_kind(const at_a8w8_tail *t);
/* The tail config's tile, `tile` (at_a8w8_tail.tile): its rows and columns (128 x 128, 64 x 64 or
 * 128 x 256); -1 for another value. */
int at_a8w8_tail_tile(int tile, int *rows, int *cols);
/* The CTAs of a tail launch over a tail of tail_m x tail_n: all its tiles' clusters with grid_all,
 * else 0 (the launch rule's persistent grid). */
int64_t at_a8w8_tail_grid(const at_a8w8_tail *t, int64_t tail_m, int64_t tail_n);

/* The tail configs: their template entry (every parameter by name), and the parameters of tile
 * (at_a8w8_tail.tile) with CLUSTER_K cluster_k as JSON into buf (written per call: no shared
 * state); -1 for other values (tile 2 needs CLUSTER_K 2) or a buffer too small (256 bytes are
 * enough). */
extern const char AT_A8W8_TAIL_ENTRY[];
int at_a8w8_tail_params(int tile, int cluster_k, char *buf, size_t len);

#endif

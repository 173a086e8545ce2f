/* bench.h: honest kernel timing (docs/timing.md).
 *
 * A timed unit is a CUDA graph of `sets` launches, launch i reading input set i, so that one
 * replay reads every set once: with enough sets, no launch finds its inputs in L2. A sample is one
 * replay between two events, divided by the number of launches; graphs keep host launch overhead
 * out of the sample. Warm-up replays come first; the result is the median of the samples, with
 * the min and max as the spread. */
#ifndef AT_GPU_BENCH_H
#define AT_GPU_BENCH_H

#include "gpuctx.h"

/* Enqueues one launch on input set `set` of the thing being timed. */
typedef int (*at_enqueue_fn)(void *ctx, int set, CUstream s);

typedef struct at_timed at_timed;

int at_timed_create(const at_gpu *g, at_enqueue_fn fn, void *ctx, int sets, at_timed **out);
/* One sample: microseconds per launch. */
int at_timed_sample(at_timed *t, double *us);
void at_timed_destroy(at_timed *t);

typedef struct at_bench_cfg {
  int sets, warmup, samples;
  int cut_after; /* samples before a cut is considered */
  double cut_us; /* stop early once the running median exceeds this; 0: never */
} at_bench_cfg;

typedef struct at_bench_result {
  double median_us, min_us, max_us;
  int samples;
  int cut; /* stopped early as clearly slower */
  double replay_us; /* the events' time of every replay, warm-up included: what the GPU spent of the
                       wall time taken (the rest is launching, synchronizing and reading events) */
} at_bench_result;

int at_bench(const at_gpu *g, at_enqueue_fn fn, void *ctx, const at_bench_cfg *cfg, at_bench_result *r);
/* The same on a timed unit the caller made (cfg->sets is the unit's): warm-up, samples, the cut. */
int at_bench_timed(at_timed *t, const at_bench_cfg *cfg, at_bench_result *r);


#endif

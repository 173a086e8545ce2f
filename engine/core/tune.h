/* tune.h: the GPU phase of a tuning run, parent side. It runs beside the compile phase: candidates
 * are fed to it as their compiles finish (compile.h), and each GPU's worker process checks and
 * times them on the shapes of that GPU while the rest still compile. Per shape, every candidate
 * the shape's constraints keep is checked against the reference and timed, the leaders are
 * re-timed side by side once every candidate has a result, and a winner is recorded. Results
 * reach the DB one by one as they come back. Workers that fault or hang are replaced; a candidate
 * that kills two workers is quarantined.
 *
 * The order of work (docs/timing.md): candidates form batches in the order they are fed (at most
 * BATCH_MAX each, whatever was ready when a GPU asked); each GPU takes every batch across all of
 * its shapes in turn, shape after shape, before the next batch, and within a shape tries the
 * batch fastest first by the candidates' times on the shape before. A shape keeps its best time
 * so far across batches, so the early cut works from the second candidate of the first batch on.
 * Shapes are dealt to the GPUs at the start, by estimated cost, and stay there: each shape is
 * timed on one GPU from its inputs to its winner. */
#ifndef AT_TUNE_H
#define AT_TUNE_H

#include <signal.h>
#include <stdint.h>

#include "compile.h"
#include "device.h"
#include "enumerate.h"
#include "jit.h"
#include "space.h"
#include "store.h"

enum { AT_ST_OK, AT_ST_WRONG, AT_ST_FAULT, AT_ST_TIMEOUT, AT_ST_RESOURCES, AT_ST_QUARANTINED, AT_ST_COUNT };
extern const char *const AT_STATUS_NAMES[AT_ST_COUNT];
int at_status_index(const char *name); /* -1 when unknown */

typedef struct at_shape_outcome {
  at_shape shape;
  int64_t problem_id;
  int done;          /* every candidate of the shape has a result */
  int64_t winner;    /* index into the enumeration, -1 when nothing passed */
  double winner_us;  /* side-by-side re-timed median */
  double ref_us;     /* cuBLAS FP32 reference GEMM */
  double vendor_us;  /* the vendor kernel (cuBLASLt block-scaled FP8), 0 when unavailable */
  char vendor_name[64];
  double vendor_check_ratio; /* the vendor output's worst error / bound in this run; -1: not checked */
  double tflops, roofline_pct;
  int64_t counts[AT_ST_COUNT];
  int64_t evaluated, resumed;
  int skipped;       /* another shard's shape (--shard): not set up here */
} at_shape_outcome;

typedef struct at_tune_stats {
  at_shape_outcome *shapes;
  size_t nshapes;
  int64_t counts[AT_ST_COUNT];
  int64_t evaluated;   /* (candidate, shape) evaluations done in this run */
  int64_t resumed;     /* found done in the DB */
  int64_t adopted;     /* of them, copied from a candidate with the same cubin (at_store_adopt_result) */
  int64_t replaced_workers;
  double wall_s;       /* the whole GPU phase */
  double setup_s;      /* inputs, references and baselines */
  double eval_s;       /* check + timing of candidates */
  double retime_s;     /* side-by-side re-timing of the leaders */
  int ngpus;
  double busy_s;       /* summed over the GPUs: their workers at work on a request */
  double starved_s;    /* summed over the GPUs: waiting for the compile phase to feed candidates */
  double peak_tflops, peak_gbs;
  char device_name[128];
  int interrupted;
} at_tune_stats;

typedef struct at_tune_job {
  const at_space *space;
  const at_enum *cands;
  at_jit_source **sources;
  at_jit_options opts;
  const char *cache_dir;
  at_store *db;
  int64_t run_id;
  const at_device_info *devices; /* the GPUs to use, one worker each */
  int ndevices;
  int fresh;
  int baselines; /* time the vendor kernel per shape */
  const uint8_t *shapes_on; /* per shape: this shard sets it up (shard.h); NULL: every shape */
  volatile sig_atomic_t *stop;
} at_tune_job;

typedef struct at_tune at_tune;

/* Starts the GPU phase: one thread per GPU, which starts the GPU's worker, measures its peaks and
 * then waits for candidates. job, and st, which the phase fills, must outlive at_tune_finish. */
int at_tune_start(const at_tune_job *job, at_tune_stats *st, at_tune **out);
/* What the compile phase feeds (at_compile_job.feed). Its DB calls are then made under the GPU
 * phase's mutex: the two phases share the one DB connection. */
const at_compile_feed *at_tune_feed(at_tune *t);
/* The compile phase is over. compile_rc: its status; unless it is AT_OK with every candidate fed,
 * the GPU phase stops after the evaluations in flight and declares no more winners. Waits for
 * the GPUs, completes the statistics and frees t. Returns the GPU phase's own status (and leaves
 * the compile phase's error message alone when compile_rc is a failure). */
int at_tune_finish(at_tune *t, int compile_rc);
void at_tune_stats_free(at_tune_stats *st);

#endif

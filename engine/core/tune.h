/* tune.h: the GPU phase of a tuning run, parent side: for every shape, every compiled candidate
 * that the shape's constraints keep is sent to a worker process to be checked against the
 * reference and timed; the leaders are re-timed side by side and a winner is recorded. Results
 * reach the DB one by one as they come back. Workers that fault or hang are replaced; a candidate
 * that kills two workers is quarantined. */
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
  int64_t replaced_workers;
  double wall_s;       /* the whole GPU phase */
  double setup_s;      /* inputs, references and baselines */
  double eval_s;       /* check + timing of candidates */
  double retime_s;     /* side-by-side re-timing of the leaders */
  double peak_tflops, peak_gbs;
  char device_name[128];
  int interrupted;
} at_tune_stats;

typedef struct at_tune_job {
  const at_space *space;
  const at_enum *cands;
  const at_compiled *compiled;
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

int at_tune_gpu(const at_tune_job *job, at_tune_stats *st);
void at_tune_stats_free(at_tune_stats *st);

#endif

/* evaluate.h: one candidate on one shape, in the worker: its module taken from the worker's module
 * table (loaded once per worker, when the parent sends the cubin: core/proto.h), launched on
 * poisoned outputs and checked (twice: a kernel that only works on a clean workspace fails), then
 * timed. And the side-by-side re-timing of the leaders.
 *
 * The context holds what outlives one request: the current shape (worker.c keeps several and
 * points these fields at one), the split-K workspace, the module table and the per-phase account
 * of the worker's time (AUTOTUNE_WORKER_PROFILE). */
#ifndef AT_GPU_EVALUATE_H
#define AT_GPU_EVALUATE_H

#include <stdint.h>

#include "../core/proto.h"
#include "gpu_op.h"
#include "gpuctx.h"

/* Seconds spent per phase, summed over the worker's life. */
typedef struct at_eval_profile {
  double load_s;    /* cuModuleLoadData and the kernel lookup: once per candidate per worker */
  double prepare_s; /* per evaluation: launch geometry, shared-memory attribute, occupancy, workspace */
  double poison_s;  /* NaN written over the output before each checked run */
  double run_s;     /* the checked runs: launch, then wait for the kernel to end */
  double check_s;   /* the compare kernel, its counters and their copies */
  double graph_s;   /* capturing and instantiating the timed graph: one launch per input set */
  double timing_s;  /* warm-up and samples: graph replays between events, each waited for */
  double replay_s;  /* of timing_s, what the events measured: the GPU running the replays */
  double retime_s;  /* side-by-side re-timing, all of it */
  int64_t loads, evals, checks, graphs, samples, retimes, vendor_retimes;
} at_eval_profile;

typedef struct at_module at_module; /* a candidate's loaded module (evaluate.c) */

typedef struct at_eval_ctx {
  const at_gpu *g;
  /* the current shape */
  const at_op *op;
  const at_gpu_op *gop;
  void *state; /* the op's input sets and reference */
  at_shape shape;
  int sets;
  CUdeviceptr workspace; /* split-K counters and partials, shared by every shape */
  size_t workspace_bytes;
  at_module *modules; /* AT_MODULE_SLOTS, made on first use; slots are the parent's choice */
  int pdl;            /* launch as the runtime library does: programmatic dependent launch ($AUTOTUNE_PDL) */
  int vendor;         /* the current shape's vendor kernel is ready (its baseline was timed): at_retime times it too */
  at_eval_profile prof;
} at_eval_ctx;

/* Fills rep; returns AT_OK whenever rep says what happened (faults included). A request that does
 * not fit the module table (a slot out of range, or holding another candidate, or a load without
 * a cubin) is the parent's mistake: AT_ERR_RUNTIME. cubin is NULL unless req->load. */
int at_evaluate(at_eval_ctx *c, const at_eval_req *req, const void *cubin, size_t cubin_size, at_eval_reply *rep);

/* reqs[i] with cubins[i] (sizes[i] bytes; NULL and 0 unless reqs[i].load); reps[i] gets each one's
 * side-by-side median. When the context dies on one leader, that leader's reply is sticky and the
 * leaders not yet re-timed keep an empty status: they were not re-timed. With c->vendor the vendor's
 * kernel takes its turn in the same round-robin and *vendor_us gets its median; else (or when it
 * could not be timed) 0. */
int at_retime(at_eval_ctx *c, int n, const at_eval_req *reqs, const void *const *cubins, const size_t *sizes,
              at_eval_reply *reps, double *vendor_us);

#endif

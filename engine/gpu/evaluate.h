/* evaluate.h: one candidate on one shape, in the worker: load its cubin, launch it on poisoned
 * outputs and check it (twice: a kernel that only works on a clean workspace fails), then time it.
 * And the side-by-side re-timing of the leaders. */
#ifndef AT_GPU_EVALUATE_H
#define AT_GPU_EVALUATE_H

#include "../core/proto.h"
#include "../ops/gpu_op.h"
#include "gpuctx.h"

typedef struct at_eval_ctx {
  const at_gpu *g;
  const at_op *op;
  const at_gpu_op *gop;
  void *state; /* the op's input sets */
  at_shape shape;
  int sets;
  CUdeviceptr workspace;
  size_t workspace_bytes;
} at_eval_ctx;

/* Fills rep; returns AT_OK whenever rep says what happened (faults included). */
int at_evaluate(at_eval_ctx *c, const at_eval_req *req, const void *cubin, size_t cubin_size, at_eval_reply *rep);

/* reqs[i] with cubins[i]; reps[i] gets each one's side-by-side median. */
int at_retime(at_eval_ctx *c, int n, const at_eval_req *reqs, const void *const *cubins, at_eval_reply *reps);

#endif

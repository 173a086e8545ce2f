/* worker.h: the worker process: owns one GPU, answers the parent's requests (core/proto.h). */
#ifndef AT_GPU_WORKER_H
#define AT_GPU_WORKER_H

#include "../core/proto.h"
#include "gpu_op.h"
#include "gpuctx.h"

/* Serves requests until QUIT or EOF; exits after a fault that leaves the context unusable. */
int at_worker_main(int gpu, int in_fd, int out_fd);
/* Sends one HELLO per GPU (or one ERROR) and returns. */
int at_worker_probe(int out_fd);
/* The number of input sets for a shape: enough that one pass over them reads l2_multiple x L2 of
 * distinct data, within a quarter of the free memory. */
int at_worker_sets_for(const at_gpu *g, const at_gpu_op *op, const at_shape_req *r);

#endif

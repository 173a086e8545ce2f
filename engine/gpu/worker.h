/* worker.h: the worker process: owns one GPU, answers the parent's requests (core/proto.h). */
#ifndef AT_GPU_WORKER_H
#define AT_GPU_WORKER_H

/* Serves requests until QUIT or EOF; exits after a fault that leaves the context unusable. */
int at_worker_main(int gpu, int in_fd, int out_fd);
/* Sends one HELLO per GPU (or one ERROR) and returns. */
int at_worker_probe(int out_fd);

#endif

/* compare.h: the compare worker, the GPU half of `autotune compare` (cli/cmd_compare.c).
 *
 * `autotune worker --gpu N --compare` owns one GPU like a tuning worker and answers PEAK and COMPARE
 * (core/proto.h). Per shape it makes the input sets and the cuBLAS reference as tuning does, then
 * for each provider: the tuned config through the runtime library's own launch path
 * (at_gemm_a8w8_blockscale, engine/runtime/autotune.h), and cuBLASLt's block-scaled FP8 GEMM (the op's
 * vendor baseline). Each is checked first (output poisoned with NaN, run, compared with the
 * reference, twice); those that pass are timed round-robin with the method of gpu/bench.h, on the
 * same input sets: graphs of one launch per set, the sets together past L2, warm-up, median.
 *
 * It calls the runtime library, so it is built into the autotune executable only, with
 * engine/runtime's sources (meson.build), not into the engine library the tests link. */
#ifndef AT_GPU_COMPARE_H
#define AT_GPU_COMPARE_H

/* Serves requests on in_fd/out_fd until QUIT or EOF; exits after a fault that kills the context. */
int at_compare_worker_main(int gpu, int in_fd, int out_fd);

#endif

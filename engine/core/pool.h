/* pool.h: a fixed pool of threads working through jobs 0..n-1, reporting each finished job to
 * the thread that waits on it. The compile phase uses it: NVRTC in the threads, the DB writes and
 * the progress bar in the caller, so the DB keeps one writer; so do `autotune warm` and the
 * runtime's compiles ahead (runtime/ahead.h), which is why it lives in the core library. */
#ifndef AT_POOL_H
#define AT_POOL_H

#include <stddef.h>
#include <sys/types.h>

typedef struct at_pool at_pool;
typedef void (*at_pool_fn)(void *ctx, size_t job);

at_pool *at_pool_start(int threads, size_t njobs, at_pool_fn fn, void *ctx);
/* Blocks until some job finishes and returns its index; -1 once every started job is reported. */
ssize_t at_pool_next_done(at_pool *p);
/* Hands out no new jobs; jobs already running finish and are still reported. */
void at_pool_stop(at_pool *p);
/* Waits for the threads and frees the pool. */
void at_pool_join(at_pool *p);

#endif

/* workspace.h: the runtime library's split-K workspaces.
 *
 * Every launch that splits K gets a workspace laid out as templates/gemm_a8w8_blockscale_args.h
 * says (counters, then partial tiles) whose counters are zero when the launch starts, whatever ran
 * before it on any stream, and which no launch that may run at the same time shares:
 *  - Outside stream capture, a workspace belongs to one stream, found by the driver's stream id
 *    (unique for the life of the process: a new stream that reuses a destroyed stream's handle gets
 *    a new workspace). Launches on a stream run in order and each leaves its counters at zero, so
 *    the next one finds them zero. The counter region has a fixed size per buffer and partials
 *    start after it, so a launch with more tiles than the last one never reads partials as
 *    counters. A launch that needs more counters or partial bytes than the buffer has gets a new,
 *    zeroed buffer (the old ones are freed at close: kernels in flight may still use them).
 *  - During stream capture, each captured launch gets its own workspace from the graph: allocated
 *    with cuMemAllocAsync on the capturing stream (a memory node of the graph), its counters zeroed
 *    by a memset node, freed by a free node after the kernel. Two graphs, or a graph replayed next
 *    to eager launches on any stream, never share counters, and nothing has to have run on the
 *    capturing stream before. A framework has nothing to do: no warm-up on the capturing stream,
 *    no workspace of its own.
 * The fast path (a stream seen before, a buffer large enough) takes no lock and allocates nothing. */
#ifndef AT_RUNTIME_WORKSPACE_H
#define AT_RUNTIME_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

#include "../gpu/cuda.h"

typedef struct at_ws_pool at_ws_pool;

at_ws_pool *at_ws_pool_new(void);
/* Frees every buffer (the caller guarantees no launch still uses them). */
void at_ws_pool_free(at_ws_pool *pool);

/* A workspace for one launch. graph_owned: allocated inside a capture, to be released by
 * at_ws_release on the same stream after the launch is enqueued. */
typedef struct at_ws_lease {
  CUdeviceptr ptr;
  int64_t counters; /* the counter region of ptr, >= what was asked for */
  int graph_owned;
} at_ws_lease;

/* A workspace with at least `counters` zero counters and `partial_bytes` after them, for a launch
 * on `stream` of context ctx (current). Fails with a message (AT_ERR_RUNTIME). */
int at_ws_acquire(at_ws_pool *pool, CUcontext ctx, CUstream stream, int64_t counters, size_t partial_bytes,
                  at_ws_lease *out);
int at_ws_release(const at_ws_lease *lease, CUstream stream);

#endif

/* workspace.h: the runtime library's split-K workspaces.
 *
 * Every launch that splits K gets counters and partials as templates/gemm_a8w8_blockscale_args.h
 * says: counters that are zero when the launch starts, whatever ran before on any stream, and that
 * no launch that may run at the same time shares; partials that no concurrent launch shares.
 *  - Everything here belongs to a context instance (at_ctx_ref: by the driver's context id, so a
 *    context reset by cudaDeviceReset, whose handle stays, starts with nothing of the old one's).
 *  - Outside stream capture, both belong to one stream, found by the driver's stream id (unique
 *    for the life of the process: a new stream that reuses a destroyed stream's handle gets its
 *    own). Launches on a stream run in order and each leaves its counters at zero, so the next
 *    finds them zero. One buffer per stream: a counter region of fixed size, then the partials, so
 *    a launch with more tiles than the last one never reads partials as counters. A launch that
 *    needs more of either gets a new, zeroed buffer (old ones are freed at close: kernels in
 *    flight may still use them).
 *  - During stream capture, each captured launch gets counters of its own for the life of the
 *    runtime, carved from a per-context arena that was zeroed when it was made (outside any
 *    capture): the graph keeps their address, every replay leaves them at zero, and no other
 *    launch or graph touches them. Its partials are the graph's own memory (cuMemAllocAsync on the
 *    capturing stream before the kernel, cuMemFreeAsync after: memory nodes, no copy, no memset).
 *    The arena is made, and refilled when half used, by split-K launches outside capture, which is
 *    what a framework's warm-up does. Without one (a split-K config captured before any ran
 *    eagerly in the context), the counters too come from the graph, zeroed by a memset node at
 *    each replay: correct, a microsecond or two slower.
 *    So a framework has nothing to do: no warm-up on the capturing stream, no workspace of its own.
 * The fast path (a stream seen before, a buffer large enough) takes no lock and allocates nothing;
 * the exception is the arena's making and refill (refill_arena: 1 MiB, and a wait on the calling
 * stream for its zeroing), by the first split-K launch outside capture in a context and the first
 * after captures have used half of it. */
#ifndef AT_RUNTIME_WORKSPACE_H
#define AT_RUNTIME_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

#include "../gpu/cuda.h"

typedef struct at_ws_pool at_ws_pool;

at_ws_pool *at_ws_pool_new(void);
/* Frees every buffer (the caller guarantees no launch or graph still uses them) of the contexts still
 * there: a destroyed or reset context took its memory with it. */
void at_ws_pool_free(at_ws_pool *pool);

/* What one launch gets. graph_memory: bytes allocated inside a capture, to be released by
 * at_ws_release on the same stream once the launch is enqueued. */
typedef struct at_ws_lease {
  CUdeviceptr counters, partials;
  int64_t ncounters; /* counters at `counters`, >= what was asked for */
  CUdeviceptr graph_memory;
} at_ws_lease;

/* Counters (at least `counters`) and `partial_bytes` of partials for a launch on `stream` of the
 * current context ctx. Fails with a message (AT_ERR_RUNTIME). */
int at_ws_acquire(at_ws_pool *pool, const at_ctx_ref *ctx, CUstream stream, int64_t counters, size_t partial_bytes,
                  at_ws_lease *out);
int at_ws_release(const at_ws_lease *lease, CUstream stream);

#endif

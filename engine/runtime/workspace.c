/* workspace.c: see workspace.h for the invariant this file keeps. */
#include "workspace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../../templates/gemm_a8w8_blockscale_args.h"
#include "../core/util.h"
#include "../ops/op.h"

enum { MIN_COUNTERS = 4096, MIN_PARTIALS = 1 << 20 };

static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct ws_buf {
  CUdeviceptr ptr;
  int64_t counters;     /* size of the counter region */
  size_t partial_bytes; /* bytes after it */
  struct ws_buf *older; /* replaced buffers, freed at close */
} ws_buf;

typedef struct ws_stream {
  CUcontext ctx;
  unsigned long long stream_id;
  _Atomic(ws_buf *) cur;
  struct ws_stream *next;
} ws_stream;

struct at_ws_pool {
  uint64_t serial; /* tells this pool from a freed one at the same address, for the thread cache */
  pthread_mutex_t mu;
  _Atomic(ws_stream *) streams; /* pushed under the mutex, read without it */
};

at_ws_pool *at_ws_pool_new(void) {
  static _Atomic uint64_t next_serial = 1;
  at_ws_pool *p = at_xcalloc(1, sizeof *p);
  p->serial = atomic_fetch_add(&next_serial, 1);
  pthread_mutex_init(&p->mu, NULL);
  return p;
}

void at_ws_pool_free(at_ws_pool *pool) {
  if (!pool) return;
  for (ws_stream *s = atomic_load(&pool->streams); s;) {
    ws_stream *next = s->next;
    for (ws_buf *b = atomic_load(&s->cur); b;) {
      ws_buf *older = b->older;
      if (at_cu) at_cu->MemFree(b->ptr);
      free(b);
      b = older;
    }
    free(s);
    s = next;
  }
  pthread_mutex_destroy(&pool->mu);
  free(pool);
}

/* Inside a capture: the graph's own memory, counters zeroed by a memset node every replay. */
static int graph_workspace(CUstream stream, int64_t counters, size_t partial_bytes, at_ws_lease *out) {
  CUdeviceptr p = 0;
  CUresult r = at_cu->MemAllocAsync(&p, at_ws_bytes(counters, partial_bytes), stream);
  if (r != CUDA_SUCCESS)
    return at_fail(AT_ERR_RUNTIME, "cannot allocate %zu bytes of split-K workspace inside stream capture: %s",
                   at_ws_bytes(counters, partial_bytes), at_cu_error_name(r));
  r = at_cu->MemsetD8Async(p, 0, (size_t)AT_WS_PARTIALS(counters), stream);
  if (r != CUDA_SUCCESS) {
    at_cu->MemFreeAsync(p, stream);
    return at_fail(AT_ERR_RUNTIME, "cannot zero the split-K counters inside stream capture: %s", at_cu_error_name(r));
  }
  *out = (at_ws_lease){p, counters, 1};
  return AT_OK;
}

/* The stream's record, made under the mutex when new. */
static ws_stream *stream_record(at_ws_pool *pool, CUcontext ctx, unsigned long long id) {
  for (ws_stream *s = atomic_load_explicit(&pool->streams, memory_order_acquire); s; s = s->next)
    if (s->stream_id == id && s->ctx == ctx) return s;
  pthread_mutex_lock(&pool->mu);
  ws_stream *s = atomic_load_explicit(&pool->streams, memory_order_relaxed);
  for (; s; s = s->next)
    if (s->stream_id == id && s->ctx == ctx) break;
  if (!s) {
    s = at_xcalloc(1, sizeof *s);
    s->ctx = ctx;
    s->stream_id = id;
    s->next = atomic_load_explicit(&pool->streams, memory_order_relaxed);
    atomic_store_explicit(&pool->streams, s, memory_order_release);
  }
  pthread_mutex_unlock(&pool->mu);
  return s;
}

/* A larger buffer for the stream, zeroed in stream order before any launch that uses it. */
static int grow(at_ws_pool *pool, ws_stream *s, CUstream stream, int64_t counters, size_t partial_bytes, ws_buf **out) {
  int rc = AT_OK;
  pthread_mutex_lock(&pool->mu);
  ws_buf *b = atomic_load_explicit(&s->cur, memory_order_relaxed);
  if (!b || b->counters < counters || b->partial_bytes < partial_bytes) {
    ws_buf *nb = at_xcalloc(1, sizeof *nb);
    /* Doubling keeps the number of buffers a stream ever has logarithmic in its largest need. */
    nb->counters = max_i64(counters, max_i64(MIN_COUNTERS, b ? 2 * b->counters : 0));
    nb->partial_bytes = (size_t)max_i64((int64_t)partial_bytes, max_i64(MIN_PARTIALS, b ? 2 * (int64_t)b->partial_bytes : 0));
    size_t bytes = at_ws_bytes(nb->counters, nb->partial_bytes);
    CUresult r = at_cu->MemAlloc(&nb->ptr, bytes);
    if (r == CUDA_SUCCESS) r = at_cu->MemsetD8Async(nb->ptr, 0, (size_t)AT_WS_PARTIALS(nb->counters), stream);
    if (r != CUDA_SUCCESS) {
      if (nb->ptr) at_cu->MemFree(nb->ptr);
      free(nb);
      rc = at_fail(AT_ERR_RUNTIME, "cannot allocate %zu bytes of split-K workspace: %s", bytes, at_cu_error_name(r));
    } else {
      nb->older = b;
      atomic_store_explicit(&s->cur, nb, memory_order_release);
      b = nb;
    }
  }
  pthread_mutex_unlock(&pool->mu);
  *out = b;
  return rc;
}

int at_ws_acquire(at_ws_pool *pool, CUcontext ctx, CUstream stream, int64_t counters, size_t partial_bytes,
                  at_ws_lease *out) {
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = at_cu->StreamIsCapturing(stream, &cs);
  if (r != CUDA_SUCCESS)
    return at_fail(AT_ERR_RUNTIME, "cannot tell whether the stream is capturing: %s (the legacy default stream "
                   "cannot be used while another stream captures)", at_cu_error_name(r));
  if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    return at_fail(AT_ERR_RUNTIME, "the stream's capture has been invalidated by an earlier error");
  if (cs == CU_STREAM_CAPTURE_STATUS_ACTIVE) return graph_workspace(stream, counters, partial_bytes, out);

  unsigned long long id = 0;
  r = at_cu->StreamGetId(stream, &id);
  if (r != CUDA_SUCCESS) return at_fail(AT_ERR_RUNTIME, "cuStreamGetId: %s", at_cu_error_name(r));
  /* The stream this thread used last, without walking the list. */
  static _Thread_local uint64_t tl_pool;
  static _Thread_local CUcontext tl_ctx;
  static _Thread_local unsigned long long tl_id;
  static _Thread_local ws_stream *tl_rec;
  ws_stream *s = tl_pool == pool->serial && tl_ctx == ctx && tl_id == id ? tl_rec : NULL;
  if (!s) {
    s = stream_record(pool, ctx, id);
    tl_pool = pool->serial, tl_ctx = ctx, tl_id = id, tl_rec = s;
  }
  ws_buf *b = atomic_load_explicit(&s->cur, memory_order_acquire);
  if (!b || b->counters < counters || b->partial_bytes < partial_bytes)
    AT_TRY(grow(pool, s, stream, counters, partial_bytes, &b));
  *out = (at_ws_lease){b->ptr, b->counters, 0};
  return AT_OK;
}

int at_ws_release(const at_ws_lease *lease, CUstream stream) {
  if (!lease->graph_owned) return AT_OK;
  CUresult r = at_cu->MemFreeAsync(lease->ptr, stream);
  if (r != CUDA_SUCCESS) return at_fail(AT_ERR_RUNTIME, "cuMemFreeAsync of a split-K workspace: %s", at_cu_error_name(r));
  return AT_OK;
}

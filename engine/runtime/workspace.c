/* workspace.c: see workspace.h for the invariant this file keeps. */
#include "workspace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../core/util.h"
#include "../core/op.h"

enum {
  MIN_COUNTERS = 4096,
  MIN_PARTIALS = 1 << 20,
  ARENA_BYTES = 1 << 20, /* counters of captured launches: a few hundred bytes each */
  SLICE_ALIGN = 256,
};

static int64_t max_i64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct ws_buf {
  CUdeviceptr ptr;
  int64_t counters;     /* size of the counter region */
  size_t partial_bytes; /* bytes after it */
  struct ws_buf *older; /* replaced buffers, freed at close */
} ws_buf;

/* Counters for captured launches, per context: a zeroed chunk carved front to back. */
typedef struct ws_chunk {
  CUdeviceptr ptr;
  size_t used; /* under the pool's mutex */
  struct ws_chunk *older;
} ws_chunk;

typedef struct ws_arena {
  at_ctx_ref ctx; /* matched by id: a reset context is another one */
  _Atomic(ws_chunk *) cur;
  _Atomic int low; /* the current chunk is half used (or missing): the next eager launch refills */
  struct ws_arena *next;
} ws_arena;

typedef struct ws_stream {
  at_ctx_ref ctx;
  unsigned long long stream_id;
  ws_arena *arena; /* the context's */
  _Atomic(ws_buf *) cur;
  struct ws_stream *next;
} ws_stream;

struct at_ws_pool {
  uint64_t serial; /* tells this pool from a freed one at the same address, for the thread cache */
  pthread_mutex_t mu;
  _Atomic(ws_stream *) streams; /* pushed under the mutex, read without it */
  _Atomic(ws_arena *) arenas;   /* likewise */
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
    const int alive = at_ctx_alive(&s->ctx); /* else its memory went with it, and the addresses may be reused */
    for (ws_buf *b = atomic_load(&s->cur); b;) {
      ws_buf *older = b->older;
      if (alive) at_cu->MemFree(b->ptr);
      free(b);
      b = older;
    }
    free(s);
    s = next;
  }
  for (ws_arena *a = atomic_load(&pool->arenas); a;) {
    ws_arena *next = a->next;
    const int alive = at_ctx_alive(&a->ctx);
    for (ws_chunk *c = atomic_load(&a->cur); c;) {
      ws_chunk *older = c->older;
      if (alive) at_cu->MemFree(c->ptr);
      free(c);
      c = older;
    }
    free(a);
    a = next;
  }
  pthread_mutex_destroy(&pool->mu);
  free(pool);
}

/* The context's arena record, made under the mutex when new (without memory yet: low is set). */
static ws_arena *arena_of(at_ws_pool *pool, const at_ctx_ref *ctx) {
  for (ws_arena *a = atomic_load_explicit(&pool->arenas, memory_order_acquire); a; a = a->next)
    if (a->ctx.id == ctx->id) return a;
  pthread_mutex_lock(&pool->mu);
  ws_arena *a = atomic_load_explicit(&pool->arenas, memory_order_relaxed);
  for (; a; a = a->next)
    if (a->ctx.id == ctx->id) break;
  if (!a) {
    a = at_xcalloc(1, sizeof *a);
    a->ctx = *ctx;
    atomic_init(&a->low, 1);
    a->next = atomic_load_explicit(&pool->arenas, memory_order_relaxed);
    atomic_store_explicit(&pool->arenas, a, memory_order_release);
  }
  pthread_mutex_unlock(&pool->mu);
  return a;
}

/* Outside capture: a fresh zeroed chunk for the arena when the current one is half used. The
 * memset is ordered on `stream`, before any graph captured later can replay. */
static int refill_arena(at_ws_pool *pool, ws_arena *a, CUstream stream) {
  int rc = AT_OK;
  pthread_mutex_lock(&pool->mu);
  if (atomic_load_explicit(&a->low, memory_order_relaxed)) {
    ws_chunk *c = at_xcalloc(1, sizeof *c);
    CUresult r = at_cu->MemAlloc(&c->ptr, ARENA_BYTES);
    if (r == CUDA_SUCCESS) r = at_cu->MemsetD8Async(c->ptr, 0, ARENA_BYTES, stream);
    if (r == CUDA_SUCCESS) r = at_cu->StreamSynchronize(stream); /* zero before any capture uses it */
    if (r != CUDA_SUCCESS) {
      if (c->ptr) at_cu->MemFree(c->ptr);
      free(c);
      rc = at_fail(AT_ERR_RUNTIME, "cannot make the split-K counter arena: %s", at_cu_error_name(r));
    } else {
      c->older = atomic_load_explicit(&a->cur, memory_order_relaxed);
      atomic_store_explicit(&a->cur, c, memory_order_release);
      atomic_store_explicit(&a->low, 0, memory_order_relaxed);
    }
  }
  pthread_mutex_unlock(&pool->mu);
  return rc;
}

/* Inside a capture: counters from the arena when it has room (0 otherwise), for good. */
static CUdeviceptr arena_slice(at_ws_pool *pool, ws_arena *a, int64_t counters) {
  size_t bytes = ((size_t)counters * 4 + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
  CUdeviceptr p = 0;
  pthread_mutex_lock(&pool->mu);
  ws_chunk *c = atomic_load_explicit(&a->cur, memory_order_relaxed);
  if (c && c->used + bytes <= ARENA_BYTES) {
    p = c->ptr + c->used;
    c->used += bytes;
    if (c->used > ARENA_BYTES / 2) atomic_store_explicit(&a->low, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&pool->mu);
  return p;
}

/* Inside a capture: partials (and, without arena room, counters zeroed by a memset node) from
 * the graph's own memory. */
static int graph_workspace(at_ws_pool *pool, const at_ctx_ref *ctx, CUstream stream, int64_t counters, size_t partial_bytes,
                           at_ws_lease *out) {
  CUdeviceptr slice = arena_slice(pool, arena_of(pool, ctx), counters);
  size_t counter_bytes = slice ? 0 : at_ws_bytes(counters, 0);
  size_t bytes = counter_bytes + partial_bytes;
  CUdeviceptr p = 0;
  CUresult r = at_cu->MemAllocAsync(&p, bytes ? bytes : 256, stream);
  if (r != CUDA_SUCCESS)
    return at_fail(AT_ERR_RUNTIME, "cannot allocate %zu bytes of split-K workspace inside stream capture: %s", bytes,
                   at_cu_error_name(r));
  if (!slice && (r = at_cu->MemsetD8Async(p, 0, counter_bytes, stream)) != CUDA_SUCCESS) {
    at_cu->MemFreeAsync(p, stream);
    return at_fail(AT_ERR_RUNTIME, "cannot zero the split-K counters inside stream capture: %s", at_cu_error_name(r));
  }
  *out = (at_ws_lease){slice ? slice : p, p + counter_bytes, counters, p};
  return AT_OK;
}

/* The stream's record, made under the mutex when new. */
static ws_stream *stream_record(at_ws_pool *pool, const at_ctx_ref *ctx, unsigned long long id) {
  for (ws_stream *s = atomic_load_explicit(&pool->streams, memory_order_acquire); s; s = s->next)
    if (s->stream_id == id && s->ctx.id == ctx->id) return s;
  ws_arena *arena = arena_of(pool, ctx);
  pthread_mutex_lock(&pool->mu);
  ws_stream *s = atomic_load_explicit(&pool->streams, memory_order_relaxed);
  for (; s; s = s->next)
    if (s->stream_id == id && s->ctx.id == ctx->id) break;
  if (!s) {
    s = at_xcalloc(1, sizeof *s);
    s->ctx = *ctx;
    s->stream_id = id;
    s->arena = arena;
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
    if (r == CUDA_SUCCESS) r = at_cu->MemsetD8Async(nb->ptr, 0, at_ws_bytes(nb->counters, 0), stream);
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

int at_ws_acquire(at_ws_pool *pool, const at_ctx_ref *ctx, CUstream stream, int64_t counters, size_t partial_bytes,
                  at_ws_lease *out) {
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = at_cu->StreamIsCapturing(stream, &cs);
  if (r != CUDA_SUCCESS)
    return at_fail(AT_ERR_RUNTIME, "cannot tell whether the stream is capturing: %s (the legacy default stream "
                   "cannot be used while another stream captures)", at_cu_error_name(r));
  if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    return at_fail(AT_ERR_RUNTIME, "the stream's capture has been invalidated by an earlier error");
  if (cs == CU_STREAM_CAPTURE_STATUS_ACTIVE) return graph_workspace(pool, ctx, stream, counters, partial_bytes, out);

  unsigned long long id = 0;
  r = at_cu->StreamGetId(stream, &id);
  if (r != CUDA_SUCCESS) return at_fail(AT_ERR_RUNTIME, "cuStreamGetId: %s", at_cu_error_name(r));
  /* The stream this thread used last, without walking the list. */
  static _Thread_local uint64_t tl_pool;
  static _Thread_local unsigned long long tl_ctx;
  static _Thread_local unsigned long long tl_id;
  static _Thread_local ws_stream *tl_rec;
  ws_stream *s = tl_pool == pool->serial && tl_ctx == ctx->id && tl_id == id ? tl_rec : NULL;
  if (!s) {
    s = stream_record(pool, ctx, id);
    tl_pool = pool->serial, tl_ctx = ctx->id, tl_id = id, tl_rec = s;
  }
  if (atomic_load_explicit(&s->arena->low, memory_order_relaxed)) AT_TRY(refill_arena(pool, s->arena, stream));
  ws_buf *b = atomic_load_explicit(&s->cur, memory_order_acquire);
  if (!b || b->counters < counters || b->partial_bytes < partial_bytes)
    AT_TRY(grow(pool, s, stream, counters, partial_bytes, &b));
  *out = (at_ws_lease){b->ptr, b->ptr + at_ws_bytes(b->counters, 0), b->counters, 0};
  return AT_OK;
}

int at_ws_release(const at_ws_lease *lease, CUstream stream) {
  if (!lease->graph_memory) return AT_OK;
  CUresult r = at_cu->MemFreeAsync(lease->graph_memory, stream);
  if (r != CUDA_SUCCESS) return at_fail(AT_ERR_RUNTIME, "cuMemFreeAsync of a split-K workspace: %s", at_cu_error_name(r));
  return AT_OK;
}

/* worker.c: the worker process's loop (see core/proto.h for the protocol). It owns one GPU, the
 * prepared shapes it keeps, and the module table (evaluate.c); the parent owns everything else.
 * Replies always go out before the process ends, so the parent learns why a worker it loses had
 * to stop.
 *
 * The shape cache: up to SHAPE_CACHE_MAX shapes keep their input sets and reference, keyed by the
 * whole request, so that the parent's walk over its shapes (each batch of candidates on every
 * shape in turn) makes each shape's inputs once. Before a new shape is made, the least recently
 * used are dropped while the cache is full or less than half of the GPU's memory is free. A
 * shape's number of input sets is worked out as a fresh worker would (the memory the kept shapes
 * hold counts as free), so what is kept never changes what is measured.
 *
 * AUTOTUNE_WORKER_PROFILE=1: at exit, one line on stderr with the seconds spent per phase. */
#include "worker.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/proto.h"
#include "../core/util.h"
#include "devinfo.h"
#include "evaluate.h"
#include "gpuctx.h"
#include "peak.h"

/* The parent walks every shape per batch of candidates, forwards and backwards in turn (tune.c):
 * the LRU cache then keeps the shapes needed next. Walked in one order each time, a cache smaller
 * than the job's shapes never hit (on the H100, 64 entries and the 132 shapes of the Llama-3-70B
 * and DeepSeek-V3 weights made 6,846 setups, a third of the run; 256 entries made 132,
 * docs/perf.md). Decode-sized shapes take a few MB each; the rule of half the memory free bounds
 * the large ones. */
enum { SHAPE_CACHE_MAX = 256 };

typedef struct shape_entry {
  int used;
  at_shape_req req;   /* what it was made from: the key */
  at_shape_reply rep; /* the reply to that request, given again to a request for the same shape */
  const at_op *op;
  const at_gpu_op *gop;
  void *state;
  at_shape shape;
  int sets;
  size_t bytes;      /* device memory its setup took */
  uint64_t last_use; /* for dropping the least recently used */
} shape_entry;

typedef struct worker {
  at_gpu g;
  at_eval_ctx c;
  shape_entry shapes[SHAPE_CACHE_MAX];
  shape_entry *current; /* the shape EVAL and RETIME run on; NULL before the first SHAPE */
  uint64_t clock;
  /* the profile: what the evaluations do is in c.prof */
  double t_start, idle_s, setup_s, reply_s, peak_s;
  int64_t setups, shape_hits, dropped;
} worker;

static int send_error(int fd, const char *msg) { return at_msg_send(fd, AT_MSG_ERROR, msg, strlen(msg) + 1); }

int at_worker_probe(int out_fd) {
  const at_cuda_api *cu;
  if (at_cuda_load(&cu)) return send_error(out_fd, at_errmsg()), AT_OK;
  int count = 0;
  if (cu->DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return send_error(out_fd, "the driver sees no GPU"), AT_OK;
  for (int i = 0; i < count; i++) {
    at_device_info d;
    if (at_gpu_device_info(i, &d)) return send_error(out_fd, at_errmsg()), AT_OK;
    AT_TRY(at_msg_send(out_fd, AT_MSG_HELLO, &d, sizeof d));
  }
  return AT_OK;
}

/* The sets for a shape when `held` bytes of the free memory are only lent to kept shapes. */
static int sets_for(const at_gpu *g, const at_gpu_op *op, const at_shape_req *r, size_t held) {
  at_shape s = {r->m, r->n, r->k};
  double per = op->set_bytes(&s);
  int sets = (int)ceil(r->l2_multiple * (double)g->info.l2_bytes / per);
  size_t free_b = 0, total_b = 0;
  at_cu->MemGetInfo(&free_b, &total_b);
  int cap = (int)((double)(free_b + held) * 0.25 / per);
  if (sets > cap) sets = cap;
  if (sets > 1024) sets = 1024;
  return sets < 1 ? 1 : sets;
}

int at_worker_sets_for(const at_gpu *g, const at_gpu_op *op, const at_shape_req *r) { return sets_for(g, op, r, 0); }

/* ---- the shape cache -------------------------------------------------------------------------- */

static void make_current(worker *w, shape_entry *e) {
  w->current = e;
  w->c.op = e ? e->op : NULL;
  w->c.gop = e ? e->gop : NULL;
  w->c.state = e ? e->state : NULL;
  w->c.shape = e ? e->shape : (at_shape){0, 0, 0};
  w->c.sets = e ? e->sets : 0;
  w->c.vendor = e && e->req.baselines && e->rep.vendor_us > 0;
}

static void drop(worker *w, shape_entry *e) {
  if (w->current == e) make_current(w, NULL);
  if (e->state) e->gop->teardown(e->state);
  memset(e, 0, sizeof *e);
  w->dropped++;
}

static size_t held_bytes(const worker *w) {
  size_t held = 0;
  for (int i = 0; i < SHAPE_CACHE_MAX; i++)
    if (w->shapes[i].used) held += w->shapes[i].bytes;
  return held;
}

/* Drops the least recently used shapes while the cache is full or the GPU's memory is short;
 * returns a free entry. */
static shape_entry *make_room(worker *w) {
  for (;;) {
    shape_entry *lru = NULL, *free_e = NULL;
    int used = 0;
    for (int i = 0; i < SHAPE_CACHE_MAX; i++) {
      shape_entry *e = &w->shapes[i];
      if (!e->used) {
        if (!free_e) free_e = e;
        continue;
      }
      used++;
      if (!lru || e->last_use < lru->last_use) lru = e;
    }
    size_t free_b = 0, total_b = 0;
    at_cu->MemGetInfo(&free_b, &total_b);
    if (free_e && (used == 0 || free_b >= total_b / 2)) return free_e;
    drop(w, lru);
  }
}

static shape_entry *find_shape(worker *w, const at_shape_req *req) {
  for (int i = 0; i < SHAPE_CACHE_MAX; i++)
    if (w->shapes[i].used && memcmp(&w->shapes[i].req, req, sizeof *req) == 0) return &w->shapes[i];
  return NULL;
}

/* The reference and, when asked, the vendor baseline, timed; notes go to rep->message. */
static void time_baselines(const shape_entry *e, const at_shape_req *req, at_shape_reply *rep) {
  at_bench_cfg cfg = {e->sets, req->warmup, req->samples, 0, 0};
  at_bench_result b;
  if (e->gop->time_reference(e->state, &cfg, &b) == AT_OK)
    rep->ref_us = b.median_us;
  else
    snprintf(rep->message, sizeof rep->message, "reference not timed: %s", at_errmsg());
  if (!req->baselines) return;
  char note[400] = "";
  const at_check_bound bound = {req->atol, req->rtol, req->gamma};
  if (e->gop->time_vendor(e->state, &cfg, &bound, &b, &rep->vendor_check_ratio, rep->vendor_name, sizeof rep->vendor_name,
                          note, sizeof note) == AT_OK &&
      b.samples)
    rep->vendor_us = b.median_us;
  else if (note[0])
    snprintf(rep->message, sizeof rep->message, "%s", note);
}

/* Makes a shape's inputs and reference in e and times its baselines. rep->ok says whether e holds
 * a usable shape; on failure e's state is freed. */
static void setup_entry(worker *w, shape_entry *e, const at_shape_req *req, at_shape_reply *rep) {
  memset(rep, 0, sizeof *rep);
  rep->vendor_check_ratio = -1;
  e->op = at_op_find(req->op);
  e->gop = at_gpu_op_find(req->op);
  if (!e->op || !e->gop) {
    snprintf(rep->message, sizeof rep->message, "this worker has no GPU support for op %s", req->op);
    return;
  }
  e->shape = (at_shape){req->m, req->n, req->k};
  e->sets = sets_for(&w->g, e->gop, req, held_bytes(w));
  size_t free_before = 0, free_after = 0, total_b = 0;
  at_cu->MemGetInfo(&free_before, &total_b);
  if (e->gop->setup(&w->g, &e->shape, req->seed, e->sets, &e->state)) {
    snprintf(rep->message, sizeof rep->message, "%s", at_errmsg());
    return;
  }
  if (req->gamma > 0 && !(e->gop->reference_abs && e->gop->reference_abs(e->state))) {
    snprintf(rep->message, sizeof rep->message,
             "op %s makes no |A|*|B| reference, so its check cannot use gamma (%g): set check.gamma to 0", req->op,
             req->gamma);
  } else {
    rep->ok = 1;
    rep->sets = e->sets;
    rep->set_bytes = e->gop->set_bytes(&e->shape);
    time_baselines(e, req, rep);
  }
  /* A fault in the reference or the baselines must not be blamed on the candidates after it. */
  CUresult r = at_cu->CtxSynchronize();
  if (r != CUDA_SUCCESS) {
    rep->ok = 0;
    rep->sticky = at_cu_is_sticky(r);
    snprintf(rep->message, sizeof rep->message, "the GPU failed while preparing the shape: %s (%s)", at_cu_error_name(r),
             at_cu_error_text(r));
  }
  at_cu->MemGetInfo(&free_after, &total_b);
  e->bytes = free_before > free_after ? free_before - free_after : 0;
  if (!rep->ok && !rep->sticky) {
    e->gop->teardown(e->state);
    e->state = NULL;
  }
}

/* SHAPE: the shape becomes current, made now or kept from before. */
static void serve_shape(worker *w, const at_shape_req *req, at_shape_reply *rep) {
  shape_entry *e = find_shape(w, req);
  if (e) {
    e->last_use = ++w->clock;
    make_current(w, e);
    *rep = e->rep;
    rep->cached = 1;
    w->shape_hits++;
    return;
  }
  double t0 = at_now_s();
  make_current(w, NULL);
  e = make_room(w);
  setup_entry(w, e, req, rep);
  /* Out of memory with other shapes kept, say: drop them all and try once more on a clean GPU. */
  if (!rep->ok && !rep->sticky && held_bytes(w) > 0) {
    for (int i = 0; i < SHAPE_CACHE_MAX; i++)
      if (w->shapes[i].used) drop(w, &w->shapes[i]);
    setup_entry(w, e, req, rep);
  }
  w->setup_s += at_now_s() - t0;
  w->setups++;
  if (!rep->ok) return;
  e->used = 1;
  e->req = *req;
  e->rep = *rep;
  e->last_use = ++w->clock;
  make_current(w, e);
}

/* ---- requests --------------------------------------------------------------------------------- */

static int serve_retime(worker *w, const char *p, size_t len, int out) {
  uint32_t n;
  if (len < sizeof n) return send_error(out, "RETIME: short message");
  memcpy(&n, p, sizeof n);
  at_eval_req *reqs = at_xcalloc(n ? n : 1, sizeof *reqs);
  const void **cubins = at_xcalloc(n ? n : 1, sizeof *cubins);
  size_t *sizes = at_xcalloc(n ? n : 1, sizeof *sizes);
  size_t off = sizeof n;
  uint32_t got = 0;
  for (; got < n; got++) {
    uint64_t sz;
    if (off + sizeof reqs[got] + sizeof sz > len) break;
    memcpy(&reqs[got], p + off, sizeof reqs[got]);
    off += sizeof reqs[got];
    memcpy(&sz, p + off, sizeof sz);
    off += sizeof sz;
    if (sz > len - off) break;
    cubins[got] = sz ? p + off : NULL;
    sizes[got] = (size_t)sz;
    off += (size_t)sz;
  }
  at_eval_reply *reps = at_xcalloc(n ? n : 1, sizeof *reps);
  double vendor_us = 0;
  int rc = got == n && n > 0 ? at_retime(&w->c, (int)n, reqs, cubins, sizes, reps, &vendor_us)
                             : at_fail(AT_ERR_RUNTIME, "RETIME: a malformed message (%u of %u leaders)", got, n);
  int sticky = 0;
  for (uint32_t i = 0; i < n; i++) sticky |= reps[i].sticky;
  double t0 = at_now_s();
  if (rc == AT_OK) {
    at_buf b = {0};
    at_buf_append(&b, &n, sizeof n);
    at_buf_append(&b, reps, sizeof *reps * n);
    at_buf_append(&b, &vendor_us, sizeof vendor_us);
    rc = at_msg_send(out, AT_MSG_RETIME_REPLY, b.data, b.len);
    at_buf_free(&b);
  } else {
    rc = send_error(out, at_errmsg());
  }
  w->reply_s += at_now_s() - t0;
  free(reqs);
  free(cubins);
  free(sizes);
  free(reps);
  if (sticky) _exit(3); /* the context is unusable: a fresh worker takes over */
  return rc;
}

static int serve_eval(worker *w, const char *p, size_t len, int out) {
  at_eval_req req;
  at_eval_reply rep;
  if (len < sizeof req || !w->current) return send_error(out, w->current ? "EVAL: short message" : "EVAL before SHAPE");
  memcpy(&req, p, sizeof req);
  int rc = at_evaluate(&w->c, &req, req.load ? p + sizeof req : NULL, len - sizeof req, &rep);
  double t0 = at_now_s();
  rc = rc == AT_OK ? at_msg_send(out, AT_MSG_EVAL_REPLY, &rep, sizeof rep) : send_error(out, at_errmsg());
  w->reply_s += at_now_s() - t0;
  if (rep.sticky) _exit(3); /* the context is unusable: a fresh worker takes over */
  return rc;
}

/* ---- the profile ------------------------------------------------------------------------------ */

static int profile_wanted(void) {
  const char *v = getenv("AUTOTUNE_WORKER_PROFILE");
  return v && *v && strcmp(v, "0") != 0;
}

/* One line: where the worker's time went. Whatever the parts do not cover ("other") is the
 * worker's own bookkeeping and the reading of requests. */
static void profile_print(const worker *w) {
  if (!profile_wanted()) return;
  const at_eval_profile *p = &w->c.prof;
  double wall = at_now_s() - w->t_start;
  double parts = w->idle_s + w->setup_s + w->reply_s + w->peak_s + p->load_s + p->prepare_s + p->poison_s + p->run_s +
                 p->check_s + p->graph_s + p->timing_s + p->retime_s;
  fprintf(stderr,
          "autotune: worker GPU %d profile: %.2f s wall, %lld evaluations, %lld module loads, %lld shape setups"
          " (%lld kept shapes reused, %lld dropped), %lld checks, %lld graphs, %lld samples, %lld re-timings (%lld with the vendor);"
          " seconds: waiting for the parent %.3f, peak %.3f, shape setup %.3f, module load %.3f, prepare %.3f,"
          " poison %.3f, launch+sync %.3f, check %.3f, graph build %.3f, timing %.3f (GPU replays %.3f),"
          " re-timing %.3f, replies %.3f, other %.3f\n",
          w->g.info.index, wall, (long long)p->evals, (long long)p->loads, (long long)w->setups, (long long)w->shape_hits,
          (long long)w->dropped, (long long)p->checks, (long long)p->graphs, (long long)p->samples, (long long)p->retimes,
          (long long)p->vendor_retimes,
          w->idle_s, w->peak_s, w->setup_s, p->load_s, p->prepare_s, p->poison_s, p->run_s, p->check_s, p->graph_s,
          p->timing_s, p->replay_s, p->retime_s, w->reply_s, wall - parts);
}

/* Serves one request; returns 1 when the worker should end (QUIT), or a failure. */
static int serve(worker *w, uint32_t type, const char *p, size_t len, int out) {
  switch (type) {
  case AT_MSG_PEAK: {
    at_peak_reply r;
    double t0 = at_now_s();
    at_measure_peaks(&w->g, &r);
    w->peak_s += at_now_s() - t0;
    return at_msg_send(out, AT_MSG_PEAK_REPLY, &r, sizeof r);
  }
  case AT_MSG_SHAPE: {
    at_shape_req req;
    at_shape_reply rep;
    memset(&req, 0, sizeof req);
    memcpy(&req, p, sizeof req < len ? sizeof req : len);
    serve_shape(w, &req, &rep);
    int rc = at_msg_send(out, AT_MSG_SHAPE_REPLY, &rep, sizeof rep);
    if (rep.sticky) _exit(3);
    return rc;
  }
  case AT_MSG_EVAL: return serve_eval(w, p, len, out);
  case AT_MSG_RETIME: return w->current ? serve_retime(w, p, len, out) : send_error(out, "RETIME before SHAPE");
  case AT_MSG_QUIT: return 1;
  default: return send_error(out, "unknown request");
  }
}

int at_worker_main(int gpu, int in, int out) {
  worker *w = at_xcalloc(1, sizeof *w);
  w->t_start = at_now_s();
  if (at_gpu_open(gpu, &w->g)) {
    send_error(out, at_errmsg());
    free(w);
    return AT_ERR_RUNTIME;
  }
  int rc = at_msg_send(out, AT_MSG_HELLO, &w->g.info, sizeof w->g.info);
  w->c.g = &w->g;
  w->c.pdl = at_pdl_env() != 0; /* the parent refused a wrong value */
  while (rc == AT_OK) {
    uint32_t type;
    void *p;
    size_t len;
    double t0 = at_now_s();
    rc = at_msg_recv(in, -1, &type, &p, &len);
    w->idle_s += at_now_s() - t0;
    if (rc == AT_PROTO_EOF) {
      rc = AT_OK;
      break;
    }
    if (rc) break;
    rc = serve(w, type, p, len, out);
    free(p);
  }
  profile_print(w);
  /* The process ends here: the driver frees the context and every kept shape and module with it. */
  free(w);
  return rc == 1 ? AT_OK : rc;
}

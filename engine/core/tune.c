/* tune.c: the GPU phase, parent side (see tune.h). Nothing here calls CUDA.
 *
 * Threads: one per GPU drives that GPU's worker process; the compile phase's thread feeds
 * candidates in (feed_outcome). Shared under one mutex: the feed (the ready list and the batch
 * bounds), the DB, the statistics and the progress display. A shape's own state (shape_state and
 * its outcome) belongs to the GPU thread it was dealt to, which alone touches it, except the
 * outcome's counters, which the display's totals share and which change under the mutex.
 *
 * Invariants:
 *  - A shape is finished (re-timed, winner recorded) only once every candidate was fed and every
 *    candidate it keeps has a result: never after a stop or a failed compile phase.
 *  - Batch k is the same list of candidates for every shape and every GPU (ready[bounds[k-1] ..
 *    bounds[k])), so a candidate's fault shows on a GPU's shapes in the order its batch walks them
 *    (file order for even k, backwards for odd k: next_unit).
 *  - The mirror of a worker's module table (slot_kernel, kernel_slot) holds exactly what was sent to
 *    the live worker; a new worker starts with an empty one. */
#include "tune.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "progress.h"
#include "proto.h"
#include "shard.h"
#include "util.h"
#include "workerproc.h"

const char *const AT_STATUS_NAMES[AT_ST_COUNT] = {"ok", "wrong", "fault", "timeout", "resources", "quarantined"};

int at_status_index(const char *name) {
  for (int i = 0; i < AT_ST_COUNT; i++)
    if (strcmp(AT_STATUS_NAMES[i], name) == 0) return i;
  return -1;
}

/* The most candidates one batch holds. A batch's candidates are loaded once in a worker and used
 * on each of its shapes in turn, so a batch must fit the worker's module table beside the leaders
 * of a re-timing (at most 100): AT_MODULE_SLOTS is 256. */
enum { BATCH_MAX = 64 };

typedef struct ranked {
  size_t ci;
  double us;
} ranked;

typedef struct shape_state {
  int owner;      /* the GPU thread that tunes it, from its inputs to its winner; -1: another shard's */
  int64_t problem_id;
  size_t cursor;  /* ready[0 .. cursor) have been dealt with on this shape */
  size_t batch;   /* the next batch it takes */
  double best;    /* its fastest ok time so far, this run's and the DB's: the early cut's yardstick */
  ranked *ok;     /* its ok results, for choosing the leaders */
  size_t nok, cap;
  int64_t sent;   /* evaluations sent to a worker in this run */
  int sets;       /* input sets of its latest setup */
  int set_up;     /* its inputs were made and its baselines recorded in this run */
  int finished;   /* winner decided, or nothing to decide */
} shape_state;

typedef struct gpu_thread gpu_thread;

typedef struct shared {
  const at_tune_job *job;
  at_tune_stats *st;
  pthread_mutex_t mu; /* everything below, the DB and the progress display */
  pthread_cond_t fed; /* more candidates, the end of the compile phase, or a failure */
  /* the feed */
  size_t *ready, nready;   /* usable candidates, in the order they were fed */
  size_t *bounds, nbounds; /* batch k is ready[(k ? bounds[k - 1] : 0) .. bounds[k]) */
  size_t nfed;             /* candidates fed, usable or not */
  int closed;              /* every candidate was fed */
  int aborted;             /* the compile phase stopped or failed: nothing more comes, nothing is finished */
  int64_t *cand_id;        /* per candidate: its DB row, once fed */
  char (*keys)[65];        /* per candidate: its kernel's compile key, once fed */
  size_t *kernel;          /* per candidate: its kernel (at_compiled.kernel, a candidate index), once fed */
  int *kills;              /* per candidate: workers it killed in this run */
  uint8_t *quarantined;
  uint8_t *twin;           /* per candidate: one of the same cubin is recorded (at_store_has_twin) */
  shape_state *shapes;
  /* the display */
  at_progress *bar;
  int64_t done_evals, total_evals;
  char compile_text[96];   /* the compile phase's progress, while it runs */
  char shape_text[128];    /* the shape worked on last and its best time */
  double t0;
  /* failures */
  int rc;                  /* the first hard failure */
  char *err;               /* its message */
  int64_t device_id;
} shared;

struct gpu_thread {
  shared *sh;
  int index; /* in job->devices; the owner number of its shapes */
  const at_device_info *dev;
  pthread_t tid;
  at_worker w;
  long cur_shape;    /* the shape the worker has current; -1: none */
  double *last_time; /* per candidate: its time on the last shape this thread timed it on */
  /* the mirror of the worker's module table */
  long slot_kernel[AT_MODULE_SLOTS];   /* per slot: the kernel loaded there (shared->kernel), -1 */
  uint64_t slot_used[AT_MODULE_SLOTS]; /* per slot: when last used */
  int *kernel_slot;                    /* per kernel: its slot, -1 */
  uint64_t tick;
  double busy_s, starved_s;
};

struct at_tune {
  shared sh;
  gpu_thread *threads;
  int nthreads;
  at_compile_feed feed;
};

static void lock(shared *sh) { pthread_mutex_lock(&sh->mu); }
static void unlock(shared *sh) { pthread_mutex_unlock(&sh->mu); }

/* Keeps the first failure and its message (error messages live per thread), and wakes everyone. */
static void fail_shared(shared *sh, int rc, const char *msg) {
  if (sh->rc == AT_OK) {
    sh->rc = rc;
    sh->err = at_xstrdup(msg);
  }
  pthread_cond_broadcast(&sh->fed);
}

/* Under the mutex: stop taking new work (a Ctrl-C, a failure anywhere, a compile phase cut short). */
static int stopping(const shared *sh) {
  return sh->rc != AT_OK || sh->aborted || (sh->job->stop && *sh->job->stop);
}

/* ---- the display ------------------------------------------------------------------------------ */

static void show(shared *sh) {
  char extra[256];
  snprintf(extra, sizeof extra, "%s%s%s", sh->compile_text, sh->compile_text[0] && sh->shape_text[0] ? "; " : "",
           sh->shape_text);
  at_progress_update(sh->bar, sh->done_evals, extra[0] ? extra : NULL);
}

static void note_shape(shared *sh, const at_shape *s, double best) {
  snprintf(sh->shape_text, sizeof sh->shape_text, "M=%lld N=%lld K=%lld best %.2f us", (long long)s->m, (long long)s->n,
           (long long)s->k, best);
}

/* ---- the feed: the compile phase's side -------------------------------------------------------- */

/* The (candidate, shape) pairs of candidate ci that this run sets up. */
static int64_t pairs_of(const shared *sh, size_t ci) {
  const at_enum *e = sh->job->cands;
  int64_t n = 0;
  for (size_t j = 0; j < e->nshapes; j++) n += e->shape_ok[ci * e->nshapes + j] && sh->shapes[j].owner >= 0;
  return n;
}

static void feed_outcome(void *ctx, size_t ci, const at_compiled *c) {
  shared *sh = ctx;
  lock(sh);
  sh->nfed++;
  sh->cand_id[ci] = c->cand_id;
  memcpy(sh->keys[ci], c->kernel_key, sizeof sh->keys[ci]);
  sh->kernel[ci] = c->kernel;
  if (c->usable) {
    /* A quarantine from an earlier run holds (a --fresh run records the candidate anew, clearing it). */
    int q = 0;
    if (at_store_candidate_quarantined(sh->job->db, c->cand_id, &q) != AT_OK) fail_shared(sh, AT_ERR_RUNTIME, at_errmsg());
    if (q) sh->quarantined[ci] = 1, sh->kills[ci] = 2;
    int t = 0;
    if (!sh->job->fresh && at_store_has_twin(sh->job->db, c->cand_id, &t) != AT_OK)
      fail_shared(sh, AT_ERR_RUNTIME, at_errmsg());
    sh->twin[ci] = (uint8_t)t;
    sh->ready[sh->nready++] = ci;
  } else {
    /* Nothing to time: its pairs leave the display's total. */
    sh->total_evals -= pairs_of(sh, ci);
    at_progress_set_total(sh->bar, sh->total_evals);
  }
  pthread_cond_broadcast(&sh->fed);
  unlock(sh);
}

static void feed_progress(void *ctx, int64_t done, int64_t total, const char *extra, int final) {
  shared *sh = ctx;
  lock(sh);
  if (final) {
    sh->compile_text[0] = 0;
    char note[256];
    snprintf(note, sizeof note, "compile: %lld/%lld after %.1f s; %s", (long long)done, (long long)total,
             at_now_s() - sh->t0, extra);
    at_progress_note(sh->bar, note);
  } else {
    snprintf(sh->compile_text, sizeof sh->compile_text, "compile %lld/%lld, %s", (long long)done, (long long)total, extra);
  }
  show(sh);
  unlock(sh);
}

/* ---- the feed: the GPU threads' side ----------------------------------------------------------- */

enum { UNIT_NONE, UNIT_BATCH, UNIT_FINISH };

typedef struct unit {
  size_t shape;
  size_t *cands; /* BATCH_MAX, the thread's */
  size_t n;
} unit;

/* Batch k of shape si into u: the candidates of the batch that the shape keeps. Batch bounds are
 * made by whoever asks first, from what is ready then, and hold for everyone after. */
static void take_batch(shared *sh, size_t si, unit *u) {
  shape_state *ss = &sh->shapes[si];
  const at_enum *e = sh->job->cands;
  size_t k = ss->batch;
  if (k == sh->nbounds) {
    size_t end = ss->cursor + BATCH_MAX;
    sh->bounds[sh->nbounds++] = end < sh->nready ? end : sh->nready;
  }
  size_t end = sh->bounds[k];
  u->shape = si;
  u->n = 0;
  for (size_t i = ss->cursor; i < end; i++)
    if (e->shape_ok[sh->ready[i] * e->nshapes + si]) u->cands[u->n++] = sh->ready[i];
  ss->cursor = end;
  ss->batch = k + 1;
}

/* Under the mutex: the thread's next piece of work, waiting for the feed when none is ready.
 * A shape whose candidates are all dealt with is finished first (it is the worker's current
 * shape, and its winner is then safe in the DB); otherwise the shape furthest behind takes its
 * next batch, so that each batch goes across every shape before the next one starts. Batch k
 * walks the shapes in file order when k is even and backwards when it is odd: the shapes a worker
 * used last are then the first it needs again, so its cache (the least recently used dropped
 * first) makes again only the shapes it cannot keep, not every shape of a job larger than it. */
static int next_unit(gpu_thread *g, unit *u) {
  shared *sh = g->sh;
  const size_t ns = sh->job->space->nshapes;
  for (;;) {
    if (stopping(sh)) return UNIT_NONE;
    long behind = -1, done = -1;
    int open = 0;
    for (size_t si = 0; si < ns; si++) {
      shape_state *ss = &sh->shapes[si];
      if (ss->owner != g->index || ss->finished) continue;
      open = 1;
      /* Both picks take, among equals, the first shape of the walk of the shape's next batch: file
       * order when it is even, backwards when odd (the last shape). A shape to finish took its last
       * batch in the other direction, so this is the one the worker used last. */
      if (sh->closed && ss->cursor == sh->nready) {
        if (done < 0 || ss->batch % 2 == 1) done = (long)si;
        continue;
      }
      if (ss->cursor < sh->nready &&
          (behind < 0 || ss->batch < sh->shapes[behind].batch ||
           (ss->batch == sh->shapes[behind].batch && ss->batch % 2 == 1)))
        behind = (long)si;
    }
    if (done >= 0) {
      u->shape = (size_t)done;
      return UNIT_FINISH;
    }
    if (behind >= 0) {
      take_batch(sh, (size_t)behind, u);
      return UNIT_BATCH;
    }
    if (!open) return UNIT_NONE;
    /* Everything fed so far is done here: wait for the compile phase. The wait wakes now and then
     * to notice a Ctrl-C, which no condition variable hears. */
    double t0 = at_now_s();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&sh->fed, &sh->mu, &ts);
    g->starved_s += at_now_s() - t0;
  }
}

/* ---- the worker ------------------------------------------------------------------------------- */

static void forget_modules(gpu_thread *g, size_t ncands) {
  for (int s = 0; s < AT_MODULE_SLOTS; s++) g->slot_kernel[s] = -1, g->slot_used[s] = 0;
  for (size_t i = 0; i < ncands; i++) g->kernel_slot[i] = -1;
  g->tick = 0;
}

static int ensure_worker(gpu_thread *g) {
  if (at_worker_alive(&g->w)) return AT_OK;
  /* A new worker holds no shape and no module. */
  g->cur_shape = -1;
  forget_modules(g, g->sh->job->cands->n);
  AT_TRY(at_worker_start(g->dev->index, &g->w));
  if (at_debug()) fprintf(stderr, "autotune: debug: GPU %d: worker %d started\n", g->dev->index, (int)g->w.pid);
  return AT_OK;
}

/* at_worker_call, with the time the worker spent on it counted as the GPU's busy time. */
static int call(gpu_thread *g, uint32_t type, const void *a, size_t alen, const void *b, size_t blen, double timeout_s,
                uint32_t want, void **reply, size_t *len) {
  double t0 = at_now_s();
  int rc = at_worker_call(&g->w, type, a, alen, b, blen, timeout_s, want, reply, len);
  g->busy_s += at_now_s() - t0;
  return rc;
}

static void shape_req(const at_tune_job *job, size_t si, at_shape_req *r) {
  const at_space *s = job->space;
  memset(r, 0, sizeof *r); /* the worker compares whole requests: no stray bytes */
  snprintf(r->op, sizeof r->op, "%s", s->op_name);
  r->m = s->shapes[si].m;
  r->n = s->shapes[si].n;
  r->k = s->shapes[si].k;
  r->seed = s->seed;
  r->l2_multiple = s->timing.l2_multiple;
  r->warmup = s->timing.warmup;
  r->samples = s->timing.samples;
  r->baselines = job->baselines;
  r->atol = s->atol;
  r->rtol = s->rtol;
  r->gamma = s->gamma;
}

/* The first setup of a shape in this run: its baselines into the outcome and the DB. */
static int record_setup(gpu_thread *g, size_t si, const at_shape_reply *rep) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  at_shape_outcome *o = &sh->st->shapes[si];
  int64_t pid = sh->shapes[si].problem_id;
  o->ref_us = rep->ref_us;
  o->vendor_us = rep->vendor_us;
  o->vendor_check_ratio = rep->vendor_check_ratio;
  snprintf(o->vendor_name, sizeof o->vendor_name, "%s", rep->vendor_name);
  int rc = AT_OK;
  lock(sh);
  if (rep->message[0]) {
    char note[700];
    snprintf(note, sizeof note, "M=%lld N=%lld K=%lld: %s", (long long)o->shape.m, (long long)o->shape.n,
             (long long)o->shape.k, rep->message);
    at_progress_note(sh->bar, note);
  }
  if (rep->ref_us > 0) rc = at_store_put_baseline(job->db, pid, sh->device_id, job->run_id, "cublas_fp32_reference", rep->ref_us);
  if (rc == AT_OK && rep->vendor_us > 0)
    rc = at_store_put_baseline_checked(job->db, pid, sh->device_id, job->run_id, rep->vendor_name, rep->vendor_us,
                                       rep->vendor_check_ratio);
  unlock(sh);
  return rc;
}

/* Makes shape si the worker's current one: kept by the worker from before, or made now (a new
 * worker makes it again). Its baselines are recorded the first time in this run. */
static int use_shape(gpu_thread *g, size_t si) {
  shared *sh = g->sh;
  AT_TRY(ensure_worker(g));
  if (g->cur_shape == (long)si) return AT_OK;
  at_shape_req req;
  shape_req(sh->job, si, &req);
  void *p;
  size_t len;
  double t0 = at_now_s();
  int rc = call(g, AT_MSG_SHAPE, &req, sizeof req, NULL, 0, 300.0, AT_MSG_SHAPE_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the worker %s while preparing inputs for M=%lld N=%lld K=%lld (%s)",
                   g->dev->index, rc == AT_PROTO_TIMEOUT ? "hung" : "died", (long long)req.m, (long long)req.n,
                   (long long)req.k, g->w.exit_reason);
  AT_TRY(rc);
  at_shape_reply r;
  memset(&r, 0, sizeof r);
  memcpy(&r, p, sizeof r < len ? sizeof r : len);
  free(p);
  if (!r.ok)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: preparing M=%lld N=%lld K=%lld: %s", g->dev->index, (long long)req.m,
                   (long long)req.n, (long long)req.k, r.message);
  g->cur_shape = (long)si;
  shape_state *ss = &sh->shapes[si];
  ss->sets = r.sets;
  lock(sh);
  sh->st->setup_s += at_now_s() - t0;
  unlock(sh);
  if (ss->set_up) return AT_OK;
  ss->set_up = 1;
  return record_setup(g, si, &r);
}

/* The worker's module slot for candidate ci's kernel; *load: the worker does not hold it, so the
 * cubin goes with the request, into the least recently used slot. Candidates that share a kernel
 * share its slot: the cubin crosses the pipe once per worker, whatever their number. */
static int slot_for(gpu_thread *g, size_t ci, int32_t *load) {
  size_t k = g->sh->kernel[ci];
  int s = g->kernel_slot[k];
  *load = s < 0;
  if (s < 0) {
    s = 0;
    for (int i = 1; i < AT_MODULE_SLOTS; i++)
      if (g->slot_used[i] < g->slot_used[s]) s = i;
    if (g->slot_kernel[s] >= 0) g->kernel_slot[g->slot_kernel[s]] = -1;
    g->slot_kernel[s] = (long)k;
    g->kernel_slot[k] = s;
  }
  g->slot_used[s] = ++g->tick;
  return s;
}

/* The request for candidate ci on the worker's current shape; with its cubin (malloc'd) when the
 * worker must load it. */
static int build_eval(gpu_thread *g, size_t ci, double cut_us, at_eval_req *req, void **cubin, size_t *size) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  const at_cand *c = &job->cands->c[ci];
  const at_variant *v = &job->space->variants[c->variant];
  *cubin = NULL;
  *size = 0;
  if (v->nparams > AT_MAX_PARAMS) return at_fail(AT_ERR_INPUT, "variant %s has more than %d parameters", v->name, AT_MAX_PARAMS);
  memset(req, 0, sizeof *req);
  req->candidate_id = (int64_t)ci;
  req->slot = slot_for(g, ci, &req->load);
  snprintf(req->key, sizeof req->key, "%s", sh->keys[ci]); /* fed before any GPU thread saw ci */
  snprintf(req->family, sizeof req->family, "%s", v->family);
  req->nparams = (int)v->nparams;
  for (size_t i = 0; i < v->nparams; i++) {
    snprintf(req->param_names[i], sizeof req->param_names[i], "%s", v->params[i].name);
    req->param_values[i] = c->table[i];
  }
  const at_timing *t = &job->space->timing;
  req->atol = job->space->atol;
  req->rtol = job->space->rtol;
  req->gamma = job->space->gamma;
  req->warmup = t->warmup;
  req->samples = t->samples;
  req->cut_after = t->cut_after;
  req->cut_us = cut_us;
  if (!req->load) return AT_OK;
  /* From the compile cache, where the compile phase left it. */
  at_jit_result jr;
  AT_TRY(at_jit_compile(job->sources[c->variant], c->name_expr, &job->opts, job->cache_dir, &jr));
  if (!jr.ok) {
    at_jit_result_free(&jr);
    return at_fail(AT_ERR_RUNTIME, "%s: compiled earlier but fails to compile now", c->name_expr);
  }
  snprintf(req->lowered_name, sizeof req->lowered_name, "%s", jr.lowered_name);
  *cubin = jr.cubin;
  *size = jr.cubin_size;
  jr.cubin = NULL;
  at_jit_result_free(&jr);
  return AT_OK;
}

/* ---- outcomes --------------------------------------------------------------------------------- */

static void fill_rates(const at_tune_job *job, const at_tune_stats *st, const at_shape *s, double us, at_result_row *row) {
  double sec = us * 1e-6;
  double flops = job->space->op->flops(s), bytes = job->space->op->min_bytes(s);
  row->tflops = flops / sec / 1e12;
  row->gbs = bytes / sec / 1e9;
  double floor_s = 0;
  if (st->peak_tflops > 0) floor_s = flops / (st->peak_tflops * 1e12);
  if (st->peak_gbs > 0 && bytes / (st->peak_gbs * 1e9) > floor_s) floor_s = bytes / (st->peak_gbs * 1e9);
  row->roofline_pct = floor_s > 0 ? 100.0 * floor_s / sec : 0;
}

static void add_ok(shape_state *ss, size_t ci, double us) {
  if (ss->nok == ss->cap) {
    ss->cap = ss->cap ? 2 * ss->cap : 64;
    ss->ok = at_xrealloc(ss->ok, ss->cap * sizeof *ss->ok);
  }
  ss->ok[ss->nok++] = (ranked){ci, us};
  if (ss->best == 0 || us < ss->best) ss->best = us;
}

/* Writes one outcome of candidate ci on shape si: the result row, the counters, the worker it
 * killed and a quarantine after two. replaces_ok: the candidate had an ok result on this shape
 * already (a failure during re-timing), whose count moves to the new status. */
static int record_outcome(gpu_thread *g, size_t si, size_t ci, const at_eval_reply *rep, int killed, int replaces_ok) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  at_shape_outcome *o = &sh->st->shapes[si];
  lock(sh);
  if (killed) {
    sh->st->replaced_workers++;
    if (++sh->kills[ci] >= 2) sh->quarantined[ci] = 1;
  }
  int quarantine_now = killed && sh->quarantined[ci];
  at_result_row row = {
      .candidate_id = sh->cand_id[ci],
      .problem_id = sh->shapes[si].problem_id,
      .device_id = sh->device_id,
      .run_id = job->run_id,
      .status = rep->status,
      .time_us = rep->time_us,
      .time_min_us = rep->time_min_us,
      .time_max_us = rep->time_max_us,
      .samples = rep->samples,
      .cut = rep->cut,
      .occupancy = rep->occupancy,
      .max_abs_err = rep->max_abs_err,
      .check_ratio = rep->check_ratio,
      .bad_count = rep->bad_count,
      .first_bad = rep->first_bad,
      .message = rep->message,
      .seed = (int64_t)job->space->seed,
      .sets = sh->shapes[si].sets,
  };
  if (rep->samples > 0) fill_rates(job, sh->st, &o->shape, rep->time_us, &row);
  int rc = at_store_put_result(job->db, &row);
  if (rc == AT_OK && quarantine_now) rc = at_store_quarantine(job->db, sh->cand_id[ci]);
  if (at_debug()) {
    const at_cand *c = &job->cands->c[ci];
    fprintf(stderr, "autotune: debug: GPU %d M=%lld N=%lld K=%lld %s %s: %s %.3f us%s%s%s\n", g->dev->index,
            (long long)o->shape.m, (long long)o->shape.n, (long long)o->shape.k, job->space->variants[c->variant].name,
            c->params_json, rep->status, rep->time_us, rep->cut ? " (cut)" : "", rep->message[0] ? ": " : "",
            rep->message);
  }
  int k = at_status_index(rep->status);
  if (replaces_ok) o->counts[AT_ST_OK]--, sh->st->counts[AT_ST_OK]--;
  if (k >= 0) o->counts[k]++, sh->st->counts[k]++;
  if (!replaces_ok) o->evaluated++, sh->st->evaluated++, sh->done_evals++;
  unlock(sh);
  return rc;
}

/* What a worker that died or overran during a request says for the candidate it was running. */
static void death_reply(const gpu_thread *g, int rc, at_eval_reply *rep) {
  memset(rep, 0, sizeof *rep);
  snprintf(rep->status, sizeof rep->status, "%s", rc == AT_PROTO_TIMEOUT ? "timeout" : "fault");
  snprintf(rep->message, sizeof rep->message, "worker %s", g->w.exit_reason);
  rep->max_abs_err = -1;
  rep->check_ratio = -1;
  rep->first_bad = -1;
}

/* Checks and times candidate ci on shape si; writes its result. *time_out: its time when ok. */
static int evaluate(gpu_thread *g, size_t si, size_t ci, double cut_us, double *time_out) {
  shared *sh = g->sh;
  *time_out = 0;
  AT_TRY(use_shape(g, si)); /* first: a new worker forgets the module table before a slot is chosen */
  at_eval_req req;
  void *cubin = NULL;
  size_t cubin_size = 0;
  AT_TRY(build_eval(g, ci, cut_us, &req, &cubin, &cubin_size));
  void *p = NULL;
  size_t len = 0;
  int rc = call(g, AT_MSG_EVAL, &req, sizeof req, cubin, cubin_size, sh->job->space->timing.timeout_s,
                AT_MSG_EVAL_REPLY, &p, &len);
  free(cubin);
  sh->shapes[si].sent++;
  at_eval_reply rep;
  memset(&rep, 0, sizeof rep);
  int killed = 0;
  if (rc == AT_OK) {
    memcpy(&rep, p, sizeof rep < len ? sizeof rep : len);
    free(p);
    if (rep.sticky) {
      at_worker_kill(&g->w); /* its context is gone; it exits anyway */
      killed = 1;
    }
  } else if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF) {
    killed = 1;
    death_reply(g, rc, &rep);
  } else {
    return rc;
  }
  rc = record_outcome(g, si, ci, &rep, killed, 0);
  if (rc == AT_OK && strcmp(rep.status, "ok") == 0) *time_out = rep.time_us;
  return rc;
}

/* ---- the leaders, side by side ---------------------------------------------------------------- */

static int cmp_ranked(const void *a, const void *b) {
  double x = ((const ranked *)a)->us, y = ((const ranked *)b)->us;
  return x < y ? -1 : x > y;
}

/* The RETIME message for leaders ok[0..top): cubins go only to a worker that does not hold them.
 * The leaders' slots are the most recently used ones, so none evicts another (top <= 100 <
 * AT_MODULE_SLOTS). */
static int build_retime(gpu_thread *g, const ranked *ok, size_t top, at_buf *msg) {
  uint32_t count = (uint32_t)top;
  at_buf_append(msg, &count, sizeof count);
  for (size_t i = 0; i < top; i++) {
    at_eval_req req;
    void *cubin;
    size_t size;
    AT_TRY(build_eval(g, ok[i].ci, 0, &req, &cubin, &size));
    req.samples = g->sh->job->space->timing.retime_samples;
    uint64_t sz = size;
    at_buf_append(msg, &req, sizeof req);
    at_buf_append(msg, &sz, sizeof sz);
    if (size) at_buf_append(msg, cubin, size);
    free(cubin);
  }
  return AT_OK;
}

/* The worker died without saying which leader killed it: each leader is evaluated again on its
 * own, which tells (and gives the others a time of this worker's). */
static int retime_alone(gpu_thread *g, size_t si, ranked *ok, size_t top) {
  shared *sh = g->sh;
  at_shape_outcome *o = &sh->st->shapes[si];
  for (size_t i = 0; i < top; i++) {
    double us = 0;
    lock(sh);
    o->counts[AT_ST_OK]--, sh->st->counts[AT_ST_OK]--, o->evaluated--, sh->st->evaluated--, sh->done_evals--;
    unlock(sh);
    AT_TRY(evaluate(g, si, ok[i].ci, 0, &us));
    ok[i].us = us > 0 ? us : INFINITY;
  }
  return AT_OK;
}

/* One side-by-side re-timing of ok[0..top). *again: the context died on a leader (now recorded
 * with its status, out of the ranking) before the others were re-timed: do it again without it. */
static int retime_once(gpu_thread *g, size_t si, ranked *ok, size_t top, int *again) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  *again = 0;
  AT_TRY(use_shape(g, si));
  at_buf msg = {0};
  int rc = build_retime(g, ok, top, &msg);
  void *p = NULL;
  size_t len = 0;
  if (rc == AT_OK)
    rc = call(g, AT_MSG_RETIME, msg.data, msg.len, NULL, 0, job->space->timing.timeout_s * (double)top,
              AT_MSG_RETIME_REPLY, &p, &len);
  at_buf_free(&msg);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF) return retime_alone(g, si, ok, top);
  AT_TRY(rc);
  uint32_t n = 0;
  if (len >= sizeof n) memcpy(&n, p, sizeof n);
  if (len < sizeof n + (size_t)n * sizeof(at_eval_reply) || n != top) {
    free(p);
    return at_fail(AT_ERR_RUNTIME, "GPU %d: a re-timing reply of the wrong size", g->dev->index);
  }
  const at_eval_reply *reps = (const at_eval_reply *)((char *)p + sizeof n);
  int sticky = 0;
  for (uint32_t i = 0; i < n && rc == AT_OK; i++) {
    if (strcmp(reps[i].status, "ok") == 0) {
      ok[i].us = reps[i].time_us;
      lock(sh);
      rc = at_store_set_retime(job->db, sh->cand_id[ok[i].ci], sh->shapes[si].problem_id, sh->device_id, reps[i].time_us);
      unlock(sh);
    } else if (reps[i].status[0] == 0) {
      *again = 1; /* not re-timed: another leader killed the context first */
    } else {
      at_eval_reply r = reps[i];
      snprintf(r.message, sizeof r.message, "during side-by-side re-timing: %.470s", reps[i].message);
      sticky |= r.sticky;
      rc = record_outcome(g, si, ok[i].ci, &r, r.sticky, 1);
      ok[i].us = INFINITY;
    }
  }
  /* The vendor's time from the same round-robin (0: not timed), which replaces the one taken when
   * the shape was set up: the winner and the vendor are then compared under the same conditions. */
  double vendor_us = 0;
  size_t at = sizeof n + (size_t)n * sizeof(at_eval_reply);
  if (len >= at + sizeof vendor_us) memcpy(&vendor_us, (char *)p + at, sizeof vendor_us);
  at_shape_outcome *o = &sh->st->shapes[si];
  if (rc == AT_OK && vendor_us > 0 && o->vendor_name[0]) {
    lock(sh);
    o->vendor_us = vendor_us;
    rc = at_store_put_baseline_checked(job->db, sh->shapes[si].problem_id, sh->device_id, job->run_id, o->vendor_name,
                                       vendor_us, o->vendor_check_ratio);
    unlock(sh);
  }
  free(p);
  if (sticky) at_worker_kill(&g->w); /* it exits after a sticky error; reap it */
  return rc;
}

/* Drops the leaders that failed (infinite times) from ok[0..top) and the ranking. */
static void drop_failed(ranked *ok, size_t top, size_t *nok) {
  size_t kept = 0;
  for (size_t i = 0; i < top; i++)
    if (!isinf(ok[i].us)) ok[kept++] = ok[i];
  memmove(ok + kept, ok + top, sizeof *ok * (*nok - top));
  *nok -= top - kept;
}

/* Re-times the leaders side by side and sorts ok[0..*nok) by the new times. A leader that fails
 * now (a kernel can pass its check and fault on a later launch) gets that status instead of ok and
 * leaves the ranking. */
static int retime(gpu_thread *g, size_t si, ranked *ok, size_t *nok) {
  size_t top = (size_t)g->sh->job->space->timing.retime_top;
  if (top > *nok) top = *nok;
  for (;;) {
    if (top == 0) return AT_OK;
    int again = 0;
    AT_TRY(retime_once(g, si, ok, top, &again));
    size_t before = *nok;
    drop_failed(ok, top, nok);
    top -= before - *nok;
    /* Each time again, the leader that killed the context has left: the loop ends. */
    if (!again || before == *nok) break;
  }
  qsort(ok, top, sizeof *ok, cmp_ranked);
  return AT_OK;
}

/* ---- units of work ---------------------------------------------------------------------------- */

static int cmp_by_last(const void *a, const void *b, void *last) {
  const double *t = last;
  double x = t[*(const size_t *)a], y = t[*(const size_t *)b];
  if (x == y) return 0;
  if (x == 0) return 1; /* unknown last */
  if (y == 0) return -1;
  return x < y ? -1 : 1;
}

/* Under the mutex: what earlier runs already did with cands on shape si (taken into its counts,
 * its ranking and its best time) and the quarantined ones (recorded); the rest go to todo. */
static int sort_out(gpu_thread *g, size_t si, const size_t *cands, size_t n, size_t *todo, size_t *ntodo) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  shape_state *ss = &sh->shapes[si];
  at_shape_outcome *o = &sh->st->shapes[si];
  *ntodo = 0;
  for (size_t j = 0; j < n; j++) {
    size_t i = cands[j];
    const char *status = "";
    double us = 0;
    int adopted = 0;
    if (!job->fresh) AT_TRY(at_store_get_result(job->db, sh->cand_id[i], ss->problem_id, sh->device_id, &status, &us));
    if (!job->fresh && !status[0] && !sh->quarantined[i] && sh->twin[i]) {
      /* The same machine code, timed as another candidate (a template edit that left the cubin
       * alone): its result is this one's. */
      AT_TRY(at_store_adopt_result(job->db, sh->cand_id[i], ss->problem_id, sh->device_id, job->run_id, &adopted));
      if (adopted) AT_TRY(at_store_get_result(job->db, sh->cand_id[i], ss->problem_id, sh->device_id, &status, &us));
    }
    if (status[0]) {
      sh->st->adopted += adopted;
      int k = at_status_index(status);
      if (k >= 0) o->counts[k]++, sh->st->counts[k]++;
      o->resumed++;
      sh->st->resumed++;
      sh->done_evals++; /* counted as done, so that progress and its ETA stay true on a rerun */
      if (k == AT_ST_OK) add_ok(ss, i, us), g->last_time[i] = us;
      continue;
    }
    if (sh->quarantined[i]) {
      at_result_row row = {.candidate_id = sh->cand_id[i], .problem_id = ss->problem_id, .device_id = sh->device_id,
                           .run_id = job->run_id, .status = "quarantined", .message = "not run: it killed two workers",
                           .max_abs_err = -1, .first_bad = -1, .check_ratio = -1, .seed = (int64_t)job->space->seed};
      AT_TRY(at_store_put_result(job->db, &row));
      o->counts[AT_ST_QUARANTINED]++, sh->st->counts[AT_ST_QUARANTINED]++;
      sh->done_evals++;
      continue;
    }
    todo[(*ntodo)++] = i;
  }
  return AT_OK;
}

/* A batch of candidates on shape si: each checked and timed, fastest first by their times on the
 * shape this thread did before, cut early against the shape's best so far. */
static int run_batch(gpu_thread *g, size_t si, const size_t *cands, size_t n) {
  shared *sh = g->sh;
  const at_timing *t = &sh->job->space->timing;
  shape_state *ss = &sh->shapes[si];
  size_t todo[BATCH_MAX], ntodo = 0;
  lock(sh);
  int rc = sort_out(g, si, cands, n, todo, &ntodo);
  show(sh);
  unlock(sh);
  AT_TRY(rc);
  qsort_r(todo, ntodo, sizeof *todo, cmp_by_last, g->last_time);
  double t0 = at_now_s();
  for (size_t i = 0; i < ntodo && rc == AT_OK; i++) {
    lock(sh);
    int stop = stopping(sh);
    unlock(sh);
    if (stop) break;
    double us = 0;
    rc = evaluate(g, si, todo[i], ss->best > 0 ? ss->best * t->cut_factor : 0, &us);
    g->last_time[todo[i]] = us;
    if (rc == AT_OK && us > 0) add_ok(ss, todo[i], us);
    lock(sh);
    note_shape(sh, &sh->st->shapes[si].shape, ss->best);
    show(sh);
    unlock(sh);
  }
  lock(sh);
  sh->st->eval_s += at_now_s() - t0;
  unlock(sh);
  return rc;
}

/* The winner an earlier run recorded for a shape this run had nothing to do on; *found = 0 when
 * there is none (the shape is then re-timed and decided now). */
static int winner_from_db(gpu_thread *g, size_t si, int *found) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  at_shape_outcome *o = &sh->st->shapes[si];
  int64_t pid = sh->shapes[si].problem_id, wc = -1;
  double wt = 0;
  *found = 0;
  lock(sh);
  int rc = at_store_get_winner(job->db, pid, sh->device_id, &wc, &wt);
  for (size_t i = 0; rc == AT_OK && wc >= 0 && i < job->cands->n; i++)
    if (sh->cand_id[i] == wc) o->winner = (int64_t)i;
  if (rc == AT_OK && o->winner >= 0) {
    *found = 1;
    o->winner_us = wt;
    at_result_row row = {0};
    fill_rates(job, sh->st, &o->shape, wt, &row);
    o->tflops = row.tflops;
    o->roofline_pct = row.roofline_pct;
    rc = at_store_get_baseline(job->db, pid, sh->device_id, "cublas_fp32_reference", &o->ref_us);
    if (rc == AT_OK) rc = at_store_get_baseline(job->db, pid, sh->device_id, "cublaslt_blockscale_fp8", &o->vendor_us);
  }
  unlock(sh);
  return rc;
}

/* Every candidate of shape si has a result: the leaders, side by side, decide its winner. A shape
 * this run had nothing to do on keeps the winner recorded before, and needs no inputs at all. */
static int finish_shape(gpu_thread *g, size_t si) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  shape_state *ss = &sh->shapes[si];
  at_shape_outcome *o = &sh->st->shapes[si];
  if (ss->sent == 0 && !job->fresh) {
    int found = 0;
    AT_TRY(winner_from_db(g, si, &found));
    if (found) {
      o->done = ss->finished = 1;
      return AT_OK;
    }
  }
  AT_TRY(use_shape(g, si)); /* inputs and baselines, for a shape that had nothing to evaluate */
  qsort(ss->ok, ss->nok, sizeof *ss->ok, cmp_ranked);
  double t0 = at_now_s();
  AT_TRY(retime(g, si, ss->ok, &ss->nok));
  int rc = AT_OK;
  lock(sh);
  sh->st->retime_s += at_now_s() - t0;
  if (ss->nok) {
    o->winner = (int64_t)ss->ok[0].ci;
    o->winner_us = ss->ok[0].us;
    at_result_row row = {0};
    fill_rates(job, sh->st, &o->shape, o->winner_us, &row);
    o->tflops = row.tflops;
    o->roofline_pct = row.roofline_pct;
    rc = at_store_put_winner(job->db, ss->problem_id, sh->device_id, sh->cand_id[ss->ok[0].ci], o->winner_us, job->run_id);
  }
  o->done = ss->finished = 1;
  unlock(sh);
  return rc;
}

/* ---- threads ---------------------------------------------------------------------------------- */

static int measure_peaks(gpu_thread *g) {
  shared *sh = g->sh;
  AT_TRY(ensure_worker(g));
  void *p;
  size_t len;
  int rc = call(g, AT_MSG_PEAK, NULL, 0, NULL, 0, 120.0, AT_MSG_PEAK_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the worker died measuring peak rates (%s)", g->dev->index, g->w.exit_reason);
  AT_TRY(rc);
  at_peak_reply r;
  memset(&r, 0, sizeof r);
  memcpy(&r, p, sizeof r < len ? sizeof r : len);
  free(p);
  lock(sh);
  if (sh->st->peak_tflops == 0) {
    sh->st->peak_tflops = r.fp8_tflops;
    sh->st->peak_gbs = r.copy_gbs;
    rc = at_store_run_device(sh->job->db, sh->job->run_id, sh->device_id, r.fp8_tflops, r.copy_gbs);
    if (r.note[0]) at_progress_note(sh->bar, r.note);
  }
  unlock(sh);
  return rc;
}

static void *gpu_main(void *arg) {
  gpu_thread *g = arg;
  shared *sh = g->sh;
  size_t cands[BATCH_MAX];
  int rc = measure_peaks(g);
  while (rc == AT_OK) {
    unit u = {.cands = cands};
    lock(sh);
    int what = next_unit(g, &u);
    unlock(sh);
    if (what == UNIT_NONE) break;
    rc = what == UNIT_BATCH ? run_batch(g, u.shape, u.cands, u.n) : finish_shape(g, u.shape);
  }
  at_worker_stop(&g->w);
  if (rc) {
    lock(sh);
    fail_shared(sh, rc, at_errmsg()); /* the message lives in this thread's error slot */
    unlock(sh);
  }
  return NULL;
}

/* ---- start and finish ------------------------------------------------------------------------- */

/* The shapes of this run to the GPUs, largest estimated cost first to the least loaded GPU (ties
 * to the lower index): each GPU's share of the work as even as the estimate allows. */
static void deal_shapes(shared *sh, int ngpus) {
  const at_tune_job *job = sh->job;
  const at_enum *e = job->cands;
  size_t ns = job->space->nshapes;
  int64_t *cost = at_xcalloc(ns ? ns : 1, sizeof *cost), *load = at_xcalloc((size_t)ngpus, sizeof *load);
  size_t *order = at_xcalloc(ns ? ns : 1, sizeof *order), nord = 0;
  for (size_t j = 0; j < ns; j++) {
    if (job->shapes_on && !job->shapes_on[j]) {
      sh->shapes[j].owner = -1;
      continue;
    }
    int64_t keep = 0;
    for (size_t i = 0; i < e->n; i++) keep += e->shape_ok[i * ns + j];
    cost[j] = (keep ? keep : 1) * at_shard_pair_cost(job->space, &job->space->shapes[j]);
    order[nord++] = j;
  }
  /* largest first; a stable insertion sort keeps the file order among equals */
  for (size_t a = 1; a < nord; a++)
    for (size_t b = a; b > 0 && cost[order[b]] > cost[order[b - 1]]; b--) {
      size_t x = order[b];
      order[b] = order[b - 1];
      order[b - 1] = x;
    }
  for (size_t a = 0; a < nord; a++) {
    int to = 0;
    for (int k = 1; k < ngpus; k++)
      if (load[k] < load[to]) to = k;
    sh->shapes[order[a]].owner = to;
    load[to] += cost[order[a]];
  }
  free(cost);
  free(load);
  free(order);
}

/* The device row and each shape's problem row, before any thread runs. */
static int record_start(shared *sh) {
  const at_tune_job *job = sh->job;
  const at_device_info *d = &job->devices[0];
  char arch[16], driver[32];
  at_arch_for_cc(d->cc, arch);
  snprintf(driver, sizeof driver, "%d.%d", d->driver_version / 1000, d->driver_version % 1000 / 10);
  at_device_row dr = {d->name, arch, d->uuid, driver, d->cc, d->sm_count, d->l2_bytes, d->smem_optin, d->mem_bytes};
  AT_TRY(at_store_device(job->db, &dr, &sh->device_id));
  const at_space *s = job->space;
  for (size_t j = 0; j < s->nshapes; j++) {
    if (sh->shapes[j].owner < 0) {
      sh->st->shapes[j].skipped = 1; /* another shard's: its inputs, reference and baselines are that shard's */
      continue;
    }
    AT_TRY(at_store_problem(job->db, s->op_name, s->tag, s->shapes[j].m, s->shapes[j].n, s->shapes[j].k,
                            &sh->shapes[j].problem_id));
  }
  return AT_OK;
}

static void shared_init(shared *sh, const at_tune_job *job, at_tune_stats *st) {
  const at_enum *e = job->cands;
  size_t n = e->n ? e->n : 1;
  sh->job = job;
  sh->st = st;
  sh->t0 = at_now_s();
  pthread_mutex_init(&sh->mu, NULL);
  pthread_cond_init(&sh->fed, NULL);
  sh->ready = at_xcalloc(n, sizeof *sh->ready);
  sh->bounds = at_xcalloc(n + 1, sizeof *sh->bounds);
  sh->cand_id = at_xcalloc(n, sizeof *sh->cand_id);
  sh->keys = at_xcalloc(n, sizeof *sh->keys);
  sh->kernel = at_xcalloc(n, sizeof *sh->kernel);
  sh->kills = at_xcalloc(n, sizeof *sh->kills);
  sh->quarantined = at_xcalloc(n, 1);
  sh->twin = at_xcalloc(n, 1);
  sh->shapes = at_xcalloc(job->space->nshapes ? job->space->nshapes : 1, sizeof *sh->shapes);
}

static void shared_free(shared *sh) {
  for (size_t j = 0; j < sh->job->space->nshapes; j++) free(sh->shapes[j].ok);
  free(sh->shapes);
  free(sh->ready);
  free(sh->bounds);
  free(sh->cand_id);
  free(sh->keys);
  free(sh->kernel);
  free(sh->kills);
  free(sh->quarantined);
  free(sh->twin);
  free(sh->err);
  pthread_cond_destroy(&sh->fed);
  pthread_mutex_destroy(&sh->mu);
}

int at_tune_start(const at_tune_job *job, at_tune_stats *st, at_tune **out) {
  *out = NULL;
  memset(st, 0, sizeof *st);
  const at_space *s = job->space;
  const at_enum *e = job->cands;
  st->shapes = at_xcalloc(s->nshapes ? s->nshapes : 1, sizeof *st->shapes);
  st->nshapes = s->nshapes;
  st->ngpus = job->ndevices;
  for (size_t i = 0; i < s->nshapes; i++)
    st->shapes[i].winner = -1, st->shapes[i].shape = s->shapes[i], st->shapes[i].vendor_check_ratio = -1;
  snprintf(st->device_name, sizeof st->device_name, "%s", job->devices[0].name);

  at_tune *t = at_xcalloc(1, sizeof *t);
  shared *sh = &t->sh;
  shared_init(sh, job, st);
  deal_shapes(sh, job->ndevices);
  int rc = record_start(sh);
  if (rc) {
    shared_free(sh);
    free(t);
    return rc;
  }
  for (size_t i = 0; i < e->n; i++) sh->total_evals += pairs_of(sh, i);
  sh->bar = at_progress_start("tune", sh->total_evals);
  t->feed = (at_compile_feed){feed_outcome, feed_progress, &sh->mu, sh};
  t->threads = at_xcalloc((size_t)job->ndevices, sizeof *t->threads);
  for (int i = 0; i < job->ndevices; i++) {
    gpu_thread *g = &t->threads[i];
    g->sh = sh;
    g->index = i;
    g->dev = &job->devices[i];
    g->cur_shape = -1;
    g->last_time = at_xcalloc(e->n ? e->n : 1, sizeof *g->last_time);
    g->kernel_slot = at_xcalloc(e->n ? e->n : 1, sizeof *g->kernel_slot);
    forget_modules(g, e->n);
    if (pthread_create(&g->tid, NULL, gpu_main, g) != 0) {
      lock(sh);
      fail_shared(sh, AT_ERR_RUNTIME, "cannot start a thread for a GPU");
      unlock(sh);
      break;
    }
    t->nthreads++;
  }
  *out = t;
  return AT_OK;
}

const at_compile_feed *at_tune_feed(at_tune *t) { return &t->feed; }

int at_tune_finish(at_tune *t, int compile_rc) {
  shared *sh = &t->sh;
  const at_tune_job *job = sh->job;
  at_tune_stats *st = sh->st;
  lock(sh);
  if (compile_rc == AT_OK && sh->nfed == job->cands->n)
    sh->closed = 1;
  else
    sh->aborted = 1; /* stopped or failed: what was fed and not finished stays unfinished */
  pthread_cond_broadcast(&sh->fed);
  unlock(sh);
  for (int i = 0; i < t->nthreads; i++) pthread_join(t->threads[i].tid, NULL);
  for (int i = 0; i < job->ndevices; i++) {
    st->busy_s += t->threads[i].busy_s;
    st->starved_s += t->threads[i].starved_s;
    free(t->threads[i].last_time);
    free(t->threads[i].kernel_slot);
  }
  free(t->threads);
  char extra[96];
  snprintf(extra, sizeof extra, "%lld evaluated, %lld from the DB", (long long)st->evaluated, (long long)st->resumed);
  if (st->adopted)
    snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " (%lld of the same cubin)", (long long)st->adopted);
  at_progress_finish(sh->bar, extra);
  int rc = sh->rc;
  if (rc && compile_rc == AT_OK) at_fail(rc, "%s", sh->err ? sh->err : "the GPU phase failed");
  if (job->stop && *job->stop) st->interrupted = 1;
  st->wall_s = at_now_s() - sh->t0;
  shared_free(sh);
  free(t);
  return rc;
}

void at_tune_stats_free(at_tune_stats *st) {
  free(st->shapes);
  memset(st, 0, sizeof *st);
}

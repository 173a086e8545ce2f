/* tune.c: the GPU phase, parent side (see tune.h). One thread per GPU drives that GPU's worker
 * process; shapes are handed out to the threads one at a time. The DB, the statistics and the
 * progress bar are shared under one mutex. Nothing here calls CUDA. */
#include "tune.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "proto.h"
#include "util.h"
#include "workerproc.h"

const char *const AT_STATUS_NAMES[AT_ST_COUNT] = {"ok", "wrong", "fault", "timeout", "resources", "quarantined"};

int at_status_index(const char *name) {
  for (int i = 0; i < AT_ST_COUNT; i++)
    if (strcmp(AT_STATUS_NAMES[i], name) == 0) return i;
  return -1;
}

typedef struct shared {
  const at_tune_job *job;
  at_tune_stats *st;
  pthread_mutex_t mu;
  size_t next_shape;
  int *kills;         /* per candidate: workers it killed in this run */
  uint8_t *quarantined;
  at_progress *bar;
  int64_t done_evals, total_evals;
  int rc;             /* the first hard failure */
  char device_row_done;
  int64_t device_id;
} shared;

typedef struct gpu_thread {
  shared *sh;
  const at_device_info *dev;
  at_worker w;
  int shape_ready; /* the live worker holds the current shape's inputs */
  int sets;        /* input sets it rotates through */
  at_shape_req shape_req;
  double *last_time; /* per candidate: its time on the previous shape, to order the next */
} gpu_thread;

static void lock(shared *sh) { pthread_mutex_lock(&sh->mu); }
static void unlock(shared *sh) { pthread_mutex_unlock(&sh->mu); }

/* ---- worker lifecycle ------------------------------------------------------------------------- */

static int ensure_worker(gpu_thread *g) {
  if (at_worker_alive(&g->w)) return AT_OK;
  g->shape_ready = 0;
  AT_TRY(at_worker_start(g->dev->index, &g->w));
  if (at_debug()) fprintf(stderr, "autotune: debug: GPU %d: worker %d started\n", g->dev->index, (int)g->w.pid);
  return AT_OK;
}

static int ensure_shape(gpu_thread *g, at_shape_reply *rep) {
  AT_TRY(ensure_worker(g));
  if (g->shape_ready && !rep) return AT_OK;
  void *p;
  size_t len;
  int rc = at_worker_call(&g->w, AT_MSG_SHAPE, &g->shape_req, sizeof g->shape_req, NULL, 0, 300.0,
                          AT_MSG_SHAPE_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the worker %s while preparing inputs for M=%lld N=%lld K=%lld (%s)",
                   g->dev->index, rc == AT_PROTO_TIMEOUT ? "hung" : "died", (long long)g->shape_req.m,
                   (long long)g->shape_req.n, (long long)g->shape_req.k, g->w.exit_reason);
  AT_TRY(rc);
  at_shape_reply r;
  memcpy(&r, p, sizeof r);
  free(p);
  if (!r.ok) return at_fail(AT_ERR_RUNTIME, "GPU %d: preparing M=%lld N=%lld K=%lld: %s", g->dev->index,
                            (long long)g->shape_req.m, (long long)g->shape_req.n, (long long)g->shape_req.k, r.message);
  if (rep) *rep = r;
  g->sets = r.sets;
  g->shape_ready = 1;
  return AT_OK;
}

/* ---- one candidate ---------------------------------------------------------------------------- */

/* The request for one candidate, its cubin (malloc'd) included. */
static int build_eval(const at_tune_job *job, size_t ci, double cut_us, at_eval_req *req, void **cubin, size_t *size) {
  const at_cand *c = &job->cands->c[ci];
  const at_variant *v = &job->space->variants[c->variant];
  at_jit_result jr;
  AT_TRY(at_jit_compile(job->sources[c->variant], c->name_expr, &job->opts, job->cache_dir, &jr));
  if (!jr.ok) {
    at_jit_result_free(&jr);
    return at_fail(AT_ERR_RUNTIME, "%s: compiled earlier but fails to compile now", c->name_expr);
  }
  memset(req, 0, sizeof *req);
  req->candidate_id = (int64_t)ci;
  snprintf(req->family, sizeof req->family, "%s", v->family);
  snprintf(req->lowered_name, sizeof req->lowered_name, "%s", jr.lowered_name);
  if (v->nparams > AT_MAX_PARAMS) {
    at_jit_result_free(&jr);
    return at_fail(AT_ERR_INPUT, "variant %s has more than %d parameters", v->name, AT_MAX_PARAMS);
  }
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
  *cubin = jr.cubin;
  *size = jr.cubin_size;
  jr.cubin = NULL;
  at_jit_result_free(&jr);
  return AT_OK;
}

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

/* Writes one outcome of candidate ci on the thread's shape: the result row, the counters, the
 * worker it killed and a quarantine after two. replaces_ok: the candidate had an ok result on this
 * shape already (a failure during re-timing), whose count moves to the new status. */
static int record_outcome(gpu_thread *g, at_shape_outcome *o, size_t ci, const at_eval_reply *rep, int killed,
                          int replaces_ok) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  lock(sh);
  if (killed) {
    sh->st->replaced_workers++;
    if (++sh->kills[ci] >= 2) sh->quarantined[ci] = 1;
  }
  int quarantine_now = killed && sh->quarantined[ci];
  at_result_row row = {
      .candidate_id = job->compiled[ci].cand_id,
      .problem_id = o->problem_id,
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
      .sets = g->sets,
  };
  if (rep->samples > 0) fill_rates(job, sh->st, &o->shape, rep->time_us, &row);
  int rc = at_store_put_result(job->db, &row);
  if (rc == AT_OK && quarantine_now) rc = at_store_quarantine(job->db, job->compiled[ci].cand_id);
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

/* Evaluates candidate ci on the thread's current shape; writes its result. */
static int evaluate(gpu_thread *g, at_shape_outcome *o, size_t ci, double cut_us, double *time_out) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  at_eval_req req;
  void *cubin = NULL;
  size_t cubin_size = 0;
  *time_out = 0;
  AT_TRY(build_eval(job, ci, cut_us, &req, &cubin, &cubin_size));
  int rc = ensure_shape(g, NULL);
  if (rc) {
    free(cubin);
    return rc;
  }
  void *p = NULL;
  size_t len = 0;
  rc = at_worker_call(&g->w, AT_MSG_EVAL, &req, sizeof req, cubin, cubin_size, job->space->timing.timeout_s,
                      AT_MSG_EVAL_REPLY, &p, &len);
  free(cubin);

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
    snprintf(rep.status, sizeof rep.status, "%s", rc == AT_PROTO_TIMEOUT ? "timeout" : "fault");
    snprintf(rep.message, sizeof rep.message, "worker %s", g->w.exit_reason);
    rep.max_abs_err = -1;
    rep.check_ratio = -1;
    rep.first_bad = -1;
  } else {
    return rc;
  }
  rc = record_outcome(g, o, ci, &rep, killed, 0);
  if (rc == AT_OK && strcmp(rep.status, "ok") == 0) *time_out = rep.time_us;
  return rc;
}

/* ---- the leaders, side by side ---------------------------------------------------------------- */

typedef struct ranked {
  size_t ci;
  double us;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
  double x = ((const ranked *)a)->us, y = ((const ranked *)b)->us;
  return x < y ? -1 : x > y;
}

/* Re-times the leaders side by side and sorts ok[0..*nok) by the new times. A leader that fails
 * now (a kernel can pass its check and fault on a later launch) gets that status instead of ok and
 * leaves the ranking. When the worker dies without saying which leader killed it, each leader is
 * evaluated again on its own, which tells. */
static int retime(gpu_thread *g, at_shape_outcome *o, ranked *ok, size_t *nok) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  size_t top = (size_t)job->space->timing.retime_top;
  if (top > *nok) top = *nok;
  if (top == 0) return AT_OK;
  at_buf msg = {0};
  uint32_t count = (uint32_t)top;
  at_buf_append(&msg, &count, sizeof count);
  for (size_t i = 0; i < top; i++) {
    at_eval_req req;
    void *cubin;
    size_t size;
    int rc = build_eval(job, ok[i].ci, 0, &req, &cubin, &size);
    if (rc) {
      at_buf_free(&msg);
      return rc;
    }
    req.samples = job->space->timing.retime_samples;
    uint64_t sz = size;
    at_buf_append(&msg, &req, sizeof req);
    at_buf_append(&msg, &sz, sizeof sz);
    at_buf_append(&msg, cubin, size);
    free(cubin);
  }
  int rc = ensure_shape(g, NULL);
  void *p = NULL;
  size_t len = 0;
  if (rc == AT_OK)
    rc = at_worker_call(&g->w, AT_MSG_RETIME, msg.data, msg.len, NULL, 0, job->space->timing.timeout_s * (double)top,
                        AT_MSG_RETIME_REPLY, &p, &len);
  at_buf_free(&msg);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF) {
    for (size_t i = 0; i < top; i++) {
      double us = 0;
      lock(sh);
      o->counts[AT_ST_OK]--, sh->st->counts[AT_ST_OK]--, o->evaluated--, sh->st->evaluated--, sh->done_evals--;
      unlock(sh);
      AT_TRY(evaluate(g, o, ok[i].ci, 0, &us));
      ok[i].us = us > 0 ? us : INFINITY;
    }
  } else {
    AT_TRY(rc);
    uint32_t n;
    memcpy(&n, p, sizeof n);
    const at_eval_reply *reps = (const at_eval_reply *)((char *)p + sizeof n);
    int sticky = 0;
    for (uint32_t i = 0; i < n && i < top && rc == AT_OK; i++) {
      if (strcmp(reps[i].status, "ok") == 0) {
        ok[i].us = reps[i].time_us;
        lock(sh);
        rc = at_store_set_retime(job->db, job->compiled[ok[i].ci].cand_id, o->problem_id, sh->device_id, reps[i].time_us);
        unlock(sh);
      } else {
        at_eval_reply r = reps[i];
        char msg2[sizeof r.message];
        snprintf(msg2, sizeof msg2, "during side-by-side re-timing: %s", reps[i].message);
        memcpy(r.message, msg2, sizeof r.message);
        sticky |= r.sticky;
        rc = record_outcome(g, o, ok[i].ci, &r, r.sticky, 1);
        ok[i].us = INFINITY;
      }
    }
    free(p);
    if (sticky) at_worker_kill(&g->w); /* it exits after a sticky error; reap it */
    AT_TRY(rc);
  }
  /* The leaders in their new order; those that failed leave the ranking, the rest follows. */
  qsort(ok, top, sizeof *ok, cmp_ranked);
  size_t good = 0;
  while (good < top && !isinf(ok[good].us)) good++;
  memmove(ok + good, ok + top, sizeof *ok * (*nok - top));
  *nok -= top - good;
  return AT_OK;
}

/* ---- one shape -------------------------------------------------------------------------------- */

static int cmp_by_last(const void *a, const void *b, void *last) {
  const double *t = last;
  double x = t[*(const size_t *)a], y = t[*(const size_t *)b];
  if (x == y) return 0;
  if (x == 0) return 1; /* unknown last */
  if (y == 0) return -1;
  return x < y ? -1 : 1;
}

static int tune_shape(gpu_thread *g, size_t si) {
  shared *sh = g->sh;
  const at_tune_job *job = sh->job;
  const at_space *s = job->space;
  const at_enum *e = job->cands;
  at_shape_outcome *o = &sh->st->shapes[si];
  o->shape = s->shapes[si];
  o->winner = -1;

  lock(sh);
  int rc = at_store_problem(job->db, s->op_name, s->tag, o->shape.m, o->shape.n, o->shape.k, &o->problem_id);
  unlock(sh);
  AT_TRY(rc);

  /* What is left to do, and what earlier runs already did. */
  size_t *todo = at_xcalloc(e->n ? e->n : 1, sizeof *todo), ntodo = 0;
  ranked *ok = at_xcalloc(e->n ? e->n : 1, sizeof *ok);
  size_t nok = 0;
  double best = 0;
  lock(sh);
  for (size_t i = 0; i < e->n && rc == AT_OK; i++) {
    if (!job->compiled[i].usable || !e->shape_ok[i * e->nshapes + si]) continue;
    const char *status = "";
    double us = 0;
    if (!job->fresh) rc = at_store_get_result(job->db, job->compiled[i].cand_id, o->problem_id, sh->device_id, &status, &us);
    if (rc) break;
    if (status[0]) {
      int k = at_status_index(status);
      if (k >= 0) o->counts[k]++, sh->st->counts[k]++;
      o->resumed++;
      sh->st->resumed++;
      sh->done_evals++; /* counted as done, so that progress and its ETA stay true on a rerun */
      if (k == AT_ST_OK) {
        ok[nok++] = (ranked){i, us};
        if (best == 0 || us < best) best = us;
      }
      continue;
    }
    if (sh->quarantined[i]) {
      at_result_row row = {.candidate_id = job->compiled[i].cand_id, .problem_id = o->problem_id,
                           .device_id = sh->device_id, .run_id = job->run_id, .status = "quarantined",
                           .message = "not run: it killed two workers", .max_abs_err = -1, .first_bad = -1,
                           .check_ratio = -1,
                           .seed = (int64_t)s->seed};
      rc = at_store_put_result(job->db, &row);
      o->counts[AT_ST_QUARANTINED]++, sh->st->counts[AT_ST_QUARANTINED]++;
      sh->done_evals++;
      continue;
    }
    todo[ntodo++] = i;
  }
  unlock(sh);
  if (rc) goto out;

  /* Finished earlier, winner decided: nothing to redo, not even the inputs. */
  if (ntodo == 0 && !job->fresh) {
    int64_t wc = -1;
    double wt = 0;
    lock(sh);
    rc = at_store_get_winner(job->db, o->problem_id, sh->device_id, &wc, &wt);
    if (rc == AT_OK && wc >= 0) {
      for (size_t i = 0; i < e->n; i++)
        if (job->compiled[i].cand_id == wc) o->winner = (int64_t)i;
      if (o->winner >= 0) {
        o->winner_us = wt;
        at_result_row row = {0};
        fill_rates(job, sh->st, &o->shape, wt, &row);
        o->tflops = row.tflops;
        o->roofline_pct = row.roofline_pct;
        rc = at_store_get_baseline(job->db, o->problem_id, sh->device_id, "cublas_fp32_reference", &o->ref_us);
        if (rc == AT_OK) rc = at_store_get_baseline(job->db, o->problem_id, sh->device_id, "cublaslt_blockscale_fp8", &o->vendor_us);
        o->done = 1;
      }
    }
    unlock(sh);
    if (rc || o->done) goto out;
  }
  qsort_r(todo, ntodo, sizeof *todo, cmp_by_last, g->last_time);

  /* Inputs, reference and baselines on the worker. */
  memset(&g->shape_req, 0, sizeof g->shape_req);
  snprintf(g->shape_req.op, sizeof g->shape_req.op, "%s", s->op_name);
  g->shape_req.m = o->shape.m;
  g->shape_req.n = o->shape.n;
  g->shape_req.k = o->shape.k;
  g->shape_req.seed = s->seed;
  g->shape_req.l2_multiple = s->timing.l2_multiple;
  g->shape_req.warmup = s->timing.warmup;
  g->shape_req.samples = s->timing.samples;
  g->shape_req.baselines = job->baselines;
  g->shape_req.atol = s->atol;
  g->shape_req.rtol = s->rtol;
  g->shape_req.gamma = s->gamma;
  g->shape_ready = 0;
  at_shape_reply rep;
  double t0 = at_now_s();
  if ((rc = ensure_shape(g, &rep))) goto out;
  o->ref_us = rep.ref_us;
  o->vendor_us = rep.vendor_us;
  o->vendor_check_ratio = rep.vendor_check_ratio;
  if (rep.message[0]) {
    char note[700];
    snprintf(note, sizeof note, "M=%lld N=%lld K=%lld: %s", (long long)o->shape.m, (long long)o->shape.n,
             (long long)o->shape.k, rep.message);
    lock(sh);
    at_progress_note(sh->bar, note);
    unlock(sh);
  }
  snprintf(o->vendor_name, sizeof o->vendor_name, "%s", rep.vendor_name);
  lock(sh);
  sh->st->setup_s += at_now_s() - t0;
  if (rep.ref_us > 0) rc = at_store_put_baseline(job->db, o->problem_id, sh->device_id, job->run_id, "cublas_fp32_reference", rep.ref_us);
  if (rc == AT_OK && rep.vendor_us > 0)
    rc = at_store_put_baseline_checked(job->db, o->problem_id, sh->device_id, job->run_id, rep.vendor_name, rep.vendor_us,
                                       rep.vendor_check_ratio);
  unlock(sh);
  if (rc) goto out;

  t0 = at_now_s();
  int stopped = 0; /* this shape was left unfinished */
  for (size_t i = 0; i < ntodo && rc == AT_OK; i++) {
    if (job->stop && *job->stop) {
      stopped = 1;
      lock(sh);
      sh->st->interrupted = 1;
      unlock(sh);
      break;
    }
    double us = 0;
    double cut = best > 0 ? best * s->timing.cut_factor : 0;
    rc = evaluate(g, o, todo[i], cut, &us);
    if (rc) break;
    if (us > 0) {
      ok[nok++] = (ranked){todo[i], us};
      if (best == 0 || us < best) best = us;
    }
    lock(sh);
    char extra[160];
    snprintf(extra, sizeof extra, "M=%lld N=%lld K=%lld best %.2f us", (long long)o->shape.m, (long long)o->shape.n,
             (long long)o->shape.k, best);
    at_progress_update(sh->bar, sh->done_evals, extra);
    unlock(sh);
  }
  lock(sh);
  sh->st->eval_s += at_now_s() - t0;
  unlock(sh);
  if (rc || stopped) goto out;

  for (size_t i = 0; i < e->n; i++) g->last_time[i] = 0;
  for (size_t i = 0; i < nok; i++) g->last_time[ok[i].ci] = ok[i].us;

  /* The leaders, side by side, decide. */
  qsort(ok, nok, sizeof *ok, cmp_ranked);
  t0 = at_now_s();
  if ((rc = retime(g, o, ok, &nok))) goto out;
  lock(sh);
  sh->st->retime_s += at_now_s() - t0;
  if (nok) {
    o->winner = (int64_t)ok[0].ci;
    o->winner_us = ok[0].us;
    at_result_row row = {0};
    fill_rates(job, sh->st, &o->shape, o->winner_us, &row);
    o->tflops = row.tflops;
    o->roofline_pct = row.roofline_pct;
    rc = at_store_put_winner(job->db, o->problem_id, sh->device_id, job->compiled[ok[0].ci].cand_id, o->winner_us,
                             job->run_id);
  }
  o->done = 1;
  unlock(sh);
out:
  free(todo);
  free(ok);
  return rc;
}

/* ---- threads ---------------------------------------------------------------------------------- */

static int measure_peaks(gpu_thread *g) {
  shared *sh = g->sh;
  AT_TRY(ensure_worker(g));
  void *p;
  size_t len;
  int rc = at_worker_call(&g->w, AT_MSG_PEAK, NULL, 0, NULL, 0, 120.0, AT_MSG_PEAK_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the worker died measuring peak rates (%s)", g->dev->index, g->w.exit_reason);
  AT_TRY(rc);
  at_peak_reply r;
  memcpy(&r, p, sizeof r);
  free(p);
  lock(sh);
  if (sh->st->peak_tflops == 0) {
    sh->st->peak_tflops = r.fp8_tflops;
    sh->st->peak_gbs = r.copy_gbs;
    rc = at_store_run_device(sh->job->db, sh->job->run_id, sh->device_id, r.fp8_tflops, r.copy_gbs);
    if (r.note[0]) at_progress_note(NULL, r.note);
  }
  unlock(sh);
  return rc;
}

static void *gpu_main(void *arg) {
  gpu_thread *g = arg;
  shared *sh = g->sh;
  int rc = measure_peaks(g);
  for (;;) {
    if (rc) break;
    lock(sh);
    size_t si = sh->next_shape++;
    int stop = sh->rc != AT_OK || (sh->job->stop && *sh->job->stop);
    unlock(sh);
    if (stop || si >= sh->job->space->nshapes) break;
    /* Another shard's shape: its inputs, reference and baselines are that shard's to measure. */
    if (sh->job->shapes_on && !sh->job->shapes_on[si]) {
      sh->st->shapes[si].skipped = 1; /* this thread's alone: si was handed out once */
      continue;
    }
    rc = tune_shape(g, si);
  }
  at_worker_stop(&g->w);
  if (!rc) return NULL;
  lock(sh);
  if (sh->rc == AT_OK) sh->rc = rc;
  unlock(sh);
  return at_xstrdup(at_errmsg()); /* the message lives in this thread's error slot */
}

int at_tune_gpu(const at_tune_job *job, at_tune_stats *st) {
  memset(st, 0, sizeof *st);
  double t0 = at_now_s();
  const at_space *s = job->space;
  const at_enum *e = job->cands;
  st->shapes = at_xcalloc(s->nshapes, sizeof *st->shapes);
  st->nshapes = s->nshapes;
  for (size_t i = 0; i < s->nshapes; i++)
    st->shapes[i].winner = -1, st->shapes[i].shape = s->shapes[i], st->shapes[i].vendor_check_ratio = -1;
  snprintf(st->device_name, sizeof st->device_name, "%s", job->devices[0].name);

  shared sh = {.job = job, .st = st};
  pthread_mutex_init(&sh.mu, NULL);
  sh.kills = at_xcalloc(e->n ? e->n : 1, sizeof *sh.kills);
  sh.quarantined = at_xcalloc(e->n ? e->n : 1, 1);

  char arch[16];
  at_arch_for_cc(job->devices[0].cc, arch);
  at_device_row dr = {job->devices[0].name, arch, job->devices[0].uuid, NULL, job->devices[0].cc,
                      job->devices[0].sm_count, job->devices[0].l2_bytes, job->devices[0].smem_optin,
                      job->devices[0].mem_bytes};
  char driver[32];
  snprintf(driver, sizeof driver, "%d.%d", job->devices[0].driver_version / 1000, job->devices[0].driver_version % 1000 / 10);
  dr.driver = driver;
  int rc = at_store_device(job->db, &dr, &sh.device_id);
  if (rc) goto out;

  /* Quarantines from earlier runs hold. */
  for (size_t i = 0; i < e->n; i++) {
    if (!job->compiled[i].usable) continue;
    int q = 0;
    if ((rc = at_store_candidate_quarantined(job->db, job->compiled[i].cand_id, &q))) goto out;
    if (q) sh.quarantined[i] = 1, sh.kills[i] = 2;
    for (size_t j = 0; j < s->nshapes; j++) sh.total_evals += e->shape_ok[i * e->nshapes + j];
  }

  sh.bar = at_progress_start("tune", sh.total_evals);
  gpu_thread *threads = at_xcalloc((size_t)job->ndevices, sizeof *threads);
  pthread_t *tids = at_xcalloc((size_t)job->ndevices, sizeof *tids);
  for (int i = 0; i < job->ndevices; i++) {
    threads[i].sh = &sh;
    threads[i].dev = &job->devices[i];
    threads[i].last_time = at_xcalloc(e->n ? e->n : 1, sizeof(double));
    pthread_create(&tids[i], NULL, gpu_main, &threads[i]);
  }
  char *first_err = NULL;
  for (int i = 0; i < job->ndevices; i++) {
    void *ret = NULL;
    pthread_join(tids[i], &ret);
    if (ret && !first_err)
      first_err = ret;
    else
      free(ret);
    free(threads[i].last_time);
  }
  free(threads);
  free(tids);
  char extra[96];
  snprintf(extra, sizeof extra, "%lld evaluated, %lld from the DB", (long long)st->evaluated, (long long)st->resumed);
  at_progress_finish(sh.bar, extra);
  rc = sh.rc;
  if (rc && first_err) at_fail(rc, "%s", first_err);
  free(first_err);
  if (job->stop && *job->stop) st->interrupted = 1;
out:
  free(sh.kills);
  free(sh.quarantined);
  pthread_mutex_destroy(&sh.mu);
  st->wall_s = at_now_s() - t0;
  return rc;
}

void at_tune_stats_free(at_tune_stats *st) {
  free(st->shapes);
  memset(st, 0, sizeof *st);
}

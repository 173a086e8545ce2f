/* evaluate.c: see evaluate.h.
 *
 * Status rules: a launch the driver refuses (too much shared memory, too many registers or
 * threads, a cubin it cannot load) is `resources` and the worker carries on; any error that
 * leaves the context unusable is `fault` with sticky set, and the worker exits after replying;
 * an output that fails the check is `wrong`. A kernel that never ends is the parent's to catch.
 *
 * The module table: a slot holds one kernel's module from the request that loads it until a later
 * load into the same slot; every candidate of that kernel (they differ only in launch parameters)
 * uses it. A load the driver refuses is remembered in its slot, so the kernel's other candidates and
 * shapes get the same `resources` answer without loading again. A module holds no candidate's
 * parameters: each evaluation launches with its request's own (family, parameters), and what depends
 * on them or on the shape (the launch geometry, its shared memory and occupancy, the workspace, the
 * kernel's arguments) is worked out per evaluation. */
#include "evaluate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util.h"
#include "bench.h"
#include "check.h"
#include "launch.h"
#include "scrub.h"

enum { MOD_EMPTY, MOD_LOADED, MOD_FAILED };

struct at_module {
  int state;
  char key[65]; /* the kernel's compile key */
  CUmodule mod;
  CUfunction fn;
  char status[16];  /* MOD_FAILED: the load's outcome, given to every evaluation of the slot */
  char message[512];
};

/* A candidate made ready for the current shape: its kernel's module and its own parameters. */
typedef struct prepared {
  const at_module *m;
  const char *family;                   /* the request's */
  const char *name_ptrs[AT_MAX_PARAMS]; /* into the request's parameter names */
  at_params params;                     /* the request's values, through name_ptrs */
  at_launch launch;
  int occupancy;
} prepared;

typedef struct launch_ctx {
  at_eval_ctx *c;
  const prepared *p;
} launch_ctx;

static void set_status(at_eval_reply *rep, const char *status, int sticky, const char *fmt, const char *detail) {
  snprintf(rep->status, sizeof rep->status, "%s", status);
  rep->sticky = sticky;
  snprintf(rep->message, sizeof rep->message, fmt, detail);
}

/* A failed driver call, classified. */
static void api_failure(at_eval_reply *rep, CUresult r, const char *what) {
  char detail[400];
  snprintf(detail, sizeof detail, "%s: %s (%s)", what, at_cu_error_name(r), at_cu_error_text(r));
  if (at_cu_is_sticky(r))
    set_status(rep, "fault", 1, "%s", detail);
  else
    set_status(rep, "resources", 0, "%s", detail);
}

static void reply_init(at_eval_reply *rep, int64_t candidate_id) {
  memset(rep, 0, sizeof *rep);
  rep->candidate_id = candidate_id;
  rep->max_abs_err = -1;
  rep->check_ratio = -1;
  rep->first_bad = -1;
}

static int enqueue(void *p, int set, CUstream s) {
  launch_ctx *lc = p;
  const prepared *pr = lc->p;
  at_kparams kp;
  CUdeviceptr ws = pr->launch.ws_counters ? lc->c->workspace : 0;
  AT_TRY(lc->c->gop->kernel_params(lc->c->state, set, pr->family, &pr->params, ws, pr->launch.ws_counters, &kp));
  CU_CHECK(at_launch_kernel(pr->m->fn, &pr->launch, s, &kp, lc->c->pdl));
  return AT_OK;
}

/* A zeroed workspace for launches that need `counters` counters and `partials` bytes after them;
 * every launch the worker makes with it uses exactly those counters, so its layout matches. */
static int ensure_workspace(at_eval_ctx *c, int64_t counters, size_t partials) {
  size_t bytes = counters ? at_ws_bytes(counters, partials) : 0;
  if (bytes > c->workspace_bytes) {
    at_gpu_free(&c->workspace);
    c->workspace_bytes = 0;
    AT_TRY(at_gpu_alloc(&c->workspace, bytes));
    c->workspace_bytes = bytes;
  }
  if (bytes) CU_CHECK(at_cu->MemsetD8Async(c->workspace, 0, bytes, c->g->stream));
  return AT_OK;
}

/* ---- the module table ------------------------------------------------------------------------- */

static void module_unload(at_module *m) {
  if (m->mod) at_cu->ModuleUnload(m->mod);
  m->mod = NULL;
  m->fn = NULL;
  m->state = MOD_EMPTY;
}

/* Loads req's cubin into m, replacing what m held. A refusal is kept in m (MOD_FAILED) and put in
 * rep; a sticky one also ends the worker after its reply. */
static void module_load(at_eval_ctx *c, at_module *m, const at_eval_req *req, const void *cubin, at_eval_reply *rep) {
  module_unload(m);
  snprintf(m->key, sizeof m->key, "%s", req->key);
  double t0 = at_now_s();
  CUresult r = at_cu->ModuleLoadData(&m->mod, cubin);
  const char *what = "cuModuleLoadData";
  if (r == CUDA_SUCCESS) {
    r = at_cu->ModuleGetFunction(&m->fn, m->mod, req->lowered_name);
    what = "loading the kernel";
  }
  c->prof.load_s += at_now_s() - t0;
  c->prof.loads++;
  if (r == CUDA_SUCCESS) {
    m->state = MOD_LOADED;
    return;
  }
  api_failure(rep, r, what);
  if (m->mod && !rep->sticky) at_cu->ModuleUnload(m->mod);
  m->mod = NULL;
  m->state = MOD_FAILED;
  snprintf(m->status, sizeof m->status, "%s", rep->status);
  snprintf(m->message, sizeof m->message, "%s", rep->message);
}

/* The module of req's slot, loaded first when req says so. *out is NULL when rep already says
 * what happened (a refused load). */
static int module_for(at_eval_ctx *c, const at_eval_req *req, const void *cubin, size_t size, at_module **out,
                      at_eval_reply *rep) {
  *out = NULL;
  if (req->slot < 0 || req->slot >= AT_MODULE_SLOTS)
    return at_fail(AT_ERR_RUNTIME, "module slot %d is out of range (0 to %d)", (int)req->slot, AT_MODULE_SLOTS - 1);
  if (!c->modules) c->modules = at_xcalloc(AT_MODULE_SLOTS, sizeof *c->modules);
  at_module *m = &c->modules[req->slot];
  if (req->load) {
    if (!cubin || size == 0) return at_fail(AT_ERR_RUNTIME, "a load into module slot %d without a cubin", (int)req->slot);
    module_load(c, m, req, cubin, rep);
    if (m->state != MOD_LOADED) return AT_OK;
  }
  if (m->state == MOD_EMPTY || strcmp(m->key, req->key) != 0)
    return at_fail(AT_ERR_RUNTIME, "module slot %d does not hold kernel %.16s (the parent's table is wrong)",
                   (int)req->slot, req->key);
  if (m->state == MOD_FAILED) {
    snprintf(rep->status, sizeof rep->status, "%s", m->status);
    snprintf(rep->message, sizeof rep->message, "%s", m->message);
    return AT_OK;
  }
  *out = m;
  return AT_OK;
}

/* The launch of req's candidate (module m) on the current shape, its shared memory allowed and its
 * occupancy known. p keeps pointers into req, which must outlive it. Returns 1 when it can run;
 * otherwise rep says why. */
static int prepare(at_eval_ctx *c, const at_module *m, const at_eval_req *req, prepared *p, at_eval_reply *rep) {
  memset(p, 0, sizeof *p);
  p->m = m;
  p->family = req->family;
  int np = req->nparams < 0 ? 0 : req->nparams > AT_MAX_PARAMS ? AT_MAX_PARAMS : req->nparams;
  for (int i = 0; i < np; i++) p->name_ptrs[i] = req->param_names[i];
  p->params = (at_params){p->name_ptrs, req->param_values, (size_t)np};
  if (c->op->launch(p->family, &p->params, &c->shape, c->g->info.sm_count, &p->launch)) {
    set_status(rep, "resources", 0, "no launch for this shape: %s", at_errmsg());
    return 0;
  }
  CUresult r = CUDA_SUCCESS;
  if (p->launch.smem_bytes > 48 * 1024)
    r = at_cu->FuncSetAttribute(m->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)p->launch.smem_bytes);
  if (r == CUDA_SUCCESS) {
    int threads = (int)(p->launch.block[0] * p->launch.block[1] * p->launch.block[2]);
    r = at_cu->OccupancyMaxActiveBlocksPerMultiprocessor(&p->occupancy, m->fn, threads, p->launch.smem_bytes);
  }
  if (r != CUDA_SUCCESS) {
    api_failure(rep, r, "loading the kernel");
    return 0;
  }
  if (p->occupancy == 0) {
    set_status(rep, "resources", 0, "%s", "no block fits on an SM (occupancy 0)");
    return 0;
  }
  return 1;
}

/* ---- one candidate on the current shape ------------------------------------------------------- */

/* Poisons set 0's output, runs once, checks. Returns 1 when the output passed. */
static int run_and_check(at_eval_ctx *c, const at_eval_req *req, const prepared *p, at_eval_reply *rep) {
  CUdeviceptr out;
  size_t count;
  c->gop->output(c->state, 0, &out, &count);
  launch_ctx lc = {c, p};
  double t0 = at_now_s();
  int poisoned = at_poison_bf16(c->g, out, count) == AT_OK;
  double t1 = at_now_s();
  c->prof.poison_s += t1 - t0;
  if (!poisoned) return api_failure(rep, (CUresult)at_api_code(), "poison"), 0;
  if (enqueue(&lc, 0, c->g->stream)) return api_failure(rep, (CUresult)at_api_code(), "cuLaunchKernel"), 0;
  CUresult r = at_cu->StreamSynchronize(c->g->stream);
  double t2 = at_now_s();
  c->prof.run_s += t2 - t1;
  if (r != CUDA_SUCCESS) return api_failure(rep, r, "running the kernel"), 0;
  at_check_result chk;
  const at_check_bound bound = {req->atol, req->rtol, req->gamma};
  CUdeviceptr absref = c->gop->reference_abs ? c->gop->reference_abs(c->state) : 0;
  int rc = at_check_bf16(c->g, out, c->gop->reference(c->state), absref, count, &bound, &chk);
  c->prof.check_s += at_now_s() - t2;
  c->prof.checks++;
  if (rc) {
    set_status(rep, "fault", 1, "the check itself failed: %s", at_errmsg());
    return 0;
  }
  rep->max_abs_err = chk.max_err;
  if (chk.worst_ratio > rep->check_ratio) rep->check_ratio = chk.worst_ratio; /* the worse of the two checks */
  rep->bad_count = chk.bad;
  rep->first_bad = chk.first_bad;
  if (chk.bad) {
    char detail[300];
    at_check_describe(&chk, count, detail, sizeof detail);
    set_status(rep, "wrong", 0, "%s", detail);
    return 0;
  }
  return 1;
}

/* Warm-up and samples of a checked candidate, with the early cut; rep gets the times. */
static void time_candidate(at_eval_ctx *c, const at_eval_req *req, const prepared *p, at_eval_reply *rep) {
  launch_ctx lc = {c, p};
  at_bench_cfg cfg = {c->sets, req->warmup, req->samples, req->cut_after, req->cut_us};
  at_bench_result b;
  memset(&b, 0, sizeof b);
  at_timed *t = NULL;
  double t0 = at_now_s();
  int rc = at_timed_create(c->g, enqueue, &lc, c->sets, &t);
  double t1 = at_now_s();
  c->prof.graph_s += t1 - t0;
  c->prof.graphs++;
  if (rc == AT_OK) rc = at_bench_timed(t, &cfg, &b);
  CUresult r = at_cu->StreamSynchronize(c->g->stream);
  c->prof.timing_s += at_now_s() - t1;
  c->prof.replay_s += b.replay_us * 1e-6;
  c->prof.samples += b.samples;
  at_timed_destroy(t);
  if (rc) {
    api_failure(rep, r != CUDA_SUCCESS ? r : (CUresult)at_api_code(), "timing");
    if (!rep->sticky && r == CUDA_SUCCESS) snprintf(rep->message, sizeof rep->message, "timing failed: %s", at_errmsg());
    return;
  }
  if (r != CUDA_SUCCESS) {
    api_failure(rep, r, "timing");
    return;
  }
  rep->time_us = b.median_us;
  rep->time_min_us = b.min_us;
  rep->time_max_us = b.max_us;
  rep->samples = b.samples;
  rep->cut = b.cut;
}

int at_evaluate(at_eval_ctx *c, const at_eval_req *req, const void *cubin, size_t cubin_size, at_eval_reply *rep) {
  reply_init(rep, req->candidate_id);
  c->prof.evals++;
  at_module *m;
  AT_TRY(module_for(c, req, cubin, cubin_size, &m, rep));
  if (!m) return AT_OK;
  double t0 = at_now_s();
  prepared p;
  int ready = prepare(c, m, req, &p, rep);
  if (ready) {
    rep->occupancy = p.occupancy;
    if (ensure_workspace(c, p.launch.ws_counters, p.launch.ws_partial_bytes)) {
      set_status(rep, "resources", 0, "workspace: %s", at_errmsg());
      ready = 0;
    }
  }
  c->prof.prepare_s += at_now_s() - t0;
  if (!ready) return AT_OK;
  /* Twice: the second run finds the workspace as the first one left it. */
  if (!run_and_check(c, req, &p, rep) || !run_and_check(c, req, &p, rep)) return AT_OK;
  set_status(rep, "ok", 0, "%s", "");
  if (!req->check_only) time_candidate(c, req, &p, rep);
  return AT_OK;
}

/* ---- the leaders, side by side ---------------------------------------------------------------- */

/* One sample of leader i; on failure, records why on reps[i] and drops the leader. Returns 0 when
 * the context is dead (a sticky error: stop everything, reply, exit). */
static int retime_sample(const at_eval_ctx *c, int scrub, at_timed **t, int i, double *us, at_eval_reply *reps) {
  if ((!scrub || at_l2_scrub(c->g) == AT_OK) && at_timed_sample(t[i], us) == AT_OK) return 1;
  CUresult r = (CUresult)at_api_code();
  api_failure(&reps[i], r, "side-by-side re-timing");
  at_timed_destroy(t[i]);
  t[i] = NULL;
  return !reps[i].sticky;
}

/* Each leader's module and launch for the current shape; a leader that cannot run gets its status
 * now. Returns AT_OK or a protocol error; *alive = 0 when the context died. */
static int retime_prepare(at_eval_ctx *c, int n, const at_eval_req *reqs, const void *const *cubins,
                          const size_t *sizes, prepared *p, int *usable, at_eval_reply *reps, int *alive) {
  for (int i = 0; i < n && *alive; i++) {
    at_module *m;
    AT_TRY(module_for(c, &reqs[i], cubins[i], sizes[i], &m, &reps[i]));
    if (m && prepare(c, m, &reqs[i], &p[i], &reps[i]))
      usable[i] = 1;
    else
      *alive = !reps[i].sticky;
  }
  return AT_OK;
}

int at_retime(at_eval_ctx *c, int n, const at_eval_req *reqs, const void *const *cubins, const size_t *sizes,
              at_eval_reply *reps, double *vendor_us) {
  *vendor_us = 0;
  double t0 = at_now_s(), load0 = c->prof.load_s;
  prepared *p = at_xcalloc((size_t)n, sizeof *p);
  int *usable = at_xcalloc((size_t)n, sizeof *usable);
  at_timed **t = at_xcalloc((size_t)n, sizeof *t);
  launch_ctx *lc = at_xcalloc((size_t)n, sizeof *lc);
  int samples = reqs[0].samples;
  double *v = at_xcalloc((size_t)(n * samples), sizeof *v);
  for (int i = 0; i < n; i++) reply_init(&reps[i], reqs[i].candidate_id);
  int alive = 1;
  int rc = retime_prepare(c, n, reqs, cubins, sizes, p, usable, reps, &alive);
  /* One workspace serves every leader: the most counters any needs, and the most partial bytes;
   * each leader is launched with that counter count, so the layout is the same for all. */
  int64_t counters = 0;
  size_t partials = 0;
  for (int i = 0; i < n; i++) {
    if (!usable[i]) continue;
    if (p[i].launch.ws_counters > counters) counters = p[i].launch.ws_counters;
    if (p[i].launch.ws_partial_bytes > partials) partials = p[i].launch.ws_partial_bytes;
  }
  for (int i = 0; i < n; i++)
    if (p[i].launch.ws_counters) p[i].launch.ws_counters = counters;
  if (rc == AT_OK && alive && ensure_workspace(c, counters, partials) != AT_OK) {
    CUresult r = (CUresult)at_api_code();
    for (int i = 0; i < n; i++)
      if (usable[i]) api_failure(&reps[i], r, "workspace"), usable[i] = 0, alive = !reps[i].sticky;
  }
  for (int i = 0; i < n && alive && rc == AT_OK; i++) {
    if (!usable[i]) continue;
    lc[i] = (launch_ctx){c, &p[i]};
    if (at_timed_create(c->g, enqueue, &lc[i], c->sets, &t[i])) set_status(&reps[i], "resources", 0, "%s", at_errmsg());
  }
  /* The vendor's kernel, when the shape has it ready, as one more turn of the round-robin: the
   * leaders' times and the vendor's then come from the same stretch of clocks and temperatures,
   * which on a long run differ from those of the shape's start, when its baseline was first timed
   * (at M = 4096 the re-timed leaders ran up to 20% slower than in their own evaluation: H100,
   * docs/perf.md, "Side by side with the vendor"). A vendor sample that fails drops the vendor. */
  at_timed *tv = NULL;
  double *vv = at_xcalloc((size_t)samples, sizeof *vv);
  if (c->vendor && alive && rc == AT_OK && at_timed_create(c->g, c->gop->vendor_enqueue, c->state, c->sets, &tv))
    tv = NULL;
  /* With two kernels or more in turn, each sample follows an L2 scrub (scrub.h), as in compare.
   * The first is made here: a scrub that cannot be set up is the worker's failure, not a leader's. */
  int units = tv != NULL;
  for (int i = 0; i < n; i++) units += t[i] != NULL;
  const int scrub = units > 1;
  if (scrub && alive && rc == AT_OK) rc = at_l2_scrub(c->g);
  /* Round-robin: every leader sees the same clocks and temperatures, sample by sample. A leader
   * that fails is dropped with its status; one that kills the context ends the re-timing. */
  double dummy;
  for (int i = 0; i < n && alive && rc == AT_OK; i++)
    if (t[i]) alive = retime_sample(c, scrub, t, i, &dummy, reps);
  if (tv && alive && ((scrub && at_l2_scrub(c->g)) || at_timed_sample(tv, &dummy))) at_timed_destroy(tv), tv = NULL;
  for (int s = 0; s < samples && alive && rc == AT_OK; s++) {
    for (int i = 0; i < n && alive; i++)
      if (t[i]) alive = retime_sample(c, scrub, t, i, &v[i * samples + s], reps);
    if (tv && alive && ((scrub && at_l2_scrub(c->g)) || at_timed_sample(tv, &vv[s]))) at_timed_destroy(tv), tv = NULL;
  }
  if (tv && alive) *vendor_us = at_median(vv, samples), c->prof.vendor_retimes++;
  if (tv && alive) at_timed_destroy(tv);
  free(vv);
  for (int i = 0; i < n; i++) {
    if (alive && rc == AT_OK && t[i]) {
      snprintf(reps[i].status, sizeof reps[i].status, "ok");
      reps[i].samples = samples;
      reps[i].time_us = at_median(&v[i * samples], samples);
      reps[i].time_min_us = v[i * samples];
      reps[i].time_max_us = v[i * samples + samples - 1];
    }
    if (alive) at_timed_destroy(t[i]);
  }
  free(p);
  free(usable);
  free(t);
  free(lc);
  free(v);
  c->prof.retime_s += at_now_s() - t0 - (c->prof.load_s - load0); /* its loads are counted as loads */
  c->prof.retimes++;
  return rc; /* every leader's status is in reps; the caller exits if one is sticky */
}

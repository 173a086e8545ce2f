/* evaluate.c: see evaluate.h.
 *
 * Status rules: a launch the driver refuses (too much shared memory, too many registers or
 * threads, a cubin it cannot load) is `resources` and the worker carries on; any error that
 * leaves the context unusable is `fault` with sticky set, and the worker exits after replying;
 * an output that fails the check is `wrong`. A kernel that never ends is the parent's to catch. */
#include "evaluate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util.h"
#include "bench.h"
#include "check.h"
#include "launch.h"

typedef struct loaded {
  CUmodule mod;
  CUfunction fn;
  at_launch launch;
  int occupancy;
  const char *family;
  const char *names[AT_MAX_PARAMS];
  at_params params; /* the request's, through names[] */
} loaded;

typedef struct launch_ctx {
  at_eval_ctx *c;
  const loaded *l;
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

static int enqueue(void *p, int set, CUstream s) {
  launch_ctx *lc = p;
  const loaded *l = lc->l;
  at_kparams kp;
  CUdeviceptr ws = l->launch.ws_counters ? lc->c->workspace : 0;
  AT_TRY(lc->c->gop->kernel_params(lc->c->state, set, l->family, &l->params, ws, l->launch.ws_counters, &kp));
  CU_CHECK(at_launch_kernel(l->fn, &l->launch, s, &kp));
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

/* Loads the cubin and works out the launch; on failure rep says why. Returns 1 when usable. */
static int load(at_eval_ctx *c, const at_eval_req *req, const void *cubin, loaded *l, at_eval_reply *rep) {
  memset(l, 0, sizeof *l);
  l->family = req->family;
  for (int i = 0; i < req->nparams; i++) l->names[i] = req->param_names[i];
  l->params = (at_params){l->names, req->param_values, (size_t)req->nparams};
  if (c->op->launch(req->family, &l->params, &c->shape, c->g->info.sm_count, &l->launch)) {
    set_status(rep, "resources", 0, "no launch for this shape: %s", at_errmsg());
    return 0;
  }
  CUresult r = at_cu->ModuleLoadData(&l->mod, cubin);
  if (r != CUDA_SUCCESS) return api_failure(rep, r, "cuModuleLoadData"), 0;
  r = at_cu->ModuleGetFunction(&l->fn, l->mod, req->lowered_name);
  if (r == CUDA_SUCCESS && l->launch.smem_bytes > 48 * 1024)
    r = at_cu->FuncSetAttribute(l->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)l->launch.smem_bytes);
  if (r == CUDA_SUCCESS) {
    int threads = (int)(l->launch.block[0] * l->launch.block[1] * l->launch.block[2]);
    r = at_cu->OccupancyMaxActiveBlocksPerMultiprocessor(&l->occupancy, l->fn, threads, l->launch.smem_bytes);
  }
  if (r != CUDA_SUCCESS) {
    api_failure(rep, r, "loading the kernel");
    at_cu->ModuleUnload(l->mod);
    l->mod = NULL;
    return 0;
  }
  if (l->occupancy == 0) {
    set_status(rep, "resources", 0, "%s", "no block fits on an SM (occupancy 0)");
    at_cu->ModuleUnload(l->mod);
    l->mod = NULL;
    return 0;
  }
  return 1;
}

/* Poisons set 0's output, runs once, checks. Returns 1 when the output passed. */
static int run_and_check(at_eval_ctx *c, const at_eval_req *req, const loaded *l, at_eval_reply *rep) {
  CUdeviceptr out;
  size_t count;
  c->gop->output(c->state, 0, &out, &count);
  launch_ctx lc = {c, l};
  if (at_poison_bf16(c->g, out, count)) return api_failure(rep, (CUresult)at_api_code(), "poison"), 0;
  if (enqueue(&lc, 0, c->g->stream)) return api_failure(rep, (CUresult)at_api_code(), "cuLaunchKernel"), 0;
  CUresult r = at_cu->StreamSynchronize(c->g->stream);
  if (r != CUDA_SUCCESS) return api_failure(rep, r, "running the kernel"), 0;
  at_check_result chk;
  const at_check_bound bound = {req->atol, req->rtol, req->gamma};
  CUdeviceptr absref = c->gop->reference_abs ? c->gop->reference_abs(c->state) : 0;
  if (at_check_bf16(c->g, out, c->gop->reference(c->state), absref, count, &bound, &chk)) {
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

int at_evaluate(at_eval_ctx *c, const at_eval_req *req, const void *cubin, size_t cubin_size, at_eval_reply *rep) {
  (void)cubin_size;
  memset(rep, 0, sizeof *rep);
  rep->candidate_id = req->candidate_id;
  rep->max_abs_err = -1;
  rep->check_ratio = -1;
  rep->first_bad = -1;
  loaded l;
  if (!load(c, req, cubin, &l, rep)) return AT_OK;
  rep->occupancy = l.occupancy;
  if (ensure_workspace(c, l.launch.ws_counters, l.launch.ws_partial_bytes)) {
    set_status(rep, "resources", 0, "workspace: %s", at_errmsg());
    goto out;
  }
  /* Twice: the second run finds the workspace as the first one left it. */
  if (!run_and_check(c, req, &l, rep) || !run_and_check(c, req, &l, rep)) goto out;
  set_status(rep, "ok", 0, "%s", "");
  if (req->check_only) goto out;

  launch_ctx lc = {c, &l};
  at_bench_cfg cfg = {c->sets, req->warmup, req->samples, req->cut_after, req->cut_us};
  at_bench_result b;
  if (at_bench(c->g, enqueue, &lc, &cfg, &b)) {
    CUresult r = at_cu->StreamSynchronize(c->g->stream);
    api_failure(rep, r != CUDA_SUCCESS ? r : (CUresult)at_api_code(), "timing");
    if (!rep->sticky && r == CUDA_SUCCESS) snprintf(rep->message, sizeof rep->message, "timing failed: %s", at_errmsg());
    goto out;
  }
  CUresult r = at_cu->StreamSynchronize(c->g->stream);
  if (r != CUDA_SUCCESS) {
    api_failure(rep, r, "timing");
    goto out;
  }
  rep->time_us = b.median_us;
  rep->time_min_us = b.min_us;
  rep->time_max_us = b.max_us;
  rep->samples = b.samples;
  rep->cut = b.cut;
out:
  if (l.mod && !rep->sticky) at_cu->ModuleUnload(l.mod);
  return AT_OK;
}

/* One sample of leader i; on failure, records why on reps[i] and drops the leader. Returns 0 when
 * the context is dead (a sticky error: stop everything, reply, exit). */
static int retime_sample(at_timed **t, int i, double *us, at_eval_reply *reps) {
  if (at_timed_sample(t[i], us) == AT_OK) return 1;
  CUresult r = (CUresult)at_api_code();
  api_failure(&reps[i], r, "side-by-side re-timing");
  at_timed_destroy(t[i]);
  t[i] = NULL;
  return !reps[i].sticky;
}

int at_retime(at_eval_ctx *c, int n, const at_eval_req *reqs, const void *const *cubins, at_eval_reply *reps) {
  loaded *l = at_xcalloc((size_t)n, sizeof *l);
  at_timed **t = at_xcalloc((size_t)n, sizeof *t);
  launch_ctx *lc = at_xcalloc((size_t)n, sizeof *lc);
  int samples = reqs[0].samples;
  double *v = at_xcalloc((size_t)(n * samples), sizeof *v);
  /* One workspace serves every leader: the most counters any needs, and the most partial bytes;
   * each leader is launched with that counter count, so the layout is the same for all. */
  int64_t counters = 0;
  size_t partials = 0;
  for (int i = 0; i < n; i++) {
    memset(&reps[i], 0, sizeof reps[i]);
    reps[i].candidate_id = reqs[i].candidate_id;
    reps[i].max_abs_err = -1;
    reps[i].check_ratio = -1;
    reps[i].first_bad = -1;
    if (!load(c, &reqs[i], cubins[i], &l[i], &reps[i])) continue;
    if (l[i].launch.ws_counters > counters) counters = l[i].launch.ws_counters;
    if (l[i].launch.ws_partial_bytes > partials) partials = l[i].launch.ws_partial_bytes;
  }
  for (int i = 0; i < n; i++)
    if (l[i].launch.ws_counters) l[i].launch.ws_counters = counters;
  int alive = ensure_workspace(c, counters, partials) == AT_OK;
  for (int i = 0; i < n && alive; i++) {
    if (!l[i].mod) continue;
    lc[i] = (launch_ctx){c, &l[i]};
    if (at_timed_create(c->g, enqueue, &lc[i], c->sets, &t[i])) set_status(&reps[i], "resources", 0, "%s", at_errmsg());
  }
  /* Round-robin: every leader sees the same clocks and temperatures, sample by sample. A leader
   * that fails is dropped with its status; one that kills the context ends the re-timing. */
  double dummy;
  for (int i = 0; i < n && alive; i++)
    if (t[i]) alive = retime_sample(t, i, &dummy, reps);
  for (int s = 0; s < samples && alive; s++)
    for (int i = 0; i < n && alive; i++)
      if (t[i]) alive = retime_sample(t, i, &v[i * samples + s], reps);
  for (int i = 0; i < n; i++) {
    if (alive && t[i]) {
      snprintf(reps[i].status, sizeof reps[i].status, "ok");
      reps[i].samples = samples;
      reps[i].time_us = at_median(&v[i * samples], samples);
      reps[i].time_min_us = v[i * samples];
      reps[i].time_max_us = v[i * samples + samples - 1];
    }
    if (alive) {
      at_timed_destroy(t[i]);
      if (l[i].mod) at_cu->ModuleUnload(l[i].mod);
    }
  }
  free(l);
  free(t);
  free(lc);
  free(v);
  return AT_OK; /* every leader's status is in reps; the caller exits if one is sticky */
}

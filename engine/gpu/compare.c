/* compare.c: see compare.h.
 *
 * Status of a provider on a shape: `none` when it has no answer up front (the runtime finds no
 * config, cuBLASLt cannot run the shape), `wrong` when its output fails the check (it is then not
 * timed), `error` for a failure that leaves the GPU usable (a launch refused, a graph that cannot
 * be captured), `fault` when the CUDA context died: the reply goes out and the worker exits, and the
 * parent starts another one for the next shape.
 *
 * The providers: `autotune` and `default` are the runtime library's launch path, opened with the
 * request's DB, configs and tag, and with nothing at all (so it answers with the op's built-in
 * config); `cublaslt` is the op's vendor kernel; `cublas` is the cuBLAS FP32 GEMM that makes the
 * reference: it is the reference, so it is not checked, and it is timed alone after the others, on
 * the one input set whose fp32 copies exist (the tuner times its baseline the same way).
 *
 * `autotune judge` adds providers to a request: configs directories judge_dir/0, /1, ..., each
 * opened as the only source of a runtime of its own, so that each is one candidate's config
 * launched as the runtime launches it (its tail included), checked and timed side by side with the
 * others. Provider numbers from AT_CMP_NPROVIDERS up are these (STEP frames say them so). */
#include "compare.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/board.h"
#include "../core/config.h"
#include "../core/lookup.h"
#include "../core/proto.h"
#include "../core/util.h"
#include "../ops/gemm_a8w8_blockscale_tail.h"
#include "gpu_op.h"
#include "../runtime/autotune.h"
#include "bench.h"
#include "check.h"
#include "gpuctx.h"
#include "peak.h"
#include "scrub.h"
#include "worker.h"

struct cmp_worker;

/* What a timed unit of a provider is handed: the worker and which provider it is. */
typedef struct prov {
  struct cmp_worker *w;
  int p;
} prov;

enum { RT_TUNED, RT_BUILTIN, NRT };

typedef struct cmp_worker {
  at_gpu g;
  int out;                /* where replies and steps go */
  const at_op *op;
  const at_gpu_op *gop;
  void *state;            /* the current shape's input sets and reference */
  at_shape shape;
  int sets;
  at_runtime *rt[NRT];    /* RT_TUNED: the request's DB and configs; RT_BUILTIN: no source at all */
  char rt_key[8300];      /* the options RT_TUNED was opened with: another set reopens it */
  at_runtime *judge_rt[AT_CMP_MAX_JUDGED]; /* the request's judged configs (opened per request) */
  prov pv[AT_CMP_ALL_PROVIDERS];
  int dead;               /* the context is gone: reply, then exit */
} cmp_worker;

static int send_error(int fd, const char *msg) { return at_msg_send(fd, AT_MSG_ERROR, msg, strlen(msg) + 1); }

/* Tells the parent what starts now. A lost parent is not an error here: the process dies with it. */
static void step(cmp_worker *w, int provider, const char *what) {
  at_compare_step s;
  memset(&s, 0, sizeof s);
  s.provider = provider;
  snprintf(s.what, sizeof s.what, "%s", what);
  at_msg_send(w->out, AT_MSG_COMPARE_STEP, &s, sizeof s);
}

static void set_result(at_compare_result *r, const char *status, const char *fmt, const char *detail) {
  snprintf(r->status, sizeof r->status, "%s", status);
  snprintf(r->message, sizeof r->message, fmt, detail);
}

/* A step of a provider failed, with the engine's current error message. The context decides:
 * `fault` when it is dead (nothing more runs in this process), else `error`. */
static void failed(cmp_worker *w, at_compare_result *r, const char *what) {
  const char *err = at_errmsg(); /* the driver call below does not touch it */
  CUresult cr = at_cu->CtxSynchronize();
  int sticky = at_cu_is_sticky(cr);
  snprintf(r->status, sizeof r->status, "%s", sticky ? "fault" : "error");
  snprintf(r->message, sizeof r->message, "%s: %s%s%s%s", what, err, sticky ? " (the context is lost: " : "",
           sticky ? at_cu_error_name(cr) : "", sticky ? ")" : "");
  if (sticky) w->dead = 1;
}

static int which_runtime(int p) { return p == AT_CMP_DEFAULT ? RT_BUILTIN : RT_TUNED; }

/* The runtime provider p launches through: a judged config's own, or RT_TUNED / RT_BUILTIN. */
static at_runtime *runtime_of(cmp_worker *w, int p) {
  return p >= AT_CMP_NPROVIDERS ? w->judge_rt[p - AT_CMP_NPROVIDERS] : w->rt[which_runtime(p)];
}


/* ---- the providers, as timed units (bench.h) -------------------------------------------------- */

/* The runtime library's launch path, exactly as an inference process calls it: set i's buffers, on
 * the given stream (inside a graph capture when timed). */
static int enqueue_runtime(void *ctx, int set, CUstream stream) {
  const prov *v = ctx;
  cmp_worker *w = v->w;
  CUdeviceptr b[5];
  if (!w->gop->operands || w->gop->operands(w->state, set, b, 5) != 5)
    return at_fail(AT_ERR_RUNTIME, "op %s gives no operands for the runtime's launch", w->gop->name);
  int rc = at_gemm_a8w8_blockscale(runtime_of(w, v->p), (const void *)(uintptr_t)b[0],
                                   (const float *)(uintptr_t)b[1], (const void *)(uintptr_t)b[2],
                                   (const float *)(uintptr_t)b[3], (void *)(uintptr_t)b[4], w->shape.m, w->shape.n,
                                   w->shape.k, (void *)stream);
  if (rc != AT_STATUS_OK) return at_fail(AT_ERR_RUNTIME, "at_gemm_a8w8_blockscale: %s", at_runtime_last_error());
  return AT_OK;
}

static int enqueue_vendor(void *ctx, int set, CUstream stream) {
  const prov *v = ctx;
  return v->w->gop->vendor_enqueue(v->w->state, set, stream);
}

/* The providers timed side by side; cublas is timed alone (time_cublas). */
static const at_enqueue_fn ENQUEUE[AT_CMP_NPROVIDERS] = {enqueue_runtime, enqueue_vendor, enqueue_runtime, NULL};

/* Provider p's timed unit: a judged config is the runtime's launch path too. */
static at_enqueue_fn enqueue_of(int p) { return p >= AT_CMP_NPROVIDERS ? enqueue_runtime : ENQUEUE[p]; }


/* ---- one shape -------------------------------------------------------------------------------- */

static int shape_setup(cmp_worker *w, const at_compare_req *q, at_compare_reply *rep) {
  step(w, -1, "setup");
  if (w->state) w->gop->teardown(w->state);
  w->state = NULL;
  w->op = at_op_find(q->shape.op);
  w->gop = at_gpu_op_find(q->shape.op);
  if (!w->op || !w->gop) {
    snprintf(rep->message, sizeof rep->message, "this worker has no GPU support for op %s", q->shape.op);
    return 0;
  }
  w->shape = (at_shape){q->shape.m, q->shape.n, q->shape.k};
  w->sets = at_worker_sets_for(&w->g, w->gop, &q->shape);
  if (w->gop->setup(&w->g, &w->shape, q->shape.seed, w->sets, &w->state)) {
    snprintf(rep->message, sizeof rep->message, "inputs and reference: %s", at_errmsg());
    w->state = NULL;
    w->dead = at_cu_is_sticky(at_cu->CtxSynchronize());
    return 0;
  }
  if (q->shape.gamma > 0 && !(w->gop->reference_abs && w->gop->reference_abs(w->state))) {
    snprintf(rep->message, sizeof rep->message, "op %s makes no |A|*|B| reference, so the check cannot use gamma (%g)",
             q->shape.op, q->shape.gamma);
    return 0;
  }
  rep->ok = 1;
  rep->sets = w->sets;
  return 1;
}

/* The runtime library of a provider: RT_TUNED with the request's options (reopened when they
 * change), RT_BUILTIN with none (the worker's environment has no AUTOTUNE_DB or AUTOTUNE_CONFIGS:
 * at_compare_worker_main clears them), which answers every shape with the op's built-in config. */
static int ensure_runtime(cmp_worker *w, const at_compare_req *q, int which) {
  if (which == RT_BUILTIN) {
    if (w->rt[RT_BUILTIN]) return AT_OK;
    if (at_runtime_open(NULL, &w->rt[RT_BUILTIN]) != AT_STATUS_OK)
      return at_fail(AT_ERR_RUNTIME, "at_runtime_open: %s", at_runtime_last_error());
    return AT_OK;
  }
  char key[sizeof w->rt_key];
  snprintf(key, sizeof key, "%s\n%s\n%s", q->db_path, q->configs_dir, q->tag);
  if (w->rt[RT_TUNED] && strcmp(key, w->rt_key) == 0) return AT_OK;
  at_runtime_close(w->rt[RT_TUNED]);
  w->rt[RT_TUNED] = NULL;
  at_runtime_options o = {q->db_path[0] ? q->db_path : NULL, q->configs_dir[0] ? q->configs_dir : NULL,
                          q->tag[0] ? q->tag : NULL, NULL, NULL};
  if (at_runtime_open(&o, &w->rt[RT_TUNED]) != AT_STATUS_OK)
    return at_fail(AT_ERR_RUNTIME, "at_runtime_open: %s", at_runtime_last_error());
  snprintf(w->rt_key, sizeof w->rt_key, "%s", key);
  return AT_OK;
}

static void copy_str(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }

/* The runtime's tail for the selected config, when it launches one (the same plan as the runtime's,
 * gemm_a8w8_blockscale_tail.h): said after the kernel, " + tail C[m0:][n0:] 128x128 CK2" (64x64,
 * 128x256). */
static void note_tail(const cmp_worker *w, at_compare_result *r) {
  if (at_tail_env() != 1 || strcmp(w->gop->name, "gemm_a8w8_blockscale") != 0 || !strstr(r->kernel, "_sm90<")) return;
  at_config c = {0};
  if (at_config_set_params(&c, r->params) != AT_OK) return;
  const char *names[AT_MAX_PARAMS];
  at_params p = at_config_params(&c, names);
  at_a8w8_tail t;
  at_a8w8_tail_plan("sm90", &p, &w->shape, w->g.info.sm_count, at_source_name_untuned(r->source), &t);
  if (!t.split) return;
  size_t used = strlen(r->kernel);
  int tm = 0, tn = 0;
  at_a8w8_tail_tile(t.tile, &tm, &tn);
  snprintf(r->kernel + used, sizeof r->kernel - used, " %s C[%lld:][%lld:] %dx%d%s",
           t.unit_end ? "+ tail" : "+ tail (whole call, instead)", (long long)t.m0, (long long)t.n0, tm, tn,
           t.cluster_k == 2 ? " CK2" : "");
}

/* A judged config's runtime: judge_dir/<i> its only source, tag and modes as for RT_TUNED, and its
 * templates from judge_dir/<i>/templates where the parent put that link (the directory of the
 * config's variant in the space: the tuner's templates), else the runtime's own. */
static int open_judged(cmp_worker *w, const at_compare_req *q, int i) {
  char dir[4200], templates[4300];
  snprintf(dir, sizeof dir, "%s/%d", q->judge_dir, i);
  snprintf(templates, sizeof templates, "%s/templates", dir);
  at_runtime_options o = {NULL, dir, q->tag[0] ? q->tag : NULL, access(templates, F_OK) == 0 ? templates : NULL, NULL};
  if (at_runtime_open(&o, &w->judge_rt[i]) != AT_STATUS_OK)
    return at_fail(AT_ERR_RUNTIME, "at_runtime_open(%s): %s", dir, at_runtime_last_error());
  return AT_OK;
}

static void close_judged(cmp_worker *w) {
  for (int i = 0; i < AT_CMP_MAX_JUDGED; i++) at_runtime_close(w->judge_rt[i]), w->judge_rt[i] = NULL;
}

/* What the runtime of provider p would launch for the shape on this GPU; 0 (r says why) when it has
 * nothing. */
static int select_config(cmp_worker *w, const at_compare_req *q, int p, at_compare_result *r) {
  int rc = p >= AT_CMP_NPROVIDERS ? open_judged(w, q, p - AT_CMP_NPROVIDERS) : ensure_runtime(w, q, which_runtime(p));
  if (rc) return set_result(r, "none", "%s", at_errmsg()), 0;
  at_selection sel;
  if (at_runtime_select(runtime_of(w, p), q->shape.op, w->shape.m, w->shape.n, w->shape.k, NULL, &sel) != AT_STATUS_OK)
    return set_result(r, "none", "the runtime library has no config: %s", at_runtime_last_error()), 0;
  copy_str(r->source, sizeof r->source, sel.source);
  copy_str(r->path, sizeof r->path, sel.path);
  copy_str(r->bucket, sizeof r->bucket, sel.bucket);
  copy_str(r->variant, sizeof r->variant, sel.variant);
  copy_str(r->params, sizeof r->params, sel.params);
  copy_str(r->kernel, sizeof r->kernel, sel.kernel);
  note_tail(w, r);
  return 1;
}

/* Poisons set 0's output, runs the provider on it, and checks it against the reference: twice, as
 * for candidates, so that a launch that only works on a fresh workspace fails the second time. */
static void check_provider(cmp_worker *w, int p, const at_check_bound *bound, at_compare_result *r) {
  CUdeviceptr out;
  size_t count;
  w->gop->output(w->state, 0, &out, &count);
  CUdeviceptr ref = w->gop->reference(w->state);
  CUdeviceptr absref = w->gop->reference_abs ? w->gop->reference_abs(w->state) : 0;
  for (int pass = 1; pass <= 2; pass++) {
    const char *run = pass == 1 ? "first run" : "second run";
    if (at_poison_bf16(&w->g, out, count) || enqueue_of(p)(&w->pv[p], 0, w->g.stream)) {
      failed(w, r, run);
      return;
    }
    CUresult cr = at_cu->StreamSynchronize(w->g.stream);
    if (cr != CUDA_SUCCESS) {
      at_fail_api("CUDA", "cuStreamSynchronize", __FILE__, __LINE__, cr, at_cu_error_name(cr), at_cu_error_text(cr));
      failed(w, r, run);
      return;
    }
    at_check_result chk;
    if (at_check_bf16(&w->g, out, ref, absref, count, bound, &chk)) {
      failed(w, r, "the check");
      return;
    }
    if (chk.worst_ratio > r->check_ratio) r->check_ratio = chk.worst_ratio;
    if (chk.max_err > r->max_abs_err) r->max_abs_err = chk.max_err;
    r->bad_count = chk.bad;
    r->first_bad = chk.first_bad;
    if (chk.bad) {
      char what[300], detail[400];
      at_check_describe(&chk, count, what, sizeof what);
      snprintf(detail, sizeof detail, "%s: %s", run, what);
      set_result(r, "wrong", "%s", detail);
      return;
    }
  }
  set_result(r, "ok", "%s", "");
}

/* A shape's SM clock from its reads. */
static void clock_summary(at_compare_clock *c, double *mhz, int n, double read_s) {
  c->reads = n;
  if (!n) return;
  c->median_mhz = (int)at_median(mhz, n); /* sorts mhz */
  c->min_mhz = (int)mhz[0], c->max_mhz = (int)mhz[n - 1];
  c->read_us = 1e6 * read_s / n;
}

/* The providers that passed their check, timed side by side: every round takes one sample of each,
 * the order turned around every round (A B, B A, ...), so that each sees the same clocks and
 * temperature and neither always runs right after the other. With two or more, each sample follows
 * an L2 scrub (scrub.h): no provider reads what the one before it left in L2. */
static void time_providers(cmp_worker *w, const at_compare_req *q, at_compare_reply *rep) {
  enum { NP = AT_CMP_ALL_PROVIDERS };
  at_timed *t[NP] = {0};
  double *v[NP] = {0};
  int active[NP], na = 0;
  const int samples = q->shape.samples, warmup = q->shape.warmup;
  for (int p = 0; p < NP && !w->dead; p++) {
    if (!enqueue_of(p) || !at_cmp_wanted(q, p) || strcmp(at_cmp_result_of(rep, p)->status, "ok") != 0) continue;
    step(w, p, "capture");
    if (at_timed_create(&w->g, enqueue_of(p), &w->pv[p], w->sets, &t[p])) {
      failed(w, at_cmp_result_of(rep, p), "capturing the timing graph");
      t[p] = NULL;
      continue;
    }
    v[p] = at_xcalloc((size_t)samples, sizeof *v[p]);
    active[na++] = p;
  }
  const at_board *board = na ? at_board_open(w->g.info.uuid, rep->clock.note, sizeof rep->clock.note) : NULL;
  double *mhz = board ? at_xcalloc((size_t)samples, sizeof *mhz) : NULL;
  int nmhz = 0;
  double read_s = 0;
  for (int s = -warmup; s < samples && !w->dead; s++) {
    for (int i = 0; i < na && !w->dead; i++) {
      int p = active[(s & 1) ? na - 1 - i : i];
      if (!t[p]) continue;
      step(w, p, s < 0 ? "warm-up" : "timing");
      double us = 0;
      if ((na > 1 && at_l2_scrub(&w->g)) || at_timed_sample(t[p], &us)) {
        failed(w, at_cmp_result_of(rep, p), "timing");
        if (!w->dead) at_timed_destroy(t[p]);
        t[p] = NULL;
        continue;
      }
      if (s >= 0) v[p][s] = us;
    }
    /* The clock after each turn (every provider sampled once): a read costs the host a microsecond
     * or two while the GPU waits for the next launch (reported: read_us). */
    if (board && s >= 0 && !w->dead) {
      double t0 = at_now_s();
      int f = at_board_sm_mhz(board);
      read_s += at_now_s() - t0;
      if (f > 0) mhz[nmhz++] = f;
    }
  }
  clock_summary(&rep->clock, mhz, nmhz, read_s);
  free(mhz);
  for (int i = 0; i < na; i++) {
    int p = active[i];
    at_compare_result *r = at_cmp_result_of(rep, p);
    if (t[p] && !w->dead) {
      r->samples = samples;
      r->time_us = at_median(v[p], samples); /* sorts v */
      r->time_min_us = v[p][0];
      r->time_max_us = v[p][samples - 1];
      at_timed_destroy(t[p]);
    } else if (t[p]) {
      set_result(r, "error", "%s", "not timed: the GPU context was lost while another provider was timed");
    }
    free(v[p]);
  }
}

/* The cuBLAS FP32 reference, timed alone by the op (one input set: its fp32 copies exist once). */
static void time_cublas(cmp_worker *w, const at_compare_req *q, at_compare_result *r) {
  copy_str(r->kernel, sizeof r->kernel, "cublas_fp32_reference");
  if (!w->gop->time_reference) {
    set_result(r, "none", "op %s has no timed reference", w->gop->name);
    return;
  }
  step(w, AT_CMP_CUBLAS, "timing");
  at_bench_cfg cfg = {w->sets, q->shape.warmup, q->shape.samples, q->shape.samples, 0};
  at_bench_result b;
  memset(&b, 0, sizeof b);
  if (w->gop->time_reference(w->state, &cfg, &b)) {
    failed(w, r, "timing the reference");
    return;
  }
  set_result(r, "ok", "%s", "");
  r->samples = b.samples;
  r->time_us = b.median_us, r->time_min_us = b.min_us, r->time_max_us = b.max_us;
}

static void serve_compare(cmp_worker *w, const at_compare_req *q, at_compare_reply *rep) {
  memset(rep, 0, sizeof *rep);
  for (int p = 0; p < AT_CMP_ALL_PROVIDERS; p++) {
    at_compare_result *r = at_cmp_result_of(rep, p);
    r->check_ratio = r->max_abs_err = -1;
    r->first_bad = -1;
  }
  if (q->shape.samples < 1 || q->shape.warmup < 0 || q->judged < 0 || q->judged > AT_CMP_MAX_JUDGED) {
    snprintf(rep->message, sizeof rep->message, "bad request: %d samples, %d warm-up, %d judged configs",
             q->shape.samples, q->shape.warmup, q->judged);
    return;
  }
  if (shape_setup(w, q, rep)) {
    const at_check_bound bound = {q->shape.atol, q->shape.rtol, q->shape.gamma};
    static const int RUNTIMES[] = {AT_CMP_AUTOTUNE, AT_CMP_DEFAULT};
    for (size_t i = 0; i < AT_ARRAY_LEN(RUNTIMES) && !w->dead; i++) {
      int p = RUNTIMES[i];
      if (!q->use[p]) continue;
      step(w, p, "select");
      if (select_config(w, q, p, &rep->r[p])) {
        step(w, p, "check");
        check_provider(w, p, &bound, &rep->r[p]);
      }
    }
    for (int i = 0; i < q->judged && !w->dead; i++) {
      int p = AT_CMP_NPROVIDERS + i;
      step(w, p, "select");
      if (select_config(w, q, p, &rep->judged[i])) {
        step(w, p, "check");
        check_provider(w, p, &bound, &rep->judged[i]);
      }
    }
    if (q->use[AT_CMP_CUBLASLT] && !w->dead) {
      at_compare_result *r = &rep->r[AT_CMP_CUBLASLT];
      int available = 0;
      step(w, AT_CMP_CUBLASLT, "prepare");
      if (!w->gop->vendor_prepare || !w->gop->vendor_enqueue)
        set_result(r, "none", "op %s has no vendor kernel", w->gop->name);
      else if (w->gop->vendor_prepare(w->state, &available, r->kernel, sizeof r->kernel, r->message, sizeof r->message))
        failed(w, r, "preparing cuBLASLt");
      else if (!available)
        snprintf(r->status, sizeof r->status, "none"); /* the note is in r->message */
      else {
        if (w->gop->vendor_describe) {
          char algo[200] = "";
          w->gop->vendor_describe(w->state, algo, sizeof algo);
          if (algo[0]) {
            size_t n = strlen(r->kernel);
            snprintf(r->kernel + n, sizeof r->kernel - n, " (%s)", algo);
          }
        }
        step(w, AT_CMP_CUBLASLT, "check");
        check_provider(w, AT_CMP_CUBLASLT, &bound, r);
      }
    }
    if (!w->dead) time_providers(w, q, rep);
    if (q->use[AT_CMP_CUBLAS] && !w->dead) time_cublas(w, q, &rep->r[AT_CMP_CUBLAS]);
  }
  /* Whatever failed, the providers asked for and not run say so, and the parent names them. */
  for (int p = 0; p < AT_CMP_ALL_PROVIDERS; p++)
    if (at_cmp_wanted(q, p) && !at_cmp_result_of(rep, p)->status[0])
      set_result(at_cmp_result_of(rep, p), w->dead ? "fault" : "error", "not run: %.400s",
                 rep->message[0] ? rep->message : "the GPU context was lost before it");
  if (!w->dead) close_judged(w); /* a dead context's runtimes are left to the exit */
  rep->sticky = w->dead;
}

int at_compare_worker_main(int gpu, int in, int out) {
  /* The parent says which DB and configs the runtime reads; the environment must not add any (the
   * default provider's runtime is opened with none). */
  unsetenv("AUTOTUNE_DB");
  unsetenv("AUTOTUNE_CONFIGS");
  cmp_worker *w = at_xcalloc(1, sizeof *w);
  w->out = out;
  for (int p = 0; p < AT_CMP_ALL_PROVIDERS; p++) w->pv[p] = (prov){w, p};
  if (at_gpu_open(gpu, &w->g)) {
    send_error(out, at_errmsg());
    free(w);
    return AT_ERR_RUNTIME;
  }
  int rc = at_msg_send(out, AT_MSG_HELLO, &w->g.info, sizeof w->g.info);
  while (rc == AT_OK) {
    uint32_t type;
    void *p;
    size_t len;
    rc = at_msg_recv(in, -1, &type, &p, &len);
    if (rc == AT_PROTO_EOF) {
      rc = AT_OK;
      break;
    }
    if (rc) break;
    if (type == AT_MSG_QUIT) {
      free(p);
      break;
    }
    if (type == AT_MSG_PEAK) {
      at_peak_reply r;
      memset(&r, 0, sizeof r);
      at_measure_peaks(&w->g, &r);
      rc = at_msg_send(out, AT_MSG_PEAK_REPLY, &r, sizeof r);
    } else if (type == AT_MSG_COMPARE && len == sizeof(at_compare_req)) {
      at_compare_req *q = at_xmalloc(sizeof *q);
      at_compare_reply *rep = at_xmalloc(sizeof *rep);
      memcpy(q, p, sizeof *q);
      serve_compare(w, q, rep);
      rc = at_msg_send(out, AT_MSG_COMPARE_REPLY, rep, sizeof *rep);
      int sticky = rep->sticky;
      free(q);
      free(rep);
      if (sticky) {
        free(p);
        _exit(3); /* the context is unusable: the parent starts another worker for the next shape */
      }
    } else {
      rc = send_error(out, type == AT_MSG_COMPARE ? "COMPARE: wrong message size" : "unknown request");
    }
    free(p);
  }
  if (w->state) w->gop->teardown(w->state);
  for (int i = 0; i < NRT; i++) at_runtime_close(w->rt[i]);
  close_judged(w);
  free(w);
  return rc;
}

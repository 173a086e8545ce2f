/* compile.c: see compile.h. NVRTC runs in the pool's threads, one kernel per task: a kernel is
 * handed to one thread once, so no two threads ever compile one key. The statistics and the
 * progress bar belong to the calling thread alone, and so does the DB, but for the GPU phase a feed
 * may run beside it: then every DB call is made under the feed's mutex. */
#include "compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool.h"
#include "progress.h"
#include "util.h"

/* One kernel to compile: the candidates that share its compile key and are not known from the DB. */
typedef struct slot {
  size_t cand;       /* its first such candidate (index into the enumeration): what is compiled */
  size_t first, n;   /* its candidates: members[first .. first + n) */
  at_jit_result res; /* filled by a pool thread */
  int rc;            /* status of at_jit_compile */
  char err[512];     /* its message, when rc != AT_OK */
} slot;

typedef struct pool_ctx {
  const at_compile_job *job;
  slot *slots;
} pool_ctx;

/* Beside a GPU phase, NVRTC yields the CPU: the worker that feeds the GPU (and the parent thread
 * that feeds the worker) must never wait for a core, or the GPU idles. Linux gives each thread its
 * own nice value; the pool's threads end with the compile phase. */
static void yield_to_gpu(void) {
  static _Thread_local int done;
  if (done) return;
  done = 1;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (tid != getpid()) setpriority(PRIO_PROCESS, (id_t)tid, 10); /* (a pool without threads runs on the caller's) */
}

static void compile_one(void *p, size_t i) {
  pool_ctx *c = p;
  if (c->job->feed) yield_to_gpu();
  slot *sl = &c->slots[i];
  const at_cand *cand = &c->job->cands->c[sl->cand];
  sl->rc = at_jit_compile(c->job->sources[cand->variant], cand->name_expr, &c->job->opts, c->job->cache_dir, &sl->res);
  if (sl->rc) snprintf(sl->err, sizeof sl->err, "%s", at_errmsg());
}

int at_compile_prepare(const at_space *s, at_jit_source ***sources, int64_t **variant_ids) {
  *sources = at_xcalloc(s->nvariants, sizeof **sources);
  *variant_ids = at_xcalloc(s->nvariants, sizeof **variant_ids);
  for (size_t v = 0; v < s->nvariants; v++) {
    const at_variant *var = &s->variants[v];
    AT_TRY(at_jit_source_load(var->template_path, at_templates_dir(), &(*sources)[v]));
  }
  return AT_OK;
}

void at_compile_unprepare(const at_space *s, at_jit_source **sources, int64_t *variant_ids) {
  for (size_t v = 0; sources && v < s->nvariants; v++) at_jit_source_free(sources[v]);
  free(sources);
  free(variant_ids);
}

static void db_lock(const at_compile_job *job) {
  if (job->feed && job->feed->db_mu) pthread_mutex_lock(job->feed->db_mu);
}

static void db_unlock(const at_compile_job *job) {
  if (job->feed && job->feed->db_mu) pthread_mutex_unlock(job->feed->db_mu);
}

static void publish(const at_compile_job *job, size_t cand, const at_compiled *c) {
  if (job->feed && job->feed->outcome) job->feed->outcome(job->feed->ctx, cand, c);
}

static size_t gcd(size_t a, size_t b) {
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The order compiles are handed out in: a stride near n / golden ratio, coprime with n, through
 * the list of kernels. The enumeration lists each variant's parameter grid in order; this order
 * interleaves the variants and spreads each grid, so that the first candidates ready for the GPU
 * sample the whole space and each shape's best time so far (the early cut's yardstick) is close to
 * its final value after the first batches. Spread by kernel, not by candidate: the candidates of
 * one kernel come together, and a grid of few kernels is sampled as early as a grid of many. A
 * function of the list alone: every run compiles in one order. */
static void spread(slot *s, size_t n) {
  if (n < 3) return;
  size_t stride = (size_t)((double)n * 0.6180339887);
  while (gcd(stride, n) != 1) stride++;
  slot *copy = at_xcalloc(n, sizeof *copy);
  for (size_t j = 0; j < n; j++) copy[j] = s[(j * stride) % n];
  memcpy(s, copy, n * sizeof *s);
  free(copy);
}

static void note_failure(at_compile_stats *st, const char *log, const char *cand) {
  char *line = at_jit_first_error(log);
  /* Distinct failures are told apart by their text after the file:line prefix. */
  const char *key = strstr(line, "error");
  key = key ? key : line;
  for (size_t i = 0; i < st->nfailures; i++) {
    const char *k = strstr(st->failures[i].first_line, "error");
    if (strcmp(k ? k : st->failures[i].first_line, key) == 0) {
      st->failures[i].count++;
      free(line);
      return;
    }
  }
  st->failures = at_xrealloc(st->failures, sizeof *st->failures * (st->nfailures + 1));
  st->failures[st->nfailures++] = (at_failure){line, at_xstrdup(cand), 1};
}

/* The log kept in the DB: errors in full up to 8 KB; for a success, the resource report. */
static char *log_excerpt(const char *log) {
  size_t n = strlen(log);
  return at_xstrndup(log, n > 8192 ? 8192 : n);
}

static void mark_usable(const at_compile_job *job, const at_cand *cand, at_compiled *o, at_compile_stats *st) {
  const at_variant *v = &job->space->variants[cand->variant];
  at_params d = {v->names + v->slot_derived, cand->table + v->slot_derived, v->nnames - v->slot_derived};
  int64_t threads = at_params_get(&d, "threads", 0);
  o->usable = o->ok;
  if (o->ok && (int64_t)o->regs * threads > job->limits->regs_per_block) {
    o->usable = 0;
    st->pruned_registers++;
  }
}

/* The compile of one kernel, counted once whatever the number of its candidates. */
static int count_compile(const at_compile_job *job, const slot *sl, at_compile_stats *st) {
  const at_jit_result *r = &sl->res;
  if (sl->rc) return at_fail(sl->rc, "compiling %s: %s", job->cands->c[sl->cand].name_expr, sl->err);
  if (r->cache_unwritable && !st->warned_cache) {
    st->warned_cache = 1;
    fprintf(stderr, "autotune: warning: the compile cache %s cannot be written; every use will compile again\n",
            job->cache_dir);
  }
  if (r->cache_hit)
    st->cache_hits++;
  else
    st->compiled_now++, st->compile_ms_sum += r->compile_ms;
  st->cache_repaired += r->cache_damaged;
  return AT_OK;
}

/* Candidate ci takes the outcome of its kernel's compile, r, into its own DB row. */
static int record(const at_compile_job *job, size_t ci, const at_jit_result *r, at_compiled *o, at_compile_stats *st) {
  const at_cand *cand = &job->cands->c[ci];
  const at_variant *v = &job->space->variants[cand->variant];
  at_params d = {v->names + v->slot_derived, cand->table + v->slot_derived, v->nnames - v->slot_derived};
  char *log = log_excerpt(r->log);
  at_cand_row row = {
      .compile_key = o->key,
      .variant_id = job->variant_ids[cand->variant],
      .params = cand->params_json,
      .name_expr = cand->name_expr,
      .arch = job->opts.arch,
      .ok = r->ok,
      .log = log,
      .lowered_name = r->lowered_name,
      .regs = r->regs,
      .spill_stores = r->spill_stores,
      .spill_loads = r->spill_loads,
      .static_smem = r->static_smem,
      .stack_bytes = r->stack_bytes,
      .threads = at_params_get(&d, "threads", 0),
      .smem_bytes = at_params_get(&d, "smem_bytes", 0),
      .compile_ms = r->compile_ms,
      .cubin_hash = r->ok ? r->cubin_hash : NULL,
      .run_id = job->run_id,
  };
  int rc = at_store_put_candidate(job->db, &row, &o->cand_id);
  free(log);
  if (rc) return rc;
  o->done = 1;
  o->ok = r->ok;
  o->regs = r->regs;
  o->spill_stores = r->spill_stores;
  o->spill_loads = r->spill_loads;
  if (r->ok)
    st->ok++;
  else {
    st->failed++;
    note_failure(st, r->log, cand->name_expr);
  }
  mark_usable(job, cand, o, st);
  return AT_OK;
}

/* *found: the DB knows cand's compile key (never with --fresh); then o and st take its outcome. */
static int known_from_db(const at_compile_job *job, const at_cand *cand, at_compiled *o, at_compile_stats *st,
                         int *found) {
  at_cand_row row;
  *found = 0;
  if (job->fresh) return AT_OK;
  if (at_store_find_candidate(job->db, o->key, &row, found) != AT_OK) return AT_ERR_RUNTIME;
  if (!*found) return AT_OK;
  o->cand_id = row.id;
  o->done = 1;
  o->ok = row.ok;
  o->regs = row.regs;
  o->spill_stores = row.spill_stores;
  o->spill_loads = row.spill_loads;
  st->db_hits++;
  if (row.ok)
    st->ok++;
  else {
    st->failed++;
    note_failure(st, row.log ? row.log : "", cand->name_expr); /* row.log: valid until the next DB call */
  }
  mark_usable(job, cand, o, st);
  return AT_OK;
}

/* The progress of the compiles: the phase's own display, or the feed's in its place. */
static void show_progress(const at_compile_job *job, at_progress *bar, int64_t done, int64_t total,
                          const at_compile_stats *st, int final) {
  char extra[192];
  if (final)
    snprintf(extra, sizeof extra, "%lld kernels for %zu candidates: %lld compiled, %lld from cache; %lld failed",
             (long long)st->kernels, job->cands->n, (long long)st->compiled_now, (long long)st->cache_hits,
             (long long)st->failed);
  else
    snprintf(extra, sizeof extra, "%lld failed", (long long)st->failed);
  if (job->feed && job->feed->progress)
    job->feed->progress(job->feed->ctx, done, total, extra, final);
  else if (final)
    at_progress_finish(bar, extra);
  else
    at_progress_update(bar, done, extra);
}

/* The pool compiles the kernels slots[0..n), each once; every candidate of a kernel is recorded (and
 * fed) as soon as its compile is done. */
static int compile_slots(const at_compile_job *job, slot *slots, size_t n, const size_t *members, at_compiled *res,
                         at_compile_stats *st) {
  pool_ctx pc = {job, slots};
  at_progress *bar = job->feed && job->feed->progress ? NULL : at_progress_start("compile", (int64_t)n);
  at_pool *pool = at_pool_start(job->jobs, n, compile_one, &pc);
  int64_t finished = 0;
  int rc = AT_OK;
  ssize_t i;
  while ((i = at_pool_next_done(pool)) >= 0) {
    slot *sl = &slots[i];
    if (rc == AT_OK) rc = count_compile(job, sl, st);
    for (size_t j = 0; j < sl->n && rc == AT_OK; j++) {
      size_t ci = members[sl->first + j];
      db_lock(job);
      rc = record(job, ci, &sl->res, &res[ci], st);
      db_unlock(job);
      if (rc == AT_OK) publish(job, ci, &res[ci]);
    }
    at_jit_result_free(&sl->res);
    show_progress(job, bar, ++finished, (int64_t)n, st, 0);
    if (rc != AT_OK || (job->stop && *job->stop)) at_pool_stop(pool);
  }
  at_pool_join(pool);
  show_progress(job, bar, finished, (int64_t)n, st, 1);
  return rc;
}

static int cmp_kernel_key(const void *a, const void *b, void *res) {
  const at_compiled *r = res;
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  int c = strcmp(r[x].kernel_key, r[y].kernel_key);
  return c ? c : (x > y) - (x < y);
}

size_t at_compile_kernels(const at_enum *e, at_jit_source *const *sources, const at_jit_options *opts, at_compiled *res) {
  size_t *order = at_xcalloc(e->n ? e->n : 1, sizeof *order), kernels = 0;
  for (size_t i = 0; i < e->n; i++) {
    const at_cand *cand = &e->c[i];
    at_jit_key(sources[cand->variant], cand->name_expr, opts, res[i].kernel_key);
    at_cand_key(res[i].kernel_key, cand->launch_json, res[i].key);
    order[i] = i;
  }
  /* Sorted by key, then by index: each run of equal keys starts with the kernel's first candidate. */
  qsort_r(order, e->n, sizeof *order, cmp_kernel_key, res);
  for (size_t j = 0; j < e->n; j++) {
    int same = j > 0 && strcmp(res[order[j]].kernel_key, res[order[j - 1]].kernel_key) == 0;
    res[order[j]].kernel = same ? res[order[j - 1]].kernel : order[j];
    kernels += !same;
  }
  free(order);
  return kernels;
}

/* The kernels to compile: one slot per distinct kernel among the candidates todo[0..n) (in
 * enumeration order), numbered by first appearance; members lists each slot's candidates in turn. */
static size_t make_slots(const at_compiled *res, size_t nres, const size_t *todo, size_t n, slot *slots, size_t *members) {
  size_t *slot_of = at_xcalloc(nres ? nres : 1, sizeof *slot_of), nslots = 0; /* per kernel: slot + 1, 0 for none */
  for (size_t j = 0; j < n; j++) {
    size_t k = res[todo[j]].kernel;
    if (!slot_of[k]) slots[nslots] = (slot){.cand = todo[j]}, slot_of[k] = ++nslots;
    slots[slot_of[k] - 1].n++;
  }
  for (size_t s = 0, at = 0; s < nslots; s++) {
    slots[s].first = at;
    at += slots[s].n;
    slots[s].n = 0; /* counted again as the members are placed */
  }
  for (size_t j = 0; j < n; j++) {
    slot *sl = &slots[slot_of[res[todo[j]].kernel] - 1];
    members[sl->first + sl->n++] = todo[j];
  }
  free(slot_of);
  return nslots;
}

int at_compile_all(const at_compile_job *job, at_compiled **out, at_compile_stats *st) {
  const at_enum *e = job->cands;
  double t0 = at_now_s();
  memset(st, 0, sizeof *st);
  at_compiled *res = at_xcalloc(e->n ? e->n : 1, sizeof *res);
  *out = res;
  st->kernels = (int64_t)at_compile_kernels(e, job->sources, &job->opts, res);

  /* What the DB already knows is not compiled again; the feed hears of it at once. */
  size_t *todo = at_xcalloc(e->n ? e->n : 1, sizeof *todo), ntodo = 0;
  int rc = AT_OK;
  for (size_t i = 0; i < e->n && rc == AT_OK; i++) {
    const at_cand *cand = &e->c[i];
    res[i].cand_id = -1;
    db_lock(job);
    int found = 0;
    rc = known_from_db(job, cand, &res[i], st, &found);
    db_unlock(job);
    if (rc == AT_OK && found) publish(job, i, &res[i]);
    if (rc == AT_OK && !found) todo[ntodo++] = i;
  }
  slot *slots = at_xcalloc(ntodo ? ntodo : 1, sizeof *slots);
  size_t *members = at_xcalloc(ntodo ? ntodo : 1, sizeof *members);
  size_t nslots = make_slots(res, e->n, todo, ntodo, slots, members);
  spread(slots, nslots);
  if (rc == AT_OK && nslots) rc = compile_slots(job, slots, nslots, members, res, st);
  free(slots);
  free(members);
  free(todo);
  st->wall_s = at_now_s() - t0;
  return rc;
}

void at_compile_stats_free(at_compile_stats *st) {
  for (size_t i = 0; i < st->nfailures; i++) {
    free(st->failures[i].first_line);
    free(st->failures[i].example);
  }
  free(st->failures);
  memset(st, 0, sizeof *st);
}

/* runtime.c: the runtime library (autotune.h).
 *
 * Invariants:
 *  - Lookups go through an immutable hash table of entries keyed by (op, device key, N, K); the
 *    device key is the CUDA context instance for launches (an interned record of its id: a context
 *    reset by cudaDeviceReset keeps its handle but is a new instance, whose kernels and workspaces
 *    are made anew), or an interned device name for at_runtime_select. Readers load the table with
 *    acquire and never lock. A new entry is made under the mutex, into a copy of the table that is
 *    then published.
 *  - Entries live until at_runtime_close (the strings at_runtime_select returns point into them).
 *    Tables are retired when replaced and freed a minute later: a reader holds one for the length
 *    of a lookup only.
 *  - An entry's kernel per distinct config (its buckets and M_LEQ entries map to kernel slots) is
 *    an atomic pointer, set once under the mutex on first launch. Choosing the entry for M reads
 *    the entry's immutable config set only (at_config_for_m: a short loop, no lock, no allocation).
 *    Kernels, failed ones included, are kept in a registry by (context, config): a DB reload
 *    recompiles nothing, and a config that cannot compile fails fast after its first try. Configs
 *    that differ only in launch parameters (SPLIT_K, GROUP_M when the entry leaves them out) have
 *    one instantiation: each is an entry of its own, with its own launch rule and kernel arguments,
 *    sharing the one module loaded for the first of them in the context.
 *  - With a DB, a watcher thread stat()s the DB and its WAL once a second; on a change it looks
 *    every entry up again and publishes one new table, reusing the entries whose answer did not
 *    change. The launch path never does SQL, I/O, or a clock read.
 *  - Split-K workspaces: workspace.h (per stream outside capture; inside it, counters of the
 *    launch's own from a zeroed arena and partials from the graph's memory).
 *  - A kernel's launch parameters go through the family's launch protocol, shared with the worker
 *    (engine/ops/gemm_a8w8_blockscale_kparams.h): what is checked and timed is what is launched.
 *  - All DB, file, NVRTC and module work happens under the mutex, off the launch path's fast path. */
#include "autotune.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../../templates/gemm_a8w8_blockscale_args.h"
#include "../core/cache.h"
#include "../core/config.h"
#include "../core/device.h"
#include "../core/jit.h"
#include "../core/lookup.h"
#include "../core/util.h"
#include "../gpu/cuda.h"
#include "../gpu/launch.h"
#include "../ops/gemm_a8w8_blockscale_calls.h"
#include "../ops/gemm_a8w8_blockscale_kparams.h"
#include "../ops/gemm_a8w8_blockscale_tail.h"
#include "../core/op.h"
#include "ahead.h"
#include "workspace.h"

enum { MAX_DEVNAMES = 32, MAX_WARNED = 64, TABLE_GRACE_S = 60 };

typedef struct rt_kernel {
  uint64_t serial; /* unique for the process's lifetime: a freed kernel's address may be reused */
  at_ctx_ref ctx;  /* the context instance its module was loaded in */
  char *name_expr;
  at_config cfg;
  CUmodule mod;      /* NULL when it shares another entry's (owns_module 0) */
  CUfunction fn;
  int owns_module;   /* mod was loaded for this entry; others of the same instantiation borrow fn */
  at_a8w8_plan plan; /* the family's launch protocol, from this config's parameters */
  int sm_count;      /* of the context's device: persistent grids are sized by it */
  char *error; /* set when it cannot be compiled or loaded: every launch fails with this */
  _Atomic int tail_warned; /* as a tail that cannot launch: said once, and no lock taken again */
  struct rt_kernel *next;
} rt_kernel;

typedef struct rt_entry {
  int op;
  const void *dev;
  int64_t n, k;
  char names[2][128]; /* device names the lookup used: product, then arch */
  int sm_count;       /* of that device for the time model's answer; 0: unknown (a device name) */
  at_lookup_result lookup;
  _Atomic(rt_kernel *) kernel[AT_MAX_ENTRIES]; /* by slot */
  unsigned char slot[AT_MAX_ENTRIES]; /* config entry -> the first entry with the same config */
  char *params[AT_MAX_ENTRIES], *kernel_name[AT_MAX_ENTRIES];
  char entry_name[AT_MAX_ENTRIES][16]; /* "small", ..., "M_LEQ_512" */
  _Atomic(rt_kernel *) tail[3][2]; /* the tail configs' kernels (tile, CLUSTER_K - 1) on this entry's context */
} rt_entry;

/* A context instance's key: one record per driver context id, for the runtime's life. */
typedef struct rt_ctx_key {
  unsigned long long id;
  struct rt_ctx_key *next;
} rt_ctx_key;

typedef struct rt_table {
  size_t cap, count;
  rt_entry **slots;
  double retired_at; /* monotonic seconds; 0 while current */
  struct rt_table *older;
} rt_table;

struct at_runtime {
  uint64_t serial;
  char *db_path, *configs_dir, *tag, *templates_dir, *cache_dir;
  _Atomic int pdl; /* AT_PDL_OFF or AT_PDL_ON (turned off when the driver refuses it) */
  int tail;        /* AT_TAIL_OFF or AT_TAIL_ON */
  pthread_mutex_t mu;
  _Atomic(rt_table *) table;
  rt_entry **entries; /* every entry ever made, freed at close */
  size_t nentries;
  rt_kernel *kernels;
  at_ws_pool *workspaces;
  at_store *db;
  long long db_sig[2][3]; /* mtime ns, size, inode of the DB and of its WAL */
  pthread_t watcher;
  int watching;
  pthread_cond_t stop_cv;
  int stopping;
  char *devnames[MAX_DEVNAMES];
  _Atomic int ndevnames;
  _Atomic(struct rt_ctx_key *) ctx_keys; /* pushed under the mutex, read without it */
  char *warned[MAX_WARNED];
  int nwarned;
};

static _Thread_local char tl_error[1024];
static _Thread_local int tl_status; /* of the last rt_fail: what a NULL from get_entry meant */

const char *at_runtime_last_error(void) { return tl_error; }

static int rt_fail(int status, const char *fmt, ...) AT_PRINTF(2, 3);
static int rt_fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_error, sizeof tl_error, fmt, ap);
  va_end(ap);
  return tl_status = status;
}

/* ---- warnings, once each (mutex held) --------------------------------------------------------- */

static _Thread_local at_runtime *g_warn_rt; /* the runtime whose mutex this thread holds */

static void warn_once(const char *msg) {
  at_runtime *rt = g_warn_rt;
  if (rt) {
    for (int i = 0; i < rt->nwarned; i++)
      if (strcmp(rt->warned[i], msg) == 0) return;
    if (rt->nwarned < MAX_WARNED) rt->warned[rt->nwarned++] = at_xstrdup(msg);
  }
  fprintf(stderr, "autotune: warning: %s\n", msg);
}

/* ---- the table -------------------------------------------------------------------------------- */

static size_t hash_key(int op, const void *dev, int64_t n, int64_t k) {
  uint64_t h = (uint64_t)(uintptr_t)dev * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t)n * 0xC2B2AE3D27D4EB4Full + (uint64_t)k * 0x165667B19E3779F9ull + (uint64_t)op;
  h ^= h >> 29;
  return (size_t)h;
}

static rt_entry *find(const rt_table *t, int op, const void *dev, int64_t n, int64_t k) {
  size_t mask = t->cap - 1;
  for (size_t i = hash_key(op, dev, n, k) & mask;; i = (i + 1) & mask) {
    rt_entry *e = t->slots[i];
    if (!e) return NULL;
    if (e->n == n && e->k == k && e->dev == dev && e->op == op) return e;
  }
}

static void put(rt_table *t, rt_entry *e) {
  size_t mask = t->cap - 1;
  size_t i = hash_key(e->op, e->dev, e->n, e->k) & mask;
  while (t->slots[i]) i = (i + 1) & mask;
  t->slots[i] = e;
  t->count++;
}

static rt_table *new_table(size_t entries) {
  rt_table *t = at_xcalloc(1, sizeof *t);
  t->cap = 64;
  while (t->cap < 2 * (entries + 1)) t->cap *= 2;
  t->slots = at_xcalloc(t->cap, sizeof *t->slots);
  return t;
}

/* Publishes t in place of the current table, which is retired (mutex held). Retired tables older
 * than the grace period are freed. */
static void publish(at_runtime *rt, rt_table *t) {
  rt_table *cur = atomic_load_explicit(&rt->table, memory_order_relaxed);
  double now = at_now_s();
  cur->retired_at = now;
  t->older = cur;
  atomic_store_explicit(&rt->table, t, memory_order_release);
  for (rt_table *p = cur; p->older;) {
    rt_table *o = p->older;
    if (now - o->retired_at > TABLE_GRACE_S) {
      p->older = o->older;
      free(o->slots);
      free(o);
    } else {
      p = o;
    }
  }
}

/* ---- entries (mutex held) --------------------------------------------------------------------- */

static int device_names_of_ctx(char names[2][128], int *sm_count) {
  CUdevice d;
  if (at_cu->CtxGetDevice(&d) != CUDA_SUCCESS) return rt_fail(AT_STATUS_ERROR, "no current CUDA context");
  at_device_info info = {0};
  int major = 0, minor = 0;
  at_cu->DeviceGetName(info.name, sizeof info.name, d);
  at_cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
  at_cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
  at_cu->DeviceGetAttribute(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
  info.cc = major * 10 + minor;
  at_device_export_name(&info, 1, names[0], 128);
  at_device_export_name(&info, 0, names[1], 128);
  return AT_STATUS_OK;
}

static void open_db(at_runtime *rt) {
  if (!rt->db_path || rt->db) return;
  if (at_store_open_readonly(rt->db_path, &rt->db) != AT_OK) {
    char msg[1200];
    snprintf(msg, sizeof msg, "DB %s unusable (%s); using the next source", rt->db_path, at_errmsg());
    warn_once(msg);
  }
}

/* The lookup of an entry's key; 0 when the op is unknown. */
static int look_up(at_runtime *rt, const char *op_name, const char names[2][128], int sm_count, int64_t n, int64_t k,
                   at_lookup_result *out) {
  open_db(rt);
  at_lookup_req q = {op_name, rt->tag, {names[0], names[1][0] ? names[1] : NULL}, n, k, rt->db, rt->configs_dir, warn_once,
                     sm_count, rt->tail != AT_TAIL_ON};
  if (at_lookup(&q, out)) return rt_fail(AT_STATUS_INVALID, "%s", at_errmsg()), 0;
  return 1;
}

static rt_entry *new_entry(at_runtime *rt, int op, const void *dev, const char names[2][128], int sm_count, int64_t n,
                           int64_t k, const at_lookup_result *lookup) {
  rt_entry *e = at_xcalloc(1, sizeof *e);
  e->op = op;
  e->sm_count = sm_count;
  e->dev = dev;
  e->n = n;
  e->k = k;
  memcpy(e->names, names, sizeof e->names);
  e->lookup = *lookup;
  const at_config_set *cs = &e->lookup.set;
  for (int i = 0; i < AT_NBUCKETS + cs->nmleq; i++) {
    const at_config *c = at_config_entry(cs, i);
    if (!c) continue;
    e->params[i] = at_config_params_json(c);
    e->kernel_name[i] = at_config_name_expr(c);
    at_config_entry_name(cs, i, e->entry_name[i], sizeof e->entry_name[i]);
    int j = 0; /* entries with one config share one kernel slot */
    while (j < i && !(at_config_entry(cs, j) && at_config_same(at_config_entry(cs, j), c))) j++;
    e->slot[i] = (unsigned char)j;
  }
  rt->entries = at_xrealloc(rt->entries, sizeof *rt->entries * (rt->nentries + 1));
  rt->entries[rt->nentries++] = e;
  return e;
}

static const char *op_name_of(int op) { return op == 0 ? "gemm_a8w8_blockscale" : "?"; }

static rt_entry *make_entry(at_runtime *rt, int op, const void *dev, int is_ctx, int64_t n, int64_t k) {
  rt_table *cur = atomic_load_explicit(&rt->table, memory_order_relaxed);
  rt_entry *e = find(cur, op, dev, n, k);
  if (e) return e; /* another thread made it meanwhile */
  char names[2][128] = {"", ""};
  int sm_count = 0;
  if (is_ctx) {
    if (device_names_of_ctx(names, &sm_count)) return NULL;
  } else {
    snprintf(names[0], sizeof names[0], "%s", (const char *)dev);
  }
  at_lookup_result *r = at_xmalloc(sizeof *r); /* large (per-M configs): not on a caller's stack */
  g_warn_rt = rt;
  int ok = look_up(rt, op_name_of(op), names, sm_count, n, k, r);
  g_warn_rt = NULL;
  if (ok) e = new_entry(rt, op, dev, names, sm_count, n, k, r);
  free(r);
  if (!ok) return NULL;
  rt_table *t = new_table(cur->count + 1);
  for (size_t i = 0; i < cur->cap; i++)
    if (cur->slots[i]) put(t, cur->slots[i]);
  put(t, e);
  publish(rt, t);
  return e;
}

static rt_entry *get_entry(at_runtime *rt, int op, const void *dev, int is_ctx, int64_t n, int64_t k) {
  rt_entry *e = find(atomic_load_explicit(&rt->table, memory_order_acquire), op, dev, n, k);
  if (e) return e;
  pthread_mutex_lock(&rt->mu);
  e = make_entry(rt, op, dev, is_ctx, n, k);
  pthread_mutex_unlock(&rt->mu);
  return e;
}

/* ---- the DB watcher --------------------------------------------------------------------------- */

static void file_sig(const char *path, long long sig[3]) {
  struct stat st;
  if (stat(path, &st) == 0) {
    sig[0] = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    sig[1] = (long long)st.st_size;
    sig[2] = (long long)st.st_ino;
  } else {
    sig[0] = sig[1] = sig[2] = -1;
  }
}

static void db_sigs(const at_runtime *rt, long long sig[2][3]) {
  file_sig(rt->db_path, sig[0]);
  char *wal = at_xasprintf("%s-wal", rt->db_path);
  file_sig(wal, sig[1]);
  free(wal);
}

static int same_answer(const at_lookup_result *a, const at_lookup_result *b) {
  return a->source == b->source && strcmp(a->path, b->path) == 0 && at_config_set_same(&a->set, &b->set);
}

/* Every entry looked up again; one new table, sharing the entries whose answer is unchanged. */
static void reload(at_runtime *rt) {
  at_store_close(rt->db); /* a DB replaced on disk needs a new connection */
  rt->db = NULL;
  g_warn_rt = rt;
  rt_table *cur = atomic_load_explicit(&rt->table, memory_order_relaxed);
  rt_table *t = new_table(cur->count);
  at_lookup_result *r = at_xmalloc(sizeof *r);
  for (size_t i = 0; i < cur->cap; i++) {
    rt_entry *e = cur->slots[i];
    if (!e) continue;
    if (look_up(rt, op_name_of(e->op), (const char(*)[128])e->names, e->sm_count, e->n, e->k, r) &&
        !same_answer(r, &e->lookup))
      e = new_entry(rt, e->op, e->dev, (const char(*)[128])e->names, e->sm_count, e->n, e->k, r);
    put(t, e);
  }
  free(r);
  g_warn_rt = NULL;
  publish(rt, t);
  db_sigs(rt, rt->db_sig); /* our own opening may have touched the WAL */
}

static void *watch(void *p) {
  at_runtime *rt = p;
  pthread_mutex_lock(&rt->mu);
  while (!rt->stopping) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&rt->stop_cv, &rt->mu, &until);
    if (rt->stopping) break;
    long long sig[2][3];
    db_sigs(rt, sig);
    if (memcmp(sig, rt->db_sig, sizeof sig) != 0) {
      memcpy(rt->db_sig, sig, sizeof sig);
      reload(rt);
    }
  }
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

/* ---- open and close --------------------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? at_xstrdup(s) : NULL; }

/* An option left NULL takes the environment variable's value when it is set and non-empty: the
 * DB and configs of a process can be chosen without changing its code. */
static char *option_or_env(const char *given, const char *var) {
  if (given) return at_xstrdup(given);
  const char *v = getenv(var);
  return v && *v ? at_xstrdup(v) : NULL;
}

/* An on/off option (AT_PDL_* and AT_TAIL_* alike: 0 default, 1 off, 2 on): the option, else the
 * environment variable, else on. */
_Static_assert(AT_PDL_DEFAULT == AT_TAIL_DEFAULT && AT_PDL_OFF == AT_TAIL_OFF && AT_PDL_ON == AT_TAIL_ON,
               "the switches share their values");
static int switch_mode(int given, const char *option, const char *upper, const char *var, int *out) {
  if (given != AT_PDL_DEFAULT && given != AT_PDL_OFF && given != AT_PDL_ON)
    return rt_fail(AT_STATUS_INVALID,
                   "at_runtime_open: options->%s must be AT_%s_DEFAULT, AT_%s_OFF or AT_%s_ON (got %d)", option, upper,
                   upper, upper, given);
  int env = at_switch_env(var);
  *out = given ? given : env ? AT_PDL_ON : AT_PDL_OFF;
  if (given || env >= 0) return AT_STATUS_OK;
  return rt_fail(AT_STATUS_INVALID, "at_runtime_open: %s must be off or on (got \"%s\")", var, getenv(var));
}

int at_runtime_open(const at_runtime_options *o, at_runtime **out) {
  static _Atomic uint64_t next_serial = 1;
  if (!out) return rt_fail(AT_STATUS_INVALID, "at_runtime_open: out must not be NULL");
  *out = NULL;
  at_runtime_options none = {0};
  if (!o) o = &none;
  int pdl, tail;
  int rc = switch_mode(o->pdl, "pdl", "PDL", "AUTOTUNE_PDL", &pdl);
  if (!rc) rc = switch_mode(o->tail, "tail", "TAIL", "AUTOTUNE_TAIL", &tail);
  if (rc) return rc;
  at_runtime *rt = at_xcalloc(1, sizeof *rt);
  atomic_init(&rt->pdl, pdl);
  rt->tail = tail;
  rt->serial = atomic_fetch_add(&next_serial, 1);
  rt->db_path = option_or_env(o->db_path, "AUTOTUNE_DB");
  rt->configs_dir = option_or_env(o->configs_dir, "AUTOTUNE_CONFIGS");
  rt->tag = dup_or_null(o->tag);
  rt->templates_dir = at_xstrdup(o->templates_dir ? o->templates_dir : at_templates_dir());
  rt->cache_dir = o->cache_dir ? at_xstrdup(o->cache_dir) : at_cache_dir();
  pthread_mutex_init(&rt->mu, NULL);
  pthread_cond_init(&rt->stop_cv, NULL);
  atomic_init(&rt->table, new_table(0));
  rt->workspaces = at_ws_pool_new();
  if (rt->db_path) {
    db_sigs(rt, rt->db_sig);
    if (pthread_create(&rt->watcher, NULL, watch, rt) == 0) rt->watching = 1;
  }
  *out = rt;
  return AT_STATUS_OK;
}

void at_runtime_close(at_runtime *rt) {
  if (!rt) return;
  if (rt->watching) {
    pthread_mutex_lock(&rt->mu);
    rt->stopping = 1;
    pthread_cond_signal(&rt->stop_cv);
    pthread_mutex_unlock(&rt->mu);
    pthread_join(rt->watcher, NULL);
  }
  for (rt_table *t = atomic_load(&rt->table); t;) {
    rt_table *older = t->older;
    free(t->slots);
    free(t);
    t = older;
  }
  for (size_t i = 0; i < rt->nentries; i++) {
    for (int b = 0; b < AT_MAX_ENTRIES; b++) free(rt->entries[i]->params[b]), free(rt->entries[i]->kernel_name[b]);
    free(rt->entries[i]);
  }
  free(rt->entries);
  for (rt_kernel *k = rt->kernels; k;) {
    rt_kernel *next = k->next;
    if (k->mod && k->owns_module && at_ctx_alive(&k->ctx)) at_cu->ModuleUnload(k->mod); /* else gone with it */
    free(k->name_expr);
    free(k->error);
    free(k);
    k = next;
  }
  at_ws_pool_free(rt->workspaces);
  for (int i = 0; i < atomic_load(&rt->ndevnames); i++) free(rt->devnames[i]);
  for (rt_ctx_key *c = atomic_load(&rt->ctx_keys); c;) {
    rt_ctx_key *next = c->next;
    free(c);
    c = next;
  }
  for (int i = 0; i < rt->nwarned; i++) free(rt->warned[i]);
  at_store_close(rt->db);
  pthread_cond_destroy(&rt->stop_cv);
  pthread_mutex_destroy(&rt->mu);
  free(rt->db_path), free(rt->configs_dir), free(rt->tag), free(rt->templates_dir), free(rt->cache_dir);
  free(rt);
}

/* ---- select ----------------------------------------------------------------------------------- */

static const char *intern_device(at_runtime *rt, const char *name) {
  int n = atomic_load_explicit(&rt->ndevnames, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (strcmp(rt->devnames[i], name) == 0) return rt->devnames[i];
  pthread_mutex_lock(&rt->mu);
  const char *r = NULL;
  n = atomic_load_explicit(&rt->ndevnames, memory_order_relaxed);
  for (int i = 0; i < n && !r; i++)
    if (strcmp(rt->devnames[i], name) == 0) r = rt->devnames[i];
  if (!r && n < MAX_DEVNAMES) {
    rt->devnames[n] = at_xstrdup(name);
    r = rt->devnames[n];
    atomic_store_explicit(&rt->ndevnames, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return r;
}

/* The current context instance, and its key for the entry table. */
static int current_ctx(at_runtime *rt, at_ctx_ref *ctx, const void **key) {
  const at_cuda_api *cu;
  if (at_cuda_load(&cu) || at_ctx_current(ctx)) return rt_fail(AT_STATUS_ERROR, "%s", at_errmsg());
  static _Thread_local uint64_t tl_rt;
  static _Thread_local unsigned long long tl_id;
  static _Thread_local const rt_ctx_key *tl_key;
  if (tl_rt == rt->serial && tl_id == ctx->id) return *key = tl_key, AT_STATUS_OK;
  const rt_ctx_key *c = atomic_load_explicit(&rt->ctx_keys, memory_order_acquire);
  while (c && c->id != ctx->id) c = c->next;
  if (!c) {
    pthread_mutex_lock(&rt->mu);
    rt_ctx_key *n = atomic_load_explicit(&rt->ctx_keys, memory_order_relaxed);
    while (n && n->id != ctx->id) n = n->next;
    if (!n) {
      n = at_xcalloc(1, sizeof *n);
      n->id = ctx->id;
      n->next = atomic_load_explicit(&rt->ctx_keys, memory_order_relaxed);
      atomic_store_explicit(&rt->ctx_keys, n, memory_order_release);
    }
    pthread_mutex_unlock(&rt->mu);
    c = n;
  }
  tl_rt = rt->serial, tl_id = ctx->id, tl_key = c;
  *key = c;
  return AT_STATUS_OK;
}

/* The GEMM's N and K as the op takes them; fn names the caller in the message. */
static int check_nk(const char *fn, int64_t n, int64_t k) {
  if (n < 8 || n % 8 || n > (1 << 28))
    return rt_fail(AT_STATUS_INVALID, "%s: n must be a positive multiple of 8, at most 2^28 (got %lld)", fn, (long long)n);
  if (k < 128 || k % 128 || k > (1 << 30))
    return rt_fail(AT_STATUS_INVALID, "%s: k must be a positive multiple of 128, at most 2^30 (got %lld)", fn, (long long)k);
  return AT_STATUS_OK;
}

int at_runtime_select(at_runtime *rt, const char *op_name, int64_t m, int64_t n, int64_t k, const char *device,
                      at_selection *out) {
  if (!rt || !op_name || !out) return rt_fail(AT_STATUS_INVALID, "at_runtime_select: rt, op and out must not be NULL");
  if (m < 1 || m > (1 << 28)) return rt_fail(AT_STATUS_INVALID, "at_runtime_select: m must be from 1 to 2^28 (got %lld)", (long long)m);
  int rc = check_nk("at_runtime_select", n, k);
  if (rc) return rc;
  if (strcmp(op_name, op_name_of(0)) != 0) return rt_fail(AT_STATUS_INVALID, "at_runtime_select: unknown op '%s'", op_name);
  const void *dev;
  int is_ctx = device == NULL;
  if (is_ctx) {
    at_ctx_ref ctx;
    if ((rc = current_ctx(rt, &ctx, &dev))) return rc;
  } else {
    dev = intern_device(rt, device);
    if (!dev) return rt_fail(AT_STATUS_ERROR, "at_runtime_select: too many device names");
  }
  rt_entry *e = get_entry(rt, 0, dev, is_ctx, n, k);
  if (!e) return tl_status; /* INVALID for a lookup that failed on its input, ERROR for CUDA */
  int b;
  const at_config *c = at_config_for_m(&e->lookup.set, m, &b);
  if (!c) return rt_fail(AT_STATUS_ERROR, "%s has no config for M=%lld", e->lookup.path, (long long)m);
  out->source = AT_SOURCE_NAMES[e->lookup.source];
  out->path = e->lookup.path;
  out->bucket = e->entry_name[b];
  out->variant = c->variant;
  out->params = e->params[b];
  out->kernel = e->kernel_name[b];
  return AT_STATUS_OK;
}

/* ---- kernels (mutex held) --------------------------------------------------------------------- */

static void kernel_error(rt_kernel *k, const char *fmt, ...) AT_PRINTF(2, 3);
static void kernel_error(rt_kernel *k, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  k->error = at_xstrdup(msg);
  if (k->mod && k->owns_module) at_cu->ModuleUnload(k->mod);
  k->mod = NULL;
  k->fn = NULL;
}

/* Do two configs launch alike: one instantiation of one template, the same family and the same
 * parameter values (launch parameters included)? */
static int same_launch(const at_config *a, const at_config *b) {
  if (strcmp(a->template_name, b->template_name) != 0 || strcmp(a->family, b->family) != 0 || a->nparams != b->nparams)
    return 0;
  for (int i = 0; i < a->nparams; i++)
    if (strcmp(a->names[i], b->names[i]) != 0 || a->values[i] != b->values[i]) return 0;
  return 1;
}

/* The module and function of name_expr from template_name, loaded on the current context (ctx) into
 * k; borrowed from another entry of the registry that loaded it already. On failure k->error says
 * why. */
static void load_module(at_runtime *rt, const at_ctx_ref *ctx, rt_kernel *k, const char *arch) {
  for (rt_kernel *o = rt->kernels; o; o = o->next)
    if (o != k && o->ctx.id == ctx->id && o->fn && strcmp(o->name_expr, k->name_expr) == 0 &&
        strcmp(o->cfg.template_name, k->cfg.template_name) == 0) {
      k->mod = o->mod;
      k->fn = o->fn;
      return;
    }
  char *path = at_path_join(rt->templates_dir, k->cfg.template_name);
  at_jit_source *src = NULL;
  int rc = at_jit_source_load(path, rt->templates_dir, &src);
  free(path);
  if (rc) {
    kernel_error(k, "%s", at_errmsg());
    return;
  }
  at_jit_options o = {arch, 0, 1}; /* a cubin to load: ptxas's figures unread */
  at_jit_result r;
  rc = at_jit_compile(src, k->name_expr, &o, rt->cache_dir, &r);
  at_jit_source_free(src);
  if (rc) {
    kernel_error(k, "compiling %s: %s", k->name_expr, at_errmsg());
    at_jit_result_free(&r); /* (a failed call may have left a log) */
    return;
  }
  if (!r.ok) {
    char *line = at_jit_first_error(r.log);
    kernel_error(k, "%s does not compile for %s: %s", k->name_expr, arch, line);
    free(line);
    at_jit_result_free(&r);
    return;
  }
  /* $AUTOTUNE_DEBUG: a compile here is a call (or a prepare's load) waiting for NVRTC. */
  if (at_debug() && !r.cache_hit)
    fprintf(stderr, "autotune: debug: runtime: %s compiled for %s at its load, %.0f ms (not in the compile cache)\n",
            k->name_expr, arch, r.compile_ms);
  CUresult cr = at_cu->ModuleLoadData(&k->mod, r.cubin);
  k->owns_module = cr == CUDA_SUCCESS;
  if (cr == CUDA_SUCCESS) cr = at_cu->ModuleGetFunction(&k->fn, k->mod, r.lowered_name);
  at_jit_result_free(&r);
  if (cr != CUDA_SUCCESS) kernel_error(k, "loading %s: %s", k->name_expr, at_cu_error_name(cr));
}

/* The arch the current context's device compiles for ("sm_90a") in arch, its device in *dev; -1
 * without a current device. */
static int device_arch(CUdevice *dev_out, char arch[16]) {
  CUdevice dev;
  int major = 0, minor = 0;
  if (at_cu->CtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
  *dev_out = dev;
  at_cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  at_cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  at_arch_for_cc(major * 10 + minor, arch);
  return 0;
}

/* The kernel of a config on the current context: from the registry, or compiled (through the
 * shared cache) and loaded now. A failure is kept too, so that it is not retried on every call.
 * An entry is per config, so that configs of one instantiation that differ in launch parameters
 * each launch with their own; they share the module (load_module). */
static rt_kernel *load_kernel(at_runtime *rt, const at_op *op, const at_ctx_ref *ctx, const at_config *cfg,
                              const char *name_expr) {
  for (rt_kernel *k = rt->kernels; k; k = k->next)
    if (k->ctx.id == ctx->id && strcmp(k->name_expr, name_expr) == 0 && same_launch(&k->cfg, cfg)) return k;
  static _Atomic uint64_t next_serial = 1;
  rt_kernel *k = at_xcalloc(1, sizeof *k);
  k->serial = atomic_fetch_add(&next_serial, 1);
  k->ctx = *ctx;
  k->cfg = *cfg;
  k->name_expr = at_xstrdup(name_expr);
  k->next = rt->kernels;
  rt->kernels = k;

  CUdevice dev;
  char arch[16];
  if (device_arch(&dev, arch) != 0) return kernel_error(k, "no current CUDA device"), k;
  at_cu->DeviceGetAttribute(&k->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  load_module(rt, ctx, k, arch);
  if (k->error) return k;
  /* This config's launch protocol, and the dynamic shared memory its launch rule asks for, allowed
   * here (a module shared with another config gets the same value: it depends on the instantiation). */
  int64_t derived[8] = {0};
  const char *names[AT_MAX_PARAMS];
  at_params p = at_config_params(cfg, names);
  if (at_a8w8_plan_of(cfg->family, &p, &k->plan) != AT_OK) return kernel_error(k, "%s", at_errmsg()), k;
  CUresult cr = CUDA_SUCCESS;
  if (op->derive(cfg->family, &p, derived) == AT_OK) {
    at_params d = {op->derived, derived, at_op_count_derived(op)};
    int64_t smem = at_params_get(&d, "smem_bytes", 0);
    if (smem > 48 * 1024) cr = at_cu->FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
  }
  if (cr != CUDA_SUCCESS) kernel_error(k, "loading %s: %s", name_expr, at_cu_error_name(cr));
  return k;
}

/* ---- launch ----------------------------------------------------------------------------------- */

/* The kernel of tail config `tile` with CLUSTER_K ck on ctx (gemm_a8w8_blockscale_tail.h): the main
 * config's template with the tail's entry and parameters, kept in the entry once loaded (the
 * registry shares it between entries). A kernel that failed is returned too: its error says why. */
static rt_kernel *tail_kernel(at_runtime *rt, const at_op *op, const at_ctx_ref *ctx, rt_entry *e, const rt_kernel *main_kern,
                              int tile, int ck) {
  _Atomic(rt_kernel *) *slot = &e->tail[tile][ck - 1];
  rt_kernel *k = atomic_load_explicit(slot, memory_order_acquire);
  if (k) return k;
  pthread_mutex_lock(&rt->mu);
  k = atomic_load_explicit(slot, memory_order_relaxed);
  if (!k) {
    at_config c;
    char *name = at_a8w8_tail_config(&main_kern->cfg, tile, ck, &c) == 0 ? at_config_name_expr(&c) : NULL;
    if (!name) {
      k = at_xcalloc(1, sizeof *k); /* not reached: the parameters are the library's own */
      k->name_expr = at_xstrdup(AT_A8W8_TAIL_ENTRY);
      k->error = at_xstrdup("the tail config's parameters do not parse");
      k->next = rt->kernels; /* freed at close with the others */
      rt->kernels = k;
    } else {
      k = load_kernel(rt, op, ctx, &c, name);
    }
    free(name);
    atomic_store_explicit(slot, k, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return k;
}

/* entry_kernel's first use of a slot: loaded under the mutex (another thread may have done it). */
static rt_kernel *entry_kernel_load(at_runtime *rt, const at_op *op, const at_ctx_ref *ctx, rt_entry *e, int entry,
                                    const at_config *cfg) {
  _Atomic(rt_kernel *) *slot = &e->kernel[e->slot[entry]];
  pthread_mutex_lock(&rt->mu);
  rt_kernel *kern = atomic_load_explicit(slot, memory_order_relaxed);
  if (!kern) {
    kern = load_kernel(rt, op, ctx, cfg, e->kernel_name[entry]);
    atomic_store_explicit(slot, kern, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return kern;
}

/* The kernel of entry `entry` (a bucket or M_LEQ entry of e's config set, config cfg) on ctx: its
 * slot's, loaded on first use. A kernel that failed is returned too: its error says why. Inline:
 * on the launch path it is one atomic load once the slot is set. */
static inline rt_kernel *entry_kernel(at_runtime *rt, const at_op *op, const at_ctx_ref *ctx, rt_entry *e, int entry,
                                      const at_config *cfg) {
  rt_kernel *kern = atomic_load_explicit(&e->kernel[e->slot[entry]], memory_order_acquire);
  return kern ? kern : entry_kernel_load(rt, op, ctx, e, entry, cfg);
}

/* A tail that cannot launch leaves its calls to the main config alone: said once on stderr. */
static void tail_warn(at_runtime *rt, rt_kernel *tk) {
  if (atomic_exchange(&tk->tail_warned, 1)) return; /* the launch geometry is recomputed at every new shape */
  pthread_mutex_lock(&rt->mu);
  g_warn_rt = rt;
  char msg[1200];
  snprintf(msg, sizeof msg, "no tail launches (%s); calls run their tuned config alone",
           tk->error ? tk->error : "its launch rule failed");
  warn_once(msg);
  g_warn_rt = NULL;
  pthread_mutex_unlock(&rt->mu);
}

/* A launch with programmatic dependent launch when *pdl, retried plainly where the driver refuses
 * it: plain launches from then on (*pdl cleared, the runtime's mode turned off, said once). */
static CUresult launch_or_plain(at_runtime *rt, CUfunction fn, const at_launch *L, CUstream stream, at_kparams *kp,
                                int *pdl) {
  CUresult r = at_launch_kernel(fn, L, stream, kp, *pdl);
  if (r == CUDA_SUCCESS || !*pdl || at_launch_kernel(fn, L, stream, kp, 0) != CUDA_SUCCESS) return r;
  if (atomic_exchange(&rt->pdl, AT_PDL_OFF) == AT_PDL_ON)
    fprintf(stderr, "autotune: the driver refused programmatic dependent launch (%s); launching plainly\n",
            at_cu_error_name(r));
  *pdl = 0;
  return CUDA_SUCCESS;
}

static int aligned(const void *p, uintptr_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

int at_gemm_a8w8_blockscale(at_runtime *rt, const void *a, const float *a_scale, const void *b, const float *b_scale,
                            void *c, int64_t m, int64_t n, int64_t k, void *stream) {
  static const char *const FN = "at_gemm_a8w8_blockscale";
  if (!rt) return rt_fail(AT_STATUS_INVALID, "%s: rt is NULL", FN);
  if (!a || !aligned(a, 16)) return rt_fail(AT_STATUS_INVALID, "%s: a must be a 16-byte aligned device pointer", FN);
  if (!b || !aligned(b, 16)) return rt_fail(AT_STATUS_INVALID, "%s: b must be a 16-byte aligned device pointer", FN);
  if (!c || !aligned(c, 16)) return rt_fail(AT_STATUS_INVALID, "%s: c must be a 16-byte aligned device pointer", FN);
  if (!a_scale || !aligned(a_scale, 4)) return rt_fail(AT_STATUS_INVALID, "%s: a_scale must be a 4-byte aligned device pointer", FN);
  if (!b_scale || !aligned(b_scale, 4)) return rt_fail(AT_STATUS_INVALID, "%s: b_scale must be a 4-byte aligned device pointer", FN);
  if (m < 1 || m > (1 << 28)) return rt_fail(AT_STATUS_INVALID, "%s: m must be from 1 to 2^28 (got %lld)", FN, (long long)m);
  int rc = check_nk(FN, n, k);
  if (rc) return rc;

  static _Thread_local const at_op *op;
  if (!op) op = at_op_find(op_name_of(0));
  at_ctx_ref ctx;
  const void *key;
  rc = current_ctx(rt, &ctx, &key);
  if (rc) return rc;
  rt_entry *e = get_entry(rt, 0, key, 1, n, k);
  if (!e) return AT_STATUS_ERROR;
  int entry; /* M_LEQ_<m> of the smallest tuned M >= m, or a bucket: a read of the immutable entry */
  const at_config *cfg = at_config_for_m(&e->lookup.set, m, &entry);
  if (!cfg) return rt_fail(AT_STATUS_ERROR, "%s: no config for M=%lld in %s", FN, (long long)m, e->lookup.path);
  rt_kernel *kern = entry_kernel(rt, op, &ctx, e, entry, cfg);
  if (kern->error) return rt_fail(AT_STATUS_ERROR, "%s: %s", FN, kern->error);

  /* The launch geometry and tail of the last (kernel, shape) this thread launched: inference repeats
   * its shapes, and the op's rule (parameter lookups by name) is then skipped. */
  static _Thread_local uint64_t tl_kern;
  static _Thread_local int64_t tl_m, tl_n, tl_k;
  static _Thread_local at_launch tl_launch, tl_tail_launch;
  static _Thread_local at_a8w8_tail tl_tail;
  static _Thread_local rt_kernel *tl_tail_kern; /* NULL: no tail */
  static _Thread_local int tl_whole;              /* the plan allowed a whole-call tail (an untuned (N, K)'s config) */
  const int whole = at_source_untuned(e->lookup.source);
  if (kern->serial != tl_kern || m != tl_m || n != tl_n || k != tl_k || whole != tl_whole) {
    const char *names[AT_MAX_PARAMS];
    at_params p = at_config_params(&kern->cfg, names);
    at_shape shape = {m, n, k};
    tl_kern = 0;
    if (op->launch(kern->cfg.family, &p, &shape, kern->sm_count, &tl_launch))
      return rt_fail(AT_STATUS_ERROR, "%s: %s", FN, at_errmsg());
    tl_tail_kern = NULL;
    if (rt->tail == AT_TAIL_ON)
      at_a8w8_tail_plan(kern->cfg.family, &p, &shape, kern->sm_count, whole, &tl_tail);
    if (rt->tail == AT_TAIL_ON && tl_tail.split) {
      rt_kernel *tk = tail_kernel(rt, op, &ctx, e, kern, tl_tail.tile, tl_tail.cluster_k);
      const char *tnames[AT_MAX_PARAMS];
      at_params tp = at_config_params(&tk->cfg, tnames);
      at_shape ts = {m - tl_tail.m0, n - tl_tail.n0, k};
      /* With main_n (main_m) the main launch computes the first main_n columns (main_m rows) only:
       * its geometry is that GEMM's (made only once the tail is sure to run). A tail by rows has
       * all its clusters in its grid (at_a8w8_tail_grid), each started as SMs free. */
      at_shape ms = {tl_tail.main_m ? tl_tail.main_m : m, tl_tail.main_n ? tl_tail.main_n : n, k};
      at_launch ml = tl_launch;
      if (!tk->error && op->launch(tk->cfg.family, &tp, &ts, tk->sm_count, &tl_tail_launch) == AT_OK &&
          (!(tl_tail.main_n || tl_tail.main_m) || op->launch(kern->cfg.family, &p, &ms, kern->sm_count, &ml) == AT_OK)) {
        const int64_t all = at_a8w8_tail_grid(&tl_tail, ts.m, ts.n);
        if (all > 0) tl_tail_launch.grid[0] = (unsigned)all, tl_tail_launch.persistent = 0; /* not capped: see above */
        tl_tail_kern = tk, tl_launch = ml;
      } else {
        tail_warn(rt, tk);
      }
    }
    tl_kern = kern->serial, tl_m = m, tl_n = n, tl_k = k, tl_whole = whole;
  }
  const at_launch L = tl_launch;
  rt_kernel *const tk = tl_tail_kern;
  at_ws_lease ws = {0, 0, 0, 0};
  if (L.ws_counters && at_ws_acquire(rt->workspaces, &ctx, (CUstream)stream, L.ws_counters, L.ws_partial_bytes, &ws))
    return rt_fail(AT_STATUS_ERROR, "%s: %s", FN, at_errmsg());
  at_gemm_a8w8_blockscale_args args = {(uintptr_t)a, (uintptr_t)a_scale, (uintptr_t)b, (uintptr_t)b_scale, (uintptr_t)c,
                                       ws.partials, ws.counters, (int)m, (int)n, (int)k, (int)ws.ncounters};
  if (tk) args.unit_end = (int)tl_tail.unit_end;
  if (tk && tl_tail.main_n) args.n = (int)tl_tail.main_n, args.ldc = (int)n;
  if (tk && tl_tail.main_m) args.m = (int)tl_tail.main_m;
  /* A tail that is the whole call (unit_end 0: an untuned shape that a tail config runs faster) has
   * no main launch before it. */
  const int main_launch = !tk || tl_tail.unit_end > 0;
  at_kparams kp;
  if (main_launch && at_a8w8_kparams(&kern->plan, &args, &kp)) rc = rt_fail(AT_STATUS_ERROR, "%s: %s", FN, at_errmsg());
  int pdl = L.griddep && atomic_load_explicit(&rt->pdl, memory_order_relaxed) == AT_PDL_ON;
  CUresult r = rc || !main_launch ? CUDA_SUCCESS : launch_or_plain(rt, kern->fn, &L, (CUstream)stream, &kp, &pdl);
  if (r != CUDA_SUCCESS) rc = rt_fail(AT_STATUS_ERROR, "%s: launch failed: %s", FN, at_cu_error_name(r));
  if (tk && !rc) {
    /* The tail: C[m0:M][n0:N] from the same rows of A and weights, right after the main launch. It
     * reads at once and waits for the main launch before it exits (late_wait); alone, it waits for
     * the kernel before it first, as any call. */
    const int64_t m0 = tl_tail.m0, n0 = tl_tail.n0, kb = k / 128;
    at_gemm_a8w8_blockscale_args t = {(uintptr_t)a + (uintptr_t)(m0 * k),
                                      (uintptr_t)(a_scale + m0 * kb),
                                      (uintptr_t)b + (uintptr_t)(n0 * k),
                                      (uintptr_t)(b_scale + n0 / 128 * kb),
                                      (uintptr_t)c + (uintptr_t)((m0 * n + n0) * 2),
                                      0, 0, (int)(m - m0), (int)(n - n0), (int)k, 0};
    t.ldc = (int)n;
    t.late_wait = main_launch;
    at_kparams tkp;
    if (at_a8w8_kparams(&tk->plan, &t, &tkp))
      rc = rt_fail(AT_STATUS_ERROR, "%s: %s", FN, at_errmsg());
    else if ((r = launch_or_plain(rt, tk->fn, &tl_tail_launch, (CUstream)stream, &tkp, &pdl)) != CUDA_SUCCESS)
      rc = rt_fail(AT_STATUS_ERROR, "%s: launch of the tail failed: %s", FN, at_cu_error_name(r));
  }
  /* A graph's own memory is freed after the kernel (a free node), launched or not. */
  if (ws.graph_memory && at_ws_release(&ws, (CUstream)stream) && !rc)
    rc = rt_fail(AT_STATUS_ERROR, "%s: %s", FN, at_errmsg());
  return rc;
}

/* ---- prepare ---------------------------------------------------------------------------------- */

enum { PREPARE_MAX_M = 1 << 20 };

/* The kernels are compiled first, in threads, into the compile cache (ahead.h), then made one after
 * the other through the launch path's own loads, which find them there: 6.4 s for the Llama-3-8B
 * weights on a 16-CPU H200 host from an empty cache, 30.5 s on one CPU (docs/perf.md, "NVRTC's own
 * cache, and compiling in threads"). */
int at_runtime_prepare(at_runtime *rt, const char *op_name, int64_t n, int64_t k, int64_t m_max, int *kernels) {
  static const char *const FN = "at_runtime_prepare";
  if (kernels) *kernels = 0;
  if (!rt || !op_name) return rt_fail(AT_STATUS_INVALID, "%s: rt and op must not be NULL", FN);
  if (strcmp(op_name, op_name_of(0)) != 0) return rt_fail(AT_STATUS_INVALID, "%s: unknown op '%s'", FN, op_name);
  int rc = check_nk(FN, n, k);
  if (rc) return rc;
  if (m_max < 1 || m_max > PREPARE_MAX_M)
    return rt_fail(AT_STATUS_INVALID, "%s: m_max must be from 1 to 2^20 (got %lld)", FN, (long long)m_max);
  at_ctx_ref ctx;
  const void *key;
  if ((rc = current_ctx(rt, &ctx, &key))) return rc;
  const at_op *op = at_op_find(op_name);
  rt_entry *e = get_entry(rt, 0, key, 1, n, k);
  if (!e) return AT_STATUS_ERROR;

  /* What the calls at M = 1 .. m_max launch: the entries of the config set they take, and the
   * tails the launch path plans for them; each entry's kernel slot made once. */
  at_a8w8_calls calls;
  if (at_a8w8_calls_walk(&e->lookup.set, n, k, m_max, e->sm_count, at_source_untuned(e->lookup.source),
                         rt->tail == AT_TAIL_ON, &calls))
    return rt_fail(AT_STATUS_ERROR, "%s: %s: %s", FN, e->lookup.path, at_errmsg());
  int slot_entry[AT_MAX_ENTRIES];
  for (int i = 0; i < AT_MAX_ENTRIES; i++) slot_entry[i] = -1;
  for (int i = 0; i < AT_MAX_ENTRIES; i++)
    if (calls.entry[i] && slot_entry[e->slot[i]] < 0) slot_entry[e->slot[i]] = i;

  /* Compiled first, in threads, into the compile cache (ahead.h), each kernel not loaded yet: the
   * configs' and, for each tail, the one of the first config it was planned on (a tail whose config
   * fails to load is made from another below, and compiled then). */
  at_ahead_kernel ahead[AT_MAX_ENTRIES + 3 * 2]; /* a kernel per slot, and per tail (tile, CLUSTER_K) */
  size_t nahead = 0;
  for (int i = 0; i < AT_MAX_ENTRIES; i++)
    if (slot_entry[i] >= 0 && !atomic_load(&e->kernel[i]))
      ahead[nahead++] = (at_ahead_kernel){at_config_entry(&e->lookup.set, slot_entry[i])->template_name,
                                          at_xstrdup(e->kernel_name[slot_entry[i]])};
  for (int t = 0; t < 3; t++)
    for (int c = 0; c < 2; c++)
      for (int entry = 0; entry < AT_MAX_ENTRIES && !atomic_load(&e->tail[t][c]); entry++) {
        const at_config *cfg = at_config_entry(&e->lookup.set, entry);
        at_config tc;
        if (!calls.tail[t][c][entry] || at_a8w8_tail_config(cfg, t, c + 1, &tc) != 0) continue;
        ahead[nahead++] = (at_ahead_kernel){cfg->template_name, at_config_name_expr(&tc)};
        break;
      }
  char arch[16];
  CUdevice dev;
  if (nahead && device_arch(&dev, arch) == 0) {
    const double t0 = at_now_s();
    const int threads = at_cpu_count();
    const int compiled = at_ahead_compile(ahead, nahead, rt->templates_dir, arch, rt->cache_dir, threads);
    if (at_debug())
      fprintf(stderr, "autotune: debug: runtime: prepare N=%lld K=%lld: %d of %zu kernels compiled ahead, %.2f s, "
              "%d threads\n", (long long)n, (long long)k, compiled, nahead, at_now_s() - t0, threads);
  }
  for (size_t i = 0; i < nahead; i++) free(ahead[i].name_expr);

  /* Each made as a call would make it: compiled (or taken from the compile cache) and loaded. */
  int ready = 0;
  char error[1024] = "";
  for (int i = 0; i < AT_MAX_ENTRIES; i++) {
    if (slot_entry[i] < 0) continue;
    rt_kernel *kern = entry_kernel(rt, op, &ctx, e, slot_entry[i], at_config_entry(&e->lookup.set, slot_entry[i]));
    if (kern->error && !error[0]) snprintf(error, sizeof error, "%s", kern->error);
    ready += !kern->error;
  }
  /* A tail's kernel is made from the template of a config it was planned on (any that loaded: the
   * tail's entry and parameters are its own). A tail that cannot be made is no error: its calls
   * run the main config alone (said once at the first of them), as they would without this. */
  for (int t = 0; t < 3; t++)
    for (int c = 0; c < 2; c++)
      for (int entry = 0; entry < AT_MAX_ENTRIES; entry++) {
        if (!calls.tail[t][c][entry]) continue;
        rt_kernel *kern = entry_kernel(rt, op, &ctx, e, entry, at_config_entry(&e->lookup.set, entry));
        if (kern->error) continue; /* said above; another entry may serve */
        ready += !tail_kernel(rt, op, &ctx, e, kern, t, c + 1)->error;
        break;
      }
  if (kernels) *kernels = ready;
  if (error[0]) return rt_fail(AT_STATUS_ERROR, "%s: %s", FN, error);
  return AT_STATUS_OK;
}

/* jitproc.c: see jitproc.h.
 *
 * Invariants:
 *  - A process is used by one thread at a time (busy, under the set's mutex); its pipe carries one
 *    request at a time, and every COMPILE gets one RESULT.
 *  - sent[] lists the source hashes the process holds; it is cleared when the process is replaced,
 *    so a new process gets each source again before its first compile of it.
 *  - r is filled only from a whole RESULT frame: a death leaves it as at_jit_cache_lookup cleared it. */
#include "jitproc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "error.h"
#include "proto.h"
#include "util.h"
#include "workerproc.h"

/* ---- frames: u32, i32, f64, strings (u32 length, UINT32_MAX for NULL) and blobs ---------------- */

typedef struct wbuf {
  char *p;
  size_t n, cap;
} wbuf;

static void put(wbuf *b, const void *x, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 256;
    b->p = at_xrealloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, x, n);
  b->n += n;
}

static void put_u32(wbuf *b, uint32_t v) { put(b, &v, sizeof v); }
static void put_f64(wbuf *b, double v) { put(b, &v, sizeof v); }

static void put_str(wbuf *b, const char *s) {
  put_u32(b, s ? (uint32_t)strlen(s) : UINT32_MAX);
  if (s) put(b, s, strlen(s));
}

static void put_blob(wbuf *b, const void *p, size_t n) {
  put_u32(b, (uint32_t)n);
  if (n) put(b, p, n);
}

typedef struct rbuf {
  const char *p;
  size_t n, at;
  int bad; /* read past the end: the frame is not what the sender wrote */
} rbuf;

static const char *take(rbuf *b, size_t n) {
  if (b->bad || n > b->n - b->at) {
    b->bad = 1;
    return NULL;
  }
  const char *x = b->p + b->at;
  b->at += n;
  return x;
}

static uint32_t get_u32(rbuf *b) {
  uint32_t v = 0;
  const char *x = take(b, sizeof v);
  if (x) memcpy(&v, x, sizeof v);
  return v;
}

static double get_f64(rbuf *b) {
  double v = 0;
  const char *x = take(b, sizeof v);
  if (x) memcpy(&v, x, sizeof v);
  return v;
}

/* malloc'd, NUL-terminated; NULL for a NULL string (or a bad frame). */
static char *get_str(rbuf *b) {
  uint32_t n = get_u32(b);
  if (n == UINT32_MAX || b->bad) return NULL;
  const char *x = take(b, n);
  return x ? at_xstrndup(x, n) : NULL;
}

static void *get_blob(rbuf *b, size_t *n) {
  *n = get_u32(b);
  const char *x = take(b, *n);
  if (!x || !*n) return *n = 0, NULL;
  void *p = at_xmalloc(*n);
  memcpy(p, x, *n);
  return p;
}

/* ---- the compiler process --------------------------------------------------------------------- */

static void send_result(int fd, int rc, const at_jit_result *r) {
  wbuf b = {0};
  put_u32(&b, (uint32_t)rc);
  put_str(&b, rc ? at_errmsg() : "");
  put_u32(&b, (uint32_t)r->ok);
  put_u32(&b, (uint32_t)r->regs);
  put_u32(&b, (uint32_t)r->spill_stores);
  put_u32(&b, (uint32_t)r->spill_loads);
  put_u32(&b, (uint32_t)r->static_smem);
  put_u32(&b, (uint32_t)r->stack_bytes);
  put_f64(&b, r->compile_ms);
  put_str(&b, r->log);
  put_str(&b, r->lowered_name);
  put_str(&b, r->cubin_hash);
  put_blob(&b, r->cubin, r->ok ? r->cubin_size : 0);
  at_msg_send(fd, AT_MSG_JIT_RESULT, b.p, b.n);
  free(b.p);
}

int at_jitproc_serve(int in_fd, int out_fd) {
  at_jit_source **kept = NULL;
  size_t nkept = 0;
  int rc = at_msg_send(out_fd, AT_MSG_HELLO, NULL, 0);
  while (rc == AT_OK) {
    uint32_t type;
    void *payload;
    size_t len;
    if (at_msg_recv(in_fd, -1, &type, &payload, &len) != AT_OK) break; /* the parent is gone */
    rbuf b = {payload, len, 0, 0};
    if (type == AT_MSG_JIT_SOURCE) {
      at_jit_source *s = at_xcalloc(1, sizeof *s);
      char *hash = get_str(&b);
      s->path = get_str(&b);
      s->text = get_str(&b);
      s->nheaders = get_u32(&b);
      if (!b.bad && s->nheaders <= len) {
        s->header_names = at_xcalloc(s->nheaders ? s->nheaders : 1, sizeof(char *));
        s->header_texts = at_xcalloc(s->nheaders ? s->nheaders : 1, sizeof(char *));
        for (size_t i = 0; i < s->nheaders; i++) s->header_names[i] = get_str(&b), s->header_texts[i] = get_str(&b);
      }
      if (b.bad || !hash || strlen(hash) != 64 || !s->path || !s->text) {
        free(hash), free(payload);
        s->nheaders = s->header_names ? s->nheaders : 0;
        at_jit_source_free(s);
        rc = at_fail(AT_ERR_RUNTIME, "compiler process: a malformed source frame");
        break;
      }
      memcpy(s->hash, hash, 65);
      free(hash);
      kept = at_xrealloc(kept, sizeof *kept * (nkept + 1));
      kept[nkept++] = s;
    } else if (type == AT_MSG_JIT_COMPILE) {
      char *hash = get_str(&b), *name = get_str(&b), *arch = get_str(&b), *cache_dir = get_str(&b), *key = get_str(&b);
      int use_pch = (int)get_u32(&b);
      const at_jit_source *s = NULL;
      for (size_t i = 0; hash && i < nkept && !s; i++)
        if (strcmp(kept[i]->hash, hash) == 0) s = kept[i];
      at_jit_result r = {0};
      int crc;
      if (b.bad || !s || !arch || !key)
        crc = at_fail(AT_ERR_RUNTIME, "compiler process: a compile of %s, which it was not sent", hash ? hash : "?");
      else
        crc = at_jit_nvrtc(s, name, &(at_jit_options){arch, use_pch}, cache_dir, key, &r);
      send_result(out_fd, crc, &r);
      at_jit_result_free(&r);
      free(hash), free(name), free(arch), free(cache_dir), free(key);
    } else if (type == AT_MSG_QUIT) {
      free(payload);
      break;
    }
    free(payload);
  }
  for (size_t i = 0; i < nkept; i++) at_jit_source_free(kept[i]);
  free(kept);
  return rc;
}

/* ---- the caller's side ------------------------------------------------------------------------ */

typedef struct proc {
  at_worker w;   /* pid 0: not running */
  int busy;
  char (*sent)[65];
  size_t nsent;
} proc;

struct at_jitprocs {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  proc *procs;
  int n;
  char *exe;      /* NULL: this program */
  int nice_incr;
  int in_thread;  /* no processes: compile in the calling threads */
  int restarts;
  int warned;
};

enum { CALL_OK = 0, CALL_DIED = 1, CALL_NO_PROCESS = 2 };

/* A compiler process in pr, started now if it is not running (restart: counted as one). */
static int ensure_started(at_jitprocs *set, proc *pr, int restart) {
  if (pr->w.pid > 0) return AT_OK;
  AT_TRY(at_compiler_start(set->exe, &pr->w));
  if (set->nice_incr) setpriority(PRIO_PROCESS, (id_t)pr->w.pid, set->nice_incr);
  pr->nsent = 0;
  if (restart) {
    pthread_mutex_lock(&set->mu);
    set->restarts++;
    pthread_mutex_unlock(&set->mu);
  }
  return AT_OK;
}

static void warn_in_thread(at_jitprocs *set, const char *why) {
  pthread_mutex_lock(&set->mu);
  if (!set->warned)
    fprintf(stderr, "autotune: warning: %s; compiling in this process's threads instead (slower)\n", why);
  set->warned = 1;
  pthread_mutex_unlock(&set->mu);
}

static int send_source(proc *pr, const at_jit_source *s) {
  for (size_t i = 0; i < pr->nsent; i++)
    if (strcmp(pr->sent[i], s->hash) == 0) return AT_OK;
  wbuf b = {0};
  put_str(&b, s->hash);
  put_str(&b, s->path);
  put_str(&b, s->text);
  put_u32(&b, (uint32_t)s->nheaders);
  for (size_t i = 0; i < s->nheaders; i++) put_str(&b, s->header_names[i]), put_str(&b, s->header_texts[i]);
  int rc = at_msg_send(pr->w.to_fd, AT_MSG_JIT_SOURCE, b.p, b.n);
  free(b.p);
  if (rc == AT_OK) {
    pr->sent = at_xrealloc(pr->sent, sizeof *pr->sent * (pr->nsent + 1));
    memcpy(pr->sent[pr->nsent++], s->hash, 65);
  }
  return rc;
}

/* One compile in pr: CALL_OK (rc in *rc, r filled), CALL_DIED (pr reaped; r untouched). */
static int call(proc *pr, const at_jit_source *s, const char *name_expr, const at_jit_options *o,
                const char *cache_dir, const char *key, at_jit_result *r, int *rc) {
  wbuf b = {0};
  put_str(&b, s->hash);
  put_str(&b, name_expr);
  put_str(&b, o->arch);
  put_str(&b, cache_dir);
  put_str(&b, key);
  put_u32(&b, (uint32_t)o->use_pch);
  int st = send_source(pr, s);
  if (st == AT_OK) st = at_msg_send(pr->w.to_fd, AT_MSG_JIT_COMPILE, b.p, b.n);
  free(b.p);
  uint32_t type = 0;
  void *payload = NULL;
  size_t len = 0;
  if (st == AT_OK) st = at_msg_recv(pr->w.from_fd, -1, &type, &payload, &len);
  if (st != AT_OK || type != AT_MSG_JIT_RESULT) {
    free(payload);
    at_worker_kill(&pr->w);
    return CALL_DIED;
  }
  rbuf in = {payload, len, 0, 0};
  int crc = (int)get_u32(&in);
  char *msg = get_str(&in);
  r->ok = (int)get_u32(&in);
  r->regs = (int)get_u32(&in);
  r->spill_stores = (int)get_u32(&in);
  r->spill_loads = (int)get_u32(&in);
  r->static_smem = (int)get_u32(&in);
  r->stack_bytes = (int)get_u32(&in);
  r->compile_ms = get_f64(&in);
  r->log = get_str(&in);
  r->lowered_name = get_str(&in);
  char *hash = get_str(&in);
  r->cubin = get_blob(&in, &r->cubin_size);
  free(payload);
  if (in.bad) {
    free(msg), free(hash);
    at_jit_result_free(r);
    at_worker_kill(&pr->w);
    snprintf(pr->w.exit_reason, sizeof pr->w.exit_reason, "sent a malformed result");
    return CALL_DIED;
  }
  if (!r->log) r->log = at_xstrdup("");
  if (hash) snprintf(r->cubin_hash, sizeof r->cubin_hash, "%s", hash);
  *rc = crc ? at_fail(crc, "%s", msg ? msg : "compiler process: an error without a message") : AT_OK;
  free(msg), free(hash);
  return CALL_OK;
}

at_jitprocs *at_jitprocs_start(int n, const char *exe, int nice_incr) {
  at_jitprocs *set = at_xcalloc(1, sizeof *set);
  pthread_mutex_init(&set->mu, NULL);
  pthread_cond_init(&set->cv, NULL);
  set->exe = exe ? at_xstrdup(exe) : NULL;
  set->nice_incr = nice_incr;
  set->n = n < 1 ? 1 : n;
  set->procs = at_xcalloc((size_t)set->n, sizeof *set->procs);
  int sw = at_switch_env("AUTOTUNE_JIT_PROCESSES");
  if (sw == 0) {
    set->in_thread = 1;
    return set;
  }
  if (sw < 0)
    fprintf(stderr, "autotune: warning: AUTOTUNE_JIT_PROCESSES must be off or on (got '%s'); using on\n",
            getenv("AUTOTUNE_JIT_PROCESSES"));
  /* Started here, on the caller's thread: a child dies with the thread that made it
   * (PR_SET_PDEATHSIG), and the pool's threads end before the set does. */
  for (int i = 0; i < set->n; i++) {
    if (ensure_started(set, &set->procs[i], 0) != AT_OK) {
      if (i == 0) {
        warn_in_thread(set, at_errmsg());
        set->in_thread = 1;
        return set;
      }
      set->n = i; /* as many as started */
      break;
    }
  }
  return set;
}

static proc *take_proc(at_jitprocs *set) {
  pthread_mutex_lock(&set->mu);
  for (;;) {
    for (int i = 0; i < set->n; i++)
      if (!set->procs[i].busy) {
        set->procs[i].busy = 1;
        pthread_mutex_unlock(&set->mu);
        return &set->procs[i];
      }
    pthread_cond_wait(&set->cv, &set->mu);
  }
}

static void give_proc(at_jitprocs *set, proc *pr) {
  pthread_mutex_lock(&set->mu);
  pr->busy = 0;
  pthread_cond_signal(&set->cv);
  pthread_mutex_unlock(&set->mu);
}

int at_jitprocs_compile(at_jitprocs *set, const at_jit_source *s, const char *name_expr, const at_jit_options *o,
                        const char *cache_dir, at_jit_result *r) {
  char key[65];
  at_jit_key(s, name_expr, o, key);
  if (at_jit_cache_lookup(cache_dir, key, r)) return AT_OK;
  int rc = AT_OK, how = CALL_NO_PROCESS;
  char first[128] = "", second[128] = "";
  if (!set->in_thread) {
    proc *pr = take_proc(set);
    for (int attempt = 0; attempt < 2; attempt++) {
      if (ensure_started(set, pr, 1) != AT_OK) { /* (every process was started with the set: a restart) */
        warn_in_thread(set, at_errmsg());
        how = CALL_NO_PROCESS;
        break;
      }
      how = call(pr, s, name_expr, o, cache_dir, key, r, &rc);
      if (how == CALL_OK) break;
      snprintf(attempt ? second : first, sizeof first, "%s", pr->w.exit_reason);
    }
    give_proc(set, pr);
  }
  if (how == CALL_NO_PROCESS) rc = at_jit_nvrtc(s, name_expr, o, cache_dir, key, r);
  if (how == CALL_DIED) {
    /* Twice: the kernel's own doing, as far as can be told; its compile error, not the run's. */
    r->ok = 0;
    r->log = at_xasprintf("error: the compiler process died twice compiling this kernel (%s; then %s)\n", first, second);
    return AT_OK;
  }
  if (rc == AT_OK) at_jit_cache_store(cache_dir, key, r);
  return rc;
}

int at_jitprocs_restarts(const at_jitprocs *set) { return set->restarts; }

int at_jitprocs_pid(const at_jitprocs *set, int i) {
  return !set->in_thread && i >= 0 && i < set->n && set->procs[i].w.pid > 0 ? (int)set->procs[i].w.pid : 0;
}

void at_jitprocs_stop(at_jitprocs *set) {
  if (!set) return;
  for (int i = 0; i < set->n; i++) {
    at_worker_stop(&set->procs[i].w);
    free(set->procs[i].sent);
  }
  free(set->procs);
  free(set->exe);
  pthread_mutex_destroy(&set->mu);
  pthread_cond_destroy(&set->cv);
  free(set);
}

/* compile.h: the compile phase of a tuning run: every distinct kernel of the enumerated candidates
 * compiled once (thread pool, disk cache), each candidate's outcome written to the DB as its kernel
 * finishes, so a killed run resumes where it stopped. A candidate already in the DB (same candidate
 * key) is not compiled again, a failed compile included, unless the run is --fresh.
 *
 * Kernels and candidates: candidates that differ only in launch parameters (space.h) have one
 * compile key, so one kernel. It is compiled once per run; each of its candidates takes that
 * compile's outcome (ok or failed, resources, log) into a DB row of its own, under its own key.
 *
 * Compiles are handed out in a fixed spread order (a stride through the kernels), so that the
 * first outcomes sample every variant and the whole parameter grid. With a feed, a GPU phase
 * running beside this one (tune.h) hears of every candidate's outcome as soon as it is in the DB,
 * those known from the DB first, before anything is compiled; the compile threads never wait for
 * it. */
#ifndef AT_COMPILE_H
#define AT_COMPILE_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "enumerate.h"
#include "jit.h"
#include "space.h"
#include "store.h"

typedef struct at_compiled {
  int64_t cand_id;  /* row in candidates, -1 when the run stopped before it */
  int done;         /* has an outcome */
  int ok;           /* compiled */
  int usable;       /* ok and within the device's register budget */
  int regs, spill_stores, spill_loads;
  char key[65];        /* the candidate's key: its identity in the DB (jit.h, at_cand_key) */
  char kernel_key[65]; /* its kernel's compile key: the cubin in the cache */
  size_t kernel;       /* its kernel: the index of the first candidate with the same kernel_key */
} at_compiled;

typedef struct at_failure {
  char *first_line; /* the first error line of the log */
  char *example;    /* the candidate it came from */
  int64_t count;
} at_failure;

typedef struct at_compile_stats {
  int64_t kernels;          /* distinct kernels (compile keys) among the candidates */
  int64_t compiled_now;     /* kernels NVRTC compiled */
  int64_t cache_hits;       /* kernels found in the disk cache */
  int64_t db_hits;          /* candidates known from an earlier run in the DB */
  int64_t cache_repaired;   /* damaged cache entries rebuilt */
  int64_t ok, failed;       /* candidates' outcomes, this run and earlier ones */
  int64_t pruned_registers; /* compiled but over the register budget of a block */
  double compile_ms_sum;    /* NVRTC time of the compiles this run did */
  int warned_cache;         /* the cache-not-writable warning was given */
  double wall_s;
  at_failure *failures;
  size_t nfailures;
} at_compile_stats;

/* Where the outcomes go as they come, for a GPU phase that starts on them (tune.h). */
typedef struct at_compile_feed {
  /* cand's outcome is final and in the DB (compiled, failed, or known from an earlier run). Called
   * on the compile phase's own thread, db_mu not held. */
  void (*outcome)(void *ctx, size_t cand, const at_compiled *c);
  /* In place of the compile phase's own progress display: done of total kernels to compile, with
   * what the display would show after the numbers; final is set once, at the end. */
  void (*progress)(void *ctx, int64_t done, int64_t total, const char *extra, int final);
  pthread_mutex_t *db_mu; /* held around each DB call: the GPU phase writes the same DB */
  void *ctx;
} at_compile_feed;

typedef struct at_compile_job {
  const at_space *space;
  const at_enum *cands;
  const at_limits *limits;
  at_store *db;
  int64_t run_id;
  const int64_t *variant_ids; /* DB id of each variant */
  at_jit_source **sources;    /* one per variant */
  at_jit_options opts;
  const char *cache_dir;
  int jobs;
  int fresh;
  volatile sig_atomic_t *stop; /* set by a signal: finish what runs, start nothing new */
  const at_compile_feed *feed; /* NULL: the compile phase runs alone */
} at_compile_job;

/* Loads every variant's template with its headers; variant_ids is allocated for the caller to fill
 * with the variants' DB ids. Fails (AT_ERR_INPUT) on a missing include. */
int at_compile_prepare(const at_space *s, at_jit_source ***sources, int64_t **variant_ids);
/* Frees what at_compile_prepare made (also after it failed part way); NULLs are fine. */
void at_compile_unprepare(const at_space *s, at_jit_source **sources, int64_t *variant_ids);

int at_compile_all(const at_compile_job *job, at_compiled **out, at_compile_stats *stats);

/* Every candidate's keys and kernel (res[i].key, kernel_key, kernel; res has e->n entries) under
 * the options; returns the number of distinct kernels. sources: one per variant. */
size_t at_compile_kernels(const at_enum *e, at_jit_source *const *sources, const at_jit_options *opts, at_compiled *res);
void at_compile_stats_free(at_compile_stats *st);

#endif

/* store.h: the SQLite store of everything a tuning run learns (schema: docs/formats.md).
 *
 * Invariants:
 *  - The schema version is PRAGMA user_version; a DB from a newer autotune is refused, an older one
 *    is migrated when opened for writing and read as it is (readers use no column added since).
 *  - WAL mode, synchronous=NORMAL: a crash or SIGKILL loses at most the transaction in flight,
 *    never corrupts the file.
 *  - Each finished piece of work (one compile, one result, one run's pruning counts) is its own
 *    transaction, opened with BEGIN IMMEDIATE and retried on SQLITE_BUSY, so several tuners can
 *    share one DB file and a killed run keeps everything it finished.
 *  - Rows are keyed by content (compile key, problem, device), so re-running finds its work.
 *  - What is read back is not trusted to match the schema: a NULL where the schema says NOT NULL
 *    (a schema edited by hand) is a "corrupt DB" failure, never a crash. */
#ifndef AT_STORE_H
#define AT_STORE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define AT_STORE_SCHEMA_VERSION 4
#define AT_STORE_SCHEMA_OLDEST_READ 1 /* at_store_open_readonly accepts versions from this one */

typedef struct at_store at_store;

/* Opens (creating the file, its directory and the schema when missing). */
int at_store_open(const char *path, at_store **out);
/* Opens an existing DB read-only; fails when it is missing or not an autotune DB. */
int at_store_open_readonly(const char *path, at_store **out);
void at_store_close(at_store *s);
const char *at_store_path(const at_store *s);

/* Waiting for another writer's lock. A DB opened for writing waits up to 100 minutes (several
 * tuners may share one file), one opened read-only 10 s. The wait is SQLite's busy handler, and it
 * ends as soon as *stop is set (a Ctrl-C): the write then fails with "interrupted while waiting for
 * another writer's lock" and at_store_lock_interrupted() says so. stop may be NULL. */
void at_store_set_stop(at_store *s, volatile sig_atomic_t *stop);
void at_store_set_lock_wait(at_store *s, double seconds);
int at_store_lock_interrupted(const at_store *s);

typedef struct at_run_info {
  const char *space_path, *space_hash, *op, *tag, *arch, *nvrtc, *command;
  const char *shard; /* "I/N" for a run of one shard (shard.h), NULL otherwise */
} at_run_info;

int at_store_begin_run(at_store *s, const at_run_info *info, int64_t *run_id);
int at_store_end_run(at_store *s, int64_t run_id, const char *status);

/* Finds or adds a template variant, and marks it used by run_id (> 0): export trusts the version of
 * each variant that the latest run used. */
int at_store_variant(at_store *s, const char *op, const char *name, const char *family, const char *template_path,
                     const char *entry, const char *source_hash, int64_t run_id, int64_t *id);

typedef struct at_cand_row {
  int64_t id;
  const char *compile_key;
  int64_t variant_id;
  const char *params, *name_expr, *arch;
  int ok;           /* compiled; 0 = compile_error */
  const char *log;  /* excerpt */
  const char *lowered_name;
  int regs, spill_stores, spill_loads, static_smem, stack_bytes;
  int64_t threads, smem_bytes;
  double compile_ms;
  const char *cubin_hash;
  int quarantined;
  int64_t run_id;
} at_cand_row;

/* Looks a candidate up by compile key. *found = 0 when absent. The strings in row stay valid
 * until the next call on the store. */
int at_store_find_candidate(at_store *s, const char *compile_key, at_cand_row *row, int *found);
/* Inserts a compiled (or failed) candidate; *id is its row id. */
int at_store_put_candidate(at_store *s, const at_cand_row *row, int64_t *id);
int at_store_quarantine(at_store *s, int64_t candidate_id);
int at_store_candidate_quarantined(at_store *s, int64_t candidate_id, int *quarantined);

typedef struct at_prune_row {
  int64_t variant_id;
  const char *rule;
  int per_shape;
  int64_t count;
} at_prune_row;
int at_store_put_pruned(at_store *s, int64_t run_id, const at_prune_row *rows, int n);

int at_store_problem(at_store *s, const char *op, const char *tag, int64_t m, int64_t n, int64_t k, int64_t *id);

typedef struct at_device_row {
  const char *name, *arch, *uuid, *driver;
  int cc, sm_count;
  int64_t l2_bytes, smem_per_block, mem_bytes;
} at_device_row;
int at_store_device(at_store *s, const at_device_row *d, int64_t *id);
int at_store_run_device(at_store *s, int64_t run_id, int64_t device_id, double peak_tflops, double peak_gbs);

typedef struct at_result_row {
  int64_t candidate_id, problem_id, device_id, run_id;
  const char *status; /* ok wrong fault timeout resources quarantined */
  double time_us, time_min_us, time_max_us;
  int samples, cut, sets;
  double tflops, gbs, roofline_pct;
  int occupancy;
  double max_abs_err;
  int64_t bad_count, first_bad;
  const char *message;
  int64_t seed;
  double check_ratio; /* worst |out - ref| / bound of its checks; < 0: not checked (NULL) */
} at_result_row;

/* Replaces any earlier result of the same (candidate, problem, device). */
int at_store_put_result(at_store *s, const at_result_row *r);
/* *status gets the stored status ("" when none), *time_us its time; strings valid until the next
 * call. */
int at_store_get_result(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, const char **status,
                        double *time_us);
int at_store_set_retime(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, double retime_us);
/* When the candidate has no result on (problem, device) and another candidate of the same op and
 * family compiled to the same cubin (same hash) and is launched the same way (params, entry, arch,
 * threads, dynamic shared memory), copies that one's result to it (a measured row before an
 * adopted one, then the newest), run_id set to run_id (<= 0: none) and the message naming the
 * candidate and run it was measured in (an adopted row's kept as it is): *adopted = 1. A read
 * first; a write transaction only when there is a row to copy.
 * Identity stays content (the compile key); this only spares re-timing machine code already
 * timed, e.g. after a template edit that touched comments alone. */
int at_store_adopt_result(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, int64_t run_id,
                          int *adopted);
/* *has = 1 when the candidate has such a twin at all (results aside): the tuner asks once per
 * candidate, and tries at_store_adopt_result only for those (one read, indexed by cubin). */
int at_store_has_twin(at_store *s, int64_t candidate_id, int *has);

/* What a winner was decided on (winners.basis): the tuner's side-by-side timing of the leaders alone
 * (at_store_put_winner; NULL in a DB of before schema 4 means the same), or their times as the runtime
 * launches them, tail included (`autotune judge`, at_store_put_judgement). winners.time_us is the
 * winner's time alone either way (its re-timed median where it has one), so that winners of either
 * basis compare (merge); the launched times are in the table launches. */
#define AT_BASIS_ALONE "alone"
#define AT_BASIS_LAUNCHED "launched"

int at_store_put_winner(at_store *s, int64_t problem_id, int64_t device_id, int64_t candidate_id, double time_us,
                        int64_t run_id);

/* One candidate's config launched through the runtime library on a problem (`autotune judge`). */
typedef struct at_launch_row {
  int64_t candidate_id, problem_id, device_id, run_id;
  const char *status; /* the compare worker's: ok wrong none error fault */
  double time_us, time_min_us, time_max_us; /* 0: not timed (NULL) */
  int samples;
  double check_ratio; /* < 0: not checked (NULL) */
  const char *plan;   /* what the runtime launched: the kernel and its tail, if any */
  const char *message;
} at_launch_row;
/* rows (one problem and device, n >= 1) replace every earlier launch of it, and, when winner >= 0, the
 * problem's winner becomes that candidate with basis "launched" and time winner_us (its time alone):
 * one transaction. */
int at_store_put_judgement(at_store *s, const at_launch_row *rows, int n, int64_t winner, double winner_us);

/* The recorded winner of a problem (candidate -1 when none) and a baseline's time (0 when none). */
int at_store_get_winner(at_store *s, int64_t problem_id, int64_t device_id, int64_t *candidate_id, double *time_us);
int at_store_get_baseline(at_store *s, int64_t problem_id, int64_t device_id, const char *name, double *time_us);
int at_store_put_baseline(at_store *s, int64_t problem_id, int64_t device_id, int64_t run_id, const char *name,
                          double time_us);
/* The same, with the baseline's worst error / bound in the check (< 0: not checked). */
int at_store_put_baseline_checked(at_store *s, int64_t problem_id, int64_t device_id, int64_t run_id, const char *name,
                                  double time_us, double check_ratio);

/* ---- reading what was tuned (export, query, runtime) ---- */

/* The ids of the candidates whose results are trusted: not quarantined, of the version of each
 * variant (op, name) that the latest run used (ties, which only tests make, to the higher id). An
 * SQL text for `IN (...)` (docs/formats.md, "What export trusts"). */
#define AT_STORE_CURRENT_CANDIDATES                                                                                   \
  "SELECT c.id FROM candidates c JOIN variants v ON v.id=c.variant_id WHERE c.quarantined=0 AND NOT EXISTS"           \
  " (SELECT 1 FROM variants w WHERE w.op=v.op AND w.name=v.name AND (coalesce(w.last_run,0) > coalesce(v.last_run,0)" \
  " OR (coalesce(w.last_run,0) = coalesce(v.last_run,0) AND w.id > v.id)))"

typedef struct at_device_entry {
  int64_t id;
  char name[128];
  char arch[16];
  int cc;
} at_device_entry;
int at_store_devices(at_store *s, at_device_entry **out, size_t *n);

typedef struct at_tuned_nk {
  char op[64], tag[64];
  int64_t n, k;
} at_tuned_nk;
/* The distinct (op, tag, N, K) with checked results on a device; op NULL for all ops. */
int at_store_tuned_nks(at_store *s, const char *op, int64_t device_id, at_tuned_nk **out, size_t *n);

typedef struct at_tuned_row {
  int64_t m, candidate_id;
  double time_us;  /* its first timing */
  double alone_us; /* its re-timed median where it was re-timed, else time_us */
  int winner;      /* the winner of its M */
} at_tuned_row;
/* Every checked (ok) result of one (op, tag, N, K) on a device, from the newest version of each
 * template variant only: results of a template that has changed since are stale. */
int at_store_tuned_rows(at_store *s, const char *op, const char *tag, int64_t device_id, int64_t n, int64_t k,
                        at_tuned_row **out, size_t *count);

/* The SM count recorded for a device; 0 when unknown. */
int at_store_device_sm_count(at_store *s, int64_t device_id, int *out);

struct at_config;
/* The configuration of a candidate: its variant's instantiation rule and its parameters. */
int at_store_candidate_config(at_store *s, int64_t candidate_id, struct at_config *out);

/* Runs one SQL statement with no result rows (for tests and maintenance). */
int at_store_exec(at_store *s, const char *sql);
/* The single integer a query returns (for tests and summaries); *out = -1 when no row. */
int at_store_query_int(at_store *s, const char *sql, int64_t *out);

/* The raw handle, for the export and runtime queries that live in their own files. */
struct sqlite3 *at_store_db(at_store *s);
/* Runs fn inside BEGIN IMMEDIATE ... COMMIT, retrying on SQLITE_BUSY. */
int at_store_tx(at_store *s, int (*fn)(at_store *s, void *ctx), void *ctx);

#endif

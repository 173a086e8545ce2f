/* store_report.c: see store_report.h. One SELECT per table, each row copied out; a NULL number
 * reads as -1 and a NULL text as "". */
#include "store_report.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct reader {
  at_store *s;
  sqlite3_stmt *st;
} reader;

static double num(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_double(st, i);
}
static int64_t integer(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}
static const char *text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? (const char *)t : "";
}
static void copy(char *dst, size_t n, sqlite3_stmt *st, int i) { snprintf(dst, n, "%s", text(st, i)); }

/* Runs sql and calls row() for each row into a growing array of `size`-byte elements. */
static int read_all(at_store *s, const char *sql, size_t size, void **arr, size_t *n,
                    void (*row)(sqlite3_stmt *st, void *elem)) {
  sqlite3 *db = at_store_db(s);
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return at_fail_api("SQLite", "report query", __FILE__, __LINE__, rc, sqlite3_errstr(rc), sqlite3_errmsg(db));
  size_t cap = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      *arr = at_xrealloc(*arr, size * cap);
    }
    void *e = (char *)*arr + size * *n;
    memset(e, 0, size);
    row(st, e);
    (*n)++;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return at_fail_api("SQLite", "report query", __FILE__, __LINE__, rc, sqlite3_errstr(rc), sqlite3_errmsg(db));
  return AT_OK;
}

static void device_row(sqlite3_stmt *st, void *p) {
  at_rep_device *d = p;
  d->id = integer(st, 0);
  copy(d->name, sizeof d->name, st, 1);
  copy(d->arch, sizeof d->arch, st, 2);
  d->cc = (int)integer(st, 3);
  d->sm_count = (int)integer(st, 4);
  d->smem_per_block = integer(st, 5);
}

static void problem_row(sqlite3_stmt *st, void *p) {
  at_rep_problem *q = p;
  q->id = integer(st, 0);
  copy(q->op, sizeof q->op, st, 1);
  copy(q->tag, sizeof q->tag, st, 2);
  q->m = integer(st, 3), q->n = integer(st, 4), q->k = integer(st, 5);
}

static void candidate_row(sqlite3_stmt *st, void *p) {
  at_rep_candidate *c = p;
  c->id = integer(st, 0);
  c->variant = at_xstrdup(text(st, 1));
  c->family = at_xstrdup(text(st, 2));
  c->params = at_xstrdup(text(st, 3));
  c->name_expr = at_xstrdup(text(st, 4));
  c->compiled = strcmp(text(st, 5), "ok") == 0;
  c->regs = (int)integer(st, 6), c->spill_stores = (int)integer(st, 7), c->spill_loads = (int)integer(st, 8);
  c->static_smem = (int)integer(st, 9), c->stack_bytes = (int)integer(st, 10);
  c->threads = integer(st, 11), c->smem_bytes = integer(st, 12);
  c->quarantined = integer(st, 13) > 0;
  c->current = integer(st, 14) > 0;
}

static void result_row(sqlite3_stmt *st, void *p) {
  at_rep_result *r = p;
  r->candidate_id = integer(st, 0), r->problem_id = integer(st, 1), r->device_id = integer(st, 2);
  r->run_id = integer(st, 3);
  copy(r->status, sizeof r->status, st, 4);
  r->time_us = num(st, 5), r->time_min_us = num(st, 6), r->time_max_us = num(st, 7), r->retime_us = num(st, 8);
  r->tflops = num(st, 9), r->gbs = num(st, 10), r->roofline_pct = num(st, 11), r->check_ratio = num(st, 12);
  r->max_abs_err = num(st, 13);
  r->samples = integer(st, 14), r->cut = integer(st, 15), r->occupancy = integer(st, 16), r->bad_count = integer(st, 17);
  r->message = at_xstrdup(text(st, 18));
}

static void winner_row(sqlite3_stmt *st, void *p) {
  at_rep_winner *w = p;
  w->problem_id = integer(st, 0), w->device_id = integer(st, 1), w->candidate_id = integer(st, 2);
  w->time_us = num(st, 3);
  copy(w->basis, sizeof w->basis, st, 4);
  w->launched_us = num(st, 5);
}

static void baseline_row(sqlite3_stmt *st, void *p) {
  at_rep_baseline *b = p;
  b->problem_id = integer(st, 0), b->device_id = integer(st, 1);
  copy(b->name, sizeof b->name, st, 2);
  b->time_us = num(st, 3), b->check_ratio = num(st, 4);
}

static void pruned_row(sqlite3_stmt *st, void *p) {
  at_rep_pruned *r = p;
  r->run_id = integer(st, 0);
  copy(r->tag, sizeof r->tag, st, 1);
  copy(r->variant, sizeof r->variant, st, 2);
  copy(r->rule, sizeof r->rule, st, 3);
  r->per_shape = integer(st, 4) > 0;
  r->count = integer(st, 5);
}

static void run_row(sqlite3_stmt *st, void *p) {
  at_rep_run *r = p;
  r->id = integer(st, 0), r->device_id = integer(st, 1);
  copy(r->tag, sizeof r->tag, st, 2);
  copy(r->status, sizeof r->status, st, 3);
  copy(r->started, sizeof r->started, st, 4);
  r->peak_tflops = num(st, 5), r->peak_gbs = num(st, 6);
}

int at_store_report_load(at_store *s, at_report_data *d) {
  memset(d, 0, sizeof *d);
  int64_t version;
  AT_TRY(at_store_query_int(s, "PRAGMA user_version", &version));
  d->schema_version = (int)version;
  /* check_ratio came with version 2: an older DB has no such column. */
  const char *ratio = version >= 2 ? "r.check_ratio" : "NULL";
  char *results_sql = at_xasprintf(
      "SELECT r.candidate_id, r.problem_id, r.device_id, r.run_id, r.status, r.time_us, r.time_min_us, r.time_max_us,"
      " r.retime_us, r.tflops, r.gbs, r.roofline_pct, %s, r.max_abs_err, r.samples, r.cut, r.occupancy, r.bad_count,"
      " r.message FROM results r ORDER BY r.device_id, r.problem_id, r.candidate_id",
      ratio);
  /* winners.basis and launches came with version 4 (`autotune judge`). */
  const char *winners_sql =
      version >= 4 ? "SELECT w.problem_id, w.device_id, w.candidate_id, w.time_us, coalesce(w.basis, 'alone'), l.time_us"
                     " FROM winners w LEFT JOIN launches l ON l.candidate_id = w.candidate_id AND"
                     " l.problem_id = w.problem_id AND l.device_id = w.device_id AND l.status = 'ok' AND"
                     " w.basis = 'launched'"
                     " ORDER BY w.problem_id, w.device_id"
                   : "SELECT problem_id, device_id, candidate_id, time_us, 'alone', NULL FROM winners"
                     " ORDER BY problem_id, device_id";
  char *baselines_sql = at_xasprintf("SELECT problem_id, device_id, name, time_us, %s FROM baselines ORDER BY problem_id,"
                                     " device_id, name", version >= 2 ? "check_ratio" : "NULL");
  int rc = read_all(s, "SELECT id, name, arch, cc, sm_count, smem_per_block FROM devices ORDER BY id", sizeof *d->devices,
                    (void **)&d->devices, &d->ndevices, device_row);
  if (rc == AT_OK)
    rc = read_all(s, "SELECT id, op, tag, m, n, k FROM problems ORDER BY id", sizeof *d->problems,
                  (void **)&d->problems, &d->nproblems, problem_row);
  if (rc == AT_OK)
    rc = read_all(s,
                  "SELECT c.id, v.name, v.family, c.params, c.name_expr, c.status, c.regs, c.spill_stores,"
                  " c.spill_loads, c.static_smem, c.stack_bytes, c.threads, c.smem_bytes, c.quarantined,"
                  " c.id IN (" AT_STORE_CURRENT_CANDIDATES ")"
                  " FROM candidates c JOIN variants v ON v.id = c.variant_id ORDER BY c.id",
                  sizeof *d->candidates, (void **)&d->candidates, &d->ncandidates, candidate_row);
  if (rc == AT_OK)
    rc = read_all(s, results_sql, sizeof *d->results, (void **)&d->results, &d->nresults, result_row);
  if (rc == AT_OK)
    rc = read_all(s, winners_sql, sizeof *d->winners, (void **)&d->winners, &d->nwinners, winner_row);
  if (rc == AT_OK)
    rc = read_all(s, baselines_sql, sizeof *d->baselines, (void **)&d->baselines, &d->nbaselines, baseline_row);
  if (rc == AT_OK)
    rc = read_all(s,
                  "SELECT p.run_id, coalesce(r.tag, ''), v.name, p.rule, p.per_shape, p.count FROM pruned p"
                  " JOIN variants v ON v.id = p.variant_id LEFT JOIN runs r ON r.id = p.run_id"
                  " ORDER BY p.run_id DESC, v.name, p.per_shape, p.rowid",
                  sizeof *d->pruned, (void **)&d->pruned, &d->npruned, pruned_row);
  if (rc == AT_OK)
    rc = read_all(s, "SELECT id, device_id, tag, status, started, peak_tflops, peak_gbs FROM runs ORDER BY id",
                  sizeof *d->runs, (void **)&d->runs, &d->nruns, run_row);
  free(results_sql);
  free(baselines_sql);
  if (rc) at_report_data_free(d);
  return rc;
}

void at_report_data_free(at_report_data *d) {
  for (size_t i = 0; i < d->ncandidates; i++) {
    at_rep_candidate *c = &d->candidates[i];
    free(c->variant), free(c->family), free(c->params), free(c->name_expr);
  }
  for (size_t i = 0; i < d->nresults; i++) free(d->results[i].message);
  free(d->devices), free(d->problems), free(d->candidates), free(d->results), free(d->winners);
  free(d->baselines), free(d->pruned), free(d->runs);
  memset(d, 0, sizeof *d);
}

/* Binary search over an array sorted by the int64 at the start of each element. */
static const void *by_id(const void *arr, size_t n, size_t size, int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int64_t v = *(const int64_t *)((const char *)arr + mid * size);
    if (v == id) return (const char *)arr + mid * size;
    if (v < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const at_rep_candidate *at_rep_candidate_of(const at_report_data *d, int64_t id) {
  return by_id(d->candidates, d->ncandidates, sizeof *d->candidates, id);
}
const at_rep_problem *at_rep_problem_of(const at_report_data *d, int64_t id) {
  return by_id(d->problems, d->nproblems, sizeof *d->problems, id);
}
const at_rep_device *at_rep_device_of(const at_report_data *d, int64_t id) {
  return by_id(d->devices, d->ndevices, sizeof *d->devices, id);
}

const at_rep_winner *at_rep_winner_of(const at_report_data *d, int64_t problem_id, int64_t device_id) {
  for (size_t i = 0; i < d->nwinners; i++)
    if (d->winners[i].problem_id == problem_id && d->winners[i].device_id == device_id) return &d->winners[i];
  return NULL;
}

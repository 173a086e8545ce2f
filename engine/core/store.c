/* store.c: SQL and nothing else; see store.h for the invariants and docs/formats.md for the
 * schema. */
#include "store.h"

#include <signal.h>
#include <stdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "util.h"

struct at_store {
  sqlite3 *db;
  char *path;
  sqlite3_stmt *last; /* the statement whose strings a find/get call returned */
  volatile sig_atomic_t *stop; /* set by a signal: stop waiting for another writer's lock */
  double lock_wait_s;          /* the longest wait for another writer's lock */
  double busy_since;           /* when the current wait began */
  int lock_interrupted;        /* a wait ended because *stop was set */
};

/* Waiting for another writer's lock: the default for a DB the tuner writes (several tuners may
 * share one file, each transaction is short, but one may be stopped in a debugger or a shell may
 * hold a transaction open), and for one opened read-only. */
enum { LOCK_WAIT_WRITER_S = 6000, LOCK_WAIT_READER_S = 10 };

static int sql_fail(at_store *s, const char *what, int rc, const char *file, int line) {
  return at_fail_api("SQLite", what, file, line, rc, sqlite3_errstr(rc), s->db ? sqlite3_errmsg(s->db) : "");
}
#define SQL_CHECK(s, expr)                                                                                             \
  do {                                                                                                                 \
    int sql_rc_ = (expr);                                                                                              \
    if (sql_rc_ != SQLITE_OK && sql_rc_ != SQLITE_DONE && sql_rc_ != SQLITE_ROW)                                      \
      return sql_fail(s, #expr, sql_rc_, __FILE__, __LINE__);                                                          \
  } while (0)

/* The times of candidates launched as the runtime launches them (`autotune judge`), tail included:
 * its own table, so that the tuner's results stay what the tuner measured. */
#define LAUNCHES_TABLE                                                                                                 \
  "CREATE TABLE IF NOT EXISTS launches("                                                                               \
  "  candidate_id INTEGER NOT NULL REFERENCES candidates(id), problem_id INTEGER NOT NULL REFERENCES problems(id),"    \
  "  device_id INTEGER NOT NULL REFERENCES devices(id), run_id INTEGER REFERENCES runs(id),"                           \
  "  status TEXT NOT NULL, time_us REAL, time_min_us REAL, time_max_us REAL, samples INTEGER, check_ratio REAL,"       \
  "  plan TEXT, message TEXT, created TEXT NOT NULL, PRIMARY KEY(candidate_id, problem_id, device_id));"

static const char *SCHEMA =
    "CREATE TABLE IF NOT EXISTS devices("
    "  id INTEGER PRIMARY KEY, name TEXT NOT NULL, arch TEXT NOT NULL, cc INTEGER NOT NULL,"
    "  sm_count INTEGER, l2_bytes INTEGER, smem_per_block INTEGER, mem_bytes INTEGER, uuid TEXT, driver TEXT,"
    "  UNIQUE(name, arch));"
    "CREATE TABLE IF NOT EXISTS runs("
    "  id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,"
    "  space_path TEXT, space_hash TEXT, op TEXT, tag TEXT, arch TEXT, nvrtc TEXT, host TEXT, command TEXT,"
    "  device_id INTEGER REFERENCES devices(id), peak_tflops REAL, peak_gbs REAL, uid TEXT, shard TEXT);"
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_uid ON runs(uid);"
    "CREATE TABLE IF NOT EXISTS run_sources("
    "  run_id INTEGER NOT NULL REFERENCES runs(id), db TEXT NOT NULL, PRIMARY KEY(run_id, db));"
    "CREATE TABLE IF NOT EXISTS variants("
    "  id INTEGER PRIMARY KEY, op TEXT NOT NULL, name TEXT NOT NULL, family TEXT NOT NULL, template TEXT NOT NULL,"
    "  entry TEXT NOT NULL, source_hash TEXT NOT NULL, last_run INTEGER,"
    "  UNIQUE(op, name, family, entry, source_hash));"
    "CREATE TABLE IF NOT EXISTS candidates("
    "  id INTEGER PRIMARY KEY, compile_key TEXT NOT NULL UNIQUE,"
    "  variant_id INTEGER NOT NULL REFERENCES variants(id), params TEXT NOT NULL, name_expr TEXT NOT NULL,"
    "  arch TEXT NOT NULL, status TEXT NOT NULL CHECK(status IN ('ok','compile_error')), log TEXT,"
    "  lowered_name TEXT, regs INTEGER, spill_stores INTEGER, spill_loads INTEGER, static_smem INTEGER,"
    "  stack_bytes INTEGER, threads INTEGER, smem_bytes INTEGER, compile_ms REAL, cubin_hash TEXT,"
    "  quarantined INTEGER NOT NULL DEFAULT 0, run_id INTEGER REFERENCES runs(id), created TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS problems("
    "  id INTEGER PRIMARY KEY, op TEXT NOT NULL, tag TEXT NOT NULL, m INTEGER NOT NULL, n INTEGER NOT NULL,"
    "  k INTEGER NOT NULL, UNIQUE(op, tag, m, n, k));"
    "CREATE TABLE IF NOT EXISTS results("
    "  id INTEGER PRIMARY KEY, candidate_id INTEGER NOT NULL REFERENCES candidates(id),"
    "  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  run_id INTEGER REFERENCES runs(id),"
    "  status TEXT NOT NULL CHECK(status IN ('ok','wrong','fault','timeout','resources','quarantined')),"
    "  time_us REAL, time_min_us REAL, time_max_us REAL, samples INTEGER, cut INTEGER, sets INTEGER,"
    "  retime_us REAL, tflops REAL, gbs REAL, roofline_pct REAL, occupancy INTEGER,"
    "  max_abs_err REAL, bad_count INTEGER, first_bad INTEGER, message TEXT, seed INTEGER, created TEXT NOT NULL,"
    "  check_ratio REAL,"
    "  UNIQUE(candidate_id, problem_id, device_id));"
    "CREATE INDEX IF NOT EXISTS results_by_problem ON results(problem_id, device_id, status);"
    "CREATE TABLE IF NOT EXISTS pruned("
    "  run_id INTEGER NOT NULL REFERENCES runs(id), variant_id INTEGER NOT NULL REFERENCES variants(id),"
    "  rule TEXT NOT NULL, per_shape INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  PRIMARY KEY(run_id, variant_id, rule, per_shape));"
    "CREATE TABLE IF NOT EXISTS winners("
    "  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  candidate_id INTEGER NOT NULL REFERENCES candidates(id), time_us REAL NOT NULL,"
    "  run_id INTEGER REFERENCES runs(id), decided TEXT NOT NULL, basis TEXT, PRIMARY KEY(problem_id, device_id));"
    "CREATE TABLE IF NOT EXISTS baselines("
    "  problem_id INTEGER NOT NULL REFERENCES problems(id), device_id INTEGER NOT NULL REFERENCES devices(id),"
    "  name TEXT NOT NULL, time_us REAL NOT NULL, run_id INTEGER REFERENCES runs(id), check_ratio REAL,"
    "  PRIMARY KEY(problem_id, device_id, name));" LAUNCHES_TABLE;

/* What turns a DB of version i into version i + 1, for i from 1. The columns it adds are in the
 * SCHEMA text too, so that a migrated DB and a new one have the same columns. */
static const char *const MIGRATIONS[AT_STORE_SCHEMA_VERSION] = {
    NULL,
    /* 1 -> 2: the check's worst |out - ref| / bound, of each result and of the vendor baseline. */
    "ALTER TABLE results ADD COLUMN check_ratio REAL;"
    "ALTER TABLE baselines ADD COLUMN check_ratio REAL;",
    /* 2 -> 3: runs get an identity that survives a merge (uid) and their shard; merged runs list
     * the DBs they came from. Runs of before get a uid of their own now. */
    "ALTER TABLE runs ADD COLUMN uid TEXT;"
    "ALTER TABLE runs ADD COLUMN shard TEXT;"
    "UPDATE runs SET uid=lower(hex(randomblob(16))) WHERE uid IS NULL;"
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_uid ON runs(uid);"
    "CREATE TABLE IF NOT EXISTS run_sources("
    "  run_id INTEGER NOT NULL REFERENCES runs(id), db TEXT NOT NULL, PRIMARY KEY(run_id, db));",
    /* 3 -> 4: `autotune judge`: what a winner was decided on (NULL in the old rows: the tuner's
     * side-by-side timing), and the launched times it was decided on. */
    "ALTER TABLE winners ADD COLUMN basis TEXT;" LAUNCHES_TABLE,
};

sqlite3 *at_store_db(at_store *s) { return s->db; }
const char *at_store_path(const at_store *s) { return s->path; }

static void finalize_last(at_store *s) {
  if (s->last) sqlite3_finalize(s->last);
  s->last = NULL;
}

int at_store_exec(at_store *s, const char *sql) {
  finalize_last(s);
  char *err = NULL;
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, &err);
  if (rc != SQLITE_OK) {
    rc = at_fail_api("SQLite", "exec", __FILE__, __LINE__, rc, sqlite3_errstr(rc), err ? err : "");
    sqlite3_free(err);
    return rc;
  }
  return AT_OK;
}

int at_store_query_int(at_store *s, const char *sql, int64_t *out) {
  finalize_last(s);
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, sql, -1, &st, NULL));
  int rc = sqlite3_step(st);
  *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  SQL_CHECK(s, rc);
  return AT_OK;
}

/* SQLite's busy handler: sleeps while another connection holds the lock, and gives up when the
 * wait is over its limit or a signal asked the run to stop (SQLite's own busy timeout sleeps
 * through signals, which is how a Ctrl-C used to wait for up to 100 minutes). */
static int on_busy(void *p, int count) {
  at_store *s = p;
  double now = at_now_s();
  if (count == 0) s->busy_since = now;
  if (s->stop && *s->stop) {
    s->lock_interrupted = 1;
    return 0;
  }
  if (now - s->busy_since >= s->lock_wait_s) return 0;
  usleep(count < 20 ? 1000u * (unsigned)(count + 1) : 20000u); /* at most 20 ms between looks */
  return 1;
}

void at_store_set_stop(at_store *s, volatile sig_atomic_t *stop) { s->stop = stop; }
void at_store_set_lock_wait(at_store *s, double seconds) { s->lock_wait_s = seconds; }
int at_store_lock_interrupted(const at_store *s) { return s->lock_interrupted; }

/* Runs one statement of a transaction's frame (BEGIN IMMEDIATE, COMMIT), waiting for the lock. A
 * lock still held when the wait ends is said as such: who holds it is the user's to find. */
static int tx_step(at_store *s, const char *sql) {
  double t0 = at_now_s();
  for (;;) {
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) return AT_OK;
    if ((rc & 0xff) != SQLITE_BUSY) return sql_fail(s, sql, rc, __FILE__, __LINE__);
    if (s->stop && *s->stop) {
      s->lock_interrupted = 1;
      return at_fail(AT_ERR_RUNTIME, "%s: interrupted while waiting for another writer's lock on the DB", s->path);
    }
    if (at_now_s() - t0 >= s->lock_wait_s)
      return at_fail(AT_ERR_RUNTIME, "%s: another writer has held the DB's lock for %.0f s; giving up", s->path,
                     s->lock_wait_s);
    usleep(10000); /* SQLite answered busy without waiting (it does, to avoid deadlocks) */
  }
}

int at_store_tx(at_store *s, int (*fn)(at_store *s, void *ctx), void *ctx) {
  finalize_last(s);
  AT_TRY(tx_step(s, "BEGIN IMMEDIATE"));
  int rc = fn(s, ctx);
  if (rc == AT_OK) rc = tx_step(s, "COMMIT");
  if (rc != AT_OK) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* Indexes a writer adds to a DB of any version (an index changes no column, and older autotunes
 * ignore it): candidates by cubin, for the tuner's look-up of a twin (at_store_has_twin). */
static const char *INDEXES = "CREATE INDEX IF NOT EXISTS candidates_by_cubin ON candidates(cubin_hash);";

static int create_schema(at_store *s, void *ctx) {
  (void)ctx;
  int64_t version;
  AT_TRY(at_store_query_int(s, "PRAGMA user_version", &version));
  if (version == AT_STORE_SCHEMA_VERSION) return at_store_exec(s, INDEXES);
  if (version > AT_STORE_SCHEMA_VERSION)
    return at_fail(AT_ERR_RUNTIME, "%s: DB schema version %lld is newer than this autotune's (%d); use a newer autotune",
                   s->path, (long long)version, AT_STORE_SCHEMA_VERSION);
  int64_t tables;
  AT_TRY(at_store_query_int(s, "SELECT count(*) FROM sqlite_master", &tables));
  if (version == 0 && tables > 0)
    return at_fail(AT_ERR_RUNTIME, "%s: not an autotune DB (it has tables but no schema version)", s->path);
  if (version == 0)
    AT_TRY(at_store_exec(s, SCHEMA));
  else /* an older DB: its tables gain what later versions added, in this same transaction */
    for (int64_t v = version; v < AT_STORE_SCHEMA_VERSION; v++) AT_TRY(at_store_exec(s, MIGRATIONS[v]));
  char pragma[64];
  snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d", AT_STORE_SCHEMA_VERSION);
  AT_TRY(at_store_exec(s, pragma));
  return at_store_exec(s, INDEXES);
}

static int open_common(const char *path, int flags, at_store **out) {
  *out = NULL;
  at_store *s = at_xcalloc(1, sizeof *s);
  s->path = at_xstrdup(path);
  s->lock_wait_s = (flags & SQLITE_OPEN_READONLY) ? LOCK_WAIT_READER_S : LOCK_WAIT_WRITER_S;
  int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
  if (rc != SQLITE_OK) {
    rc = at_fail(AT_ERR_RUNTIME, "%s: cannot open the DB: %s", path, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
    at_store_close(s);
    return rc;
  }
  sqlite3_busy_handler(s->db, on_busy, s);
  *out = s;
  return AT_OK;
}

/* A DB that failed to open, said plainly where the cause is the file's (run-time failures, as a
 * corrupt or foreign DB is: exit 1): a file that is not an SQLite database, one the process may not
 * write. Else the SQLite message, with the path. */
static int open_failure(at_store *s, const char *path, int rc, int writing) {
  const int ec = s->db ? sqlite3_errcode(s->db) : 0;
  if (ec == SQLITE_NOTADB) return at_fail(AT_ERR_RUNTIME, "%s: not an SQLite database (not a DB autotune wrote)", path);
  if (writing && (ec == SQLITE_READONLY || ec == SQLITE_CANTOPEN || ec == SQLITE_PERM))
    return at_fail(AT_ERR_RUNTIME, "%s: the DB cannot be written here (%s)", path, sqlite3_errstr(ec));
  at_errctx("%s", path);
  return rc;
}

int at_store_open(const char *path, at_store **out) {
  char *dir = at_dirname(path);
  int rc = at_mkdirs(dir);
  free(dir);
  AT_TRY(rc);
  AT_TRY(open_common(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, out));
  at_store *s = *out;
  rc = at_store_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  if (rc == AT_OK) rc = at_store_tx(s, create_schema, NULL);
  if (rc) {
    rc = open_failure(s, path, rc, 1);
    at_store_close(s);
    *out = NULL;
  }
  return rc;
}

int at_store_open_readonly(const char *path, at_store **out) {
  if (!at_file_exists(path)) return at_fail(AT_ERR_RUNTIME, "%s: no such DB", path);
  AT_TRY(open_common(path, SQLITE_OPEN_READONLY, out));
  at_store *s = *out;
  int64_t version = 0;
  int rc = at_store_query_int(s, "PRAGMA user_version", &version);
  /* Readers never use the columns later versions added, so older DBs read as they are. */
  if (rc == AT_OK && (version < AT_STORE_SCHEMA_OLDEST_READ || version > AT_STORE_SCHEMA_VERSION))
    rc = at_fail(AT_ERR_RUNTIME, "%s: DB schema version %lld, this autotune reads versions %d to %d", path,
                 (long long)version, AT_STORE_SCHEMA_OLDEST_READ, AT_STORE_SCHEMA_VERSION);
  else if (rc)
    rc = open_failure(s, path, rc, 0);
  if (rc) {
    at_store_close(s);
    *out = NULL;
  }
  return rc;
}

void at_store_close(at_store *s) {
  if (!s) return;
  finalize_last(s);
  if (s->db) sqlite3_close(s->db);
  free(s->path);
  free(s);
}

/* ---- statement helpers ------------------------------------------------------------------------ */

static void bind_text(sqlite3_stmt *st, int i, const char *v) {
  if (v)
    sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

/* Row ids of 0 or less mean "none": NULL, so that foreign keys hold. */
static void bind_id(sqlite3_stmt *st, int i, int64_t id) {
  if (id > 0)
    sqlite3_bind_int64(st, i, id);
  else
    sqlite3_bind_null(st, i);
}

static void bind_real_or_null(sqlite3_stmt *st, int i, double v, int present) {
  if (present)
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

/* Runs an INSERT/UPDATE whose parameters were bound; finalizes it. */
static int step_done(at_store *s, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return sql_fail(s, "step", rc, __FILE__, __LINE__);
  return AT_OK;
}

/* Runs a query with one integer column; *id = -1 when no row. Finalizes. */
static int step_id(at_store *s, sqlite3_stmt *st, int64_t *id) {
  int rc = sqlite3_step(st);
  *id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_fail(s, "step", rc, __FILE__, __LINE__);
  return AT_OK;
}

/* Columns the schema declares NOT NULL, read from a DB whose schema may have been edited by hand:
 * a NULL there is a corrupt DB, said as such, never a crash further on. */
static int corrupt_null(at_store *s, const char *column, int64_t row) {
  char where[48] = "";
  if (row > 0) snprintf(where, sizeof where, " in row %lld", (long long)row);
  return at_fail(AT_ERR_RUNTIME, "%s: corrupt DB: %s is NULL%s, which autotune never writes (was the schema edited?)",
                 s->path, column, where);
}

static int text_col(at_store *s, sqlite3_stmt *st, int i, const char *column, int64_t row, const char **out) {
  *out = (const char *)sqlite3_column_text(st, i);
  return *out ? AT_OK : corrupt_null(s, column, row);
}

static int int_col(at_store *s, sqlite3_stmt *st, int i, const char *column, int64_t row, int64_t *out) {
  *out = sqlite3_column_int64(st, i);
  return sqlite3_column_type(st, i) != SQLITE_NULL ? AT_OK : corrupt_null(s, column, row);
}

/* ---- runs ------------------------------------------------------------------------------------- */

typedef struct run_ctx {
  const at_run_info *info;
  int64_t id;
  const char *status;
} run_ctx;

static int begin_run_tx(at_store *s, void *p) {
  run_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT INTO runs(started,status,space_path,space_hash,op,tag,arch,nvrtc,host,command,"
                                  "shard,uid) VALUES(?,?,?,?,?,?,?,?,?,?,?,lower(hex(randomblob(16))))",
                                  -1, &st, NULL));
  char *now = at_utc_now_iso();
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  bind_text(st, 1, now);
  bind_text(st, 2, "running");
  bind_text(st, 3, c->info->space_path);
  bind_text(st, 4, c->info->space_hash);
  bind_text(st, 5, c->info->op);
  bind_text(st, 6, c->info->tag);
  bind_text(st, 7, c->info->arch);
  bind_text(st, 8, c->info->nvrtc);
  bind_text(st, 9, host);
  bind_text(st, 10, c->info->command);
  bind_text(st, 11, c->info->shard);
  free(now);
  AT_TRY(step_done(s, st));
  c->id = sqlite3_last_insert_rowid(s->db);
  return AT_OK;
}

int at_store_begin_run(at_store *s, const at_run_info *info, int64_t *run_id) {
  run_ctx c = {info, 0, NULL};
  AT_TRY(at_store_tx(s, begin_run_tx, &c));
  *run_id = c.id;
  return AT_OK;
}

static int end_run_tx(at_store *s, void *p) {
  run_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "UPDATE runs SET finished=?, status=? WHERE id=?", -1, &st, NULL));
  char *now = at_utc_now_iso();
  bind_text(st, 1, now);
  bind_text(st, 2, c->status);
  sqlite3_bind_int64(st, 3, c->id);
  free(now);
  return step_done(s, st);
}

int at_store_end_run(at_store *s, int64_t run_id, const char *status) {
  run_ctx c = {NULL, run_id, status};
  return at_store_tx(s, end_run_tx, &c);
}

/* ---- variants, problems, devices: find or insert ---------------------------------------------- */

typedef struct upsert_ctx {
  const char *select_sql, *insert_sql;
  const char *text[8];
  int64_t ints[8];
  int ntext, nints;
  int64_t id;
} upsert_ctx;

/* Texts first, then integers, as ?1, ?2, ...; a statement may leave the last ones unused. */
static void bind_upsert(sqlite3_stmt *st, const upsert_ctx *c) {
  int i = 1;
  for (int t = 0; t < c->ntext; t++) bind_text(st, i++, c->text[t]);
  for (int n = 0; n < c->nints; n++) sqlite3_bind_int64(st, i++, c->ints[n]);
}

static int upsert_tx(at_store *s, void *p) {
  upsert_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, c->select_sql, -1, &st, NULL));
  bind_upsert(st, c);
  AT_TRY(step_id(s, st, &c->id));
  if (c->id >= 0) return AT_OK;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, c->insert_sql, -1, &st, NULL));
  bind_upsert(st, c);
  AT_TRY(step_done(s, st));
  c->id = sqlite3_last_insert_rowid(s->db);
  return AT_OK;
}

typedef struct variant_ctx {
  upsert_ctx u;
  int64_t run_id;
} variant_ctx;

static int variant_tx(at_store *s, void *p) {
  variant_ctx *c = p;
  AT_TRY(upsert_tx(s, &c->u));
  if (c->run_id <= 0) return AT_OK;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "UPDATE variants SET last_run=?1 WHERE id=?2 AND coalesce(last_run, 0) < ?1", -1,
                                  &st, NULL));
  sqlite3_bind_int64(st, 1, c->run_id);
  sqlite3_bind_int64(st, 2, c->u.id);
  return step_done(s, st);
}

int at_store_variant(at_store *s, const char *op, const char *name, const char *family, const char *template_path,
                     const char *entry, const char *source_hash, int64_t run_id, int64_t *id) {
  /* The template path is informative, not identity: the same content moved is the same variant. */
  variant_ctx c = {
      {.select_sql = "SELECT id FROM variants WHERE op=?1 AND name=?2 AND family=?3 AND entry=?4 AND source_hash=?5",
       .insert_sql = "INSERT INTO variants(op,name,family,entry,source_hash,template) VALUES(?1,?2,?3,?4,?5,?6)",
       .text = {op, name, family, entry, source_hash, template_path},
       .ntext = 6},
      run_id};
  AT_TRY(at_store_tx(s, variant_tx, &c));
  *id = c.u.id;
  return AT_OK;
}

int at_store_problem(at_store *s, const char *op, const char *tag, int64_t m, int64_t n, int64_t k, int64_t *id) {
  upsert_ctx c = {.select_sql = "SELECT id FROM problems WHERE op=?1 AND tag=?2 AND m=?3 AND n=?4 AND k=?5",
                  .insert_sql = "INSERT INTO problems(op,tag,m,n,k) VALUES(?1,?2,?3,?4,?5)",
                  .text = {op, tag},
                  .ntext = 2,
                  .ints = {m, n, k},
                  .nints = 3};
  AT_TRY(at_store_tx(s, upsert_tx, &c));
  *id = c.id;
  return AT_OK;
}

typedef struct device_ctx {
  const at_device_row *d;
  int64_t id;
} device_ctx;

static int device_tx(at_store *s, void *p) {
  device_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT id FROM devices WHERE name=? AND arch=?", -1, &st, NULL));
  bind_text(st, 1, c->d->name);
  bind_text(st, 2, c->d->arch);
  AT_TRY(step_id(s, st, &c->id));
  if (c->id < 0) {
    SQL_CHECK(s, sqlite3_prepare_v2(s->db, "INSERT INTO devices(name,arch,cc) VALUES(?,?,?)", -1, &st, NULL));
    bind_text(st, 1, c->d->name);
    bind_text(st, 2, c->d->arch);
    sqlite3_bind_int(st, 3, c->d->cc);
    AT_TRY(step_done(s, st));
    c->id = sqlite3_last_insert_rowid(s->db);
  }
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "UPDATE devices SET sm_count=?, l2_bytes=?, smem_per_block=?, mem_bytes=?, uuid=?,"
                                  " driver=? WHERE id=?",
                                  -1, &st, NULL));
  sqlite3_bind_int(st, 1, c->d->sm_count);
  sqlite3_bind_int64(st, 2, c->d->l2_bytes);
  sqlite3_bind_int64(st, 3, c->d->smem_per_block);
  sqlite3_bind_int64(st, 4, c->d->mem_bytes);
  bind_text(st, 5, c->d->uuid);
  bind_text(st, 6, c->d->driver);
  sqlite3_bind_int64(st, 7, c->id);
  return step_done(s, st);
}

int at_store_device(at_store *s, const at_device_row *d, int64_t *id) {
  device_ctx c = {d, -1};
  AT_TRY(at_store_tx(s, device_tx, &c));
  *id = c.id;
  return AT_OK;
}

typedef struct run_device_ctx {
  int64_t run_id, device_id;
  double tflops, gbs;
} run_device_ctx;

static int run_device_tx(at_store *s, void *p) {
  run_device_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "UPDATE runs SET device_id=?, peak_tflops=?, peak_gbs=? WHERE id=?", -1, &st,
                                  NULL));
  sqlite3_bind_int64(st, 1, c->device_id);
  bind_real_or_null(st, 2, c->tflops, c->tflops > 0);
  bind_real_or_null(st, 3, c->gbs, c->gbs > 0);
  sqlite3_bind_int64(st, 4, c->run_id);
  return step_done(s, st);
}

int at_store_run_device(at_store *s, int64_t run_id, int64_t device_id, double peak_tflops, double peak_gbs) {
  run_device_ctx c = {run_id, device_id, peak_tflops, peak_gbs};
  return at_store_tx(s, run_device_tx, &c);
}

/* ---- candidates ------------------------------------------------------------------------------- */

int at_store_find_candidate(at_store *s, const char *compile_key, at_cand_row *row, int *found) {
  finalize_last(s);
  memset(row, 0, sizeof *row);
  *found = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT id, variant_id, params, name_expr, arch, status, log, lowered_name, regs,"
                                  " spill_stores, spill_loads, static_smem, stack_bytes, threads, smem_bytes,"
                                  " compile_ms, cubin_hash, quarantined, run_id FROM candidates WHERE compile_key=?",
                                  -1, &st, NULL));
  bind_text(st, 1, compile_key);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_finalize(st);
    return AT_OK;
  }
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return sql_fail(s, "find candidate", rc, __FILE__, __LINE__);
  }
  s->last = st;
  row->id = sqlite3_column_int64(st, 0);
  row->compile_key = compile_key;
  row->variant_id = sqlite3_column_int64(st, 1);
  const char *status;
  if ((rc = text_col(s, st, 2, "candidates.params", row->id, &row->params)) ||
      (rc = text_col(s, st, 3, "candidates.name_expr", row->id, &row->name_expr)) ||
      (rc = text_col(s, st, 4, "candidates.arch", row->id, &row->arch)) ||
      (rc = text_col(s, st, 5, "candidates.status", row->id, &status)))
    return rc;
  *found = 1;
  row->ok = strcmp(status, "ok") == 0;
  row->log = (const char *)sqlite3_column_text(st, 6);
  row->lowered_name = (const char *)sqlite3_column_text(st, 7);
  row->regs = sqlite3_column_int(st, 8);
  row->spill_stores = sqlite3_column_int(st, 9);
  row->spill_loads = sqlite3_column_int(st, 10);
  row->static_smem = sqlite3_column_int(st, 11);
  row->stack_bytes = sqlite3_column_int(st, 12);
  row->threads = sqlite3_column_int64(st, 13);
  row->smem_bytes = sqlite3_column_int64(st, 14);
  row->compile_ms = sqlite3_column_double(st, 15);
  row->cubin_hash = (const char *)sqlite3_column_text(st, 16);
  row->quarantined = sqlite3_column_int(st, 17);
  row->run_id = sqlite3_column_int64(st, 18);
  return AT_OK;
}

typedef struct cand_ctx {
  const at_cand_row *row;
  int64_t id;
} cand_ctx;

static int put_candidate_tx(at_store *s, void *p) {
  cand_ctx *c = p;
  const at_cand_row *r = c->row;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT INTO candidates(compile_key, variant_id, params, name_expr, arch,"
                                  " status, log, lowered_name, regs, spill_stores, spill_loads, static_smem,"
                                  " stack_bytes, threads, smem_bytes, compile_ms, cubin_hash, run_id, created)"
                                  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                                  " ON CONFLICT(compile_key) DO UPDATE SET variant_id=excluded.variant_id,"
                                  " params=excluded.params, name_expr=excluded.name_expr, status=excluded.status,"
                                  " log=excluded.log, lowered_name=excluded.lowered_name, regs=excluded.regs,"
                                  " spill_stores=excluded.spill_stores, spill_loads=excluded.spill_loads,"
                                  " static_smem=excluded.static_smem, stack_bytes=excluded.stack_bytes,"
                                  " threads=excluded.threads, smem_bytes=excluded.smem_bytes,"
                                  " compile_ms=excluded.compile_ms, cubin_hash=excluded.cubin_hash,"
                                  " quarantined=0, run_id=excluded.run_id, created=excluded.created",
                                  -1, &st, NULL));
  char *now = at_utc_now_iso();
  bind_text(st, 1, r->compile_key);
  sqlite3_bind_int64(st, 2, r->variant_id);
  bind_text(st, 3, r->params);
  bind_text(st, 4, r->name_expr);
  bind_text(st, 5, r->arch);
  bind_text(st, 6, r->ok ? "ok" : "compile_error");
  bind_text(st, 7, r->log);
  bind_text(st, 8, r->lowered_name);
  sqlite3_bind_int(st, 9, r->regs);
  sqlite3_bind_int(st, 10, r->spill_stores);
  sqlite3_bind_int(st, 11, r->spill_loads);
  sqlite3_bind_int(st, 12, r->static_smem);
  sqlite3_bind_int(st, 13, r->stack_bytes);
  sqlite3_bind_int64(st, 14, r->threads);
  sqlite3_bind_int64(st, 15, r->smem_bytes);
  sqlite3_bind_double(st, 16, r->compile_ms);
  bind_text(st, 17, r->cubin_hash);
  bind_id(st, 18, r->run_id);
  bind_text(st, 19, now);
  free(now);
  AT_TRY(step_done(s, st));
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT id FROM candidates WHERE compile_key=?", -1, &st, NULL));
  bind_text(st, 1, r->compile_key);
  return step_id(s, st, &c->id);
}

int at_store_put_candidate(at_store *s, const at_cand_row *row, int64_t *id) {
  cand_ctx c = {row, -1};
  AT_TRY(at_store_tx(s, put_candidate_tx, &c));
  if (id) *id = c.id;
  return AT_OK;
}

static int quarantine_tx(at_store *s, void *p) {
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "UPDATE candidates SET quarantined=1 WHERE id=?", -1, &st, NULL));
  sqlite3_bind_int64(st, 1, *(int64_t *)p);
  return step_done(s, st);
}

int at_store_quarantine(at_store *s, int64_t candidate_id) { return at_store_tx(s, quarantine_tx, &candidate_id); }

/* ---- pruning counts --------------------------------------------------------------------------- */

typedef struct prune_ctx {
  int64_t run_id;
  const at_prune_row *rows;
  int n;
} prune_ctx;

static int pruned_tx(at_store *s, void *p) {
  prune_ctx *c = p;
  for (int i = 0; i < c->n; i++) {
    sqlite3_stmt *st;
    SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                    "INSERT OR REPLACE INTO pruned(run_id, variant_id, rule, per_shape, count)"
                                    " VALUES(?,?,?,?,?)",
                                    -1, &st, NULL));
    sqlite3_bind_int64(st, 1, c->run_id);
    sqlite3_bind_int64(st, 2, c->rows[i].variant_id);
    bind_text(st, 3, c->rows[i].rule);
    sqlite3_bind_int(st, 4, c->rows[i].per_shape);
    sqlite3_bind_int64(st, 5, c->rows[i].count);
    AT_TRY(step_done(s, st));
  }
  return AT_OK;
}

int at_store_put_pruned(at_store *s, int64_t run_id, const at_prune_row *rows, int n) {
  prune_ctx c = {run_id, rows, n};
  return at_store_tx(s, pruned_tx, &c);
}

/* ---- results ---------------------------------------------------------------------------------- */

static int put_result_tx(at_store *s, void *p) {
  const at_result_row *r = p;
  int timed = r->samples > 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT OR REPLACE INTO results(candidate_id, problem_id, device_id, run_id, status,"
                                  " time_us, time_min_us, time_max_us, samples, cut, sets, tflops, gbs, roofline_pct,"
                                  " occupancy, max_abs_err, bad_count, first_bad, message, seed, created, check_ratio)"
                                  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                  -1, &st, NULL));
  char *now = at_utc_now_iso();
  sqlite3_bind_int64(st, 1, r->candidate_id);
  sqlite3_bind_int64(st, 2, r->problem_id);
  sqlite3_bind_int64(st, 3, r->device_id);
  bind_id(st, 4, r->run_id);
  bind_text(st, 5, r->status);
  bind_real_or_null(st, 6, r->time_us, timed);
  bind_real_or_null(st, 7, r->time_min_us, timed);
  bind_real_or_null(st, 8, r->time_max_us, timed);
  sqlite3_bind_int(st, 9, r->samples);
  sqlite3_bind_int(st, 10, r->cut);
  sqlite3_bind_int(st, 11, r->sets);
  bind_real_or_null(st, 12, r->tflops, timed);
  bind_real_or_null(st, 13, r->gbs, timed);
  bind_real_or_null(st, 14, r->roofline_pct, timed && r->roofline_pct > 0);
  sqlite3_bind_int(st, 15, r->occupancy);
  bind_real_or_null(st, 16, r->max_abs_err, r->max_abs_err >= 0);
  sqlite3_bind_int64(st, 17, r->bad_count);
  sqlite3_bind_int64(st, 18, r->first_bad);
  bind_text(st, 19, r->message);
  sqlite3_bind_int64(st, 20, r->seed);
  bind_text(st, 21, now);
  bind_real_or_null(st, 22, r->check_ratio, r->check_ratio >= 0);
  free(now);
  return step_done(s, st);
}

int at_store_put_result(at_store *s, const at_result_row *r) { return at_store_tx(s, put_result_tx, (void *)r); }

int at_store_get_result(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, const char **status,
                        double *time_us) {
  finalize_last(s);
  *status = "";
  *time_us = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT status, coalesce(time_us, 0), id FROM results WHERE candidate_id=? AND"
                                  " problem_id=? AND device_id=?",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, candidate_id);
  sqlite3_bind_int64(st, 2, problem_id);
  sqlite3_bind_int64(st, 3, device_id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    s->last = st;
    *time_us = sqlite3_column_double(st, 1);
    if (text_col(s, st, 0, "results.status", sqlite3_column_int64(st, 2), status)) {
      *status = "";
      return AT_ERR_RUNTIME;
    }
    return AT_OK;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return sql_fail(s, "get result", rc, __FILE__, __LINE__);
  return AT_OK;
}

/* A twin: another recorded candidate of the same op and family whose cubin is byte for byte this
 * one's (same hash), launched the same way (params, entry expression, arch, threads, dynamic
 * shared memory), and not quarantined. Its result on (problem, device) is this candidate's: a
 * template edit that leaves the machine code alone (a comment) must not cost a re-tuning.
 * ?1 is the candidate (n), c the twin. */
#define TWIN_FROM                                                                                                    \
  " FROM candidates n JOIN variants nv ON nv.id = n.variant_id"                                                     \
  " JOIN candidates c ON c.cubin_hash = n.cubin_hash AND c.id <> n.id JOIN variants cv ON cv.id = c.variant_id"
#define TWIN_WHERE                                                                                                   \
  " WHERE n.id = ?1 AND n.status = 'ok' AND c.status = 'ok' AND n.cubin_hash IS NOT NULL AND n.cubin_hash <> ''"  \
  " AND c.params = n.params AND c.name_expr = n.name_expr AND c.arch = n.arch AND c.threads IS n.threads"          \
  " AND c.smem_bytes IS n.smem_bytes AND cv.op = nv.op AND cv.family = nv.family AND c.quarantined = 0"
/* The message an adopted row carries; a row that was itself adopted keeps its own, which names
 * the measurement, so a chain of edits does not stack prefixes. */
#define ADOPTED_PREFIX "same cubin as candidate "

int at_store_has_twin(at_store *s, int64_t candidate_id, int *has) {
  finalize_last(s);
  *has = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT EXISTS(SELECT 1" TWIN_FROM TWIN_WHERE ")", -1, &st, NULL));
  sqlite3_bind_int64(st, 1, candidate_id);
  int64_t v;
  AT_TRY(step_id(s, st, &v));
  *has = v > 0;
  return AT_OK;
}

typedef struct adopt_ctx {
  int64_t cand, source, run;
  int adopted;
} adopt_ctx;

static int adopt_tx(at_store *s, void *p) {
  adopt_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(
                   s->db,
                   "INSERT INTO results(candidate_id, problem_id, device_id, run_id, status, time_us, time_min_us,"
                   " time_max_us, samples, cut, sets, retime_us, tflops, gbs, roofline_pct, occupancy, max_abs_err,"
                   " bad_count, first_bad, message, seed, created, check_ratio)"
                   " SELECT ?1, r.problem_id, r.device_id, ?3, r.status, r.time_us, r.time_min_us, r.time_max_us,"
                   " r.samples, r.cut, r.sets, r.retime_us, r.tflops, r.gbs, r.roofline_pct, r.occupancy,"
                   " r.max_abs_err, r.bad_count, r.first_bad,"
                   " CASE WHEN r.message LIKE '" ADOPTED_PREFIX "%' THEN r.message"
                   " ELSE '" ADOPTED_PREFIX "' || r.candidate_id || ', measured in run ' || coalesce(r.run_id, '?')"
                   " || CASE WHEN coalesce(r.message, '') <> '' THEN ': ' || r.message ELSE '' END END,"
                   " r.seed, r.created, r.check_ratio FROM results r WHERE r.id = ?2 AND NOT EXISTS"
                   " (SELECT 1 FROM results o WHERE o.candidate_id = ?1 AND o.problem_id = r.problem_id"
                   " AND o.device_id = r.device_id)",
                   -1, &st, NULL));
  sqlite3_bind_int64(st, 1, c->cand);
  sqlite3_bind_int64(st, 2, c->source);
  bind_id(st, 3, c->run);
  AT_TRY(step_done(s, st));
  c->adopted = sqlite3_changes(s->db) > 0;
  return AT_OK;
}

int at_store_adopt_result(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, int64_t run_id,
                          int *adopted) {
  finalize_last(s);
  *adopted = 0;
  /* A read first: most (candidate, shape) pairs of a run have nothing to adopt, and need no write
   * transaction. A measured row is preferred to one adopted itself, then the newest. */
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT r.id" TWIN_FROM " JOIN results r ON r.candidate_id = c.id" TWIN_WHERE
                                  " AND r.problem_id = ?2 AND r.device_id = ?3 AND r.status <> 'quarantined'"
                                  " ORDER BY r.message LIKE '" ADOPTED_PREFIX "%', r.created DESC, r.id DESC LIMIT 1",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, candidate_id);
  sqlite3_bind_int64(st, 2, problem_id);
  sqlite3_bind_int64(st, 3, device_id);
  int64_t source;
  AT_TRY(step_id(s, st, &source));
  if (source < 0) return AT_OK;
  adopt_ctx c = {candidate_id, source, run_id, 0};
  AT_TRY(at_store_tx(s, adopt_tx, &c));
  *adopted = c.adopted;
  return AT_OK;
}

typedef struct retime_ctx {
  int64_t cand, problem, device, run;
  double us;
  const char *name;    /* baselines: the baseline's name; winners: the basis (NULL: AT_BASIS_ALONE) */
  double check_ratio; /* baselines: < 0 for none */
} retime_ctx;

static int retime_tx(at_store *s, void *p) {
  retime_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "UPDATE results SET retime_us=? WHERE candidate_id=? AND problem_id=? AND device_id=?",
                                  -1, &st, NULL));
  sqlite3_bind_double(st, 1, c->us);
  sqlite3_bind_int64(st, 2, c->cand);
  sqlite3_bind_int64(st, 3, c->problem);
  sqlite3_bind_int64(st, 4, c->device);
  return step_done(s, st);
}

int at_store_set_retime(at_store *s, int64_t candidate_id, int64_t problem_id, int64_t device_id, double retime_us) {
  retime_ctx c = {candidate_id, problem_id, device_id, 0, retime_us, NULL};
  return at_store_tx(s, retime_tx, &c);
}

static int winner_tx(at_store *s, void *p) {
  retime_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT OR REPLACE INTO winners(problem_id, device_id, candidate_id, time_us, run_id,"
                                  " decided, basis) VALUES(?,?,?,?,?,?,?)",
                                  -1, &st, NULL));
  char *now = at_utc_now_iso();
  sqlite3_bind_int64(st, 1, c->problem);
  sqlite3_bind_int64(st, 2, c->device);
  sqlite3_bind_int64(st, 3, c->cand);
  sqlite3_bind_double(st, 4, c->us);
  bind_id(st, 5, c->run);
  bind_text(st, 6, now);
  bind_text(st, 7, c->name ? c->name : AT_BASIS_ALONE);
  free(now);
  return step_done(s, st);
}

int at_store_put_winner(at_store *s, int64_t problem_id, int64_t device_id, int64_t candidate_id, double time_us,
                        int64_t run_id) {
  retime_ctx c = {candidate_id, problem_id, device_id, run_id, time_us, NULL};
  return at_store_tx(s, winner_tx, &c);
}

/* ---- launched times (`autotune judge`) --------------------------------------------------------- */

typedef struct judge_ctx {
  const at_launch_row *rows;
  int n;
  int64_t winner; /* < 0: the winner stays */
  double winner_us;
} judge_ctx;

static int judge_tx(at_store *s, void *p) {
  judge_ctx *c = p;
  /* A judgement replaces the shape's last one whole: no row of a config it did not launch stays. */
  sqlite3_stmt *del;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "DELETE FROM launches WHERE problem_id=? AND device_id=?", -1, &del, NULL));
  sqlite3_bind_int64(del, 1, c->rows[0].problem_id);
  sqlite3_bind_int64(del, 2, c->rows[0].device_id);
  AT_TRY(step_done(s, del));
  sqlite3_stmt *st; /* one statement for the shape's rows, reset between them */
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT OR REPLACE INTO launches(candidate_id, problem_id, device_id, run_id, status,"
                                  " time_us, time_min_us, time_max_us, samples, check_ratio, plan, message, created)"
                                  " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                  -1, &st, NULL));
  char *now = at_utc_now_iso();
  int rc = AT_OK;
  for (int i = 0; i < c->n && rc == AT_OK; i++) {
    const at_launch_row *r = &c->rows[i];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    const int timed = r->time_us > 0;
    sqlite3_bind_int64(st, 1, r->candidate_id);
    sqlite3_bind_int64(st, 2, r->problem_id);
    sqlite3_bind_int64(st, 3, r->device_id);
    bind_id(st, 4, r->run_id);
    bind_text(st, 5, r->status);
    bind_real_or_null(st, 6, r->time_us, timed);
    bind_real_or_null(st, 7, r->time_min_us, timed);
    bind_real_or_null(st, 8, r->time_max_us, timed);
    if (timed) sqlite3_bind_int(st, 9, r->samples);
    bind_real_or_null(st, 10, r->check_ratio, r->check_ratio >= 0);
    bind_text(st, 11, r->plan);
    bind_text(st, 12, r->message);
    bind_text(st, 13, now);
    int src = sqlite3_step(st);
    if (src != SQLITE_DONE) rc = sql_fail(s, "put launch", src, __FILE__, __LINE__);
  }
  sqlite3_finalize(st);
  free(now);
  if (rc == AT_OK && c->winner >= 0) {
    retime_ctx w = {c->winner, c->rows[0].problem_id, c->rows[0].device_id, c->rows[0].run_id, c->winner_us,
                    AT_BASIS_LAUNCHED};
    rc = winner_tx(s, &w);
  }
  return rc;
}

int at_store_put_judgement(at_store *s, const at_launch_row *rows, int n, int64_t winner, double winner_us) {
  if (n < 1) return AT_OK;
  judge_ctx c = {rows, n, winner, winner_us};
  return at_store_tx(s, judge_tx, &c);
}

static int baseline_tx(at_store *s, void *p) {
  retime_ctx *c = p;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "INSERT OR REPLACE INTO baselines(problem_id, device_id, name, time_us, run_id,"
                                  " check_ratio) VALUES(?,?,?,?,?,?)",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, c->problem);
  sqlite3_bind_int64(st, 2, c->device);
  bind_text(st, 3, c->name);
  sqlite3_bind_double(st, 4, c->us);
  bind_id(st, 5, c->run);
  bind_real_or_null(st, 6, c->check_ratio, c->check_ratio >= 0);
  return step_done(s, st);
}

int at_store_put_baseline(at_store *s, int64_t problem_id, int64_t device_id, int64_t run_id, const char *name,
                          double time_us) {
  return at_store_put_baseline_checked(s, problem_id, device_id, run_id, name, time_us, -1);
}

int at_store_put_baseline_checked(at_store *s, int64_t problem_id, int64_t device_id, int64_t run_id, const char *name,
                                  double time_us, double check_ratio) {
  retime_ctx c = {0, problem_id, device_id, run_id, time_us, name, check_ratio};
  return at_store_tx(s, baseline_tx, &c);
}

/* ---- reading what was tuned ------------------------------------------------------------------- */

int at_store_devices(at_store *s, at_device_entry **out, size_t *n) {
  finalize_last(s);
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT id, name, arch, cc FROM devices ORDER BY id", -1, &st, NULL));
  int rc;
  int bad = AT_OK;
  while (bad == AT_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    *out = at_xrealloc(*out, sizeof **out * (*n + 1));
    at_device_entry *d = &(*out)[(*n)++];
    d->id = sqlite3_column_int64(st, 0);
    const char *name, *arch;
    int64_t cc;
    if ((bad = text_col(s, st, 1, "devices.name", d->id, &name)) || (bad = text_col(s, st, 2, "devices.arch", d->id, &arch)) ||
        (bad = int_col(s, st, 3, "devices.cc", d->id, &cc)))
      break;
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->arch, sizeof d->arch, "%s", arch);
    d->cc = (int)cc;
  }
  sqlite3_finalize(st);
  if (bad) {
    free(*out);
    *out = NULL;
    *n = 0;
    return bad;
  }
  SQL_CHECK(s, rc);
  return AT_OK;
}

/* Candidates export trusts: of the version of each variant (op, name) that the latest run used (a
 * template edited and then reverted is current again), and not quarantined. */
int at_store_tuned_nks(at_store *s, const char *op, int64_t device_id, at_tuned_nk **out, size_t *n) {
  finalize_last(s);
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT DISTINCT p.op, p.tag, p.n, p.k FROM results r JOIN problems p ON p.id=r.problem_id"
                                  " WHERE r.status='ok' AND r.device_id=?1 AND (?2 IS NULL OR p.op=?2)"
                                  " AND r.candidate_id IN (" AT_STORE_CURRENT_CANDIDATES ") ORDER BY p.op, p.tag, p.n, p.k",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, device_id);
  bind_text(st, 2, op);
  int rc, bad = AT_OK;
  while (bad == AT_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *op_name, *tag;
    int64_t nn, kk;
    if ((bad = text_col(s, st, 0, "problems.op", -1, &op_name)) || (bad = text_col(s, st, 1, "problems.tag", -1, &tag)) ||
        (bad = int_col(s, st, 2, "problems.n", -1, &nn)) || (bad = int_col(s, st, 3, "problems.k", -1, &kk)))
      break;
    *out = at_xrealloc(*out, sizeof **out * (*n + 1));
    at_tuned_nk *t = &(*out)[(*n)++];
    snprintf(t->op, sizeof t->op, "%s", op_name);
    snprintf(t->tag, sizeof t->tag, "%s", tag);
    t->n = nn;
    t->k = kk;
  }
  sqlite3_finalize(st);
  if (bad) {
    free(*out);
    *out = NULL;
    *n = 0;
    return bad;
  }
  SQL_CHECK(s, rc);
  return AT_OK;
}

int at_store_tuned_rows(at_store *s, const char *op, const char *tag, int64_t device_id, int64_t n, int64_t k,
                        at_tuned_row **out, size_t *count) {
  finalize_last(s);
  *out = NULL;
  *count = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT p.m, r.candidate_id, r.time_us, coalesce(r.retime_us, r.time_us),"
                                  " EXISTS(SELECT 1 FROM winners w WHERE"
                                  " w.problem_id=p.id AND w.device_id=r.device_id AND w.candidate_id=r.candidate_id)"
                                  " FROM results r JOIN problems p ON p.id=r.problem_id WHERE r.status='ok'"
                                  " AND r.time_us > 0 AND r.device_id=?1 AND p.op=?2 AND p.tag=?3 AND p.n=?4 AND p.k=?5"
                                  " AND r.candidate_id IN (" AT_STORE_CURRENT_CANDIDATES ") ORDER BY p.m, r.candidate_id",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, device_id);
  bind_text(st, 2, op);
  bind_text(st, 3, tag);
  sqlite3_bind_int64(st, 4, n);
  sqlite3_bind_int64(st, 5, k);
  int rc;
  size_t cap = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*count == cap) {
      cap = cap ? cap * 2 : 256;
      *out = at_xrealloc(*out, sizeof **out * cap);
    }
    at_tuned_row *t = &(*out)[(*count)++];
    t->m = sqlite3_column_int64(st, 0);
    t->candidate_id = sqlite3_column_int64(st, 1);
    t->time_us = sqlite3_column_double(st, 2);
    t->alone_us = sqlite3_column_double(st, 3);
    t->winner = sqlite3_column_int(st, 4);
  }
  sqlite3_finalize(st);
  SQL_CHECK(s, rc);
  return AT_OK;
}

int at_store_candidate_config(at_store *s, int64_t candidate_id, at_config *out) {
  finalize_last(s);
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db,
                                  "SELECT v.name, v.family, v.template, v.entry, c.params, v.id FROM candidates c JOIN variants v"
                                  " ON v.id=c.variant_id WHERE c.id=?",
                                  -1, &st, NULL));
  sqlite3_bind_int64(st, 1, candidate_id);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? at_fail(AT_ERR_RUNTIME, "candidate %lld is not in the DB", (long long)candidate_id)
                             : sql_fail(s, "candidate config", rc, __FILE__, __LINE__);
  }
  const char *name, *family, *tpl, *entry, *params_text;
  int64_t vid = sqlite3_column_int64(st, 5);
  if ((rc = text_col(s, st, 0, "variants.name", vid, &name)) || (rc = text_col(s, st, 1, "variants.family", vid, &family)) ||
      (rc = text_col(s, st, 2, "variants.template", vid, &tpl)) || (rc = text_col(s, st, 3, "variants.entry", vid, &entry)) ||
      (rc = text_col(s, st, 4, "candidates.params", candidate_id, &params_text))) {
    sqlite3_finalize(st);
    return rc;
  }
  const char *base = strrchr(tpl, '/');
  snprintf(out->variant, sizeof out->variant, "%s", name);
  snprintf(out->family, sizeof out->family, "%s", family);
  snprintf(out->template_name, sizeof out->template_name, "%s", base ? base + 1 : tpl);
  snprintf(out->entry, sizeof out->entry, "%s", entry);
  char *params = at_xstrdup(params_text);
  sqlite3_finalize(st);
  rc = at_config_set_params(out, params);
  free(params);
  out->valid = rc == AT_OK;
  return rc;
}

int at_store_device_sm_count(at_store *s, int64_t device_id, int *out) {
  finalize_last(s);
  *out = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT sm_count FROM devices WHERE id=?", -1, &st, NULL));
  sqlite3_bind_int64(st, 1, device_id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *out = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_fail(s, "device sm_count", rc, __FILE__, __LINE__);
  return AT_OK;
}

int at_store_candidate_quarantined(at_store *s, int64_t candidate_id, int *quarantined) {
  finalize_last(s);
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT quarantined FROM candidates WHERE id=?", -1, &st, NULL));
  sqlite3_bind_int64(st, 1, candidate_id);
  int64_t q;
  AT_TRY(step_id(s, st, &q));
  *quarantined = q == 1;
  return AT_OK;
}

int at_store_get_winner(at_store *s, int64_t problem_id, int64_t device_id, int64_t *candidate_id, double *time_us) {
  finalize_last(s);
  *candidate_id = -1;
  *time_us = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT candidate_id, time_us FROM winners WHERE problem_id=? AND device_id=?", -1,
                                  &st, NULL));
  sqlite3_bind_int64(st, 1, problem_id);
  sqlite3_bind_int64(st, 2, device_id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *candidate_id = sqlite3_column_int64(st, 0);
    *time_us = sqlite3_column_double(st, 1);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_fail(s, "get winner", rc, __FILE__, __LINE__);
  return AT_OK;
}

int at_store_get_baseline(at_store *s, int64_t problem_id, int64_t device_id, const char *name, double *time_us) {
  finalize_last(s);
  *time_us = 0;
  sqlite3_stmt *st;
  SQL_CHECK(s, sqlite3_prepare_v2(s->db, "SELECT time_us FROM baselines WHERE problem_id=? AND device_id=? AND name=?", -1,
                                  &st, NULL));
  sqlite3_bind_int64(st, 1, problem_id);
  sqlite3_bind_int64(st, 2, device_id);
  bind_text(st, 3, name);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *time_us = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sql_fail(s, "get baseline", rc, __FILE__, __LINE__);
  return AT_OK;
}

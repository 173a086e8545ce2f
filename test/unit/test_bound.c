/* test_bound.c: the CPU side of the check's dot-product bound (docs/timing.md):
 *   - `check: gamma` in a space: its default (0, the old rule), a value, and bad values reported at
 *     file:line:col (the malformed corpus has more: test/data/bad/gamma_*.yaml);
 *   - the DB: results and baselines keep the worst error / bound (`check_ratio`, NULL when there was
 *     no check, infinite for a NaN output), and a DB of schema version 1 is read as it is by readers
 *     and migrated, rows kept, by the tuner's open. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/space.h"
#include "core/store.h"
#include "core/util.h"
#include "proc.h"

static char *TMP;

static const char *env(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "%s is not set (run through meson test)\n", name);
    exit(2);
  }
  return v;
}

/* A one-variant space with the given check section, written to TMP/name; returns its path. */
static char *space_with_check(const char *name, const char *check) {
  char *path = at_path_join(TMP, name);
  char *text = at_xasprintf("op: gemm_a8w8_blockscale\n"
                            "tag: BOUND\n"
                            "%s"
                            "variants:\n"
                            "  - name: mma\n"
                            "    template: %s/templates/gemm_a8w8_blockscale_mma.cuh\n"
                            "    entry: \"gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES,"
                            " GROUP_M, SPLIT_K, B_HINT>\"\n"
                            "    params: {BLOCK_M: 16, BLOCK_N: 64, BLOCK_K: 128, WARPS_M: 1, WARPS_N: 2, STAGES: 2,"
                            " GROUP_M: 1, SPLIT_K: 1, B_HINT: 0}\n"
                            "shapes:\n"
                            "  - {N: 1024, K: 512, M: [16]}\n",
                            check, env("AT_TEST_SOURCE_ROOT"));
  at_write_file_atomic(path, text, strlen(text));
  free(text);
  return path;
}

static void gamma_in_the_space(void) {
  at_space *s = NULL;
  char *p = space_with_check("none.yaml", "");
  CHECK_EQ_INT(at_space_load(p, &s), AT_OK);
  CHECK(s && s->gamma == 0 && s->atol == 1e-2 && s->rtol == 1e-2); /* the old rule by default */
  at_space_free(s);
  free(p);

  p = space_with_check("gamma.yaml", "check:\n  atol: 1e-2\n  rtol: 1e-2\n  gamma: 2.5e-3\n");
  CHECK_EQ_INT(at_space_load(p, &s), AT_OK);
  CHECK(s && s->gamma == 2.5e-3 && s->atol == 1e-2);
  at_space_free(s);
  free(p);

  /* The shipped space uses the value measured on the H100 (docs/timing.md): 2^-10. */
  p = at_xasprintf("%s/search_spaces/a8w8_blockscale.yaml", env("AT_TEST_SOURCE_ROOT"));
  CHECK_EQ_INT(at_space_load(p, &s), AT_OK);
  CHECK(s && s->gamma == 0.0009765625);
  at_space_free(s);
  free(p);

  p = space_with_check("flow.yaml", "check: {atol: 0.02, gamma: 0}\n");
  CHECK_EQ_INT(at_space_load(p, &s), AT_OK);
  CHECK(s && s->gamma == 0 && s->atol == 0.02);
  at_space_free(s);
  free(p);

  /* Bad values: exit status 2's code, and the position of the value. */
  static const struct {
    const char *check, *where, *msg;
  } BAD[] = {
      {"check:\n  gamma: -1e-3\n", ":4:10: ", "gamma must be at least 0 and below 1"},
      {"check:\n  gamma: 1\n", ":4:10: ", "gamma must be at least 0 and below 1"},
      {"check:\n  gamma: \"1e-3\"\n", ":4:10: ", "gamma must be a finite number"},
      {"check:\n  atol: 1e-2\n  gamma: [1e-3]\n", ":5:10: ", "gamma must be a scalar"},
      {"check:\n  atol: 1e-2\n  gamma: inf\n", ":5:10: ", "gamma must be a finite number"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    p = space_with_check("bad.yaml", BAD[i].check);
    s = NULL;
    CHECK_EQ_INT(at_space_load(p, &s), AT_ERR_INPUT);
    CHECK(s == NULL);
    char *want = at_xasprintf("%s%s%s", p, BAD[i].where, BAD[i].msg);
    CHECK_CONTAINS(at_errmsg(), want);
    free(want);
    free(p);
  }
}

static int64_t q(at_store *s, const char *sql) {
  int64_t v = -2;
  if (at_store_query_int(s, sql, &v)) fprintf(stderr, "query failed: %s: %s\n", sql, at_errmsg());
  return v;
}

/* A DB of schema version 1 from its SQL text (test/data/db/store_v1.sql). */
static char *make_v1_db(const char *name) {
  char *path = at_path_join(TMP, name), *sql_path = at_path_join(env("AT_TEST_DATA"), "db/store_v1.sql");
  char *sql = slurp(sql_path);
  remove(path);
  sqlite3 *db = NULL;
  char *err = NULL;
  CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  CHECK(sql[0] != 0);
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fprintf(stderr, "store_v1.sql: %s\n", err);
  sqlite3_free(err);
  sqlite3_close(db);
  free(sql), free(sql_path);
  return path;
}

static void old_db_read_and_migrated(void) {
  char *path = make_v1_db("v1.db");
  at_store *s = NULL;

  /* Readers (export, query, the runtime) take a version 1 DB as it is, and find its results. */
  CHECK_EQ_INT(at_store_open_readonly(path, &s), AT_OK);
  if (s) {
    CHECK_EQ_INT(q(s, "PRAGMA user_version"), 1);
    at_tuned_nk *nks = NULL;
    size_t n = 0;
    CHECK_EQ_INT(at_store_tuned_nks(s, NULL, 1, &nks, &n), AT_OK);
    CHECK_EQ_INT(n, 1);
    at_tuned_row *rows = NULL;
    size_t count = 0;
    CHECK_EQ_INT(at_store_tuned_rows(s, "gemm_a8w8_blockscale", "OLD", 1, 1024, 512, &rows, &count), AT_OK);
    CHECK_EQ_INT(count, 1);
    CHECK(count == 1 && rows[0].winner == 1 && rows[0].time_us == 5.5);
    free(nks), free(rows);
    at_store_close(s);
  }

  /* The tuner's open migrates it: same rows, the new columns at the same place as in a new DB. */
  s = NULL;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  if (!s) return;
  CHECK_EQ_INT(q(s, "PRAGMA user_version"), AT_STORE_SCHEMA_VERSION);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM results WHERE time_us = 5.5 AND check_ratio IS NULL"), 1);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM baselines WHERE time_us = 6.2 AND check_ratio IS NULL"), 1);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM winners"), 1);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1);
  int64_t res_cid = q(s, "SELECT cid FROM pragma_table_info('results') WHERE name='check_ratio'");
  int64_t base_cid = q(s, "SELECT cid FROM pragma_table_info('baselines') WHERE name='check_ratio'");
  int64_t res_cols = q(s, "SELECT count(*) FROM pragma_table_info('results')");

  /* Results keep their check's worst ratio: NULL without a check, +inf for a NaN output. */
  at_result_row r = {.candidate_id = 1, .problem_id = 1, .device_id = 1, .status = "ok", .time_us = 5.0, .samples = 10,
                     .max_abs_err = 0.003, .first_bad = -1, .check_ratio = 0.47};
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM results WHERE check_ratio = 0.47"), 1);
  r.status = "wrong", r.check_ratio = INFINITY, r.bad_count = 3;
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM results WHERE check_ratio > 1e308"), 1);
  r.status = "fault", r.check_ratio = -1;
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM results WHERE check_ratio IS NULL"), 1);
  CHECK_EQ_INT(at_store_put_baseline_checked(s, 1, 1, 0, "cublaslt_blockscale_fp8", 6.0, 1.47), AT_OK);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM baselines WHERE check_ratio = 1.47 AND time_us = 6.0"), 1);
  CHECK_EQ_INT(at_store_put_baseline(s, 1, 1, 0, "cublas_fp32_reference", 9.0), AT_OK);
  CHECK_EQ_INT(q(s, "SELECT count(*) FROM baselines WHERE name='cublas_fp32_reference' AND check_ratio IS NULL"), 1);
  at_store_close(s);

  /* Opened again: nothing left to migrate, and readers take the new version too. */
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  if (s) CHECK_EQ_INT(q(s, "PRAGMA user_version"), AT_STORE_SCHEMA_VERSION);
  at_store_close(s);
  CHECK_EQ_INT(at_store_open_readonly(path, &s), AT_OK);
  at_store_close(s);

  /* A new DB has the same columns in the same places. */
  char *fresh = at_path_join(TMP, "new.db");
  remove(fresh);
  CHECK_EQ_INT(at_store_open(fresh, &s), AT_OK);
  if (s) {
    CHECK_EQ_INT(q(s, "SELECT cid FROM pragma_table_info('results') WHERE name='check_ratio'"), res_cid);
    CHECK_EQ_INT(q(s, "SELECT cid FROM pragma_table_info('baselines') WHERE name='check_ratio'"), base_cid);
    CHECK_EQ_INT(q(s, "SELECT count(*) FROM pragma_table_info('results')"), res_cols);
    at_store_close(s);
  }

  /* A DB from a newer autotune is still refused, by writers and readers. */
  sqlite3 *db = NULL;
  sqlite3_open(fresh, &db);
  sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL);
  sqlite3_close(db);
  CHECK_EQ_INT(at_store_open(fresh, &s), AT_ERR_RUNTIME);
  CHECK_CONTAINS(at_errmsg(), "newer");
  CHECK_EQ_INT(at_store_open_readonly(fresh, &s), AT_ERR_RUNTIME);
  free(fresh), free(path);
}

int main(void) {
  TMP = scratch_dir("bound");
  gamma_in_the_space();
  old_db_read_and_migrated();
  return check_summary();
}

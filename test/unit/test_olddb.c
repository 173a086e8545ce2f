/* test_olddb.c: old DBs keep working (argv[1] is the binary). Every command that reads a DB is run
 * on a copy of the committed DB of the current schema, test/data/db/v4.db, and of the previous one,
 * v3.db (made by test/data/db/make_db.c; when the schema moves on, those files stay and keep this
 * test honest), and on a version 1 DB (test/data/db/store_v1.sql): report (tables, CSV), export, query (the runtime's
 * lookup), expect record, merge, and tune on the copy (the writer migrates it in place and resumes
 * from it). Nothing here needs a GPU. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/store.h"
#include "core/util.h"
#include "dbq.h"
#include "proc.h"

static const char *EXE;
static char *TMP;

/* A copy of test/data/db/<name> in TMP (the original is never opened). */
static char *copy_of(const char *name) {
  char *src = at_path_join(getenv("AT_TEST_DATA"), name), *dst = at_path_join(TMP, name);
  char *dir = at_dirname(dst);
  at_mkdirs(dir);
  char *cmd = at_xasprintf("cp '%s' '%s'", src, dst);
  CHECK_EQ_INT(system(cmd), 0);
  free(cmd), free(dir), free(src);
  return dst;
}

/* A version 1 DB from its SQL text. */
static char *v1_db(void) {
  char *path = at_path_join(TMP, "v1.db"), *sql_path = at_path_join(getenv("AT_TEST_DATA"), "db/store_v1.sql");
  char *sql = slurp(sql_path);
  sqlite3 *db = NULL;
  CHECK(sqlite3_open(path, &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_close(db);
  free(sql), free(sql_path);
  return path;
}

static int run(char **out, ...) {
  va_list ap;
  va_start(ap, out);
  char *path = at_path_join(TMP, "out.txt");
  int rc = proc_run_va(EXE, path, 600, ap);
  va_end(ap);
  *out = slurp(path);
  if (rc != 0) fprintf(stderr, "exit %d:\n%s\n", rc, *out);
  free(path);
  return rc;
}
#define RUN(out, ...) run(out, __VA_ARGS__, (const char *)NULL)

/* The read commands on one DB: version and its tag, the (N, K) tuned, a shape of it, its results. */
static void read_commands(const char *db, int version, const char *tag, int nks, const char *m, const char *n,
                          const char *k, int results, int merge_needs_force) {
  char *out;
  CHECK_EQ_INT(dbq(db, "PRAGMA user_version"), version);
  /* report: the tables and a CSV row per result */
  char *csv = at_path_join(TMP, "r.csv");
  CHECK_EQ_INT(RUN(&out, "report", "--db", db, "--csv", csv), 0);
  char *want = at_xasprintf("(schema %d)", version);
  CHECK_CONTAINS(out, want);
  CHECK_CONTAINS(out, "== NVIDIA H100 80GB HBM3 (sm90, sm_90a, 132 SMs)");
  free(out), free(want);
  char *text = slurp(csv);
  CHECK_EQ_INT(count_of(text, "\n") - 1, results);
  free(text), free(csv);
  /* export: a file per tuned (N, K) and the tag's default file */
  char *dir = at_path_join(TMP, "configs");
  CHECK_EQ_INT(RUN(&out, "export", "--db", db, "--out", dir), 0);
  CHECK_EQ_INT(count_of(out, ".json\n"), nks + 1);
  want = at_xasprintf("sm90-GEMM-%s.json", tag);
  CHECK_CONTAINS(out, want);
  free(out), free(want);
  /* query: the runtime's lookup answers from the DB */
  CHECK_EQ_INT(RUN(&out, "query", "--db", db, "--op", "gemm_a8w8_blockscale", "-M", m, "-N", n, "-K", k, "--device",
                   "sm90", "--configs", dir),
               0);
  CHECK_CONTAINS(out, "\"source\": \"db\"");
  free(out), free(dir);
  /* expect record: the winners' TFLOP/s */
  char *exp = at_path_join(TMP, "exp.json");
  CHECK_EQ_INT(RUN(&out, "expect", "record", "--db", db, "--out", exp), 0);
  free(out);
  text = slurp(exp);
  want = at_xasprintf("\"tag\": \"%s\"", tag);
  CHECK_CONTAINS(text, want);
  free(text), free(want), free(exp);
  /* merge: into a new DB of the current schema, every result kept */
  char *merged = at_path_join(TMP, "merged.db");
  remove(merged);
  if (merge_needs_force) {
    CHECK_EQ_INT(RUN(&out, "merge", "--db", merged, db), 2); /* an older schema is refused without --force */
    free(out);
    CHECK_EQ_INT(RUN(&out, "merge", "--db", merged, "--force", db), 0);
  } else {
    CHECK_EQ_INT(RUN(&out, "merge", "--db", merged, db), 0);
  }
  free(out);
  CHECK_EQ_INT(dbq(merged, "SELECT count(*) FROM results"), results);
  CHECK_EQ_INT(dbq(merged, "PRAGMA user_version"), AT_STORE_SCHEMA_VERSION);
  free(merged);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("olddb");
  char *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);

  /* The committed DB of schema 3: five shapes of tag REPORT on two (N, K), 90 results. */
  char *v3 = copy_of("db/v3.db");
  read_commands(v3, 3, "REPORT", 2, "16", "1024", "512", 90, AT_STORE_SCHEMA_VERSION != 3);
  /* The writer: a tuning run on the copy migrates it (when the schema has moved on) and resumes. */
  char *space = at_path_join(getenv("AT_TEST_DATA"), "spaces/report.yaml");
  char *out;
  CHECK_EQ_INT(RUN(&out, "--compile-only", "--arch", "sm_90a", "--db", v3, space), 0);
  CHECK_CONTAINS(out, "compile: 18 ok, 0 failed");
  free(out);
  CHECK_EQ_INT(dbq(v3, "PRAGMA user_version"), AT_STORE_SCHEMA_VERSION);
  CHECK_EQ_INT(dbq(v3, "SELECT count(*) FROM results"), 90);
  CHECK_EQ_INT(RUN(&out, "report", "--db", v3, "--top", "0"), 0);
  free(out);

  /* The DB of schema 4: a judge run made the second fastest candidate alone the winner of 16 x 1024 x
   * 512 on launched times; export, query and merge follow it. */
  char *v4 = copy_of("db/v4.db");
  read_commands(v4, 4, "REPORT", 2, "16", "1024", "512", 90, AT_STORE_SCHEMA_VERSION != 4);
  const char *const WINNER = "SELECT candidate_id FROM winners WHERE problem_id = (SELECT id FROM problems WHERE m = 16"
                             " AND n = 1024 AND k = 512)";
  int64_t judged = dbq(v4, "%s AND basis = 'launched'", WINNER);
  CHECK(judged > 0);
  CHECK(judged != dbq(v4, "SELECT candidate_id FROM results WHERE problem_id = (SELECT problem_id FROM winners WHERE"
                          " candidate_id = %lld AND basis = 'launched' LIMIT 1) AND status = 'ok' ORDER BY time_us"
                          " LIMIT 1", (long long)judged));
  CHECK_EQ_INT(dbq(v4, "SELECT count(*) FROM launches"), 6);
  char *sql = at_xasprintf("SELECT params FROM candidates WHERE id = %lld", (long long)judged);
  char *params = dbq_dump(v4, sql);
  free(sql);
  params[strcspn(params, "\n")] = 0;
  CHECK(params[0] == '{');
  CHECK_EQ_INT(RUN(&out, "query", "--db", v4, "--op", "gemm_a8w8_blockscale", "-M", "16", "-N", "1024", "-K", "512",
                   "--device", "sm90"),
               0);
  CHECK_CONTAINS(out, params);
  free(out), free(params);
  char *merged = at_path_join(TMP, "merged.db"); /* read_commands' merge of v4 into a new DB */
  CHECK_EQ_INT(dbq(merged, "SELECT count(*) FROM launches"), 6);
  CHECK_EQ_INT(dbq(merged, "SELECT count(*) FROM winners WHERE basis = 'launched'"), 2);
  CHECK_EQ_INT(dbq(merged, "SELECT count(*) FROM winners WHERE basis = 'alone'"), 3);
  free(merged);

  /* A DB of schema 1 (no check_ratio, no run uid): one shape of tag OLD, one result. */
  char *v1 = v1_db();
  read_commands(v1, 1, "OLD", 1, "64", "1024", "512", 1, 1);

  free(v1), free(v3), free(v4), free(space), free(cache);
  return check_summary();
}

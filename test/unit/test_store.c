/* test_store.c: the SQLite store: schema and version, upserts that keep ids, results replaced in
 * place, read-only opening, refusal of foreign, newer or corrupt files, two processes writing one
 * DB at once (BEGIN IMMEDIATE with retry), NULLs in NOT NULL columns of a schema edited by hand
 * (a "corrupt DB" error, not a crash), and a wait for another writer's lock that a stop flag ends
 * at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/store.h"
#include "core/util.h"
#include "check.h"
#include "dbq.h"
#include "proc.h"

static at_cand_row cand(const char *key, int64_t variant, int regs) {
  at_cand_row r = {.compile_key = key, .variant_id = variant, .params = "{\"A\":1}", .name_expr = "k<1>",
                   .arch = "sm_90a", .ok = 1, .log = "ptxas info", .lowered_name = "_Z1kILi1EEvv", .regs = regs,
                   .threads = 128, .smem_bytes = 4096, .compile_ms = 12.5, .cubin_hash = "ab"};
  return r;
}

/* Writer process for the concurrency check: n results, one transaction each. */
static int writer(const char *path, int64_t cand0, int n) {
  at_store *s;
  if (at_store_open(path, &s)) return 1;
  int64_t problem, device, variant, id;
  at_device_row d = {"GPU X", "sm_90a", "uuid", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  int rc = at_store_problem(s, "op", "TAG", 1, 2, 3, &problem);
  if (!rc) rc = at_store_device(s, &d, &device);
  if (!rc) rc = at_store_variant(s, "op", "v", "mma", "t.cuh", "k<A>", "h", 0, &variant);
  for (int i = 0; i < n && !rc; i++) {
    char key[32];
    snprintf(key, sizeof key, "key-%lld", (long long)(cand0 + i));
    at_cand_row c = cand(key, variant, 64);
    rc = at_store_put_candidate(s, &c, &id);
    at_result_row r = {.candidate_id = id, .problem_id = problem, .device_id = device, .status = "ok", .time_us = 1.0,
                       .samples = 10, .max_abs_err = 0.001};
    if (!rc) rc = at_store_put_result(s, &r);
  }
  if (rc) {
    fprintf(stderr, "writer: %s\n", at_errmsg());
    return 1;
  }
  at_store_close(s);
  return 0;
}

/* Runs sql on path, then expects the store's reads to fail with "corrupt DB" naming column. */
static void null_column(const char *path, const char *sql, const char *column) {
  at_store *s;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, sql), AT_OK);
  int failures = 0, reads = 0;
  at_cand_row row;
  int found = 0;
  const char *status;
  double us;
  at_device_entry *devs = NULL;
  size_t n = 0;
  at_tuned_nk *nks = NULL;
  at_config cfg;
  /* Every read that touches the column: each either succeeds or says "corrupt DB". */
#define READ(expr)                                                                                                     \
  do {                                                                                                                 \
    reads++;                                                                                                           \
    if ((expr) != AT_OK) {                                                                                             \
      failures++;                                                                                                      \
      CHECK_CONTAINS(at_errmsg(), "corrupt DB");                                                                       \
      CHECK_CONTAINS(at_errmsg(), column);                                                                             \
    }                                                                                                                  \
  } while (0)
  READ(at_store_find_candidate(s, "key-a", &row, &found));
  READ(at_store_get_result(s, 1, 1, 1, &status, &us));
  READ(at_store_devices(s, &devs, &n));
  free(devs);
  READ(at_store_tuned_nks(s, NULL, 1, &nks, &n));
  free(nks);
  READ(at_store_candidate_config(s, 1, &cfg));
#undef READ
  CHECK(failures >= 1);
  if (failures < 1) fprintf(stderr, "  no read noticed NULL in %s\n", column);
  at_store_close(s);
}

/* A DB whose schema lost its NOT NULLs, with NULLs where autotune never writes them: each read
 * that meets one fails cleanly (these used to be strcmp and strrchr on NULL). */
static void null_columns(const char *tmp) {
  static const struct {
    const char *sql, *column;
  } CASES[] = {
      {"UPDATE candidates SET status=NULL", "candidates.status"},
      {"UPDATE candidates SET params=NULL", "candidates.params"},
      {"UPDATE results SET status=NULL", "results.status"},
      {"UPDATE devices SET name=NULL", "devices.name"},
      {"UPDATE devices SET cc=NULL", "devices.cc"},
      {"UPDATE problems SET tag=NULL", "problems.tag"},
      {"UPDATE variants SET template=NULL", "variants.template"},
      {"UPDATE variants SET entry=NULL", "variants.entry"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char *path = at_xasprintf("%s/null%zu.db", tmp, i);
    at_store *s;
    CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
    int64_t var, cid, prob, dev;
    CHECK_EQ_INT(at_store_variant(s, "op", "mma", "mma", "/a/t.cuh", "k<A>", "h", 0, &var), AT_OK);
    at_cand_row c = cand("key-a", var, 64);
    CHECK_EQ_INT(at_store_put_candidate(s, &c, &cid), AT_OK);
    CHECK_EQ_INT(at_store_problem(s, "op", "TAG", 16, 1024, 1024, &prob), AT_OK);
    at_device_row d = {"GPU X", "sm_90a", "uuid", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
    CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);
    at_result_row r = {.candidate_id = cid, .problem_id = prob, .device_id = dev, .status = "ok", .time_us = 1,
                       .samples = 10};
    CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
    at_store_close(s);
    dbq_drop_not_null(path);
    null_column(path, CASES[i].sql, CASES[i].column);
    free(path);
  }
}

/* Another connection holds the write lock: a write waits (up to its limit), and ends at once when
 * the stop flag is set, with a message that says why; the store remembers that it was stopped. */
static void lock_wait(const char *tmp) {
  char *path = at_path_join(tmp, "locked.db");
  at_store *holder, *s;
  CHECK_EQ_INT(at_store_open(path, &holder), AT_OK);
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(holder, "BEGIN IMMEDIATE"), AT_OK);
  int64_t id;
  /* A short limit, no stop: gives up after it, saying who holds what. */
  at_store_set_lock_wait(s, 0.3);
  double t0 = at_now_s();
  CHECK_EQ_INT(at_store_problem(s, "op", "T", 1, 8, 128, &id), AT_ERR_RUNTIME);
  double waited = at_now_s() - t0;
  CHECK(waited >= 0.25 && waited < 5);
  CHECK_CONTAINS(at_errmsg(), "another writer has held the DB's lock");
  CHECK(!at_store_lock_interrupted(s));
  /* A long limit and the stop flag set: ends at once. */
  volatile sig_atomic_t stop = 1;
  at_store_set_lock_wait(s, 6000);
  at_store_set_stop(s, &stop);
  t0 = at_now_s();
  CHECK_EQ_INT(at_store_problem(s, "op", "T", 1, 8, 128, &id), AT_ERR_RUNTIME);
  CHECK(at_now_s() - t0 < 2);
  CHECK_CONTAINS(at_errmsg(), "interrupted while waiting for another writer's lock");
  CHECK(at_store_lock_interrupted(s));
  /* Once the lock is free, writes go through again (the flag no longer matters without a wait). */
  CHECK_EQ_INT(at_store_exec(holder, "COMMIT"), AT_OK);
  CHECK_EQ_INT(at_store_problem(s, "op", "T", 1, 8, 128, &id), AT_OK);
  at_store_close(s);
  at_store_close(holder);
  free(path);
}

/* A new candidate (cubin "ab", the params and entry of cand()) that tries to adopt a result on
 * (problem, device); returns its id, *adopted as at_store_adopt_result says. */
static int64_t new_twin(at_store *s, const char *key, int64_t variant, int64_t problem, int64_t device, int *adopted) {
  at_cand_row c = cand(key, variant, 64);
  int64_t id = -1;
  CHECK_EQ_INT(at_store_put_candidate(s, &c, &id), AT_OK);
  CHECK_EQ_INT(at_store_adopt_result(s, id, problem, device, 0, adopted), AT_OK);
  return id;
}

/* Whether candidate's result says it was adopted from the measurement of candidate measured, once
 * (no stacked prefixes). */
static int adopted_from(at_store *s, int64_t candidate, int64_t measured) {
  char q[256];
  snprintf(q, sizeof q, "SELECT count(*) FROM results WHERE candidate_id=%lld AND message LIKE"
           " 'same cubin as candidate %lld, measured in run %%' AND message NOT LIKE '%%: same cubin%%'",
           (long long)candidate, (long long)measured);
  int64_t v = -1;
  CHECK_EQ_INT(at_store_query_int(s, q, &v), AT_OK);
  return v == 1;
}

int main(void) {
  char *tmp = scratch_dir("store");
  char *path = at_path_join(tmp, "sub/dir/t.db"); /* directories are created */
  at_store *s;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  int64_t v;
  CHECK_EQ_INT(at_store_query_int(s, "PRAGMA user_version", &v), AT_OK);
  CHECK_EQ_INT(v, AT_STORE_SCHEMA_VERSION);

  int64_t var1, var2;
  CHECK_EQ_INT(at_store_variant(s, "op", "mma", "mma", "/a/t.cuh", "k<A>", "hash1", 0, &var1), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "op", "mma", "mma", "/moved/t.cuh", "k<A>", "hash1", 0, &var2), AT_OK);
  CHECK_EQ_INT(var1, var2); /* same content, moved file: same variant */
  CHECK_EQ_INT(at_store_variant(s, "op", "mma", "mma", "/a/t.cuh", "k<A>", "hash2", 0, &var2), AT_OK);
  CHECK(var1 != var2);

  int64_t id1, id2;
  at_cand_row c = cand("key-a", var1, 64);
  CHECK_EQ_INT(at_store_put_candidate(s, &c, &id1), AT_OK);
  at_cand_row got;
  int found = 0;
  CHECK_EQ_INT(at_store_find_candidate(s, "key-a", &got, &found), AT_OK);
  CHECK(found);
  CHECK_EQ_INT(got.id, id1);
  CHECK_EQ_INT(got.regs, 64);
  CHECK(got.ok);
  CHECK(strcmp(got.lowered_name, "_Z1kILi1EEvv") == 0);
  c.regs = 80;
  CHECK_EQ_INT(at_store_put_candidate(s, &c, &id2), AT_OK);
  CHECK_EQ_INT(id2, id1); /* an upsert keeps the id results refer to */
  CHECK_EQ_INT(at_store_find_candidate(s, "key-a", &got, &found), AT_OK);
  CHECK_EQ_INT(got.regs, 80);
  CHECK_EQ_INT(at_store_find_candidate(s, "key-none", &got, &found), AT_OK);
  CHECK(!found);
  at_cand_row bad = cand("key-b", var1, 0);
  bad.ok = 0;
  bad.log = "error: static assertion failed";
  CHECK_EQ_INT(at_store_put_candidate(s, &bad, &id2), AT_OK);
  CHECK_EQ_INT(at_store_find_candidate(s, "key-b", &got, &found), AT_OK);
  CHECK(found && !got.ok);
  CHECK_CONTAINS(got.log, "static assertion");

  int64_t p1, p2, dev;
  CHECK_EQ_INT(at_store_problem(s, "op", "TAG", 16, 1024, 1024, &p1), AT_OK);
  CHECK_EQ_INT(at_store_problem(s, "op", "TAG", 16, 1024, 1024, &p2), AT_OK);
  CHECK_EQ_INT(p1, p2);
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-1", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);

  at_result_row r = {.candidate_id = id1, .problem_id = p1, .device_id = dev, .status = "wrong", .max_abs_err = 3.5,
                     .bad_count = 7, .first_bad = 12, .message = "7 of 16384 elements out of tolerance"};
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
  const char *status;
  double us;
  CHECK_EQ_INT(at_store_get_result(s, id1, p1, dev, &status, &us), AT_OK);
  CHECK(strcmp(status, "wrong") == 0);
  r.status = "ok";
  r.time_us = 4.25;
  r.samples = 10;
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK); /* replaced, not duplicated */
  CHECK_EQ_INT(at_store_get_result(s, id1, p1, dev, &status, &us), AT_OK);
  CHECK(strcmp(status, "ok") == 0);
  CHECK(us == 4.25);
  CHECK_EQ_INT(at_store_query_int(s, "SELECT count(*) FROM results", &v), AT_OK);
  CHECK_EQ_INT(v, 1);
  CHECK_EQ_INT(at_store_get_result(s, id2, p1, dev, &status, &us), AT_OK);
  CHECK(status[0] == 0);
  /* A result of the same cubin, launched the same way, is adopted by a candidate without one (a
   * template edit that left the machine code alone); another cubin, other params or a result
   * already there are not touched. */
  {
    int64_t var3, twin, other, odd;
    CHECK_EQ_INT(at_store_variant(s, "op", "mma", "mma", "/a/t.cuh", "k<A>", "hash3", 0, &var3), AT_OK);
    at_cand_row t = cand("key-twin", var3, 64); /* cubin "ab", params and entry of key-a (id1) */
    CHECK_EQ_INT(at_store_put_candidate(s, &t, &twin), AT_OK);
    at_cand_row o = cand("key-other", var3, 64);
    o.cubin_hash = "cd";
    CHECK_EQ_INT(at_store_put_candidate(s, &o, &other), AT_OK);
    at_cand_row q = cand("key-odd", var3, 64);
    q.params = "{\"A\":2}"; /* same cubin hash (made up), other launch parameters */
    CHECK_EQ_INT(at_store_put_candidate(s, &q, &odd), AT_OK);
    int has = -1;
    CHECK_EQ_INT(at_store_has_twin(s, twin, &has), AT_OK);
    CHECK_EQ_INT(has, 1);
    CHECK_EQ_INT(at_store_has_twin(s, other, &has), AT_OK);
    CHECK_EQ_INT(has, 0);
    CHECK_EQ_INT(at_store_has_twin(s, odd, &has), AT_OK);
    CHECK_EQ_INT(has, 0);
    CHECK_EQ_INT(at_store_query_int(s, "SELECT count(*) FROM sqlite_master WHERE name='candidates_by_cubin'", &v),
                 AT_OK);
    CHECK_EQ_INT(v, 1);
    int adopted = -1;
    CHECK_EQ_INT(at_store_adopt_result(s, twin, p1, dev, 0, &adopted), AT_OK);
    CHECK_EQ_INT(adopted, 1);
    CHECK_EQ_INT(at_store_get_result(s, twin, p1, dev, &status, &us), AT_OK);
    CHECK(strcmp(status, "ok") == 0);
    CHECK(us == 4.25);
    CHECK(adopted_from(s, twin, id1));
    CHECK_EQ_INT(at_store_adopt_result(s, twin, p1, dev, 0, &adopted), AT_OK);
    CHECK_EQ_INT(adopted, 0); /* it has one now */
    CHECK_EQ_INT(at_store_adopt_result(s, other, p1, dev, 0, &adopted), AT_OK);
    CHECK_EQ_INT(adopted, 0);
    CHECK_EQ_INT(at_store_adopt_result(s, odd, p1, dev, 0, &adopted), AT_OK);
    CHECK_EQ_INT(adopted, 0);
    CHECK_EQ_INT(at_store_get_result(s, other, p1, dev, &status, &us), AT_OK);
    CHECK(status[0] == 0);
    /* A second edit: the third copy's message names the candidate that was measured, not the one
     * that adopted it; and so does a fourth's when only the copies are left. */
    int64_t third = new_twin(s, "key-third", var3, p1, dev, &adopted);
    CHECK_EQ_INT(adopted, 1);
    CHECK(adopted_from(s, third, id1));
    CHECK_EQ_INT(at_store_exec(s, "UPDATE candidates SET quarantined=1 WHERE compile_key='key-a'"), AT_OK);
    int64_t fourth = new_twin(s, "key-fourth", var3, p1, dev, &adopted);
    CHECK_EQ_INT(adopted, 1);
    CHECK(adopted_from(s, fourth, id1));
    /* A quarantined twin lends nothing. */
    CHECK_EQ_INT(at_store_exec(s, "UPDATE candidates SET quarantined=1 WHERE compile_key IN ('key-twin', 'key-third',"
                                  " 'key-fourth')"),
                 AT_OK);
    int64_t fifth = new_twin(s, "key-fifth", var3, p1, dev, &adopted);
    CHECK_EQ_INT(adopted, 0);
    CHECK_EQ_INT(at_store_has_twin(s, fifth, &has), AT_OK);
    CHECK_EQ_INT(has, 0);
    CHECK_EQ_INT(at_store_exec(s, "UPDATE candidates SET quarantined=0"), AT_OK);
    CHECK_EQ_INT(at_store_exec(s, "DELETE FROM results WHERE message LIKE 'same cubin%'"), AT_OK);
    CHECK_EQ_INT(at_store_exec(s, "DELETE FROM candidates WHERE compile_key IN ('key-twin', 'key-other', 'key-odd',"
                                  " 'key-third', 'key-fourth', 'key-fifth')"),
                 AT_OK);
  }
  /* A status outside the list is refused by the schema. */
  r.status = "maybe";
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_ERR_RUNTIME);
  at_store_close(s);

  /* A writer adds the cubin index to an existing DB that lacks it (a DB of this version from
   * before the index). */
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "DROP INDEX candidates_by_cubin"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  CHECK_EQ_INT(at_store_query_int(s, "SELECT count(*) FROM sqlite_master WHERE name='candidates_by_cubin'", &v), AT_OK);
  CHECK_EQ_INT(v, 1);
  at_store_close(s);

  /* Read-only opening of the same file. */
  at_store *ro;
  CHECK_EQ_INT(at_store_open_readonly(path, &ro), AT_OK);
  CHECK_EQ_INT(at_store_query_int(ro, "SELECT count(*) FROM candidates", &v), AT_OK);
  CHECK_EQ_INT(v, 2);
  at_store_close(ro);
  char *missing = at_path_join(tmp, "missing.db");
  CHECK_EQ_INT(at_store_open_readonly(missing, &ro), AT_ERR_RUNTIME);

  /* A newer schema, a foreign DB and a corrupt file are refused, not touched. */
  char *newer = at_path_join(tmp, "newer.db");
  CHECK_EQ_INT(at_store_open(newer, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "PRAGMA user_version=99"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(at_store_open(newer, &s), AT_ERR_RUNTIME);
  CHECK_CONTAINS(at_errmsg(), "newer");
  char *foreign = at_path_join(tmp, "foreign.db");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -f '%s'", foreign);
  if (system(cmd) != 0) fprintf(stderr, "rm failed\n");
  CHECK_EQ_INT(at_store_open(foreign, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "PRAGMA user_version=0; CREATE TABLE other(x)"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(at_store_open(foreign, &s), AT_ERR_RUNTIME);
  CHECK_CONTAINS(at_errmsg(), "not an autotune DB");
  char *corrupt = at_path_join(tmp, "corrupt.db");
  at_write_file_atomic(corrupt, "this is not a database, just some bytes that are long enough to look like one.....", 80);
  CHECK_EQ_INT(at_store_open(corrupt, &s), AT_ERR_RUNTIME);
  CHECK_EQ_INT(at_store_open_readonly(corrupt, &s), AT_ERR_RUNTIME);
  CHECK_CONTAINS(at_errmsg(), "corrupt.db: not an SQLite database"); /* the file named, not SQLite's code */

  /* Two processes writing one DB at once: every row of both arrives. */
  char *shared = at_path_join(tmp, "shared.db");
  CHECK_EQ_INT(at_store_open(shared, &s), AT_OK);
  at_store_close(s);
  pid_t a = fork();
  if (a == 0) _exit(writer(shared, 0, 150));
  pid_t b = fork();
  if (b == 0) _exit(writer(shared, 1000, 150));
  int sa = 0, sb = 0;
  waitpid(a, &sa, 0);
  waitpid(b, &sb, 0);
  CHECK(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
  CHECK(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
  CHECK_EQ_INT(at_store_open(shared, &s), AT_OK);
  CHECK_EQ_INT(at_store_query_int(s, "SELECT count(*) FROM results", &v), AT_OK);
  CHECK_EQ_INT(v, 300);
  CHECK_EQ_INT(at_store_query_int(s, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'", &v), AT_OK);
  CHECK_EQ_INT(v, 1);
  at_store_close(s);

  null_columns(tmp);
  lock_wait(tmp);

  free(shared), free(corrupt), free(foreign), free(newer), free(missing), free(path), free(tmp);
  return check_summary();
}

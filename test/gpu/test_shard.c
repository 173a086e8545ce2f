/* test_shard.c: shard-then-merge on the GPU (docs/cluster.md; needs a GPU, exits 77 where there is
 * none). argv[1] is the autotune binary. A small space (test/data/spaces/shard_gpu.yaml: 8
 * candidates, 3 shapes) is tuned as `--shard 1/2` and `--shard 2/2` into two DBs, one after the
 * other, the two are merged with `autotune merge`, and the space is tuned again unsharded into a
 * third DB. The merged DB must hold what the unsharded run holds:
 *  - the same (candidate, shape) pairs evaluated, each in exactly one shard, and the same count of
 *    results per status (all `ok`);
 *  - a winner for every shape, and per shape the same winner, or (two candidates within timing
 *    noise, re-timed side by side within different shards) a winner whose time is within 5% of the
 *    unsharded winner's, and whose first timing in the unsharded run is within 10% of that run's
 *    winner's first timing;
 *  - the runs of both shards, finished, and a merged DB that exports.
 * All three runs share one compile cache, so every candidate is compiled once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "../unit/dbq.h"
#include "../unit/proc.h"
#include "core/util.h"

static const char *EXE;
static char *TMP;

/* Is the merged DB's text the expected one (the unsharded DB's)? Says both where not. */
static int same_text(const char *what, const char *merged, const char *expected) {
  int same = strcmp(merged, expected) == 0;
  if (!same) fprintf(stderr, "---- %s: merged:\n%s---- expected:\n%s----\n", what, merged, expected);
  return same;
}

/* Runs autotune with the arguments up to a NULL; prints its output; its exit status. */
static int run(const char *what, ...) {
  char *out = at_path_join(TMP, "run.txt");
  va_list ap;
  va_start(ap, what);
  int rc = proc_run_va(EXE, out, 900, ap);
  va_end(ap);
  char *text = slurp(out);
  fprintf(stderr, "---- %s (exit %d)\n%s----\n", what, rc, text);
  free(text), free(out);
  return rc;
}

/* Every (candidate, shape) evaluated, with its status. */
static const char *PAIRS_SQL =
    "SELECT c.compile_key, p.m, p.n, p.k, x.status FROM results x JOIN candidates c ON c.id = x.candidate_id"
    " JOIN problems p ON p.id = x.problem_id ORDER BY 1, 2, 3, 4";
static const char *STATUS_SQL = "SELECT status, count(*) FROM results GROUP BY status ORDER BY status";

/* The winner's compile key and time, and the first time_us its result has, on shape (m, n, k). */
static int winner(const char *db, long long m, long long n, long long k, char key[200], double *time_us,
                  double *first_us) {
  char sql[600];
  snprintf(sql, sizeof sql,
           "SELECT c.compile_key, w.time_us, x.time_us FROM winners w JOIN problems p ON p.id = w.problem_id"
           " JOIN candidates c ON c.id = w.candidate_id JOIN results x ON x.candidate_id = w.candidate_id"
           " AND x.problem_id = w.problem_id AND x.device_id = w.device_id WHERE p.m = %lld AND p.n = %lld"
           " AND p.k = %lld",
           m, n, k);
  char *row = dbq_dump(db, sql);
  char *bar = strchr(row, '|');
  int ok = bar != NULL && count_of(row, "\n") == 1;
  if (ok) {
    snprintf(key, 200, "%.*s", (int)(bar - row), row);
    *time_us = strtod(bar + 1, &bar);
    *first_us = strtod(bar + 1, NULL);
  }
  free(row);
  return ok;
}

/* The first time_us of candidate key on shape (m, n, k) in db; -1 when it has none. */
static double first_time(const char *db, const char *key, long long m, long long n, long long k) {
  char sql[600];
  snprintf(sql, sizeof sql,
           "SELECT x.time_us FROM results x JOIN candidates c ON c.id = x.candidate_id JOIN problems p"
           " ON p.id = x.problem_id WHERE c.compile_key = '%s' AND x.status = 'ok' AND p.m = %lld AND p.n = %lld"
           " AND p.k = %lld",
           key, m, n, k);
  char *row = dbq_dump(db, sql);
  double t = row[0] ? strtod(row, NULL) : -1;
  free(row);
  return t;
}

/* a and b measured, and each within tolerance (relative) of the other */
static int within(double a, double b, double tolerance) {
  return a > 0 && b > 0 && a <= b * (1 + tolerance) && b <= a * (1 + tolerance);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("gpu_shard");
  char *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);
  proc_require_gpu(EXE, TMP);
  char *space = at_path_join(getenv("AT_TEST_DATA"), "spaces/shard_gpu.yaml");
  char *s1 = at_path_join(TMP, "shard-1-of-2.db"), *s2 = at_path_join(TMP, "shard-2-of-2.db");
  char *merged = at_path_join(TMP, "merged.db"), *full = at_path_join(TMP, "full.db");
  char *configs = at_path_join(TMP, "configs");

  /* Two shards in sequence on the GPU, merged; then the unsharded run. */
  CHECK_EQ_INT(run("shard 1/2", "--db", s1, "--shard", "1/2", space, (const char *)NULL), 0);
  CHECK_EQ_INT(run("shard 2/2", "--db", s2, "--shard", "2/2", space, (const char *)NULL), 0);
  CHECK_EQ_INT(run("merge", "merge", "--db", merged, s1, s2, (const char *)NULL), 0);
  /* (the tuner's winners alone: shards do not judge, so neither does the run they are compared with) */
  CHECK_EQ_INT(run("unsharded", "--db", full, "--no-judge", space, (const char *)NULL), 0);

  /* The same work: every pair in exactly one shard, the same pairs and statuses as unsharded. */
  int64_t pairs = dbq(full, "SELECT count(*) FROM results");
  CHECK_EQ_INT(pairs, 8 * 3);
  CHECK_EQ_INT(dbq(full, "SELECT count(*) FROM results WHERE status != 'ok'"), 0);
  CHECK(dbq(s1, "SELECT count(*) FROM results") > 0);
  CHECK(dbq(s2, "SELECT count(*) FROM results") > 0);
  CHECK_EQ_INT(dbq(s1, "SELECT count(*) FROM results") + dbq(s2, "SELECT count(*) FROM results"), pairs);
  char *a = dbq_dump(merged, PAIRS_SQL), *b = dbq_dump(full, PAIRS_SQL);
  CHECK(a[0] && same_text("(candidate, shape, status)", a, b));
  free(a), free(b);
  a = dbq_dump(merged, STATUS_SQL), b = dbq_dump(full, STATUS_SQL);
  CHECK(a[0] && same_text("results per status", a, b));
  free(a), free(b);
  a = dbq_dump(merged, "SELECT shard, status FROM runs ORDER BY shard");
  CHECK(same_text("runs", a, "1/2|done\n2/2|done\n"));
  free(a);

  /* A winner for every shape; per shape the same one, or one as fast within timing noise. */
  CHECK_EQ_INT(dbq(full, "SELECT count(*) FROM winners"), 3);
  CHECK_EQ_INT(dbq(merged, "SELECT count(*) FROM winners"), 3);
  static const long long SHAPES[3][3] = {{64, 2048, 1024}, {256, 2048, 1024}, {512, 4096, 2048}};
  for (int i = 0; i < 3; i++) {
    long long m = SHAPES[i][0], n = SHAPES[i][1], k = SHAPES[i][2];
    char km[200] = "", kf[200] = "";
    double tm = 0, tf = 0, fm = 0, ff = 0;
    CHECK(winner(merged, m, n, k, km, &tm, &fm));
    CHECK(winner(full, m, n, k, kf, &tf, &ff));
    /* the merged winner as the unsharded run measured it, against the unsharded winner's own */
    double tm_in_full = first_time(full, km, m, n, k);
    int same = km[0] && strcmp(km, kf) == 0;
    fprintf(stderr,
            "M=%lld N=%lld K=%lld: merged winner %s %.3f us; unsharded winner %s %.3f us%s; the merged winner in the"
            " unsharded run %.3f us (its winner %.3f us first timing)\n",
            m, n, k, km, tm, kf, tf, same ? " (the same)" : "", tm_in_full, ff);
    if (!same) {
      CHECK(within(tm, tf, 0.05));         /* the winners' re-timed times, of two runs */
      CHECK(within(tm_in_full, ff, 0.10)); /* first timings of one run, not side by side */
    }
  }

  /* What a cluster job does next: export the merged DB. */
  CHECK_EQ_INT(run("export", "export", "--db", merged, "--out", configs, (const char *)NULL), 0);
  int files = 0;
  DIR *d = opendir(configs);
  for (struct dirent *e; d && (e = readdir(d));) files += strstr(e->d_name, "-GEMM-SHARD") != NULL;
  if (d) closedir(d);
  CHECK_EQ_INT(files, 3); /* the files of (2048, 1024) and (4096, 2048), and the default file */

  free(space), free(s1), free(s2), free(merged), free(full), free(configs), free(cache);
  return check_summary();
}

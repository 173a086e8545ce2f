/* test_judge.c: `autotune judge` on a GPU (exits 77 where there is none). argv[1] is the autotune
 * binary. A small sm90 space (test/data/spaces/judge.yaml: three tile widths, two shapes) is tuned
 * into a fresh DB with --no-judge (the tuner's winners, decided alone), then:
 *   - judge --dry-run: every config of both shapes checked and timed as launched (the 128 x 256
 *     config of 640 x 7168 with the runtime's tail), nothing written;
 *   - judge: the same, and every launched time in the DB (launches: checked, timed, what ran), each
 *     shape's winner decided on them (basis 'launched') and one judge run recorded as done;
 *   - the runtime follows the new winners: query answers each shape with its winner's parameters;
 *   - a shape the DB has no results for is skipped and said; a DB of another GPU model is an
 *     input error (exit 2), as are bad options;
 *   - a tuning run without --no-judge ends with the same judgement, recorded under its own run; a
 *     shard's run (--shard) does not;
 *   - the judge leaves no directory under $TMPDIR, and removes those of judges killed before they
 *     could (autotune-judge-<pid>-*, pid no longer running), not a live process's. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/check.h"
#include "../unit/dbq.h"
#include "../unit/proc.h"
#include "core/store.h"
#include "core/util.h"

static const char *EXE;
static char *TMP;

/* Runs autotune with args (NULL-terminated, without the binary), output to TMP/name; prints it and
 * returns the exit code, *out the output (malloc'd). */
static int run(const char *name, char **out, char *const *args) {
  char *argv[40] = {(char *)EXE};
  int n = 1;
  for (; args[n - 1] && n < 39; n++) argv[n] = args[n - 1];
  argv[n] = NULL;
  char *path = at_path_join(TMP, name);
  int rc = proc_run(argv, path, 900);
  *out = slurp(path);
  fprintf(stderr, "---- autotune %s ... (exit %d)\n%s----\n", args[0], rc, *out);
  free(path);
  return rc;
}

/* dir/name/0/ with a file and a `templates` link (a judge's directory as a killed one leaves it). */
static void fake_judge_dir(const char *dir, const char *name) {
  char *top = at_path_join(dir, name), *sub = at_path_join(top, "0"), *file = at_path_join(sub, "x.json");
  char *link = at_path_join(sub, "templates");
  CHECK(mkdir(top, 0700) == 0 && mkdir(sub, 0700) == 0);
  CHECK(at_write_file_atomic(file, "{}", 2) == 0);
  CHECK(symlink(dir, link) == 0);
  free(top), free(sub), free(file), free(link);
}

/* How many entries of dir start with prefix. */
static int entries_with(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  if (d) closedir(d);
  return n;
}

/* The winner's parameters of shape (m, n, k), as the DB holds them. */
static char *winner_params(const char *db, int m, int n, int k) {
  char *sql = at_xasprintf("SELECT c.params FROM winners w JOIN candidates c ON c.id = w.candidate_id JOIN problems p"
                           " ON p.id = w.problem_id WHERE p.m = %d AND p.n = %d AND p.k = %d",
                           m, n, k);
  char *params = dbq_dump(db, sql);
  free(sql);
  params[strcspn(params, "\n")] = 0;
  return params;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("gpu_judge");
  proc_require_gpu(EXE, TMP);
  char *space = at_path_join(getenv("AT_TEST_DATA"), "spaces/judge.yaml");
  char *db = at_path_join(TMP, "judge.db");
  char *out;

  char *tune[] = {"--db", db, "--no-judge", space, NULL};
  CHECK_EQ_INT(run("tune.txt", &out, tune), 0);
  free(out);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status = 'ok'"), 6);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners WHERE basis = 'alone'"), 2);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM launches"), 0); /* --no-judge */
  const int64_t runs = dbq(db, "SELECT count(*) FROM runs");

  /* A dry run: measured and printed, nothing written. */
  char *dry[] = {"judge", space, "--db", db, "--within", "5", "--dry-run", NULL};
  CHECK_EQ_INT(run("dry.txt", &out, dry), 0);
  CHECK_CONTAINS(out, "dry run: nothing written");
  CHECK_EQ_INT(count_of(out, "3 configs as launched: "), 2);
  CHECK_CONTAINS(out, "+ tail C[");                /* 640 x 7168's 128 x 256 tiles: their last wave apart */
  CHECK_CONTAINS(out, "judge: 2 shapes judged, "); /* both decided */
  free(out);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM launches"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM runs"), runs);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners WHERE basis = 'alone'"), 2);

  /* The judgement: every config checked and timed as launched, each shape's winner decided on it.
   * Under a TMPDIR of its own, beside the directory of a judge that was killed (its pid a child's
   * that has exited) and one of a live process (this one's). */
  char *tmpdir = at_path_join(TMP, "tmpdir");
  CHECK(mkdir(tmpdir, 0700) == 0);
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, NULL, 0);
  char dead[64], live[64];
  snprintf(dead, sizeof dead, "autotune-judge-%d-AbCdEf", (int)child);
  snprintf(live, sizeof live, "autotune-judge-%d-GhIjKl", (int)getpid());
  fake_judge_dir(tmpdir, dead);
  fake_judge_dir(tmpdir, live);
  setenv("TMPDIR", tmpdir, 1);
  char *judge[] = {"judge", space, "--db", db, "--within", "5", NULL};
  CHECK_EQ_INT(run("judge.txt", &out, judge), 0);
  unsetenv("TMPDIR");
  CHECK_EQ_INT(entries_with(tmpdir, "autotune-judge-"), 1); /* the live one: the dead one and its own removed */
  CHECK_EQ_INT(entries_with(tmpdir, live), 1);
  CHECK_EQ_INT(count_of(out, "3 configs as launched: "), 2);
  free(out);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM launches WHERE status = 'ok' AND time_us > 0 AND samples = 10"
                       " AND check_ratio <= 1 AND plan LIKE 'gemm_a8w8_blockscale_sm90<%%'"),
               6);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM launches WHERE plan LIKE '%%+ tail%%'"), 1);
  /* each row is its own candidate's kernel: the runtime answered with the judged config */
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM launches l JOIN candidates c ON c.id = l.candidate_id"
                       " WHERE substr(l.plan, 1, length(c.name_expr)) = c.name_expr"),
               6);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners WHERE basis = 'launched'"), 2);
  /* Each winner is its shape's fastest launched config, or within JUDGE_GAIN of it; its time in
   * winners is its time alone (re-timed where it was), as the tuner's winners' are. */
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners w JOIN launches l ON l.problem_id = w.problem_id AND"
                       " l.device_id = w.device_id AND l.candidate_id = w.candidate_id JOIN results r ON"
                       " r.problem_id = w.problem_id AND r.device_id = w.device_id AND r.candidate_id = w.candidate_id"
                       " WHERE w.time_us = coalesce(r.retime_us, r.time_us) AND"
                       " l.time_us <= (SELECT min(time_us) FROM launches x WHERE x.problem_id = w.problem_id) / 0.99"),
               2);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM runs WHERE command LIKE 'autotune judge %%' AND status = 'done'"), 1);
  /* The tuner's results are untouched: still six, each with its time alone. */
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status = 'ok' AND time_us > 0"), 6);

  /* The runtime's lookup follows the winners. */
  static const int SHAPES[2][3] = {{640, 7168, 1024}, {256, 2048, 1024}};
  for (int i = 0; i < 2; i++) {
    char m[16], n[16], k[16];
    snprintf(m, sizeof m, "%d", SHAPES[i][0]), snprintf(n, sizeof n, "%d", SHAPES[i][1]);
    snprintf(k, sizeof k, "%d", SHAPES[i][2]);
    char *params = winner_params(db, SHAPES[i][0], SHAPES[i][1], SHAPES[i][2]);
    CHECK(params[0] == '{');
    char *query[] = {"query", "--db", db, "--op", "gemm_a8w8_blockscale", "-M", m, "-N", n, "-K", k, NULL};
    CHECK_EQ_INT(run("query.txt", &out, query), 0);
    CHECK_CONTAINS(out, "\"source\": \"db\"");
    CHECK_CONTAINS(out, params);
    free(out), free(params);
  }

  /* A shape nobody tuned: skipped, said; the tuned one judged again. */
  char *csv = at_path_join(TMP, "shapes.csv");
  const char *text = "M,N,K\n64,4096,512\n256,2048,1024\n";
  at_write_file_atomic(csv, text, strlen(text));
  char *some[] = {"judge", space, "--db", db, "--within", "5", "--shapes", csv, "--top", "2", NULL};
  CHECK_EQ_INT(run("some.txt", &out, some), 0);
  CHECK_CONTAINS(out, "M=64 N=4096 K=512: no checked results in the DB: skipped");
  CHECK_CONTAINS(out, "judge: 1 shapes judged, ");
  free(out);

  /* Input errors: exit 2, nothing written. */
  char *bad[] = {"judge", space, "--db", db, "--top", "1", NULL};
  CHECK_EQ_INT(run("bad.txt", &out, bad), 2);
  CHECK_CONTAINS(out, "--top expects an integer from 2 to 8");
  free(out);
  /* A tuning run judges its shapes at its end (the kernels and results from the cache and DB above
   * would be reused: a fresh DB, so that the run tunes them). */
  char *db2 = at_path_join(TMP, "tuned.db");
  char *tune2[] = {"--db", db2, space, NULL};
  CHECK_EQ_INT(run("tune2.txt", &out, tune2), 0);
  /* (which shapes have two leaders within 1.30x of each other alone is the GPU's to say: every shape
   * is judged or skipped, at least one judged, and each judged one has its launches and a winner
   * decided on them) */
  CHECK_EQ_INT(count_of(out, "judge: 2 shapes judged, 0 winners changed, 0 skipped") +
                   count_of(out, "judge: 2 shapes judged, 1 winners changed, 0 skipped") +
                   count_of(out, "judge: 2 shapes judged, 2 winners changed, 0 skipped") +
                   count_of(out, "judge: 1 shapes judged, 0 winners changed, 1 skipped") +
                   count_of(out, "judge: 1 shapes judged, 1 winners changed, 1 skipped"),
               1);
  free(out);
  CHECK_EQ_INT(dbq(db2, "SELECT count(*) FROM winners WHERE basis = 'launched'"),
               dbq(db2, "SELECT count(DISTINCT problem_id) FROM launches"));
  CHECK_EQ_INT(dbq(db2, "SELECT count(*) FROM launches WHERE status != 'ok'"), 0);
  CHECK_EQ_INT(dbq(db2, "SELECT count(*) FROM launches WHERE run_id != (SELECT max(id) FROM runs)"), 0);
  CHECK_EQ_INT(dbq(db2, "SELECT count(*) FROM runs WHERE status = 'done'"), 1);
  free(db2);

  /* A shard decides no winner as launched (judge the merged DB). */
  char *db3 = at_path_join(TMP, "shard.db");
  char *tune3[] = {"--db", db3, "--shard", "1/1", space, NULL};
  CHECK_EQ_INT(run("tune3.txt", &out, tune3), 0);
  CHECK_EQ_INT(count_of(out, "judge: "), 0);
  free(out);
  CHECK_EQ_INT(dbq(db3, "SELECT count(*) FROM launches"), 0);
  CHECK_EQ_INT(dbq(db3, "SELECT count(*) FROM winners WHERE basis = 'alone'"), 2);
  free(db3);

  /* The same DB as another GPU model's. */
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "UPDATE devices SET name = 'NVIDIA A100-SXM4-80GB'"), AT_OK);
  at_store_close(s);
  char *wrong[] = {"judge", space, "--db", db, NULL};
  CHECK_EQ_INT(run("other.txt", &out, wrong), 2);
  CHECK_CONTAINS(out, "has no results of GPU 0's model");
  free(out);
  free(csv), free(db), free(space);
  return check_summary();
}

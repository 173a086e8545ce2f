/* test_cli.c: the autotune command as a user meets it (argv[1] is the binary): exit codes, bad
 * input that leaves no DB behind, the compile-only job and its summary JSON, a second run that
 * does no compile work, and a run killed with SIGKILL that resumes to the same counts with an
 * intact DB. Runs on any machine; the no-GPU behaviour is checked where there is no GPU. */
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/store.h"
#include "core/util.h"
#include "check.h"
#include "proc.h"

static const char *EXE;
static char *TMP, *DATA;

static long long json_int(const char *json, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(json, pat);
  return p ? atoll(p + strlen(pat)) : -1;
}

static double json_num(const char *json, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(json, pat);
  return p ? atof(p + strlen(pat)) : -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs autotune with the arguments up to a NULL, output to TMP/out.txt; returns the exit status. */
static int run(double timeout, ...) {
  char *out = at_path_join(TMP, "out.txt");
  va_list ap;
  va_start(ap, timeout);
  int rc = proc_run_va(EXE, out, timeout, ap);
  va_end(ap);
  free(out);
  return rc;
}
#define RUN(...) run(600, __VA_ARGS__, (const char *)NULL)

static char *output(void) {
  char *p = at_path_join(TMP, "out.txt");
  char *s = slurp(p);
  free(p);
  return s;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void usage_and_input_errors(void) {
  char *db = at_path_join(TMP, "never.db");
  char *bad = at_path_join(DATA, "bad");
  CHECK_EQ_INT(run(60, (const char *)NULL), 2);
  CHECK_EQ_INT(RUN("--help"), 0);
  char *o = output();
  CHECK_CONTAINS(o, "devices");
  CHECK_CONTAINS(o, "tune");
  free(o);
  CHECK_EQ_INT(RUN("tune", "--help"), 0);
  CHECK_EQ_INT(RUN("--bogus", "x.yaml"), 2);
  o = output();
  CHECK_CONTAINS(o, "--bogus");
  free(o);
  CHECK_EQ_INT(RUN("--jobs", "zero", "x.yaml"), 2);
  o = output();
  CHECK_CONTAINS(o, "--jobs");
  free(o);
  CHECK_EQ_INT(RUN("--arch", "sm_12x", "--compile-only", "x.yaml"), 2);
  o = output();
  CHECK_CONTAINS(o, "--arch");
  free(o);
  CHECK_EQ_INT(RUN("--db", db, "--compile-only", "/nonexistent/space.yaml"), 2);
  CHECK_EQ_INT(RUN("--db"), 2);
  /* A malformed space: exit 2, file:line:col, and no DB created. */
  char *space = at_path_join(TMP, "broken.yaml");
  const char *text = "op: gemm_a8w8_blockscale\ntag: T\nvariants: []\nshapes: []\nbogus: 1\n";
  at_write_file_atomic(space, text, strlen(text));
  CHECK_EQ_INT(RUN("--db", db, "--compile-only", "--arch", "sm_90a", space), 2);
  o = output();
  CHECK_CONTAINS(o, "broken.yaml:5:1: unknown key 'bogus'");
  free(o);
  CHECK(!exists(db));
  CHECK_EQ_INT(RUN("devices", "extra"), 2);
  free(space), free(bad), free(db);
}

/* Every file of the malformed corpus, through the binary: exit 2, a file:line:col message, no DB. */
static void bad_corpus(void) {
  char *dir = at_path_join(DATA, "bad"), *db = at_path_join(TMP, "corpus.db");
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int files = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0) continue;
    char *path = at_path_join(dir, e->d_name);
    char *text = slurp(path);
    int line = 0, col = 0;
    sscanf(text, "# expect: %d:%d:", &line, &col);
    free(text);
    int rc = RUN("--compile-only", "--arch", "sm_90a", "--db", db, path);
    char *o = output(), want[4200];
    snprintf(want, sizeof want, "%s:%d:%d: ", path, line, col);
    if (rc != 2 || !strstr(o, want)) fprintf(stderr, "  %s: exit %d, output: %s", e->d_name, rc, o);
    CHECK_EQ_INT(rc, 2);
    CHECK_CONTAINS(o, want);
    free(o);
    free(path);
    files++;
  }
  if (d) closedir(d);
  CHECK(files >= 20);
  CHECK(!exists(db));
  free(dir), free(db);
}

static void compile_only_and_rerun(void) {
  char *db = at_path_join(TMP, "t.db"), *json = at_path_join(TMP, "s.json");
  char *space = at_path_join(DATA, "spaces/tiny.yaml");
  double t0 = now();
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--summary-json", json, space), 0);
  double first = now() - t0;
  char *j = slurp(json);
  CHECK_EQ_INT(json_int(j, "candidates"), 24);
  CHECK_EQ_INT(json_int(j, "pruned"), 6);
  CHECK_EQ_INT(json_int(j, "surviving"), 18);
  CHECK_EQ_INT(json_int(j, "compiled"), 18);
  CHECK_EQ_INT(json_int(j, "compile_failed"), 0);
  CHECK_EQ_INT(json_int(j, "cache_hits"), 0);
  CHECK(json_num(j, "seconds") > 0);
  free(j);
  /* The rerun finds everything in the DB: no compile work, a fraction of the time. */
  t0 = now();
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--summary-json", json, space), 0);
  double second = now() - t0;
  j = slurp(json);
  CHECK_EQ_INT(json_int(j, "compiled"), 18);
  CHECK_EQ_INT(json_int(j, "compiled_now"), 0);
  CHECK_EQ_INT(json_int(j, "db_hits"), 18);
  free(j);
  fprintf(stderr, "compile-only: first run %.2f s, rerun %.2f s\n", first, second);
  CHECK(second < first / 10);
  /* --fresh ignores the DB but the compile cache still answers. */
  CHECK_EQ_INT(RUN("--compile-only", "--fresh", "--arch", "sm_90a", "--db", db, "--summary-json", json, space), 0);
  j = slurp(json);
  CHECK_EQ_INT(json_int(j, "cache_hits"), 18);
  CHECK_EQ_INT(json_int(j, "compiled_now"), 0);
  free(j);
  free(db), free(json), free(space);
}

static int64_t count(const char *db, const char *sql) {
  at_store *s;
  int64_t v = -1;
  if (at_store_open_readonly(db, &s) == AT_OK) {
    at_store_query_int(s, sql, &v);
    at_store_close(s);
  }
  return v;
}

static void killed_and_resumed(void) {
  char *db = at_path_join(TMP, "k.db"), *json = at_path_join(TMP, "k.json");
  char *space = at_path_join(DATA, "spaces/tiny.yaml");
  char *cache = at_path_join(TMP, "cache-kill");
  setenv("AUTOTUNE_CACHE", cache, 1);
  char *argv[] = {(char *)EXE, "--compile-only", "--arch", "sm_90a", "--jobs", "1", "--db", db, space, NULL};
  char *out = at_path_join(TMP, "kill.txt");
  pid_t pid = proc_start(argv, out);
  /* Kill it once a few compiles are recorded, in the middle of the work. */
  int64_t done = 0;
  for (int i = 0; i < 6000 && done < 3; i++) {
    usleep(20000);
    if (exists(db)) done = count(db, "SELECT count(*) FROM candidates");
  }
  kill(pid, SIGKILL);
  CHECK_EQ_INT(proc_wait(pid, 60), 128 + SIGKILL);
  int64_t before = count(db, "SELECT count(*) FROM candidates");
  fprintf(stderr, "killed with %lld of 18 candidates recorded\n", (long long)before);
  CHECK(before >= 3 && before < 18);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM runs WHERE status='running'"), 1);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--summary-json", json, space), 0);
  char *j = slurp(json);
  CHECK_EQ_INT(json_int(j, "compiled"), 18);
  CHECK_EQ_INT(json_int(j, "compile_failed"), 0);
  CHECK(json_int(j, "db_hits") >= before);
  free(j);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM candidates"), 18);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM candidates WHERE status='ok'"), 18);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1);
  unsetenv("AUTOTUNE_CACHE");
  free(out), free(cache), free(db), free(json), free(space);
}

static void without_gpu(void) {
  CHECK_EQ_INT(RUN("devices"), 0);
  char *o = output();
  int no_gpu = strncmp(o, "no GPU", 6) == 0;
  if (!no_gpu) CHECK_CONTAINS(o, "GPU 0: ");
  free(o);
  if (!no_gpu) return; /* the GPU suite covers the rest there */
  char *db = at_path_join(TMP, "ng.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  CHECK_EQ_INT(RUN("--db", db, space), 0);
  o = output();
  CHECK_CONTAINS(o, "timing needs a GPU");
  free(o);
  CHECK_EQ_INT(RUN("--gpus", "0", "--db", db, space), 2);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM candidates WHERE status='ok'"), 18);
  free(db), free(space);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("cli");
  DATA = getenv("AT_TEST_DATA");
  char *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);
  usage_and_input_errors();
  bad_corpus();
  compile_only_and_rerun();
  killed_and_resumed();
  setenv("AUTOTUNE_CACHE", cache, 1);
  without_gpu();
  free(cache);
  return check_summary();
}

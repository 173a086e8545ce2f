/* test_cli.c: the autotune command as a user meets it (argv[1] is the binary): exit codes, bad
 * input that leaves no DB behind, the compile-only job and its summary JSON, a second run that
 * does no compile work, and a run killed with SIGKILL that resumes to the same counts with an
 * intact DB. Runs on any machine; the no-GPU behaviour is checked where there is no GPU.
 *
 * Hostile input and surroundings, each once a hang, a crash or a destroyed file: a FIFO as the
 * space; --summary-json naming the DB, its WAL or the space; more candidates than --max-candidates;
 * stdout and stderr a closed pipe; Ctrl-C while another writer holds the DB's lock, and a second
 * Ctrl-C; a DB whose schema was edited to hold NULLs. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/store.h"
#include "core/util.h"
#include "check.h"
#include "dbq.h"
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

#define RUN(...) proc_run_in(EXE, TMP, 600, __VA_ARGS__, (const char *)NULL)

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void usage_and_input_errors(void) {
  char *db = at_path_join(TMP, "never.db");
  char *bad = at_path_join(DATA, "bad");
  CHECK_EQ_INT(proc_run_in(EXE, TMP, 60, (const char *)NULL), 2);
  CHECK_EQ_INT(RUN("--help"), 0);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "devices");
  CHECK_CONTAINS(o, "tune");
  free(o);
  CHECK_EQ_INT(RUN("tune", "--help"), 0);
  /* Every command describes itself with --help and -h (main's help promises it). */
  static const char *const COMMANDS[] = {"tune",   "list",   "export", "model", "query",  "compare",
                                         "report", "expect", "merge",  "devices", "version"};
  for (size_t i = 0; i < sizeof COMMANDS / sizeof *COMMANDS; i++) {
    CHECK_EQ_INT(RUN(COMMANDS[i], "--help"), 0);
    o = proc_output(TMP);
    CHECK_CONTAINS(o, "usage: autotune");
    free(o);
    CHECK_EQ_INT(RUN(COMMANDS[i], "-h"), 0);
  }
  CHECK_EQ_INT(RUN("--bogus", "x.yaml"), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "--bogus");
  free(o);
  CHECK_EQ_INT(RUN("--jobs", "zero", "x.yaml"), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "--jobs");
  free(o);
  CHECK_EQ_INT(RUN("--arch", "sm_12x", "--compile-only", "x.yaml"), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "--arch");
  free(o);
  CHECK_EQ_INT(RUN("--db", db, "--compile-only", "/nonexistent/space.yaml"), 2);
  CHECK_EQ_INT(RUN("--db"), 2);
  /* A malformed space: exit 2, file:line:col, and no DB created. */
  char *space = at_path_join(TMP, "broken.yaml");
  const char *text = "op: gemm_a8w8_blockscale\ntag: T\nvariants: []\nshapes: []\nbogus: 1\n";
  at_write_file_atomic(space, text, strlen(text));
  CHECK_EQ_INT(RUN("--db", db, "--compile-only", "--arch", "sm_90a", space), 2);
  o = proc_output(TMP);
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
    char *o = proc_output(TMP), want[4200];
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

static int64_t count(const char *db, const char *sql) {
  at_store *s;
  int64_t v = -1;
  if (at_store_open_readonly(db, &s) == AT_OK) {
    at_store_query_int(s, sql, &v);
    at_store_close(s);
  }
  return v;
}

/* The keys of a compile cache's entries (DIR/xx/KEY.cubin) as an SQL list ('KEY','KEY',...; '' for
 * none); *n gets their number. */
static char *cache_keys(const char *dir, int *n) {
  at_buf b = {0};
  *n = 0;
  DIR *top = opendir(dir);
  for (struct dirent *d; top && (d = readdir(top));) {
    if (d->d_name[0] == '.') continue;
    char *sub = at_path_join(dir, d->d_name);
    DIR *in = opendir(sub);
    for (struct dirent *f; in && (f = readdir(in));) {
      size_t len = strlen(f->d_name);
      if (len != 64 + 6 || strcmp(f->d_name + 64, ".cubin") != 0) continue;
      at_buf_printf(&b, "%s'%.64s'", *n ? "," : "", f->d_name);
      ++*n;
    }
    if (in) closedir(in);
    free(sub);
  }
  if (top) closedir(top);
  if (!*n) at_buf_puts(&b, "''");
  return at_buf_steal(&b);
}

/* The rows of db's candidates whose key names an entry of the compile cache dir. */
static int64_t rows_named_in_cache(const char *db, const char *dir, int *entries) {
  char *keys = cache_keys(dir, entries);
  char *sql = at_xasprintf("SELECT count(*) FROM candidates WHERE compile_key IN (%s)", keys);
  int64_t n = count(db, sql);
  free(sql), free(keys);
  return n;
}

/* A compile-only run of space into db (with --fresh when fresh); its summary (json) must show the
 * counts want: kernels, compiled, compiled_now, cache_hits, db_hits, in that order (-1: not checked). */
static void compile_run(const char *db, const char *json, const char *space, int fresh, const long long want[5]) {
  static const char *const KEYS[5] = {"kernels", "compiled", "compiled_now", "cache_hits", "db_hits"};
  /* (--compile-only given twice when not fresh: the argument list keeps its length) */
  CHECK_EQ_INT(RUN("--compile-only", fresh ? "--fresh" : "--compile-only", "--arch", "sm_90a", "--db", db,
                   "--summary-json", json, space),
               0);
  char *j = slurp(json);
  for (int i = 0; i < 5; i++)
    if (want[i] >= 0) {
      if (json_int(j, KEYS[i]) != want[i]) fprintf(stderr, "  %s: want %lld\n", KEYS[i], want[i]);
      CHECK_EQ_INT(json_int(j, KEYS[i]), want[i]);
    }
  free(j);
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
  CHECK_EQ_INT(json_int(j, "kernels"), 18);
  CHECK(json_num(j, "seconds") > 0);
  free(j);
  /* Without launch parameters a candidate's key is its kernel's compile key, the cache entry's
   * name: the identity DBs and caches had before launch parameters. */
  int entries = 0;
  CHECK_EQ_INT(rows_named_in_cache(db, getenv("AUTOTUNE_CACHE"), &entries), 18);
  CHECK(entries >= 18);
  /* The rerun finds everything in the DB: no compile work, a fraction of the time. */
  t0 = now();
  compile_run(db, json, space, 0, (const long long[5]){18, 18, 0, -1, 18});
  double second = now() - t0;
  fprintf(stderr, "compile-only: first run %.2f s, rerun %.2f s\n", first, second);
  CHECK(second < first / 10);
  /* --fresh ignores the DB but the compile cache still answers. */
  compile_run(db, json, space, 1, (const long long[5]){18, 18, 0, 18, -1});
  free(db), free(json), free(space);
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

/* Launch parameters (test/data/spaces/launch.yaml): 8 candidates that differ in GROUP_M, SPLIT_K
 * and BLOCK_M compile to 2 kernels, each compiled once (2 cache entries); every candidate has a DB
 * row of its own, under a key that is not its kernel's; a rerun knows all of them from the DB. */
static void launch_parameters(void) {
  char *db = at_path_join(TMP, "launch.db"), *json = at_path_join(TMP, "launch.json");
  char *space = at_path_join(DATA, "spaces/launch.yaml"), *cache = at_path_join(TMP, "cache-launch");
  setenv("AUTOTUNE_CACHE", cache, 1);
  compile_run(db, json, space, 0, (const long long[5]){2, 8, 2, 0, 0});
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "compile: 8 ok, 0 failed; 8 candidates, 2 kernels: 2 compiled now");
  CHECK_CONTAINS(o, "2 kernels for 8 candidates: 2 compiled, 0 from cache; 0 failed");
  free(o);
  int entries = 0;
  CHECK_EQ_INT(rows_named_in_cache(db, cache, &entries), 0); /* candidate keys are not kernel keys */
  CHECK_EQ_INT(entries, 2);                                  /* one compile per kernel */
  /* A row per candidate, under a key of its own; a kernel's rows share its compile's outcome. */
  static const struct {
    const char *what;
    int64_t want;
  } ROWS[] = {{"count(*)", 8},
              {"count(DISTINCT compile_key)", 8},
              {"count(DISTINCT params)", 8},
              {"count(DISTINCT name_expr)", 2},
              {"count(DISTINCT cubin_hash)", 2},
              {"sum(status = 'ok' AND regs > 0 AND lowered_name <> '')", 8},
              {"count(DISTINCT name_expr || regs || lowered_name)", 2}};
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) {
    char *sql = at_xasprintf("SELECT %s FROM candidates", ROWS[i].what);
    if (count(db, sql) != ROWS[i].want) fprintf(stderr, "  %s\n", sql);
    CHECK_EQ_INT(count(db, sql), ROWS[i].want);
    free(sql);
  }
  /* The rerun: everything known from the DB, nothing compiled. */
  compile_run(db, json, space, 0, (const long long[5]){2, 8, 0, 0, 8});
  /* --fresh: each kernel once from the cache, every candidate recorded again under the same key. */
  compile_run(db, json, space, 1, (const long long[5]){2, 8, 0, 2, 0});
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM candidates"), 8);
  /* list counts the kernels the same way */
  CHECK_EQ_INT(RUN("list", "--arch", "sm_90a", space), 0);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "surviving 8, kernels 2");
  free(o);
  unsetenv("AUTOTUNE_CACHE");
  free(db), free(json), free(space), free(cache);
}

/* ---- hostile input and surroundings ------------------------------------------------------------ */

static void fifo_space(void) {
  char *fifo = at_path_join(TMP, "fifo.yaml"), *db = at_path_join(TMP, "fifo.db");
  CHECK_EQ_INT(mkfifo(fifo, 0644), 0);
  CHECK_EQ_INT(proc_run_in(EXE, TMP, 30, "--compile-only", "--arch", "sm_90a", "--db", db, fifo, (const char *)NULL), 2);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, fifo);
  CHECK_CONTAINS(o, "a FIFO, not a regular file");
  free(o);
  CHECK(!exists(db));
  unlink(fifo);
  free(fifo), free(db);
}

/* The whole file, or "(unreadable)". */
static char *contents(const char *path) {
  char *d;
  size_t n;
  if (at_read_file(path, 0, &d, &n) != AT_OK) return at_xstrdup("(unreadable)");
  return d;
}

/* --summary-json over an input: refused before anything is written (exit 2), the input intact. */
static void expect_summary_refused(const char *db, const char *summary, const char *space, const char *what) {
  char *before = contents(db);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--summary-json", summary, space), 2);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, what);
  CHECK_CONTAINS(o, "the summary would overwrite it");
  free(o);
  char *after = contents(db);
  CHECK(strcmp(before, after) == 0);
  free(before), free(after);
}

static void summary_over_inputs(void) {
  char *db = at_path_join(TMP, "inputs.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, space), 0);
  char *space_before = contents(space);
  expect_summary_refused(db, db, space, "is the DB");
  char *spelled = at_xasprintf("%s/./sub/../inputs.db", TMP);
  char *sub = at_path_join(TMP, "sub");
  at_mkdirs(sub);
  expect_summary_refused(db, spelled, space, "is the DB");
  char *link = at_path_join(TMP, "link-to-db");
  CHECK_EQ_INT(symlink(db, link), 0);
  expect_summary_refused(db, link, space, "is the DB");
  char *wal = at_xasprintf("%s-wal", db);
  expect_summary_refused(db, wal, space, "is a file of the DB");
  expect_summary_refused(db, space, space, "is the search space");
  char *space_after = contents(space);
  CHECK(strcmp(space_before, space_after) == 0);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM candidates"), 18);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1);
  /* A DB that does not exist yet is an input too: the run would create it, then lose it. */
  char *fresh = at_path_join(TMP, "fresh.db");
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", fresh, "--summary-json", fresh, space), 2);
  CHECK(!exists(fresh));
  free(fresh), free(space_before), free(space_after), free(wal), free(link), free(sub), free(spelled), free(db),
      free(space);
}

/* Every command that writes a file checks it before its work: not over an input of the run (the
 * shapes file, the DB, the space), not a directory, in a directory that exists; a device or FIFO
 * (here a link to /dev/null) is written in place, not replaced by a file; a link to a file keeps
 * the link. Bad DB files, empty paths and over-long tags are input errors (exit 2). Each once
 * destroyed an input or went through with exit 0 (session 53's review). */
static void outputs_checked(void) {
  char *db = at_path_join(TMP, "outs.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  char *shapes = at_path_join(TMP, "outs-shapes.csv"), *sum = at_path_join(TMP, "outs-summary.json");
  FILE *f = fopen(shapes, "w");
  fputs("M,N,K\n16,1024,1024\n", f);
  fclose(f);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, space), 0);
  char *db_before = contents(db), *shapes_before = contents(shapes);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--shapes", shapes, "--summary-json", shapes, space), 2);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "--summary-json");
  CHECK_CONTAINS(o, "an input of the run; it would be overwritten");
  free(o);
  char *nodir = at_path_join(TMP, "no-such-dir/summary.json"), *fresh = at_path_join(TMP, "outs-fresh.db");
  CHECK_EQ_INT(RUN("list", "--json", nodir, space), 2); /* said before the work, not after it */
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "no directory");
  free(o);
  /* A tune makes the directory of its DB, and of its summary likewise. */
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", fresh, "--summary-json", nodir, space), 0);
  CHECK(exists(nodir));
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", "", space), 2);
  CHECK_EQ_INT(RUN("list", "--json", space, space), 2);
  CHECK_EQ_INT(RUN("list", "--json", TMP, space), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "is a directory");
  free(o);
  CHECK_EQ_INT(RUN("report", "--db", db, "--shapes", shapes, "--csv", shapes), 2);
  CHECK_EQ_INT(RUN("expect", "record", "--db", db, "--out", db), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "--out");
  free(o);
  char *db_after = contents(db), *shapes_after = contents(shapes);
  CHECK(strcmp(db_before, db_after) == 0 && strcmp(shapes_before, shapes_after) == 0);
  /* A FIFO is written through, not replaced (the rename of an atomic write would have put a file
   * there: with /dev/null as the output, run as root, /dev/null itself), and a link to a file gets
   * the new text in that file, the link kept. (Not tried on /dev/null: a regression would break the
   * machine the tests run on.) */
  char *pipe_out = at_path_join(TMP, "outs-pipe"), *got = at_path_join(TMP, "outs-pipe-read"),
       *target = at_path_join(TMP, "outs-target.json"), *link = at_path_join(TMP, "outs-link.json");
  CHECK_EQ_INT(mkfifo(pipe_out, 0644), 0);
  pid_t reader = fork();
  if (reader == 0) { /* reads the FIFO to its end into a file */
    FILE *in = fopen(pipe_out, "r"), *copy = fopen(got, "w");
    for (int c; in && copy && (c = fgetc(in)) != EOF;) fputc(c, copy);
    _exit(0);
  }
  CHECK_EQ_INT(RUN("list", "--json", pipe_out, space), 0);
  int wst = 0, waited = 0;
  while (waitpid(reader, &wst, WNOHANG) == 0 && waited++ < 500) usleep(10000);
  if (waited > 500) kill(reader, SIGKILL), waitpid(reader, &wst, 0); /* nobody wrote the FIFO */
  struct stat st;
  char *t = contents(got);
  CHECK(lstat(pipe_out, &st) == 0 && S_ISFIFO(st.st_mode) && strstr(t, "\"candidates\""));
  free(t);
  f = fopen(target, "w");
  fputs("old", f);
  fclose(f);
  CHECK_EQ_INT(symlink(target, link), 0);
  CHECK_EQ_INT(RUN("list", "--json", link, space), 0);
  t = contents(target);
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode) && strstr(t, "\"candidates\""));
  free(t);
  /* /dev/stdout redirected to a file (RUN's out.txt): the JSON follows the text printed before it;
   * /dev/stdout resolves to that file, which an atomic write would replace (the text lost). */
  CHECK_EQ_INT(RUN("list", "--json", "/dev/stdout", space), 0);
  o = proc_output(TMP);
  const char *text_at = strstr(o, "candidates 18 (variant"), *json_at = strstr(o, "\"candidates\"");
  CHECK(text_at && json_at && text_at < json_at);
  free(o);
  /* merge onto something that is not a file: refused, and the thing left alone. */
  char *fifo = at_path_join(TMP, "outs-fifo");
  CHECK_EQ_INT(mkfifo(fifo, 0644), 0);
  CHECK_EQ_INT(RUN("merge", "--db", fifo, db), 2);
  CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
  /* A file that is not an SQLite DB, named as one. */
  char *notdb = at_path_join(TMP, "outs-not.db");
  f = fopen(notdb, "w");
  fputs("not a database, just some text long enough to be read as a header by SQLite\n", f);
  fclose(f);
  CHECK_EQ_INT(RUN("report", "--db", notdb), 1); /* as a corrupt DB (docs/usage.md, exit codes) */
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "not an SQLite database");
  free(o);
  CHECK_EQ_INT(RUN("warm", "--device", "sm90", "--sm-count", "132", "--cache", "", "4096,4096"), 2);
  /* A tag too long to make file names of. */
  char *longtag = at_path_join(TMP, "outs-longtag.yaml");
  char *text = contents(space), *tag = strstr(text, "tag: TINY\n");
  f = fopen(longtag, "w");
  fprintf(f, "%.*stag: %065d\n%s", (int)(tag - text), text, 0, tag + strlen("tag: TINY\n"));
  fclose(f);
  CHECK_EQ_INT(RUN("list", longtag), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "must be 1 to 64 letters");
  free(o);
  free(text), free(longtag), free(notdb), free(fifo), free(pipe_out), free(got), free(target), free(link), free(db_after),
      free(shapes_after), free(db_before), free(shapes_before), free(nodir), free(fresh), free(sum), free(shapes),
      free(db), free(space);
}

static void max_candidates(void) {
  char *db = at_path_join(TMP, "cap.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--max-candidates", "10", space), 2);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "tiny.yaml:5:5: variant 'mma': more than 10 candidates survive pruning");
  free(o);
  CHECK(!exists(db));
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--max-candidates", "0", space), 2);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--max-candidates", "ten", space), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, "--max-candidates");
  free(o);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--max-candidates", "18", space), 0);
  free(db), free(space);
}

/* `autotune ... 2>&1 | true`: every write to stdout and stderr meets a closed pipe. The run used to
 * die of SIGPIPE at its first progress line and stay `running`; now it finishes and is marked. */
static void closed_pipe(void) {
  char *db = at_path_join(TMP, "pipe.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  int fd[2];
  CHECK_EQ_INT(pipe(fd), 0);
  close(fd[0]);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL); /* as a shell leaves it */
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[1]);
    execl(EXE, EXE, "--compile-only", "--arch", "sm_90a", "--db", db, space, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  CHECK_EQ_INT(proc_wait(pid, 300), 0);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM runs WHERE status='compiled'"), 1);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM runs WHERE status='running'"), 0);
  free(db), free(space);
}

/* Starts a compile-only run of tiny.yaml with an empty compile cache and one compile thread (so
 * that it is busy for a few seconds), and waits until it has recorded a candidate. */
static pid_t start_slow_run(const char *db, const char *cache, const char *out) {
  setenv("AUTOTUNE_CACHE", cache, 1);
  char *space = at_path_join(DATA, "spaces/tiny.yaml");
  char *argv[] = {(char *)EXE, "--compile-only", "--arch", "sm_90a", "--jobs", "1", "--db", (char *)db, space, NULL};
  pid_t pid = proc_start(argv, out);
  int64_t done = 0;
  for (int i = 0; i < 6000 && done < 1; i++) {
    usleep(20000);
    if (exists(db)) done = count(db, "SELECT count(*) FROM candidates");
  }
  CHECK(done >= 1);
  free(space);
  return pid;
}

/* Ctrl-C while another writer holds the DB's lock: the wait used to go on for up to 100 minutes.
 * Now the first Ctrl-C ends it; recording the run's end waits a few seconds more for the lock, then
 * gives up with a warning. A second Ctrl-C quits at once (exit by SIGINT). A plain Ctrl-C marks
 * the run interrupted. */
static void ctrl_c(void) {
  char *out = at_path_join(TMP, "ctrlc.txt");
  for (int twice = 0; twice < 2; twice++) {
    char *db = at_xasprintf("%s/lock%d.db", TMP, twice), *cache = at_xasprintf("%s/cache-lock%d", TMP, twice);
    pid_t pid = start_slow_run(db, cache, out);
    at_store *holder = NULL;
    CHECK_EQ_INT(at_store_open(db, &holder), AT_OK);
    CHECK_EQ_INT(at_store_exec(holder, "BEGIN IMMEDIATE"), AT_OK); /* another writer, holding on */
    usleep(1500000);                                              /* the run is waiting for it now */
    double t0 = now();
    kill(pid, SIGINT);
    if (twice) {
      usleep(1000000);
      t0 = now();
      kill(pid, SIGINT);
    }
    int rc = proc_wait(pid, 60);
    double took = now() - t0;
    fprintf(stderr, "Ctrl-C%s with the DB locked: exit %d after %.1f s\n", twice ? " twice" : "", rc, took);
    char *o = slurp(out);
    if (twice) {
      CHECK_EQ_INT(rc, 128 + SIGINT);
      CHECK(took < 5);
    } else {
      CHECK_EQ_INT(rc, 1);
      CHECK(took < 30);
      CHECK_CONTAINS(o, "press Ctrl-C again to quit at once");
      CHECK_CONTAINS(o, "the run stays marked running");
      CHECK_CONTAINS(o, "autotune: interrupted");
    }
    free(o);
    CHECK_EQ_INT(at_store_exec(holder, "ROLLBACK"), AT_OK);
    at_store_close(holder);
    CHECK_EQ_INT(count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1);
    free(db), free(cache);
  }
  /* No other writer: one Ctrl-C, and the run is marked interrupted. */
  char *db = at_path_join(TMP, "int.db"), *cache = at_path_join(TMP, "cache-int");
  pid_t pid = start_slow_run(db, cache, out);
  kill(pid, SIGINT);
  CHECK_EQ_INT(proc_wait(pid, 60), 1);
  char *o = slurp(out);
  CHECK_CONTAINS(o, "interrupted: finished work is kept");
  free(o);
  CHECK_EQ_INT(count(db, "SELECT count(*) FROM runs WHERE status='interrupted'"), 1);
  unsetenv("AUTOTUNE_CACHE");
  free(db), free(cache), free(out);
}

/* A DB whose schema lost its NOT NULLs and whose candidates hold a NULL status: the rerun's lookup
 * of its compiles used to strcmp(NULL) and segfault. Now: a corrupt DB, exit 1. */
static void null_db(void) {
  char *db = at_path_join(TMP, "null.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, space), 0);
  dbq_drop_not_null(db);
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "UPDATE candidates SET status=NULL"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, space), 1);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "corrupt DB: candidates.status is NULL");
  free(o);
  free(db), free(space);
}

static void without_gpu(void) {
  CHECK_EQ_INT(RUN("devices"), 0);
  char *o = proc_output(TMP);
  int no_gpu = strncmp(o, "no GPU", 6) == 0;
  if (!no_gpu) CHECK_CONTAINS(o, "GPU 0: ");
  free(o);
  if (!no_gpu) return; /* the GPU suite covers the rest there */
  char *db = at_path_join(TMP, "ng.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  CHECK_EQ_INT(RUN("--db", db, space), 0);
  o = proc_output(TMP);
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
  launch_parameters();
  setenv("AUTOTUNE_CACHE", cache, 1);
  fifo_space();
  summary_over_inputs();
  outputs_checked();
  max_candidates();
  closed_pipe();
  null_db();
  ctrl_c();
  setenv("AUTOTUNE_CACHE", cache, 1);
  without_gpu();
  free(cache);
  return check_summary();
}

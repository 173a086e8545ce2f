/* test_compare.c: `autotune compare` as far as it goes without a GPU (argv[1] is the binary): bad
 * arguments are exit 2 and name the argument; a shapes file's errors name its file and line (CSV)
 * or line and column (YAML); the CSV parser's accepted forms; providers from results files
 * (file:PATH, core/results.h): compared without a GPU, written back in the same schema and read
 * again, a file without a record for a shape refused naming both, a bad file naming the place; and
 * where there is no GPU, compare says plainly that it needs one and exits 1; the board's figures
 * between two readings (core/board.h). The GPU half is test/gpu/test_compare.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/board.h"
#include "core/shapefile.h"
#include "core/util.h"
#include "proc.h"

static const char *EXE;
static char *TMP, *SPACE;

static int run(const char *first, ...) {
  char *out = at_path_join(TMP, "out.txt");
  char *argv[32] = {(char *)EXE, "compare", (char *)first};
  int n = 3;
  va_list ap;
  va_start(ap, first);
  for (const char *a; first && n < 31 && (a = va_arg(ap, const char *));) argv[n++] = (char *)a;
  va_end(ap);
  argv[n] = NULL;
  int rc = proc_run(argv, out, 300);
  free(out);
  return rc;
}
#define RUN(...) run(__VA_ARGS__, (const char *)NULL)

static char *output(void) {
  char *p = at_path_join(TMP, "out.txt");
  char *s = slurp(p);
  free(p);
  return s;
}

/* Writes text to TMP/name; returns the path. */
static char *file(const char *name, const char *text) {
  char *p = at_path_join(TMP, name);
  at_write_file_atomic(p, text, strlen(text));
  return p;
}

static void expect(int rc, int want, const char *needle) {
  char *o = output();
  CHECK_EQ_INT(rc, want);
  CHECK_CONTAINS(o, needle);
  if (rc != want || !strstr(o, needle)) fprintf(stderr, "  output: %s", o);
  free(o);
}

static void arguments(void) {
  expect(RUN("--help"), 0, "--providers");
  expect(run(NULL, NULL), 2, "missing SPACE.yaml");
  expect(RUN(SPACE, "--providers", "autotune,vendor"), 2, "--providers: unknown provider 'vendor'");
  expect(RUN(SPACE, "--providers", "cublaslt,cublaslt"), 2, "--providers");
  expect(RUN(SPACE, "--providers", ","), 2, "--providers");
  expect(RUN(SPACE, "--gpu", "zero"), 2, "--gpu");
  expect(RUN(SPACE, "--gpu", "-1"), 2, "--gpu");
  expect(RUN(SPACE, "--pdl", "maybe"), 2, "--pdl must be off or on");
  expect(RUN(SPACE, "--db", "/nonexistent/autotune.db"), 2, "--db");
  expect(RUN(SPACE, "--configs", "/nonexistent/configs"), 2, "--configs");
  expect(RUN(SPACE, "--bogus"), 2, "--bogus");
  expect(RUN(SPACE, "--json"), 2, "--json");
  expect(RUN(SPACE, SPACE), 2, "one SPACE.yaml");
  expect(RUN("/nonexistent/space.yaml"), 2, "/nonexistent/space.yaml");
  char *broken = file("broken.yaml", "op: gemm_a8w8_blockscale\ntag: T\nvariants: []\nshapes: []\nbogus: 1\n");
  char *want = at_xasprintf("%s:5:1: unknown key 'bogus'", broken);
  expect(RUN(broken), 2, want);
  free(want), free(broken);
}

/* Each bad shapes file: exit 2, and where. */
static void shapes_file_errors(void) {
  static const struct {
    const char *name, *text, *where, *msg;
  } BAD[] = {
      {"header.csv", "M,N\n16,4096\n", ":1: ", "the first line must be the header M,N,K"},
      {"header2.csv", "# shapes\nM,N,Q\n", ":2: ", "the first line must be the header M,N,K"},
      {"not_int.csv", "M,N,K\n16,4096,4096\n\n16,4096,4k\n", ":4: ", "K must be an integer, got '4k'"},
      {"fields.csv", "M,N,K\n16,4096\n", ":2: ", "2 comma-separated fields where the header has 3"},
      {"rule.csv", "M,N,K\n16,4100,4096\n", ":2: ", "N must be a positive multiple of 8"},
      {"zero_m.csv", "M,N,K\n0,4096,4096\n", ":2: ", "M must be at least 1"},
      {"k.csv", "N,K,M\n4096,4000,16\n", ":2: ", "K must be a positive multiple of 128"},
      {"twice.csv", "M,N,K\n16,4096,4096\n# again\n16,4096,4096\n", ":4: ",
       "shape M=16 N=4096 K=4096 is listed twice (first on line 2)"},
      {"empty.csv", "M,N,K\n", ":1: ", "no shapes"},
      {"rule.yaml", "- {N: 4096, K: 4096, M: [16, 64]}\n- {N: 4096, K: 1000, M: 16}\n", ":2:16: ",
       "K must be a positive multiple of 128"},
      {"keys.yaml", "- {N: 4096, K: 4096, M: 16, B: 2}\n", ":1:29: ", "unknown key 'B'"},
      {"scalar.yaml", "16\n", ":1:1: ", "a shapes file is a list of shape groups"},
      {"empty.yaml", "# nothing\n", ":1:1: ", "the file is empty"},
  };
  for (size_t i = 0; i < AT_ARRAY_LEN(BAD); i++) {
    char *p = file(BAD[i].name, BAD[i].text);
    char *want = at_xasprintf("%s%s%s", p, BAD[i].where, BAD[i].msg);
    expect(RUN(SPACE, "--shapes", p), 2, want);
    free(want), free(p);
  }
  expect(RUN(SPACE, "--shapes", "/nonexistent/shapes.csv"), 2, "/nonexistent/shapes.csv");
}

/* The accepted forms, through the parser itself. */
static void csv_forms(void) {
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  CHECK(op != NULL);
  if (!op) return;
  at_shape_list l;
  /* Columns in any order and case, spaces, CRLF, a byte-order mark, comments and blank lines. */
  const char *text = "\xEF\xBB\xBF k , m , n\r\n# Llama-3-8B\r\n\r\n4096, 16, 6144\r\n 14336 ,2048, 4096 \r\n";
  CHECK_EQ_INT(at_shapes_parse_csv("t.csv", text, op, &l), AT_OK);
  CHECK_EQ_INT(l.n, 2);
  if (l.n == 2) {
    CHECK(l.shapes[0].m == 16 && l.shapes[0].n == 6144 && l.shapes[0].k == 4096);
    CHECK(l.shapes[1].m == 2048 && l.shapes[1].n == 4096 && l.shapes[1].k == 14336);
  }
  at_shape_list_free(&l);
  /* The YAML form through the file loader: the space's shapes syntax, or a space file itself. */
  char *y = file("ok.yaml", "- {N: 4096, K: 4096, M: [16, 64]}\n- {N: 6144, K: 4096, M: 1}\n");
  CHECK_EQ_INT(at_shapes_load(y, op, &l), AT_OK);
  CHECK_EQ_INT(l.n, 3);
  if (l.n == 3) CHECK(l.shapes[2].m == 1 && l.shapes[2].n == 6144);
  at_shape_list_free(&l), free(y);
  CHECK_EQ_INT(at_shapes_load(SPACE, op, &l), AT_OK);
  CHECK(l.n >= 1);
  at_shape_list_free(&l);
}

/* A results file of one provider, its shapes (m, n, k, time) as given; time 0: status wrong. */
static char *results(const char *name, const char *provider, const int64_t (*shapes)[4], size_t n) {
  at_buf b = {0};
  at_buf_printf(&b, "{\"format\": \"autotune-results/1\", \"op\": \"gemm_a8w8_blockscale\", \"providers\": [\"%s\"],"
                    " \"shapes\": [", provider);
  for (size_t i = 0; i < n; i++) {
    at_buf_printf(&b, "%s\n {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"%s\": ", i ? "," : "", (long long)shapes[i][0],
                  (long long)shapes[i][1], (long long)shapes[i][2], provider);
    if (shapes[i][3])
      at_buf_printf(&b, "{\"status\": \"ok\", \"time_us\": %lld, \"kernel\": \"k_%s\", \"meta\": {\"num_warps\": 4}}}",
                    (long long)shapes[i][3], provider);
    else
      at_buf_puts(&b, "{\"status\": \"wrong\", \"time_us\": null, \"message\": \"mismatch\"}}");
  }
  at_buf_puts(&b, "]}\n");
  char *p = file(name, b.data);
  at_buf_free(&b);
  return p;
}

static void file_providers(void) {
  /* tiny.yaml's shapes: M=16 and M=64 of N=1024 K=512. */
  static const int64_t TRITON[][4] = {{16, 1024, 512, 10}, {64, 1024, 512, 20}, {4096, 4096, 4096, 900}};
  static const int64_t CUTLASS[][4] = {{64, 1024, 512, 16}, {16, 1024, 512, 8}};
  static const int64_t PARTIAL[][4] = {{16, 1024, 512, 5}};
  static const int64_t WRONG[][4] = {{16, 1024, 512, 5}, {64, 1024, 512, 0}};
  char *tri = results("triton.json", "triton", TRITON, 3), *cut = results("cutlass.json", "cutlass", CUTLASS, 2);
  char *part = results("partial.json", "partial", PARTIAL, 1), *wrong = results("wrong.json", "wr", WRONG, 2);
  char *json = at_path_join(TMP, "files.json"), *list = at_xasprintf("file:%s,file:%s", tri, cut);
  /* Two files, no GPU: the table, the ratios, the geometric mean, exit 0. */
  expect(RUN(SPACE, "--providers", list, "--json", json), 0, "every provider is a file: no GPU used");
  char *o = output();
  CHECK_CONTAINS(o, "  triton us  TFLOP/s  roof%     chk  cutlass us  TFLOP/s  roof%     chk   tr/cu");
  CHECK_CONTAINS(o, "     16    1024     512       10.00      1.7      -       -        8.00      2.1      -       -   1.25x");
  CHECK_CONTAINS(o, "geomean time triton / cutlass: all shapes 1.250x (2 shapes)");
  CHECK_CONTAINS(o, "worst time triton / cutlass: 1.250x at 16 x 1024 x 512; 2 of 2 shapes above 1.10x");
  free(o);
  char *j = slurp(json);
  CHECK_CONTAINS(j, "\"format\": \"autotune-results/1\"");
  CHECK_CONTAINS(j, "\"providers\": [\"triton\", \"cutlass\"]");
  CHECK_CONTAINS(j, "\"triton\": {\"status\": \"ok\", \"time_us\": 10.0000");
  CHECK_CONTAINS(j, "\"kernel\": \"k_triton\"");
  CHECK_CONTAINS(j, "\"meta\": {\"num_warps\": 4}");
  CHECK_CONTAINS(j, "\"missing\": []");
  CHECK_CONTAINS(j, "\"worst\": {\"ratio\": 1.25");
  CHECK_CONTAINS(j, "\"m\": 16, \"n\": 1024, \"k\": 512}, \"above_1_10\": 2, \"all_by_round\": null}");
  /* Nothing live: no board was read, no shape has a clock. */
  CHECK_CONTAINS(j, "\"board\": {\"source\": null, \"note\": \"no live provider\"}");
  CHECK(strstr(j, "sm_mhz") == NULL);
  free(j);
  /* --warmup and --samples replace the space's counts, and the file says which were used; a count out
   * of range is exit 2 naming the flag. */
  expect(RUN(SPACE, "--providers", list, "--json", json, "--warmup", "30", "--samples", "200"), 0, "triton / cutlass");
  j = slurp(json);
  CHECK_CONTAINS(j, "\"timing\": {\"warmup\": 30, \"samples\": 200,");
  free(j);
  expect(RUN(SPACE, "--providers", list, "--samples", "2"), 2, "--samples expects an integer from 3 to 100000, got '2'");
  expect(RUN(SPACE, "--providers", list, "--warmup", "x"), 2, "--warmup expects an integer");
  expect(RUN(SPACE, "--providers", list, "--rounds", "0"), 2, "--rounds expects an integer from 1 to 100, got '0'");
  expect(RUN(SPACE, "--providers", list, "--rounds", "101"), 2, "--rounds expects an integer from 1 to 100");
  /* With files only nothing is timed again: one round, whatever --rounds says. */
  expect(RUN(SPACE, "--providers", list, "--json", json, "--rounds", "5"), 0, "triton / cutlass");
  o = output();
  CHECK_EQ_INT(count_of(o, "\n     16    1024     512"), 1); /* each row once */
  CHECK_EQ_INT(count_of(o, "round "), 0);
  CHECK(strstr(o, "by round") == NULL && strstr(o, "board") == NULL);
  free(o);
  j = slurp(json);
  CHECK_CONTAINS(j, "\"rounds\": 1}");
  CHECK(strstr(j, "round_times_us") == NULL);
  free(j);
  /* compare's own file is a provider file in turn: the same provider twice gets its file's name. */
  char *again = at_xasprintf("file:%s,file:%s", tri, json);
  expect(RUN(SPACE, "--providers", again), 0, "triton+files us");
  free(again);
  /* A provider without a record for a shape of the list: exit 2 before anything runs, naming both. */
  char *p2 = at_xasprintf("autotune,file:%s", part);
  expect(RUN(SPACE, "--providers", p2), 2, "provider partial (file:");
  o = output();
  CHECK_CONTAINS(o, "has no record for M=64 N=1024 K=512");
  CHECK_CONTAINS(o, "nothing was run");
  free(o), free(p2);
  /* A record that is not ok: reported, exit 1. */
  p2 = at_xasprintf("file:%s", wrong);
  expect(RUN(SPACE, "--providers", p2), 1, "M=64 N=1024 K=512 wr: wrong: mismatch");
  free(p2);
  /* Bad files name the file and the place. */
  static const struct {
    const char *name, *text, *msg;
  } BAD[] = {
      {"fmt.json", "{\"format\": \"x\", \"providers\": [\"a\"], \"shapes\": []}", "\"format\" must be \"autotune-results/1\""},
      {"notime.json",
       "{\"format\": \"autotune-results/1\", \"providers\": [\"a\"], \"shapes\": [{\"m\": 16, \"n\": 1024, \"k\": 512,"
       " \"a\": {\"status\": \"ok\"}}]}",
       "shapes[0] (M=16 N=1024 K=512), a: status ok needs a positive time_us"},
      {"name.json", "{\"format\": \"autotune-results/1\", \"providers\": [\"m\"], \"shapes\": []}", "providers: a provider is named"},
      {"twice.json",
       "{\"format\": \"autotune-results/1\", \"providers\": [\"a\"], \"shapes\": [{\"m\": 1, \"n\": 8, \"k\": 128},"
       " {\"m\": 1, \"n\": 8, \"k\": 128}]}",
       "shapes[1] (M=1 N=8 K=128): the shape is listed twice (first as shapes[0])"},
      {"op.json", "{\"format\": \"autotune-results/1\", \"op\": \"gemm_bf16\", \"providers\": [\"a\"], \"shapes\": []}",
       "its results are of op gemm_bf16"},
  };
  for (size_t i = 0; i < AT_ARRAY_LEN(BAD); i++) {
    char *f = file(BAD[i].name, BAD[i].text), *arg = at_xasprintf("file:%s", f);
    expect(RUN(SPACE, "--providers", arg), 2, BAD[i].msg);
    free(f), free(arg);
  }
  expect(RUN(SPACE, "--providers", "file:"), 2, "file: needs a path");
  char *self = at_xasprintf("file:%s", tri);
  expect(RUN(SPACE, "--providers", self, "--json", tri), 2, "is the results file of a provider");
  free(self);
  free(tri), free(cut), free(part), free(wrong), free(json), free(list);
}

static void without_gpu(void) {
  char *devices = at_path_join(TMP, "devices.txt");
  char *argv[] = {(char *)EXE, "devices", NULL};
  proc_run(argv, devices, 120);
  char *d = slurp(devices);
  int no_gpu = strncmp(d, "no GPU", 6) == 0;
  free(d), free(devices);
  if (!no_gpu) {
    fprintf(stderr, "a GPU is here: the no-GPU case is not checked (test/gpu/test_compare.c runs compare)\n");
    return;
  }
  expect(RUN(SPACE), 1, "compare needs a GPU");
  char *csv = file("shapes.csv", "M,N,K\n16,1024,512\n");
  char *json = at_path_join(TMP, "never.json");
  expect(RUN(SPACE, "--shapes", csv, "--providers", "cublaslt", "--json", json), 1, "compare needs a GPU");
  char *j = slurp(json);
  CHECK(j[0] == 0); /* nothing written */
  free(j), free(json), free(csv);
}

/* The median that compare's rounds (and every timing) take: the middle value, or the mean of the two
 * middle ones, whatever the order given. */
static void median(void) {
  double odd[] = {9.0, 1.0, 5.0}, even[] = {4.0, 1.0, 3.0, 2.0}, one[] = {7.5};
  CHECK(at_median(odd, 3) == 5.0);
  CHECK(at_median(even, 4) == 2.5);
  CHECK(at_median(one, 1) == 7.5);
  CHECK(at_median(one, 0) == 0.0);
}

/* The board's figures between two readings (core/board.h); a board that is not there. */
static void board_spans(void) {
  at_board_reading a = {10.0, 1000.0, 5.0}, b = {12.0, 2200.0, 6.5}, none = {12.0, -1, -1};
  at_board_span x;
  at_board_span_of(&a, &b, &x);
  CHECK(fabs(x.seconds - 2.0) < 1e-12);
  CHECK(fabs(x.watts - 600.0) < 1e-9);     /* 1200 J over 2 s */
  CHECK(fabs(x.capped_pct - 75.0) < 1e-9); /* 1.5 s of 2 */
  b.capped_s = 8.0;                        /* 3 s capped in 2 s (read apart): held at 100% */
  at_board_span_of(&a, &b, &x);
  CHECK(x.capped_pct == 100.0);
  at_board_span_of(&a, &none, &x); /* counters the board does not keep */
  CHECK(x.watts == -1 && x.capped_pct == -1);
  b.energy_j = 900.0; /* a counter that went back (driver reloaded): not a figure */
  at_board_span_of(&a, &b, &x);
  CHECK(x.watts == -1);
  at_board_span_of(&b, &a, &x); /* readings in the wrong order: time went back */
  CHECK(x.watts == -1 && x.capped_pct == -1);
  at_board_span_of(&a, &a, &x); /* the same reading twice: no time, no figures (no division by 0) */
  CHECK(x.seconds == 0 && x.watts == -1 && x.capped_pct == -1);
  char why[96] = "";
  const at_board *bd = at_board_open("GPU-00000000-0000-0000-0000-000000000000", why, sizeof why);
  CHECK(bd == NULL);
  CHECK(why[0] != 0); /* NVML not found here, or it does not know that board */
  at_board_reading r;
  at_board_read(NULL, &r);
  CHECK(r.energy_j == -1 && r.capped_s == -1);
  CHECK_EQ_INT(at_board_sm_mhz(NULL), 0);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  median();
  board_spans();
  EXE = argv[1];
  TMP = scratch_dir("compare");
  SPACE = at_path_join(getenv("AT_TEST_DATA"), "spaces/tiny.yaml");
  arguments();
  shapes_file_errors();
  csv_forms();
  file_providers();
  without_gpu();
  return check_summary();
}

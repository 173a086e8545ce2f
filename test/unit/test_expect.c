/* test_expect.c: `autotune expect` without a GPU (argv[1] is the binary): the judgement
 * (core/expect.h) on hand-made numbers, then record from a copy of the committed DB
 * (test/data/db/v3.db) and check against a measurement from a file: it passes on the same numbers
 * and fails when the expectations are edited to demand 20% more; a compare results file as the
 * measurement; errors naming the argument. Timing again on a GPU is test/gpu/test_compare.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/expect.h"
#include "core/store.h"
#include "core/util.h"
#include "proc.h"

static const char *EXE;
static char *TMP;

static int run(char **out, ...) {
  static const char *const pre[] = {"expect", NULL};
  va_list ap;
  va_start(ap, out);
  int rc = proc_run_pre(EXE, pre, TMP, 120, out, ap);
  va_end(ap);
  return rc;
}
#define EXPECT(out, ...) run(out, __VA_ARGS__, (const char *)NULL)

static at_expect_entry entry(const char *device, const char *tag, int64_t m, double tflops) {
  at_expect_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.device, sizeof e.device, "%s", device);
  snprintf(e.arch, sizeof e.arch, "sm_90a");
  snprintf(e.op, sizeof e.op, "gemm_a8w8_blockscale");
  snprintf(e.tag, sizeof e.tag, "%s", tag);
  e.m = m, e.n = 1024, e.k = 512, e.tflops = tflops, e.time_us = -1;
  return e;
}

static void judge(void) {
  at_expect_file want = {0}, got = {0};
  at_expect_default_settings(&want.settings);
  at_expect_entry w[] = {entry("H100", "T", 16, 10), entry("H100", "T", 32, 10), entry("H100", "T", 64, 10),
                         entry("H100", "T", 128, 10), entry("H100", "T", 256, 10), entry("L40S", "T", 16, 10)};
  for (size_t i = 0; i < AT_ARRAY_LEN(w); i++) at_expect_add(&want, &w[i]);
  /* equal; 9.5 (-5%, within 10%); 12 (+20%: faster); 8 (-20%: slower); none for 256 */
  at_expect_entry g[] = {entry("H100", "T", 16, 10), entry("H100", "", 32, 9.5), entry("H100", "T", 64, 12),
                         entry("H100", "T", 128, 8), entry("H100", "T", 256, -1)};
  for (size_t i = 0; i < AT_ARRAY_LEN(g); i++) at_expect_add(&got, &g[i]);
  at_expect_verdict v[6];
  int failures, judged;
  at_expect_judge(&want, &got, 10, v, &failures, &judged);
  CHECK_EQ_INT(v[0].kind, AT_EXPECT_OK);
  CHECK_EQ_INT(v[1].kind, AT_EXPECT_OK); /* a measurement without a tag matches any */
  CHECK_EQ_INT(v[2].kind, AT_EXPECT_FASTER);
  CHECK_EQ_INT(v[3].kind, AT_EXPECT_SLOWER);
  CHECK(v[3].change_pct < -19.9 && v[3].change_pct > -20.1);
  CHECK_EQ_INT(v[4].kind, AT_EXPECT_MISSING);
  CHECK_EQ_INT(v[5].kind, AT_EXPECT_OTHER_DEVICE);
  CHECK_EQ_INT(failures, 2);
  CHECK_EQ_INT(judged, 5);
  /* Equal numbers pass at any tolerance; demanding 20% more fails at 10%, passes at 20%. */
  at_expect_judge(&want, &want, 0, v, &failures, &judged);
  CHECK_EQ_INT(failures, 0);
  for (size_t i = 0; i < want.n; i++) want.e[i].tflops *= 1.2;
  at_expect_judge(&want, &got, 10, v, &failures, &judged);
  CHECK_EQ_INT(v[0].kind, AT_EXPECT_SLOWER);
  at_expect_judge(&want, &got, 20, v, &failures, &judged);
  CHECK_EQ_INT(v[0].kind, AT_EXPECT_OK);
  /* The file's text reads back as it was written. */
  char *json = at_expect_to_json(&want), *path = at_path_join(TMP, "rt.json");
  at_write_file_atomic(path, json, strlen(json));
  at_expect_file back;
  CHECK_EQ_INT(at_expect_load(path, &back), AT_OK);
  CHECK_EQ_INT(back.n, want.n);
  if (back.n == want.n) CHECK(back.e[5].tflops > 11.99 && back.e[5].tflops < 12.01 && strcmp(back.e[5].device, "L40S") == 0);
  at_expect_free(&back);
  free(json), free(path);
  at_expect_free(&want), at_expect_free(&got);
}

/* Multiplies every "tflops" of an expectations file by f (a hand edit of the committed file). */
static void demand(const char *from, const char *to, double f) {
  at_expect_file e;
  if (at_expect_load(from, &e) != AT_OK) {
    CHECK(0);
    return;
  }
  for (size_t i = 0; i < e.n; i++) e.e[i].tflops *= f;
  char *json = at_expect_to_json(&e);
  at_write_file_atomic(to, json, strlen(json));
  free(json);
  at_expect_free(&e);
}

static void commands(void) {
  char *db = at_path_join(TMP, "v3.db"), *src = at_path_join(getenv("AT_TEST_DATA"), "db/v3.db");
  char *cmd = at_xasprintf("cp '%s' '%s'", src, db);
  CHECK_EQ_INT(system(cmd), 0);
  char *exp = at_path_join(TMP, "exp/sm90.json"), *more = at_path_join(TMP, "more.json"), *out;
  CHECK_EQ_INT(EXPECT(&out, "record", "--db", db, "--out", exp), 0);
  CHECK_CONTAINS(out, "expect record: 5 expectations of NVIDIA H100 80GB HBM3 (sm90)");
  free(out);
  char *text = slurp(exp);
  CHECK_CONTAINS(text, "\"format\": \"autotune-expectations/1\"");
  CHECK_EQ_INT(count_of(text, "\"device\": \"NVIDIA H100 80GB HBM3\""), 5);
  CHECK_CONTAINS(text, "\"tag\": \"REPORT\", \"m\": 512, \"n\": 1024, \"k\": 512, \"tflops\": ");
  free(text);
  /* The same numbers pass; 20% more demanded fails, naming the shapes. */
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", exp, "--measured", exp), 0);
  CHECK_CONTAINS(out, "5 checked: 5 ok");
  free(out);
  demand(exp, more, 1.2);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", more, "--measured", exp), 1);
  CHECK_CONTAINS(out, "sm90   REPORT                   512    1024     512");
  CHECK_EQ_INT(count_of(out, "-16.7%  SLOWER"), 5);
  CHECK_CONTAINS(out, "expect check: 5 of 5 expectations not met");
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", more, "--measured", exp, "--tolerance", "20"), 0);
  free(out);
  /* A compare results file as the measurement: its autotune records, 5% slower than expected. */
  char *res = at_path_join(TMP, "compare.json");
  at_expect_file e;
  CHECK_EQ_INT(at_expect_load(exp, &e), AT_OK);
  at_buf b = {0};
  at_buf_puts(&b, "{\"format\": \"autotune-results/1\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"REPORT\",\n"
                  " \"device\": \"NVIDIA H100 80GB HBM3\", \"arch\": \"sm_90a\", \"providers\": [\"autotune\"],\n \"shapes\": [");
  for (size_t i = 0; i < e.n; i++)
    at_buf_printf(&b, "%s{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"autotune\": {\"status\": \"ok\", \"time_us\": %.6f}}",
                  i ? ",\n  " : "", (long long)e.e[i].m, (long long)e.e[i].n, (long long)e.e[i].k, e.e[i].time_us * 1.05);
  at_buf_puts(&b, "]}\n");
  at_write_file_atomic(res, b.data, b.len);
  at_buf_free(&b);
  at_expect_free(&e);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", exp, "--measured", res), 0);
  CHECK_EQ_INT(count_of(out, "-4.8%  ok"), 5);
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", exp, "--measured", res, "--tolerance", "3"), 1);
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", exp, "--measured", res, "--provider", "triton"), 2);
  CHECK_CONTAINS(out, "no provider triton in the results file");
  free(out);
  /* Errors. */
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", db, "--measured", exp), 2);
  CHECK_CONTAINS(out, "v3.db");
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "check", "--file", exp, "--measured", exp, "--tolerance", "x"), 2);
  CHECK_CONTAINS(out, "--tolerance: expects a percentage");
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "record", "--db", db, "--device", "sm80", "--out", more), 2);
  CHECK_CONTAINS(out, "--device: no device sm80 in the DB");
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "record", "--db", "/nonexistent.db"), 2);
  CHECK_CONTAINS(out, "--db: no DB at /nonexistent.db");
  free(out);
  CHECK_EQ_INT(EXPECT(&out, "frobnicate"), 2);
  CHECK_CONTAINS(out, "expect: unknown subcommand 'frobnicate'");
  free(out);
  /* A DB with nothing tuned: nothing to record. */
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "DELETE FROM winners"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(EXPECT(&out, "record", "--db", db, "--out", more), 1);
  CHECK_CONTAINS(out, "has no tuned shape (no winner) to record");
  free(out);
  free(res), free(exp), free(more), free(db), free(src), free(cmd);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("expect");
  judge();
  commands();
  return check_summary();
}

/* test_shapes.c: shape files (core/shapefile.h) and `--shapes FILE --only NAME,...` (argv[1] is the
 * autotune binary): the CSV form with names and foreign columns (aiter's files as they are), named
 * YAML groups, the choice of groups by name, prefix and wildcard, errors naming file and line, the
 * committed search_spaces/shapes/llm.yaml, and the options of list and tune (a compile-only run:
 * timing needs a GPU, test/gpu/test_compare.c tunes a CSV's shapes on one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/shapefile.h"
#include "core/space.h"
#include "core/util.h"
#include "proc.h"

static const char *EXE;
static char *TMP;
static const at_op *OP;

static char *file(const char *name, const char *text) {
  char *p = at_path_join(TMP, name);
  at_write_file_atomic(p, text, strlen(text));
  return p;
}

static int has(const at_shape_list *l, int64_t m, int64_t n, int64_t k, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (l->shapes[i].m == m && l->shapes[i].n == n && l->shapes[i].k == k)
      return name ? l->names[i] && strcmp(l->names[i], name) == 0 : l->names[i] == NULL;
  return 0;
}

static void csv(void) {
  at_shape_list l;
  /* aiter's untuned file, as it is: spaces after the commas, a blank line at the end. */
  const char *aiter = "M,N,K\n16, 1536, 7168\n16, 576, 7168\n1,2560,2048\n\n";
  CHECK_EQ_INT(at_shapes_parse_csv("a.csv", aiter, OP, &l), AT_OK);
  CHECK_EQ_INT(l.n, 3);
  CHECK(has(&l, 16, 576, 7168, NULL) && has(&l, 1, 2560, 2048, NULL));
  at_shape_list_free(&l);
  /* A tuned file's columns around M, N, K are ignored; a name column names the rows. */
  const char *tuned = "cu_num,M,N,K,kernelId,splitK,us,kernelName,Name\n"
                      "80,16,1536,7168,3,0,12.5,a8w8_kernel_x,dsv3/q_a\n"
                      "80,32,1536,7168,3,0,13.1,a8w8_kernel_y,\n";
  CHECK_EQ_INT(at_shapes_parse_csv("t.csv", tuned, OP, &l), AT_OK);
  CHECK_EQ_INT(l.n, 2);
  CHECK(has(&l, 16, 1536, 7168, "dsv3/q_a") && has(&l, 32, 1536, 7168, NULL));
  at_shape_list_free(&l);
  static const struct {
    const char *text, *msg;
  } BAD[] = {
      {"name,M,N,K\nbad name,16,4096,4096\n", "t.csv:2: name 'bad name' must be"},
      {"M,N,K,m\n16,4096,4096,1\n", "t.csv:1: the header names the column M twice"},
      {"M,N,K,x\n16,4096,4096\n", "t.csv:2: 3 comma-separated fields where the header has 4"},
      {"M,N,K\n16,4096,4096\n16,4096,4096\n", "t.csv:3: shape M=16 N=4096 K=4096 is listed twice (first on line 2)"},
  };
  for (size_t i = 0; i < AT_ARRAY_LEN(BAD); i++) {
    CHECK_EQ_INT(at_shapes_parse_csv("t.csv", BAD[i].text, OP, &l), AT_ERR_INPUT);
    CHECK_CONTAINS(at_errmsg(), BAD[i].msg);
  }
}

static void yaml_and_only(void) {
  char *y = file("named.yaml", "# two models\n"
                               "- {name: m1/decode/qkv, N: 6144, K: 4096, M: [1, 16]}\n"
                               "- {name: m1/prefill/qkv, N: 6144, K: 4096, M: 2048}\n"
                               "- {name: m2/decode/o, N: 8192, K: 1024, M: [16]}\n"
                               "- {N: 1024, K: 1024, M: 64}\n");
  at_shape_list l;
  CHECK_EQ_INT(at_shapes_load(y, OP, &l), AT_OK);
  CHECK_EQ_INT(l.n, 5);
  CHECK(has(&l, 2048, 6144, 4096, "m1/prefill/qkv") && has(&l, 64, 1024, 1024, NULL));
  /* A name chooses itself and what is under it; wildcards; several names. */
  static const struct {
    const char *only;
    size_t n;
  } PICK[] = {{"m1", 3}, {"m1/decode", 2}, {"*/decode", 3}, {"m2/decode/o,m1/prefill", 2}, {"m1/*/qkv", 3}};
  for (size_t i = 0; i < AT_ARRAY_LEN(PICK); i++) {
    at_shape_list c;
    CHECK_EQ_INT(at_shapes_load(y, OP, &c), AT_OK);
    CHECK_EQ_INT(at_shapes_select(&c, PICK[i].only, y), AT_OK);
    CHECK_EQ_INT(c.n, PICK[i].n);
    at_shape_list_free(&c);
  }
  CHECK_EQ_INT(at_shapes_select(&l, "m1,m3", y), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "--only: 'm3' names no shape group of");
  CHECK_CONTAINS(at_errmsg(), "(its groups: m1/decode/qkv, m1/prefill/qkv, m2/decode/o)");
  CHECK_EQ_INT(l.n, 5); /* untouched by a failed choice */
  CHECK_EQ_INT(at_shapes_select(&l, "m1", y), AT_OK);
  CHECK_EQ_INT(l.n, 3);
  at_shape_list_free(&l);
  free(y);
  /* YAML errors carry line and column. */
  char *bad = file("bad.yaml", "- {name: ok, N: 4096, K: 4096, M: 16}\n- {name: 'no good', N: 4096, K: 4096, M: 16}\n");
  CHECK_EQ_INT(at_shapes_load(bad, OP, &l), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "bad.yaml:2:10: name 'no good' must be");
  free(bad);
  bad = file("twice.yaml", "- {name: a, N: 4096, K: 4096, M: 16}\n- {name: b, N: 4096, K: 4096, M: [32, 16]}\n");
  CHECK_EQ_INT(at_shapes_load(bad, OP, &l), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "twice.yaml:2:39: shape M=16 N=4096 K=4096 is listed twice (first in the group 'a')");
  free(bad);
}

/* The committed list: every model and phase, valid names, --only by model, phase and projection. */
static void committed(void) {
  char *llm = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "search_spaces/shapes/llm.yaml");
  at_shape_list l;
  CHECK_EQ_INT(at_shapes_load(llm, OP, &l), AT_OK);
  CHECK(l.n >= 100);
  for (size_t i = 0; i < l.n; i++) CHECK(l.names[i] && at_shape_name_ok(l.names[i]));
  CHECK_EQ_INT(at_shapes_select(&l, "llama3-8b,llama3-70b-tp8,deepseek-v3-tp8,llama3.1-405b-tp8,qwen3-32b-tp2,qwen2.5-7b,phi3-medium,"
                                   "gemma2-27b-tp2", llm), AT_OK);
  size_t all = l.n;
  at_shape_list_free(&l);
  const char *const PICKS[] = {"*/decode", "*/prefill", "deepseek-v3-tp8/decode/q_kv_a", "llama3-8b/prefill/gate_up"};
  size_t decode = 0, prefill = 0;
  for (size_t i = 0; i < AT_ARRAY_LEN(PICKS); i++) {
    CHECK_EQ_INT(at_shapes_load(llm, OP, &l), AT_OK);
    CHECK_EQ_INT(at_shapes_select(&l, PICKS[i], llm), AT_OK);
    CHECK(l.n > 0);
    if (i == 0) decode = l.n;
    if (i == 1) prefill = l.n;
    if (i == 2) CHECK(l.n > 0 && l.shapes[0].n == 2112 && l.shapes[0].k == 7168);
    at_shape_list_free(&l);
  }
  CHECK_EQ_INT(decode + prefill, all);
  free(llm);
}

/* The options: list shows the chosen shapes; tune takes them (compile-only here); errors exit 2. */
static void options(void) {
  char *tiny = at_path_join(getenv("AT_TEST_DATA"), "spaces/tiny.yaml");
  char *shapes = file("tune.csv", "name,M,N,K\nsmall,16,2048,1024\nsmall,32,2048,1024\nbig,4096,2048,1024\n");
  char *dir = TMP;
  CHECK_EQ_INT(proc_run_in(EXE, dir, 120, "list", tiny, "--shapes", shapes, "--only", "small", (char *)NULL), 0);
  char *out = proc_output(dir);
  CHECK_CONTAINS(out, "shapes 2:\n  0: M=16 N=2048 K=1024 small\n  1: M=32 N=2048 K=1024 small\n");
  free(out);
  /* The space's own shapes have no names. */
  CHECK_EQ_INT(proc_run_in(EXE, dir, 120, "list", tiny, "--only", "small", (char *)NULL), 2);
  out = proc_output(dir);
  CHECK_CONTAINS(out, "has no named shape groups");
  free(out);
  char *bad = file("bad.csv", "M,N,K\n16,2048,1000\n");
  char *db = at_path_join(TMP, "t.db"), *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);
  CHECK_EQ_INT(proc_run_in(EXE, dir, 300, "--compile-only", "--arch", "sm_90a", "--db", db, "--shapes", bad, tiny,
                           (char *)NULL), 2);
  out = proc_output(dir);
  CHECK_CONTAINS(out, "--shapes: ");
  CHECK_CONTAINS(out, "bad.csv:2: K must be a positive multiple of 128");
  free(out);
  CHECK(!at_file_exists(db)); /* bad input: the DB is not even created */
  CHECK_EQ_INT(proc_run_in(EXE, dir, 600, "--compile-only", "--arch", "sm_90a", "--db", db, "--shapes", shapes,
                           "--only", "big", tiny, (char *)NULL), 0);
  out = proc_output(dir);
  CHECK_CONTAINS(out, "surviving 18");
  free(out);
  free(bad), free(db), free(cache), free(shapes), free(tiny);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("shapes");
  OP = at_op_find("gemm_a8w8_blockscale");
  if (!OP) return 1;
  csv();
  yaml_and_only();
  committed();
  options();
  return check_summary();
}

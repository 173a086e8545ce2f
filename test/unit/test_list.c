/* test_list.c: `autotune list` (argv[1] is the autotune binary): the surviving candidates, the
 * pruning counts and the shapes of a space, without compiling anything and without a GPU; the JSON
 * form agrees with the text; bad arguments are exit 2 naming them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/util.h"
#include "proc.h"

static const char *EXE;
static char *TMP;

static int run(const char *out_name, char **text, ...) {
  char *out = at_path_join(TMP, out_name);
  va_list ap;
  va_start(ap, text);
  int rc = proc_run_va(EXE, out, 120, ap);
  va_end(ap);
  *text = slurp(out);
  free(out);
  return rc;
}

/* Entries in a directory (the compile cache must stay empty: list compiles nothing). */
static int entries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("list");
  char *cache = at_path_join(TMP, "cache");
  at_mkdirs(cache);
  setenv("AUTOTUNE_CACHE", cache, 1);
  char *tiny = at_path_join(getenv("AT_TEST_DATA"), "spaces/tiny.yaml");
  char *shipped = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "search_spaces/a8w8_blockscale.yaml");
  char *json = at_path_join(TMP, "tiny.json");
  char *text;

  /* The tiny space: 24 points, 6 pruned by its one constraint, 18 candidates on 2 shapes. */
  CHECK_EQ_INT(run("tiny.txt", &text, "list", "--json", json, tiny, (const char *)NULL), 0);
  CHECK_CONTAINS(text, "candidates 24, pruned 6, surviving 18");
  CHECK_CONTAINS(text, "pruned by mma/split_small: 6");
  CHECK_CONTAINS(text, "0: M=16 N=1024 K=512");
  CHECK_EQ_INT(count_of(text, " gemm_a8w8_blockscale_mma<"), 18);
  free(text);
  text = slurp(json);
  CHECK_CONTAINS(text, "\"surviving\": 18");
  CHECK_EQ_INT(count_of(text, "\"kernel\": "), 18);
  CHECK_EQ_INT(count_of(text, "\"shapes\": [0,1]"), 18);
  CHECK_CONTAINS(text, "{\"variant\": \"mma\", \"rule\": \"split_small\", \"per_shape\": false, \"count\": 6}");
  free(text);
  CHECK_EQ_INT(entries(cache), 0);

  /* --json - : the JSON alone on stdout. */
  CHECK_EQ_INT(run("tiny-stdout.txt", &text, "list", "--json", "-", tiny, (const char *)NULL), 0);
  CHECK(text[0] == '{');
  CHECK(strstr(text, "surviving 18") == NULL);
  free(text);

  /* The shipped space for an sm_89 target: the sm90 family is skipped with its reason. */
  CHECK_EQ_INT(run("sm89.txt", &text, "list", "--arch", "sm_89", shipped, (const char *)NULL), 0);
  CHECK_CONTAINS(text, "pruned by sm90/device_arch (family sm90 needs sm_90a");
  CHECK(strstr(text, " gemm_a8w8_blockscale_sm90<") == NULL);
  CHECK(strstr(text, " gemm_a8w8_blockscale_mma<") != NULL);
  free(text);

  /* The shipped space on other weights' shapes keeps its scales-in-shared-memory variant, with
   * SCALE_KB = K / 128 of each (56 at K = 7168, 64 at 8192): it lists every K / 128 the template
   * holds, not just its own shapes' (session 51). */
  char *llm = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "search_spaces/shapes/llm.yaml");
  CHECK_EQ_INT(run("scale-kb.txt", &text, "list", shipped, "--shapes", llm, "--only",
                   "deepseek-v3-tp8/decode/kv_a,llama3-70b-tp8/decode/qkv", (const char *)NULL),
               0);
  const int at56 = count_of(text, ", 0, 56> shapes"), at64 = count_of(text, ", 0, 64> shapes");
  CHECK(at56 > 0 && at64 > 0);
  CHECK_EQ_INT(count_of(text, "\n  sm90_scales {"), at56 + at64);
  free(text);
  free(llm);

  /* Bad input: exit 2, naming what is wrong. */
  CHECK_EQ_INT(run("bad1.txt", &text, "list", "--max-candidates", "0", tiny, (const char *)NULL), 2);
  CHECK_CONTAINS(text, "--max-candidates");
  free(text);
  CHECK_EQ_INT(run("bad2.txt", &text, "list", "--arch", "sm_5x", tiny, (const char *)NULL), 2);
  CHECK_CONTAINS(text, "--arch");
  free(text);
  CHECK_EQ_INT(run("bad3.txt", &text, "list", (const char *)NULL), 2);
  CHECK_CONTAINS(text, "SPACE.yaml");
  free(text);
  CHECK_EQ_INT(run("bad4.txt", &text, "list", "--max-candidates", "3", tiny, (const char *)NULL), 2);
  CHECK_CONTAINS(text, "3");
  free(text);
  CHECK_EQ_INT(run("bad5.txt", &text, "list", tiny, "--shapes", (const char *)NULL), 2);
  CHECK_CONTAINS(text, "option --shapes needs a value");
  free(text);
  CHECK_EQ_INT(run("bad6.txt", &text, "list", "-x", tiny, (const char *)NULL), 2);
  CHECK_CONTAINS(text, "unknown option '-x'");
  free(text);

  free(cache), free(tiny), free(shipped), free(json);
  return check_summary();
}

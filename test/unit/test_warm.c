/* test_warm.c: `autotune warm` on the committed configs, no GPU (it compiles with NVRTC only):
 *  - with the tail off, the kernels it compiles for 6144,4096 up to M = 3000 are exactly those the
 *    runtime library selects (at_runtime_select, the launch path's lookup) at some M of 1 .. 3000;
 *  - with the tail on, exactly those and the tails the op's plan gives each selection on 132 SMs;
 *  - the cache then holds exactly their cubins under the keys the runtime computes for sm_90a
 *    (the arch it compiles for on an sm_90 GPU), and a second run compiles nothing;
 *  - --shapes adds the weights of a shape file's chosen groups, each once;
 *  - bad arguments exit 2 naming the argument; a cache that cannot store a kernel exits 1. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../engine/runtime/autotune.h"
#include "check.h"
#include "core/config.h"
#include "core/jit.h"
#include "core/lookup.h"
#include "core/util.h"
#include "ops/gemm_a8w8_blockscale_calls.h"
#include "ops/gemm_a8w8_blockscale_tail.h"
#include "proc.h"

static const char *EXE;
static char *TMP, *CONFIGS;
static const char *OP = "gemm_a8w8_blockscale";

enum { N = 6144, K = 4096, M_MAX = 3000 };

/* Runs `autotune warm` with the arguments up to a NULL; its output in *out (malloc'd). */
static int warm(char **out, ...) {
  static const char *const pre[] = {"warm", NULL};
  va_list ap;
  va_start(ap, out);
  int rc = proc_run_pre(EXE, pre, TMP, 900, out, ap);
  va_end(ap);
  return rc;
}

/* The kernels a warm run listed ("  compiled  NAME (...)", "  cached    NAME"), one string each. */
typedef struct names {
  char **v;
  int n;
} names;

static int has(const names *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i], name) == 0) return 1;
  return 0;
}

static void add(names *l, const char *name) {
  if (has(l, name)) return;
  l->v = realloc(l->v, sizeof *l->v * (size_t)(l->n + 1));
  l->v[l->n++] = strdup(name);
}

static void free_names(names *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static names listed(const char *out, const char *status) {
  names l = {0};
  char prefix[32];
  snprintf(prefix, sizeof prefix, "\n  %-9s ", status);
  for (const char *p = out; (p = strstr(p, prefix));) {
    p += strlen(prefix);
    const char *end = strchr(p, '\n');
    const char *paren = strstr(p, " (");
    if (paren && paren < end) end = paren; /* " (0.61 s)" after a compiled one */
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)(end - p), p);
    add(&l, name);
  }
  return l;
}

static int cubins_in(const char *dir) {
  char *cmd = at_xasprintf("find '%s' -name '*.cubin' | wc -l", dir);
  FILE *f = popen(cmd, "r");
  int n = -1;
  if (!f || fscanf(f, "%d", &n) != 1) n = -1;
  if (f) pclose(f);
  free(cmd);
  return n;
}

/* The tail config's kernel name for a tail "ROWSxCOLS" with CLUSTER_K ck (the template's). */
static char *tail_name(const char *tile, int ck) {
  int t = strcmp(tile, "128x128") == 0 ? 0 : strcmp(tile, "64x64") == 0 ? 1 : strcmp(tile, "128x256") == 0 ? 2 : -1;
  at_config main = {0}, c;
  snprintf(main.template_name, sizeof main.template_name, "gemm_a8w8_blockscale_sm90.cuh");
  snprintf(main.family, sizeof main.family, "sm90");
  if (t < 0 || at_a8w8_tail_config(&main, t, ck, &c) != 0) return NULL;
  return at_config_name_expr(&c);
}

/* The runtime's selections at every M of 1 .. M_MAX for device sm90 (named: its SM count is the
 * time model's own, 132, which the warm runs give), its tail off or on; with the tail, each with
 * the tail the op's plan gives it on 132 SMs, as the launch path plans it. */
static names selections(int tail) {
  at_runtime_options o = {0};
  o.configs_dir = CONFIGS;
  o.tail = tail ? AT_TAIL_ON : AT_TAIL_OFF;
  at_runtime *rt = NULL;
  names l = {0};
  CHECK_EQ_INT(at_runtime_open(&o, &rt), AT_STATUS_OK);
  for (int m = 1; rt && m <= M_MAX; m++) {
    at_selection s;
    if (at_runtime_select(rt, OP, m, N, K, "sm90", &s) != AT_STATUS_OK) {
      CHECK(!"at_runtime_select failed");
      break;
    }
    add(&l, s.kernel);
    if (!tail || strncmp(s.kernel, "gemm_a8w8_blockscale_sm90<", 26) != 0) continue;
    at_config c = {0};
    snprintf(c.family, sizeof c.family, "sm90");
    CHECK_EQ_INT(at_config_set_params(&c, s.params), AT_OK);
    const char *pn[AT_MAX_PARAMS];
    const at_params p = at_config_params(&c, pn);
    const at_shape shape = {m, N, K};
    at_a8w8_tail t;
    at_a8w8_tail_plan("sm90", &p, &shape, 132, at_source_name_untuned(s.source), &t);
    if (!t.split) continue;
    int rows, cols;
    char tile[16];
    at_a8w8_tail_tile(t.tile, &rows, &cols);
    snprintf(tile, sizeof tile, "%dx%d", rows, cols);
    char *name = tail_name(tile, t.cluster_k);
    CHECK(name != NULL);
    if (name) add(&l, name);
    free(name);
  }
  at_runtime_close(rt);
  return l;
}

/* The cache's cubins are exactly those of these kernels under the keys the runtime computes for
 * them on an sm_90 GPU (its load_module: the template from the templates directory, arch
 * sm_90a, no PCH). */
static void keys_are_the_runtimes(const char *cache, const names *kernels) {
  char *path = at_path_join(at_templates_dir(), "gemm_a8w8_blockscale_sm90.cuh");
  at_jit_source *src = NULL;
  CHECK_EQ_INT(at_jit_source_load(path, at_templates_dir(), &src), AT_OK);
  const at_jit_options o = {"sm_90a", 0};
  int found = 0;
  for (int i = 0; src && i < kernels->n; i++) {
    char key[65];
    at_jit_key(src, kernels->v[i], &o, key);
    char *file = at_xasprintf("%s/%.2s/%s.cubin", cache, key, key);
    FILE *f = fopen(file, "rb");
    if (f) fclose(f), found++;
    else fprintf(stderr, "no cubin under the runtime's key for %s\n", kernels->v[i]);
    free(file);
  }
  CHECK_EQ_INT(found, kernels->n);
  CHECK_EQ_INT(cubins_in(cache), kernels->n);
  at_jit_source_free(src);
  free(path);
}

static void exact_without_tails(const char *cache) {
  setenv("AUTOTUNE_TAIL", "off", 1);
  char *out;
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--m-max",
                    "3000", "6144,4096", NULL),
               0);
  unsetenv("AUTOTUNE_TAIL");
  CHECK_CONTAINS(out, "tails off");
  names w = listed(out, "compiled"), sel = selections(0);
  CHECK(sel.n >= 3);
  CHECK_EQ_INT(w.n, sel.n);
  for (int i = 0; i < sel.n; i++)
    if (!has(&w, sel.v[i])) {
      fprintf(stderr, "warm did not compile %s\n", sel.v[i]);
      CHECK(!"a selection missing");
    }
  keys_are_the_runtimes(cache, &sel);
  free_names(&w), free_names(&sel), free(out);
}

static void with_tails(const char *cache) {
  char *out;
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--m-max",
                    "3000", "--jobs", "2", "6144,4096", NULL),
               0);
  CHECK_CONTAINS(out, "(sm_90a, 132 SMs)");
  names compiled = listed(out, "compiled"), cached = listed(out, "cached"), all = {0};
  for (int i = 0; i < compiled.n; i++) add(&all, compiled.v[i]);
  for (int i = 0; i < cached.n; i++) add(&all, cached.v[i]);
  names want = selections(1);
  CHECK_EQ_INT(all.n, want.n);
  for (int i = 0; i < want.n; i++)
    if (!has(&all, want.v[i])) {
      fprintf(stderr, "warm did not compile %s\n", want.v[i]);
      CHECK(!"a kernel missing");
    }
  names sel = selections(0);
  CHECK(want.n > sel.n); /* the range has tails (6144 x 4096 at M = 2560 on 132 SMs) */
  CHECK(cached.n >= 3); /* the first run's kernels, already there */
  keys_are_the_runtimes(cache, &want);
  free(out);

  /* Again: nothing to compile. */
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--m-max",
                    "3000", "6144,4096", NULL),
               0);
  names again = listed(out, "cached");
  CHECK_EQ_INT(again.n, all.n);
  CHECK_CONTAINS(out, "warm: 0 compiled");
  CHECK_EQ_INT(cubins_in(cache), all.n);
  free_names(&again), free_names(&compiled), free_names(&cached), free_names(&all), free_names(&sel);
  free_names(&want), free(out);
}

/* Each: the arguments, and what the error must say. */
static void bad_arguments(const char *cache) {
  static const struct {
    const char *args[8];
    const char *says;
  } CASES[] = {
      {{"--device", "sm90", NULL}, "no N,K given"},
      {{"--device", "sm90", "4096x4096", NULL}, "'4096x4096' is not N,K"},
      {{"--device", "sm90", "4096,", NULL}, "'4096,' is not N,K"},
      {{"--device", "sm90", "1024,1000", NULL}, "N,K 1024,1000: K must be"},
      {{"--device", "sm90", "--m-max", "0", "1024,1024", NULL}, "--m-max expects"},
      {{"--device", "sm90", "--m-max", "2000000", "1024,1024", NULL}, "--m-max expects"},
      {{"--device", "sm90", "--sm-count", "x", "1024,1024", NULL}, "--sm-count expects"},
      {{"--device", "sm90", "--arch", "h100", "1024,1024", NULL}, "--arch: 'h100'"},
      {{"--device", "sm90", "--op", "nope", "1024,1024", NULL}, "--op: 'nope'"},
      {{"--device", "sm90", "--jobs", "0", "1024,1024", NULL}, "--jobs expects"},
      {{"--device", "sm90", "--bogus", "1024,1024", NULL}, "unknown option '--bogus'"},
      {{"--device", "NVIDIA_B300", "--sm-count", "148", "1024,1024", NULL}, "--arch is needed"},
      {{"--device", "sm90", "1024,1024", NULL}, "--sm-count is needed"},
      {{"--device", "sm90", "--arch", "sm_90", "--sm-count", "132", "1024,1024"}, "compiles for sm_90a"},
      {{"--device", "sm90", "--arch", "sm_100a", "--sm-count", "132", "1024,1024"}, "does not match --device sm90"},
      {{"--device", "sm90", "--sm-count", "132", "--db", "/nonexistent/x.db", "1024,1024"}, "--db /nonexistent/x.db"},
      {{"--device", "sm90", "-4096,1024", NULL}, "unknown option '-4'"},
      {{"--device", "sm9", "--sm-count", "132", "1024,1024", NULL}, "--device sm9: not an arch name"},
      {{"--device", "sm90", "--only", "x", "1024,1024", NULL}, "--only chooses groups of a --shapes file"},
      {{"--device", "sm90", NULL}, "nor --shapes"},
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    char *out;
    const char *const *a = CASES[i].args;
    int rc = warm(&out, "--configs", CONFIGS, "--cache", cache, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], NULL);
    CHECK_EQ_INT(rc, 2);
    CHECK_CONTAINS(out, CASES[i].says);
    free(out);
  }
  char *out;
  CHECK_EQ_INT(warm(&out, "--configs", "/nonexistent", "--device", "sm90", "--sm-count", "132", "1024,1024", NULL), 2);
  CHECK_CONTAINS(out, "--configs /nonexistent: not a directory");
  free(out);
  CHECK_EQ_INT(warm(&out, "--help", NULL), 0);
  CHECK_CONTAINS(out, "usage: autotune warm");
  free(out);
}

/* --shapes: the weights of the chosen groups of a shape file, each once, with those given; a bad
 * file names its line. */
static void from_a_shape_file(const char *cache) {
  char *yaml = at_path_join(TMP, "weights.yaml");
  const char *text = "shapes:\n"
                     "  - {name: m/decode/a, N: 1024, K: 1024, M: [1, 16]}\n"
                     "  - {name: m/prefill/a, N: 1024, K: 1024, M: [512]}\n"
                     "  - {name: m/decode/b, N: 2048, K: 1024, M: [1]}\n"
                     "  - {name: other/decode/c, N: 3072, K: 1024, M: [1]}\n";
  at_write_file_atomic(yaml, text, strlen(text));
  setenv("AUTOTUNE_TAIL", "off", 1);
  char *out;
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--m-max", "1", "--shapes", yaml,
                    "--only", "m", "2048,1024", NULL),
               0);
  CHECK_EQ_INT(count_of(out, "N=2048 K=1024:"), 1); /* given and in the file: once */
  CHECK_EQ_INT(count_of(out, "N=1024 K=1024:"), 1); /* two groups of the file: once */
  CHECK_EQ_INT(count_of(out, "N=3072 K=1024:"), 0); /* not chosen */
  free(out);
  const char *bad = "shapes:\n  - {name: x, N: 1001, K: 1024, M: [1]}\n";
  at_write_file_atomic(yaml, bad, strlen(bad));
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--shapes", yaml, NULL), 2);
  CHECK_CONTAINS(out, "weights.yaml:2:");
  /* $AUTOTUNE_CONFIGS is the default, as the runtime's: the same answer as --configs. */
  setenv("AUTOTUNE_CONFIGS", CONFIGS, 1);
  free(out);
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--cache", cache, "--m-max", "1", "1024,1024", NULL), 0);
  CHECK_CONTAINS(out, "from nk_file");
  unsetenv("AUTOTUNE_CONFIGS");
  unsetenv("AUTOTUNE_TAIL");
  free(out), free(yaml);
}

/* A cache path under a regular file: the kernel compiles but cannot be stored. */
static void unwritable_cache(void) {
  char *file = at_path_join(TMP, "not-a-dir");
  FILE *f = fopen(file, "w");
  if (f) fclose(f);
  char *cache = at_path_join(file, "cache");
  setenv("AUTOTUNE_TAIL", "off", 1);
  char *out;
  CHECK_EQ_INT(warm(&out, "--device", "sm90", "--sm-count", "132", "--configs", CONFIGS, "--cache", cache, "--m-max", "1", "1024,1024", NULL),
               1);
  unsetenv("AUTOTUNE_TAIL");
  CHECK_CONTAINS(out, "could not store it");
  CHECK_CONTAINS(out, "1 failed");
  free(out), free(cache), free(file);
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: test_warm AUTOTUNE_EXE\n"), 2;
  EXE = argv[1];
  /* The runtime's and warm's defaults read these: the test names every source itself. */
  unsetenv("AUTOTUNE_TAIL"), unsetenv("AUTOTUNE_DB"), unsetenv("AUTOTUNE_CONFIGS");
  TMP = scratch_dir("warm");
  const char *root = getenv("AT_TEST_SOURCE_ROOT");
  CONFIGS = at_path_join(root ? root : ".", "configs");
  char *cache = at_path_join(TMP, "cache");
  bad_arguments(cache);
  CHECK_EQ_INT(cubins_in(cache), 0); /* no argument error compiled anything */
  exact_without_tails(cache);
  with_tails(cache);
  from_a_shape_file(cache);
  unwritable_cache();
  free(cache), free(CONFIGS), free(TMP);
  return check_summary();
}

/* test_space.c: the search-space loader (engine/core/space.h) and its YAML reader.
 *
 * Covers: the shipped space, loaded and checked field by field; kernel name expressions; the
 * corpus of malformed spaces in test/data/bad/, where every file's first line says where the
 * error must point and what it must say ("# expect: LINE:COL: substring"; files named enum_*
 * load and fail in at_enumerate); malformed files that cannot be committed (not UTF-8, NUL and
 * control bytes, over 1 MiB, a FIFO), written at run time under AT_TEST_TMP; and a small valid space
 * using the short forms (a scalar M, a single scalar value, no constraints). */
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/enumerate.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/space.h"
#include "core/util.h"
#include "core/yamltree.h"

#define ENTRY "gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>"
/* The shipped space's: GROUP_M and SPLIT_K are launch parameters, the kernel is instantiated with 0. */
#define SHIPPED_ENTRY "gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, 0, 0, B_HINT>"

static const char *env(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "%s is not set (run through meson test)\n", name);
    exit(1);
  }
  return v;
}

static void write_text(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK_EQ_INT(fwrite(data, 1, n, f), n);
  CHECK_EQ_INT(fclose(f), 0);
}

/* The error of a failed load or enumeration: "path:LINE:COL: " then a message with want_msg. */
static void check_error_text(const char *path, int rc, int line, int col, const char *want_msg) {
  CHECK_EQ_INT(rc, AT_ERR_INPUT);
  char *prefix = at_xasprintf("%s:%d:%d: ", path, line, col);
  const char *msg = at_errmsg();
  int prefix_ok = msg && strncmp(msg, prefix, strlen(prefix)) == 0;
  if (!prefix_ok) fprintf(stderr, "  expected the prefix \"%s\" in: %s\n", prefix, msg ? msg : "(null)");
  CHECK(prefix_ok);
  CHECK_CONTAINS(msg, want_msg);
  free(prefix);
}

/* Loading path must fail at line:col with a message containing want_msg. */
static void expect_load_error(const char *path, int line, int col, const char *want_msg) {
  int before = check_failures;
  at_space *s = NULL;
  at_errclear();
  int rc = at_space_load(path, &s);
  if (rc == AT_OK) fprintf(stderr, "  loaded without an error\n");
  check_error_text(path, rc, line, col, want_msg);
  CHECK(s == NULL);
  at_space_free(s);
  if (check_failures != before) fprintf(stderr, "  ... in %s\n", path);
}

/* Loading path must succeed, and enumerating it for sm_90a fail at line:col. */
static void expect_enumerate_error(const char *path, int line, int col, const char *want_msg) {
  int before = check_failures;
  at_space *s = NULL;
  int rc = at_space_load(path, &s);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc != AT_OK) fprintf(stderr, "  load failed: %s\n", at_errmsg());
  if (s) {
    at_limits lim;
    at_enum *e = NULL;
    CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
    at_errclear();
    rc = at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e);
    if (rc == AT_OK) fprintf(stderr, "  enumerated without an error\n");
    check_error_text(path, rc, line, col, want_msg);
    CHECK(e == NULL);
    at_enum_free(e);
  }
  at_space_free(s);
  if (check_failures != before) fprintf(stderr, "  ... in %s\n", path);
}

/* ---- (a) the shipped space -------------------------------------------------------------------- */

static const at_constraint *find_constraint(const at_variant *v, const char *name) {
  for (size_t i = 0; i < v->nconstraints; i++)
    if (strcmp(v->constraints[i].name, name) == 0) return &v->constraints[i];
  return NULL;
}

static void check_param(const at_param_def *p, const char *name, const int64_t *values, size_t n) {
  CHECK(strcmp(p->name, name) == 0);
  CHECK_EQ_INT(p->n, n);
  for (size_t i = 0; i < n && i < p->n; i++) CHECK_EQ_INT(p->values[i], values[i]);
  if (strcmp(p->name, name) != 0 || p->n != n) fprintf(stderr, "  ... parameter %s (want %s)\n", p->name, name);
}

static void check_shipped_params(const at_variant *v) {
  static const int64_t bm[] = {16, 32, 64, 128}, bn[] = {32, 64, 128, 256}, bk[] = {128}, w[] = {1, 2, 4},
                       st[] = {2, 3, 4}, gm[] = {1, 8}, sk[] = {1, 2, 4, 8}, hint[] = {0, 1};
  CHECK_EQ_INT(v->nparams, 9);
  if (v->nparams != 9) return;
  check_param(&v->params[0], "BLOCK_M", bm, 4);
  check_param(&v->params[1], "BLOCK_N", bn, 4);
  check_param(&v->params[2], "BLOCK_K", bk, 1);
  check_param(&v->params[3], "WARPS_M", w, 3);
  check_param(&v->params[4], "WARPS_N", w, 3);
  check_param(&v->params[5], "STAGES", st, 3);
  check_param(&v->params[6], "GROUP_M", gm, 2);
  check_param(&v->params[7], "SPLIT_K", sk, 4);
  check_param(&v->params[8], "B_HINT", hint, 2);
  /* The name table: params, then M N K, then the device limits, then the derived values. */
  CHECK_EQ_INT(v->slot_shape, 9);
  CHECK(strcmp(v->names[v->slot_shape], "M") == 0);
  CHECK(strcmp(v->names[v->slot_shape + 2], "K") == 0);
  CHECK_EQ_INT(v->slot_limits, 12);
  CHECK(strcmp(v->names[v->slot_limits], AT_LIMIT_NAMES[0]) == 0);
  CHECK_EQ_INT(v->slot_derived, 12 + AT_LIMIT_COUNT);
  CHECK_EQ_INT(v->nnames, 12 + AT_LIMIT_COUNT + 2);
  CHECK(strcmp(v->names[v->slot_derived], "threads") == 0);
  CHECK(strcmp(v->names[v->slot_derived + 1], "smem_bytes") == 0);
}

static void check_shipped_constraints(const at_variant *v) {
  /* Which constraints are evaluated per shape: those that mention M, N or K. */
  static const struct {
    const char *name;
    int uses_shape;
  } want[] = {
      {"warp_tile_m", 0},  {"warp_tile_n", 0},      {"accumulators", 0},    {"warp_work", 0},
      {"two_warps", 0},    {"block_m_fits", 1},     {"group_needs_rows", 1}, {"hint_needs_rows", 1},
      {"small_m_only", 1}, {"split_k_fills", 1}, {"split_k_depth", 1},
  };
  CHECK_EQ_INT(v->nconstraints, sizeof want / sizeof want[0]);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const at_constraint *c = find_constraint(v, want[i].name);
    CHECK(c != NULL);
    if (!c) {
      fprintf(stderr, "  ... no constraint %s\n", want[i].name);
      continue;
    }
    CHECK(c->expr != NULL);
    CHECK_EQ_INT(c->uses_shape, want[i].uses_shape);
    if (c->uses_shape != want[i].uses_shape) fprintf(stderr, "  ... constraint %s\n", c->name);
  }
  const at_constraint *c = find_constraint(v, "warp_tile_m");
  if (c) {
    CHECK(strcmp(c->text, "BLOCK_M % (16 * WARPS_M) == 0") == 0);
    CHECK_EQ_INT(c->line, 31);
    CHECK_EQ_INT(c->col, 21); /* the first character inside the quotes */
  }
  c = find_constraint(v, "split_k_fills");
  if (c) CHECK(at_expr_uses(c->expr, "sm_count") && at_expr_uses(c->expr, "N") && !at_expr_uses(c->expr, "K"));
}

static void check_shipped_shapes(const at_space *s) {
  static const int64_t ms[] = {16, 32, 64, 128, 256, 512, 2048, 4096};
  static const int64_t nk[][2] = {{1024, 1024}, {4096, 1024}, {1024, 2048}, {6144, 1024}, {1024, 3072}};
  CHECK_EQ_INT(s->nshapes, 40);
  if (s->nshapes != 40) return;
  for (size_t g = 0; g < 5; g++)
    for (size_t i = 0; i < 8; i++) {
      const at_shape *sh = &s->shapes[g * 8 + i];
      CHECK(sh->m == ms[i] && sh->n == nk[g][0] && sh->k == nk[g][1]);
    }
}

static void test_shipped_space(void) {
  char *path = at_xasprintf("%s/search_spaces/a8w8_blockscale.yaml", env("AT_TEST_SOURCE_ROOT"));
  at_space *s = NULL;
  int rc = at_space_load(path, &s);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc != AT_OK) {
    fprintf(stderr, "  %s\n", at_errmsg());
    free(path);
    return;
  }
  CHECK(strcmp(s->path, path) == 0);
  CHECK(strcmp(s->op_name, "gemm_a8w8_blockscale") == 0);
  CHECK(s->op != NULL && s->op == at_op_find("gemm_a8w8_blockscale"));
  CHECK(strcmp(s->tag, "A8W8_BLOCKSCALE") == 0);
  CHECK(s->atol == 1e-2);
  CHECK(s->rtol == 1e-2);
  CHECK(s->gamma == 0.0009765625);
  CHECK_EQ_INT(s->seed, 20261122); /* the default: the file sets none */
  CHECK_EQ_INT(strlen(s->hash), 64);
  CHECK(strspn(s->hash, "0123456789abcdef") == 64);
  CHECK_EQ_INT(s->timing.warmup, 1);
  CHECK_EQ_INT(s->timing.samples, 10);
  CHECK_EQ_INT(s->timing.cut_after, 3);
  CHECK(s->timing.cut_factor == 1.25);
  CHECK_EQ_INT(s->timing.retime_top, 5);
  CHECK_EQ_INT(s->timing.retime_samples, 20);
  CHECK(s->timing.l2_multiple == 2.0);
  CHECK(s->timing.timeout_s == 10.0);
  check_shipped_shapes(s);

  CHECK_EQ_INT(s->nvariants, 5);
  if (s->nvariants == 5) {
    /* The same and SWAP_AB, with the operands swapped */
    CHECK(strcmp(s->variants[4].name, "sm90_swap") == 0);
    CHECK(strcmp(s->variants[4].family, "sm90") == 0);
    CHECK_EQ_INT(s->variants[4].nparams, 14);
    /* The same with SCALE_KB, a unit's scales in shared memory */
    CHECK(strcmp(s->variants[3].name, "sm90_scales") == 0);
    CHECK(strcmp(s->variants[3].family, "sm90") == 0);
    CHECK_EQ_INT(s->variants[3].nparams, 14);
    /* BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, UNSPLIT, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE, RESCALE, STORE,
     * CLUSTER_K */
    CHECK(strcmp(s->variants[2].name, "sm90") == 0);
    CHECK(strcmp(s->variants[2].family, "sm90") == 0);
    CHECK_EQ_INT(s->variants[2].nparams, 13);
    CHECK(strcmp(s->variants[1].name, "mma_rs") == 0);
    CHECK(strcmp(s->variants[1].family, "mma") == 0);
    CHECK_EQ_INT(s->variants[1].nparams, 9);
    const at_variant *v = &s->variants[0];
    CHECK(strcmp(v->name, "mma") == 0);
    CHECK(strcmp(v->family, "mma") == 0);
    CHECK(strcmp(v->template_arg, "../templates/gemm_a8w8_blockscale_mma.cuh") == 0);
    CHECK(at_file_exists(v->template_path));
    CHECK(strcmp(v->entry, SHIPPED_ENTRY) == 0);
    CHECK_EQ_INT(v->line, 15);
    /* Every variant leaves GROUP_M and SPLIT_K to the launch, and only them. */
    for (size_t i = 0; i < s->nvariants; i++) {
      const at_variant *w = &s->variants[i];
      CHECK_EQ_INT(w->nlaunch, 2);
      for (size_t j = 0; j < w->nparams; j++)
        CHECK_EQ_INT(w->params[j].launch,
                     strcmp(w->params[j].name, "GROUP_M") == 0 || strcmp(w->params[j].name, "SPLIT_K") == 0);
    }
    check_shipped_params(v);
    check_shipped_constraints(v);
  }

  /* It enumerates for Hopper, and pruning leaves work to do. */
  at_limits lim;
  at_enum *e = NULL;
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  rc = at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e);
  CHECK_EQ_INT(rc, AT_OK);
  if (e) {
    CHECK_EQ_INT(e->total, 4 * 4 * 1 * 3 * 3 * 3 * 2 * 4 * 2 + 2 * 3 * 1 * 2 * 3 * 3 * 2 * 4 * 2 +
                               4 * 7 * 6 * 2 * 4 * 2 * 1 * 2 * 2 * 2 * 2 * 4 * 3 +
                               2 * 6 * 8 * 2 * 1 * 1 * 1 * 2 * 2 * 1 * 1 * 1 * 3 * 32 + /* SCALE_KB: 4..128 */
                               2 * 2 * 9 * 1 * 3 * 2 * 1 * 2 * 2 * 2 * 1 * 1 * 1 * 1);
    CHECK(e->n > 0 && (int64_t)e->n < e->total);
    CHECK_EQ_INT(e->nshapes, 40);
    CHECK_EQ_INT(at_enum_pruned_total(e) + (int64_t)e->n, e->total);
    /* Each candidate's launch parameters, alone, and a kernel name without them. */
    for (size_t i = 0; i < e->n; i++) {
      const at_cand *c = &e->c[i];
      const at_variant *w = &s->variants[c->variant];
      at_params p = {w->names, c->table, w->nparams};
      char *want = at_xasprintf("{\"GROUP_M\":%lld,\"SPLIT_K\":%lld}", (long long)at_params_get(&p, "GROUP_M", -1),
                                (long long)at_params_get(&p, "SPLIT_K", -1));
      CHECK(c->launch_json && strcmp(c->launch_json, want) == 0);
      /* sm90 kernels are compiled for one split when SPLIT_K is 1 (UNSPLIT), the others take it at run time */
      const int one = strcmp(w->family, "sm90") == 0 && at_params_get(&p, "SPLIT_K", -1) == 1;
      CHECK(strstr(c->name_expr, one ? ", 0, 1, " : ", 0, 0, ") != NULL);
      free(want);
    }
  }
  at_enum_free(e);
  at_space_free(s);
  free(path);
}

/* ---- (b) kernel name expressions -------------------------------------------------------------- */

static void test_name_expr(void) {
  char *path = at_xasprintf("%s/search_spaces/a8w8_blockscale.yaml", env("AT_TEST_SOURCE_ROOT"));
  at_space *s = NULL;
  if (at_space_load(path, &s) == AT_OK && s->nvariants >= 1 && s->variants[0].nparams == 9) {
    static const int64_t values[] = {16, 32, 128, 1, 2, 3, 8, 2, 1};
    char *name = at_variant_name_expr(&s->variants[0], values);
    CHECK(strcmp(name, "gemm_a8w8_blockscale_mma<16, 32, 128, 1, 2, 3, 0, 0, 1>") == 0); /* GROUP_M, SPLIT_K: at launch */
    free(name);
  } else {
    CHECK(!"the shipped space loads");
  }
  at_space_free(s);
  free(path);

  /* Whole identifiers only: AB and A_B are not A; a name may repeat; negatives are printed. */
  at_param_def params[] = {{.name = (char[]){"A"}}, {.name = (char[]){"AB"}}};
  at_variant v = {.entry = (char[]){"k<A, AB, A_B, 3, A, xA>"}, .params = params, .nparams = 2};
  static const int64_t values[] = {-5, 22};
  char *name = at_variant_name_expr(&v, values);
  CHECK(strcmp(name, "k<-5, 22, A_B, 3, -5, xA>") == 0);
  if (strcmp(name, "k<-5, 22, A_B, 3, -5, xA>") != 0) fprintf(stderr, "  got %s\n", name);
  free(name);
}

/* ---- (c) the corpus of malformed spaces ------------------------------------------------------- */

typedef struct expectation {
  int line, col;
  char msg[512];
} expectation;

/* Reads the first line of path: "# expect: LINE:COL: substring". */
static int read_expectation(const char *path, expectation *x) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char first[600] = "";
  int ok = fgets(first, sizeof first, f) != NULL;
  fclose(f);
  first[strcspn(first, "\n")] = 0;
  int used = 0;
  if (!ok || sscanf(first, "# expect: %d:%d: %n", &x->line, &x->col, &used) != 2 || !used || !first[used]) return 0;
  snprintf(x->msg, sizeof x->msg, "%s", first + used);
  return x->line >= 1 && x->col >= 1;
}

static int is_yaml(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return n > 5 && strcmp(d->d_name + n - 5, ".yaml") == 0;
}

static void test_bad_corpus(void) {
  char *dir = at_xasprintf("%s/bad", env("AT_TEST_DATA"));
  struct dirent **list = NULL;
  int n = scandir(dir, &list, is_yaml, alphasort);
  CHECK(n >= 40); /* the corpus is there, and not by accident empty */
  int nenum = 0;
  for (int i = 0; i < n; i++) {
    char *path = at_xasprintf("%s/%s", dir, list[i]->d_name);
    expectation x;
    int ok = read_expectation(path, &x);
    if (!ok) fprintf(stderr, "%s: the first line is not '# expect: LINE:COL: substring'\n", path);
    CHECK(ok);
    if (ok && strncmp(list[i]->d_name, "enum_", 5) == 0) {
      expect_enumerate_error(path, x.line, x.col, x.msg);
      nenum++;
    } else if (ok) {
      expect_load_error(path, x.line, x.col, x.msg);
    }
    free(path);
    free(list[i]);
  }
  free(list);
  CHECK(nenum >= 2);
  fprintf(stderr, "bad corpus: %d files, %d of them enumerated\n", n, nenum);
  free(dir);
}

/* ---- malformed files written at run time ------------------------------------------------------ */

/* A valid space whose variant reads the real template (by absolute path). */
static char *good_space(const char *params_extra) {
  return at_xasprintf("op: gemm_a8w8_blockscale\n"
                      "tag: SMALL\n"
                      "variants:\n"
                      "  - name: mma\n"
                      "    template: %s/templates/gemm_a8w8_blockscale_mma.cuh\n"
                      "    entry: \"" ENTRY "\"\n"
                      "    params:\n"
                      "      BLOCK_M: 64\n"
                      "      BLOCK_N: [64, 128]\n"
                      "      BLOCK_K: 128\n"
                      "      WARPS_M: 2\n"
                      "      WARPS_N: 2\n"
                      "      STAGES: 3\n"
                      "      GROUP_M: 1\n"
                      "      SPLIT_K: 1\n"
                      "      B_HINT: 0\n"
                      "%s"
                      "shapes:\n"
                      "  - {N: 1024, K: 1024, M: 100}\n"
                      "  - N: 2048\n"
                      "    K: 512\n"
                      "    M: [1, 7]\n",
                      env("AT_TEST_SOURCE_ROOT"), params_extra);
}

/* AT_TEST_TMP/space/name: a folder of its own, as tests may run side by side. */
static char *tmp_path(const char *name) {
  char *dir = at_xasprintf("%s/space", env("AT_TEST_TMP"));
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  char *path = at_xasprintf("%s/%s", dir, name);
  free(dir);
  return path;
}

/* Writes bytes to AT_TEST_TMP/name and expects the load to fail at line:col. */
static void expect_bytes_error(const char *name, const char *data, size_t n, int line, int col, const char *msg) {
  char *path = tmp_path(name);
  write_text(path, data, n);
  expect_load_error(path, line, col, msg);
  free(path);
}

static void test_not_utf8(void) {
  /* Columns count characters, as libyaml's do: "tag: café_" is 10 characters. */
  static const char latin1[] = "op: gemm_a8w8_blockscale\ntag: caf\xc3\xa9_\xff\n";
  expect_bytes_error("latin1.yaml", latin1, sizeof latin1 - 1, 2, 11, "text is not valid UTF-8 (byte 0xff)");
  static const char overlong[] = "# x\n# \xc0\xaf\n";
  expect_bytes_error("overlong.yaml", overlong, sizeof overlong - 1, 2, 3, "text is not valid UTF-8 (byte 0xc0)");
  static const char surrogate[] = "tag: \xed\xa0\x80\n";
  expect_bytes_error("surrogate.yaml", surrogate, sizeof surrogate - 1, 1, 6, "text is not valid UTF-8 (byte 0xed)");
  static const char truncated[] = "tag: x\n\n  \xe2\x82";
  expect_bytes_error("truncated.yaml", truncated, sizeof truncated - 1, 3, 3, "text is not valid UTF-8 (byte 0xe2)");
  static const char stray[] = "tag: \x80x\n";
  expect_bytes_error("continuation.yaml", stray, sizeof stray - 1, 1, 6, "text is not valid UTF-8 (byte 0x80)");
}

static void test_nul_and_control_bytes(void) {
  static const char nul[] = "op: gemm_a8w8_blockscale\ntag: A\0B\n";
  expect_bytes_error("nul.yaml", nul, sizeof nul - 1, 2, 7, "text contains a NUL byte");
  /* Valid UTF-8 that YAML forbids: libyaml rejects it, and the position must still be right. */
  static const char ctrl[] = "op: gemm_a8w8_blockscale\ntag: A\x01\n";
  expect_bytes_error("control.yaml", ctrl, sizeof ctrl - 1, 2, 7, "control characters are not allowed");
  static const char del[] = "op: gemm_a8w8_blockscale\n\ntag: AB\x7f\n";
  expect_bytes_error("delete.yaml", del, sizeof del - 1, 3, 8, "control characters are not allowed");
}

/* text padded with a trailing comment to exactly size bytes. */
static char *padded(const char *text, size_t size) {
  size_t n = strlen(text);
  char *p = at_xmalloc(size + 1);
  memcpy(p, text, n);
  p[n] = '#';
  memset(p + n + 1, 'x', size - n - 2);
  p[size - 1] = '\n';
  p[size] = 0;
  return p;
}

static void test_size_limit(void) {
  char *text = good_space("");
  char *path = tmp_path("one_mib.yaml");
  char *big = padded(text, AT_YAML_MAX_BYTES);
  write_text(path, big, AT_YAML_MAX_BYTES);
  at_space *s = NULL;
  int rc = at_space_load(path, &s);
  CHECK_EQ_INT(rc, AT_OK); /* exactly 1 MiB is allowed */
  if (rc) fprintf(stderr, "  %s\n", at_errmsg());
  at_space_free(s);
  free(big);
  free(path);

  big = padded(text, AT_YAML_MAX_BYTES + 1);
  expect_bytes_error("over_one_mib.yaml", big, AT_YAML_MAX_BYTES + 1, 1, 1,
                     "file is 1048577 bytes, over the limit of 1048576 bytes");
  free(big);
  free(text);

  /* The in-memory reader applies the same limit. */
  at_ydoc *doc = NULL;
  static char huge[AT_YAML_MAX_BYTES + 1];
  memset(huge, '\n', sizeof huge);
  rc = at_yaml_parse("mem.yaml", huge, sizeof huge, &doc);
  CHECK_EQ_INT(rc, AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "mem.yaml:1:1: file is 1048577 bytes, over the limit");
  at_yaml_free(doc);
}

/* A FIFO as the space used to block in open() until something wrote to it, forever: now it is
 * refused at once, as is a directory. SIGALRM ends the test if the load blocks. */
static void test_not_a_regular_file(void) {
  char *fifo = tmp_path("fifo.yaml");
  unlink(fifo);
  CHECK_EQ_INT(mkfifo(fifo, 0644), 0);
  alarm(30);
  at_space *s = NULL;
  CHECK_EQ_INT(at_space_load(fifo, &s), AT_ERR_INPUT);
  CHECK(s == NULL);
  CHECK_CONTAINS(at_errmsg(), fifo);
  CHECK_CONTAINS(at_errmsg(), "a FIFO, not a regular file");
  char *dir = tmp_path("dir.yaml");
  at_mkdirs(dir);
  CHECK_EQ_INT(at_space_load(dir, &s), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "a directory, not a regular file");
  alarm(0);
  unlink(fifo);
  free(fifo), free(dir);
}

/* ---- (d) a small valid space with the short forms --------------------------------------------- */

static void test_small_good_space(void) {
  char *text = good_space("");
  char *path = tmp_path("small.yaml");
  write_text(path, text, strlen(text));
  at_space *s = NULL;
  int rc = at_space_load(path, &s);
  CHECK_EQ_INT(rc, AT_OK);
  if (rc) {
    fprintf(stderr, "  %s\n", at_errmsg());
    free(path);
    free(text);
    return;
  }
  CHECK(strcmp(s->tag, "SMALL") == 0);
  CHECK(s->atol == 1e-2 && s->rtol == 1e-2); /* defaults */
  CHECK_EQ_INT(s->timing.samples, 10);
  CHECK_EQ_INT(s->nvariants, 1);
  const at_variant *v = &s->variants[0];
  CHECK(strcmp(v->family, "mma") == 0); /* the family defaults to the name */
  CHECK_EQ_INT(v->nconstraints, 0);
  CHECK_EQ_INT(v->nparams, 9);
  CHECK(strcmp(v->params[0].name, "BLOCK_M") == 0 && v->params[0].n == 1 && v->params[0].values[0] == 64);
  CHECK(v->params[1].n == 2 && v->params[1].values[1] == 128);
  CHECK_EQ_INT(s->nshapes, 3);
  if (s->nshapes == 3) {
    CHECK(s->shapes[0].m == 100 && s->shapes[0].n == 1024 && s->shapes[0].k == 1024);
    CHECK(s->shapes[1].m == 1 && s->shapes[1].n == 2048 && s->shapes[1].k == 512);
    CHECK(s->shapes[2].m == 7 && s->shapes[2].n == 2048 && s->shapes[2].k == 512);
  }

  at_limits lim;
  at_enum *e = NULL;
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  CHECK_EQ_INT(at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e), AT_OK);
  if (e) {
    CHECK_EQ_INT(e->total, 2);
    CHECK_EQ_INT(e->n, 2);
    for (size_t i = 0; i < e->n * e->nshapes; i++) CHECK_EQ_INT(e->shape_ok[i], 1);
    if (e->n == 2) {
      CHECK(strcmp(e->c[0].name_expr, "gemm_a8w8_blockscale_mma<64, 64, 128, 2, 2, 3, 1, 1, 0>") == 0);
      CHECK(strcmp(e->c[1].params_json, "{\"BLOCK_K\":128,\"BLOCK_M\":64,\"BLOCK_N\":128,\"B_HINT\":0,\"GROUP_M\":1,"
                                        "\"SPLIT_K\":1,\"STAGES\":3,\"WARPS_M\":2,\"WARPS_N\":2}") == 0);
    }
  }
  at_enum_free(e);
  at_space_free(s);
  free(path);
  free(text);
}

int main(void) {
  test_shipped_space();
  test_name_expr();
  test_bad_corpus();
  test_not_utf8();
  test_nul_and_control_bytes();
  test_size_limit();
  test_not_a_regular_file();
  test_small_good_space();
  return check_summary();
}

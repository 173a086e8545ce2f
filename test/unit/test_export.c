/* test_export.c: export, query and the runtime's lookups, on a DB built here with known times
 * (argv[1] is the autotune binary):
 *  - a bucket with one tuned M takes that M's re-timed winner, even over a faster first timing;
 *  - a bucket with several takes the lowest summed relative time, which may win at no single M;
 *  - an empty bucket takes the config of the nearest tuned M; `any` the winner at the largest M;
 *  - the default file takes the config of least regret across (N, K) (here also the one chosen
 *    most often), and a re-timed winner over a candidate that only timed faster first;
 *  - every tuned M gets an M_LEQ_<m> entry (its winner; in the default file the least-regret
 *    config), written in "per_M" beside buckets that a reader of the seed's format still reads;
 *    query and the runtime answer M from the smallest tuned M at or above it, `any` beyond the
 *    largest, and the seed's buckets from a file without per-M entries; malformed M_LEQ keys are
 *    refused with a warning naming the file;
 *  - results of an older version of a template are not exported;
 *  - `autotune query` answers the right bucket for every M of the issue, from the DB, the (N, K)
 *    file, the default file or the built-in default, and survives a corrupt DB with a warning;
 *  - the committed configs/ answer the same questions;
 *  - the seed's shape: every entry also a top-level member, flat (json.load(f)["small"]), in
 *    exported and committed files, written back byte for byte; a copy that disagrees is refused;
 *  - the runtime library finds the same answers from several threads at once, and notices a DB
 *    rewritten under it;
 *  - hostile input: a DB whose schema was edited to hold NULLs (export fails cleanly, query and the
 *    runtime fall back with a warning, nothing crashes), a tag with "/.." that would have put files
 *    outside --out, a FIFO among the configs files (skipped at once, never waited on), shapes the
 *    op cannot run and a --device no source knows. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../engine/runtime/autotune.h"
#include "core/config.h"
#include "core/json.h"
#include "core/lookup.h"
#include "core/store.h"
#include "core/timemodel.h"
#include "core/util.h"
#include "check.h"
#include "ops/gemm_a8w8_blockscale_tail.h"
#include "proc.h"
#include "tail_shapes.h"

static const char *EXE;
static char *TMP;
static const char *ENTRY =
    "gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>";

/* Candidate i: BLOCK_M = 16 << (i % 4), STAGES = 2 + i / 4 (distinct, recognisable). */
static int64_t add_cand(at_store *s, int64_t variant, int i) {
  char key[32], params[256];
  snprintf(key, sizeof key, "key-%d-%lld", i, (long long)variant);
  snprintf(params, sizeof params,
           "{\"BLOCK_K\":128,\"BLOCK_M\":%d,\"BLOCK_N\":64,\"B_HINT\":0,\"GROUP_M\":1,\"SPLIT_K\":1,\"STAGES\":%d,"
           "\"WARPS_M\":1,\"WARPS_N\":2}",
           16 << (i % 4), 2 + i / 4);
  at_cand_row c = {.compile_key = key, .variant_id = variant, .params = params, .name_expr = "x", .arch = "sm_90a", .ok = 1};
  int64_t id = -1;
  CHECK_EQ_INT(at_store_put_candidate(s, &c, &id), AT_OK);
  return id;
}

static void result(at_store *s, int64_t cand, int64_t problem, int64_t dev, double us) {
  at_result_row r = {.candidate_id = cand, .problem_id = problem, .device_id = dev, .status = "ok", .time_us = us,
                     .samples = 10, .max_abs_err = 0.001};
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
}

/* times[c][mi]: 0 = no result. */
static void nk(at_store *s, int64_t dev, int64_t n, int64_t k, const int64_t *ms, int nm, const int64_t *cand, int nc,
               const double *times, const int *winner) {
  for (int mi = 0; mi < nm; mi++) {
    int64_t p;
    CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "SYN", ms[mi], n, k, &p), AT_OK);
    for (int c = 0; c < nc; c++)
      if (times[c * nm + mi] > 0) result(s, cand[c], p, dev, times[c * nm + mi]);
    CHECK_EQ_INT(at_store_put_winner(s, p, dev, cand[winner[mi]], times[winner[mi] * nm + mi], 0), AT_OK);
  }
}

static int64_t g_cand[4];

static void build_db(const char *path, double scale) {
  at_store *s;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-x", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  int64_t dev, old_variant, variant;
  CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);
  /* An older version of the template: its stunning result must not be exported. */
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", "/x/gemm_a8w8_blockscale_mma.cuh", ENTRY, "old",
                                0, &old_variant), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", "/x/gemm_a8w8_blockscale_mma.cuh", ENTRY, "new",
                                0, &variant), AT_OK);
  int64_t stale = add_cand(s, old_variant, 7);
  for (int i = 0; i < 4; i++) g_cand[i] = add_cand(s, variant, i);
  /* (1024, 1024): M 16 | 48 64 | 256 | 512 4096. */
  const int64_t ms[6] = {16, 48, 64, 256, 512, 4096};
  const double t[4 * 6] = {
      /* c0 */ 5, 10, 30, 9, 50, 900,
      /* c1 */ 6, 11, 12, 9, 40, 800,
      /* c2 */ 7, 20, 10, 8, 45, 700,
      /* c3 */ 8, 30, 40, 9.5, 60, 600,
  };
  double ts[4 * 6];
  for (int i = 0; i < 24; i++) ts[i] = t[i] * scale;
  const int win[6] = {0, 0, 2, 3, 1, 3}; /* M=256: c3 wins the re-timing though c2 timed faster first */
  nk(s, dev, 1024, 1024, ms, 6, g_cand, 4, ts, win);
  int64_t p;
  CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "SYN", 16, 1024, 1024, &p), AT_OK);
  result(s, stale, p, dev, 0.001);
  /* (4096, 1024) and (2048, 1024): c1 wins small both times; so c1 is the default's small. */
  const int64_t ms2[1] = {16};
  const double t2[4] = {9, 5, 9, 9};
  const int win2[1] = {1};
  nk(s, dev, 4096, 1024, ms2, 1, g_cand, 4, t2, win2);
  nk(s, dev, 2048, 1024, ms2, 1, g_cand, 4, t2, win2);
  at_store_close(s);
}

static int block_m_of(const at_config *c) {
  for (int i = 0; i < c->nparams; i++)
    if (!strcmp(c->names[i], "BLOCK_M")) return (int)c->values[i];
  return -1;
}

static at_config_set load_set(const char *path) {
  at_config_set cs;
  memset(&cs, 0, sizeof cs);
  at_json *j = NULL;
  CHECK_EQ_INT(at_json_load(path, &j), AT_OK);
  CHECK_EQ_INT(at_config_set_from_json(path, j, &cs), AT_OK);
  at_json_free(j);
  return cs;
}

static int run_cli(const char *out, ...) {
  va_list ap;
  va_start(ap, out);
  int rc = proc_run_va(EXE, out, 120, ap);
  va_end(ap);
  return rc;
}

/* What a reader of the seed's format sees: "buckets" with the seed's seven keys and nothing else
 * (it refuses an unknown bucket), the per-M entries in "per_M" beside it. */
static void seed_keys_only(const char *path) {
  at_json *j = NULL;
  CHECK_EQ_INT(at_json_load(path, &j), AT_OK);
  const at_json *b = at_json_get(j, "buckets"), *per_m = at_json_get(j, "per_M");
  CHECK(b && b->n == AT_NBUCKETS);
  for (size_t i = 0; b && i < b->n; i++) {
    int known = 0;
    for (int k = 0; k < AT_NBUCKETS; k++) known |= strcmp(b->keys[i], AT_BUCKET_NAMES[k]) == 0;
    CHECK(known);
  }
  CHECK(per_m && per_m->kind == AT_J_OBJECT && per_m->n > 0);
  for (size_t i = 0; per_m && i < per_m->n; i++) CHECK(strncmp(per_m->keys[i], "M_LEQ_", 6) == 0);
  at_json_free(j);
}

static void export_rules(const char *db, const char *dir) {
  char *out = at_path_join(TMP, "export.txt");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", dir, (const char *)NULL), 0);
  char *p = at_path_join(dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_config_set cs = load_set(p);
  /* BLOCK_M of candidate i is 16 << i. */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_SMALL]), 16);     /* c0: winner at 16, not the stale one */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_M64]), 32);       /* c1: best summed relative time over 48, 64 */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_LARGE]), 128);    /* c3: the re-timed winner at 256 */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_XLARGE]), 64);    /* c2: 45/40 + 700/600 is the lowest sum */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_ANY]), 128);      /* c3: winner at 4096 */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_M32]), 32);       /* empty: from 48, the nearest tuned M */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_M128]), 32);      /* empty: 64 and 256 tie; the smaller wins */
  CHECK_EQ_INT(cs.ntuned[AT_BUCKET_M64], 2);
  CHECK_EQ_INT(cs.tuned_m[AT_BUCKET_M64][1], 64);
  CHECK_EQ_INT(cs.ntuned[AT_BUCKET_M32], 0);
  CHECK(strcmp(cs.device, "sm90") == 0 && cs.n == 1024 && cs.k == 1024);
  /* One entry per tuned M: that M's winner (the re-timed one at 256), with its first-pass time. */
  static const int64_t TUNED[6] = {16, 48, 64, 256, 512, 4096};
  static const int WIN_BLOCK_M[6] = {16, 16, 64, 128, 32, 128};
  CHECK_EQ_INT(cs.nmleq, 6);
  for (int i = 0; i < 6 && i < cs.nmleq; i++) {
    CHECK_EQ_INT(cs.mleq_m[i], TUNED[i]);
    CHECK_EQ_INT(block_m_of(&cs.mleq[i]), WIN_BLOCK_M[i]);
  }
  CHECK(cs.nmleq == 6 && cs.mleq_time_us[3] == 9.5);
  seed_keys_only(p);
  free(p);
  p = at_path_join(dir, "sm90-GEMM-SYN.json");
  cs = load_set(p);
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_SMALL]), 32); /* c1: chosen twice of three */
  CHECK_EQ_INT(cs.from_sets, 3);
  /* Per M, the least regret: c1 at 16 (1.2x in one (N, K), the winner in two), elsewhere the winner
   * of the one (N, K) that tuned M (at 256 the re-timed c3, though c2 timed faster first). */
  CHECK_EQ_INT(cs.nmleq, 6);
  for (int i = 0; i < 6 && i < cs.nmleq; i++) {
    CHECK_EQ_INT(cs.mleq_m[i], TUNED[i]);
    CHECK_EQ_INT(block_m_of(&cs.mleq[i]), i == 0 ? 32 : WIN_BLOCK_M[i]);
    CHECK(cs.mleq_time_us[i] == 0); /* no time of its own */
  }
  seed_keys_only(p);
  free(p);
  /* Product names on request. */
  char *dir2 = at_path_join(TMP, "configs-product");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", dir2, "--device-name", "product", (const char *)NULL), 0);
  p = at_path_join(dir2, "NVIDIA_H100_80GB_HBM3-GEMM-SYN-N=1024-K=1024.json");
  CHECK(at_file_exists(p));
  free(p);
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--device-name", "chip", (const char *)NULL), 2);
  char *missing = at_path_join(TMP, "missing.db");
  CHECK_EQ_INT(run_cli(out, "export", "--db", missing, "--out", dir2, (const char *)NULL), 2);
  free(missing), free(dir2), free(out);
}

/* A template edited and then reverted: the latest run's version is current again. A quarantined
 * candidate is never exported, even where it passed. */
static void current_versions(void) {
  char *db = at_path_join(TMP, "versions.db"), *dir = at_path_join(TMP, "configs-versions");
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-x", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  int64_t dev, va, vb, va2, runs[3], p;
  at_run_info ri = {"s.yaml", "h", "gemm_a8w8_blockscale", "SYN", "sm_90a", "13.0", "test"};
  for (int i = 0; i < 3; i++) CHECK_EQ_INT(at_store_begin_run(s, &ri, &runs[i]), AT_OK);
  CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);
  const char *tpl = "/x/gemm_a8w8_blockscale_mma.cuh";
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", tpl, ENTRY, "A", runs[0], &va), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", tpl, ENTRY, "B", runs[1], &vb), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", tpl, ENTRY, "A", runs[2], &va2), AT_OK);
  CHECK_EQ_INT(va2, va);
  int64_t ca = add_cand(s, va, 0), cb = add_cand(s, vb, 1), cq = add_cand(s, va, 2);
  CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "SYN", 64, 1024, 1024, &p), AT_OK);
  result(s, ca, p, dev, 10);
  result(s, cb, p, dev, 5);  /* faster, but of the version the latest run did not use */
  result(s, cq, p, dev, 2);  /* fastest, but quarantined */
  CHECK_EQ_INT(at_store_quarantine(s, cq), AT_OK);
  CHECK_EQ_INT(at_store_put_winner(s, p, dev, ca, 10, runs[2]), AT_OK);
  at_store_close(s);
  char *out = at_path_join(TMP, "versions.txt");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", dir, (const char *)NULL), 0);
  char *f = at_path_join(dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_config_set cs = load_set(f);
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_M64]), 16); /* candidate 0 of version A */
  free(f), free(out), free(db), free(dir);
}

static const char *query_device = "sm90"; /* query's --device: the arch but in query_tail's product row */

/* Runs query; returns its exit status, the answer in *json (malloc'd) and stderr merged in. */
static int query(char **text, const char *m, const char *n, const char *k, const char *a1, const char *a2, const char *a3,
                 const char *a4) {
  char *out = at_path_join(TMP, "query.txt");
  int rc = run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", m, "-N", n, "-K", k, "--device", query_device, a1,
                   a2, a3, a4, (const char *)NULL);
  *text = slurp(out);
  free(out);
  return rc;
}

/* The file path (in the configs directory dir) rewritten as text with its first `from` replaced by
 * `to` (of the same length), then queried for M=3, N=K=1024: the query's output, malloc'd. */
static char *query_patched(char *text, const char *from, const char *to, const char *path, const char *dir) {
  char *at = strstr(text, from);
  CHECK(at != NULL && strlen(from) == strlen(to));
  if (at) memcpy(at, to, strlen(to));
  at_write_file_atomic(path, text, strlen(text));
  char *t;
  CHECK_EQ_INT(query(&t, "3", "1024", "1024", "--configs", dir, NULL, NULL), 0);
  return t;
}

static void expect_bucket(const char *m, const char *n, const char *k, const char *configs, const char *db, const char *bucket,
                          const char *source) {
  char *t;
  int rc = db ? query(&t, m, n, k, "--configs", configs, "--db", db) : query(&t, m, n, k, "--configs", configs, NULL, NULL);
  CHECK_EQ_INT(rc, 0);
  char want[128];
  snprintf(want, sizeof want, "\"bucket\": \"%s\"", bucket);
  CHECK_CONTAINS(t, want);
  snprintf(want, sizeof want, "\"source\": \"%s\"", source);
  CHECK_CONTAINS(t, want);
  if (!strstr(t, want) || !strstr(t, bucket)) fprintf(stderr, "  (M=%s N=%s K=%s)\n", m, n, k);
  free(t);
}

static const char *const MS[] = {"1", "16", "31", "32", "33", "64", "100", "128", "129", "256", "257", "4096", "100000"};
static const char *const BUCKETS[] = {"small",       "small", "small", "medium_M32", "medium_M64", "medium_M64", "medium_M128",
                                      "medium_M128", "large", "large", "xlarge",     "xlarge",     "xlarge"};
/* The same M against the synthetic DB's tuned M (16, 48, 64, 256, 512, 4096): the smallest at or
 * above, `any` beyond 4096. */
static const char *const MLEQ[] = {"M_LEQ_16",  "M_LEQ_16",  "M_LEQ_48",  "M_LEQ_48",  "M_LEQ_48",
                                   "M_LEQ_64",  "M_LEQ_256", "M_LEQ_256", "M_LEQ_256", "M_LEQ_256",
                                   "M_LEQ_512", "M_LEQ_4096", "any"};

static void query_sources(const char *db, const char *dir) {
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) {
    expect_bucket(MS[i], "1024", "1024", dir, NULL, MLEQ[i], "nk_file");
    expect_bucket(MS[i], "1024", "1024", dir, db, MLEQ[i], "db");
    expect_bucket(MS[i], "7168", "2048", dir, NULL, MLEQ[i], "default_file");
  }
  /* Nothing at all: the built-in default. */
  char *empty = at_path_join(TMP, "empty");
  at_mkdirs(empty);
  expect_bucket("64", "1024", "1024", empty, NULL, "medium_M64", "builtin");
  /* A corrupt DB in place of a good one: one warning, and the next source answers. */
  char *corrupt = at_path_join(TMP, "corrupt.db");
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 7 + 3);
  at_write_file_atomic(corrupt, junk, sizeof junk);
  char *t;
  CHECK_EQ_INT(query(&t, "64", "1024", "1024", "--configs", dir, "--db", corrupt), 0);
  CHECK_CONTAINS(t, "warning");
  CHECK_CONTAINS(t, "\"source\": \"nk_file\"");
  free(t);
  /* A corrupt config file is skipped with a warning too. */
  char *bad_dir = at_path_join(TMP, "bad-configs");
  at_mkdirs(bad_dir);
  char *bad = at_path_join(bad_dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_write_file_atomic(bad, "{\"format\": \"autotune-configs/1\", \"op\": ", 38);
  CHECK_EQ_INT(query(&t, "64", "1024", "1024", "--configs", bad_dir, NULL, NULL), 0);
  CHECK_CONTAINS(t, "warning");
  CHECK_CONTAINS(t, "\"source\": \"builtin\"");
  free(t);
  /* A bucket given twice is refused (never written past its arrays); a file with buckets missing,
   * or with one that is not launchable, still answers every M: from `any`, else the built-in. */
  char *odd_dir = at_path_join(TMP, "odd-configs");
  at_mkdirs(odd_dir);
  char *odd = at_path_join(odd_dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_buf j = {0};
  at_buf_puts(&j, "{\"format\": \"autotune-configs/1\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"SYN\", "
                  "\"device\": \"sm90\", \"N\": 1024, \"K\": 1024, \"buckets\": {");
  for (int dup = 0; dup < 2; dup++) {
    at_buf_printf(&j, "%s\"any\": {\"variant\": \"mma\", \"family\": \"mma\", \"template\": "
                      "\"gemm_a8w8_blockscale_mma.cuh\", \"entry\": \"%s\", \"params\": {\"BLOCK_K\":128,"
                      "\"BLOCK_M\":64,\"BLOCK_N\":128,\"B_HINT\":0,\"GROUP_M\":1,\"SPLIT_K\":1,\"STAGES\":3,"
                      "\"WARPS_M\":2,\"WARPS_N\":2}, \"tuned_M\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18]}",
                  dup ? ", " : "", ENTRY);
  }
  at_buf_puts(&j, "}}");
  at_write_file_atomic(odd, j.data, j.len);
  CHECK_EQ_INT(query(&t, "64", "1024", "1024", "--configs", odd_dir, NULL, NULL), 0);
  CHECK_CONTAINS(t, "appears twice");
  CHECK_CONTAINS(t, "\"source\": \"builtin\"");
  free(t);
  /* The same with one `any` only: every bucket answers with it. */
  char *once = strstr(j.data, ", \"any\"");
  if (once) strcpy(once, "}}");
  at_write_file_atomic(odd, j.data, strlen(j.data));
  CHECK_EQ_INT(query(&t, "3", "1024", "1024", "--configs", odd_dir, NULL, NULL), 0);
  CHECK_CONTAINS(t, "\"source\": \"nk_file\"");
  CHECK_CONTAINS(t, "\"bucket\": \"small\"");
  CHECK_CONTAINS(t, "\"BLOCK_M\":64");
  free(t);
  /* An entry that leaves out the op's launch parameters (GROUP_M, SPLIT_K as 0) is launchable: the
   * kernel gets them at launch, from the config's own values. */
  t = query_patched(j.data, "STAGES, GROUP_M, SPLIT_K", "STAGES, 0      , 0      ", odd, odd_dir);
  CHECK(strstr(t, "not a launchable config") == NULL);
  CHECK_CONTAINS(t, "\"source\": \"nk_file\"");
  CHECK_CONTAINS(t, "\"GROUP_M\":1");
  free(t);
  /* A config whose entry misses another parameter is not launched: a warning, and the built-in. */
  t = query_patched(j.data, "B_HINT>", "1     >", odd, odd_dir);
  CHECK_CONTAINS(t, "not a launchable config (parameter B_HINT does not appear in its entry");
  CHECK_CONTAINS(t, "\"GROUP_M\":8"); /* the built-in's */
  free(t);
  at_buf_free(&j);
  free(odd), free(odd_dir);

  /* Usage errors. */
  CHECK_EQ_INT(query(&t, "0", "1024", "1024", NULL, NULL, NULL, NULL), 2);
  free(t);
  char *out = at_path_join(TMP, "q.txt");
  CHECK_EQ_INT(run_cli(out, "query", "--op", "nope", "-M", "1", "-N", "8", "-K", "128", "--device", "sm90", (const char *)NULL), 2);
  free(out), free(bad), free(bad_dir), free(corrupt), free(empty);
}

/* The committed configs directory (*dir, malloc'd) and its file `name` in it; NULL (nothing to free)
 * when the checkout has no such file: the caller skips that part, saying so. */
static char *committed_file(const char *name, char **dir) {
  *dir = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "configs");
  char *f = at_path_join(*dir, name);
  if (at_file_exists(f)) return f;
  fprintf(stderr, "no committed %s: skipping that part\n", name);
  free(f), free(*dir);
  return NULL;
}

/* A product's files beside its arch's (the committed NVIDIA_H200 files, tuned on the H200, beside
 * sm90's): a GPU of that product reads its own file for an (N, K) first and its arch's for the rest.
 * A caller naming the product (no GPU) gets the same answers: the lookup takes the arch from the
 * product's files; the product's own time model before the arch's. Without --device and without a
 * GPU, query answers for the one arch name among the configs' devices and says so; with several and
 * no arch name it needs --device. */
static void product_files(void) {
  char *committed, *h200 = committed_file("NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json", &committed);
  if (!h200) return;
  /* Since session 41 every committed (N, K) has an H200 file: the cases run on a copy of four of the
   * committed files, so that one (N, K), (8192, 1024), has only the arch's. */
  char *dir = at_path_join(TMP, "product-configs");
  CHECK_EQ_INT(at_mkdirs(dir), 0);
  static const char *const COPIES[] = {"NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json",
                                       "sm90-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json",
                                       "sm90-GEMM-A8W8_BLOCKSCALE-N=8192-K=1024.json", "sm90-GEMM-A8W8_BLOCKSCALE-model.json"};
  for (size_t i = 0; i < AT_ARRAY_LEN(COPIES); i++) {
    char *from = at_path_join(committed, COPIES[i]), *to = at_path_join(dir, COPIES[i]), *body = slurp(from);
    CHECK(body != NULL);
    if (body) CHECK_EQ_INT(at_write_file_atomic(to, body, strlen(body)), 0);
    free(body), free(from), free(to);
  }
  char *out = at_path_join(TMP, "product.txt"), *t;
#define SM90_TEMPLATE "\"template\": \"gemm_a8w8_blockscale_sm90.cuh\""
  struct {
    const char *n, *k, *device, *source, *file, *config; /* config: a part of the answer's config */
  } cases[] = {
      /* its own file: the H200's entry at M = 16 takes its scales from shared memory, sm90's not */
      {"4096", "4096", "NVIDIA_H200", "nk_file", "/NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json", "\"variant\": \"sm90_scales\""},
      {"4096", "4096", "sm90", "nk_file", "/sm90-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json", "\"variant\": \"sm90\""},
      /* no H200 file for (8192, 1024) in the copy: the arch's (the built-in config before the arch was known) */
      {"8192", "1024", "NVIDIA_H200", "nk_file", "/sm90-GEMM-A8W8_BLOCKSCALE-N=8192-K=1024.json", SM90_TEMPLATE},
      /* nobody tuned (5120, 1024): the arch's time model */
      {"5120", "1024", "NVIDIA_H200", "model_file", "/sm90-GEMM-A8W8_BLOCKSCALE-model.json", SM90_TEMPLATE},
  };
  for (size_t i = 0; i < AT_ARRAY_LEN(cases); i++) {
    CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "16", "-N", cases[i].n, "-K", cases[i].k,
                         "--device", cases[i].device, "--configs", dir, (const char *)NULL),
                 0);
    t = slurp(out);
    char want[128];
    snprintf(want, sizeof want, "\"source\": \"%s\"", cases[i].source);
    CHECK_CONTAINS(t, want);
    CHECK_CONTAINS(t, cases[i].file);
    CHECK_CONTAINS(t, cases[i].config);
    CHECK(strstr(t, "warning") == NULL);
    free(t);
  }
  /* The runtime library asked the same with the product named: the same files. */
  at_runtime_options o = {.configs_dir = dir};
  at_runtime *rt;
  CHECK_EQ_INT(at_runtime_open(&o, &rt), AT_STATUS_OK);
  at_selection sel;
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 16, 4096, 4096, "NVIDIA_H200", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "nk_file") == 0 && strcmp(sel.variant, "sm90_scales") == 0);
  CHECK_CONTAINS(sel.path, "/NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json");
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 16, 8192, 1024, "NVIDIA_H200", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "nk_file") == 0);
  CHECK_CONTAINS(sel.path, "/sm90-GEMM-A8W8_BLOCKSCALE-N=8192-K=1024.json");
  at_runtime_close(rt);
  /* With the H200's own time model beside the arch's (session 42): for an (N, K) nobody tuned the
   * H200 reads its own, sm90 the arch's, through query and through the library. */
  static const char *const MODEL = "NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-model.json";
  char *from = at_path_join(committed, MODEL), *to = at_path_join(dir, MODEL), *body = slurp(from);
  CHECK(body != NULL);
  if (body && at_write_file_atomic(to, body, strlen(body)) == 0) {
    static const char *const DEVICES[] = {"NVIDIA_H200", "sm90"};
    CHECK_EQ_INT(at_runtime_open(&o, &rt), AT_STATUS_OK);
    for (size_t i = 0; i < AT_ARRAY_LEN(DEVICES); i++) {
      char want[160];
      snprintf(want, sizeof want, "/%s-GEMM-A8W8_BLOCKSCALE-model.json", DEVICES[i]);
      CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "16", "-N", "5120", "-K", "1024",
                           "--device", DEVICES[i], "--configs", dir, (const char *)NULL),
                   0);
      t = slurp(out);
      CHECK_CONTAINS(t, "\"source\": \"model_file\"");
      CHECK_CONTAINS(t, want);
      free(t);
      CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 16, 5120, 1024, DEVICES[i], &sel), AT_STATUS_OK);
      CHECK(strcmp(sel.source, "model_file") == 0);
      CHECK_CONTAINS(sel.path, want);
    }
    at_runtime_close(rt);
    unlink(to);
  }
  free(body), free(from), free(to);
  /* No --device: on a machine without a GPU, sm90 (and the note); on one with a GPU, the GPU's. */
  CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "16", "-N", "4096", "-K", "4096", "--configs",
                       dir, (const char *)NULL),
               0);
  t = slurp(out);
  if (strstr(t, "no GPU here")) {
    CHECK_CONTAINS(t, "the configs have files for NVIDIA_H200, sm90: answering for sm90");
    CHECK_CONTAINS(t, "\"device\": \"sm90\"");
  } else {
    CHECK_CONTAINS(t, "\"sm_count\"");
  }
  free(t);
  /* Two products and no arch name: --device is needed, and the error names them. */
  char *two = at_path_join(TMP, "two-products");
  CHECK_EQ_INT(at_mkdirs(two), 0);
  static const char *const NAMES[] = {"NVIDIA_H200", "NVIDIA_H100_80GB_HBM3"};
  char *text = slurp(h200);
  for (size_t i = 0; i < AT_ARRAY_LEN(NAMES); i++) {
    char name[160];
    snprintf(name, sizeof name, "%s-GEMM-A8W8_BLOCKSCALE-N=4096-K=4096.json", NAMES[i]);
    char *f = at_path_join(two, name);
    at_write_file_atomic(f, text, strlen(text));
    free(f);
  }
  int rc = run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "16", "-N", "4096", "-K", "4096", "--configs", two,
                   (const char *)NULL);
  t = slurp(out);
  if (strstr(t, "--device is needed")) {
    CHECK_EQ_INT(rc, 2);
    CHECK_CONTAINS(t, "the configs have several devices: ");
    CHECK_CONTAINS(t, "NVIDIA_H100_80GB_HBM3");
  } else {
    CHECK_CONTAINS(t, "\"sm_count\"");
  }
  free(t), free(text), free(two), free(out), free(h200), free(dir), free(committed);
#undef SM90_TEMPLATE
}

static void committed_configs(void) {
  char *dir, *file = committed_file("sm90-GEMM-A8W8_BLOCKSCALE.json", &dir);
  if (!file) return;
  /* The committed files have an entry per tuned M (16, 32, 64, 128, 256, 512, 2048, 4096 for the
   * shipped (N, K), and since session 34 some between them: (1024, 1024) has 192, 1024, 1536, 2560
   * and 3072 too, (6144, 1024) 2560; the default file's are the shipped M, over every (N, K) of the
   * tag), and between them from 257 to 2048 the time model's at every 64 rows (257: its 320). */
  static const char *const COMMITTED[] = {"M_LEQ_16",  "M_LEQ_16",  "M_LEQ_32",  "M_LEQ_32",   "M_LEQ_64",
                                          "M_LEQ_64",  "M_LEQ_128", "M_LEQ_128", "M_LEQ_256",  "M_LEQ_256",
                                          "M_LEQ_320", "M_LEQ_4096", "any"};
  _Static_assert(AT_ARRAY_LEN(COMMITTED) == AT_ARRAY_LEN(MS), "one answer per M");
  static const char *COMMITTED_1024[AT_ARRAY_LEN(MS)]; /* (1024, 1024): 129 takes its 192 */
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) COMMITTED_1024[i] = strcmp(MS[i], "129") ? COMMITTED[i] : "M_LEQ_192";
  /* An untuned (N, K) takes the time model's grid of M up to 2048, the default file's entries above. */
  static const char *const MODEL[] = {"M_LEQ_1",   "M_LEQ_16",  "M_LEQ_32",  "M_LEQ_32",   "M_LEQ_48",
                                      "M_LEQ_64",  "M_LEQ_128", "M_LEQ_128", "M_LEQ_192",  "M_LEQ_256",
                                      "M_LEQ_320", "M_LEQ_4096", "any"};
  _Static_assert(AT_ARRAY_LEN(MODEL) == AT_ARRAY_LEN(MS), "one answer per M");
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) {
    expect_bucket(MS[i], "1024", "1024", dir, NULL, COMMITTED_1024[i], "nk_file");
    expect_bucket(MS[i], "6144", "1024", dir, NULL, COMMITTED[i], "nk_file");
    expect_bucket(MS[i], "5120", "1024", dir, NULL, MODEL[i], "model_file");
  }
  /* Without the model file (a configs directory of before): up to M = 128 the entries of the nearest
   * tuned (N, K), here (6144, 1024) (|log2| distance 0.26; (4096, 1024) is at 0.32); above, the
   * default file's own. */
  char *nomodel = at_path_join(TMP, "committed-no-model");
  CHECK_EQ_INT(at_mkdirs(nomodel), 0);
  DIR *cd = opendir(dir);
  for (struct dirent *e; cd && (e = readdir(cd));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || strstr(e->d_name, "-model.json")) continue;
    char *src = at_path_join(dir, e->d_name), *dst = at_path_join(nomodel, e->d_name), *text = slurp(src);
    at_write_file_atomic(dst, text, strlen(text));
    free(src), free(dst), free(text);
  }
  if (cd) closedir(cd);
  /* (The default file's own entries: 257 takes its 512.) */
  static const char *const DEFAULT_ONLY[] = {"M_LEQ_16",  "M_LEQ_16",  "M_LEQ_32",  "M_LEQ_32",   "M_LEQ_64",
                                             "M_LEQ_64",  "M_LEQ_128", "M_LEQ_128", "M_LEQ_256",  "M_LEQ_256",
                                             "M_LEQ_512", "M_LEQ_4096", "any"};
  _Static_assert(AT_ARRAY_LEN(DEFAULT_ONLY) == AT_ARRAY_LEN(MS), "one answer per M");
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++)
    expect_bucket(MS[i], "5120", "1024", nomodel, NULL, DEFAULT_ONLY[i], "default_file");
  for (int i = 0; i < 2; i++) {
    const char *m = i == 0 ? "128" : "512"; /* where the two answers differ */
    char *untuned, *near, *deflt;
    CHECK_EQ_INT(query(&untuned, m, "5120", "1024", "--configs", nomodel, NULL, NULL), 0);
    CHECK_EQ_INT(query(&near, m, "6144", "1024", "--configs", nomodel, NULL, NULL), 0);
    char *nodir = at_path_join(TMP, "default-only");
    CHECK_EQ_INT(at_mkdirs(nodir), 0);
    char *src = at_path_join(dir, "sm90-GEMM-A8W8_BLOCKSCALE.json"), *dst = at_path_join(nodir, "sm90-GEMM-A8W8_BLOCKSCALE.json");
    char *text = slurp(src);
    at_write_file_atomic(dst, text, strlen(text));
    CHECK_EQ_INT(query(&deflt, m, "5120", "1024", "--configs", nodir, NULL, NULL), 0);
    const char *pu = strstr(untuned, "\"params\""), *pn = strstr(near, "\"params\""), *pd = strstr(deflt, "\"params\"");
    CHECK(pu && pn && pd);
    if (pu && pn && pd) {
      const char *want = i == 0 ? pn : pd;
      CHECK(strncmp(pu, want, strcspn(want, "}")) == 0);
    }
    if (i == 0) CHECK_CONTAINS(untuned, "(M <= 128: ");
    free(untuned), free(near), free(deflt), free(nodir), free(src), free(dst), free(text);
  }
  /* Session 18's measured answers (docs/perf.md): the model takes no 192-row tiles at M = 512 but
   * keeps them at 384. Between a file's entries 2048 and 4096 the model answers where it predicts
   * much faster: the q_kv_a file (2112 x 7168) takes 128 x 192 pairs at M = 3072 for the 4096
   * entry's 192 x 192 tiles, which its entry keeps. The kv_a file (576 x 7168) has its own entry at
   * 3072 since session 24 (tuned; the model's 128 x 128 pairs there ran 1.10x cuBLASLt's time). */
  static const struct { const char *m, *n, *k, *want, *path; } PICKS[] = {
      {"512", "27648", "5120", "\"BLOCK_M\":128", NULL},
      {"384", "12288", "4096", "\"BLOCK_M\":192", NULL},
      {"3072", "2112", "7168", "\"BLOCK_M\":128,\"BLOCK_N\":192", "above 2048 where predicted much faster"},
      {"4096", "2112", "7168", "\"BLOCK_M\":192,\"BLOCK_N\":192", NULL},
      {"3072", "576", "7168", "\"BLOCK_M\":128,\"BLOCK_N\":128,\"CLUSTER_K\":1,\"CLUSTER_M\":1", NULL},
      {"4096", "576", "7168", "\"BLOCK_M\":128,\"BLOCK_N\":192", NULL}};
  for (size_t i = 0; i < AT_ARRAY_LEN(PICKS); i++) {
    char *t = NULL;
    CHECK_EQ_INT(query(&t, PICKS[i].m, PICKS[i].n, PICKS[i].k, "--configs", dir, NULL, NULL), 0);
    if (!t) continue;
    CHECK_CONTAINS(t, PICKS[i].want);
    if (PICKS[i].path) CHECK_CONTAINS(t, PICKS[i].path);
    free(t);
  }
  free(file), free(dir), free(nomodel);
}

/* ---- the seed's shape ----------------------------------------------------------------------------- */

/* A file's text read and written back by the exporter's own code: the same bytes (the committed
 * configs were given their top-level copies by scripts/configs_seed_shape.py, which must write what
 * export writes). */
static void round_trip(const char *path) {
  char *text = slurp(path);
  at_json *j = NULL;
  at_config_set cs;
  CHECK(text != NULL);
  if (!text) return;
  CHECK_EQ_INT(at_json_parse(path, text, strlen(text), &j), AT_OK);
  CHECK_EQ_INT(at_config_set_from_json(path, j, &cs), AT_OK);
  char *again = at_config_set_to_json(&cs);
  if (strcmp(again, text) != 0) fprintf(stderr, "%s: written back differently:\n%s\n", path, again);
  CHECK(strcmp(again, text) == 0);
  free(again);
  at_json_free(j);
  free(text);
}

/* The text with its first occurrence of `from` replaced by `to`, parsed and read: the status, and
 * the message in *msg. */
static int read_edited(const char *text, const char *from, const char *to, char *msg, size_t n) {
  const char *at = strstr(text, from);
  CHECK(at != NULL);
  if (!at) return -1;
  at_buf b = {0};
  at_buf_append(&b, text, (size_t)(at - text));
  at_buf_puts(&b, to);
  at_buf_puts(&b, at + strlen(from));
  at_json *j = NULL;
  at_config_set cs;
  CHECK_EQ_INT(at_json_parse("edited.json", b.data, b.len, &j), AT_OK);
  int rc = at_config_set_from_json("edited.json", j, &cs);
  snprintf(msg, n, "%s", rc ? at_errmsg() : "");
  at_json_free(j);
  at_buf_free(&b);
  return rc;
}

/* json.load(f)["small"] works: every entry is also a top-level member, a flat object of its
 * parameters with the variant's name, in exported and committed files alike; a copy that
 * disagrees with its entry is refused naming it; a file without copies is read as before. */
static void seed_shape(const char *dir) {
  char *p = at_path_join(dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_config_set cs = load_set(p);
  at_json *j = NULL;
  CHECK_EQ_INT(at_json_load(p, &j), AT_OK);
  for (int b = 0; j && b < AT_NBUCKETS + cs.nmleq; b++) {
    const at_config *c = at_config_entry(&cs, b);
    char key[32];
    at_config_entry_name(&cs, b, key, sizeof key);
    const at_json *f = at_json_get(j, key);
    CHECK(f && f->kind == AT_J_OBJECT && c && f->n == (size_t)c->nparams + 1);
    if (!f || !c) continue;
    CHECK(at_json_str(f, "variant") && strcmp(at_json_str(f, "variant"), c->variant) == 0);
    for (int k = 0; k < c->nparams; k++) {
      int64_t v = -1;
      CHECK_EQ_INT(at_json_int(f, c->names[k], &v), 0);
      CHECK_EQ_INT(v, c->values[k]);
    }
  }
  at_json_free(j);
  round_trip(p);

  char *text = slurp(p), msg[1024];
  CHECK(text != NULL);
  if (text) {
    /* "small" as a copy: the last "small" of the file; a changed value in it is refused. */
    const char *copy = strstr(text, "\n  \"small\": {\"variant\"");
    CHECK(copy != NULL);
    if (copy) {
      const char *bm = strstr(copy, "\"BLOCK_M\": 16");
      CHECK(bm != NULL);
      if (bm) {
        at_buf b = {0}; /* the whole file with the copy's BLOCK_M edited */
        at_buf_append(&b, text, (size_t)(bm - text));
        at_buf_puts(&b, "\"BLOCK_M\": 32");
        at_buf_puts(&b, bm + strlen("\"BLOCK_M\": 16"));
        CHECK_EQ_INT(read_edited(b.data, "\"format\"", "\"format\"", msg, sizeof msg), AT_ERR_INPUT);
        CHECK_CONTAINS(msg, "edited.json: top-level \"small\" differs from its entry in \"buckets\"");
        at_buf_free(&b);
      }
    }
    /* A copy of an entry the file does not have. */
    CHECK_EQ_INT(read_edited(text, "\n  \"M_LEQ_16\": {\"variant\"", "\n  \"M_LEQ_17\": {\"variant\"", msg, sizeof msg),
                 AT_ERR_INPUT);
    CHECK_CONTAINS(msg, "top-level \"M_LEQ_17\" has no entry of that name in \"per_M\"");
    /* Without its copies (a file of before them), the same set. */
    const char *first = strstr(text, ",\n  \"small\": {\"variant\"");
    CHECK(first != NULL);
    if (first) {
      at_buf b = {0};
      at_buf_append(&b, text, (size_t)(first - text));
      at_buf_puts(&b, "\n}\n");
      at_json *old = NULL;
      at_config_set old_cs;
      CHECK_EQ_INT(at_json_parse("old.json", b.data, b.len, &old), AT_OK);
      CHECK_EQ_INT(at_config_set_from_json("old.json", old, &old_cs), AT_OK);
      CHECK(at_config_set_same(&old_cs, &cs));
      at_json_free(old);
      at_buf_free(&b);
    }
  }
  free(text), free(p);

  /* Every committed file: the copies present and agreeing, and exactly what export writes. */
  char *committed = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "configs");
  DIR *d = opendir(committed);
  int files = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char *f = at_path_join(committed, e->d_name);
    at_json *cj = NULL;
    CHECK_EQ_INT(at_json_load(f, &cj), AT_OK);
    if (at_tm_is_model_file(e->d_name)) { /* the time model: another format, read as the runtime reads it */
      at_time_model tm;
      CHECK_EQ_INT(at_tm_from_json(f, cj, &tm), AT_OK);
      CHECK(tm.nconfigs > 0 && tm.sm_count > 0);
      at_tm_free(&tm);
      at_json_free(cj);
      free(f);
      continue;
    }
    CHECK(cj && at_json_get(cj, "small") && at_json_get(cj, "any"));
    at_json_free(cj);
    round_trip(f);
    free(f);
    files++;
  }
  if (d) closedir(d);
  if (d) CHECK(files > 0);
  free(committed);
}

/* ---- per-M entries ------------------------------------------------------------------------------ */

static void write_set_file(const at_config_set *cs, const char *path) {
  char *json = at_config_set_to_json(cs);
  CHECK_EQ_INT(at_write_file_atomic(path, json, strlen(json)), AT_OK);
  free(json);
}

/* The exported (1024, 1024) file's text with every "M_LEQ_512" replaced: must be refused with a
 * message naming the file and saying why. */
static void refused_key(const char *text, const char *key, const char *why) {
  at_buf b = {0};
  for (const char *p = text, *q; *p; p = q + 9) {
    q = strstr(p, "M_LEQ_512");
    if (!q) {
      at_buf_puts(&b, p);
      break;
    }
    at_buf_append(&b, p, (size_t)(q - p));
    at_buf_puts(&b, key);
  }
  at_json *j = NULL;
  at_config_set cs;
  CHECK_EQ_INT(at_json_parse("bad.json", b.data, b.len, &j), AT_OK);
  int rc = at_config_set_from_json("bad.json", j, &cs);
  CHECK_EQ_INT(rc, AT_ERR_INPUT);
  if (rc) {
    CHECK_CONTAINS(at_errmsg(), "bad.json: per_M");
    CHECK_CONTAINS(at_errmsg(), why);
  }
  at_json_free(j);
  at_buf_free(&b);
}

static char *query_text(const char *m, const char *configs) {
  char *t;
  CHECK_EQ_INT(query(&t, m, "1024", "1024", "--configs", configs, NULL, NULL), 0);
  return t;
}

static int runtime_answer(const char *db, const char *dir, const char *want_source);

/* The gain the entries exist for, the seed's format still answered by the seed's buckets, keys
 * checked, an entry that cannot launch, and more tuned M than entries. */
static void per_m_rules(const char *dir) {
  /* M = 500: M_LEQ_512's winner (c1, BLOCK_M 32), where xlarge has the best sum over 512 and 4096 (c2). */
  char *t = query_text("500", dir);
  CHECK_CONTAINS(t, "\"bucket\": \"M_LEQ_512\"");
  CHECK_CONTAINS(t, "\"BLOCK_M\":32");
  free(t);

  /* Files of the seed's format (no "per_M"): the seed's buckets, as before. */
  char *seed = at_path_join(TMP, "configs-seed");
  CHECK_EQ_INT(at_mkdirs(seed), AT_OK);
  static const char *const FILES[2] = {"sm90-GEMM-SYN-N=1024-K=1024.json", "sm90-GEMM-SYN.json"};
  for (int f = 0; f < 2; f++) {
    char *src = at_path_join(dir, FILES[f]), *dst = at_path_join(seed, FILES[f]);
    at_config_set cs = load_set(src);
    cs.nmleq = 0;
    write_set_file(&cs, dst);
    char *written;
    size_t n;
    CHECK_EQ_INT(at_read_file(dst, 0, &written, &n), AT_OK);
    CHECK(strstr(written, "per_M") == NULL && strstr(written, "M_LEQ") == NULL);
    free(written), free(src), free(dst);
  }
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) {
    expect_bucket(MS[i], "1024", "1024", seed, NULL, BUCKETS[i], "nk_file");
    expect_bucket(MS[i], "7168", "2048", seed, NULL, BUCKETS[i], "default_file");
  }
  t = query_text("500", seed);
  CHECK_CONTAINS(t, "\"bucket\": \"xlarge\"");
  CHECK_CONTAINS(t, "\"BLOCK_M\":64");
  free(t);

  /* Keys: parsed strictly, and a bad one refuses the file as an unknown bucket does. */
  int64_t m = 0;
  CHECK(at_mleq_parse("M_LEQ_1", &m) == 0 && m == 1);
  CHECK(at_mleq_parse("M_LEQ_268435456", &m) == 0 && m == 268435456);
  char *nk = at_path_join(dir, FILES[0]), *text;
  size_t len;
  CHECK_EQ_INT(at_read_file(nk, 0, &text, &len), AT_OK);
  static const char *const BAD[] = {"M_LEQ_",   "M_LEQ_0512",      "M_LEQ_-512",  "M_LEQ_+512", "M_LEQ_512x",
                                    "M_LEQ_0", "M_LEQ_268435457", "M_LEQ_99999999999999999999", "m_leq_512", "xlarge"};
  for (size_t i = 0; i < AT_ARRAY_LEN(BAD); i++) refused_key(text, BAD[i], "malformed key");
  refused_key(text, "M_LEQ_256", "\"M_LEQ_256\" appears twice");
  /* In a configs directory: a warning naming the file, and the next source answers. */
  char *bad_dir = at_path_join(TMP, "configs-badkey");
  CHECK_EQ_INT(at_mkdirs(bad_dir), AT_OK);
  char *bad = at_path_join(bad_dir, FILES[0]);
  char *broken = at_xstrdup(text);
  char *k512 = strstr(broken, "\"M_LEQ_512\"");
  CHECK(k512 != NULL);
  if (k512) memcpy(k512, "\"M_LEQ_5I2\"", 11);
  CHECK_EQ_INT(at_write_file_atomic(bad, broken, strlen(broken)), AT_OK);
  char *src = at_path_join(dir, FILES[1]), *dst = at_path_join(bad_dir, FILES[1]);
  at_config_set def = load_set(src);
  write_set_file(&def, dst);
  t = query_text("500", bad_dir);
  CHECK_CONTAINS(t, "warning: skipping");
  CHECK_CONTAINS(t, bad);
  CHECK_CONTAINS(t, "per_M: malformed key \"M_LEQ_5I2\"");
  CHECK_CONTAINS(t, "\"source\": \"default_file\"");
  CHECK_CONTAINS(t, "\"bucket\": \"M_LEQ_512\"");
  free(t);
  CHECK_EQ_INT(runtime_answer(NULL, bad_dir, "default_file"), 0);

  /* An M_LEQ entry that is not launchable: a warning, and its M go to the seed's bucket. */
  at_config_set cs = load_set(nk);
  snprintf(cs.mleq[4].entry, sizeof cs.mleq[4].entry, "%s", "gemm_a8w8_blockscale_mma<BLOCK_M>");
  write_set_file(&cs, bad);
  t = query_text("500", bad_dir);
  CHECK_CONTAINS(t, "M_LEQ_512 is not a launchable config");
  CHECK_CONTAINS(t, "\"source\": \"nk_file\"");
  CHECK_CONTAINS(t, "\"bucket\": \"xlarge\"");
  free(t);
  t = query_text("200", bad_dir); /* the others stand */
  CHECK_CONTAINS(t, "\"bucket\": \"M_LEQ_256\"");
  free(t);
  t = query_text("4000", bad_dir);
  CHECK_CONTAINS(t, "\"bucket\": \"M_LEQ_4096\"");
  free(t);

  free(broken), free(text), free(nk), free(src), free(dst), free(bad), free(bad_dir), free(seed);
}

/* More tuned M than entries: evenly spaced ones, the smallest and the largest kept. */
static void many_m(void) {
  char *db = at_path_join(TMP, "many.db"), *dir = at_path_join(TMP, "configs-many");
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-x", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  int64_t dev, variant, cand[4];
  CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", "/x/gemm_a8w8_blockscale_mma.cuh", ENTRY, "v",
                                0, &variant), AT_OK);
  for (int i = 0; i < 4; i++) cand[i] = add_cand(s, variant, i);
  enum { NM = 60 }; /* more tuned M than AT_MAX_MLEQ (48) */
  int64_t ms[NM];
  double times[4 * NM];
  int win[NM];
  for (int i = 0; i < NM; i++) {
    ms[i] = 8 * (i + 1);
    win[i] = i % 4;
    for (int c = 0; c < 4; c++) times[c * NM + i] = c == win[i] ? 1 : 2;
  }
  nk(s, dev, 1024, 1024, ms, NM, cand, 4, times, win);
  at_store_close(s);
  char *out = at_path_join(TMP, "many.txt");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", dir, (const char *)NULL), 0);
  char *f = at_path_join(dir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  at_config_set cs = load_set(f);
  CHECK_EQ_INT(cs.nmleq, AT_MAX_MLEQ);
  CHECK_EQ_INT(cs.mleq_m[0], 8);
  CHECK_EQ_INT(cs.mleq_m[AT_MAX_MLEQ - 1], 8 * NM);
  for (int i = 0; i < cs.nmleq; i++) {
    CHECK(i == 0 || cs.mleq_m[i] > cs.mleq_m[i - 1]);
    CHECK_EQ_INT(block_m_of(&cs.mleq[i]), 16 << (int)((cs.mleq_m[i] / 8 - 1) % 4)); /* each its own M's winner */
  }
  free(f), free(out), free(dir), free(db);
}

typedef struct thread_arg {
  at_runtime *rt;
  int errors;
} thread_arg;

static void *hammer(void *p) {
  thread_arg *a = p;
  for (int i = 0; i < 20000; i++) {
    at_selection sel;
    int64_t m = (int64_t[]){16, 48, 256, 4096}[i % 4];
    if (at_runtime_select(a->rt, "gemm_a8w8_blockscale", m, 1024, 1024, "sm90", &sel) != AT_STATUS_OK ||
        strcmp(sel.source, "db") != 0)
      a->errors++;
  }
  return NULL;
}

static void runtime_lookups(const char *db, const char *dir) {
  at_runtime_options o = {.db_path = db, .configs_dir = dir};
  at_runtime *rt;
  CHECK_EQ_INT(at_runtime_open(&o, &rt), AT_STATUS_OK);
  at_selection sel;
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 48, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "db") == 0);
  CHECK(strcmp(sel.bucket, "M_LEQ_48") == 0); /* the winner at 48 (c0), not medium_M64's best sum (c1) */
  CHECK_CONTAINS(sel.params, "\"BLOCK_M\":16");
  CHECK_CONTAINS(sel.kernel, "gemm_a8w8_blockscale_mma<16, 64, 128, 1, 2, 2, 1, 1, 0>");
  /* Every M of the issue: the smallest tuned M at or above it, `any` beyond the largest. */
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) {
    CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", atoll(MS[i]), 1024, 1024, "sm90", &sel), AT_STATUS_OK);
    CHECK(strcmp(sel.bucket, MLEQ[i]) == 0);
    CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", atoll(MS[i]), 7168, 2048, "sm90", &sel), AT_STATUS_OK);
    CHECK(strcmp(sel.source, "default_file") == 0 && strcmp(sel.bucket, MLEQ[i]) == 0);
  }
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 500, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK_CONTAINS(sel.params, "\"BLOCK_M\":32"); /* M_LEQ_512's c1, not xlarge's c2 */
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 16, 7168, 2048, "sm90", &sel), AT_STATUS_OK);
  CHECK_CONTAINS(sel.params, "\"BLOCK_M\":32"); /* the default file's M_LEQ_16: c1, two (N, K) of three */
  CHECK_EQ_INT(at_runtime_select(rt, "nope", 48, 1024, 1024, "sm90", &sel), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "unknown op");
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 0, 1024, 1024, "sm90", &sel), AT_STATUS_INVALID);
  /* N and K as the op takes them, as at a launch: no entry made for a shape no call could run. */
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 48, 1020, 1024, "sm90", &sel), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "at_runtime_select: n must be a positive multiple of 8");
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 48, 1024, 1000, "sm90", &sel), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "at_runtime_select: k must be a positive multiple of 128");
  CHECK_EQ_INT(at_runtime_open(&o, NULL), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "at_runtime_open: out must not be NULL");
  /* at_runtime_prepare checks its arguments before it touches CUDA, and needs a current context. */
  int ready = -1;
  CHECK_EQ_INT(at_runtime_prepare(rt, "nope", 1024, 1024, 64, &ready), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "at_runtime_prepare: unknown op 'nope'");
  CHECK_EQ_INT(ready, 0);
  CHECK_EQ_INT(at_runtime_prepare(rt, "gemm_a8w8_blockscale", 1020, 1024, 64, NULL), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "n must be a positive multiple of 8");
  CHECK_EQ_INT(at_runtime_prepare(rt, "gemm_a8w8_blockscale", 1024, 1000, 64, NULL), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "k must be a positive multiple of 128");
  CHECK_EQ_INT(at_runtime_prepare(rt, "gemm_a8w8_blockscale", 1024, 1024, 0, NULL), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "m_max must be from 1 to 2^20 (got 0)");
  CHECK_EQ_INT(at_runtime_prepare(rt, "gemm_a8w8_blockscale", 1024, 1024, (1 << 20) + 1, NULL), AT_STATUS_INVALID);
  CHECK_EQ_INT(at_runtime_prepare(NULL, "gemm_a8w8_blockscale", 1024, 1024, 64, NULL), AT_STATUS_INVALID);
  /* no driver here, or (on a GPU machine) no context made current by this process */
  CHECK_EQ_INT(at_runtime_prepare(rt, "gemm_a8w8_blockscale", 1024, 1024, 64, &ready), AT_STATUS_ERROR);
  CHECK_EQ_INT(ready, 0);

  /* Several threads at once: the same answers, no failures. */
  thread_arg args[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++) args[i] = (thread_arg){rt, 0}, pthread_create(&th[i], NULL, hammer, &args[i]);
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    CHECK_EQ_INT(args[i].errors, 0);
  }

  /* The DB rewritten under the running process (a tuner's new results): noticed within a second
   * or so, without reopening. Times scaled so that c0 now wins every M of (1024, 1024); M_LEQ_256
   * was c3's. */
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 256, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK_CONTAINS(sel.params, "\"BLOCK_M\":128");
  unlink(db);
  char *wal = at_xasprintf("%s-wal", db);
  unlink(wal);
  free(wal);
  build_db(db, 1.0);
  at_store *s;
  CHECK_EQ_INT(at_store_open(db, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "UPDATE results SET time_us = time_us * 100 WHERE candidate_id != (SELECT min(id) FROM candidates"
                                " WHERE variant_id = (SELECT max(id) FROM variants))"),
               AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "UPDATE winners SET candidate_id = (SELECT min(id) FROM candidates WHERE variant_id ="
                                " (SELECT max(id) FROM variants))"),
               AT_OK);
  at_store_close(s);
  int changed = 0;
  for (int i = 0; i < 40 && !changed; i++) {
    usleep(100000);
    CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 256, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
    changed = strstr(sel.params, "\"BLOCK_M\":16") != NULL;
  }
  CHECK(changed);
  at_runtime_close(rt);

  /* A corrupt DB: the runtime warns and answers from the files. */
  char *corrupt = at_path_join(TMP, "corrupt-rt.db");
  at_write_file_atomic(corrupt, "not a database at all, not even close, definitely not", 52);
  at_runtime_options o2 = {.db_path = corrupt, .configs_dir = dir};
  CHECK_EQ_INT(at_runtime_open(&o2, &rt), AT_STATUS_OK);
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 48, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "nk_file") == 0);
  at_runtime_close(rt);
  free(corrupt);

  /* Files of the seed's format (per_m_rules wrote them): the runtime answers with the buckets. */
  char *seed = at_path_join(TMP, "configs-seed");
  at_runtime_options o3 = {.configs_dir = seed};
  CHECK_EQ_INT(at_runtime_open(&o3, &rt), AT_STATUS_OK);
  for (size_t i = 0; i < AT_ARRAY_LEN(MS); i++) {
    CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", atoll(MS[i]), 1024, 1024, "sm90", &sel), AT_STATUS_OK);
    CHECK(strcmp(sel.source, "nk_file") == 0 && strcmp(sel.bucket, BUCKETS[i]) == 0);
  }
  at_runtime_close(rt);

  /* The launch mode: a value out of range, or a wrong $AUTOTUNE_PDL, is refused by name. */
  at_runtime_options o4 = {.configs_dir = seed, .pdl = 7};
  CHECK_EQ_INT(at_runtime_open(&o4, &rt), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "options->pdl");
  o4.pdl = AT_PDL_DEFAULT;
  setenv("AUTOTUNE_PDL", "sometimes", 1);
  CHECK_EQ_INT(at_runtime_open(&o4, &rt), AT_STATUS_INVALID);
  CHECK_CONTAINS(at_runtime_last_error(), "AUTOTUNE_PDL must be off or on");
  o4.pdl = AT_PDL_OFF; /* the option wins over the environment */
  CHECK_EQ_INT(at_runtime_open(&o4, &rt), AT_STATUS_OK);
  at_runtime_close(rt);
  unsetenv("AUTOTUNE_PDL");
  free(seed);
}

/* ---- hostile input ------------------------------------------------------------------------------ */

/* A copy of the DB at src, with sql applied; NOT NULL dropped from the schema first when asked (a
 * schema edited by hand, which is what lets NULLs in). */
static char *hostile_copy(const char *src, const char *name, int drop_not_null, const char *sql) {
  char *dst = at_path_join(TMP, name);
  char *data;
  size_t n;
  CHECK_EQ_INT(at_read_file(src, 0, &data, &n), AT_OK);
  CHECK_EQ_INT(at_write_file_atomic(dst, data, n), AT_OK);
  free(data);
  at_store *s;
  CHECK_EQ_INT(at_store_open(dst, &s), AT_OK);
  if (drop_not_null)
    CHECK_EQ_INT(at_store_exec(s, "PRAGMA writable_schema=ON; UPDATE sqlite_master SET sql=replace(sql, 'NOT NULL', '')"
                                  " WHERE type='table'; PRAGMA writable_schema=OFF;"),
                 AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(at_store_open(dst, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, sql), AT_OK);
  at_store_close(s);
  return dst;
}

/* The runtime's answer for (48, 1024, 1024) on sm90, in a child so that a hang or a crash is a
 * failed check and not a dead test. 0 when it answered from want_source. */
static int runtime_answer(const char *db, const char *dir, const char *want_source) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30);
    at_runtime_options o = {.db_path = db, .configs_dir = dir};
    at_runtime *rt;
    at_selection sel;
    if (at_runtime_open(&o, &rt) != AT_STATUS_OK) _exit(3);
    int rc = at_runtime_select(rt, "gemm_a8w8_blockscale", 48, 1024, 1024, "sm90", &sel);
    if (rc != AT_STATUS_OK) _exit(4);
    if (strcmp(sel.source, want_source) != 0) {
      fprintf(stderr, "runtime answered from %s, not %s\n", sel.source, want_source);
      _exit(5);
    }
    at_runtime_close(rt);
    _exit(0);
  }
  int rc = proc_wait(pid, 60);
  if (rc) fprintf(stderr, "  runtime child: status %d (db %s, configs %s)\n", rc, db ? db : "-", dir ? dir : "-");
  return rc;
}

/* NULLs in NOT NULL columns used to reach strcmp and strrchr: export, query and the runtime
 * segfaulted. Now: export fails (exit 1) naming the corrupt DB; query and the runtime warn and
 * answer from the next source. */
static void null_columns(const char *good_db, const char *dir) {
  static const struct {
    const char *sql, *column;
  } CASES[] = {
      {"UPDATE variants SET template=NULL", "variants.template"},
      {"UPDATE problems SET tag=NULL", "problems.tag"},
      {"UPDATE devices SET name=NULL", "devices.name"},
      {"UPDATE candidates SET params=NULL", "candidates.params"},
  };
  char *out = at_path_join(TMP, "null.txt"), *outdir = at_path_join(TMP, "configs-null");
  for (size_t i = 0; i < AT_ARRAY_LEN(CASES); i++) {
    char name[32];
    snprintf(name, sizeof name, "null%zu.db", i);
    char *db = hostile_copy(good_db, name, 1, CASES[i].sql);
    CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", outdir, (const char *)NULL), 1);
    char *t = slurp(out);
    CHECK_CONTAINS(t, "corrupt DB");
    CHECK_CONTAINS(t, CASES[i].column);
    free(t);
    char *q;
    CHECK_EQ_INT(query(&q, "48", "1024", "1024", "--configs", dir, "--db", db), 0);
    CHECK_CONTAINS(q, "warning");
    CHECK_CONTAINS(q, "corrupt DB");
    CHECK_CONTAINS(q, "\"source\": \"nk_file\"");
    free(q);
    CHECK_EQ_INT(runtime_answer(db, dir, "nk_file"), 0);
    free(db);
  }
  free(out), free(outdir);
}

/* A tag with "/.." in the DB named files outside --out ("sm90-GEMM-SYN/../../escaped-N=..." once
 * a directory sm90-GEMM-SYN exists under --out). Names read from the DB are checked as names read
 * from a search space: export refuses, writes nothing, and query and the runtime fall back. */
static void tag_escape(const char *good_db, const char *dir) {
  char *db = hostile_copy(good_db, "escape.db", 0, "UPDATE problems SET tag='SYN/../../escaped'");
  char *outdir = at_path_join(TMP, "configs-escape"), *trap = at_path_join(outdir, "sm90-GEMM-SYN");
  CHECK_EQ_INT(at_mkdirs(trap), AT_OK);
  char *out = at_path_join(TMP, "escape.txt");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db, "--out", outdir, (const char *)NULL), 1);
  char *t = slurp(out);
  CHECK_CONTAINS(t, "corrupt DB: tag 'SYN/../../escaped' must be letters, digits and _");
  free(t);
  char *escaped = at_path_join(TMP, "escaped-N=1024-K=1024.json"), *escaped_default = at_path_join(TMP, "escaped.json");
  CHECK(!at_file_exists(escaped));
  CHECK(!at_file_exists(escaped_default));
  char *q;
  CHECK_EQ_INT(query(&q, "48", "1024", "1024", "--configs", dir, "--db", db), 0);
  CHECK_CONTAINS(q, "\"source\": \"nk_file\"");
  free(q);
  CHECK_EQ_INT(runtime_answer(db, dir, "nk_file"), 0);
  /* A variant name, family or template that YAML would refuse is a corrupt DB too. */
  char *db2 = hostile_copy(good_db, "family.db", 0, "UPDATE variants SET family='../../x'");
  CHECK_EQ_INT(run_cli(out, "export", "--db", db2, "--out", outdir, (const char *)NULL), 1);
  t = slurp(out);
  CHECK_CONTAINS(t, "corrupt DB");
  CHECK_CONTAINS(t, "its family is not one the op has");
  free(t);
  free(db2), free(escaped), free(escaped_default), free(out), free(trap), free(outdir), free(db);
}

/* A FIFO named like a configs file: reading it waited for a writer, forever, in query and in the
 * runtime. Now it is skipped at once with a warning and the next file answers. */
static void fifo_configs(const char *dir) {
  char *fdir = at_path_join(TMP, "configs-fifo");
  CHECK_EQ_INT(at_mkdirs(fdir), AT_OK);
  char *fifo = at_path_join(fdir, "sm90-GEMM-SYN-N=1024-K=1024.json");
  unlink(fifo);
  CHECK_EQ_INT(mkfifo(fifo, 0644), 0);
  char *src = at_path_join(dir, "sm90-GEMM-SYN.json"), *dst = at_path_join(fdir, "sm90-GEMM-SYN.json");
  char *data;
  size_t n;
  CHECK_EQ_INT(at_read_file(src, 0, &data, &n), AT_OK);
  CHECK_EQ_INT(at_write_file_atomic(dst, data, n), AT_OK);
  free(data);
  char *out = at_path_join(TMP, "fifo.txt");
  char *argv[] = {(char *)EXE, "query", "--op", "gemm_a8w8_blockscale", "-M", "48", "-N", "1024", "-K", "1024",
                  "--device", "sm90", "--configs", fdir, NULL};
  CHECK_EQ_INT(proc_run(argv, out, 30), 0);
  char *t = slurp(out);
  CHECK_CONTAINS(t, "a FIFO, not a regular file");
  CHECK_CONTAINS(t, "\"source\": \"default_file\"");
  free(t);
  CHECK_EQ_INT(runtime_answer(NULL, fdir, "default_file"), 0);
  unlink(fifo);
  free(out), free(dst), free(src), free(fifo), free(fdir);
}

/* Shapes the op cannot run are usage errors naming the argument; a device no source knows gets the
 * built-in config with a warning that lists the known ones. */
static void query_arguments(const char *dir) {
  char *out = at_path_join(TMP, "qargs.txt");
  CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "64", "-N", "4095", "-K", "1024", "--device",
                       "sm90", "--configs", dir, (const char *)NULL),
               2);
  char *t = slurp(out);
  CHECK_CONTAINS(t, "-N 4095: N must be a positive multiple of 8");
  free(t);
  CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "64", "-N", "4096", "-K", "1000", "--device",
                       "sm90", "--configs", dir, (const char *)NULL),
               2);
  t = slurp(out);
  CHECK_CONTAINS(t, "-K 1000: K must be a positive multiple of 128");
  free(t);
  CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "64", "-N", "4096", "-K", "1024", "--device",
                       "H100", "--configs", dir, (const char *)NULL),
               0);
  t = slurp(out);
  CHECK_CONTAINS(t, "warning: --device H100: neither the DB nor the configs know it (known: sm90)");
  CHECK_CONTAINS(t, "\"source\": \"builtin\"");
  free(t);
  /* A known device: no warning. */
  CHECK_EQ_INT(run_cli(out, "query", "--op", "gemm_a8w8_blockscale", "-M", "64", "-N", "1024", "-K", "1024", "--device",
                       "sm90", "--configs", dir, (const char *)NULL),
               0);
  t = slurp(out);
  CHECK(strstr(t, "warning") == NULL);
  free(t);
  free(out);
}

/* query's "tail" with the committed configs: for the tail shapes of tail_shapes.h on 132 and 114
 * SMs (the arch's files and model) and on the H200 (132 SMs, its own files and model first), the
 * plan the lookup and at_a8w8_tail_plan give, which the runtime launches; every kind of plan among
 * them on each. Without an SM count (a named device, no GPU) it is unknown, with $AUTOTUNE_TAIL off
 * it is off, and a bad --sm-count is exit 2. */
static void query_tail(void) {
  char *dir = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "configs");
  char *file = at_path_join(dir, "sm90-GEMM-A8W8_BLOCKSCALE.json");
  if (!at_file_exists(file)) {
    fprintf(stderr, "no committed configs: skipping query_tail\n");
    free(file), free(dir);
    return;
  }
  const int64_t(*C)[3] = TAIL_SHAPES;
  static const int SMS[] = {132, 114, 132};
  static const char *const DEVICE[] = {"sm90", "sm90", "NVIDIA_H200"}; /* the GPU each row stands for */
  int seen[3][5] = {{0}}; /* none, last wave, padding, whole call, last rows: per row */
  static const char *const KIND[5] = {"none", "last wave", "padding", "whole call", "last rows"};
  for (size_t si = 0; si < AT_ARRAY_LEN(SMS); si++)
    for (size_t i = 0; i < TAIL_SHAPES_LEN; i++) {
      char m[24], n[24], k[24], sm[16];
      snprintf(m, sizeof m, "%lld", (long long)C[i][0]), snprintf(n, sizeof n, "%lld", (long long)C[i][1]);
      snprintf(k, sizeof k, "%lld", (long long)C[i][2]), snprintf(sm, sizeof sm, "%d", SMS[si]);
      char *t = NULL;
      query_device = DEVICE[si];
      CHECK_EQ_INT(query(&t, m, n, k, "--configs", dir, "--sm-count", sm), 0);
      query_device = "sm90";
      at_json *j = NULL;
      CHECK_EQ_INT(at_json_parse("query", t, strlen(t), &j), AT_OK);
      const at_json *tail = j ? at_json_get(j, "tail") : NULL;
      const char *plan = tail ? at_json_str(tail, "plan") : NULL;
      /* What the runtime plans: its lookup on that many SMs, then the tail of the entry for M. */
      const int product = strcmp(DEVICE[si], "sm90") != 0;
      at_lookup_req q = {"gemm_a8w8_blockscale", NULL, {DEVICE[si], product ? "sm90" : NULL}, C[i][1], C[i][2], NULL, dir, NULL,
                         SMS[si], 0};
      at_lookup_result r;
      CHECK_EQ_INT(at_lookup(&q, &r), AT_OK);
      const at_config *c = at_config_for_m(&r.set, C[i][0], NULL);
      const char *names[AT_MAX_PARAMS];
      const at_params p = at_config_params(c, names);
      const at_shape shape = {C[i][0], C[i][1], C[i][2]};
      at_a8w8_tail want;
      at_a8w8_tail_plan("sm90", &p, &shape, SMS[si], at_source_untuned(r.source), &want);
      int kind = 0;
      while (kind < 4 && strcmp(KIND[kind], at_a8w8_tail_kind(&want)) != 0) kind++;
      const int same = plan && strcmp(plan, KIND[kind]) == 0;
      if (!same)
        fprintf(stderr, "query -M %s -N %s -K %s --device %s --sm-count %s: tail %s, the runtime plans %s\n", m, n, k,
                DEVICE[si], sm, plan ? plan : "(none)", KIND[kind]);
      CHECK(same);
      if (same && kind) {
        int64_t v;
        CHECK(at_json_int(tail, "m0", &v) == 0 && v == want.m0);
        CHECK(at_json_int(tail, "n0", &v) == 0 && v == want.n0);
        CHECK(at_json_int(tail, "main_units", &v) == 0 && v == want.unit_end);
        CHECK(at_json_int(tail, "main_m", &v) == 0 && v == want.main_m);
      }
      seen[si][kind]++;
      at_json_free(j);
      free(t);
    }
  /* test_stress runs each kind on the GPU it finds, three of the last wave: both H100 variants
   * and the H200 need all of them. */
  for (size_t si = 0; si < AT_ARRAY_LEN(SMS); si++)
    for (int i = 1; i < 5; i++) {
      if (seen[si][i] < (i == 1 ? 3 : 1))
        fprintf(stderr, "%d shapes of the list plan a tail of kind %s on %s, %d SMs\n", seen[si][i], KIND[i], DEVICE[si],
                SMS[si]);
      CHECK(seen[si][i] >= (i == 1 ? 3 : 1));
    }
  char *t = NULL;
  CHECK_EQ_INT(query(&t, "640", "6144", "4096", "--configs", dir, NULL, NULL), 0);
  CHECK_CONTAINS(t, "\"tail\": {\"plan\": \"unknown\"");
  free(t);
  setenv("AUTOTUNE_TAIL", "off", 1);
  CHECK_EQ_INT(query(&t, "640", "6144", "4096", "--configs", dir, "--sm-count", "132"), 0);
  unsetenv("AUTOTUNE_TAIL");
  CHECK_CONTAINS(t, "\"tail\": {\"plan\": \"off\"");
  free(t);
  CHECK_EQ_INT(query(&t, "640", "6144", "4096", "--configs", dir, "--sm-count", "0"), 2);
  CHECK_CONTAINS(t, "--sm-count expects a number of SMs from 1 to 4096, got '0'");
  free(t);
  free(file), free(dir);
}

/* Options left NULL take $AUTOTUNE_DB and $AUTOTUNE_CONFIGS: a process is pointed at its configs
 * without a code change; an option given wins over the environment, and an empty value is none. */
static void runtime_environment(const char *db, const char *dir) {
  at_runtime *rt;
  at_selection sel;
  setenv("AUTOTUNE_CONFIGS", dir, 1);
  CHECK_EQ_INT(at_runtime_open(NULL, &rt), AT_STATUS_OK);
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 64, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "nk_file") == 0);
  at_runtime_close(rt);
  setenv("AUTOTUNE_DB", db, 1);
  CHECK_EQ_INT(at_runtime_open(NULL, &rt), AT_STATUS_OK);
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 64, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "db") == 0);
  at_runtime_close(rt);
  char *empty = at_path_join(TMP, "no-configs-here");
  at_runtime_options o = {.configs_dir = empty};
  setenv("AUTOTUNE_DB", "", 1);
  CHECK_EQ_INT(at_runtime_open(&o, &rt), AT_STATUS_OK);
  CHECK_EQ_INT(at_runtime_select(rt, "gemm_a8w8_blockscale", 64, 1024, 1024, "sm90", &sel), AT_STATUS_OK);
  CHECK(strcmp(sel.source, "builtin") == 0);
  at_runtime_close(rt);
  unsetenv("AUTOTUNE_DB");
  unsetenv("AUTOTUNE_CONFIGS");
  free(empty);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("export");
  char *db = at_path_join(TMP, "syn.db"), *dir = at_path_join(TMP, "configs");
  build_db(db, 1.0);
  export_rules(db, dir);
  current_versions();
  query_sources(db, dir);
  committed_configs();
  product_files();
  seed_shape(dir);
  per_m_rules(dir);
  many_m();
  null_columns(db, dir);
  tag_escape(db, dir);
  fifo_configs(dir);
  query_arguments(dir);
  query_tail();
  runtime_lookups(db, dir);
  runtime_environment(db, dir);
  free(db), free(dir);
  return check_summary();
}

/* test_cluster.c: scaling out over several nodes (docs/cluster.md), on the CPU; argv[1] is the
 * autotune binary.
 *  - the deal of --shard: every kept (candidate, shape) in exactly one shard, balanced by cost
 *    within one unit of work, the same deal every time; bad values refused naming the option;
 *  - shard-then-merge equals an unsharded run (compile-only: the candidates tables are equal), with
 *    whole candidates (3 shards) and candidates split by shape (8 shards);
 *  - merge, on DBs whose results are written through the store as the tuner writes them: the same
 *    tables whatever the order of the inputs, nothing changed by merging again, the newest result
 *    kept with its run's provenance, winners recomputed by the tuner's rule, refusals (device
 *    model, toolchain, schema version) naming the file unless --force, and a failed merge that
 *    leaves its output as it was. Tables are compared by content (ids mapped to keys), not bytes. */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/enumerate.h"
#include "core/limits.h"
#include "core/shard.h"
#include "core/space.h"
#include "core/store.h"
#include "core/util.h"
#include "dbq.h"
#include "proc.h"

static const char *EXE;
static char *TMP, *DATA;

#define RUN(...) proc_run_in(EXE, TMP, 600, __VA_ARGS__, (const char *)NULL)

static char *tmp(const char *name) { return at_path_join(TMP, name); }

/* The candidates as compile-only runs make them, without what differs from run to run (times,
 * run ids, logs that carry timings). */
static const char *CANDIDATES_SQL =
    "SELECT c.compile_key, v.op, v.name, v.family, v.entry, v.source_hash, c.params, c.name_expr, c.arch, c.status,"
    " c.lowered_name, c.regs, c.spill_stores, c.spill_loads, c.static_smem, c.stack_bytes, c.threads, c.smem_bytes,"
    " c.cubin_hash, c.quarantined FROM candidates c JOIN variants v ON v.id = c.variant_id ORDER BY c.compile_key";

/* Every table, ids replaced by the content they stand for. */
static char *content(const char *db) {
  static const char *const Q[] = {
      "SELECT name, arch, cc, sm_count, uuid, driver FROM devices ORDER BY name, arch",
      "SELECT r.uid, r.started, r.finished, r.status, r.host, r.command, r.shard, r.nvrtc, r.arch, d.name,"
      " r.peak_tflops FROM runs r LEFT JOIN devices d ON d.id = r.device_id ORDER BY r.uid",
      "SELECT r.uid, s.db FROM run_sources s JOIN runs r ON r.id = s.run_id ORDER BY 1, 2",
      "SELECT v.op, v.name, v.family, v.entry, v.source_hash, v.template, r.uid FROM variants v LEFT JOIN runs r"
      " ON r.id = v.last_run ORDER BY 1, 2, 3, 4, 5",
      "SELECT op, tag, m, n, k FROM problems ORDER BY 1, 2, 3, 4, 5",
      "SELECT c.compile_key, v.name, v.source_hash, c.params, c.status, c.regs, c.cubin_hash, c.quarantined, c.created,"
      " c.compile_ms, r.uid FROM candidates c JOIN variants v ON v.id = c.variant_id LEFT JOIN runs r ON r.id = c.run_id"
      " ORDER BY 1",
      "SELECT c.compile_key, p.m, p.n, p.k, d.name, r.uid, x.status, x.time_us, x.retime_us, x.message, x.created,"
      " x.check_ratio FROM results x JOIN candidates c ON c.id = x.candidate_id JOIN problems p ON p.id = x.problem_id"
      " JOIN devices d ON d.id = x.device_id LEFT JOIN runs r ON r.id = x.run_id ORDER BY 1, 2, 3, 4, 5",
      "SELECT r.uid, v.name, v.source_hash, x.rule, x.per_shape, x.count FROM pruned x JOIN runs r ON r.id = x.run_id"
      " JOIN variants v ON v.id = x.variant_id ORDER BY 1, 2, 3, 4, 5",
      "SELECT p.m, p.n, p.k, d.name, c.compile_key, w.time_us, r.uid, w.decided FROM winners w JOIN problems p"
      " ON p.id = w.problem_id JOIN devices d ON d.id = w.device_id JOIN candidates c ON c.id = w.candidate_id"
      " LEFT JOIN runs r ON r.id = w.run_id ORDER BY 1, 2, 3, 4",
      "SELECT p.m, p.n, p.k, d.name, b.name, b.time_us, r.uid FROM baselines b JOIN problems p ON p.id = b.problem_id"
      " JOIN devices d ON d.id = b.device_id LEFT JOIN runs r ON r.id = b.run_id ORDER BY 1, 2, 3, 4, 5",
  };
  at_buf b = {0};
  for (size_t i = 0; i < sizeof Q / sizeof Q[0]; i++) {
    char *d = dbq_dump(db, Q[i]);
    at_buf_printf(&b, "-- %zu\n%s", i, d);
    free(d);
  }
  return at_buf_steal(&b);
}

static int same_text(const char *a, const char *b) {
  int same = strcmp(a, b) == 0;
  if (!same) fprintf(stderr, "---- differs:\n%s---- from:\n%s----\n", a, b);
  return same;
}

static void copy_file(const char *from, const char *to) {
  char *data;
  size_t n;
  CHECK_EQ_INT(at_read_file(from, 0, &data, &n), AT_OK);
  CHECK_EQ_INT(at_write_file_atomic(to, data, n), AT_OK);
  free(data);
}

/* ---- the deal --------------------------------------------------------------------------------- */

/* Candidates a and b by kernel: template, then instantiation. */
static int kernel_cmp(const at_space *s, const at_enum *e, size_t a, size_t b) {
  int c = strcmp(s->variants[e->c[a].variant].template_path, s->variants[e->c[b].variant].template_path);
  return c ? c : strcmp(e->c[a].name_expr, e->c[b].name_expr);
}

static int same_kernel(const at_space *s, const at_enum *e, size_t a, size_t b) { return kernel_cmp(s, e, a, b) == 0; }

static void deal_of(const char *space_file) {
  char *path = at_path_join(DATA, space_file);
  at_space *s = NULL;
  at_enum *e = NULL;
  at_limits lim;
  CHECK_EQ_INT(at_space_load(path, &s), AT_OK);
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  CHECK_EQ_INT(at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e), AT_OK);
  free(path);
  if (!s || !e) return;
  size_t ns = e->nshapes, np = e->n * ns;
  int *owner = calloc(np + 1, sizeof *owner), *again = calloc(np + 1, sizeof *again);
  int *so = calloc(ns + 1, sizeof *so), *so2 = calloc(ns + 1, sizeof *so2);
  int64_t max_pair = 0, total = 0;
  for (size_t j = 0; j < ns; j++)
    if (at_shard_pair_cost(s, &s->shapes[j]) > max_pair) max_pair = at_shard_pair_cost(s, &s->shapes[j]);
  /* The candidates by kernel (template, instantiation), in enumeration order inside each. */
  size_t *by_kernel = calloc(e->n + 1, sizeof *by_kernel);
  for (size_t i = 0; i < e->n; i++) by_kernel[i] = i;
  for (size_t i = 1; i < e->n; i++) /* insertion sort: stable, and the test spaces are small or sorted runs */
    for (size_t q = i; q > 0 && kernel_cmp(s, e, by_kernel[q - 1], by_kernel[q]) > 0; q--) {
      size_t t = by_kernel[q];
      by_kernel[q] = by_kernel[q - 1], by_kernel[q - 1] = t;
    }
  for (int n = 1; n <= 10; n++) {
    at_shard_plan(s, e, n, owner, so);
    at_shard_plan(s, e, n, again, so2);
    CHECK(memcmp(owner, again, np * sizeof *owner) == 0); /* the same deal every time */
    CHECK(memcmp(so, so2, ns * sizeof *so) == 0);
    int64_t *load = calloc((size_t)n + 1, sizeof *load);
    total = 0;
    int bad = 0;
    for (size_t i = 0; i < e->n; i++)
      for (size_t j = 0; j < ns; j++) {
        int o = owner[i * ns + j];
        if (!e->shape_ok[i * ns + j]) {
          bad |= o != 0;
          continue;
        }
        bad |= o < 1 || o > n; /* in exactly one shard: the one it names */
        if (o >= 1 && o <= n) load[o] += at_shard_pair_cost(s, &s->shapes[j]), total += at_shard_pair_cost(s, &s->shapes[j]);
      }
    CHECK_EQ_INT(bad, 0);
    /* LPT: no shard above its share by more than the largest unit (a candidate is kept whole only
     * under a quarter of a share). */
    int64_t unit = total / (4 * n) > max_pair ? total / (4 * n) : max_pair, worst = 0;
    for (int k = 1; k <= n; k++) worst = load[k] > worst ? load[k] : worst;
    CHECK(worst <= total / n + unit);
    /* A kernel (one template instantiation, candidates differing in launch parameters only) that
     * weighs at most a quarter of a share lies in one shard: no two shards compile it. */
    int split_kernels = 0, whole_kernels = 0;
    for (size_t r = 0; r < e->n;) {
      size_t r1 = r + 1;
      while (r1 < e->n && same_kernel(s, e, by_kernel[r], by_kernel[r1])) r1++;
      int64_t kcost = 0;
      int first = 0, apart = 0;
      for (size_t q = r; q < r1; q++)
        for (size_t j = 0; j < ns; j++) {
          int o = owner[by_kernel[q] * ns + j];
          if (!o) continue;
          kcost += at_shard_pair_cost(s, &s->shapes[j]);
          first = first ? first : o;
          apart |= o != first;
        }
      if (n == 1 || kcost <= total / (4 * n)) split_kernels += apart, whole_kernels += r1 - r > 1;
      r = r1;
    }
    if (n > 1 && n < 4 && e->n > 1000) CHECK(whole_kernels > 100); /* the shipped space: it tested something */
    CHECK_EQ_INT(split_kernels, 0);
    free(load);
  }
  /* Narrowing to shard 2/3 keeps exactly its pairs and drops the candidates left with none. */
  at_shard_plan(s, e, 3, owner, so);
  int64_t mine = 0;
  for (size_t i = 0; i < np; i++) mine += owner[i] == 2;
  uint8_t *on = calloc(ns + 1, 1);
  at_shard_stats st;
  at_shard_apply(s, e, (at_shard){2, 3}, on, &st);
  CHECK_EQ_INT(st.pairs_kept, mine);
  int64_t left = 0;
  for (size_t i = 0; i < e->n * ns; i++) left += e->shape_ok[i];
  CHECK_EQ_INT(left, mine);
  for (size_t i = 0; i < e->n; i++) {
    int any = 0;
    for (size_t j = 0; j < ns; j++) any |= e->shape_ok[i * ns + j];
    CHECK(any);
  }
  CHECK(st.cost_max * 3 <= st.cost_total + 3 * (st.cost_total / 12 > max_pair ? st.cost_total / 12 : max_pair));
  free(on);
  free(owner), free(again), free(so), free(so2), free(by_kernel);
  at_enum_free(e);
  at_space_free(s);
}

static void bad_shards(void) {
  char *db = tmp("never.db"), *space = at_path_join(DATA, "spaces/tiny.yaml");
  const char *bad[] = {"3/2", "0/0", "x", "1/0", "0/3", "1/", "/2", "-1/2", "1/2/3", "2.5/4", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", db, "--shard", bad[i], space), 2);
    char *o = proc_output(TMP);
    CHECK_CONTAINS(o, "--shard");
    free(o);
  }
  CHECK(!at_file_exists(db));
  at_shard sh;
  CHECK_EQ_INT(at_shard_parse("4/4", &sh), AT_OK);
  CHECK_EQ_INT(sh.index * 10 + sh.count, 44);
  free(db), free(space);
}

/* ---- shard, then merge ------------------------------------------------------------------------ */

static void shard_then_merge(int nshards) {
  char *space = at_path_join(DATA, "spaces/tiny.yaml"), *full = tmp("full.db");
  if (!at_file_exists(full)) CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", full, space), 0);
  char **dbs = calloc((size_t)nshards, sizeof *dbs);
  int64_t sum = 0;
  for (int i = 1; i <= nshards; i++) {
    char name[64], spec[32];
    snprintf(name, sizeof name, "s%d-of-%d.db", i, nshards);
    snprintf(spec, sizeof spec, "%d/%d", i, nshards);
    dbs[i - 1] = tmp(name);
    CHECK_EQ_INT(RUN("--compile-only", "--arch", "sm_90a", "--db", dbs[i - 1], "--shard", spec, space), 0);
    char *o = proc_output(TMP);
    CHECK_CONTAINS(o, "shard ");
    free(o);
    char *n = dbq_dump(dbs[i - 1], "SELECT count(*) FROM candidates");
    sum += atoll(n);
    free(n);
    n = dbq_dump(dbs[i - 1], "SELECT shard FROM runs");
    char want[40];
    snprintf(want, sizeof want, "%s\n", spec);
    CHECK(same_text(n, want));
    free(n);
  }
  char *merged = tmp(nshards == 3 ? "m3.db" : "m8.db");
  char *argv[40] = {(char *)EXE, "merge", "--db", merged};
  for (int i = 0; i < nshards; i++) argv[4 + i] = dbs[i];
  char *out = tmp("out.txt");
  CHECK_EQ_INT(proc_run(argv, out, 300), 0);
  char *a = dbq_dump(full, CANDIDATES_SQL), *b = dbq_dump(merged, CANDIDATES_SQL);
  CHECK(a[0] && same_text(b, a));
  char *nfull = dbq_dump(full, "SELECT count(*) FROM candidates");
  /* A shard compiles only the candidates it times: with whole candidates, each is in one shard. */
  if (nshards == 3) CHECK_EQ_INT(sum, atoll(nfull));
  CHECK(sum >= atoll(nfull));
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, nshards == 3 ? "shard 3/3: finished" : "shard 8/8: finished");
  free(o);
  free(a), free(b), free(nfull), free(out), free(merged);
  for (int i = 0; i < nshards; i++) free(dbs[i]);
  free(dbs);
  free(space), free(full);
}

/* ---- merge rules, on results written as the tuner writes them --------------------------------- */

typedef struct res {
  const char *key;
  int64_t m;
  const char *status;
  double us, retime;
  const char *created;
} res;

typedef struct win {
  int64_t m;
  const char *key;
  double us;
} win;

/* A DB of one run: the candidates named by the results, two problems (M 16 and 64), results,
 * winners and a reference baseline. */
static void make_db(const char *path, const char *device, const char *nvrtc, const char *shard, const res *r, int nr,
                    const win *w, int nw, double ref_us) {
  at_store *s;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  at_run_info info = {"space.yaml", "hash", "gemm_a8w8_blockscale", "T", "sm_90a", nvrtc, "autotune space.yaml", shard};
  int64_t run = 0, var = 0, dev = 0;
  CHECK_EQ_INT(at_store_begin_run(s, &info, &run), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", "mma", "mma", "t.cuh", "k<X>", "src1", run, &var), AT_OK);
  at_device_row d = {device, "sm_90a", "GPU-1", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  CHECK_EQ_INT(at_store_device(s, &d, &dev), AT_OK);
  for (int i = 0; i < nr; i++) {
    at_cand_row c = {.compile_key = r[i].key, .variant_id = var, .params = r[i].key, .name_expr = r[i].key,
                     .arch = "sm_90a", .ok = 1, .regs = 128, .threads = 128, .run_id = run};
    at_cand_row found;
    int have = 0;
    int64_t cid = 0, pid = 0;
    CHECK_EQ_INT(at_store_find_candidate(s, r[i].key, &found, &have), AT_OK);
    if (have)
      cid = found.id;
    else
      CHECK_EQ_INT(at_store_put_candidate(s, &c, &cid), AT_OK);
    CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "T", r[i].m, 1024, 512, &pid), AT_OK);
    at_result_row x = {.candidate_id = cid, .problem_id = pid, .device_id = dev, .run_id = run, .status = r[i].status,
                       .time_us = r[i].us, .time_min_us = r[i].us, .time_max_us = r[i].us, .samples = 10,
                       .max_abs_err = 0, .check_ratio = 0.5, .message = ""};
    CHECK_EQ_INT(at_store_put_result(s, &x), AT_OK);
    if (r[i].retime > 0) CHECK_EQ_INT(at_store_set_retime(s, cid, pid, dev, r[i].retime), AT_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE results SET created='%s' WHERE candidate_id=%lld AND problem_id=%lld", r[i].created,
             (long long)cid, (long long)pid);
    CHECK_EQ_INT(at_store_exec(s, sql), AT_OK);
    if (ref_us > 0) CHECK_EQ_INT(at_store_put_baseline(s, pid, dev, run, "cublas_fp32_reference", ref_us), AT_OK);
  }
  for (int i = 0; i < nw; i++) {
    at_cand_row found;
    int have = 0;
    int64_t pid = 0;
    CHECK_EQ_INT(at_store_find_candidate(s, w[i].key, &found, &have), AT_OK);
    int64_t cid = found.id;
    CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "T", w[i].m, 1024, 512, &pid), AT_OK);
    CHECK_EQ_INT(at_store_put_winner(s, pid, dev, cid, w[i].us, run), AT_OK);
  }
  CHECK_EQ_INT(at_store_end_run(s, run, "done"), AT_OK);
  /* Runs of one test start within a second: their order is said here. */
  char sql[160];
  snprintf(sql, sizeof sql, "UPDATE runs SET started='%s' WHERE id=%lld", r[0].created, (long long)run);
  CHECK_EQ_INT(at_store_exec(s, sql), AT_OK);
  at_store_close(s);
}

static const char *H100 = "NVIDIA H100 80GB HBM3";

/* Shard A decided k2 at M=16 and k1 at M=64; shard B holds k3 and a newer measurement of k2 that
 * now fails its check: merged, k3 wins both (k2 has no ok result any more; 15 < 20 at M=64). */
static void make_ab(const char *a, const char *b) {
  res ra[] = {{"k1", 16, "ok", 10, 10, "2026-01-01T00:00:00Z"},
              {"k2", 16, "ok", 8, 9, "2026-01-01T00:00:01Z"},
              {"k1", 64, "ok", 20, 20, "2026-01-01T00:00:02Z"}};
  win wa[] = {{16, "k2", 9}, {64, "k1", 20}};
  res rb[] = {{"k3", 16, "ok", 9.5, 9.5, "2026-01-02T00:00:00Z"},
              {"k2", 16, "wrong", 0, 0, "2026-01-02T00:00:01Z"},
              {"k3", 64, "ok", 15, 15, "2026-01-02T00:00:02Z"}};
  win wb[] = {{16, "k3", 9.5}, {64, "k3", 15}};
  make_db(a, H100, "12.8", "1/2", ra, 3, wa, 2, 30);
  make_db(b, H100, "12.8", "2/2", rb, 3, wb, 2, 31);
}

static void merge_rules(void) {
  char *a = tmp("a.db"), *b = tmp("b.db"), *ab = tmp("ab.db"), *ba = tmp("ba.db");
  make_ab(a, b);
  CHECK_EQ_INT(RUN("merge", "--db", ab, a, b), 0);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "1 (candidate, shape) measured in more than one run, 1 of them with different outcomes");
  free(o);
  CHECK_EQ_INT(RUN("merge", "--db", ba, b, a), 0);
  char *cab = content(ab), *cba = content(ba);
  CHECK(same_text(cba, cab)); /* order-independent */
  CHECK_EQ_INT(RUN("merge", "--db", ab, a, b), 0);
  char *again = content(ab);
  CHECK(same_text(again, cab)); /* idempotent */
  CHECK_EQ_INT(RUN("merge", "--db", ab, b), 0);
  free(again);
  again = content(ab);
  CHECK(same_text(again, cab)); /* an input already in: nothing changes */

  char *w = dbq_dump(ab, "SELECT p.m, c.compile_key, w.time_us, r.shard FROM winners w JOIN problems p ON p.id = w.problem_id"
                         " JOIN candidates c ON c.id = w.candidate_id JOIN runs r ON r.id = w.run_id ORDER BY p.m");
  CHECK(same_text(w, "16|k3|9.5|2/2\n64|k3|15.0|2/2\n"));
  /* The newest result of (k2, M=16) is kept, with its run, and the run says which DB it came from. */
  char *real_b = realpath(b, NULL);
  char *want = at_xasprintf("wrong|2/2|%s\n", real_b);
  char *prov = dbq_dump(ab, "SELECT x.status, r.shard, s.db FROM results x JOIN candidates c ON c.id = x.candidate_id"
                            " JOIN problems p ON p.id = x.problem_id JOIN runs r ON r.id = x.run_id"
                            " JOIN run_sources s ON s.run_id = r.id WHERE c.compile_key = 'k2' AND p.m = 16");
  CHECK(same_text(prov, want));
  char *counts = dbq_dump(ab, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM candidates),"
                              " (SELECT count(*) FROM results), (SELECT count(*) FROM run_sources)");
  CHECK(same_text(counts, "2|3|5|2\n"));
  /* The merged DB is what export reads: the winners are its configs. */
  char *base = dbq_dump(ab, "SELECT b.time_us FROM baselines b JOIN problems p ON p.id = b.problem_id ORDER BY p.m");
  CHECK(same_text(base, "31.0\n31.0\n")); /* the newest run's reference */
  free(w), free(real_b), free(want), free(prov), free(counts), free(base), free(again);
  free(cab), free(cba);
  free(a), free(b), free(ab), free(ba);
}

static void merge_refusals(void) {
  char *a = tmp("ra.db"), *b = tmp("rb.db"), *other = tmp("a100.db"), *chain = tmp("nvrtc.db"), *old = tmp("v2.db");
  char *out = tmp("rout.db");
  make_ab(a, b);
  res r[] = {{"k9", 16, "ok", 5, 5, "2026-01-03T00:00:00Z"}};
  win wn[] = {{16, "k9", 5}};
  make_db(other, "NVIDIA A100-SXM4-80GB", "12.8", NULL, r, 1, wn, 1, 0);
  make_db(chain, H100, "12.4", NULL, r, 1, wn, 1, 0);
  CHECK_EQ_INT(RUN("merge", "--db", out, a, other), 2);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, other);
  CHECK_CONTAINS(o, "device NVIDIA A100-SXM4-80GB (sm_90a)");
  CHECK_CONTAINS(o, "--force");
  free(o);
  CHECK(!at_file_exists(out)); /* refused before anything is written */
  CHECK_EQ_INT(RUN("merge", "--db", out, a, chain), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, chain);
  CHECK_CONTAINS(o, "toolchain");
  free(o);
  copy_file(a, old);
  at_store *s;
  CHECK_EQ_INT(at_store_open(old, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "PRAGMA user_version=2"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(RUN("merge", "--db", out, old), 2);
  o = proc_output(TMP);
  CHECK_CONTAINS(o, old);
  CHECK_CONTAINS(o, "schema version 2");
  free(o);
  CHECK(!at_file_exists(out));
  CHECK_EQ_INT(RUN("merge", "--db", out, "--force", a, other, chain), 0);
  CHECK_EQ_INT(RUN("merge", "--db", out, a, a), 2);   /* named twice */
  CHECK_EQ_INT(RUN("merge", "--db", out, out), 2);    /* the output as an input */
  CHECK_EQ_INT(RUN("merge", "--db", out), 2);         /* no input */
  CHECK_EQ_INT(RUN("merge", a, b), 2);                /* no --db */
  CHECK_EQ_INT(RUN("merge", "--db", out, "/nonexistent.db"), 2);
  CHECK_EQ_INT(RUN("merge", "--bogus"), 2);

  /* A version 1 DB (before uids), merged with --force: its rows come over, its run gets a uid. */
  char *v1 = tmp("v1.db"), *v1out = tmp("v1out.db"), *sqlpath = at_path_join(DATA, "db/store_v1.sql");
  char *sql = slurp(sqlpath);
  sqlite3 *h;
  CHECK_EQ_INT(sqlite3_open(v1, &h), SQLITE_OK);
  CHECK_EQ_INT(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
  CHECK_EQ_INT(RUN("merge", "--db", v1out, v1), 2);
  CHECK_EQ_INT(RUN("merge", "--db", v1out, "--force", v1), 0);
  char *n = dbq_dump(v1out, "SELECT (SELECT count(*) FROM results) = (SELECT count(*) FROM results), count(*),"
                            " min(uid LIKE 'legacy:%') FROM runs");
  CHECK(same_text(n, "1|1|1\n"));
  char *v1c = content(v1out);
  CHECK_EQ_INT(RUN("merge", "--db", v1out, "--force", v1), 0);
  char *v1c2 = content(v1out);
  CHECK(same_text(v1c2, v1c));
  free(n), free(v1c), free(v1c2), free(sql), free(sqlpath), free(v1), free(v1out);
  free(a), free(b), free(other), free(chain), free(old), free(out);
}

/* A merge that fails in its transaction (an input holding a NULL that the schema forbids) leaves
 * an existing output as it was, and leaves no output where there was none. */
static void merge_fails_whole(void) {
  char *a = tmp("fa.db"), *b = tmp("fb.db"), *bad = tmp("fbad.db"), *out = tmp("fout.db"), *fresh = tmp("ffresh.db");
  make_ab(a, b);
  res r[] = {{"k7", 16, "ok", 5, 5, "2026-01-03T00:00:00Z"}};
  make_db(bad, H100, "12.8", NULL, r, 1, NULL, 0, 0);
  dbq_drop_not_null(bad);
  at_store *s;
  CHECK_EQ_INT(at_store_open(bad, &s), AT_OK);
  CHECK_EQ_INT(at_store_exec(s, "UPDATE results SET status=NULL"), AT_OK);
  at_store_close(s);
  CHECK_EQ_INT(RUN("merge", "--db", out, a), 0);
  char *before = content(out);
  CHECK_EQ_INT(RUN("merge", "--db", out, b, bad), 1);
  char *o = proc_output(TMP);
  CHECK_CONTAINS(o, "NOT NULL");
  free(o);
  char *after = content(out);
  CHECK(same_text(after, before));
  CHECK_EQ_INT(RUN("merge", "--db", fresh, b, bad), 1);
  CHECK(!at_file_exists(fresh));
  free(before), free(after);
  free(a), free(b), free(bad), free(out), free(fresh);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  /* For test_slurm.sh: do two DBs hold the same candidates? */
  if (argc == 5 && strcmp(argv[2], "--same-candidates") == 0) {
    char *a = dbq_dump(argv[3], CANDIDATES_SQL), *b = dbq_dump(argv[4], CANDIDATES_SQL);
    int same = a[0] && same_text(b, a);
    free(a), free(b);
    return same ? 0 : 1;
  }
  TMP = scratch_dir("cluster");
  DATA = getenv("AT_TEST_DATA");
  char *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);
  deal_of("spaces/tiny.yaml");
  deal_of("spaces/enum.yaml");
  deal_of("spaces/launch.yaml"); /* 8 candidates, 2 kernels */
  deal_of("../../search_spaces/a8w8_blockscale.yaml"); /* the shipped space: kernels of 2 to 6 candidates */
  bad_shards();
  shard_then_merge(3);
  shard_then_merge(8);
  merge_rules();
  merge_refusals();
  merge_fails_whole();
  free(cache);
  return check_summary();
}

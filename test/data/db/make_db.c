/* make_db.c: makes test/data/db/v4.db, the DB of the current schema that the `olddb` test reads
 * with every command (old DBs keep working: docs/formats.md, "Opening, schema version"); v3.db, the
 * previous schema's, was made by this program before schema 4 (without the judge run below).
 *
 *   ninja -C build test/make_test_db && build/test/make_test_db build/autotune test/data/db/v4.db
 *
 * The structure is real: a compile-only run of test/data/spaces/report.yaml by the autotune given
 * (candidates with their ptxas figures, variants, pruning counts), then a second run written through
 * the store's own functions (core/store.h) as the tuner writes one: an H100's device row and
 * measured peaks, a result for every (candidate, shape) with every status, the leaders re-timed,
 * winners, the cuBLAS reference and the vendor baseline; then a judge run (`autotune judge`) on the
 * first two shapes: their leaders' launched times, and on the first shape the second leader made the
 * winner as launched. The times are made up, from a simple model
 * of the tiles and waves (deterministic, not measured), and the messages say so. Run it again only
 * when the schema changes: the file then keeps the previous version for the test, under a new name. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../unit/proc.h"
#include "core/jit.h"
#include "core/occupancy.h"
#include "core/space.h"
#include "core/store.h"
#include "core/util.h"

static int die(const char *what) {
  fprintf(stderr, "make_db: %s: %s\n", what, at_errmsg());
  exit(1);
}

static int64_t param(const char *json, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *p = strstr(json, key);
  return p ? atoll(p + strlen(key)) : 0;
}

/* A made-up time: the waves of tiles the grid needs, each tile's FP8 work at a rate that grows with
 * BLOCK_M and the pipeline depth, a fixed launch cost, a split-K reduction; +-3% of noise. */
static double model_us(const char *params, const at_shape *s, uint64_t seed) {
  int64_t bm = param(params, "BLOCK_M"), bn = param(params, "BLOCK_N"), st = param(params, "STAGES"),
          sk = param(params, "SPLIT_K");
  double tiles = ceil((double)s->m / bm) * ceil((double)s->n / bn) * sk, waves = ceil(tiles / 132.0);
  double eff = (bm >= 32 ? 0.55 : 0.35) * (st == 2 ? 0.85 : st == 3 ? 1.0 : 0.96) * (bn == 128 ? 1.0 : 0.9);
  double tile_us = 2.0 * bm * bn * ((double)s->k / sk) / (1484e12 / 132 * eff) * 1e6;
  double noise = 1.0 + 0.03 * ((double)(seed * 2654435761u % 2001) / 1000.0 - 1.0);
  return (2.5 + waves * tile_us + (sk > 1 ? 1.5 : 0)) * noise;
}

typedef struct cand {
  int64_t id;
  char params[512];
  int regs;
  int64_t threads, smem;
} cand;

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_db AUTOTUNE_BINARY OUT.db\n");
    return 2;
  }
  const char *exe = argv[1], *out = argv[2];
  char *space_path = at_path_join(getenv("AT_TEST_DATA") ? getenv("AT_TEST_DATA") : "test/data", "spaces/report.yaml");
  for (const char *suffix = ""; suffix; suffix = strcmp(suffix, "") == 0 ? "-wal" : strcmp(suffix, "-wal") == 0 ? "-shm" : NULL) {
    char *p = at_xasprintf("%s%s", out, suffix);
    remove(p);
    free(p);
  }
  char *argv1[] = {(char *)exe, "--compile-only", "--arch", "sm_90a", "--db", (char *)out, space_path, NULL};
  if (proc_run(argv1, NULL, 900) != 0) return die("the compile-only run");

  at_space *space;
  if (at_space_load(space_path, &space)) return die("the space");
  at_store *s;
  if (at_store_open(out, &s)) return die("the DB");
  at_run_info info = {space->path, space->hash, space->op_name, space->tag, "sm_90a", at_nvrtc_version(),
                      "autotune test/data/spaces/report.yaml (times made up by test/data/db/make_db.c)", NULL};
  int64_t run, dev;
  if (at_store_begin_run(s, &info, &run) || at_store_exec(s, "UPDATE variants SET last_run = (SELECT max(id) FROM runs)"))
    return die("the run");
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-00000000-0000-0000-0000-000000000000", "13.0", 90, 132,
                     52428800, 232448, 85520809984LL};
  if (at_store_device(s, &d, &dev) || at_store_run_device(s, run, dev, 1484.6, 2986.1)) return die("the device");

  cand *c = NULL;
  size_t nc = 0;
  sqlite3_stmt *st;
  sqlite3_prepare_v2(at_store_db(s), "SELECT id, params, regs, threads, static_smem + smem_bytes FROM candidates"
                                     " WHERE status = 'ok' ORDER BY id", -1, &st, NULL);
  while (sqlite3_step(st) == SQLITE_ROW) {
    c = at_xrealloc(c, sizeof *c * (nc + 1));
    c[nc].id = sqlite3_column_int64(st, 0);
    snprintf(c[nc].params, sizeof c[nc].params, "%s", (const char *)sqlite3_column_text(st, 1));
    c[nc].regs = sqlite3_column_int(st, 2);
    c[nc].threads = sqlite3_column_int64(st, 3);
    c[nc++].smem = sqlite3_column_int64(st, 4);
  }
  sqlite3_finalize(st);
  at_occ_limits lim;
  at_occ_limits_for_cc(90, &lim);

  for (size_t j = 0; j < space->nshapes; j++) {
    const at_shape *sh = &space->shapes[j];
    int64_t prob;
    if (at_store_problem(s, space->op_name, space->tag, sh->m, sh->n, sh->k, &prob)) return die("a problem");
    double flops = space->op->flops(sh), bytes = space->op->min_bytes(sh), best = 1e30;
    double floor_s = fmax(flops / 1484.6e12, bytes / 2986.1e9);
    double *t = at_xcalloc(nc, sizeof *t);
    for (size_t i = 0; i < nc; i++) {
      at_result_row r = {c[i].id, prob, dev, run, "ok", 0};
      r.sets = 8;
      r.seed = (int64_t)space->seed;
      r.check_ratio = -1;
      int64_t bm = param(c[i].params, "BLOCK_M"), bn = param(c[i].params, "BLOCK_N"), stg = param(c[i].params, "STAGES"),
              sk = param(c[i].params, "SPLIT_K");
      /* One candidate of each failing kind, where a tuner could meet it. */
      if (bm == 32 && bn == 128 && stg == 4) {
        r.status = "resources";
        r.message = "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE (made up for this test DB)";
      } else if (bm == 16 && bn == 64 && stg == 2 && sk == 2 && sh->m == 512) {
        r.status = "wrong", r.bad_count = 12, r.first_bad = 4097, r.max_abs_err = 0.5, r.check_ratio = 3.5;
        r.message = "first run: 12 of 524288 elements out of tolerance (made up for this test DB)";
      } else if (bm == 16 && bn == 128 && stg == 4 && sk == 2 && sh->n == 2048 && sh->m == 128) {
        r.status = "fault";
        r.message = "worker died (killed by signal 11) (made up for this test DB)";
      } else if (bm == 32 && bn == 64 && stg == 2 && sh->m == 16 && sh->n == 1024) {
        r.status = "timeout";
        r.message = "no reply within 10 s (made up for this test DB)";
      } else {
        r.time_us = t[i] = model_us(c[i].params, sh, (uint64_t)(c[i].id * 7919 + prob));
        r.time_min_us = r.time_us * 0.99, r.time_max_us = r.time_us * 1.04;
        r.samples = 10, r.check_ratio = 0.05 + 0.01 * (double)(c[i].id % 7), r.max_abs_err = 0.002, r.first_bad = -1;
        r.message = "";
        if (best < 1e30 && r.time_us > 1.5 * best) r.samples = 3, r.cut = 1; /* the tuner's early cut */
        if (r.time_us < best) best = r.time_us;
        r.tflops = flops / (r.time_us * 1e-6) / 1e12, r.gbs = bytes / (r.time_us * 1e-6) / 1e9;
        r.roofline_pct = 100.0 * floor_s / (r.time_us * 1e-6);
        at_occupancy o;
        at_occupancy_of(&lim, c[i].threads, c[i].regs, c[i].smem, &o);
        r.occupancy = o.blocks_per_sm;
      }
      if (at_store_put_result(s, &r)) return die("a result");
    }
    /* The three fastest re-timed side by side; the fastest after that wins. */
    int64_t win = -1;
    double win_us = 1e30;
    for (int lead = 0; lead < 3; lead++) {
      size_t k = nc;
      for (size_t i = 0; i < nc; i++)
        if (t[i] > 0 && (k == nc || t[i] < t[k])) k = i;
      if (k == nc) break;
      double re = t[k] * (lead == 1 ? 0.985 : 1.01);
      if (at_store_set_retime(s, c[k].id, prob, dev, re)) return die("a re-time");
      if (re < win_us) win_us = re, win = c[k].id;
      t[k] = -1;
    }
    if (at_store_put_winner(s, prob, dev, win, win_us, run) ||
        at_store_put_baseline(s, prob, dev, run, "cublas_fp32_reference", 2.5 * win_us + 4.0) ||
        at_store_put_baseline_checked(s, prob, dev, run, "cublaslt_blockscale_fp8", win_us * (j % 2 ? 0.92 : 1.08), 0.12))
      return die("a winner or a baseline");
    free(t);
  }
  if (at_store_end_run(s, run, "done")) return die("the run's end");

  /* The judge run: the three fastest of each of the first two shapes launched; on shape 0 the
   * second is 3% faster as launched than the winner and takes its place, on shape 1 the winner stays. */
  info.command = "autotune judge test/data/spaces/report.yaml (times made up by test/data/db/make_db.c)";
  if (at_store_begin_run(s, &info, &run)) return die("the judge run");
  for (size_t j = 0; j < 2 && j < space->nshapes; j++) {
    const at_shape *sh = &space->shapes[j];
    at_tuned_row *ls = NULL;
    size_t nl = 0, k = 0;
    int64_t prob;
    if (at_store_tuned_rows(s, space->op_name, space->tag, dev, sh->n, sh->k, &ls, &nl) ||
        at_store_problem(s, space->op_name, space->tag, sh->m, sh->n, sh->k, &prob))
      return die("the leaders");
    for (size_t i = 0; i < nl; i++) /* this M's, fastest first (insertion: a few dozen rows) */
      if (ls[i].m == sh->m) {
        at_tuned_row r = ls[i];
        size_t at = k++;
        for (; at > 0 && ls[at - 1].time_us > r.time_us; at--) ls[at] = ls[at - 1];
        ls[at] = r;
      }
    if (k < 3) return die("the leaders");
    at_launch_row rows[3];
    int w = -1;
    for (int i = 0; i < 3; i++) {
      double us = ls[i].time_us * (i == 1 && j == 0 ? 0.95 : 0.98);
      rows[i] = (at_launch_row){ls[i].candidate_id, prob, dev, run, "ok", us, us * 0.99, us * 1.03, 10, 0.05,
                                "gemm_a8w8_blockscale_mma<...> (made up for this test DB)", ""};
      if (ls[i].winner) w = i;
    }
    if (w < 0) return die("a winner among the leaders");
    if (j == 0) w = 1;
    int rc = at_store_put_judgement(s, rows, 3, ls[w].candidate_id, ls[w].alone_us); /* winners keep times alone */
    free(ls);
    if (rc) return die("a judgement");
  }
  if (at_store_end_run(s, run, "done")) return die("the judge run's end");
  /* One plain file: no -wal beside it (the tuner sets WAL again when it opens it for writing). */
  if (at_store_exec(s, "PRAGMA journal_mode=DELETE; VACUUM;")) return die("the vacuum");
  at_store_close(s);
  at_space_free(space);
  free(c);
  free(space_path);
  printf("wrote %s\n", out);
  return 0;
}

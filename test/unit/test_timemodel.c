/* test_timemodel.c: the time model for the (N, K) nobody tuned (core/timemodel.h) and its use
 * (argv[1] is the autotune binary):
 *  - a fit recovers the coefficients of times made by them, and refuses too few rows or a time <= 0;
 *  - the answer of an (N, K) takes, per M of its grid, the config of least predicted time (a narrow
 *    tile at M = 16, a wide one at M = 4096, where the narrow one needs 32 waves);
 *  - at M = 512 the runtime's tail is composed into the predictions (a config whose last wave the
 *    tail rescues beats one wave of wider tiles there; at other M, and for a runtime without the
 *    tail, the predictions are as measured alone), and no tile of more than max(64, 2 M) rows is
 *    picked; the lookup of an (N, K) with no file composes it;
 *  - a model file is written and read back the same; a malformed one is refused naming what is wrong;
 *  - the lookup: an (N, K) with its own file takes the file; one without takes the model up to
 *    M = 2048 and the default file above; the model alone without a default file; a corrupt model
 *    is skipped with a warning (the default file and the nearest file answer as before);
 *  - `autotune model` fits a DB's results (configs measured on too few shapes left out) and refuses
 *    bad arguments with exit code 2;
 *  - with the committed models, the answer of an (N, K) (which prepares each config's geometry and
 *    the fit shapes' logarithms once) holds at every M the config at_tm_best picks there alone. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/json.h"
#include "core/lookup.h"
#include "core/op.h"
#include "core/store.h"
#include "core/timemodel.h"
#include "core/util.h"
#include "ops/gemm_a8w8_blockscale_tail.h"
#include "check.h"
#include "proc.h"

static const char *EXE;
static char *TMP;

static int run_cli(const char *out, ...) {
  va_list ap;
  va_start(ap, out);
  int rc = proc_run_va(EXE, out, 60, ap);
  va_end(ap);
  return rc;
}
static const char *ENTRY =
    "gemm_a8w8_blockscale_mma<BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES, GROUP_M, SPLIT_K, B_HINT>";

static at_config mma_config(int bm, int bn) {
  at_config c;
  memset(&c, 0, sizeof c);
  snprintf(c.variant, sizeof c.variant, "mma");
  snprintf(c.family, sizeof c.family, "mma");
  snprintf(c.template_name, sizeof c.template_name, "gemm_a8w8_blockscale_mma.cuh");
  snprintf(c.entry, sizeof c.entry, "%s", ENTRY);
  char params[256];
  snprintf(params, sizeof params,
           "{\"BLOCK_K\":128,\"BLOCK_M\":%d,\"BLOCK_N\":%d,\"B_HINT\":0,\"GROUP_M\":1,\"SPLIT_K\":1,\"STAGES\":2,"
           "\"WARPS_M\":1,\"WARPS_N\":2}",
           bm, bn);
  CHECK_EQ_INT(at_config_set_params(&c, params), AT_OK);
  c.valid = 1;
  return c;
}

static int64_t block_m_of(const at_config *c) {
  CHECK(c != NULL); /* a lookup that answers nothing fails here instead of crashing */
  for (int i = 0; c && i < c->nparams; i++)
    if (!strcmp(c->names[i], "BLOCK_M")) return c->values[i];
  return -1;
}

static int64_t block_n_of(const at_config *c) {
  CHECK(c != NULL);
  for (int i = 0; c && i < c->nparams; i++)
    if (!strcmp(c->names[i], "BLOCK_N")) return c->values[i];
  return -1;
}

static const int64_t MS[] = {1, 16, 64, 128, 512, 2048, 4096, 8192};
static const int64_t NKS[][2] = {{1024, 1024}, {4096, 4096}, {28672, 4096}, {576, 7168}, {7168, 2048}};
/* The test's 40 shapes, in the order every fit here stores and reads them: shape i is M = MS[i % NM]
 * of the (N, K) NKS[i / NM]. */
enum { NM = sizeof MS / sizeof MS[0], NSHAPES = NM * (sizeof NKS / sizeof NKS[0]) };
typedef struct syn_shape {
  int64_t m, n, k;
} syn_shape;
static syn_shape syn(int i) { return (syn_shape){MS[i % NM], NKS[i / NM][0], NKS[i / NM][1]}; }

static double model_time(const at_config *c, const double coef[AT_TM_NF], int64_t m, int64_t n, int64_t k) {
  double f[AT_TM_NF], t = 0;
  CHECK_EQ_INT(at_tm_features(c, m, n, k, 132, f), 0);
  for (int i = 0; i < AT_TM_NF; i++) t += coef[i] * f[i];
  return t;
}

static void fit_recovers(void) {
  at_config c = mma_config(128, 128);
  const double truth[AT_TM_NF] = {3.0, 0.05, 0.4, 0.02, 0.7, 0.01};
  /* The test's shapes, and each again with one k-block more (K / 128 not a multiple of 8). */
  double x[2 * NSHAPES][AT_TM_NF], t[2 * NSHAPES];
  int rows = 0;
  for (; rows < 2 * NSHAPES; rows++) {
    const syn_shape q = syn(rows % NSHAPES);
    const int64_t k = q.k + (rows < NSHAPES ? 0 : 128);
    CHECK_EQ_INT(at_tm_features(&c, q.m, q.n, k, 132, x[rows]), 0);
    t[rows] = model_time(&c, truth, q.m, q.n, k);
  }
  double coef[AT_TM_NF], rms = 1;
  CHECK_EQ_INT(at_tm_fit((const double(*)[AT_TM_NF])x, t, rows, coef, &rms), AT_OK);
  for (int i = 0; i < AT_TM_NF; i++) CHECK(fabs(coef[i] - truth[i]) <= 1e-4 * fabs(truth[i]));
  CHECK(rms < 1e-5);
  CHECK_EQ_INT(at_tm_fit((const double(*)[AT_TM_NF])x, t, 3, coef, &rms), AT_ERR_INPUT);
  t[5] = 0;
  CHECK_EQ_INT(at_tm_fit((const double(*)[AT_TM_NF])x, t, rows, coef, &rms), AT_ERR_INPUT);
  /* Geometry: 4096 x 1024 in 16 x 64 tiles is 4096 tiles, 32 waves of 132, 8 k-blocks each. */
  at_config narrow = mma_config(16, 64);
  double f[AT_TM_NF];
  CHECK_EQ_INT(at_tm_features(&narrow, 4096, 1024, 1024, 132, f), 0);
  CHECK(f[0] == 1 && f[1] == 32 * 8 && fabs(f[2] - (4096.0 * 1024 + 1024.0 * 1024) / 1e6) < 1e-12 && f[3] == 32 * 8 &&
        f[4] == 32 && f[5] == 0);
  /* K / 128 = 9, not a multiple of 8: the sixth feature is the k-blocks again. */
  CHECK_EQ_INT(at_tm_features(&narrow, 4096, 1024, 1152, 132, f), 0);
  CHECK(f[1] == 32 * 9 && f[5] == 32 * 9);
  at_config none;
  memset(&none, 0, sizeof none);
  CHECK_EQ_INT(at_tm_features(&none, 16, 1024, 1024, 132, f), -1); /* no BLOCK_M: no prediction */
}

/* Two configs: 16 x 64 tiles (cheap fixed cost, dear waves) and 128 x 128 (the other way round). */
static at_time_model two_configs(void) {
  at_time_model tm;
  memset(&tm, 0, sizeof tm);
  snprintf(tm.op, sizeof tm.op, "gemm_a8w8_blockscale");
  snprintf(tm.tag, sizeof tm.tag, "SYN");
  snprintf(tm.device, sizeof tm.device, "sm90");
  snprintf(tm.device_name, sizeof tm.device_name, "NVIDIA H100 80GB HBM3");
  snprintf(tm.arch, sizeof tm.arch, "sm_90a");
  tm.sm_count = 132;
  tm.nconfigs = 2;
  tm.fit_shapes = 40;
  tm.configs = calloc(2, sizeof *tm.configs);
  tm.coef = calloc(2, sizeof *tm.coef);
  tm.shapes = calloc(2, sizeof *tm.shapes);
  tm.rel_rms = calloc(2, sizeof *tm.rel_rms);
  tm.configs[0] = mma_config(16, 64);
  tm.configs[1] = mma_config(128, 128);
  const double c0[AT_TM_NF] = {2, 1.0, 0, 0}, c1[AT_TM_NF] = {10, 0.5, 0, 0};
  memcpy(tm.coef[0], c0, sizeof c0);
  memcpy(tm.coef[1], c1, sizeof c1);
  tm.shapes[0] = tm.shapes[1] = 40;
  tm.rel_rms[0] = 0.05, tm.rel_rms[1] = 0.0625;
  return tm;
}

static void answer_picks(void) {
  at_time_model tm = two_configs();
  /* M = 16: 16 tiles, one wave of 8 k-blocks: 2 + 8 against 10 + 0.5 x 8. */
  CHECK(fabs(at_tm_predict(&tm, 0, 16, 1024, 1024, 0) - 10) < 1e-12);
  CHECK(fabs(at_tm_predict(&tm, 1, 16, 1024, 1024, 0) - 14) < 1e-12);
  /* M = 4096: 32 waves against 2 (256 tiles). */
  CHECK(fabs(at_tm_predict(&tm, 0, 4096, 1024, 1024, 0) - 258) < 1e-12);
  CHECK(fabs(at_tm_predict(&tm, 1, 4096, 1024, 1024, 0) - 18) < 1e-12);
  /* On 264 SMs the 256 tiles are one wave. */
  CHECK(fabs(at_tm_predict(&tm, 1, 4096, 1024, 1024, 264) - 14) < 1e-12);
  at_config_set cs;
  at_tm_answer(&tm, NULL, 0, 1024, 1024, 0, &cs);
  CHECK_EQ_INT(cs.nmleq, 46); /* the grid's M: every multiple of 64 from 128 to 2048 among them */
  CHECK(cs.n == 1024 && cs.k == 1024 && !strcmp(cs.tag, "SYN"));
  int e = -1;
  CHECK_EQ_INT(block_m_of(at_config_for_m(&cs, 16, &e)), 16);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&cs, 4096, &e)), 128);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&cs, 100000, &e)), 128); /* beyond the grid: `any` */
  CHECK_EQ_INT(block_m_of(&cs.bucket[AT_BUCKET_ANY]), 128);
  at_tm_free(&tm);
}

static at_config sm90_config(const char *params) {
  at_config c;
  memset(&c, 0, sizeof c);
  snprintf(c.variant, sizeof c.variant, "sm90");
  snprintf(c.family, sizeof c.family, "sm90");
  snprintf(c.template_name, sizeof c.template_name, "gemm_a8w8_blockscale_sm90.cuh");
  snprintf(c.entry, sizeof c.entry, "gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, 0, UNSPLIT, PINGPONG, "
                                     "CLUSTER_M, CLUSTER_N, KPIPE, RESCALE, STORE, CLUSTER_K>");
  CHECK_EQ_INT(at_config_set_params(&c, params), AT_OK);
  c.valid = 1;
  return c;
}

/* Clusters run whole: pairs of 128-row tiles along M at M = 384 are two cluster rows, four CTA rows
 * (the fourth past M still runs), so 4 x 8 = 32 CTAs at N = 1024 where lone 128-row tiles are 24. */
static void cluster_tiles(void) {
  at_config pair = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":128,\"CLUSTER_M\":2,\"CLUSTER_N\":1,\"STAGES\":6}");
  at_config lone = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":128,\"STAGES\":6}");
  double f[AT_TM_NF];
  CHECK_EQ_INT(at_tm_features(&pair, 384, 1024, 1024, 132, f), 0);
  CHECK(f[1] == 8 && f[3] == 8.0 * 32 / 132);
  CHECK_EQ_INT(at_tm_features(&lone, 384, 1024, 1024, 132, f), 0);
  CHECK(f[1] == 8 && f[3] == 8.0 * 24 / 132);
  /* Pairs along N (CLUSTER_N 2) likewise: N = 800 is seven 128-column tiles, eight CTA columns in
   * pairs, so 200 x 800 runs 2 x 8 CTAs (2 x 7 counted tile by tile). */
  at_config npair = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":128,\"CLUSTER_M\":1,\"CLUSTER_N\":2,\"STAGES\":6}");
  CHECK_EQ_INT(at_tm_features(&npair, 200, 800, 1024, 132, f), 0);
  CHECK(f[1] == 8 && f[3] == 8.0 * 16 / 132);
  /* And the waves: 11 x 11 tiles of 128 x 128 are one wave of 121 CTAs alone, and in clusters of
   * four (pairs both ways) 12 x 12 = 144 CTAs, two waves on 132 SMs. */
  CHECK_EQ_INT(at_tm_features(&lone, 128 * 11, 128 * 11, 1024, 132, f), 0);
  CHECK(f[1] == 8 && f[4] == 1);
  at_config quad = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":128,\"CLUSTER_M\":2,\"CLUSTER_N\":2,\"STAGES\":6}");
  CHECK_EQ_INT(at_tm_features(&quad, 128 * 11, 128 * 11, 1024, 132, f), 0);
  CHECK(f[1] == 2 * 8 && f[4] == 2);
  /* Clusters of four take 30 at once on 132 SMs, not 33: 33 tiles of 64 x 64 split four ways
   * (2112 x 7168 at M = 16) are two waves, 30 of them one, with a quarter of the k-blocks each;
   * pairs hold 66, so 33 pairs are one wave. */
  at_config k4 = sm90_config("{\"BLOCK_M\":64,\"BLOCK_N\":64,\"CLUSTER_K\":4,\"KPIPE\":2,\"STAGES\":8}");
  CHECK_EQ_INT(at_tm_features(&k4, 16, 64 * 33, 7168, 132, f), 0);
  CHECK(f[4] == 2 && f[1] == 2 * 14.0 && f[3] == 2 * 14.0 * 120 / 132);
  CHECK_EQ_INT(at_tm_features(&k4, 16, 64 * 30, 7168, 132, f), 0);
  CHECK(f[4] == 1 && f[3] == 14.0 * 120 / 132);
  at_config k2 = sm90_config("{\"BLOCK_M\":64,\"BLOCK_N\":64,\"CLUSTER_K\":2,\"KPIPE\":2,\"STAGES\":8}");
  CHECK_EQ_INT(at_tm_features(&k2, 16, 64 * 33, 7168, 132, f), 0);
  CHECK(f[4] == 1 && f[1] == 28.0);
}

static int parse_model(const char *text, at_time_model *tm) {
  at_json *j = NULL;
  int rc = at_json_parse("m.json", text, strlen(text), &j);
  if (rc == AT_OK) rc = at_tm_from_json("m.json", j, tm);
  at_json_free(j);
  return rc;
}

static void refused(const char *text, const char *what) {
  at_time_model tm;
  CHECK_EQ_INT(parse_model(text, &tm), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), what);
}

/* A model of format `format` with the config `one` (an object open at the end) and n - 1
 * coefficients 1, 2, ... is refused naming n; with n of them it parses into *back. */
static void coef_count(int format, const char *one, int n, at_time_model *back) {
  char head[256], coef[64] = "", buf[4096], want[64];
  snprintf(head, sizeof head,
           "{\"format\": \"autotune-model/%d\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"SYN\", "
           "\"device\": \"sm90\", \"sm_count\": 132, \"configs\": [",
           format);
  int len = 0;
  for (int i = 1; i < n; i++) len += snprintf(coef + len, sizeof coef - len, "%s%d", i > 1 ? ", " : "", i);
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [%s]}]}", head, one, coef);
  snprintf(want, sizeof want, "\"coef\" must be an array of %d numbers", n);
  refused(buf, want);
  snprintf(coef + len, sizeof coef - len, ", %d", n);
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [%s]}]}", head, one, coef);
  CHECK_EQ_INT(parse_model(buf, back), AT_OK);
}

static void json_roundtrip(void) {
  at_time_model tm = two_configs(), back;
  char *text = at_tm_to_json(&tm);
  CHECK_EQ_INT(parse_model(text, &back), AT_OK);
  CHECK_EQ_INT(back.nconfigs, 2);
  CHECK_EQ_INT(back.sm_count, 132);
  CHECK(!strcmp(back.op, tm.op) && !strcmp(back.tag, "SYN") && !strcmp(back.device, "sm90") &&
        !strcmp(back.device_name, tm.device_name) && !strcmp(back.arch, "sm_90a"));
  CHECK_EQ_INT(back.fit_shapes, 40);
  for (int i = 0; i < 2 && back.nconfigs == 2; i++) {
    CHECK(at_config_same(&back.configs[i], &tm.configs[i]));
    for (int k = 0; k < AT_TM_NF; k++) CHECK(back.coef[i][k] == tm.coef[i][k]);
    CHECK_EQ_INT(back.shapes[i], 40);
    CHECK(back.rel_rms[i] == tm.rel_rms[i]);
  }
  at_tm_free(&back);
  /* Malformed files, each refused naming what is wrong. */
  const char *head = "{\"format\": \"autotune-model/1\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"SYN\", "
                     "\"device\": \"sm90\", \"sm_count\": 132, \"configs\": [";
  char one[1024]; /* a config object without its coefficients, open at the end */
  snprintf(one, sizeof one,
           "{\"variant\": \"mma\", \"family\": \"mma\", \"template\": \"gemm_a8w8_blockscale_mma.cuh\", "
           "\"entry\": \"%s\", \"params\": {\"BLOCK_M\": 16, \"BLOCK_N\": 64}",
           ENTRY);
  char buf[8192];
  snprintf(buf, sizeof buf, "%s%s}]}", head, one);
  refused(buf, "\"coef\" must be an array of 4 numbers");
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [1, 2, 3]}]}", head, one);
  refused(buf, "\"coef\" must be an array of 4 numbers");
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [1, 2, 3, \"x\"]}]}", head, one);
  refused(buf, "\"coef\" must be an array of 4 numbers");
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [1, 2, 3, 4]}, %s, \"coef\": [1, 2, 3, 5]}]}", head, one, one);
  refused(buf, "the same config as configs[0]");
  snprintf(buf, sizeof buf, "%s%s, \"coef\": [1, 2, 3, 4]}]}", head, one);
  CHECK_EQ_INT(parse_model(buf, &back), AT_OK); /* the same, well formed: format 1, four coefficients */
  CHECK(back.nconfigs == 1 && back.coef[0][3] == 4 && back.coef[0][4] == 0); /* the fifth taken as 0 */
  at_tm_free(&back);
  /* Format 2 has five. */
  coef_count(2, one, 5, &back);
  CHECK(back.nconfigs == 1 && back.coef[0][4] == 5 && back.coef[0][5] == 0); /* the sixth taken as 0 */
  at_tm_free(&back);
  /* Format 4 has six, and its residuals only with "fit". */
  coef_count(4, one, 6, &back);
  CHECK(back.nconfigs == 1 && back.coef[0][5] == 6 && back.nfit == 0);
  at_tm_free(&back);
  refused("{\"format\": \"autotune-configs/1\"}", "\"format\" is not \"autotune-model/4\"");
  snprintf(buf, sizeof buf, "%s]}", head);
  refused(buf, "\"configs\" must be an array of 1 to");
  refused("{\"format\": \"autotune-model/1\", \"op\": \"x\", \"tag\": \"SYN\", \"device\": \"sm90\", \"configs\": []}",
          "\"sm_count\" must be an integer from 1");
  snprintf(buf, sizeof buf,
           "%s{\"variant\": \"v\", \"family\": \"mma\", \"template\": \"t.cuh\", \"entry\": \"e<X>\", \"params\": {\"X\": 1}, "
           "\"coef\": [1, 2, 3, 4]}]}",
           head);
  refused(buf, "params need BLOCK_M and BLOCK_N");
  free(text);
  at_tm_free(&tm);
}

/* Format 3: the residuals of the fit shapes nearest a shape correct each config's prediction. Two
 * configs, three fit shapes. At M = 16, N = K = 1024 the features say 10 us (16 x 64) against
 * 14 (128 x 128); config 0 ran twice as slow as predicted on the two fit shapes of (1024, 1024) and
 * config 1 as predicted, so the corrected pick is config 1 (20 against 14). A shape whose nearest
 * fit shapes have no residual of config 0 (null) keeps its plain prediction. */
static void residuals(void) {
  at_time_model tm = two_configs();
  tm.nfit = 3;
  tm.fit = calloc(3, sizeof *tm.fit);
  tm.resid = calloc(2 * 3, sizeof *tm.resid);
  const int64_t fit[3][3] = {{16, 1024, 1024}, {64, 1024, 1024}, {8192, 28672, 4096}};
  memcpy(tm.fit, fit, sizeof fit);
  const float l2 = (float)log(2.0);
  const float res[2][3] = {{l2, l2, NAN}, {0, 0, (float)log(0.5)}};
  memcpy(tm.resid, res, sizeof res);
  CHECK(fabs(at_tm_predict_raw(&tm, 0, 16, 1024, 1024, 0) - 10) < 1e-12);
  /* Six nearest: all three shapes; config 0's mean of its two residuals: log 2. */
  CHECK(fabs(at_tm_predict(&tm, 0, 16, 1024, 1024, 0) - 20) < 1e-5);
  /* config 1: (0 + 0 + log 0.5) / 3. */
  CHECK(fabs(at_tm_predict(&tm, 1, 16, 1024, 1024, 0) - 14 * pow(0.5, 1.0 / 3)) < 1e-5);
  CHECK_EQ_INT(at_tm_best(&tm, NULL, 0, 16, 1024, 1024, 0), 1);
  /* As for an unseen (N, K): the residuals of (1024, 1024) left out, config 0 has none left (its
   * third is null): 10 against 14 x 0.5, config 1 again. */
  CHECK_EQ_INT(at_tm_best_unseen(&tm, 16, 1024, 1024, 0), 1);
  tm.resid[5] = 0; /* config 1's on the third shape (config-major: 1 x 3 + 2) */
  CHECK_EQ_INT(at_tm_best_unseen(&tm, 16, 1024, 1024, 0), 0); /* 10 against 14 */
  tm.resid[5] = (float)log(0.5);
  /* More fit shapes than AT_TM_NEAR: only the nearest count. Nine far shapes (M = 8192, N = 28672)
   * with config 0 at 1/4 of its prediction do not reach M = 16, N = 1024 while six nearer ones
   * do: (16 or 64, 1024, 1024) three times each. */
  at_tm_free(&tm);
  tm = two_configs();
  tm.nfit = 15;
  tm.fit = calloc(15, sizeof *tm.fit);
  tm.resid = calloc(2 * 15, sizeof *tm.resid);
  for (int i = 0; i < 15; i++) {
    const int64_t row[3] = {i < 6 ? (i % 2 ? 64 : 16) : 8192, i < 6 ? 1024 : 28672, i < 6 ? 1024 : 4096};
    memcpy(tm.fit[i], row, sizeof row);
    tm.resid[i] = i < 6 ? 0 : (float)log(0.25);
    tm.resid[15 + i] = 0;
  }
  CHECK(fabs(at_tm_predict(&tm, 0, 16, 1024, 1024, 0) - 10) < 1e-9);
  CHECK(fabs(at_tm_predict(&tm, 0, 8192, 28672, 4096, 0) - 0.25 * at_tm_predict_raw(&tm, 0, 8192, 28672, 4096, 0)) <
        1e-6 * at_tm_predict_raw(&tm, 0, 8192, 28672, 4096, 0));
  /* Distance counts K too: six fit shapes that differ from the asked one in K alone (first in the
   * fit's order, which wins ties) and six at the asked shape itself. */
  {
    at_time_model k6 = two_configs();
    k6.nfit = 12;
    k6.fit = calloc(12, sizeof *k6.fit);
    k6.resid = calloc(2 * 12, sizeof *k6.resid);
    for (int i = 0; i < 12; i++) {
      const int64_t row[3] = {16, 1024, i < 6 ? 65536 : 1024};
      memcpy(k6.fit[i], row, sizeof row);
      k6.resid[i] = i < 6 ? (float)log(2.0) : 0;
    }
    CHECK(fabs(at_tm_predict(&k6, 0, 16, 1024, 1024, 0) - 10) < 1e-9);
    const double raw = at_tm_predict_raw(&k6, 0, 16, 1024, 65536, 0);
    CHECK(fabs(at_tm_predict(&k6, 0, 16, 1024, 65536, 0) - 2 * raw) < 1e-6 * raw);
    at_tm_free(&k6);
  }
  /* Written and read back: format 4, the fit's shapes and every residual (to 3 decimals), nulls kept. */
  tm.resid[3] = NAN;
  char *text = at_tm_to_json(&tm);
  CHECK_CONTAINS(text, "\"format\": \"autotune-model/4\"");
  at_time_model back;
  CHECK_EQ_INT(parse_model(text, &back), AT_OK);
  CHECK_EQ_INT(back.nfit, 15);
  for (int i = 0; i < 15 && back.nfit == 15; i++) {
    CHECK(back.fit[i][0] == tm.fit[i][0] && back.fit[i][1] == tm.fit[i][1] && back.fit[i][2] == tm.fit[i][2]);
    for (int c = 0; c < 2; c++) {
      const float a = tm.resid[c * 15 + i], b = back.resid[c * 15 + i];
      CHECK(isnan(a) ? isnan(b) : fabs(a - b) <= 5e-4);
    }
  }
  at_tm_free(&back);
  free(text);
  at_tm_free(&tm);
  /* Malformed format-3 files: each refused naming what is wrong. */
  char one[1024], buf[4096];
  snprintf(one, sizeof one,
           "{\"variant\": \"mma\", \"family\": \"mma\", \"template\": \"gemm_a8w8_blockscale_mma.cuh\", "
           "\"entry\": \"%s\", \"params\": {\"BLOCK_M\": 16, \"BLOCK_N\": 64}, \"coef\": [1, 2, 3, 4, 5]",
           ENTRY);
  const char *head = "{\"format\": \"autotune-model/3\", \"op\": \"gemm_a8w8_blockscale\", \"tag\": \"SYN\", "
                     "\"device\": \"sm90\", \"sm_count\": 132, ";
  static const struct {
    const char *fit, *resid, *what; /* the file's "fit" member and a config's "resid" member */
  } BAD[] = {
      {"", ", \"resid\": [0]", "\"fit\" must be an array of 1 to"},
      {"\"fit\": [[16, 1024]], ", ", \"resid\": [0]", "\"fit\"[0] must be [M, N, K]"},
      {"\"fit\": [[16, 1024, 0.5]], ", ", \"resid\": [0]", "\"fit\"[0] must be [M, N, K]"},
      {"\"fit\": [[16, 1024, 1024]], ", "", "\"resid\" must be an array of 1 numbers or nulls"},
      {"\"fit\": [[16, 1024, 1024]], ", ", \"resid\": [0, 0]", "\"resid\" must be an array of 1 numbers or nulls"},
      {"\"fit\": [[16, 1024, 1024]], ", ", \"resid\": [\"x\"]", "\"resid\"[0] must be a number from -10 to 10, or null"},
      {"\"fit\": [[16, 1024, 1024]], ", ", \"resid\": [11]", "\"resid\"[0] must be a number from -10 to 10, or null"},
  };
  for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
    snprintf(buf, sizeof buf, "%s%s\"configs\": [%s%s}]}", head, BAD[i].fit, one, BAD[i].resid);
    refused(buf, BAD[i].what);
  }
  snprintf(buf, sizeof buf, "%s\"fit\": [[16, 1024, 1024]], \"configs\": [%s, \"resid\": [null]}]}", head, one);
  CHECK_EQ_INT(parse_model(buf, &back), AT_OK);
  CHECK(back.nfit == 1 && isnan(back.resid[0]));
  at_tm_free(&back);
}

static int g_warnings;
static char g_last_warning[1200];
static void count_warning(const char *msg) {
  g_warnings++;
  snprintf(g_last_warning, sizeof g_last_warning, "%s", msg);
}

static void write_text(const char *dir, const char *name, const char *text) {
  char *p = at_path_join(dir, name);
  CHECK_EQ_INT(at_write_file_atomic(p, text, strlen(text)), AT_OK);
  free(p);
}

/* An sm90 config of these parameters (GROUP_M 8, no split, STORE 0). */
static at_config sm90_tile(int bm, int bn, int cm, int cn, int kpipe, int rescale, int stages) {
  char js[400];
  snprintf(js, sizeof js,
           "{\"BLOCK_M\":%d,\"BLOCK_N\":%d,\"CLUSTER_K\":1,\"CLUSTER_M\":%d,\"CLUSTER_N\":%d,\"GROUP_M\":8,"
           "\"KPIPE\":%d,\"PINGPONG\":0,\"RESCALE\":%d,\"SPLIT_K\":1,\"STAGES\":%d,\"STORE\":0,\"UNSPLIT\":1}",
           bm, bn, cm, cn, kpipe, rescale, stages);
  return sm90_config(js);
}

/* A model of two sm90 configs, each with its time per busy SM's k-block (no other term). */
static at_time_model two_sm90(at_config c0, double per_kblock0, at_config c1, double per_kblock1) {
  at_time_model tm = two_configs();
  tm.configs[0] = c0, tm.configs[1] = c1;
  const double k0[AT_TM_NF] = {0, per_kblock0, 0, 0}, k1[AT_TM_NF] = {0, per_kblock1, 0, 0};
  memcpy(tm.coef[0], k0, sizeof k0);
  memcpy(tm.coef[1], k1, sizeof k1);
  return tm;
}

/* The runtime's tail composed in (at_tm_predict_planned) at M = 512 for every config. 128 x 128
 * tiles in clusters of two make 144 tiles at 512 x 4608 (72 clusters on 66 slots: two waves, the
 * second nearly empty), which the tail rescues; 128 x 192 tiles make 96, one wave, nothing to
 * rescue. Alone, the model prefers the one wave; with the plan, the two waves split. */
static void answer_with_plan(void) {
  /* Per busy SM's k-block: 1.2 us at 128 x 192, 0.8 at 128 x 128 (two thirds of its work, faster). */
  at_time_model tm = two_sm90(sm90_tile(128, 192, 1, 1, 1, 1, 5), 1.2, sm90_tile(128, 128, 2, 1, 2, 0, 6), 0.8);
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  CHECK(op != NULL && op->plan_factor != NULL);
  if (!op || !op->plan_factor) return;
  const int64_t n = 4608, k = 18432;
  CHECK(fabs(at_tm_predict(&tm, 0, 512, n, k, 0) - 1.2 * 144) < 1e-9);
  CHECK(fabs(at_tm_predict(&tm, 1, 512, n, k, 0) - 0.8 * 2 * 144) < 1e-9);
  const char *names[AT_MAX_PARAMS];
  const at_params p1 = at_config_params(&tm.configs[1], names);
  const at_shape s512 = {512, n, k};
  const double f = op->plan_factor("sm90", &p1, &s512, 132, 0);
  CHECK(f > 0.5 && f < 0.75); /* the tail's model: the second wave's 6 clusters over the whole GPU */
  CHECK(fabs(at_tm_predict_planned(&tm, op, 1, 512, n, k, 0) - f * at_tm_predict(&tm, 1, 512, n, k, 0)) < 1e-9);
  CHECK(at_tm_predict_planned(&tm, op, 0, 512, n, k, 0) == at_tm_predict(&tm, 0, 512, n, k, 0)); /* one wave */
  CHECK(at_tm_predict_planned(&tm, NULL, 1, 512, n, k, 0) == at_tm_predict(&tm, 1, 512, n, k, 0));
  /* Below M = 512 as measured alone; above it, up to 1024, only a last wave moved to a tail (the
   * plan's AT_PLAN_LAST_WAVE factor: 1 where the tail would take other rows or none). */
  CHECK(at_tm_predict_planned(&tm, op, 1, 384, n, k, 0) == at_tm_predict(&tm, 1, 384, n, k, 0));
  const at_shape s768 = {768, n, k}, s1024 = {1024, n, k};
  CHECK(op->plan_factor("sm90", &p1, &s768, 132, 0) < 1 || op->plan_factor("sm90", &p1, &s1024, 132, 0) < 1);
  CHECK(at_tm_predict_planned(&tm, op, 1, 768, n, k, 0) ==
        at_tm_predict(&tm, 1, 768, n, k, 0) * op->plan_factor("sm90", &p1, &s768, 132, AT_PLAN_LAST_WAVE));
  CHECK(at_tm_predict_planned(&tm, op, 1, 1024, n, k, 0) ==
        at_tm_predict(&tm, 1, 1024, n, k, 0) * op->plan_factor("sm90", &p1, &s1024, 132, AT_PLAN_LAST_WAVE));
  CHECK(op->plan_factor("sm90", &p1, &s1024, 132, AT_PLAN_LAST_WAVE) < 1); /* composed there */
  CHECK_EQ_INT(at_tm_best(&tm, NULL, 0, 512, n, k, 0), 0);
  CHECK_EQ_INT(at_tm_best(&tm, op, 0, 512, n, k, 0), 0); /* a runtime without the tail */
  CHECK_EQ_INT(at_tm_best(&tm, op, 1, 512, n, k, 0), 1);
  /* As the runtime answers, a tile of more than 64 rows is not offered up to M = 64, nor one of
   * more than 2 M rows above (the spaces' block_m_fits, made stricter at M = 64). */
  CHECK_EQ_INT(at_tm_best(&tm, op, 1, 32, n, k, 0), -1);
  CHECK_EQ_INT(at_tm_best(&tm, op, 1, 64, n, k, 0), -1);
  CHECK(at_tm_best(&tm, NULL, 0, 32, n, k, 0) >= 0);
  CHECK(at_tm_best(&tm, NULL, 0, 64, n, k, 0) >= 0);
  CHECK(at_tm_best(&tm, op, 1, 65, n, k, 0) >= 0);
  at_config_set cs;
  at_tm_answer(&tm, op, 1, n, k, 0, &cs);
  int e = -1;
  CHECK_EQ_INT(block_n_of(at_config_for_m(&cs, 512, &e)), 128);
  /* The lookup of an (N, K) with no file composes the plan, unless its caller launches without it. */
  char *dir = at_path_join(TMP, "planned");
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  char *text = at_tm_to_json(&tm);
  write_text(dir, "sm90-GEMM-SYN-model.json", text);
  for (int no_plan = 0; no_plan < 2; no_plan++) {
    at_lookup_result r;
    at_lookup_req q = {"gemm_a8w8_blockscale", "SYN", {"sm90", NULL}, n, k, NULL, dir, count_warning, 0, no_plan};
    CHECK_EQ_INT(at_lookup(&q, &r), AT_OK);
    CHECK_EQ_INT(r.source, AT_SRC_MODEL_FILE);
    CHECK_EQ_INT(block_n_of(at_config_for_m(&r.set, 512, &e)), no_plan ? 192 : 128);
  }
  free(text);
  free(dir);
  at_tm_free(&tm);
}

/* From M = 576 to 1024 the plan is composed for every config but 192-row tiles, and only a last
 * wave moved to a tail launch (timemodel.c, plan_mode; 128 x 256 in place only before session 39):
 * 128 x 256 tiles in pairs along N make 140 tiles at 640 x 7168 (a second wave of 8), which the
 * tail rescues, and 128 x 192 tiles' last wave too; 192 x 192 tiles keep their times measured alone
 * there although their plans split too, and so does a tail by rows (128 x 256 pairs along M at
 * 640 x 16384), and so does any config above M = 1024. */
static void wide_plan_above_512(void) {
  /* Alone, the 128 x 256 tiles a little slower per product: the pick without the plan is 128 x 192. */
  at_time_model tm = two_sm90(sm90_tile(128, 256, 1, 2, 1, 1, 3), 1.1, sm90_tile(128, 192, 1, 1, 1, 1, 4), 0.8);
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  CHECK(op != NULL && op->plan_factor != NULL);
  if (!op || !op->plan_factor) return;
  const char *names[AT_MAX_PARAMS];
  const at_params p0 = at_config_params(&tm.configs[0], names);
  const char *names1[AT_MAX_PARAMS];
  const at_params p1 = at_config_params(&tm.configs[1], names1);
  const int64_t n = 7168, k = 8192;
  const at_shape s640 = {640, n, k};
  const double f = op->plan_factor("sm90", &p0, &s640, 132, AT_PLAN_LAST_WAVE);
  CHECK(f > 0.5 && f < 0.8 && f == op->plan_factor("sm90", &p0, &s640, 132, AT_PLAN_CONFIG));
  CHECK(fabs(at_tm_predict_planned(&tm, op, 0, 640, n, k, 0) - f * at_tm_predict(&tm, 0, 640, n, k, 0)) < 1e-9);
  const double f1 = op->plan_factor("sm90", &p1, &s640, 132, AT_PLAN_LAST_WAVE);
  CHECK(f1 > 0.5 && f1 < 1);
  CHECK(fabs(at_tm_predict_planned(&tm, op, 1, 640, n, k, 0) - f1 * at_tm_predict(&tm, 1, 640, n, k, 0)) < 1e-9);
  /* 192 x 192 tiles (three math warpgroups) whose last wave the tail takes are not composed: at
   * 704 x 8192 x 7168, 43 columns of 4 rows, 40 tiles past the first wave. */
  at_time_model t192 = two_sm90(sm90_tile(192, 192, 1, 1, 1, 1, 3), 1.0, sm90_tile(128, 256, 1, 2, 1, 1, 3), 1.1);
  const char *names3[AT_MAX_PARAMS];
  const at_params p3 = at_config_params(&t192.configs[0], names3);
  const at_shape s704 = {704, 8192, 7168};
  CHECK(op->plan_factor("sm90", &p3, &s704, 132, AT_PLAN_LAST_WAVE) < 1);
  CHECK(at_tm_predict_planned(&t192, op, 0, 704, 8192, 7168, 0) == at_tm_predict(&t192, 0, 704, 8192, 7168, 0));
  at_tm_free(&t192);
  CHECK_EQ_INT(at_tm_best(&tm, op, 0, 640, n, k, 0), 1);
  CHECK_EQ_INT(at_tm_best(&tm, op, 1, 640, n, k, 0), 0);
  /* Above 1024: 1280 x 7168 splits a last wave too, as measured alone all the same. */
  const at_shape s1280 = {1280, n, k};
  CHECK(op->plan_factor("sm90", &p0, &s1280, 132, AT_PLAN_CONFIG) < 1);
  CHECK(at_tm_predict_planned(&tm, op, 0, 1280, n, k, 0) == at_tm_predict(&tm, 0, 1280, n, k, 0));
  /* A tail by rows counts as none in AT_PLAN_LAST_WAVE. */
  at_config rows = sm90_tile(128, 256, 2, 1, 1, 1, 4);
  const char *names2[AT_MAX_PARAMS];
  const at_params p2 = at_config_params(&rows, names2);
  const at_shape s16k = {640, 16384, k};
  at_a8w8_tail t;
  at_a8w8_tail_plan("sm90", &p2, &s16k, 132, 0, &t);
  CHECK(strcmp(at_a8w8_tail_kind(&t), "last rows") == 0);
  CHECK(op->plan_factor("sm90", &p2, &s16k, 132, AT_PLAN_CONFIG) < 1);
  CHECK(op->plan_factor("sm90", &p2, &s16k, 132, AT_PLAN_LAST_WAVE) == 1.0);
  at_tm_free(&tm);
}

static at_lookup_result *ask_as(const char *dir, const char *tag, int sm_count, int64_t n, int64_t k) {
  static at_lookup_result r;
  at_lookup_req q = {"gemm_a8w8_blockscale", tag, {"sm90", NULL}, n, k, NULL, dir, count_warning, sm_count};
  CHECK_EQ_INT(at_lookup(&q, &r), AT_OK);
  return &r;
}

static at_lookup_result *ask(const char *dir, int64_t n, int64_t k) { return ask_as(dir, "SYN", 0, n, k); }

/* An empty default file of tag SYN for sm90, for the lookups below to fill and write. */
static at_config_set syn_default(void) {
  at_config_set def;
  memset(&def, 0, sizeof def);
  snprintf(def.op, sizeof def.op, "gemm_a8w8_blockscale");
  snprintf(def.tag, sizeof def.tag, "SYN");
  snprintf(def.device, sizeof def.device, "sm90");
  return def;
}

/* dir/sm90-GEMM-SYN.json from def, dir/sm90-GEMM-SYN-model.json from tm. */
static void write_syn(const char *dir, const at_config_set *def, const at_time_model *tm) {
  char *text = at_config_set_to_json(def);
  write_text(dir, "sm90-GEMM-SYN.json", text);
  free(text);
  text = at_tm_to_json(tm);
  write_text(dir, "sm90-GEMM-SYN-model.json", text);
  free(text);
}

/* two_configs and a third, 64 x 128 at {1.5, 0.75}: 3 waves of 8 k-blocks at M = 3072 on 1024 x
 * 1024 (19.5 predicted, against 18 for 128 x 128), 4 at 4096 (25.5). */
static at_time_model three_configs(void) {
  at_time_model three = two_configs();
  three.nconfigs = 3;
  three.configs = realloc(three.configs, 3 * sizeof *three.configs);
  three.coef = realloc(three.coef, 3 * sizeof *three.coef);
  three.shapes = realloc(three.shapes, 3 * sizeof *three.shapes);
  three.rel_rms = realloc(three.rel_rms, 3 * sizeof *three.rel_rms);
  three.configs[2] = mma_config(64, 128);
  const double c2[AT_TM_NF] = {1.5, 0.75, 0, 0, 0};
  memcpy(three.coef[2], c2, sizeof c2);
  three.shapes[2] = 40, three.rel_rms[2] = 0.05;
  return three;
}

/* Above M = 2048 the default file answers, unless the model predicts its config there 1.10 times as
 * slow as the model's own pick: the default file's 16 x 64 tiles at M = 4096 (258 predicted
 * against 18 for 128 x 128, answer_picks) give way at the grid M above 2048; a config the model
 * has no prediction for (32 x 64, not on its menu) stays. */
static void model_above(void) {
  char *dir = at_path_join(TMP, "configs_above");
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  at_config_set def = syn_default();
  def.bucket[AT_BUCKET_ANY] = mma_config(32, 64);
  def.nmleq = 2;
  def.mleq_m[0] = 4096, def.mleq[0] = mma_config(16, 64);
  def.mleq_m[1] = 8192, def.mleq[1] = mma_config(32, 64);
  at_time_model tm = two_configs();
  write_syn(dir, &def, &tm);
  at_tm_free(&tm);
  at_lookup_result *r = ask(dir, 1024, 1024);
  int e;
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3000, &e)), 128); /* grid 3072: the model's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4096, &e)), 128); /* overrules the file's 16 x 64 */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 8192, &e)), 32);  /* not on the menu: the file's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 100000, &e)), 32); /* any: the file's */
  for (int i = 1; i < r->set.nmleq; i++) CHECK(r->set.mleq_m[i - 1] < r->set.mleq_m[i]); /* still ascending */
  /* A taken grid M must not carry its pick down over a grid M that was not taken. A third config,
   * 64 x 128 at {1.5, 0.75}, the default file's only entry (M = 8192): 3 waves of 8 k-blocks at
   * M = 3072 (19.5 us predicted, against 18 for the model's 128 x 128: within 1.10, kept), 4 at
   * 4096 (25.5 against 18: taken). M = 3000 keeps 64 x 128; M = 4000 takes 128 x 128. */
  at_config_set def3 = syn_default();
  def3.bucket[AT_BUCKET_ANY] = mma_config(64, 128);
  def3.nmleq = 1;
  def3.mleq_m[0] = 8192, def3.mleq[0] = mma_config(64, 128);
  at_time_model three = three_configs();
  CHECK(fabs(at_tm_predict(&three, 2, 3072, 1024, 1024, 0) - 19.5) < 1e-12);
  CHECK(fabs(at_tm_predict(&three, 2, 4096, 1024, 1024, 0) - 25.5) < 1e-12);
  CHECK(fabs(at_tm_predict(&three, 1, 3072, 1024, 1024, 0) - 18) < 1e-12);
  write_syn(dir, &def3, &three); /* the same path, rewritten: the lookup's parsed copy must not answer */
  at_tm_free(&three);
  r = ask(dir, 1024, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2049, &e)), 64);  /* grid 3072: kept */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3000, &e)), 64);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4000, &e)), 128); /* grid 4096: taken */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 8192, &e)), 128); /* 49.5 against 26: taken */
  for (int i = 1; i < r->set.nmleq; i++) CHECK(r->set.mleq_m[i - 1] < r->set.mleq_m[i]);
  free(dir);
}

/* file written as dir's tuned file for (file->n, file->k), then the lookup of that (N, K). */
/* 128 x 128 tiles in pairs with SCALE_KB (the op's shape parameter) kb, 5 stages: its slots hold
 * whole rows up to K = 4096 (32 k-blocks) beside those stages, not at K = 7168. */
static at_config scale_config(int kb) {
  at_config c = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":128,\"CLUSTER_K\":1,\"CLUSTER_M\":2,\"CLUSTER_N\":1,"
                            "\"GROUP_M\":8,\"KPIPE\":2,\"PINGPONG\":0,\"RESCALE\":0,\"SCALE_KB\":0,\"SPLIT_K\":1,"
                            "\"STAGES\":5,\"STORE\":0,\"UNSPLIT\":1}");
  snprintf(c.variant, sizeof c.variant, "sm90_scales");
  snprintf(c.entry, sizeof c.entry, "gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, 0, UNSPLIT, PINGPONG, "
                                     "CLUSTER_M, CLUSTER_N, KPIPE, RESCALE, STORE, CLUSTER_K, 0, SCALE_KB>");
  for (int i = 0; i < c.nparams; i++)
    if (!strcmp(c.names[i], "SCALE_KB")) c.values[i] = kb;
  return c;
}

static int64_t scale_kb_of(const at_config *c) {
  CHECK(c != NULL);
  for (int i = 0; c && i < c->nparams; i++)
    if (!strcmp(c->names[i], "SCALE_KB")) return c->values[i];
  return -1;
}

/* SCALE_KB follows the shape (op.h, shape_param): a config measured with K / 128 on one K is one
 * config to the model and gets the asked K's value, or 0 (its form without it) where the slots
 * cannot hold it: K / 128 not a multiple of 4, above 128, or beyond the shared memory. */
static void shape_param(void) {
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  CHECK(op != NULL && op->shape_param != NULL && !strcmp(op->shape_param, "SCALE_KB"));
  if (!op) return;
  at_config a = scale_config(16), b = scale_config(32), off = scale_config(0);
  CHECK(!at_config_same_kernel(&a, &b));
  CHECK(at_config_same_but_shape(op, &a, &b));
  CHECK(!at_config_same_but_shape(op, &a, &off));
  CHECK(at_config_same_but_shape(op, &off, &off));
  CHECK(!at_config_same_but_shape(NULL, &a, &b));
  CHECK_EQ_INT(at_config_for_shape(op, &a, 4096, 4096), 1);
  CHECK_EQ_INT(scale_kb_of(&a), 32);
  CHECK_EQ_INT(at_config_for_shape(op, &a, 4096, 1024), 1);
  CHECK_EQ_INT(scale_kb_of(&a), 8);
  at_config c = scale_config(16);
  CHECK_EQ_INT(at_config_for_shape(op, &c, 4096, 1152), 0); /* 9 k-blocks */
  CHECK_EQ_INT(scale_kb_of(&c), 0);
  c = scale_config(16);
  CHECK_EQ_INT(at_config_for_shape(op, &c, 4096, 7168), 0); /* 56 k-blocks: 253 KB of shared memory */
  CHECK_EQ_INT(scale_kb_of(&c), 0);
  c = scale_config(16);
  CHECK_EQ_INT(at_config_for_shape(op, &c, 4096, 132 * 128), 0); /* above the parameter's 128 */
  CHECK_EQ_INT(at_config_for_shape(op, &off, 4096, 4096), 1);     /* nothing to give */
  CHECK_EQ_INT(scale_kb_of(&off), 0);
  at_config m = mma_config(64, 64);
  CHECK_EQ_INT(at_config_for_shape(op, &m, 4096, 1152), 1);

  /* The model's answer: the config with the scales (faster by its coefficients) where it fits,
   * with the asked K's value; the other where it does not. */
  at_time_model tm = two_configs();
  tm.configs[0] = scale_config(16);
  tm.configs[1] = sm90_config("{\"BLOCK_M\":128,\"BLOCK_N\":64,\"STAGES\":6}"); /* told apart by its width */
  const double fast[AT_TM_NF] = {1, 0.9, 0, 0, 0}, slow[AT_TM_NF] = {1, 1.0, 0, 0, 0};
  memcpy(tm.coef[0], fast, sizeof fast);
  memcpy(tm.coef[1], slow, sizeof slow);
  at_config_set cs;
  at_tm_answer(&tm, op, 1, 4096, 4096, 0, &cs);
  int e = -1;
  CHECK_EQ_INT(scale_kb_of(at_config_for_m(&cs, 1024, &e)), 32);
  CHECK_EQ_INT(scale_kb_of(&cs.bucket[AT_BUCKET_ANY]), 32);
  CHECK_EQ_INT(block_n_of(at_config_for_m(&cs, 1024, &e)), 128);
  /* Where its slots cannot hold the scales, the other config (not its own form without them,
   * which its coefficients do not describe). */
  at_tm_answer(&tm, op, 1, 576, 7168, 0, &cs);
  CHECK_EQ_INT(block_n_of(at_config_for_m(&cs, 1024, &e)), 64);
  at_tm_answer(&tm, op, 1, 4096, 1152, 0, &cs);
  CHECK_EQ_INT(block_n_of(at_config_for_m(&cs, 1024, &e)), 64);
  CHECK_EQ_INT(at_tm_best_unseen(&tm, 1024, 576, 7168, 0), 1); /* the fit's regret likewise */
  /* A file's config with another K's value is the model's config all the same. */
  at_config mine = scale_config(8);
  CHECK(fabs(at_tm_predict_config(&tm, &mine, 1024, 4096, 4096, 0) - at_tm_predict(&tm, 0, 1024, 4096, 4096, 0)) < 1e-12);

  /* The lookup without a model: the nearest tuned file's decode entries, made for the asked K. */
  char *dir = at_path_join(TMP, "configs_shape");
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  at_config_set def = syn_default();
  def.bucket[AT_BUCKET_ANY] = scale_config(0);
  char *text = at_config_set_to_json(&def);
  write_text(dir, "sm90-GEMM-SYN.json", text);
  free(text);
  at_config_set near = def;
  near.n = 1024, near.k = 2048;
  near.nmleq = 1;
  near.mleq_m[0] = 16, near.mleq[0] = scale_config(16);
  text = at_config_set_to_json(&near);
  write_text(dir, "sm90-GEMM-SYN-N=1024-K=2048.json", text);
  free(text);
  at_lookup_result *r = ask(dir, 1024, 4096);
  CHECK_EQ_INT(r->source, AT_SRC_DEFAULT_FILE);
  CHECK_EQ_INT(scale_kb_of(at_config_for_m(&r->set, 16, &e)), 32);
  r = ask(dir, 1024, 1152);
  CHECK_EQ_INT(scale_kb_of(at_config_for_m(&r->set, 16, &e)), 0);
  r = ask(dir, 1024, 2048); /* its own file: as tuned */
  CHECK_EQ_INT(r->source, AT_SRC_NK_FILE);
  CHECK_EQ_INT(scale_kb_of(at_config_for_m(&r->set, 16, &e)), 16);
  at_tm_free(&tm);
  free(dir);
}

/* A new menu DB at path, with the H100 the fits below were measured on (its id into *dev) and one
 * variant (its id into *variant). */
static at_store *menu_db(const char *path, const char *variant_name, const char *family, const char *tpl,
                         const char *entry, int64_t *dev, int64_t *variant) {
  at_store *s = NULL;
  CHECK_EQ_INT(at_store_open(path, &s), AT_OK);
  at_device_row d = {"NVIDIA H100 80GB HBM3", "sm_90a", "GPU-x", "13.0", 90, 132, 50 << 20, 232448, 80LL << 30};
  CHECK_EQ_INT(at_store_device(s, &d, dev), AT_OK);
  CHECK_EQ_INT(at_store_variant(s, "gemm_a8w8_blockscale", variant_name, family, tpl, entry, "h", 0, variant), AT_OK);
  return s;
}

/* Config c as a candidate of the DB's variant under compile key `key`; its id. */
static int64_t put_candidate(at_store *s, int64_t variant, const char *key, const at_config *c) {
  char *params = at_config_params_json(c);
  at_cand_row row = {.compile_key = key, .variant_id = variant, .params = params, .name_expr = "x", .arch = "sm_90a", .ok = 1};
  int64_t id = 0;
  CHECK_EQ_INT(at_store_put_candidate(s, &row, &id), AT_OK);
  free(params);
  return id;
}

/* A checked result of candidate cand on problem p: t us. */
static void put_time(at_store *s, int64_t cand, int64_t p, int64_t dev, double t) {
  at_result_row r = {.candidate_id = cand, .problem_id = p, .device_id = dev, .status = "ok", .time_us = t,
                     .samples = 10, .max_abs_err = 0.001};
  CHECK_EQ_INT(at_store_put_result(s, &r), AT_OK);
}

/* What `autotune model` wrote for tag SYN into out: its file parsed into *got (*j: the JSON, which
 * the caller frees). */
static void read_model(const char *out, at_json **j, at_time_model *got) {
  char *p = at_path_join(out, "sm90-GEMM-SYN-model.json");
  *j = NULL;
  CHECK_EQ_INT(at_json_load(p, j), AT_OK);
  CHECK_EQ_INT(at_tm_from_json(p, *j, got), AT_OK);
  free(p);
}

/* Shape i as a problem of the menu DB s: its id. */
static int64_t syn_problem(at_store *s, int i) {
  const syn_shape q = syn(i);
  int64_t p = 0;
  CHECK_EQ_INT(at_store_problem(s, "gemm_a8w8_blockscale", "SYN", q.m, q.n, q.k, &p), AT_OK);
  return p;
}

/* Does the file at path (autotune model's output) contain each of the texts? */
static void log_says(const char *path, const char *a, const char *b) {
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(at_read_file(path, 1 << 20, &text, &len), AT_OK);
  CHECK_CONTAINS(text, a);
  CHECK_CONTAINS(text, b);
  free(text);
}

/* A menu run's DB in which the scale config was measured with SCALE_KB = K / 128 on each shape that
 * can hold it (32 of the 40: not at K = 7168), a candidate per K (three), and the config without it
 * on all: the fit makes one config of the three, whose share counts the 32 shapes only. */
static void fit_shape_param(void) {
  char *db = at_path_join(TMP, "menu_shape.db"), *out = at_path_join(TMP, "models_shape"),
       *log = at_path_join(TMP, "model_shape.txt");
  int64_t dev, variant;
  const at_config proto = scale_config(0);
  at_store *s = menu_db(db, "sm90_scales", "sm90", "/x/gemm_a8w8_blockscale_sm90.cuh", proto.entry, &dev, &variant);
  const double fast[AT_TM_NF] = {2, 0.9, 0.01, 0, 0.5}, slow[AT_TM_NF] = {2, 1.0, 0.01, 0, 0.5};
  int64_t plain_id = 0, n_cand = 0;
  for (int shape = 0; shape < NSHAPES; shape++) {
    const syn_shape q = syn(shape);
    const int64_t p = syn_problem(s, shape);
    for (int with = 0; with < 2; with++) {
      at_config c = scale_config(with ? (int)(q.k / 128) : 0);
      if (with && q.k == 7168) continue; /* the menu's space leaves it out: too much shared memory */
      char key[64];
      snprintf(key, sizeof key, "key-%lld", (long long)(with ? q.k : 0));
      const int64_t id = put_candidate(s, variant, key, &c);
      if (!with) plain_id = id;
      n_cand = id > n_cand ? id : n_cand;
      put_time(s, id, p, dev, model_time(&c, with ? fast : slow, q.m, q.n, q.k));
    }
  }
  at_store_close(s);
  CHECK(plain_id > 0 && n_cand >= 4);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--out", out, (const char *)NULL), 0);
  at_json *j;
  at_time_model got;
  read_model(out, &j, &got);
  CHECK_EQ_INT(got.nconfigs, 2);
  for (int i = 0; i < got.nconfigs; i++) {
    const int with = scale_kb_of(&got.configs[i]) != 0;
    CHECK_EQ_INT(got.shapes[i], with ? 32 : 40);
    for (int k = 0; k < AT_TM_NF; k++) {
      const double want = with ? fast[k] : slow[k];
      CHECK(fabs(got.coef[i][k] - want) <= 1e-4 * (1 + fabs(want)));
    }
  }
  at_tm_free(&got);
  at_json_free(j);
  log_says(log, "2 configs from 72 results on 40 shapes", "costs 1.000x the best time measured");
  free(db), free(out), free(log);
}

static at_lookup_result *ask_tuned(const char *dir, const at_config_set *file) {
  char name[96], *text = at_config_set_to_json(file);
  snprintf(name, sizeof name, "sm90-GEMM-SYN-N=%lld-K=%lld.json", (long long)file->n, (long long)file->k);
  write_text(dir, name, text);
  free(text);
  return ask(dir, file->n, file->k);
}

/* A tuned file's M between its entries above 2048: the entry above answers unless the model
 * predicts its own pick 1.25 times as fast at every multiple of 64 it would answer. The file
 * (1024 x 1024) has 128 x 128 at M = 2048 and 16 x 64 at 8192; at M = 2560 the 16 x 64 tiles make
 * 20 waves of 8 k-blocks (162 predicted) against 2 waves of 128 x 128 (18): the model's 128 x 128
 * from 2049 to 7168, the file's own entries at theirs. A file whose entry above is a config the
 * model has no prediction for (32 x 64) keeps it, and so does one whose entry is the model's pick. */
static void tuned_above(void) {
  char *dir = at_path_join(TMP, "configs_tuned_above");
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  at_config_set file = syn_default();
  file.n = 1024, file.k = 1024;
  file.bucket[AT_BUCKET_ANY] = mma_config(16, 64);
  file.nmleq = 2;
  file.mleq_m[0] = 2048, file.mleq[0] = mma_config(128, 128);
  file.mleq_m[1] = 8192, file.mleq[1] = mma_config(16, 64);
  at_time_model tm = two_configs();
  const at_config_set def = syn_default();
  write_syn(dir, &def, &tm);
  at_lookup_result *r = ask_tuned(dir, &file);
  int e;
  CHECK_EQ_INT(r->source, AT_SRC_NK_FILE);
  CHECK_CONTAINS(r->path, "above 2048 where predicted much faster");
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2048, &e)), 128); /* the file's entry */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2049, &e)), 128); /* the model's, from 2560 */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 5000, &e)), 128);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 7168, &e)), 128);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 7169, &e)), 16);  /* the file's 8192 entry */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 8192, &e)), 16);
  for (int i = 1; i < r->set.nmleq; i++) CHECK(r->set.mleq_m[i - 1] < r->set.mleq_m[i]);
  /* Not on the model's menu: no prediction, kept. */
  file.mleq[1] = mma_config(32, 64);
  r = ask_tuned(dir, &file);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3000, &e)), 32);
  CHECK(strstr(r->path, "where predicted much faster") == NULL);
  /* The model's own pick: nothing to gain, kept. */
  file.mleq[1] = mma_config(128, 128);
  file.mleq[0] = mma_config(16, 64);
  r = ask_tuned(dir, &file);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2048, &e)), 16);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3000, &e)), 128);
  CHECK_EQ_INT(r->set.nmleq, 2);
  /* A point taken above one that is not: the model with a third config, 64 x 128 at {1.5, 0.75},
   * the file's entry at 8192. From 3137 to 4096 its tiles make 4 waves of 8 k-blocks (25.5
   * predicted) against 2 of 128 x 128 (18): 1.42, taken at 4096; at 2560-3136 3 waves (19.5, 1.08):
   * 2560, 3072, 3584 are not, and 3584, which bounds 4096's M, keeps the file's 64 x 128. */
  at_time_model three = three_configs();
  write_syn(dir, &def, &three);
  at_tm_free(&three);
  file.mleq[0] = mma_config(128, 128);
  file.mleq[1] = mma_config(64, 128);
  r = ask_tuned(dir, &file);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2049, &e)), 64);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3584, &e)), 64);  /* bounds 4096's M: the file's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3585, &e)), 128); /* 4096: the model's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4096, &e)), 128);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 8192, &e)), 64);  /* the file's entry */
  for (int i = 1; i < r->set.nmleq; i++) CHECK(r->set.mleq_m[i - 1] < r->set.mleq_m[i]);
  /* The model's pick holds its scales in shared memory (SCALE_KB, measured at K = 2048): taken
   * above 2048 as in the first case, with this file's K / 128. */
  at_time_model scaled = two_configs();
  scaled.configs[1] = scale_config(16);
  write_syn(dir, &def, &scaled);
  at_tm_free(&scaled);
  file.mleq[0] = mma_config(128, 128);
  file.mleq[1] = mma_config(16, 64);
  r = ask_tuned(dir, &file);
  CHECK_CONTAINS(r->path, "above 2048 where predicted much faster");
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 3000, &e)), 128);
  CHECK_EQ_INT(scale_kb_of(at_config_for_m(&r->set, 3000, &e)), 8);
  at_tm_free(&tm);
  free(dir);
}

static void lookup_order(void) {
  char *dir = at_path_join(TMP, "configs");
  CHECK_EQ_INT(at_mkdirs(dir), AT_OK);
  /* The default file: 64-row tiles at M <= 16, 32-row ones above. */
  at_config_set def = syn_default();
  def.bucket[AT_BUCKET_ANY] = mma_config(32, 64);
  def.nmleq = 2;
  def.mleq_m[0] = 16, def.mleq[0] = mma_config(64, 64);
  def.mleq_m[1] = 4096, def.mleq[1] = mma_config(32, 64);
  char *text = at_config_set_to_json(&def);
  write_text(dir, "sm90-GEMM-SYN.json", text);
  free(text);
  at_time_model tm = two_configs();
  text = at_tm_to_json(&tm);
  write_text(dir, "sm90-GEMM-SYN-model.json", text);
  g_warnings = 0;
  at_lookup_result *r = ask(dir, 1024, 1024);
  int e;
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_CONTAINS(r->path, "sm90-GEMM-SYN-model.json (M > 2048: ");
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 16, &e)), 16);    /* the model's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 2048, &e)), 128); /* the model's */
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4096, &e)), 32);  /* the default file's */
  CHECK_EQ_INT(g_warnings, 0); /* the model file is not read as a default file */
  /* The device's own SM count: at M = 128 on 8 SMs the 128 narrow tiles make 16 waves of 8
   * k-blocks (2 + 128) against one wave of the 8 wide ones (10 + 4): the wide ones, where 132 SMs
   * pick the narrow ones (10 against 14). */
  r = ask_as(dir, "SYN", 8, 1024, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 128, &e)), 128);
  r = ask_as(dir, "SYN", 0, 1024, 1024);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 128, &e)), 16);
  /* No tag asked: a default file of another tag, first in name order, must not complete the
   * model of SYN. */
  at_config_set other = def;
  snprintf(other.tag, sizeof other.tag, "A0");
  other.mleq[1] = mma_config(64, 128);
  char *other_text = at_config_set_to_json(&other);
  write_text(dir, "sm90-GEMM-A0.json", other_text);
  free(other_text);
  r = ask_as(dir, NULL, 0, 1024, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_CONTAINS(r->path, "sm90-GEMM-SYN.json");
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4096, &e)), 32); /* SYN's default, not A0's 64 */
  char *a0 = at_path_join(dir, "sm90-GEMM-A0.json");
  remove(a0);
  free(a0);
  /* A model whose own tag is not the one its name says is skipped with a warning. */
  write_text(dir, "sm90-GEMM-XYZ-model.json", text);
  g_warnings = 0;
  r = ask_as(dir, "XYZ", 0, 1024, 1024);
  CHECK(r->source != AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(g_warnings, 1);
  CHECK_CONTAINS(g_last_warning, "is not the one its name says");
  char *xyz = at_path_join(dir, "sm90-GEMM-XYZ-model.json");
  remove(xyz);
  free(xyz);
  /* An (N, K) with its own file: the file. */
  at_config_set own = def;
  own.n = 1024, own.k = 1024;
  own.mleq[0] = mma_config(128, 64);
  char *own_text = at_config_set_to_json(&own);
  write_text(dir, "sm90-GEMM-SYN-N=1024-K=1024.json", own_text);
  free(own_text);
  r = ask(dir, 1024, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_NK_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 16, &e)), 128);
  /* Another (N, K): the model again, not the neighbour's file. */
  r = ask(dir, 2048, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 16, &e)), 16);
  /* A corrupt model: a warning naming it, then the default file with the nearest file below 128. */
  write_text(dir, "sm90-GEMM-SYN-model.json", "{\"format\": \"autotune-model/1\"");
  g_warnings = 0;
  r = ask(dir, 2048, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_DEFAULT_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 16, &e)), 128); /* the nearest file's M_LEQ_16 */
  CHECK_EQ_INT(g_warnings, 1);
  CHECK_CONTAINS(g_last_warning, "sm90-GEMM-SYN-model.json");
  /* The model alone, without a default file: its answer at every M. */
  char *p = at_path_join(dir, "sm90-GEMM-SYN.json");
  remove(p);
  free(p);
  write_text(dir, "sm90-GEMM-SYN-model.json", text);
  r = ask(dir, 2048, 1024);
  CHECK_EQ_INT(r->source, AT_SRC_MODEL_FILE);
  CHECK_EQ_INT(block_m_of(at_config_for_m(&r->set, 4096, &e)), 128);
  free(text);
  at_tm_free(&tm);
  free(dir);
}

/* A DB of a menu run: two configs timed by the model of two_configs() on 40 shapes, a third on
 * half of them only. */
/* log(a / b), callable where a local named log (a path) hides log(). */
static double ln_ratio(double a, double b) { return log(a / b); }
static double third_time(int shape) { return 1000.0 * (1 + 0.1 * (shape % 4)); }

/* --cv leaves each (N, K) out of its fold's fit: 16 x 64 tiles timed at a fifth of their model on
 * 576 x 7168 only. A fit that saw those times (in its coefficients and the residuals near them)
 * picks 16 x 64 at 128 x 576 x 7168; the fold without 576 x 7168 predicts them as on the other
 * weights and picks 128 x 128, slower than the 16 x 64 measured. (The other folds fit those times,
 * which may cost them elsewhere: only this shape is asserted.) */
static void cv_leaves_out(void) {
  char *db = at_path_join(TMP, "menu_cv.db"), *log = at_path_join(TMP, "model_cv.txt");
  int64_t dev, variant, cand[2];
  at_store *s = menu_db(db, "mma", "mma", "/x/gemm_a8w8_blockscale_mma.cuh", ENTRY, &dev, &variant);
  at_time_model tm = two_configs();
  for (int c = 0; c < 2; c++) cand[c] = put_candidate(s, variant, c ? "key-1" : "key-0", &tm.configs[c]);
  for (int shape = 0; shape < NSHAPES; shape++) {
    const syn_shape q = syn(shape);
    const int64_t p = syn_problem(s, shape);
    for (int c = 0; c < 2; c++)
      put_time(s, cand[c], p, dev, model_time(&tm.configs[c], tm.coef[c], q.m, q.n, q.k) * (c == 0 && q.n == 576 ? 0.2 : 1));
  }
  at_store_close(s);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--cv", "--worst", "40", (const char *)NULL), 0);
  char *text = NULL;
  size_t len = 0;
  CHECK_EQ_INT(at_read_file(log, 1 << 20, &text, &len), AT_OK);
  double at_128 = 0; /* 128 x 576 x 7168: 16 x 64 measured 3.3x faster than the fold's pick (128 x 128) */
  for (const char *l = text ? strstr(text, "\n  ") : NULL; l; l = strstr(l + 1, "\n  ")) {
    double q;
    long long m, n, k;
    if (sscanf(l, " %lfx at %lld x %lld x %lld", &q, &m, &n, &k) == 4 && m == 128 && n == 576) at_128 = q;
  }
  CHECK(at_128 > 2); /* a fit that saw those times picks 16 x 64 there: 1.000x */
  free(text);
  at_tm_free(&tm);
  free(db), free(log);
}

static void fit_from_db(void) {
  char *db = at_path_join(TMP, "menu.db"), *out = at_path_join(TMP, "models"), *log = at_path_join(TMP, "model.txt");
  int64_t dev, variant, cand[3];
  at_store *s = menu_db(db, "mma", "mma", "/x/gemm_a8w8_blockscale_mma.cuh", ENTRY, &dev, &variant);
  at_time_model tm = two_configs();
  at_config third = mma_config(64, 128);
  for (int c = 0; c < 3; c++) {
    char key[32];
    snprintf(key, sizeof key, "key-%d", c);
    cand[c] = put_candidate(s, variant, key, c < 2 ? &tm.configs[c] : &third);
  }
  for (int shape = 0; shape < NSHAPES; shape++) {
    const syn_shape q = syn(shape);
    const int64_t p = syn_problem(s, shape);
    for (int c = 0; c < 3; c++) {
      if (c == 2 && shape % 2) continue;
      /* The third: 1000 us times a factor by M, which its features cannot follow exactly. */
      put_time(s, cand[c], p, dev, c < 2 ? model_time(&tm.configs[c], tm.coef[c], q.m, q.n, q.k) : third_time(shape));
    }
  }
  at_store_close(s);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--out", out, (const char *)NULL), 0);
  at_json *j = NULL;
  at_time_model got;
  read_model(out, &j, &got);
  CHECK_EQ_INT(got.nconfigs, 2); /* the third, on 50% of the shapes, is left out */
  CHECK_EQ_INT(got.fit_shapes, 40);
  for (int i = 0; i < got.nconfigs; i++) {
    int c = block_m_of(&got.configs[i]) == 16 ? 0 : 1;
    for (int k = 0; k < AT_TM_NF; k++) CHECK(fabs(got.coef[i][k] - tm.coef[c][k]) <= 1e-4 * (1 + fabs(tm.coef[c][k])));
    CHECK_EQ_INT(got.shapes[i], 40);
  }
  /* Format 3: the 40 shapes, and every residual near 0 (the times are the model's own). */
  CHECK_EQ_INT(got.nfit, 40);
  for (int i = 0; i < got.nconfigs * got.nfit; i++) CHECK(!isnan(got.resid[i]) && fabs(got.resid[i]) <= 1e-3);
  at_tm_free(&got);
  at_json_free(j);
  log_says(log, "2 configs from 80 results on 40 shapes (1 measured on fewer than 90% of them",
           "costs 1.000x the best time measured");
  /* With --min-share 50 the third enters too. */
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--out", out, "--min-share", "50", (const char *)NULL), 0);
  read_model(out, &j, &got);
  CHECK_EQ_INT(got.nconfigs, 3);
  /* The third was measured on every other shape the test stored: null residuals on the others,
   * and log(measured / its fit's own prediction) on those, which its fit cannot make all 0. */
  for (int i = 0; i < got.nconfigs; i++) {
    const int is_third = block_m_of(&got.configs[i]) == 64;
    int nulls = 0, off = 0;
    for (int f = 0; f < got.nfit; f++) {
      const float r = got.resid[i * got.nfit + f];
      int stored = -1; /* the shape's number as the test stored it */
      for (int x = 0; x < NSHAPES; x++)
        if (got.fit[f][0] == syn(x).m && got.fit[f][1] == syn(x).n && got.fit[f][2] == syn(x).k) stored = x;
      CHECK(stored >= 0);
      nulls += isnan(r);
      if (!is_third || stored < 0 || stored % 2) continue;
      const double want = ln_ratio(third_time(stored), at_tm_predict_raw(&got, i, got.fit[f][0], got.fit[f][1], got.fit[f][2], 0));
      CHECK(fabs(r - want) < 6e-4); /* written to 3 decimals */
      off += fabs(want) > 0.01;
    }
    CHECK_EQ_INT(nulls, is_third ? 20 : 0);
    if (is_third) CHECK(off > 0);
  }
  at_tm_free(&got);
  at_json_free(j);
  /* --cv: each of the five (N, K) left out in turn. The times are the two configs' own model, so
   * the fit on the other four recovers it: every pick is the fastest measured, except up to M = 64,
   * where the runtime's rule keeps 128-row tiles out (fits_m in timemodel.c) and 16 x 64 answers
   * where 128 x 128 ran faster. Nothing is written. */
  char *cv_out = at_path_join(TMP, "models_cv");
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--out", cv_out, "--cv", "--worst", "40", (const char *)NULL), 0);
  CHECK(!at_file_exists(cv_out));
  {
    char *text = NULL;
    size_t len = 0;
    CHECK_EQ_INT(at_read_file(log, 1 << 20, &text, &len), AT_OK);
    CHECK_CONTAINS(text, "each of 5 (N, K) left out of the fit in turn");
    CHECK_CONTAINS(text, "(geomean over 40 shapes)");
    int listed = 0, off = 0, off_small = 0;
    for (const char *l = text ? strstr(text, "\n  ") : NULL; l; l = strstr(l + 1, "\n  ")) {
      double q;
      long long m, n, k;
      if (sscanf(l, " %lfx at %lld x %lld x %lld", &q, &m, &n, &k) != 4) continue;
      listed++;
      off += q > 1.0005, off_small += q > 1.0005 && m <= 64;
    }
    CHECK_EQ_INT(listed, 40);
    CHECK(off > 0);
    CHECK_EQ_INT(off_small, off); /* every pick off the fastest is the rule's, at M <= 64 */
    free(text);
  }
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--cv", "--worst", "many", (const char *)NULL), 2);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--out", cv_out, "--worst", "3", (const char *)NULL), 2);
  CHECK(!at_file_exists(cv_out));
  free(cv_out);
  /* Bad arguments: exit 2. */
  char *missing = at_path_join(TMP, "missing.db");
  CHECK_EQ_INT(run_cli(log, "model", "--db", missing, (const char *)NULL), 2);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--min-share", "0", (const char *)NULL), 2);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--min-share", "101", (const char *)NULL), 2);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--device-name", "chip", (const char *)NULL), 2);
  CHECK_EQ_INT(run_cli(log, "model", "--db", db, "--tag", "NONE", "--out", out, (const char *)NULL), 2);
  at_tm_free(&tm);
  free(missing), free(db), free(out), free(log);
}

/* The committed model files' answers against at_tm_best at each of their M: for (N, K) of every
 * shape of weight (narrow, wide, K / 128 not a multiple of 4 or 8, which SCALE_KB configs cannot
 * hold), with and without the plan, with the model's SM count and 114. */
static void answer_is_best_at_each_m(void) {
  static const char *const FILES[] = {"sm90-GEMM-A8W8_BLOCKSCALE-model.json",
                                       "NVIDIA_H200-GEMM-A8W8_BLOCKSCALE-model.json"};
  static const int64_t NK[][2] = {{576, 7168},  {1024, 11008},  {5120, 5120},
                                  {8200, 1408}, {30720, 12288}, {73728, 4608}};
  const at_op *op = at_op_find("gemm_a8w8_blockscale");
  int compared = 0;
  for (size_t f = 0; f < sizeof FILES / sizeof FILES[0]; f++) {
    char *dir = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "configs"), *path = at_path_join(dir, FILES[f]);
    at_json *j = NULL;
    at_time_model tm;
    if (!at_file_exists(path)) {
      fprintf(stderr, "no committed %s: skipping answer_is_best_at_each_m for it\n", FILES[f]);
    } else if (at_json_load(path, &j) == AT_OK && at_tm_from_json(path, j, &tm) == AT_OK) {
      for (size_t i = 0; i < sizeof NK / sizeof NK[0]; i++)
        for (int plan = 0; plan < 2; plan++)
          for (int sms = 0; sms < 2; sms++) {
            const int sm = sms ? 114 : 0;
            at_config_set cs;
            at_tm_answer(&tm, op, plan, NK[i][0], NK[i][1], sm, &cs);
            CHECK(cs.nmleq > 20);
            for (int e = 0; e < cs.nmleq; e++) {
              const int b = at_tm_best(&tm, op, plan, cs.mleq_m[e], NK[i][0], NK[i][1], sm);
              CHECK(b >= 0 && at_config_same_but_shape(op, &cs.mleq[e], &tm.configs[b]));
              compared++;
            }
          }
      at_tm_free(&tm);
    } else {
      CHECK(0); /* a committed model that does not load */
    }
    at_json_free(j);
    free(path), free(dir);
  }
  fprintf(stderr, "answer_is_best_at_each_m: %d entries compared\n", compared);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_timemodel AUTOTUNE_EXE\n");
    return 2;
  }
  EXE = argv[1];
  TMP = scratch_dir("timemodel");
  fit_recovers();
  cluster_tiles();
  answer_picks();
  answer_with_plan();
  wide_plan_above_512();
  json_roundtrip();
  residuals();
  lookup_order();
  model_above();
  tuned_above();
  fit_from_db();
  cv_leaves_out();
  shape_param();
  fit_shape_param();
  answer_is_best_at_each_m();
  return check_summary();
}

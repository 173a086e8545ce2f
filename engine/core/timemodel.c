/* timemodel.c: see timemodel.h. */
#include "timemodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

/* The M of the per-M entries of an answer: dense where the tile count changes fastest, and from 128
 * to 2048 (where the lookup takes the model's answer) every multiple of 64, where every tile's count
 * changes (all BLOCK_M x CLUSTER_M are multiples of 64): an M between two entries then has the
 * tiles of the one above, so the answer is the model's pick for its own tile counts. (Session 17,
 * H100, docs/perf.md "The time model at every 64 rows": with the grid 384, 512, 768, 1024, 1536,
 * 2048 there, 13 untuned shapes between them ran 1.09x cuBLASLt's time, 1.01x with their own pick.) */
static const int64_t GRID[] = {1,    2,    4,    8,    16,   24,   32,   48,   64,   96,   128,  192,  256,
                               320,  384,  448,  512,  576,  640,  704,  768,  832,  896,  960,  1024, 1088,
                               1152, 1216, 1280, 1344, 1408, 1472, 1536, 1600, 1664, 1728, 1792, 1856, 1920,
                               1984, 2048, 3072, 4096, 6144, 8192, 16384};
enum { NGRID = sizeof GRID / sizeof GRID[0] };
_Static_assert((int)NGRID <= (int)AT_MAX_MLEQ, "the grid must fit the per-M entries of a config set");

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The parameters of a config that the features read: its tile, split and cluster. */
typedef struct geometry {
  int64_t bm, bn, sk, ck, cm, cn;
} geometry;

static geometry geometry_of(const at_config *c) {
  const char *names[AT_MAX_PARAMS];
  const at_params p = at_config_params(c, names);
  return (geometry){at_params_get(&p, "BLOCK_M", 0),   at_params_get(&p, "BLOCK_N", 0),
                    at_params_get(&p, "SPLIT_K", 1),   at_params_get(&p, "CLUSTER_K", 1),
                    at_params_get(&p, "CLUSTER_M", 1), at_params_get(&p, "CLUSTER_N", 1)};
}

/* The CTAs of clusters of cs that the GPU runs at once. A cluster lives in one GPC, and pairs fill
 * the SMs (two to a TPC), but clusters of four leave SMs idle where a GPC's SM count is not a
 * multiple of four: the H100 and H200 (132 SMs) hold 30 of them, not 33 (cuOccupancyMaxActiveClusters,
 * docs/perf.md), and the runtime launches only those (engine/gpu/launch.c). Other SM counts: the same
 * share of sm_count / cs, an estimate. Counted as 33 slots, the fit took 33 clusters for one wave and
 * its pick for 2112 x 7168 at M <= 64 (33 clusters of 64 x 64 split four ways) ran 1.39x the best
 * measured (session 50). */
static int64_t cluster_slots(int64_t sm_count, int64_t cs) {
  int64_t clusters = sm_count / cs;
  if (cs >= 4) clusters = clusters * 10 / 11;
  return (clusters < 1 ? 1 : clusters) * cs;
}

static int features_of(const geometry *g, int64_t m, int64_t n, int64_t k, int sm_count, double f[AT_TM_NF]) {
  const int64_t bm = g->bm, bn = g->bn, sk = g->sk, ck = g->ck, cm = g->cm, cn = g->cn, cs = cm * cn * ck;
  if (bm < 1 || bn < 1 || sm_count < 1) return -1;
  if (sk < 1 || ck < 1 || cm < 1 || cn < 1) return -1;
  const int64_t slots = cluster_slots(sm_count, cs);
  /* Whole cluster tiles: a CTA of a cluster whose tile lies past M or N still runs. */
  int64_t ctas = cdiv(m, bm * cm) * cm * cdiv(n, bn * cn) * cn * sk * ck;
  double waves = (double)cdiv(ctas, slots), active = (double)(ctas < slots ? ctas : slots);
  double kblocks = (double)cdiv(k, 128) / (double)(sk * ck);
  f[0] = 1.0;
  f[1] = waves * kblocks;
  f[2] = ((double)m * (double)k + (double)n * (double)k) / 1e6;
  f[3] = waves * kblocks * active / sm_count;
  f[4] = waves;
  /* The k-blocks again where K / 128 is not a multiple of 8: a row of A's scales (K / 128 floats)
   * then crosses into its next 32-byte sector at a different k-block for each row, so the scale
   * loads miss L1 at nearly every k-block (the sm90 template's comment on scales); how much that
   * costs depends on the config (which loads its scales two k-blocks ahead, or from shared memory). */
  f[5] = cdiv(k, 128) % 8 ? waves * kblocks : 0.0;
  return 0;
}

int at_tm_features(const at_config *c, int64_t m, int64_t n, int64_t k, int sm_count, double f[AT_TM_NF]) {
  const geometry g = geometry_of(c);
  return features_of(&g, m, n, k, sm_count, f);
}

/* Solves the n x n system a x = b in place (partial pivoting); -1 when singular. */
static int solve(double a[AT_TM_NF][AT_TM_NF], double b[AT_TM_NF], double x[AT_TM_NF]) {
  const int n = AT_TM_NF;
  for (int i = 0; i < n; i++) {
    int p = i;
    for (int r = i + 1; r < n; r++)
      if (fabs(a[r][i]) > fabs(a[p][i])) p = r;
    if (!(fabs(a[p][i]) > 0)) return -1;
    for (int c = 0; c < n; c++) {
      double t = a[i][c];
      a[i][c] = a[p][c], a[p][c] = t;
    }
    double t = b[i];
    b[i] = b[p], b[p] = t;
    for (int r = 0; r < n; r++) {
      if (r == i) continue;
      double f = a[r][i] / a[i][i];
      for (int c = i; c < n; c++) a[r][c] -= f * a[i][c];
      b[r] -= f * b[i];
    }
  }
  for (int i = 0; i < n; i++) x[i] = b[i] / a[i][i];
  return 0;
}

int at_tm_fit(const double (*x)[AT_TM_NF], const double *t, int rows, double coef[AT_TM_NF], double *rel_rms) {
  if (rows < AT_TM_NF) return at_fail(AT_ERR_INPUT, "a fit needs %d measured shapes at least, not %d", AT_TM_NF, rows);
  /* Rows scaled by 1 / t: the normal equations of the relative error, whose target is all ones. */
  double a[AT_TM_NF][AT_TM_NF] = {{0}}, b[AT_TM_NF] = {0};
  for (int r = 0; r < rows; r++) {
    if (!(t[r] > 0)) return at_fail(AT_ERR_INPUT, "a fit needs positive times (row %d)", r);
    double s[AT_TM_NF];
    for (int i = 0; i < AT_TM_NF; i++) s[i] = x[r][i] / t[r];
    for (int i = 0; i < AT_TM_NF; i++) {
      b[i] += s[i];
      for (int j = 0; j < AT_TM_NF; j++) a[i][j] += s[i] * s[j];
    }
  }
  double diag = 0;
  for (int i = 0; i < AT_TM_NF; i++) diag += a[i][i];
  for (int i = 0; i < AT_TM_NF; i++) a[i][i] += 1e-9 * diag / AT_TM_NF;
  if (solve(a, b, coef)) return at_fail(AT_ERR_INPUT, "the fit's equations are singular");
  double se = 0;
  for (int r = 0; r < rows; r++) {
    double p = 0;
    for (int i = 0; i < AT_TM_NF; i++) p += coef[i] * x[r][i];
    se += (p - t[r]) / t[r] * ((p - t[r]) / t[r]);
  }
  if (rel_rms) *rel_rms = sqrt(se / rows);
  return AT_OK;
}

/* Config i's features' prediction; g: its geometry when the caller has it (NULL: read from it). */
static double predict_raw(const at_time_model *tm, int i, const geometry *g, int64_t m, int64_t n, int64_t k,
                          int sm_count) {
  double f[AT_TM_NF];
  if (!sm_count) sm_count = tm->sm_count;
  const geometry own = g ? *g : geometry_of(&tm->configs[i]);
  if (features_of(&own, m, n, k, sm_count, f)) return 0;
  double p = 0;
  for (int j = 0; j < AT_TM_NF; j++) p += tm->coef[i][j] * f[j];
  return p;
}

double at_tm_predict_raw(const at_time_model *tm, int i, int64_t m, int64_t n, int64_t k, int sm_count) {
  return predict_raw(tm, i, NULL, m, n, k, sm_count);
}

/* What picking for one (N, K) reads at every M of the grid and that does not depend on M: each
 * config's geometry, whether it runs on (N, K), and the fit shapes' logarithms. Made once per
 * answer (at_tm_answer): looked up by name and computed again at each of the grid's 46 M, they
 * took a third of a first lookup's time (docs/perf.md, "Launch-time lookup"). */
typedef struct prepared {
  geometry *g;         /* nconfigs */
  unsigned char *runs; /* nconfigs: 0 where its SCALE_KB form cannot hold (N, K)'s scales */
  double (*lfit)[3];   /* nfit: log M, log N, log K */
} prepared;

/* The fit shapes nearest (m, n, k) in (log M, log N, log K), at most AT_TM_NEAR of them, nearest
 * first, into near; with skip_nk none of (n, k) itself. Returns how many. Of two shapes at the same
 * distance the earlier in the fit's order comes first, so the answer does not depend on the
 * platform's sort. */
static int nearest(const at_time_model *tm, const prepared *pr, int64_t m, int64_t n, int64_t k, int skip_nk,
                   int near[AT_TM_NEAR]) {
  if (!tm->nfit || m < 1 || n < 1 || k < 1) return 0;
  const double lm = log((double)m), ln = log((double)n), lk = log((double)k);
  double d[AT_TM_NEAR];
  int cnt = 0;
  for (int s = 0; s < tm->nfit; s++) {
    if (skip_nk && tm->fit[s][1] == n && tm->fit[s][2] == k) continue;
    const double a = (pr ? pr->lfit[s][0] : log((double)tm->fit[s][0])) - lm,
                 b = (pr ? pr->lfit[s][1] : log((double)tm->fit[s][1])) - ln,
                 c = (pr ? pr->lfit[s][2] : log((double)tm->fit[s][2])) - lk, x = a * a + b * b + c * c;
    int j;
    if (cnt < AT_TM_NEAR)
      j = cnt++;
    else if (x < d[AT_TM_NEAR - 1])
      j = AT_TM_NEAR - 1;
    else
      continue;
    for (; j > 0 && d[j - 1] > x; j--) d[j] = d[j - 1], near[j] = near[j - 1];
    d[j] = x, near[j] = s;
  }
  return cnt;
}

/* Config i's prediction corrected by its mean residual on the shapes near[0, nn) where it was
 * measured (none: uncorrected); g: its geometry, or NULL. */
static double predict_near(const at_time_model *tm, const geometry *g, int i, int64_t m, int64_t n, int64_t k,
                           int sm_count, const int *near, int nn) {
  double t = predict_raw(tm, i, g, m, n, k, sm_count), sum = 0;
  int cnt = 0;
  for (int j = 0; j < nn; j++) {
    const float r = tm->resid[(size_t)i * (size_t)tm->nfit + (size_t)near[j]];
    if (!isnan(r)) sum += r, cnt++;
  }
  return t > 0 && cnt ? t * exp(sum / cnt) : t;
}

double at_tm_predict(const at_time_model *tm, int i, int64_t m, int64_t n, int64_t k, int sm_count) {
  int near[AT_TM_NEAR];
  const int nn = nearest(tm, NULL, m, n, k, 0, near);
  return predict_near(tm, NULL, i, m, n, k, sm_count, near, nn);
}

/* Where an answer composes the op's launch plan (at_op.plan_factor: the runtime's tail) into the
 * predictions. The model is fitted on times measured alone, without the tail, so it scores a config
 * whose last wave the tail rescues as if that wave ran whole.
 * - At the grid's M = 512 (calls of M 385 to 512), every config's plan: there the model picked 128 x
 *   192 tiles that fill one wave where 128 x 128 tiles in clusters of two, with the tail, ran up to
 *   1.27x faster (H100, docs/perf.md, "The time model and the tail").
 * - From 576 to 1024, every config but 192-row tiles, and only a last wave moved to a tail launch
 *   (AT_PLAN_LAST_WAVE). Session 36 composed it for the 128 x 256 in-place tiles alone (they ran
 *   5-13% faster than the model's picks on N = 4608-40960; for every config and plan, 128 x 128 and
 *   128 x 192 tiles with a 64 x 64 tail, and tails by rows, looked fast and ran up to 1.24x slower).
 *   With the 64 x 64 tail priced at 2.5 (session 39), the 14 answers that composing it for every
 *   tile of 64, 128 or 256 rows changes ran 0.96x-0.97x their time (three rounds; 12 faster by 1-8%,
 *   640 x 11264 x 8192 1.02x); 192-row tiles with a tail there also lost up to 1.18x (672 x 8192 x
 *   29568) (docs/perf.md, "The 64 x 64 tail's penalty").
 * - Elsewhere not: at 1024-2048 it swapped configs that ran within a few percent of each other,
 *   192 x 192 tiles for slower 128 x 128 pairs among them (session 12), and the 128 x 256 rule
 *   above taken up to 2048 gained 3% on the shapes it changed of one set but nothing on a
 *   validation set, where M = 1088 lost up to 11% (session 36); at decode sizes the plan
 *   favoured 128 x 192 tiles on N = 13312-16384 that ran 1.3-1.4x slower (session 10, run30).
 * -1: no plan composed at m for a config of parameters p. */
enum { PLAN_M = 512, PLAN_WIDE_M = 1024 };
static int plan_mode(const at_params *p, int64_t m) {
  if (m == PLAN_M) return AT_PLAN_CONFIG;
  if (m > PLAN_M && m <= PLAN_WIDE_M && at_params_get(p, "BLOCK_M", 0) != 192) return AT_PLAN_LAST_WAVE;
  return -1;
}

static double planned_near(const at_time_model *tm, const geometry *g, const at_op *op, int i, int64_t m, int64_t n,
                           int64_t k, int sm_count, const int *near, int nn) {
  double t = predict_near(tm, g, i, m, n, k, sm_count, near, nn);
  if (t <= 0 || !op || !op->plan_factor) return t;
  const char *names[AT_MAX_PARAMS];
  const at_params p = at_config_params(&tm->configs[i], names);
  const int mode = plan_mode(&p, m);
  if (mode < 0) return t;
  const at_shape s = {m, n, k};
  /* The config's own plan (never AT_PLAN_UNTUNED): a plan that gives the whole call to a tail
   * config says nothing about the config itself, and would make a slow config look fast. */
  return t * op->plan_factor(tm->configs[i].family, &p, &s, sm_count ? sm_count : tm->sm_count, mode);
}

double at_tm_predict_planned(const at_time_model *tm, const at_op *op, int i, int64_t m, int64_t n, int64_t k,
                             int sm_count) {
  int near[AT_TM_NEAR];
  const int nn = nearest(tm, NULL, m, n, k, 0, near);
  return planned_near(tm, NULL, op, i, m, n, k, sm_count, near, nn);
}

/* A tile of at most twice M's rows (64 at least): the spaces' block_m_fits rule, under which the
 * tuner never weighs a taller tile. The fit measures every config everywhere, but its prediction
 * for a 128-row tile at M = 16 or 32 is carried over from where such tiles run: it picked 128 x
 * 192 tiles split in K at M = 16, N = 35840, that ran 0.92x cuBLASLt's time where 64-row tiles
 * ran 0.85x (H100, docs/perf.md, "Split K at M = 256"). Up to M = 64, 64 rows at most: a 128-row
 * tile there has a whole 64-row slice past M, and no tuning ever chose one (the 21 tuned files'
 * M = 64 entries and the 15 weights of docs/experiments/unseen-s24.yaml tuned at M = 64: every
 * winner 64 rows), while the model picked them for 5 of those 15 weights, 1.03x-1.11x the
 * winners' time (H100, docs/perf.md, "A new unseen set"). */
static int fits_m(int64_t block_m, int64_t m) { return block_m <= (m <= 64 ? 64 : 2 * m); }

/* Does config i run on (n, k) (measured alone or not, as it can): a config whose SCALE_KB form cannot
 * hold (n, k)'s scales does not (its form without them is another config of the menu). */
static int runs_on(const at_time_model *tm, const at_op *of, int i, int64_t n, int64_t k) {
  if (at_config_shape_param(of, &tm->configs[i]) < 0) return 1;
  at_config on = tm->configs[i];
  return at_config_for_shape(of, &on, n, k);
}

/* Where the plan is composed (M = 512), no 192-row tiles: three rows of them hold 576 rows, and
 * the plan composed in is a tail by rows (the main launch on 384 rows, the 128 rows after in
 * 128 x 256 tiles split in K), whose saving the composition took at its estimate; measured, the
 * pair ran far slower than predicted. On the H100 (docs/perf.md, "192-row tiles at M = 512"), the
 * two shapes of the untuned sweeps where the model picked them there ran 1.05x and 1.20x
 * cuBLASLt's time, 0.96x and 1.02x with the pick without them; at M = 192 to 384 the same tiles
 * ran faster than the pick without them on 26 of 31 shapes, and stay there. pr: what at_tm_answer
 * prepared for (n, k), or NULL (computed here). */
static int best_of(const at_time_model *tm, const prepared *pr, const at_op *op, int plan, int64_t m, int64_t n,
                   int64_t k, int sm_count, int skip_nk) {
  int near[AT_TM_NEAR];
  const int nn = nearest(tm, pr, m, n, k, skip_nk, near);
  const at_op *of = pr ? NULL : at_op_find(tm->op);
  int best = -1;
  double best_t = 0;
  for (int i = 0; i < tm->nconfigs; i++) {
    const geometry g = pr ? pr->g[i] : geometry_of(&tm->configs[i]);
    if (op && !fits_m(g.bm, m)) continue;
    if (!(pr ? pr->runs[i] : runs_on(tm, of, i, n, k))) continue;
    if (plan && op && op->plan_factor && m == PLAN_M && g.bm == 192) continue;
    double t = plan ? planned_near(tm, &g, op, i, m, n, k, sm_count, near, nn)
                    : predict_near(tm, &g, i, m, n, k, sm_count, near, nn);
    if (t > 0 && (best < 0 || t < best_t)) best = i, best_t = t;
  }
  return best;
}

int at_tm_best(const at_time_model *tm, const at_op *op, int plan, int64_t m, int64_t n, int64_t k, int sm_count) {
  return best_of(tm, NULL, op, plan, m, n, k, sm_count, 0);
}

int at_tm_best_unseen(const at_time_model *tm, int64_t m, int64_t n, int64_t k, int sm_count) {
  return best_of(tm, NULL, NULL, 0, m, n, k, sm_count, 1);
}

double at_tm_predict_config(const at_time_model *tm, const at_config *c, int64_t m, int64_t n, int64_t k,
                            int sm_count) {
  const at_op *of = at_op_find(tm->op);
  for (int i = 0; c && i < tm->nconfigs; i++)
    if (at_config_same_but_shape(of, &tm->configs[i], c)) return at_tm_predict(tm, i, m, n, k, sm_count);
  return 0;
}

void at_tm_answer(const at_time_model *tm, const at_op *op, int plan, int64_t n, int64_t k, int sm_count,
                  at_config_set *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->op, sizeof out->op, "%s", tm->op);
  snprintf(out->tag, sizeof out->tag, "%s", tm->tag);
  snprintf(out->device, sizeof out->device, "%s", tm->device);
  snprintf(out->device_name, sizeof out->device_name, "%s", tm->device_name);
  snprintf(out->arch, sizeof out->arch, "%s", tm->arch);
  out->n = n, out->k = k;
  const at_op *of = at_op_find(tm->op);
  prepared pr = {at_xcalloc(tm->nconfigs ? (size_t)tm->nconfigs : 1, sizeof *pr.g),
                 at_xcalloc(tm->nconfigs ? (size_t)tm->nconfigs : 1, 1),
                 at_xcalloc(tm->nfit ? (size_t)tm->nfit : 1, sizeof *pr.lfit)};
  for (int i = 0; i < tm->nconfigs; i++)
    pr.g[i] = geometry_of(&tm->configs[i]), pr.runs[i] = (unsigned char)runs_on(tm, of, i, n, k);
  for (int s = 0; s < tm->nfit; s++)
    for (int j = 0; j < 3; j++) pr.lfit[s][j] = log((double)tm->fit[s][j]);
  for (int g = 0; g < NGRID; g++) {
    int i = best_of(tm, &pr, op, plan, GRID[g], n, k, sm_count, 0);
    if (i < 0) continue;
    int e = out->nmleq++;
    out->mleq_m[e] = GRID[g];
    out->mleq[e] = tm->configs[i];
    at_config_for_shape(of, &out->mleq[e], n, k); /* best_of kept only those that hold it */
    out->mleq_time_us[e] = 0; /* a prediction, not a measurement */
    out->bucket[AT_BUCKET_ANY] = out->mleq[e]; /* beyond the grid: the largest M's */
  }
  free(pr.g), free(pr.runs), free(pr.lfit);
}

int at_tm_is_model_file(const char *f) {
  size_t len = strlen(f), sl = strlen("-model.json");
  return len > sl && strcmp(f + len - sl, "-model.json") == 0;
}

char *at_tm_to_json(const at_time_model *tm) {
  at_buf b = {0};
  at_buf_puts(&b, "{\n  \"format\": \"autotune-model/4\",\n  \"op\": ");
  at_buf_json_string(&b, tm->op);
  at_buf_puts(&b, ",\n  \"tag\": ");
  at_buf_json_string(&b, tm->tag);
  at_buf_puts(&b, ",\n  \"device\": ");
  at_buf_json_string(&b, tm->device);
  at_buf_puts(&b, ",\n  \"device_name\": ");
  at_buf_json_string(&b, tm->device_name);
  at_buf_puts(&b, ",\n  \"arch\": ");
  at_buf_json_string(&b, tm->arch);
  at_buf_printf(&b, ",\n  \"sm_count\": %d,\n  \"fit_shapes\": %d,", tm->sm_count, tm->fit_shapes);
  at_buf_puts(&b, "\n  \"features\": [\"1\", \"waves * kblocks\", \"(M K + N K) / 1e6\", "
                  "\"waves * kblocks * active / sm_count\", \"waves\", \"waves * kblocks if K / 128 % 8\"],");
  if (tm->nfit) {
    at_buf_puts(&b, "\n  \"fit\": [");
    for (int s = 0; s < tm->nfit; s++)
      at_buf_printf(&b, "%s[%lld, %lld, %lld]", s == 0 ? "" : s % 8 ? ", " : ",\n          ", (long long)tm->fit[s][0],
                    (long long)tm->fit[s][1], (long long)tm->fit[s][2]);
    at_buf_puts(&b, "],");
  }
  at_buf_puts(&b, "\n  \"configs\": [");
  for (int i = 0; i < tm->nconfigs; i++) {
    const at_config *c = &tm->configs[i];
    at_buf_printf(&b, "%s\n    {\"variant\": ", i ? "," : "");
    at_buf_json_string(&b, c->variant);
    at_buf_puts(&b, ", \"family\": ");
    at_buf_json_string(&b, c->family);
    at_buf_puts(&b, ", \"template\": ");
    at_buf_json_string(&b, c->template_name);
    at_buf_puts(&b, ",\n     \"entry\": ");
    at_buf_json_string(&b, c->entry);
    char *params = at_config_params_json(c);
    at_buf_printf(&b, ",\n     \"params\": %s,\n     \"coef\": [", params);
    free(params);
    for (int j = 0; j < AT_TM_NF; j++) at_buf_printf(&b, "%s%.9g", j ? ", " : "", tm->coef[i][j]);
    at_buf_printf(&b, "], \"shapes\": %d, \"rel_rms\": %.4f", tm->shapes[i], tm->rel_rms[i]);
    if (tm->nfit) {
      at_buf_puts(&b, ",\n     \"resid\": [");
      for (int s = 0; s < tm->nfit; s++) {
        const float r = tm->resid[(size_t)i * (size_t)tm->nfit + (size_t)s];
        if (s) at_buf_puts(&b, s % 16 ? ", " : ",\n               ");
        if (!isfinite(r))
          at_buf_puts(&b, "null");
        else {
          const double v = nearbyint((double)r * 1000) / 1000;
          at_buf_printf(&b, "%.3f", v == 0 ? 0.0 : v); /* 0.000, never -0.000 */
        }
      }
      at_buf_puts(&b, "]");
    }
    at_buf_puts(&b, "}");
  }
  at_buf_puts(&b, "\n  ]\n}\n");
  return at_buf_steal(&b);
}

void at_tm_free(at_time_model *tm) {
  free(tm->configs);
  free(tm->coef);
  free(tm->shapes);
  free(tm->rel_rms);
  free(tm->fit);
  free(tm->resid);
  memset(tm, 0, sizeof *tm);
}

static void *dup_bytes(const void *p, size_t n) { return p && n ? memcpy(at_xmalloc(n), p, n) : NULL; }

void at_tm_copy(at_time_model *dst, const at_time_model *src) {
  const size_t nc = (size_t)src->nconfigs, nf = (size_t)src->nfit;
  *dst = *src;
  dst->configs = dup_bytes(src->configs, nc * sizeof *src->configs);
  dst->coef = dup_bytes(src->coef, nc * sizeof *src->coef);
  dst->shapes = dup_bytes(src->shapes, nc * sizeof *src->shapes);
  dst->rel_rms = dup_bytes(src->rel_rms, nc * sizeof *src->rel_rms);
  dst->fit = dup_bytes(src->fit, nf * sizeof *src->fit);
  dst->resid = src->resid ? dup_bytes(src->resid, nc * nf * sizeof *src->resid) : NULL;
}

/* Format 3: config i's residuals on the out->nfit fit shapes, numbers or null (not measured). */
static int read_resid(const char *where, const at_json *c, int i, at_time_model *out) {
  const at_json *r = at_json_get(c, "resid");
  if (!r || r->kind != AT_J_ARRAY || r->n != (size_t)out->nfit)
    return at_fail(AT_ERR_INPUT, "%s: \"resid\" must be an array of %d numbers or nulls (one per fit shape)", where,
                   out->nfit);
  for (int s = 0; s < out->nfit; s++) {
    const at_json *x = r->items[s];
    if (x->kind != AT_J_NULL && (x->kind != AT_J_NUMBER || !isfinite(x->number) || fabs(x->number) > 10))
      return at_fail(AT_ERR_INPUT, "%s: \"resid\"[%d] must be a number from -10 to 10, or null", where, s);
    out->resid[(size_t)i * (size_t)out->nfit + (size_t)s] = x->kind == AT_J_NULL ? NAN : (float)x->number;
  }
  return AT_OK;
}

/* Format 3: the fit's shapes, each [M, N, K] of positive integers. */
static int read_fit(const char *name, const at_json *f, at_time_model *out) {
  if (!f || f->kind != AT_J_ARRAY || f->n == 0 || f->n > AT_TM_MAX_FIT)
    return at_fail(AT_ERR_INPUT, "%s: \"fit\" must be an array of 1 to %d shapes [M, N, K]", name, AT_TM_MAX_FIT);
  out->nfit = (int)f->n;
  out->fit = at_xcalloc(f->n, sizeof *out->fit);
  for (size_t s = 0; s < f->n; s++) {
    const at_json *x = f->items[s];
    for (int d = 0; d < 3; d++) {
      const at_json *v = x->kind == AT_J_ARRAY && x->n == 3 ? x->items[d] : NULL;
      if (!v || v->kind != AT_J_NUMBER || !(v->number >= 1 && v->number <= 1e9) || v->number != floor(v->number))
        return at_fail(AT_ERR_INPUT, "%s: \"fit\"[%zu] must be [M, N, K], three integers from 1", name, s);
      out->fit[s][d] = (int64_t)v->number;
    }
  }
  return AT_OK;
}

/* nf: the coefficients a config has in this file's format (4 in format 1, 5 in 2 and 3, AT_TM_NF in
 * 4); the features past them get 0. With out->nfit (format 3, and 4 with "fit") each config has its
 * residuals too. */
static int read_configs(const char *name, const at_json *cs, int nf, at_time_model *out) {
  if (!cs || cs->kind != AT_J_ARRAY || cs->n == 0 || cs->n > AT_TM_MAX_CONFIGS)
    return at_fail(AT_ERR_INPUT, "%s: \"configs\" must be an array of 1 to %d configs", name, AT_TM_MAX_CONFIGS);
  out->configs = at_xcalloc(cs->n, sizeof *out->configs);
  out->coef = at_xcalloc(cs->n, sizeof *out->coef);
  out->shapes = at_xcalloc(cs->n, sizeof *out->shapes);
  out->rel_rms = at_xcalloc(cs->n, sizeof *out->rel_rms);
  if (out->nfit) out->resid = at_xcalloc(cs->n * (size_t)out->nfit, sizeof *out->resid);
  for (size_t i = 0; i < cs->n; i++) {
    char where[300];
    snprintf(where, sizeof where, "%s: configs[%zu]", name, i);
    const at_json *c = cs->items[i];
    if (c->kind != AT_J_OBJECT) return at_fail(AT_ERR_INPUT, "%s: not an object", where);
    AT_TRY(at_config_from_json(where, c, &out->configs[i]));
    double f[AT_TM_NF];
    if (at_tm_features(&out->configs[i], 1, 1, 1, 1, f))
      return at_fail(AT_ERR_INPUT, "%s: params need BLOCK_M and BLOCK_N of at least 1 (and SPLIT_K, CLUSTER_* >= 1)", where);
    const at_json *coef = at_json_get(c, "coef");
    if (!coef || coef->kind != AT_J_ARRAY || coef->n != (size_t)nf)
      return at_fail(AT_ERR_INPUT, "%s: \"coef\" must be an array of %d numbers", where, nf);
    for (int j = 0; j < nf; j++) {
      if (coef->items[j]->kind != AT_J_NUMBER || !isfinite(coef->items[j]->number))
        return at_fail(AT_ERR_INPUT, "%s: \"coef\" must be an array of %d numbers", where, nf);
      out->coef[i][j] = coef->items[j]->number;
    }
    int64_t v = 0;
    if (at_json_int(c, "shapes", &v) == 0) out->shapes[i] = (int)v;
    const at_json *rr = at_json_get(c, "rel_rms");
    if (rr && rr->kind == AT_J_NUMBER) out->rel_rms[i] = rr->number;
    if (out->nfit) AT_TRY(read_resid(where, c, (int)i, out));
    for (size_t j = 0; j < i; j++)
      if (at_config_same(&out->configs[j], &out->configs[i]))
        return at_fail(AT_ERR_INPUT, "%s: the same config as configs[%zu]", where, j);
    out->nconfigs++;
  }
  return AT_OK;
}

int at_tm_from_json(const char *name, const at_json *j, at_time_model *out) {
  memset(out, 0, sizeof *out);
  if (!j || j->kind != AT_J_OBJECT) return at_fail(AT_ERR_INPUT, "%s: not a JSON object", name);
  const char *format = at_json_str(j, "format");
  const int version = !format                                      ? 0
                      : strcmp(format, "autotune-model/4") == 0 ? 4
                      : strcmp(format, "autotune-model/3") == 0 ? 3
                      : strcmp(format, "autotune-model/2") == 0 ? 2
                      : strcmp(format, "autotune-model/1") == 0 ? 1
                                                                : 0;
  if (!version) return at_fail(AT_ERR_INPUT, "%s: \"format\" is not \"autotune-model/4\" (or 3, 2, 1)", name);
  const int nf = version == 1 ? 4 : version < 4 ? 5 : AT_TM_NF;
  AT_TRY(at_json_copy_str(name, j, "op", out->op, sizeof out->op, 1));
  AT_TRY(at_json_copy_str(name, j, "tag", out->tag, sizeof out->tag, 1));
  AT_TRY(at_json_copy_str(name, j, "device", out->device, sizeof out->device, 1));
  AT_TRY(at_json_copy_str(name, j, "device_name", out->device_name, sizeof out->device_name, 0));
  AT_TRY(at_json_copy_str(name, j, "arch", out->arch, sizeof out->arch, 0));
  int64_t v = 0;
  if (at_json_int(j, "sm_count", &v) || v < 1 || v > 100000)
    return at_fail(AT_ERR_INPUT, "%s: \"sm_count\" must be an integer from 1", name);
  out->sm_count = (int)v;
  if (at_json_int(j, "fit_shapes", &v) == 0) out->fit_shapes = (int)v;
  int rc = version == 3 || (version == 4 && at_json_get(j, "fit")) ? read_fit(name, at_json_get(j, "fit"), out) : AT_OK;
  if (rc == AT_OK) rc = read_configs(name, at_json_get(j, "configs"), nf, out);
  if (rc) at_tm_free(out);
  return rc;
}

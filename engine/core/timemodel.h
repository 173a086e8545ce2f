/* timemodel.h: a fitted time model of a menu of GEMM configs, for the (N, K) nobody tuned.
 *
 * Why. A tuned (N, K) gets its own winners; any other (N, K) needs a guess. A neighbour's winners
 * carry the neighbour's wave count, which does not fit another N (a tile count of 208 on 132 SMs is
 * two waves, 1.6 of them idle), and one compromise file per tag cannot be right for N = 576 and
 * N = 37888 at once. The model predicts each menu config's time on any shape from the geometry of
 * its launch, with six coefficients per config fitted on measured times, and picks the fastest
 * (at M = 512, and from 576 to 1024 for every tile but 192-row ones, with the share of its time the
 * runtime's tail saves composed in, at_op.plan_factor).
 *
 * Features of config c on (M, N, K) with S SMs (BLOCK_M, BLOCK_N, SPLIT_K, CLUSTER_M, CLUSTER_N,
 * CLUSTER_K of c; a missing SPLIT_K or CLUSTER_* counts as 1):
 *   tiles  = ceil(M / (BLOCK_M CLUSTER_M)) CLUSTER_M ceil(N / (BLOCK_N CLUSTER_N)) CLUSTER_N (whole
 *            cluster tiles: a CTA whose tile lies past M or N runs too);  cs = CLUSTER_M CLUSTER_N CLUSTER_K
 *   ctas   = tiles SPLIT_K CLUSTER_K;  slots = floor(S / cs) cs;  active = min(ctas, slots)
 *   waves  = ceil(ctas / slots);  kblocks = ceil(K / 128) / (SPLIT_K CLUSTER_K)
 *   odd    = 1 when K / 128 is not a multiple of 8, else 0
 *   f = [1, waves kblocks, (M K + N K) / 1e6, waves kblocks active / S, waves, odd waves kblocks]
 * time_us = coef . f: a fixed cost, the busiest SM's k-blocks, the bytes read (the memory floor of
 * decode sizes), the k-blocks again scaled by how much of the GPU is busy (a few busy SMs each
 * stream faster than a full GPU of them), and a cost per tile an SM takes (its epilogue, its
 * pipeline's fill), and the k-blocks once more where the rows of A's scales cross their 32-byte
 * sectors at different k-blocks (K / 128 not a multiple of 8), which costs each config its own
 * share (whether it loads its scales two k-blocks ahead or from shared memory). Fitted per config
 * by least squares on relative error. The fifth feature came in format 2 (session 13:
 * cross-validated by (N, K) on the menu's 425 shapes, picking cost 1.021x the fastest config
 * instead of 1.024x, docs/perf.md), the sixth in format 4 (session 38: on session 31's menu of 585
 * shapes, 1.012x -> 1.010x and 8 -> 6 shapes above 1.10x; 256 x 4096 x 11008 picked 128 x 64 tiles
 * in pairs, predicted 24 us, run 33, where 128 x 128 split in a cluster runs 27). A file of an
 * older format has fewer coefficients, read with the features past them at 0.
 *
 * Format 3 (session 20) adds what the features miss near the shapes the fit has seen: each
 * config's residual there, log(measured / predicted), and the fit's shapes. A prediction on
 * (M, N, K) is multiplied by exp(mean of the config's residuals on the AT_TM_NEAR fit shapes
 * nearest in (log M, log N, log K)), those where it was measured. Why: the five features leave
 * errors of several percent that are shared by nearby shapes (a config's clusters or raster on a
 * narrow N, the scales' k-block count), which is what picking among configs a few percent apart
 * turns on. Measured on the H100 (docs/perf.md, "The time model's residuals near a shape"): fitted
 * on the 425 shapes of the shipped job and llm.yaml, picking on 657 shapes of five unseen sets
 * cost 1.019x the fastest of the 82 configs there (first-pass times of a menu run on them) and
 * 1.015x with the residuals; through `compare`, the sets ran 0-0.3% faster and the shapes above
 * 1.05x cuBLASLt's time went from 44 to 36 (above 1.10x: 5 both ways). The nearest 6: of 3, 4,
 * 6, 8 and 12, cross-validated by (N, K) on those 1,082 shapes, 6 and 8 picked best. Files of
 * format 1 and 2 have no residuals and predict as before; format 4 has them when it has "fit".
 *
 * Invariants: a model names each config once; every config has a family and a template (it was
 * launched to be measured); a config whose prediction is not positive on a shape is not picked
 * there. The answer for an (N, K) is a config set of per-M entries on a fixed grid of M (at most
 * AT_MAX_MLEQ), each the config of least predicted time at that M (as the runtime launches it:
 * at_tm_best with the op), read by at_config_for_m like any
 * exported file. Format of the file: docs/formats.md ("The time model"). */
#ifndef AT_TIMEMODEL_H
#define AT_TIMEMODEL_H

#include "config.h"
#include "json.h"
#include "op.h"

enum { AT_TM_NF = 6, AT_TM_MAX_CONFIGS = 512, AT_TM_NEAR = 6, AT_TM_MAX_FIT = 65536 };

typedef struct at_time_model {
  char op[64], tag[64], device[128], device_name[128], arch[16];
  int sm_count;             /* of the device the times were measured on */
  int nconfigs;
  at_config *configs;       /* nconfigs, malloc'd */
  double (*coef)[AT_TM_NF]; /* nconfigs, malloc'd */
  int *shapes;              /* how many shapes each config was fitted on */
  double *rel_rms;          /* its root-mean-square relative error on them */
  int fit_shapes;           /* shapes in the fit (a menu run measures every config on each) */
  /* Format 3: the fit's shapes and each config's residuals on them (0 and NULL in formats 1, 2). */
  int nfit;
  int64_t (*fit)[3];        /* nfit (M, N, K), malloc'd */
  float *resid;             /* nconfigs x nfit, config-major: log(measured / predicted), NAN where
                             * the config was not measured on that shape; malloc'd */
} at_time_model;

/* The features of config c on (m, n, k) with sm_count SMs; -1 when c has no BLOCK_M or BLOCK_N. */
int at_tm_features(const at_config *c, int64_t m, int64_t n, int64_t k, int sm_count, double f[AT_TM_NF]);

/* Fits coef to rows (features x[r], measured time t[r] > 0) minimising sum ((coef . x - t) / t)^2,
 * with a ridge of 1e-9 of the mean diagonal for collinear features; *rel_rms the fit's error.
 * AT_ERR_INPUT with fewer rows than features. */
int at_tm_fit(const double (*x)[AT_TM_NF], const double *t, int rows, double coef[AT_TM_NF], double *rel_rms);

/* Predicted time of config i on (m, n, k); <= 0 when the model has no answer. sm_count 0: the
 * model's own. As the tuner measured it: alone, without the runtime's tail (composed in by
 * at_tm_predict_planned, at M = 512 only: docs/perf.md, "The time model and the tail"). With
 * residuals (format 3, or 4 with its fit's shapes), corrected by those of the nearest fit shapes (above). */
double at_tm_predict(const at_time_model *tm, int i, int64_t m, int64_t n, int64_t k, int sm_count);

/* The features' prediction alone, without the residuals' correction (what the fit fits). */
double at_tm_predict_raw(const at_time_model *tm, int i, int64_t m, int64_t n, int64_t k, int sm_count);

/* The same with the op's launch plan composed in where timemodel.c's plan_mode says: at M = 512
 * at_op.plan_factor for a tail of the last wave or by rows (AT_PLAN_CONFIG), from 576 to 1024 for a
 * config of other than 192 rows a tail of the last wave only (AT_PLAN_LAST_WAVE); never AT_PLAN_UNTUNED
 * (a plan that runs the whole call as a tail config says nothing about config i). op NULL, or
 * another M or config: at_tm_predict. */
double at_tm_predict_planned(const at_time_model *tm, const at_op *op, int i, int64_t m, int64_t n, int64_t k,
                             int sm_count);

/* Predicted time (at_tm_predict) of the menu config with c's family, template and parameters (its
 * variant name aside: files name their configs otherwise); <= 0 when c is not on the menu. */
double at_tm_predict_config(const at_time_model *tm, const at_config *c, int64_t m, int64_t n, int64_t k,
                            int sm_count);

/* The index of the config of least predicted time on (m, n, k); -1 when none predicts. With op, as
 * the runtime answers: only configs whose BLOCK_M is at most max(64, 2 m) (the spaces'
 * block_m_fits rule), and with plan the op's plan composed in (at_tm_predict_planned; 0 for a
 * runtime that launches without it). op NULL: the fit's own pick among every config, as measured. */
int at_tm_best(const at_time_model *tm, const at_op *op, int plan, int64_t m, int64_t n, int64_t k, int sm_count);

/* at_tm_best without op, as for an (N, K) the fit has not seen: the residuals of the fit shapes of
 * (n, k) itself are left out of the correction. The fit's honest score of its own picks. */
int at_tm_best_unseen(const at_time_model *tm, int64_t m, int64_t n, int64_t k, int sm_count);

/* The answer for (n, k): per-M entries on the M grid (1 to 16384), the largest also `any`; op (may
 * be NULL) and plan as in at_tm_best. */
void at_tm_answer(const at_time_model *tm, const at_op *op, int plan, int64_t n, int64_t k, int sm_count,
                  at_config_set *out);

char *at_tm_to_json(const at_time_model *tm); /* malloc'd, ends with a newline */
/* Reads and validates a model file's content; AT_ERR_INPUT naming what is wrong. */
int at_tm_from_json(const char *name, const at_json *j, at_time_model *out);
void at_tm_free(at_time_model *tm);
void at_tm_copy(at_time_model *dst, const at_time_model *src); /* a deep copy; free both */

/* Is a configs-directory file name a model file ("...-model.json")? */
int at_tm_is_model_file(const char *file_name);

#endif

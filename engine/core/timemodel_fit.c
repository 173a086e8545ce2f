/* timemodel_fit.c: see timemodel_fit.h. */
#include "timemodel_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"
#include "util.h"

typedef struct row {
  int64_t cand, m, n, k;
  int shape; /* index into the distinct shapes */
  double t;
} row;

static int cmp_cand(const void *a, const void *b) {
  const row *x = a, *y = b;
  return (x->cand > y->cand) - (x->cand < y->cand);
}

/* Every current checked result of (op, tag) on dev, with a shape index per distinct (M, N, K). */
static int load_rows(at_store *db, const at_device_entry *dev, const char *op, const char *tag, row **rows, size_t *nrows,
                     int *nshapes) {
  at_tuned_nk *nks = NULL;
  size_t nnk = 0, cap = 0;
  *rows = NULL, *nrows = 0, *nshapes = 0;
  AT_TRY(at_store_tuned_nks(db, op, dev->id, &nks, &nnk));
  int rc = AT_OK;
  for (size_t i = 0; i < nnk && rc == AT_OK; i++) {
    if (strcmp(nks[i].tag, tag) != 0) continue;
    at_tuned_row *tr = NULL;
    size_t ntr = 0;
    rc = at_store_tuned_rows(db, op, tag, dev->id, nks[i].n, nks[i].k, &tr, &ntr);
    for (size_t j = 0; j < ntr && rc == AT_OK; j++) { /* ordered by M: a new M is a new shape */
      if (j == 0 || tr[j].m != tr[j - 1].m) (*nshapes)++;
      if (*nrows == cap) *rows = at_xrealloc(*rows, sizeof **rows * (cap = cap ? 2 * cap : 1024));
      (*rows)[(*nrows)++] = (row){tr[j].candidate_id, tr[j].m, nks[i].n, nks[i].k, *nshapes - 1, tr[j].time_us};
    }
    free(tr);
  }
  free(nks);
  return rc;
}

/* Rows sorted by candidate: each row's cand becomes the smallest candidate id among those that
 * differ from it only in the op's shape parameter (at_config_same_but_shape), then rows are sorted
 * by that again. */
static int group_shape_param(at_store *db, const at_op *op, row *rows, size_t nrows) {
  if (!op || !op->shape_param || !nrows) return AT_OK;
  size_t nc = 0;
  int64_t *ids = at_xcalloc(nrows, sizeof *ids), *grp = at_xcalloc(nrows, sizeof *grp);
  for (size_t r = 0; r < nrows; r++)
    if (r == 0 || rows[r].cand != rows[r - 1].cand) ids[nc++] = rows[r].cand;
  at_config *cfg = at_xcalloc(nc, sizeof *cfg);
  int rc = AT_OK, *has = at_xcalloc(nc, sizeof *has);
  for (size_t j = 0; j < nc && rc == AT_OK; j++) {
    rc = at_store_candidate_config(db, ids[j], &cfg[j]);
    has[j] = rc == AT_OK && at_config_shape_param(op, &cfg[j]) >= 0;
    grp[j] = ids[j];
    for (size_t i = 0; i < j && has[j]; i++)
      if (has[i] && at_config_same_but_shape(op, &cfg[i], &cfg[j])) {
        grp[j] = grp[i];
        break;
      }
  }
  if (rc == AT_OK) {
    for (size_t r = 0, j = 0; r < nrows; r++) {
      while (ids[j] != rows[r].cand) j++; /* both ascend */
      rows[r].cand = grp[j];
    }
    qsort(rows, nrows, sizeof *rows, cmp_cand);
  }
  free(ids), free(grp), free(cfg), free(has);
  return rc;
}

/* The rows of a fit: every checked result, grouped by config (sorted by candidate). */
typedef struct fit_rows {
  row *rows;
  size_t nrows;
  int nshapes, sm_count;
} fit_rows;

/* Each shape's best time and a row of it (for its M, N, K; NULL for a shape without rows). */
static void shape_bests(const fit_rows *fr, double *best, const row **any) {
  for (size_t r = 0; r < fr->nrows; r++) {
    const row *x = &fr->rows[r];
    if (!any[x->shape]) any[x->shape] = x;
    if (best[x->shape] == 0 || x->t < best[x->shape]) best[x->shape] = x->t;
  }
}

/* Candidate cand's time on shape (0: not measured there); the rows are sorted by candidate. */
static double time_of(const fit_rows *fr, int64_t cand, int shape) {
  size_t lo = 0, hi = fr->nrows;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (fr->rows[mid].cand < cand)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t r = lo; r < fr->nrows && fr->rows[r].cand == cand; r++)
    if (fr->rows[r].shape == shape) return fr->rows[r].t;
  return 0;
}

/* The model's pick on each shape against the best time measured there. */
static void regret(const at_time_model *tm, const fit_rows *fr, const int64_t *cand_of, at_tm_fit_stats *st) {
  const size_t ns = fr->nshapes ? (size_t)fr->nshapes : 1;
  double *best = at_xcalloc(ns, sizeof *best);
  const row **any = at_xcalloc(ns, sizeof *any);
  shape_bests(fr, best, any);
  double sum = 0;
  int n = 0;
  for (int s = 0; s < fr->nshapes; s++) {
    if (!any[s]) continue;
    /* As measured (alone), and as for an (N, K) outside the fit: no residual of its own. */
    const int pick = at_tm_best_unseen(tm, any[s]->m, any[s]->n, any[s]->k, fr->sm_count);
    const double picked = pick >= 0 ? time_of(fr, cand_of[pick], s) : 0;
    if (!(picked > 0)) continue; /* the pick was not measured there */
    double q = picked / best[s];
    sum += log(q), n++;
    if (q > st->worst_regret) st->worst_regret = q, st->worst_m = any[s]->m, st->worst_n = any[s]->n, st->worst_k = any[s]->k;
  }
  st->regret = n ? exp(sum / n) : 0;
  free(best), free(any);
}

/* The model of the rows (sorted by candidate, shapes numbered 0..nshapes-1), and cand_of: the
 * candidate each of its configs stands for (malloc'd). */
static int fit_rows_model(at_store *db, const char *op, const char *tag, const at_device_entry *dev, const fit_rows *fr,
                          int min_share, at_time_model *out, at_tm_fit_stats *st, int64_t **cand_of_out) {
  const at_op *opd = at_op_find(op);
  const row *rows = fr->rows;
  const size_t nrows = fr->nrows;
  const int nshapes = fr->nshapes, sm_count = fr->sm_count;
  int rc = AT_OK;
  memset(out, 0, sizeof *out);
  *cand_of_out = NULL;
  /* Each shape's (M, N, K), for the shares of configs that only some shapes can hold. */
  int64_t(*shp)[3] = at_xcalloc(nshapes ? (size_t)nshapes : 1, sizeof *shp);
  for (size_t r = 0; r < nrows; r++)
    shp[rows[r].shape][0] = rows[r].m, shp[rows[r].shape][1] = rows[r].n, shp[rows[r].shape][2] = rows[r].k;
  snprintf(out->op, sizeof out->op, "%s", op);
  snprintf(out->tag, sizeof out->tag, "%s", tag);
  snprintf(out->device_name, sizeof out->device_name, "%s", dev->name);
  snprintf(out->arch, sizeof out->arch, "%s", dev->arch);
  out->sm_count = sm_count;
  out->fit_shapes = nshapes;
  /* The fit's shapes, for the residuals (timemodel.h, format 3). */
  if (nshapes <= AT_TM_MAX_FIT) {
    out->nfit = nshapes;
    out->fit = at_xcalloc(nshapes ? (size_t)nshapes : 1, sizeof *out->fit);
    for (size_t r = 0; r < nrows; r++)
      out->fit[rows[r].shape][0] = rows[r].m, out->fit[rows[r].shape][1] = rows[r].n, out->fit[rows[r].shape][2] = rows[r].k;
  }
  size_t cap = 0;
  int64_t *cand_of = NULL;
  double(*x)[AT_TM_NF] = at_xcalloc(nrows ? nrows : 1, sizeof *x);
  double *t = at_xcalloc(nrows ? nrows : 1, sizeof *t);
  for (size_t a = 0, b; a < nrows && rc == AT_OK; a = b) {
    for (b = a; b < nrows && rows[b].cand == rows[a].cand; b++) {}
    at_config c;
    rc = at_store_candidate_config(db, rows[a].cand, &c);
    if (rc) break;
    int held = nshapes; /* the shapes this config can run on */
    if (at_config_shape_param(opd, &c) >= 0) {
      held = 0;
      for (int sh = 0; sh < nshapes; sh++) {
        at_config on = c;
        held += at_config_for_shape(opd, &on, shp[sh][1], shp[sh][2]);
      }
    }
    int need = (int)ceil(held * (min_share / 100.0));
    if (need < 2 * AT_TM_NF) need = 2 * AT_TM_NF;
    int n = 0;
    for (size_t r = a; r < b; r++)
      if (at_tm_features(&c, rows[r].m, rows[r].n, rows[r].k, sm_count, x[n]) == 0) t[n++] = rows[r].t;
    double coef[AT_TM_NF], rms = 0;
    if (n < need || at_tm_fit((const double(*)[AT_TM_NF])x, t, n, coef, &rms) != AT_OK) {
      st->dropped++;
      continue;
    }
    if (out->nconfigs == AT_TM_MAX_CONFIGS) {
      rc = at_fail(AT_ERR_INPUT, "model: more than %d configs were measured on %d%% of the shapes; fit from a menu run",
                   AT_TM_MAX_CONFIGS, min_share);
      break;
    }
    if ((size_t)out->nconfigs == cap) {
      cap = cap ? 2 * cap : 64;
      out->configs = at_xrealloc(out->configs, sizeof *out->configs * cap);
      out->coef = at_xrealloc(out->coef, sizeof *out->coef * cap);
      out->shapes = at_xrealloc(out->shapes, sizeof *out->shapes * cap);
      out->rel_rms = at_xrealloc(out->rel_rms, sizeof *out->rel_rms * cap);
      if (out->nfit) out->resid = at_xrealloc(out->resid, sizeof *out->resid * cap * (size_t)out->nfit);
      cand_of = at_xrealloc(cand_of, sizeof *cand_of * cap);
    }
    int i = out->nconfigs++;
    out->configs[i] = c;
    memcpy(out->coef[i], coef, sizeof coef);
    out->shapes[i] = n;
    out->rel_rms[i] = rms;
    if (out->nfit) {
      /* Its residuals: log(measured / predicted) where measured, NAN elsewhere and where the
       * prediction is off by more than e^10 (a reader refuses such a residual: a fit that bad says
       * nothing about its neighbours). */
      float *res = out->resid + (size_t)i * (size_t)out->nfit;
      for (int sh = 0; sh < out->nfit; sh++) res[sh] = NAN;
      for (size_t r = a; r < b; r++) {
        double f[AT_TM_NF], pr = 0;
        if (at_tm_features(&c, rows[r].m, rows[r].n, rows[r].k, sm_count, f)) continue;
        for (int j = 0; j < AT_TM_NF; j++) pr += coef[j] * f[j];
        const double lr = pr > 0 ? log(rows[r].t / pr) : NAN;
        if (isfinite(lr) && fabs(lr) <= 10) res[rows[r].shape] = (float)lr;
      }
    }
    cand_of[i] = rows[a].cand;
    st->results += n;
  }
  if (rc == AT_OK && out->nconfigs == 0)
    rc = at_fail(AT_ERR_INPUT, "model: no config of %s/%s was measured on %d%% of the %d shapes it can run on (and 10 at least); fit from a menu run",
                 op, tag, min_share, nshapes);
  free(x), free(t), free(shp);
  if (rc) at_tm_free(out), free(cand_of), cand_of = NULL;
  *cand_of_out = cand_of;
  return rc;
}

/* Every checked result of (op, tag) on dev, grouped by config, into fr. */
static int read_fit_rows(at_store *db, const at_device_entry *dev, const char *op, const char *tag, fit_rows *fr) {
  memset(fr, 0, sizeof *fr);
  AT_TRY(at_store_device_sm_count(db, dev->id, &fr->sm_count));
  if (fr->sm_count < 1) return at_fail(AT_ERR_INPUT, "model: the DB does not record the SM count of %s", dev->name);
  int rc = load_rows(db, dev, op, tag, &fr->rows, &fr->nrows, &fr->nshapes);
  if (rc == AT_OK) {
    qsort(fr->rows, fr->nrows, sizeof *fr->rows, cmp_cand);
    rc = group_shape_param(db, at_op_find(op), fr->rows, fr->nrows);
  }
  if (rc) free(fr->rows), fr->rows = NULL;
  return rc;
}

int at_tm_fit_db(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int min_share,
                 at_time_model *out, at_tm_fit_stats *st) {
  memset(out, 0, sizeof *out);
  memset(st, 0, sizeof *st);
  fit_rows fr;
  AT_TRY(read_fit_rows(db, dev, op, tag, &fr));
  st->shapes = fr.nshapes;
  int64_t *cand_of = NULL;
  int rc = fit_rows_model(db, op, tag, dev, &fr, min_share, out, st, &cand_of);
  if (rc == AT_OK) regret(out, &fr, cand_of, st);
  free(fr.rows), free(cand_of);
  return rc;
}

/* Leave one (N, K) out: the rows of the other (N, K), their shapes numbered again in the same
 * order (renum: scratch of all->nshapes). */
static void rows_without(const fit_rows *all, int64_t n, int64_t k, int *renum, fit_rows *out) {
  *out = (fit_rows){at_xcalloc(all->nrows ? all->nrows : 1, sizeof *out->rows), 0, 0, all->sm_count};
  for (int s = 0; s < all->nshapes; s++) renum[s] = -1;
  for (size_t r = 0; r < all->nrows; r++)
    if (all->rows[r].n != n || all->rows[r].k != k) out->rows[out->nrows++] = all->rows[r], renum[all->rows[r].shape] = 0;
  for (int s = 0; s < all->nshapes; s++)
    if (renum[s] == 0) renum[s] = out->nshapes++;
  for (size_t r = 0; r < out->nrows; r++) out->rows[r].shape = renum[out->rows[r].shape];
}

static int cmp_worst(const void *a, const void *b) {
  const at_tm_cv_shape *x = a, *y = b;
  return (x->regret < y->regret) - (x->regret > y->regret);
}

int at_tm_cv_db(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int min_share,
                at_tm_cv_stats *cv) {
  memset(cv, 0, sizeof *cv);
  fit_rows fr;
  AT_TRY(read_fit_rows(db, dev, op, tag, &fr));
  const at_op *opd = at_op_find(op);
  int rc = AT_OK, *renum = at_xcalloc(fr.nshapes ? (size_t)fr.nshapes : 1, sizeof *renum);
  double *best = at_xcalloc(fr.nshapes ? (size_t)fr.nshapes : 1, sizeof *best);
  const row **any = at_xcalloc(fr.nshapes ? (size_t)fr.nshapes : 1, sizeof *any);
  char *done = at_xcalloc(fr.nshapes ? (size_t)fr.nshapes : 1, 1); /* shapes whose (N, K) was left out already */
  shape_bests(&fr, best, any);
  double sum = 0;
  for (int s0 = 0; s0 < fr.nshapes && rc == AT_OK; s0++) {
    if (done[s0] || !any[s0]) continue;
    const int64_t n = any[s0]->n, k = any[s0]->k;
    fit_rows rest;
    rows_without(&fr, n, k, renum, &rest);
    at_time_model tm;
    at_tm_fit_stats st = {0};
    int64_t *cand_of = NULL;
    rc = fit_rows_model(db, op, tag, dev, &rest, min_share, &tm, &st, &cand_of);
    cv->folds++;
    for (int s = 0; s < fr.nshapes && rc == AT_OK; s++) {
      if (!any[s] || any[s]->n != n || any[s]->k != k) continue;
      done[s] = 1;
      /* As the runtime picks for an (N, K) with no file (at_tm_best with the op), without the tail
       * (the times are measured alone). */
      const int pick = at_tm_best(&tm, opd, 0, any[s]->m, n, k, fr.sm_count);
      const double picked = pick >= 0 ? time_of(&fr, cand_of[pick], s) : 0;
      if (!(picked > 0)) {
        cv->unmeasured++;
        continue;
      }
      const double q = picked / best[s];
      sum += log(q);
      if (q > 1.10) cv->above_110++;
      if (cv->nshapes == cv->cap) cv->shape = at_xrealloc(cv->shape, sizeof *cv->shape * (cv->cap = cv->cap ? 2 * cv->cap : 64));
      cv->shape[cv->nshapes++] = (at_tm_cv_shape){any[s]->m, n, k, q};
    }
    at_tm_free(&tm);
    free(cand_of), free(rest.rows);
  }
  if (rc == AT_OK) {
    cv->regret = cv->nshapes ? exp(sum / cv->nshapes) : 0;
    qsort(cv->shape, (size_t)cv->nshapes, sizeof *cv->shape, cmp_worst);
  } else {
    free(cv->shape), cv->shape = NULL, cv->nshapes = 0;
  }
  free(renum), free(best), free(any), free(done), free(fr.rows);
  return rc;
}

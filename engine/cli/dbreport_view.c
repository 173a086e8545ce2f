/* dbreport_view.c: see dbreport.h: which (device, shape) pairs a report shows, and the figures
 * derived for each result. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/json.h"
#include "../core/shapefile.h"
#include "../core/util.h"
#include "dbreport.h"

void rep_device_short(const at_rep_device *d, char *out, size_t cap) { snprintf(out, cap, "sm%d", d->cc); }

/* The product form of a device's name, as exported files spell it (NVIDIA_H100_80GB_HBM3). */
static void device_product(const at_rep_device *d, char *out, size_t cap) {
  snprintf(out, cap, "%s", d->name);
  for (char *p = out; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-') *p = '_';
}

int rep_device_matches(const at_rep_device *d, const char *want) {
  char a[32], b[160];
  rep_device_short(d, a, sizeof a);
  device_product(d, b, sizeof b);
  return strcmp(want, d->name) == 0 || strcmp(want, a) == 0 || strcmp(want, b) == 0;
}

double rep_rank_time(const at_rep_result *r) {
  if (strcmp(r->status, "ok") != 0 || r->time_us <= 0) return -1;
  return r->retime_us > 0 ? r->retime_us : r->time_us;
}

double rep_tflops(const rep_shape *s, double time_us) { return time_us > 0 ? s->flops / (time_us * 1e-6) / 1e12 : 0; }

static int by_rank(const void *a, const void *b) {
  const rep_row *x = *(const rep_row *const *)a, *y = *(const rep_row *const *)b;
  double tx = rep_rank_time(x->r), ty = rep_rank_time(y->r);
  if (tx != ty) return tx < ty ? -1 : 1;
  return x->r->candidate_id < y->r->candidate_id ? -1 : x->r->candidate_id > y->r->candidate_id;
}

const rep_row **rep_ranked(const rep_shape *s, size_t *n) {
  const rep_row **out = at_xcalloc(s->nrows ? s->nrows : 1, sizeof *out);
  *n = 0;
  for (size_t i = 0; i < s->nrows; i++)
    if (rep_rank_time(s->rows[i].r) > 0 && s->rows[i].c && s->rows[i].c->current) out[(*n)++] = &s->rows[i];
  qsort(out, *n, sizeof *out, by_rank);
  return out;
}

int64_t rep_param(const char *params, const char *name, int64_t dflt) {
  at_json *j = NULL;
  int64_t v = dflt;
  if (at_json_parse("params", params, strlen(params), &j) == AT_OK && at_json_int(j, name, &v) != 0) v = dflt;
  at_json_free(j);
  return v;
}

void rep_params_short(const char *params, char *out, size_t cap) {
  out[0] = 0;
  at_json *j = NULL;
  if (at_json_parse("params", params, strlen(params), &j) != AT_OK || j->kind != AT_J_OBJECT) {
    snprintf(out, cap, "%s", params);
    at_json_free(j);
    return;
  }
  char (*abbr)[16] = at_xcalloc(j->n ? j->n : 1, sizeof *abbr);
  int clash = 0;
  for (size_t i = 0; i < j->n; i++) {
    size_t k = 0;
    for (const char *p = j->keys[i]; *p && k + 1 < sizeof abbr[i]; p++)
      if (p == j->keys[i] || p[-1] == '_') abbr[i][k++] = *p;
    for (size_t e = 0; e < i; e++) clash |= strcmp(abbr[e], abbr[i]) == 0;
  }
  at_buf b = {0};
  for (size_t i = 0; i < j->n; i++) {
    const at_json *v = j->items[i];
    if (clash)
      at_buf_printf(&b, "%s%s=", i ? " " : "", j->keys[i]);
    else
      at_buf_printf(&b, "%s%s", i ? " " : "", abbr[i]);
    if (v->kind == AT_J_NUMBER && v->is_integer)
      at_buf_printf(&b, "%lld", (long long)v->integer);
    else
      at_buf_puts(&b, "?");
  }
  snprintf(out, cap, "%s", b.data ? b.data : "");
  at_buf_free(&b);
  free(abbr);
  at_json_free(j);
}

double rep_roofline(const rep_view *v, const rep_shape *s, double time_us) {
  double pt, pb, floor_s = 0;
  rep_peaks(v, s->dev->id, &pt, &pb);
  if (pt > 0) floor_s = s->flops / (pt * 1e12);
  if (pb > 0 && s->min_bytes / (pb * 1e9) > floor_s) floor_s = s->min_bytes / (pb * 1e9);
  return time_us > 0 && floor_s > 0 ? 100.0 * floor_s / (time_us * 1e-6) : 0;
}

void rep_peaks(const rep_view *v, int64_t device_id, double *tflops, double *gbs) {
  *tflops = *gbs = 0;
  for (size_t i = v->d.nruns; i-- > 0;) {
    const at_rep_run *r = &v->d.runs[i];
    if (r->device_id == device_id && (r->peak_tflops > 0 || r->peak_gbs > 0)) {
      *tflops = r->peak_tflops > 0 ? r->peak_tflops : 0;
      *gbs = r->peak_gbs > 0 ? r->peak_gbs : 0;
      return;
    }
  }
}

/* ---- building the view ------------------------------------------------------------------------ */

typedef struct wanted {
  int64_t m, n, k;
  const char *name;
  int found;
} wanted;

/* The op whose rules a --shapes file is read by: the one op of the (tag's) problems. */
static int op_of_problems(const at_report_data *d, const char *tag, const at_op **op) {
  const char *name = NULL;
  for (size_t i = 0; i < d->nproblems; i++) {
    if (tag && strcmp(d->problems[i].tag, tag) != 0) continue;
    if (name && strcmp(name, d->problems[i].op) != 0)
      return at_fail(AT_ERR_INPUT, "--shapes: the DB holds shapes of the ops %s and %s; choose one with --tag", name,
                     d->problems[i].op);
    name = d->problems[i].op;
  }
  if (!name) return at_fail(AT_ERR_INPUT, "--shapes: the DB has no shapes%s%s to match", tag ? " of tag " : "", tag ? tag : "");
  if (!(*op = at_op_find(name))) return at_fail(AT_ERR_RUNTIME, "the DB names an op this autotune does not know: %s", name);
  return AT_OK;
}

/* What a filter asks for, and errors for a filter that names nothing in the DB. */
static int check_filter(const rep_view *v, const rep_filter *f) {
  const at_report_data *d = &v->d;
  if (f->device) {
    int hit = 0;
    at_buf known = {0};
    for (size_t i = 0; i < d->ndevices; i++) {
      hit |= rep_device_matches(&d->devices[i], f->device);
      char s[32];
      rep_device_short(&d->devices[i], s, sizeof s);
      at_buf_printf(&known, "%s%s (%s)", i ? ", " : "", d->devices[i].name, s);
    }
    int rc = hit ? AT_OK
                 : at_fail(AT_ERR_INPUT, "--device: no device %s in the DB (it has: %s)", f->device,
                           known.data ? known.data : "none");
    at_buf_free(&known);
    AT_TRY(rc);
  }
  if (f->tag) {
    int hit = 0;
    for (size_t i = 0; i < d->nproblems && !hit; i++) hit = strcmp(d->problems[i].tag, f->tag) == 0;
    if (!hit) {
      at_buf known = {0};
      for (size_t i = 0; i < d->nproblems; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(d->problems[j].tag, d->problems[i].tag) == 0;
        if (!seen) at_buf_printf(&known, "%s%s", known.len ? ", " : "", d->problems[i].tag);
      }
      int rc = at_fail(AT_ERR_INPUT, "--tag: no shape of tag %s in the DB (its tags: %s)", f->tag,
                       known.data ? known.data : "none");
      at_buf_free(&known);
      return rc;
    }
  }
  return AT_OK;
}

int rep_shape_order(const void *a, const void *b) {
  const rep_shape *x = a, *y = b;
  if (x->dev->id != y->dev->id) return x->dev->id < y->dev->id ? -1 : 1;
  int t = strcmp(x->prob->tag, y->prob->tag);
  if (t) return t;
  const int64_t kx[3] = {x->prob->n, x->prob->k, x->prob->m}, ky[3] = {y->prob->n, y->prob->k, y->prob->m};
  for (int i = 0; i < 3; i++)
    if (kx[i] != ky[i]) return kx[i] < ky[i] ? -1 : 1;
  return 0;
}

static int want_index(const wanted *w, size_t nw, const at_rep_problem *p) {
  for (size_t i = 0; i < nw; i++)
    if (w[i].m == p->m && w[i].n == p->n && w[i].k == p->k) return (int)i;
  return -1;
}

static void fill_shape(rep_view *v, rep_shape *s) {
  const at_report_data *d = &v->d;
  const at_op *op = at_op_find(s->prob->op);
  at_shape sh = {s->prob->m, s->prob->n, s->prob->k};
  s->flops = op ? op->flops(&sh) : 2.0 * (double)sh.m * (double)sh.n * (double)sh.k;
  s->min_bytes = op ? op->min_bytes(&sh) : 0;
  s->winner = at_rep_winner_of(d, s->prob->id, s->dev->id);
  s->ref_us = s->vendor_us = -1;
  for (size_t i = 0; i < d->nbaselines; i++) {
    const at_rep_baseline *b = &d->baselines[i];
    if (b->problem_id != s->prob->id || b->device_id != s->dev->id) continue;
    if (strcmp(b->name, "cublas_fp32_reference") == 0)
      s->ref_us = b->time_us;
    else if (!s->vendor_name)
      s->vendor_us = b->time_us, s->vendor_name = b->name;
  }
  at_occ_limits lim;
  int have_lim = at_occ_limits_for_cc(s->dev->cc, &lim) == AT_OK;
  if (have_lim && s->dev->smem_per_block > 0) lim.smem_per_block = s->dev->smem_per_block;
  for (size_t i = 0; i < s->nrows; i++) {
    rep_row *row = &s->rows[i];
    row->c = at_rep_candidate_of(d, row->r->candidate_id);
    row->winner = s->winner && s->winner->candidate_id == row->r->candidate_id;
    row->occ.blocks_per_sm = -1;
    row->occ.limiter = "";
    if (have_lim && row->c && row->c->compiled && row->c->regs >= 0 && row->c->threads > 0)
      at_occupancy_of(&lim, row->c->threads, row->c->regs,
                      (row->c->static_smem > 0 ? row->c->static_smem : 0) + (row->c->smem_bytes > 0 ? row->c->smem_bytes : 0),
                      &row->occ);
  }
}

int rep_view_build(const char *db_path, const rep_filter *f, rep_view *v) {
  memset(v, 0, sizeof *v);
  at_store *db;
  AT_TRY(at_store_open_readonly(db_path, &db));
  int rc = at_store_report_load(db, &v->d);
  at_store_close(db);
  AT_TRY(rc);
  at_shape_list list = {0};
  wanted *want = NULL;
  size_t nwant = 0;
  if ((rc = check_filter(v, f))) goto out;
  if (f->shapes_file || f->only) {
    const at_op *op;
    if (!f->shapes_file) {
      rc = at_fail(AT_ERR_INPUT, "--only chooses groups of a --shapes file; give the file");
      goto out;
    }
    if ((rc = op_of_problems(&v->d, f->tag, &op))) goto out;
    if ((rc = at_shapes_load(f->shapes_file, op, &list))) {
      at_errctx("--shapes");
      goto out;
    }
    if ((rc = at_shapes_select(&list, f->only, f->shapes_file))) goto out;
    want = at_xcalloc(list.n ? list.n : 1, sizeof *want);
    for (size_t i = 0; i < list.n; i++)
      want[nwant++] = (wanted){list.shapes[i].m, list.shapes[i].n, list.shapes[i].k, list.names[i], 0};
  } else if (f->nshapes) {
    want = at_xcalloc(f->nshapes, sizeof *want);
    for (size_t i = 0; i < f->nshapes; i++) want[nwant++] = (wanted){f->shapes[i][0], f->shapes[i][1], f->shapes[i][2], NULL, 0};
  }
  /* The results come ordered by device and problem: each run of equal pairs is one shape. */
  const at_report_data *d = &v->d;
  v->shapes = at_xcalloc(d->nresults ? d->nresults : 1, sizeof *v->shapes);
  int *order = at_xcalloc(d->nresults ? d->nresults : 1, sizeof *order);
  for (size_t i = 0; i < d->nresults;) {
    size_t j = i;
    while (j < d->nresults && d->results[j].device_id == d->results[i].device_id &&
           d->results[j].problem_id == d->results[i].problem_id)
      j++;
    const at_rep_device *dev = at_rep_device_of(d, d->results[i].device_id);
    const at_rep_problem *prob = at_rep_problem_of(d, d->results[i].problem_id);
    int w = prob ? want_index(want, nwant, prob) : -1;
    int keep = dev && prob && (!f->device || rep_device_matches(dev, f->device)) && (!f->tag || strcmp(prob->tag, f->tag) == 0) &&
               (!want || w >= 0);
    if (keep) {
      rep_shape *s = &v->shapes[v->n];
      s->dev = dev, s->prob = prob;
      s->name = w >= 0 ? want[w].name : NULL;
      s->rows = at_xcalloc(j - i, sizeof *s->rows);
      for (size_t r = i; r < j; r++) s->rows[s->nrows++].r = &d->results[r];
      fill_shape(v, s);
      order[v->n++] = w;
      if (w >= 0) want[w].found = 1;
    }
    i = j;
  }
  if (want) { /* the list's order, device by device */
    for (size_t a = 1; a < v->n; a++)
      for (size_t b = a; b > 0 && (v->shapes[b - 1].dev->id > v->shapes[b].dev->id ||
                                   (v->shapes[b - 1].dev->id == v->shapes[b].dev->id && order[b - 1] > order[b]));
           b--) {
        rep_shape t = v->shapes[b];
        v->shapes[b] = v->shapes[b - 1], v->shapes[b - 1] = t;
        int o = order[b];
        order[b] = order[b - 1], order[b - 1] = o;
      }
  } else {
    qsort(v->shapes, v->n, sizeof *v->shapes, rep_shape_order);
  }
  free(order);
  for (size_t i = 0; i < nwant; i++)
    if (!want[i].found) {
      v->missing = at_xrealloc(v->missing, sizeof *v->missing * (v->nmissing + 1));
      v->missing[v->nmissing++] = at_xasprintf("M=%lld N=%lld K=%lld%s%s%s", (long long)want[i].m,
                                               (long long)want[i].n, (long long)want[i].k, want[i].name ? " (" : "",
                                               want[i].name ? want[i].name : "", want[i].name ? ")" : "");
    }
  /* The names point into the list: keep them with the view. */
  for (size_t i = 0; i < v->n; i++)
    if (v->shapes[i].name) v->shapes[i].name = at_xstrdup(v->shapes[i].name);
out:
  at_shape_list_free(&list);
  free(want);
  if (rc) rep_view_free(v);
  return rc;
}

void rep_view_free(rep_view *v) {
  for (size_t i = 0; i < v->n; i++) {
    free(v->shapes[i].rows);
    free((char *)v->shapes[i].name);
  }
  free(v->shapes);
  for (size_t i = 0; i < v->nmissing; i++) free(v->missing[i]);
  free(v->missing);
  at_report_data_free(&v->d);
  memset(v, 0, sizeof *v);
}

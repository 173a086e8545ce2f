/* dbreport_svg.c: `autotune report --plot FILE.svg`: one self-contained SVG file (no script, no
 * external reference: it opens in any browser).
 *  - One shape in the view: a heat map of the best time per (BLOCK_M, BLOCK_N) among the checked
 *    results of current candidates, coloured by its ratio to the shape's best, each cell with its
 *    time and the theoretical occupancy of the kernel that made it.
 *  - Several shapes (of one device): TFLOP/s against M per provider (the tuned winner, the vendor
 *    baseline, the cuBLAS FP32 reference), one panel per (N, K), M on a log2 axis. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util.h"
#include "dbreport.h"

static void esc(at_buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': at_buf_puts(b, "&amp;"); break;
    case '<': at_buf_puts(b, "&lt;"); break;
    case '>': at_buf_puts(b, "&gt;"); break;
    case '"': at_buf_puts(b, "&quot;"); break;
    case '\'': at_buf_puts(b, "&apos;"); break;
    default: at_buf_append(b, s, 1);
    }
  }
}

static void text(at_buf *b, double x, double y, const char *cls, const char *anchor, const char *s) {
  at_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s\" text-anchor=\"%s\">", x, y, cls, anchor);
  esc(b, s);
  at_buf_puts(b, "</text>\n");
}

static void begin(at_buf *b, double w, double h, const char *title) {
  at_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
                   "<title>",
                w, h, w, h);
  esc(b, title);
  at_buf_puts(b, "</title>\n<style>text{font-family:sans-serif;font-size:12px;fill:#222}"
                 ".t{font-size:15px;font-weight:bold}.s{font-size:10px;fill:#444}.a{font-size:11px}</style>\n"
                 "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
}

static void shape_label(const rep_shape *s, char *out, size_t cap) {
  snprintf(out, cap, "M=%lld N=%lld K=%lld%s%s%s", (long long)s->prob->m, (long long)s->prob->n, (long long)s->prob->k,
           s->name ? " (" : "", s->name ? s->name : "", s->name ? ")" : "");
}

/* ---- heat map --------------------------------------------------------------------------------- */

static int add_value(int64_t *vals, int *n, int64_t v) {
  for (int i = 0; i < *n; i++)
    if (vals[i] == v) return i;
  int i = *n;
  while (i > 0 && vals[i - 1] > v) vals[i] = vals[i - 1], i--;
  vals[i] = v;
  (*n)++;
  return i;
}

static int index_of(const int64_t *vals, int n, int64_t v) {
  for (int i = 0; i < n; i++)
    if (vals[i] == v) return i;
  return -1;
}

/* Green (ratio 1) through yellow to red (the worst ratio of the map), on a log scale. */
static void colour(double ratio, double worst, char out[8]) {
  double t = worst > 1 ? log(ratio) / log(worst) : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  static const double C[3][3] = {{26, 152, 80}, {254, 224, 139}, {215, 48, 39}};
  int seg = t < 0.5 ? 0 : 1;
  double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  int rgb[3];
  for (int i = 0; i < 3; i++) rgb[i] = (int)lround(C[seg][i] + (C[seg + 1][i] - C[seg][i]) * u);
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

enum { MAXV = 64 };

static int heat_map(const rep_view *v, at_buf *b) {
  const rep_shape *s = &v->shapes[0];
  int64_t bm[MAXV], bn[MAXV];
  int nm = 0, nn = 0;
  for (size_t i = 0; i < s->nrows; i++) {
    const at_rep_candidate *c = s->rows[i].c;
    if (!c) continue;
    int64_t m = rep_param(c->params, "BLOCK_M", -1), n = rep_param(c->params, "BLOCK_N", -1);
    if (m < 0 || n < 0) continue;
    if (index_of(bm, nm, m) < 0 && nm < MAXV) add_value(bm, &nm, m);
    if (index_of(bn, nn, n) < 0 && nn < MAXV) add_value(bn, &nn, n);
  }
  char label[256];
  shape_label(s, label, sizeof label);
  if (!nm || !nn)
    return at_fail(AT_ERR_INPUT, "--plot: the candidates of %s have no BLOCK_M and BLOCK_N parameters to map", label);
  const rep_row **best = at_xcalloc((size_t)(nm * nn), sizeof *best);
  size_t nr;
  const rep_row **ranked = rep_ranked(s, &nr);
  for (size_t i = nr; i-- > 0;) { /* slowest first: the fastest of each cell is written last */
    const at_rep_candidate *c = ranked[i]->c;
    int y = index_of(bm, nm, rep_param(c->params, "BLOCK_M", -1)), x = index_of(bn, nn, rep_param(c->params, "BLOCK_N", -1));
    if (x >= 0 && y >= 0) best[y * nn + x] = ranked[i];
  }
  double top = nr ? rep_rank_time(ranked[0]->r) : 0, worst = 1;
  for (int i = 0; i < nm * nn; i++)
    if (best[i] && top > 0 && rep_rank_time(best[i]->r) / top > worst) worst = rep_rank_time(best[i]->r) / top;
  const double cw = 160, ch = 58, left = 90, head = 96;
  char title[512], sub[512];
  snprintf(title, sizeof title, "%s: best time per (BLOCK_M, BLOCK_N)", label);
  snprintf(sub, sizeof sub, "%s, tag %s; %zu checked results of current candidates; each cell: the fastest, its time"
                            " and theoretical occupancy", s->dev->name, s->prob->tag, nr);
  /* Wide enough for the cells and the titles (about 9 and 5.5 pixels a character). */
  double w = fmax(fmax(left + cw * nn + 30, 24 + 9.0 * (double)strlen(title)), fmax(24 + 5.5 * (double)strlen(sub), 520));
  double h = head + ch * nm + 70;
  begin(b, w, h, title);
  text(b, 12, 24, "t", "start", title);
  text(b, 12, 44, "s", "start", sub);
  text(b, left + cw * nn / 2, head - 26, "a", "middle", "BLOCK_N");
  at_buf_printf(b, "<text x=\"24\" y=\"%.1f\" class=\"a\" text-anchor=\"middle\" transform=\"rotate(-90 24 %.1f)\">BLOCK_M</text>\n",
                head + ch * nm / 2, head + ch * nm / 2);
  for (int x = 0; x < nn; x++) {
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)bn[x]);
    text(b, left + cw * x + cw / 2, head - 8, "a", "middle", t);
  }
  for (int y = 0; y < nm; y++) {
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)bm[y]);
    text(b, left - 10, head + ch * y + ch / 2 + 4, "a", "end", t);
    for (int x = 0; x < nn; x++) {
      const rep_row *r = best[y * nn + x];
      double cx = left + cw * x, cy = head + ch * y;
      char fill[8] = "#dddddd", l1[64] = "no checked time", l2[64] = "";
      if (r) {
        double t_us = rep_rank_time(r->r);
        colour(t_us / top, worst, fill);
        snprintf(l1, sizeof l1, "%.2f us (%.2fx)", t_us, t_us / top);
        if (r->occ.blocks_per_sm >= 0)
          snprintf(l2, sizeof l2, "occ %.0f%%, %d blk/SM, %s", 100.0 * r->occ.fraction, r->occ.blocks_per_sm,
                   strcmp(r->occ.limiter, "registers") == 0       ? "regs"
                   : strcmp(r->occ.limiter, "shared memory") == 0 ? "smem"
                                                                  : r->occ.limiter);
        else
          snprintf(l2, sizeof l2, "occupancy unknown");
      }
      at_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"white\"/>\n", cx, cy,
                    cw, ch, fill);
      text(b, cx + cw / 2, cy + ch / 2 - 3, "a", "middle", l1);
      if (l2[0]) text(b, cx + cw / 2, cy + ch / 2 + 13, "s", "middle", l2);
    }
  }
  /* The scale: best to worst. */
  double ly = head + ch * nm + 24;
  for (int i = 0; i <= 10; i++) {
    char fill[8];
    colour(pow(worst, i / 10.0), worst, fill);
    at_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"20\" height=\"12\" fill=\"%s\"/>\n", left + 20.0 * i, ly, fill);
  }
  char scale[96];
  snprintf(scale, sizeof scale, "1.00x (%.2f us) ... %.2fx of the best", top, worst);
  text(b, left + 230, ly + 10, "s", "start", scale);
  at_buf_puts(b, "</svg>\n");
  free(best);
  free(ranked);
  return AT_OK;
}

/* ---- TFLOP/s against M ------------------------------------------------------------------------ */

/* The DB's providers, then those of the results files (report --results). */
enum { PROV_TUNED, PROV_VENDOR, PROV_REF, NDB, MAXPROV = 12 };
static const char *const PROV_COLOUR[MAXPROV] = {"#1f77b4", "#d62728", "#7f7f7f", "#2ca02c", "#ff7f0e", "#9467bd",
                                                 "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939"};

typedef struct provider {
  const char *name;
  const at_results_file *file; /* NULL: one of the DB's */
} provider;

/* A provider's TFLOP/s on a shape; 0 when it has no time. */
static double provider_tflops(const rep_shape *s, int p, const provider *pv) {
  double t = -1;
  if (pv[p].file) {
    const at_result_rec *r = at_results_find(pv[p].file, pv[p].name, s->prob->m, s->prob->n, s->prob->k);
    t = r && strcmp(r->status, "ok") == 0 ? r->time_us : -1;
  } else if (p == PROV_TUNED) {
    if (s->winner) t = s->winner->time_us;
    if (t <= 0) { /* no decided winner: the fastest checked result */
      size_t n;
      const rep_row **r = rep_ranked(s, &n);
      t = n ? rep_rank_time(r[0]->r) : -1;
      free(r);
    }
  } else {
    t = p == PROV_VENDOR ? s->vendor_us : s->ref_us;
  }
  return rep_tflops(s, t);
}

static double nice_ceiling(double v) {
  if (v <= 0) return 1;
  double e = pow(10, floor(log10(v))), f = v / e;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

static int lines(const rep_view *v, at_buf *b) {
  for (size_t i = 1; i < v->n; i++)
    if (v->shapes[i].dev != v->shapes[0].dev)
      return at_fail(AT_ERR_INPUT, "--plot: the shapes are of several devices (%s, %s); choose one with --device",
                     v->shapes[0].dev->name, v->shapes[i].dev->name);
  /* Panels: the distinct (tag, N, K), in the view's order. */
  size_t *panel_of = at_xcalloc(v->n, sizeof *panel_of), *first = at_xcalloc(v->n, sizeof *first), npanels = 0;
  for (size_t i = 0; i < v->n; i++) {
    const at_rep_problem *p = v->shapes[i].prob;
    size_t k = 0;
    while (k < npanels && !(v->shapes[first[k]].prob->n == p->n && v->shapes[first[k]].prob->k == p->k &&
                       strcmp(v->shapes[first[k]].prob->tag, p->tag) == 0))
      k++;
    if (k == npanels) first[npanels++] = i;
    panel_of[i] = k;
  }
  const char *vendor = NULL;
  for (size_t i = 0; i < v->n && !vendor; i++) vendor = v->shapes[i].vendor_name;
  provider pv[MAXPROV] = {{"autotune (tuned winner)", NULL}, {vendor ? vendor : "vendor", NULL}, {"cublas_fp32_reference", NULL}};
  int nprov = NDB;
  for (size_t f = 0; f < v->nfiles; f++)
    for (size_t q = 0; q < v->files[f].nproviders; q++) {
      if (nprov == MAXPROV) {
        free(panel_of), free(first);
        return at_fail(AT_ERR_INPUT, "--results: at most %d providers in a plot", MAXPROV);
      }
      pv[nprov++] = (provider){v->files[f].providers[q], &v->files[f]};
    }
  const double pw = 380, ph = 250, ml = 56, mt = 34, mb = 40;
  size_t cols = npanels < 3 ? npanels : 3, rows = (npanels + cols - 1) / cols;
  double legend = 18.0 * ((nprov - 1) / 4); /* legend lines beyond the first */
  double w = fmax(cols * pw + 20, 12 + 250.0 * (nprov < 4 ? nprov : 4)), h = 90 + legend + rows * (ph + 20);
  char title[512];
  snprintf(title, sizeof title, "TFLOP/s against M per provider: %s, %zu shapes", v->shapes[0].dev->name, v->n);
  begin(b, w, h, title);
  text(b, 12, 24, "t", "start", title);
  for (int p = 0; p < nprov; p++) { /* the legend, four a line */
    double x = 12 + 250.0 * (p % 4), y = 48 + 18.0 * (p / 4);
    at_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>\n", x, y,
                  x + 24, y, PROV_COLOUR[p]);
    text(b, x + 30, y + 4, "a", "start", pv[p].name);
  }
  for (size_t k = 0; k < npanels; k++) {
    double ox = 10 + (double)(k % cols) * pw, oy = 70 + legend + (double)(k / cols) * (ph + 20);
    double x0 = ox + ml, x1 = ox + pw - 16, y0 = oy + ph - mb, y1 = oy + mt;
    int64_t lo = INT64_MAX, hi = 0;
    double ymax = 0;
    for (size_t i = 0; i < v->n; i++) {
      if (panel_of[i] != k) continue;
      const rep_shape *s = &v->shapes[i];
      lo = s->prob->m < lo ? s->prob->m : lo;
      hi = s->prob->m > hi ? s->prob->m : hi;
      for (int p = 0; p < nprov; p++) ymax = fmax(ymax, provider_tflops(s, p, pv));
    }
    ymax = nice_ceiling(ymax * 1.05);
    double l2lo = log2((double)lo), l2hi = log2((double)hi);
    if (l2hi - l2lo < 1) l2lo -= 0.5, l2hi += 0.5;
#define XPOS(m) (x0 + (log2((double)(m)) - l2lo) / (l2hi - l2lo) * (x1 - x0))
#define YPOS(t) (y0 - (t) / ymax * (y0 - y1))
    const rep_shape *f = &v->shapes[first[k]];
    char head[256];
    snprintf(head, sizeof head, "N=%lld K=%lld, tag %s", (long long)f->prob->n, (long long)f->prob->k, f->prob->tag);
    text(b, ox + pw / 2, oy + 18, "a", "middle", head);
    at_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\"/>\n", x0, y1,
                  x1 - x0, y0 - y1);
    for (int t = 0; t <= 4; t++) { /* y grid */
      double val = ymax * t / 4, y = YPOS(val);
      char lab[32];
      snprintf(lab, sizeof lab, "%g", val);
      at_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x0, y, x1, y);
      text(b, x0 - 5, y + 4, "s", "end", lab);
    }
    for (size_t i = 0; i < v->n; i++) { /* x ticks at every M */
      if (panel_of[i] != k) continue;
      char lab[32];
      snprintf(lab, sizeof lab, "%lld", (long long)v->shapes[i].prob->m);
      double x = XPOS(v->shapes[i].prob->m);
      at_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n", x, y0, x, y0 + 4);
      text(b, x, y0 + 16, "s", "middle", lab);
    }
    text(b, (x0 + x1) / 2, y0 + 32, "s", "middle", "M");
    at_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"s\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">TFLOP/s</text>\n",
                  ox + 14, (y0 + y1) / 2, ox + 14, (y0 + y1) / 2);
    for (int p = 0; p < nprov; p++) {
      at_buf pts = {0};
      int npts = 0;
      for (size_t i = 0; i < v->n; i++) { /* the view is ordered by M within (N, K) */
        if (panel_of[i] != k) continue;
        double t = provider_tflops(&v->shapes[i], p, pv);
        if (t <= 0) continue;
        double x = XPOS(v->shapes[i].prob->m), y = YPOS(t);
        at_buf_printf(&pts, "%s%.1f,%.1f", npts++ ? " " : "", x, y);
        at_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>M=%lld: %.1f TFLOP/s</title></circle>\n",
                      x, y, PROV_COLOUR[p], (long long)v->shapes[i].prob->m, t);
      }
      if (npts > 1)
        at_buf_printf(b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts.data,
                      PROV_COLOUR[p]);
      at_buf_free(&pts);
    }
#undef XPOS
#undef YPOS
  }
  at_buf_puts(b, "</svg>\n");
  free(panel_of);
  free(first);
  return AT_OK;
}

int rep_write_svg(const rep_view *v, const char *path) {
  if (v->n == 0) return at_fail(AT_ERR_RUNTIME, "--plot: no results to plot");
  at_buf b = {0};
  int rc;
  if (v->n == 1) {
    rc = heat_map(v, &b);
  } else {
    /* The line plot wants each panel's shapes in ascending M, whatever order a shapes list gave. */
    rep_view sorted = *v; /* a shallow copy, its shapes reordered */
    sorted.shapes = at_xmalloc(sizeof *v->shapes * v->n);
    memcpy(sorted.shapes, v->shapes, sizeof *v->shapes * v->n);
    qsort(sorted.shapes, sorted.n, sizeof *sorted.shapes, rep_shape_order);
    rc = lines(&sorted, &b);
    free(sorted.shapes);
  }
  if (rc == AT_OK) {
    rc = at_write_file_atomic(path, b.data, b.len);
    if (rc) at_errctx("--plot %s", path);
  }
  at_buf_free(&b);
  return rc;
}

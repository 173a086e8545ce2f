/* dbreport_csv.c: `autotune report --csv FILE`: every result of the view, one row each, in the
 * spirit of aiter's tuned CSV (the shape, the kernel, its time and TFLOP/s) with the vendor's time
 * and the speedup over it. RFC 4180: a field with a comma, a quote or a line break is quoted, its
 * quotes doubled. Columns: docs/formats.md, "The --csv file of autotune report". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/util.h"
#include "dbreport.h"

static const char *const COLUMNS =
    "device,arch,op,tag,M,N,K,name,variant,family,params,kernel,status,current,winner,time_us,retime_us,time_min_us,"
    "time_max_us,samples,cut,tflops,gbs,roofline_pct,check_ratio,occupancy_blocks,occupancy_pct,occupancy_limiter,"
    "occupancy_measured,threads,regs,smem_bytes,spill_stores,spill_loads,vendor,vendor_us,speedup,reference_us,message\n";

static void field(at_buf *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    at_buf_puts(b, s);
  } else {
    at_buf_puts(b, "\"");
    for (const char *p = s; *p; p++) {
      if (*p == '"') at_buf_append(b, "\"", 1); /* a quote is doubled */
      at_buf_append(b, p, 1);
    }
    at_buf_puts(b, "\"");
  }
  at_buf_puts(b, ",");
}

/* A number, or an empty field when it is not known (< 0). */
static void number(at_buf *b, double v, const char *fmt) {
  if (v >= 0) at_buf_printf(b, fmt, v);
  at_buf_puts(b, ",");
}

static void integer(at_buf *b, int64_t v) {
  if (v >= 0) at_buf_printf(b, "%lld", (long long)v);
  at_buf_puts(b, ",");
}

static void row(at_buf *b, const rep_shape *s, const rep_row *w) {
  const at_rep_result *r = w->r;
  const at_rep_candidate *c = w->c;
  field(b, s->dev->name);
  field(b, s->dev->arch);
  field(b, s->prob->op);
  field(b, s->prob->tag);
  at_buf_printf(b, "%lld,%lld,%lld,", (long long)s->prob->m, (long long)s->prob->n, (long long)s->prob->k);
  field(b, s->name ? s->name : "");
  field(b, c ? c->variant : "");
  field(b, c ? c->family : "");
  field(b, c ? c->params : "");
  field(b, c ? c->name_expr : "");
  field(b, r->status);
  at_buf_printf(b, "%d,%d,", c && c->current, w->winner);
  number(b, r->time_us, "%.4f");
  number(b, r->retime_us, "%.4f");
  number(b, r->time_min_us, "%.4f");
  number(b, r->time_max_us, "%.4f");
  integer(b, r->samples);
  integer(b, r->cut);
  double t = rep_rank_time(r);
  number(b, t > 0 ? rep_tflops(s, r->time_us) : -1, "%.3f");
  number(b, r->gbs, "%.2f");
  number(b, r->roofline_pct, "%.2f");
  number(b, r->check_ratio > 1e300 ? -1 : r->check_ratio, "%.4g");
  integer(b, w->occ.blocks_per_sm);
  number(b, w->occ.blocks_per_sm >= 0 ? 100.0 * w->occ.fraction : -1, "%.1f");
  field(b, w->occ.blocks_per_sm >= 0 ? w->occ.limiter : "");
  integer(b, r->occupancy);
  integer(b, c ? c->threads : -1);
  integer(b, c ? c->regs : -1);
  integer(b, c ? (c->static_smem > 0 ? c->static_smem : 0) + (c->smem_bytes > 0 ? c->smem_bytes : 0) : -1);
  integer(b, c ? c->spill_stores : -1);
  integer(b, c ? c->spill_loads : -1);
  field(b, s->vendor_name ? s->vendor_name : "");
  number(b, s->vendor_us, "%.4f");
  number(b, s->vendor_us > 0 && r->time_us > 0 && strcmp(r->status, "ok") == 0 ? s->vendor_us / r->time_us : -1, "%.4f");
  number(b, s->ref_us, "%.4f");
  field(b, r->message ? r->message : "");
  b->data[b->len - 1] = '\n'; /* the last field's comma ends the row */
}

int rep_write_csv(const rep_view *v, const char *path) {
  at_buf b = {0};
  at_buf_puts(&b, COLUMNS);
  for (size_t i = 0; i < v->n; i++)
    for (size_t j = 0; j < v->shapes[i].nrows; j++) row(&b, &v->shapes[i], &v->shapes[i].rows[j]);
  int rc = at_write_file_atomic(path, b.data, b.len);
  at_buf_free(&b);
  if (rc) at_errctx("--csv %s", path);
  return rc;
}

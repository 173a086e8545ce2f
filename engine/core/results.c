/* results.c: see results.h. */
#include "results.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

static const char *const SHAPE_KEYS[] = {"m", "n", "k", "name", "sets", "flops",
                                         "min_bytes", "ratio", "ratios", "sm_mhz", NULL};

int at_results_provider_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 63) return 0;
  for (const char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("_-.+", *p)) return 0;
  for (const char *const *k = SHAPE_KEYS; *k; k++)
    if (strcmp(*k, name) == 0) return 0;
  return 1;
}

static char *str_or_null(const at_json *obj, const char *key) {
  const char *s = at_json_str(obj, key);
  return s ? at_xstrdup(s) : NULL;
}

typedef struct ctx {
  const char *path;
  char where[256]; /* "shapes[3] (M=16 N=1536 K=7168), triton" */
} ctx;

static int bad(const ctx *c, const char *what) {
  return at_fail(AT_ERR_INPUT, "%s: %s: %s", c->path, c->where, what);
}

/* An optional number: -1 when absent or null; "inf" where allowed. */
static int opt_number(const ctx *c, const at_json *rec, const char *key, int inf_ok, double *out) {
  const at_json *v = at_json_get(rec, key);
  *out = -1;
  if (!v || v->kind == AT_J_NULL) return AT_OK;
  if (inf_ok && v->kind == AT_J_STRING && strcmp(v->string, "inf") == 0) {
    *out = INFINITY;
    return AT_OK;
  }
  if (v->kind != AT_J_NUMBER || v->number < 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s must be a number from 0%s, or null", key, inf_ok ? " or \"inf\"" : "");
    return bad(c, msg);
  }
  *out = v->number;
  return AT_OK;
}

static int read_record(ctx *c, const at_json *rec, at_result_rec *r) {
  if (rec->kind != AT_J_OBJECT) return bad(c, "a provider's record must be an object");
  const char *status = at_json_str(rec, "status");
  if (!status || !status[0] || strlen(status) >= sizeof r->status)
    return bad(c, "a record needs a status (a short string: ok, wrong, none, error, fault, ...)");
  snprintf(r->status, sizeof r->status, "%s", status);
  AT_TRY(opt_number(c, rec, "time_us", 0, &r->time_us));
  AT_TRY(opt_number(c, rec, "time_min_us", 0, &r->time_min_us));
  AT_TRY(opt_number(c, rec, "time_max_us", 0, &r->time_max_us));
  AT_TRY(opt_number(c, rec, "check_ratio", 1, &r->check_ratio));
  double samples;
  AT_TRY(opt_number(c, rec, "samples", 0, &samples));
  r->samples = samples < 0 ? -1 : (int64_t)samples;
  if (strcmp(r->status, "ok") == 0 && !(r->time_us > 0)) return bad(c, "status ok needs a positive time_us");
  const at_json *kernel = at_json_get(rec, "kernel");
  if (kernel && kernel->kind != AT_J_STRING && kernel->kind != AT_J_NULL) return bad(c, "kernel must be a string");
  r->kernel = str_or_null(rec, "kernel");
  r->message = at_xstrdup(at_json_str(rec, "message") ? at_json_str(rec, "message") : "");
  const at_json *meta = at_json_get(rec, "meta");
  if (meta && meta->kind != AT_J_NULL) {
    at_buf b = {0};
    at_json_write(&b, meta);
    r->meta = at_buf_steal(&b);
  }
  return AT_OK;
}

static int read_providers(ctx *c, const at_json *root, at_results_file *f) {
  const at_json *p = at_json_get(root, "providers");
  snprintf(c->where, sizeof c->where, "providers");
  if (!p || p->kind != AT_J_ARRAY || p->n == 0) return bad(c, "a results file lists its providers: [\"name\", ...]");
  f->providers = at_xcalloc(p->n, sizeof *f->providers);
  for (size_t i = 0; i < p->n; i++) {
    const at_json *v = p->items[i];
    if (v->kind != AT_J_STRING || !at_results_provider_name_ok(v->string))
      return bad(c, "a provider is named by 1 to 63 letters, digits and _ - . + (and not m, n, k, name, sets, flops,"
                    " min_bytes, ratio, ratios or sm_mhz)");
    for (size_t j = 0; j < f->nproviders; j++)
      if (strcmp(f->providers[j], v->string) == 0) return bad(c, "a provider is listed twice");
    f->providers[f->nproviders++] = at_xstrdup(v->string);
  }
  return AT_OK;
}

static int read_shapes(ctx *c, const at_json *root, at_results_file *f) {
  const at_json *shapes = at_json_get(root, "shapes");
  snprintf(c->where, sizeof c->where, "shapes");
  if (!shapes || shapes->kind != AT_J_ARRAY) return bad(c, "a results file has a list of shapes");
  f->recs = at_xcalloc(shapes->n * f->nproviders + 1, sizeof *f->recs);
  for (size_t i = 0; i < shapes->n; i++) {
    const at_json *s = shapes->items[i];
    int64_t d[3];
    snprintf(c->where, sizeof c->where, "shapes[%zu]", i);
    if (s->kind != AT_J_OBJECT) return bad(c, "a shape must be an object with m, n and k");
    for (int k = 0; k < 3; k++)
      if (at_json_int(s, (const char *[]){"m", "n", "k"}[k], &d[k]) != 0 || d[k] < 1)
        return bad(c, "a shape needs m, n and k, positive integers");
    snprintf(c->where, sizeof c->where, "shapes[%zu] (M=%lld N=%lld K=%lld)", i, (long long)d[0], (long long)d[1],
             (long long)d[2]);
    for (size_t j = 0; j < i; j++) {
      int64_t e[3];
      const at_json *t = shapes->items[j];
      if (at_json_int(t, "m", &e[0]) == 0 && at_json_int(t, "n", &e[1]) == 0 && at_json_int(t, "k", &e[2]) == 0 &&
          e[0] == d[0] && e[1] == d[1] && e[2] == d[2]) {
        char msg[96];
        snprintf(msg, sizeof msg, "the shape is listed twice (first as shapes[%zu])", j);
        return bad(c, msg);
      }
    }
    for (size_t p = 0; p < f->nproviders; p++) {
      const at_json *rec = at_json_get(s, f->providers[p]);
      if (!rec) continue;
      size_t len = strlen(c->where);
      snprintf(c->where + len, sizeof c->where - len, ", %s", f->providers[p]);
      at_result_rec *r = &f->recs[f->n++];
      r->provider = f->providers[p];
      r->m = d[0], r->n = d[1], r->k = d[2];
      AT_TRY(read_record(c, rec, r));
      c->where[len] = 0;
    }
  }
  return AT_OK;
}

int at_results_parse(const char *path, const char *text, size_t len, at_results_file *f) {
  memset(f, 0, sizeof *f);
  f->path = at_xstrdup(path);
  at_json *root = NULL;
  int rc = at_json_parse(path, text, len, &root);
  ctx c = {path, "the top level"};
  if (rc == AT_OK && root->kind != AT_J_OBJECT) rc = bad(&c, "a results file is a JSON object");
  if (rc == AT_OK) {
    const char *format = at_json_str(root, "format");
    if (!format || strcmp(format, AT_RESULTS_FORMAT) != 0)
      rc = at_fail(AT_ERR_INPUT, "%s: \"format\" must be \"%s\" (docs/formats.md, \"Results files\"), got %s%s%s", path,
                   AT_RESULTS_FORMAT, format ? "\"" : "", format ? format : "none", format ? "\"" : "");
  }
  if (rc == AT_OK) {
    f->op = str_or_null(root, "op");
    f->device = str_or_null(root, "device");
    f->arch = str_or_null(root, "arch");
    f->tag = str_or_null(root, "tag");
    rc = read_providers(&c, root, f);
  }
  if (rc == AT_OK) rc = read_shapes(&c, root, f);
  at_json_free(root);
  if (rc) at_results_free(f);
  return rc;
}

int at_results_load(const char *path, at_results_file *out) {
  memset(out, 0, sizeof *out);
  char *text;
  size_t n;
  AT_TRY(at_read_file(path, 256u << 20, &text, &n));
  int rc = at_results_parse(path, text, n, out);
  free(text);
  return rc;
}

void at_results_free(at_results_file *f) {
  for (size_t i = 0; i < f->n; i++) free(f->recs[i].message), free(f->recs[i].kernel), free(f->recs[i].meta);
  for (size_t i = 0; i < f->nproviders; i++) free(f->providers[i]);
  free(f->providers), free(f->recs), free(f->path), free(f->op), free(f->device), free(f->arch), free(f->tag);
  memset(f, 0, sizeof *f);
}

const at_result_rec *at_results_find(const at_results_file *f, const char *provider, int64_t m, int64_t n, int64_t k) {
  for (size_t i = 0; i < f->n; i++) {
    const at_result_rec *r = &f->recs[i];
    if (r->m == m && r->n == n && r->k == k && strcmp(r->provider, provider) == 0) return r;
  }
  return NULL;
}

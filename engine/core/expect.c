/* expect.c: see expect.h. */
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

void at_expect_default_settings(at_expect_settings *s) {
  *s = (at_expect_settings){.atol = 1e-2, .rtol = 1e-2, .gamma = 0.0009765625, /* 2^-10: the shipped spaces' */
                            .seed = 20261122,
                            .warmup = 1,
                            .samples = 20,
                            .l2_multiple = 2.0};
}

void at_expect_add(at_expect_file *f, const at_expect_entry *e) {
  f->e = at_xrealloc(f->e, sizeof *f->e * (f->n + 1));
  f->e[f->n] = *e;
  f->e[f->n].config = e->config ? at_xstrdup(e->config) : NULL;
  f->n++;
}

void at_expect_free(at_expect_file *f) {
  for (size_t i = 0; i < f->n; i++) free(f->e[i].config);
  free(f->e), free(f->source), free(f->db), free(f->recorded);
  memset(f, 0, sizeof *f);
}

/* ---- reading ---------------------------------------------------------------------------------- */

static int number(const at_json *o, const char *key, double *out) {
  const at_json *v = at_json_get(o, key);
  if (!v) return 1; /* absent: the default stays */
  if (v->kind != AT_J_NUMBER) return -1;
  *out = v->number;
  return 0;
}

static int copy_str(const at_json *o, const char *key, char *dst, size_t cap, int required) {
  const char *s = at_json_str(o, key);
  if (!s) return required ? -1 : 0;
  if (strlen(s) >= cap || (required && !s[0])) return -1;
  snprintf(dst, cap, "%s", s);
  return 0;
}

static int read_settings(const char *path, const at_json *root, at_expect_settings *s) {
  at_expect_default_settings(s);
  const at_json *c = at_json_get(root, "check"), *t = at_json_get(root, "timing");
  double seed = (double)s->seed, warmup = s->warmup, samples = s->samples;
  if ((c && (number(c, "atol", &s->atol) < 0 || number(c, "rtol", &s->rtol) < 0 || number(c, "gamma", &s->gamma) < 0)) ||
      (t && (number(t, "warmup", &warmup) < 0 || number(t, "samples", &samples) < 0 ||
             number(t, "l2_multiple", &s->l2_multiple) < 0 || number(t, "seed", &seed) < 0)))
    return at_fail(AT_ERR_INPUT, "%s: check and timing hold numbers (atol, rtol, gamma; warmup, samples, l2_multiple, seed)",
                   path);
  if (s->atol < 0 || s->rtol < 0 || s->gamma < 0 || s->gamma >= 1 || warmup < 0 || warmup > 1000 || samples < 1 ||
      samples > 10000 || s->l2_multiple < 0 || s->l2_multiple > 64 || seed < 0)
    return at_fail(AT_ERR_INPUT, "%s: a check or timing setting is out of range", path);
  s->seed = (uint64_t)seed, s->warmup = (int)warmup, s->samples = (int)samples;
  return AT_OK;
}

static int read_entry(const char *path, size_t i, const at_json *o, at_expect_entry *e) {
  memset(e, 0, sizeof *e);
  e->time_us = -1;
  int64_t d[3];
  if (o->kind != AT_J_OBJECT || copy_str(o, "device", e->device, sizeof e->device, 1) ||
      copy_str(o, "op", e->op, sizeof e->op, 1) || copy_str(o, "tag", e->tag, sizeof e->tag, 1) ||
      copy_str(o, "arch", e->arch, sizeof e->arch, 0) || at_json_int(o, "m", &d[0]) || at_json_int(o, "n", &d[1]) ||
      at_json_int(o, "k", &d[2]) || d[0] < 1 || d[1] < 1 || d[2] < 1 || number(o, "tflops", &e->tflops) != 0 ||
      !(e->tflops > 0) || number(o, "time_us", &e->time_us) < 0)
    return at_fail(AT_ERR_INPUT, "%s: expectations[%zu] needs device, op and tag (strings), m, n and k (positive"
                   " integers) and tflops (a positive number)", path, i);
  e->m = d[0], e->n = d[1], e->k = d[2];
  const at_json *cfg = at_json_get(o, "config");
  if (cfg && cfg->kind != AT_J_NULL) {
    at_buf b = {0};
    at_json_write(&b, cfg);
    e->config = at_buf_steal(&b);
  }
  return AT_OK;
}

int at_expect_parse(const char *path, const char *text, size_t len, at_expect_file *f) {
  memset(f, 0, sizeof *f);
  at_json *root = NULL;
  AT_TRY(at_json_parse(path, text, len, &root));
  int rc = AT_OK;
  const char *format = at_json_str(root, "format");
  const at_json *list = at_json_get(root, "expectations");
  if (!format || strcmp(format, AT_EXPECT_FORMAT) != 0)
    rc = at_fail(AT_ERR_INPUT, "%s: \"format\" must be \"%s\" (docs/formats.md, \"Expectations files\")", path,
                 AT_EXPECT_FORMAT);
  else if (!list || list->kind != AT_J_ARRAY)
    rc = at_fail(AT_ERR_INPUT, "%s: \"expectations\" must be a list", path);
  if (rc == AT_OK) rc = read_settings(path, root, &f->settings);
  if (rc == AT_OK) {
    const char *s;
    if ((s = at_json_str(root, "source"))) f->source = at_xstrdup(s);
    if ((s = at_json_str(root, "db"))) f->db = at_xstrdup(s);
    if ((s = at_json_str(root, "recorded"))) f->recorded = at_xstrdup(s);
  }
  for (size_t i = 0; rc == AT_OK && i < list->n; i++) {
    at_expect_entry e;
    rc = read_entry(path, i, list->items[i], &e);
    for (size_t j = 0; rc == AT_OK && j < f->n; j++) {
      const at_expect_entry *o = &f->e[j];
      if (strcmp(o->device, e.device) == 0 && strcmp(o->op, e.op) == 0 && strcmp(o->tag, e.tag) == 0 && o->m == e.m &&
          o->n == e.n && o->k == e.k)
        rc = at_fail(AT_ERR_INPUT, "%s: expectations[%zu] repeats expectations[%zu] (%s, %s, M=%lld N=%lld K=%lld)", path,
                     i, j, e.device, e.tag, (long long)e.m, (long long)e.n, (long long)e.k);
    }
    if (rc == AT_OK) {
      at_expect_add(f, &e);
    }
    free(e.config);
  }
  at_json_free(root);
  if (rc) at_expect_free(f);
  return rc;
}

int at_expect_load(const char *path, at_expect_file *out) {
  memset(out, 0, sizeof *out);
  char *text;
  size_t n;
  AT_TRY(at_read_file(path, 64u << 20, &text, &n));
  int rc = at_expect_parse(path, text, n, out);
  free(text);
  return rc;
}

/* ---- writing ---------------------------------------------------------------------------------- */

static void str_or_null(at_buf *b, const char *s) {
  if (s)
    at_buf_json_string(b, s);
  else
    at_buf_puts(b, "null");
}

char *at_expect_to_json(const at_expect_file *f) {
  at_buf b = {0};
  const at_expect_settings *s = &f->settings;
  at_buf_puts(&b, "{\n  \"format\": \"" AT_EXPECT_FORMAT "\",\n  \"recorded\": ");
  str_or_null(&b, f->recorded);
  at_buf_puts(&b, ",\n  \"source\": ");
  str_or_null(&b, f->source);
  at_buf_puts(&b, ",\n  \"db\": ");
  str_or_null(&b, f->db);
  at_buf_printf(&b, ",\n  \"check\": {\"atol\": %.17g, \"rtol\": %.17g, \"gamma\": %.17g},\n", s->atol, s->rtol, s->gamma);
  at_buf_printf(&b, "  \"timing\": {\"warmup\": %d, \"samples\": %d, \"l2_multiple\": %g, \"seed\": %llu},\n", s->warmup,
                s->samples, s->l2_multiple, (unsigned long long)s->seed);
  at_buf_puts(&b, "  \"expectations\": [");
  for (size_t i = 0; i < f->n; i++) {
    const at_expect_entry *e = &f->e[i];
    at_buf_puts(&b, i ? ",\n    {\"device\": " : "\n    {\"device\": ");
    at_buf_json_string(&b, e->device);
    at_buf_puts(&b, ", \"arch\": ");
    at_buf_json_string(&b, e->arch);
    at_buf_puts(&b, ", \"op\": ");
    at_buf_json_string(&b, e->op);
    at_buf_puts(&b, ", \"tag\": ");
    at_buf_json_string(&b, e->tag);
    at_buf_printf(&b, ", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"tflops\": %.3f", (long long)e->m, (long long)e->n,
                  (long long)e->k, e->tflops);
    if (e->time_us > 0) at_buf_printf(&b, ", \"time_us\": %.4f", e->time_us);
    if (e->config) at_buf_printf(&b, ",\n     \"config\": %s", e->config);
    at_buf_puts(&b, "}");
  }
  at_buf_puts(&b, f->n ? "\n  ]\n}\n" : "]\n}\n");
  return at_buf_steal(&b);
}

/* ---- measurements and the judgement ----------------------------------------------------------- */

int at_expect_from_results(const at_results_file *r, const char *provider, at_expect_file *out) {
  memset(out, 0, sizeof *out);
  at_expect_default_settings(&out->settings);
  if (!r->device || !r->device[0])
    return at_fail(AT_ERR_INPUT, "%s: the results file does not say its device (\"device\"), so it cannot be matched"
                   " with expectations", r->path);
  int known = 0;
  for (size_t p = 0; p < r->nproviders; p++) known |= strcmp(r->providers[p], provider) == 0;
  if (!known) return at_fail(AT_ERR_INPUT, "%s: no provider %s in the results file", r->path, provider);
  for (size_t i = 0; i < r->n; i++) {
    const at_result_rec *x = &r->recs[i];
    if (strcmp(x->provider, provider) != 0) continue;
    at_expect_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.device, sizeof e.device, "%s", r->device);
    snprintf(e.arch, sizeof e.arch, "%s", r->arch ? r->arch : "");
    snprintf(e.op, sizeof e.op, "%s", r->op ? r->op : "");
    snprintf(e.tag, sizeof e.tag, "%s", r->tag ? r->tag : "");
    e.m = x->m, e.n = x->n, e.k = x->k;
    int ok = strcmp(x->status, "ok") == 0 && x->time_us > 0;
    e.time_us = ok ? x->time_us : -1;
    e.tflops = ok ? 2.0 * (double)x->m * (double)x->n * (double)x->k / (x->time_us * 1e-6) / 1e12 : -1;
    at_expect_add(out, &e);
  }
  return AT_OK;
}

static int same_problem(const at_expect_entry *want, const at_expect_entry *got) {
  return strcmp(want->device, got->device) == 0 && (!got->op[0] || strcmp(want->op, got->op) == 0) &&
         (!got->tag[0] || strcmp(want->tag, got->tag) == 0) && want->m == got->m && want->n == got->n &&
         want->k == got->k;
}

void at_expect_judge(const at_expect_file *want, const at_expect_file *got, double tolerance_pct,
                     at_expect_verdict *out, int *failures, int *judged) {
  *failures = *judged = 0;
  for (size_t i = 0; i < want->n; i++) {
    const at_expect_entry *w = &want->e[i];
    at_expect_verdict *v = &out[i];
    v->got_tflops = -1;
    v->change_pct = 0;
    int device_seen = 0;
    const at_expect_entry *g = NULL;
    for (size_t j = 0; j < got->n; j++) {
      device_seen |= strcmp(got->e[j].device, w->device) == 0;
      if (!g && same_problem(w, &got->e[j]) && got->e[j].tflops > 0) g = &got->e[j];
    }
    if (!device_seen) {
      v->kind = AT_EXPECT_OTHER_DEVICE;
      continue;
    }
    (*judged)++;
    if (!g) {
      v->kind = AT_EXPECT_MISSING;
      (*failures)++;
      continue;
    }
    v->got_tflops = g->tflops;
    v->change_pct = 100.0 * (g->tflops / w->tflops - 1.0);
    if (g->tflops < w->tflops * (1.0 - tolerance_pct / 100.0)) {
      v->kind = AT_EXPECT_SLOWER;
      (*failures)++;
    } else if (g->tflops > w->tflops * (1.0 + tolerance_pct / 100.0)) {
      v->kind = AT_EXPECT_FASTER;
    } else {
      v->kind = AT_EXPECT_OK;
    }
  }
}

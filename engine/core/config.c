/* config.c: see config.h. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *const AT_BUCKET_NAMES[AT_NBUCKETS] = {"small", "medium_M32", "medium_M64", "medium_M128",
                                                   "large", "xlarge", "any"};

int at_name_ok(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
  return 1;
}

int at_bucket_of(int64_t m) {
  if (m < 32) return AT_BUCKET_SMALL;
  if (m <= 32) return AT_BUCKET_M32;
  if (m <= 64) return AT_BUCKET_M64;
  if (m <= 128) return AT_BUCKET_M128;
  if (m <= 256) return AT_BUCKET_LARGE;
  return AT_BUCKET_XLARGE;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

int at_config_set_params(at_config *c, const char *params_json) {
  at_json *j;
  AT_TRY(at_json_parse("params", params_json, strlen(params_json), &j));
  int rc = AT_OK;
  if (j->kind != AT_J_OBJECT || j->n > AT_MAX_PARAMS) rc = at_fail(AT_ERR_INPUT, "params must be an object of at most %d integers", AT_MAX_PARAMS);
  const char *keys[AT_MAX_PARAMS];
  for (size_t i = 0; rc == AT_OK && i < j->n; i++) {
    if (j->items[i]->kind != AT_J_NUMBER || !j->items[i]->is_integer)
      rc = at_fail(AT_ERR_INPUT, "parameter %s must be an integer", j->keys[i]);
    else if (strlen(j->keys[i]) >= sizeof c->names[0])
      rc = at_fail(AT_ERR_INPUT, "parameter name %s is too long", j->keys[i]);
    keys[i] = j->keys[i];
  }
  if (rc == AT_OK) {
    qsort(keys, j->n, sizeof *keys, cmp_names);
    c->nparams = (int)j->n;
    for (size_t i = 0; i < j->n; i++) {
      snprintf(c->names[i], sizeof c->names[i], "%s", keys[i]);
      int64_t v = 0;
      at_json_int(j, keys[i], &v);
      c->values[i] = v;
    }
  }
  at_json_free(j);
  return rc;
}

char *at_config_params_json(const at_config *c) {
  at_buf b = {0};
  at_buf_puts(&b, "{");
  for (int i = 0; i < c->nparams; i++) at_buf_printf(&b, "%s\"%s\":%lld", i ? "," : "", c->names[i], (long long)c->values[i]);
  at_buf_puts(&b, "}");
  return at_buf_steal(&b);
}

char *at_entry_instantiate(const char *entry, const char *const *names, const int64_t *values, int n) {
  at_buf b = {0};
  const char *p = entry;
  while (*p) {
    if (isalpha((unsigned char)*p) || *p == '_') {
      const char *start = p;
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      size_t len = (size_t)(p - start);
      int i;
      for (i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], start, len) == 0) break;
      if (i < n)
        at_buf_printf(&b, "%lld", (long long)values[i]);
      else
        at_buf_append(&b, start, len);
    } else {
      at_buf_append(&b, p++, 1);
    }
  }
  return at_buf_steal(&b);
}

at_params at_config_params(const at_config *c, const char **names) {
  for (int i = 0; i < c->nparams; i++) names[i] = c->names[i];
  return (at_params){names, c->values, (size_t)c->nparams};
}

static int ident_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

int at_entry_mentions(const char *entry, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strchr(entry, '<'); p && (p = strstr(p, name)); p += n)
    if (!ident_char(p[-1]) && !ident_char(p[n])) return 1;
  return 0;
}

char *at_config_name_expr(const at_config *c) {
  const char *names[AT_MAX_PARAMS];
  at_params p = at_config_params(c, names);
  return at_entry_instantiate(c->entry, p.names, p.values, (int)p.n);
}

static int same_params(const at_config *a, const at_config *b) {
  if (a->nparams != b->nparams) return 0;
  for (int i = 0; i < a->nparams; i++)
    if (strcmp(a->names[i], b->names[i]) != 0 || a->values[i] != b->values[i]) return 0;
  return 1;
}

int at_config_same_kernel(const at_config *a, const at_config *b) {
  return strcmp(a->family, b->family) == 0 && strcmp(a->template_name, b->template_name) == 0 && same_params(a, b);
}

int at_config_shape_param(const at_op *op, const at_config *c) {
  if (!op || !op->shape_param) return -1;
  for (int i = 0; i < c->nparams; i++)
    if (strcmp(c->names[i], op->shape_param) == 0) return c->values[i] ? i : -1;
  return -1;
}

int at_config_same_but_shape(const at_op *op, const at_config *a, const at_config *b) {
  const int ia = at_config_shape_param(op, a), ib = at_config_shape_param(op, b);
  if (ia < 0 || ib < 0 || ia != ib) return at_config_same_kernel(a, b);
  at_config b2 = *b;
  b2.values[ib] = a->values[ia];
  return at_config_same_kernel(a, &b2);
}

int at_config_for_shape(const at_op *op, at_config *c, int64_t n, int64_t k) {
  const int i = at_config_shape_param(op, c);
  if (i < 0 || !op->shape_value) return 1;
  const char *names[AT_MAX_PARAMS];
  const at_params p = at_config_params(c, names);
  const at_shape s = {1, n, k};
  c->values[i] = op->shape_value(c->family, &p, &s);
  return c->values[i] != 0;
}

int at_config_same(const at_config *a, const at_config *b) {
  return a->valid && b->valid && strcmp(a->variant, b->variant) == 0 && same_params(a, b);
}

const at_config *at_config_for_m(const at_config_set *cs, int64_t m, int *entry) {
  /* The smallest tuned M at or above m: a binary search (mleq_m ascends; up to 48 entries, a time
   * model's answer has 46, and this runs on every launch). */
  int i = 0, hi = cs->nmleq, e;
  while (i < hi) {
    const int mid = (i + hi) / 2;
    if (cs->mleq_m[mid] < m)
      i = mid + 1;
    else
      hi = mid;
  }
  if (i < cs->nmleq && cs->mleq[i].valid)
    e = AT_NBUCKETS + i;
  else if (cs->nmleq && i == cs->nmleq)
    e = AT_BUCKET_ANY; /* beyond the largest tuned M */
  else
    e = at_bucket_of(m); /* no M_LEQ entries (the seed's rule), or that one was not launchable */
  if (e < AT_NBUCKETS && !cs->bucket[e].valid) e = AT_BUCKET_ANY;
  if (entry) *entry = e;
  return at_config_entry(cs, e);
}

const at_config *at_config_entry(const at_config_set *cs, int entry) {
  const at_config *c = NULL;
  if (entry >= 0 && entry < AT_NBUCKETS)
    c = &cs->bucket[entry];
  else if (entry >= AT_NBUCKETS && entry < AT_NBUCKETS + cs->nmleq)
    c = &cs->mleq[entry - AT_NBUCKETS];
  return c && c->valid ? c : NULL;
}

void at_config_entry_name(const at_config_set *cs, int entry, char *out, size_t n) {
  if (entry >= 0 && entry < AT_NBUCKETS)
    snprintf(out, n, "%s", AT_BUCKET_NAMES[entry]);
  else if (entry >= AT_NBUCKETS && entry < AT_NBUCKETS + cs->nmleq)
    snprintf(out, n, "M_LEQ_%lld", (long long)cs->mleq_m[entry - AT_NBUCKETS]);
  else
    snprintf(out, n, "?");
}

int at_mleq_parse(const char *key, int64_t *m) {
  static const char PREFIX[] = "M_LEQ_";
  if (strncmp(key, PREFIX, sizeof PREFIX - 1) != 0) return -1;
  const char *d = key + sizeof PREFIX - 1;
  if (*d < '1' || *d > '9' || strlen(d) > 9) return -1; /* no sign, no leading zero, no overflow */
  int64_t v = 0;
  for (; *d; d++) {
    if (*d < '0' || *d > '9') return -1;
    v = v * 10 + (*d - '0');
  }
  if (v > AT_MLEQ_MAX_M) return -1;
  *m = v;
  return 0;
}

static int same_valid(const at_config *a, const at_config *b) {
  return a->valid == b->valid && (!a->valid || at_config_same(a, b));
}

int at_config_set_same(const at_config_set *a, const at_config_set *b) {
  for (int i = 0; i < AT_NBUCKETS; i++)
    if (!same_valid(&a->bucket[i], &b->bucket[i])) return 0;
  if (a->nmleq != b->nmleq) return 0;
  for (int i = 0; i < a->nmleq; i++)
    if (a->mleq_m[i] != b->mleq_m[i] || !same_valid(&a->mleq[i], &b->mleq[i])) return 0;
  return 1;
}

/* One member of "buckets" or "per_M": the config and the tuned M (with times) that chose it. */
static void put_entry(at_buf *b, int first, const char *key, const at_config *c, int ntuned, const int64_t *tuned_m,
                      const double *time_us) {
  at_buf_printf(b, "%s\n    \"%s\": {\"variant\": ", first ? "" : ",", key);
  at_buf_json_string(b, c->variant);
  at_buf_puts(b, ", \"family\": ");
  at_buf_json_string(b, c->family);
  at_buf_puts(b, ", \"template\": ");
  at_buf_json_string(b, c->template_name);
  at_buf_puts(b, ",\n      \"entry\": ");
  at_buf_json_string(b, c->entry);
  char *params = at_config_params_json(c);
  at_buf_printf(b, ",\n      \"params\": %s", params);
  free(params);
  at_buf_puts(b, ",\n      \"tuned_M\": [");
  for (int k = 0; k < ntuned; k++) at_buf_printf(b, "%s%lld", k ? ", " : "", (long long)tuned_m[k]);
  at_buf_puts(b, "], \"time_us\": [");
  for (int k = 0; k < ntuned; k++) at_buf_printf(b, "%s%.3f", k ? ", " : "", time_us[k]);
  at_buf_puts(b, "]}");
}

/* The seed's shape of an entry: a top-level member named like the entry, a flat object of the
 * kernel's parameters with the variant's name, so that json.load(f)["small"]["BLOCK_M"] works. */
static void put_flat(at_buf *b, const char *key, const at_config *c) {
  at_buf_printf(b, ",\n  \"%s\": {\"variant\": ", key);
  at_buf_json_string(b, c->variant);
  for (int i = 0; i < c->nparams; i++) {
    at_buf_puts(b, ", ");
    at_buf_json_string(b, c->names[i]);
    at_buf_printf(b, ": %lld", (long long)c->values[i]);
  }
  at_buf_puts(b, "}");
}

char *at_config_set_to_json(const at_config_set *cs) {
  at_buf b = {0};
  at_buf_puts(&b, "{\n  \"format\": \"autotune-configs/1\",\n  \"op\": ");
  at_buf_json_string(&b, cs->op);
  at_buf_puts(&b, ",\n  \"tag\": ");
  at_buf_json_string(&b, cs->tag);
  at_buf_puts(&b, ",\n  \"device\": ");
  at_buf_json_string(&b, cs->device);
  at_buf_puts(&b, ",\n  \"device_name\": ");
  at_buf_json_string(&b, cs->device_name);
  at_buf_puts(&b, ",\n  \"arch\": ");
  at_buf_json_string(&b, cs->arch);
  if (cs->n)
    at_buf_printf(&b, ",\n  \"N\": %lld,\n  \"K\": %lld", (long long)cs->n, (long long)cs->k);
  else
    at_buf_printf(&b, ",\n  \"N\": null,\n  \"K\": null,\n  \"summarises\": %d", cs->from_sets);
  at_buf_puts(&b, ",\n  \"buckets\": {");
  int first = 1;
  for (int i = 0; i < AT_NBUCKETS; i++) {
    if (!cs->bucket[i].valid) continue;
    put_entry(&b, first, AT_BUCKET_NAMES[i], &cs->bucket[i], cs->ntuned[i], cs->tuned_m[i], cs->time_us[i]);
    first = 0;
  }
  at_buf_puts(&b, "\n  }");
  /* The per-M entries go in an object of their own: a reader that knows only the seed's buckets
   * (and refuses a bucket it does not know) reads the file as before. */
  if (cs->nmleq) {
    at_buf_puts(&b, ",\n  \"per_M\": {");
    first = 1;
    for (int i = 0; i < cs->nmleq; i++) {
      if (!cs->mleq[i].valid) continue;
      char key[32];
      at_config_entry_name(cs, AT_NBUCKETS + i, key, sizeof key);
      int known = cs->mleq_time_us[i] > 0; /* a default file has no time of its own */
      put_entry(&b, first, key, &cs->mleq[i], known, &cs->mleq_m[i], &cs->mleq_time_us[i]);
      first = 0;
    }
    at_buf_puts(&b, "\n  }");
  }
  /* Then every entry again in the seed's shape, at the top level: a copy for readers that expect
   * it; autotune reads "buckets" and "per_M", and checks that each copy agrees with them. */
  for (int i = 0; i < AT_NBUCKETS; i++)
    if (cs->bucket[i].valid) put_flat(&b, AT_BUCKET_NAMES[i], &cs->bucket[i]);
  for (int i = 0; i < cs->nmleq; i++) {
    if (!cs->mleq[i].valid) continue;
    char key[32];
    at_config_entry_name(cs, AT_NBUCKETS + i, key, sizeof key);
    put_flat(&b, key, &cs->mleq[i]);
  }
  at_buf_puts(&b, "\n}\n");
  return at_buf_steal(&b);
}

int at_config_from_json(const char *where, const at_json *c, at_config *cfg) {
  AT_TRY(at_json_copy_str(where, c, "variant", cfg->variant, sizeof cfg->variant, 1));
  AT_TRY(at_json_copy_str(where, c, "family", cfg->family, sizeof cfg->family, 1));
  AT_TRY(at_json_copy_str(where, c, "template", cfg->template_name, sizeof cfg->template_name, 1));
  AT_TRY(at_json_copy_str(where, c, "entry", cfg->entry, sizeof cfg->entry, 1));
  if (strchr(cfg->template_name, '/')) return at_fail(AT_ERR_INPUT, "%s: template must be a file name", where);
  const at_json *params = at_json_get(c, "params");
  if (!params || params->kind != AT_J_OBJECT || params->n > AT_MAX_PARAMS)
    return at_fail(AT_ERR_INPUT, "%s: \"params\" must be an object of integers", where);
  const char *keys[AT_MAX_PARAMS];
  for (size_t k = 0; k < params->n; k++) {
    if (params->items[k]->kind != AT_J_NUMBER || !params->items[k]->is_integer || strlen(params->keys[k]) >= 32)
      return at_fail(AT_ERR_INPUT, "%s: parameter %s must be an integer", where, params->keys[k]);
    keys[k] = params->keys[k];
  }
  qsort(keys, params->n, sizeof *keys, cmp_names);
  cfg->nparams = (int)params->n;
  for (size_t k = 0; k < params->n; k++) {
    snprintf(cfg->names[k], sizeof cfg->names[k], "%s", keys[k]);
    at_json_int(params, keys[k], &cfg->values[k]);
  }
  cfg->valid = 1;
  return AT_OK;
}

/* "per_M" (optional): M_LEQ_<m> entries, kept sorted by m. A malformed or repeated key fails the
 * file, as an unknown bucket does. */
static int read_per_m(const char *name, const at_json *per_m, at_config_set *out) {
  if (!per_m) return AT_OK;
  if (per_m->kind != AT_J_OBJECT) return at_fail(AT_ERR_INPUT, "%s: \"per_M\" must be an object", name);
  if (per_m->n > AT_MAX_MLEQ)
    return at_fail(AT_ERR_INPUT, "%s: \"per_M\" has %zu entries, more than %d", name, per_m->n, (int)AT_MAX_MLEQ);
  for (size_t i = 0; i < per_m->n; i++) {
    int64_t m;
    if (at_mleq_parse(per_m->keys[i], &m))
      return at_fail(AT_ERR_INPUT, "%s: per_M: malformed key \"%s\" (expected M_LEQ_<m>, m from 1 to %lld)", name,
                     per_m->keys[i], (long long)AT_MLEQ_MAX_M);
    int at = out->nmleq;
    while (at > 0 && out->mleq_m[at - 1] > m) at--;
    if (at > 0 && out->mleq_m[at - 1] == m)
      return at_fail(AT_ERR_INPUT, "%s: per_M: \"%s\" appears twice", name, per_m->keys[i]);
    at_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char where[300];
    snprintf(where, sizeof where, "%s: per_M %s", name, per_m->keys[i]);
    AT_TRY(at_config_from_json(where, per_m->items[i], &cfg));
    const at_json *tt = at_json_get(per_m->items[i], "time_us");
    double t = tt && tt->kind == AT_J_ARRAY && tt->n && tt->items[0]->kind == AT_J_NUMBER ? tt->items[0]->number : 0;
    size_t later = (size_t)(out->nmleq - at); /* entries of larger m move up one */
    memmove(&out->mleq_m[at + 1], &out->mleq_m[at], sizeof out->mleq_m[0] * later);
    memmove(&out->mleq[at + 1], &out->mleq[at], sizeof out->mleq[0] * later);
    memmove(&out->mleq_time_us[at + 1], &out->mleq_time_us[at], sizeof out->mleq_time_us[0] * later);
    out->mleq_m[at] = m;
    out->mleq[at] = cfg;
    out->mleq_time_us[at] = t;
    out->nmleq++;
  }
  return AT_OK;
}

/* The top-level copies in the seed's shape (optional: files written before them lack them). One
 * that is present must say what its entry in "buckets" or "per_M" says, so that a hand edit of a
 * copy, which autotune would not read, fails loudly instead of being ignored. */
static int check_flat(const char *name, const at_json *j, const at_config_set *cs) {
  for (size_t i = 0; i < j->n; i++) {
    const char *key = j->keys[i];
    const at_config *c = NULL;
    int is_entry = 0;
    for (int b = 0; b < AT_NBUCKETS; b++)
      if (strcmp(key, AT_BUCKET_NAMES[b]) == 0) is_entry = 1, c = &cs->bucket[b];
    int64_t m;
    if (!is_entry && at_mleq_parse(key, &m) == 0) {
      is_entry = 1;
      for (int k = 0; k < cs->nmleq; k++)
        if (cs->mleq_m[k] == m) c = &cs->mleq[k];
    }
    if (!is_entry) continue; /* metadata, "buckets", "per_M", or a member autotune does not know */
    const char *section = strncmp(key, "M_LEQ_", 6) == 0 ? "per_M" : "buckets";
    if (!c || !c->valid)
      return at_fail(AT_ERR_INPUT, "%s: top-level \"%s\" has no entry of that name in \"%s\"", name, key, section);
    const at_json *f = j->items[i];
    const char *variant = f->kind == AT_J_OBJECT ? at_json_str(f, "variant") : NULL;
    int same = variant && strcmp(variant, c->variant) == 0 && f->n == (size_t)c->nparams + 1;
    for (int k = 0; same && k < c->nparams; k++) {
      const at_json *v = at_json_get(f, c->names[k]);
      same = v && v->kind == AT_J_NUMBER && v->is_integer && v->integer == c->values[k];
    }
    if (!same)
      return at_fail(AT_ERR_INPUT,
                     "%s: top-level \"%s\" differs from its entry in \"%s\" (it is a copy in the seed's shape: "
                     "edit both, or remove the copy)",
                     name, key, section);
  }
  return AT_OK;
}

int at_config_set_from_json(const char *name, const at_json *j, at_config_set *out) {
  memset(out, 0, sizeof *out);
  if (!j || j->kind != AT_J_OBJECT) return at_fail(AT_ERR_INPUT, "%s: not a JSON object", name);
  const char *format = at_json_str(j, "format");
  if (!format || strcmp(format, "autotune-configs/1") != 0)
    return at_fail(AT_ERR_INPUT, "%s: \"format\" is not \"autotune-configs/1\"", name);
  AT_TRY(at_json_copy_str(name, j, "op", out->op, sizeof out->op, 1));
  AT_TRY(at_json_copy_str(name, j, "tag", out->tag, sizeof out->tag, 1));
  AT_TRY(at_json_copy_str(name, j, "device", out->device, sizeof out->device, 1));
  AT_TRY(at_json_copy_str(name, j, "device_name", out->device_name, sizeof out->device_name, 0));
  AT_TRY(at_json_copy_str(name, j, "arch", out->arch, sizeof out->arch, 0));
  at_json_int(j, "N", &out->n);
  at_json_int(j, "K", &out->k);
  int64_t sets = 0;
  if (at_json_int(j, "summarises", &sets) == 0) out->from_sets = (int)sets;
  const at_json *buckets = at_json_get(j, "buckets");
  if (!buckets || buckets->kind != AT_J_OBJECT) return at_fail(AT_ERR_INPUT, "%s: \"buckets\" is missing", name);
  for (size_t i = 0; i < buckets->n; i++) {
    int b;
    for (b = 0; b < AT_NBUCKETS; b++)
      if (strcmp(buckets->keys[i], AT_BUCKET_NAMES[b]) == 0) break;
    if (b == AT_NBUCKETS) return at_fail(AT_ERR_INPUT, "%s: unknown bucket \"%s\"", name, buckets->keys[i]);
    const at_json *c = buckets->items[i];
    at_config *cfg = &out->bucket[b];
    if (cfg->valid) return at_fail(AT_ERR_INPUT, "%s: bucket \"%s\" appears twice", name, buckets->keys[i]);
    char where[300];
    snprintf(where, sizeof where, "%s: bucket %s", name, buckets->keys[i]);
    AT_TRY(at_config_from_json(where, c, cfg));
    const at_json *tm = at_json_get(c, "tuned_M"), *tt = at_json_get(c, "time_us");
    for (size_t k = 0; tm && tm->kind == AT_J_ARRAY && k < tm->n && out->ntuned[b] < 16; k++) {
      if (tm->items[k]->kind != AT_J_NUMBER) continue;
      out->tuned_m[b][out->ntuned[b]] = tm->items[k]->integer;
      if (tt && tt->kind == AT_J_ARRAY && k < tt->n && tt->items[k]->kind == AT_J_NUMBER)
        out->time_us[b][out->ntuned[b]] = tt->items[k]->number;
      out->ntuned[b]++;
    }
  }
  AT_TRY(read_per_m(name, at_json_get(j, "per_M"), out));
  return check_flat(name, j, out);
}

/* space.c: the search-space loader: YAML tree (yamltree.c) -> at_space, validated.
 *
 * Every check reports the position of the node it is about. The loader owns no other state; a
 * failure frees the partial space and leaves nothing behind. */
#include "space.h"

#include <stdio.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "limits.h"
#include "proto.h"
#include "sha256.h"
#include "shapeset.h"
#include "util.h"
#include "yamltree.h"

typedef struct loader {
  const char *path;
  at_space *s;
  const at_ydoc *doc;
  at_shapeset seen; /* s's shapes, for "listed twice" */
} loader;

static int err_at(loader *L, const at_ynode *n, const char *fmt, ...) AT_PRINTF(3, 4);
static int err_at(loader *L, const at_ynode *n, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return at_fail(AT_ERR_INPUT, "%s:%d:%d: %s", L->path, n ? n->line : 1, n ? n->col : 1, msg);
}

/* ---- typed scalars ---------------------------------------------------------------------------- */

static int want_kind(loader *L, const at_ynode *n, at_ynode_kind kind, const char *what) {
  if (n->kind == kind) return AT_OK;
  return err_at(L, n, "%s must be %s, not %s", what, at_ykind_name(kind), at_ykind_name(n->kind));
}

static int get_string(loader *L, const at_ynode *n, const char *what, char **out) {
  AT_TRY(want_kind(L, n, AT_Y_SCALAR, what));
  if (!n->value[0]) return err_at(L, n, "%s must not be empty", what);
  *out = at_xstrdup(n->value);
  return AT_OK;
}

static int get_int(loader *L, const at_ynode *n, const char *what, int64_t *out) {
  AT_TRY(want_kind(L, n, AT_Y_SCALAR, what));
  const char *p = n->value;
  if (n->quoted) return err_at(L, n, "%s must be an integer, not a quoted string", what);
  const char *d = p + (*p == '+' || *p == '-');
  if (!*d) return err_at(L, n, "%s must be an integer, got '%s'", what, p);
  for (const char *q = d; *q; q++)
    if (!isdigit((unsigned char)*q)) return err_at(L, n, "%s must be an integer, got '%s'", what, p);
  errno = 0;
  long long v = strtoll(p, NULL, 10);
  if (errno == ERANGE) return err_at(L, n, "%s: integer overflow ('%s' does not fit in 64 bits)", what, p);
  *out = v;
  return AT_OK;
}

static int get_number(loader *L, const at_ynode *n, const char *what, double *out) {
  AT_TRY(want_kind(L, n, AT_Y_SCALAR, what));
  char *end;
  errno = 0;
  double v = strtod(n->value, &end);
  if (n->quoted || end == n->value || *end || errno == ERANGE || !isfinite(v))
    return err_at(L, n, "%s must be a finite number, got '%s'", what, n->value);
  *out = v;
  return AT_OK;
}

static int is_identifier(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
  return 1;
}

/* The rule is shared with what export and lookup read back from a DB (config.h). */
static int is_tag_name(const char *s) { return at_name_ok(s); }

/* Checks that every key of a mapping is one of the allowed ones. */
static int check_keys(loader *L, const at_ynode *map, const char *where, const char *const *allowed) {
  for (size_t i = 0; i < map->n; i++) {
    const char *k = map->keys[i]->value;
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, k) == 0) ok = 1;
    if (!ok) {
      char list[512] = "";
      for (const char *const *a = allowed; *a; a++) {
        strncat(list, *a, sizeof list - strlen(list) - 3);
        if (a[1]) strncat(list, ", ", sizeof list - strlen(list) - 1);
      }
      return err_at(L, map->keys[i], "unknown key '%s' in %s (allowed: %s)", k, where, list);
    }
  }
  return AT_OK;
}

static const at_ynode *require(loader *L, const at_ynode *map, const char *key, const char *where, int *rc) {
  const at_ynode *v = at_ymap_get(map, key);
  if (!v) *rc = err_at(L, map, "%s needs the key '%s'", where, key);
  return v;
}

/* ---- variants --------------------------------------------------------------------------------- */

static const char *const RESERVED[] = {"M", "N", "K", "min", "max", NULL};

static int name_is_reserved(const at_op *op, const char *name) {
  for (const char *const *r = RESERVED; *r; r++)
    if (strcmp(*r, name) == 0) return 1;
  for (int i = 0; i < AT_LIMIT_COUNT; i++)
    if (strcmp(AT_LIMIT_NAMES[i], name) == 0) return 1;
  for (const char *const *d = op->derived; d && *d; d++)
    if (strcmp(*d, name) == 0) return 1;
  return 0;
}

/* Every value of a parameter goes past the op's range check, at the value's position. */
static int check_value(loader *L, const at_variant *v, const at_param_def *p, const at_ynode *node, int64_t value) {
  if (L->s->op->check_param && L->s->op->check_param(v->family, p->name, value))
    return err_at(L, node, "%s", at_errmsg());
  return AT_OK;
}

static int load_params(loader *L, at_variant *v, const at_ynode *map) {
  AT_TRY(want_kind(L, map, AT_Y_MAP, "params"));
  if (map->n == 0) return err_at(L, map, "params must name at least one parameter");
  if (map->n > AT_MAX_PARAMS) return err_at(L, map, "a variant has at most %d parameters", AT_MAX_PARAMS);
  v->params = at_xcalloc(map->n, sizeof *v->params);
  for (size_t i = 0; i < map->n; i++) {
    const at_ynode *key = map->keys[i], *list = map->items[i];
    at_param_def *p = &v->params[v->nparams++];
    p->name = at_xstrdup(key->value);
    p->line = key->line;
    p->col = key->col;
    if (!is_identifier(p->name)) return err_at(L, key, "parameter name '%s' is not an identifier", p->name);
    if (strlen(p->name) >= 32) return err_at(L, key, "parameter name '%s' is longer than 31 characters", p->name);
    if (name_is_reserved(L->s->op, p->name))
      return err_at(L, key, "parameter name '%s' is reserved (shape, device-limit or derived name)", p->name);
    char what[300];
    snprintf(what, sizeof what, "values of %s", p->name);
    if (list->kind == AT_Y_SCALAR) { /* a single value is a list of one */
      p->values = at_xcalloc(1, sizeof(int64_t));
      AT_TRY(get_int(L, list, what, &p->values[0]));
      p->n = 1;
      AT_TRY(check_value(L, v, p, list, p->values[0]));
      continue;
    }
    AT_TRY(want_kind(L, list, AT_Y_SEQ, what));
    if (list->n == 0) return err_at(L, list, "parameter %s has an empty value list", p->name);
    p->values = at_xcalloc(list->n, sizeof(int64_t));
    for (size_t j = 0; j < list->n; j++) {
      AT_TRY(get_int(L, list->items[j], what, &p->values[j]));
      AT_TRY(check_value(L, v, p, list->items[j], p->values[j]));
      for (size_t q = 0; q < j; q++)
        if (p->values[q] == p->values[j])
          return err_at(L, list->items[j], "parameter %s lists the value %lld twice", p->name, (long long)p->values[j]);
      p->n++;
    }
  }
  return AT_OK;
}

static int expr_error(loader *L, const at_constraint *c, int col) {
  (void)L;
  return at_space_constraint_error(L->s, c, col);
}

static int load_constraints(loader *L, at_variant *v, const at_ynode *map) {
  AT_TRY(want_kind(L, map, AT_Y_MAP, "constraints"));
  v->constraints = at_xcalloc(map->n ? map->n : 1, sizeof *v->constraints);
  for (size_t i = 0; i < map->n; i++) {
    const at_ynode *key = map->keys[i], *val = map->items[i];
    at_constraint *c = &v->constraints[v->nconstraints++];
    c->name = at_xstrdup(key->value);
    if (!is_tag_name(c->name)) return err_at(L, key, "constraint name '%s' must be letters, digits and _", c->name);
    AT_TRY(get_string(L, val, "a constraint", &c->text));
    c->line = val->line;
    c->col = val->col;
    size_t len = strlen(c->text);
    if (len <= 4096) { /* longer ones are refused by the parser at once */
      c->pos = at_xcalloc(2 * (len + 1), sizeof(int));
      for (size_t o = 0; o <= len; o++) at_yaml_scalar_pos(L->doc, val, o, &c->pos[2 * o], &c->pos[2 * o + 1]);
      c->line = c->pos[0];
      c->col = c->pos[1];
    }
    int col = 0;
    if (at_expr_parse(c->text, &c->expr, &col)) return expr_error(L, c, col);
    if (at_expr_bind(c->expr, v->names, v->nnames, &col)) {
      /* Say which names exist, so that the fix is obvious. */
      at_buf names = {0};
      for (size_t j = 0; j < v->nnames; j++) at_buf_printf(&names, "%s%s", j ? ", " : "", v->names[j]);
      at_fail(AT_ERR_INPUT, "%s (known names: %s)", at_errmsg(), names.data);
      at_buf_free(&names);
      return expr_error(L, c, col);
    }
    c->uses_shape = at_expr_uses(c->expr, "M") || at_expr_uses(c->expr, "N") || at_expr_uses(c->expr, "K");
  }
  return AT_OK;
}

/* The identifiers of an entry pattern, checked: "name<A, B, 3>" where every parameter appears,
 * except the op's launch parameters, which a kernel gets at launch; those left out are marked. */
static int check_entry(loader *L, at_variant *v, const at_ynode *node) {
  const char *lt = strchr(v->entry, '<');
  if (!lt || v->entry[strlen(v->entry) - 1] != '>')
    return err_at(L, node, "entry must be a kernel template instantiation like 'kernel<BLOCK_M, BLOCK_N>'");
  for (size_t i = 0; i < v->nparams; i++) {
    at_param_def *p = &v->params[i];
    if (at_entry_mentions(v->entry, p->name)) continue;
    if (!at_op_launch_param(L->s->op, p->name)) {
      char names[256];
      return err_at(L, node,
                    "parameter %s does not appear in entry '%s' and op %s cannot pass it at launch (its launch "
                    "parameters: %s); it would not reach the kernel",
                    p->name, v->entry, L->s->op->name, at_op_launch_param_names(L->s->op, names, sizeof names));
    }
    p->launch = 1;
    v->nlaunch++;
  }
  return AT_OK;
}

static int load_variant(loader *L, at_variant *v, const at_ynode *map) {
  static const char *const KEYS[] = {"name", "family", "template", "entry", "params", "constraints", NULL};
  int rc = AT_OK;
  AT_TRY(want_kind(L, map, AT_Y_MAP, "a variant"));
  AT_TRY(check_keys(L, map, "a variant", KEYS));
  v->line = map->line;
  v->col = map->col;
  const at_ynode *n;
  if (!(n = require(L, map, "name", "a variant", &rc))) return rc;
  AT_TRY(get_string(L, n, "name", &v->name));
  if (!is_tag_name(v->name)) return err_at(L, n, "variant name '%s' must be letters, digits and _", v->name);
  if ((n = at_ymap_get(map, "family"))) {
    AT_TRY(get_string(L, n, "family", &v->family));
  } else {
    v->family = at_xstrdup(v->name);
    n = map;
  }
  int known = 0;
  for (const char *const *f = L->s->op->families; *f; f++)
    if (strcmp(*f, v->family) == 0) known = 1;
  if (!known) return err_at(L, n, "op %s has no template family '%s'", L->s->op->name, v->family);

  if (!(n = require(L, map, "template", "a variant", &rc))) return rc;
  AT_TRY(get_string(L, n, "template", &v->template_arg));
  v->template_path = at_path_join(L->s->dir, v->template_arg);
  if (!at_file_exists(v->template_path))
    return err_at(L, n, "template file '%s' does not exist (looked for %s)", v->template_arg, v->template_path);

  if (!(n = require(L, map, "params", "a variant", &rc))) return rc;
  AT_TRY(load_params(L, v, n));

  const at_ynode *entry = require(L, map, "entry", "a variant", &rc);
  if (!entry) return rc;
  AT_TRY(get_string(L, entry, "entry", &v->entry));
  AT_TRY(check_entry(L, v, entry));

  /* The name table constraints bind against. */
  size_t nderived = at_op_count_derived(L->s->op);
  v->nnames = v->nparams + 3 + AT_LIMIT_COUNT + nderived;
  v->names = at_xcalloc(v->nnames, sizeof(char *));
  size_t k = 0;
  for (size_t i = 0; i < v->nparams; i++) v->names[k++] = v->params[i].name;
  v->slot_shape = k;
  v->names[k++] = "M";
  v->names[k++] = "N";
  v->names[k++] = "K";
  v->slot_limits = k;
  for (int i = 0; i < AT_LIMIT_COUNT; i++) v->names[k++] = AT_LIMIT_NAMES[i];
  v->slot_derived = k;
  for (size_t i = 0; i < nderived; i++) v->names[k++] = L->s->op->derived[i];

  /* The family must find every parameter it needs: ask the op with the first values. */
  int64_t *first = at_xcalloc(v->nparams, sizeof(int64_t));
  for (size_t i = 0; i < v->nparams; i++) first[i] = v->params[i].values[0];
  int64_t *derived = at_xcalloc(nderived ? nderived : 1, sizeof(int64_t));
  at_params p = {v->names, first, v->nparams};
  rc = L->s->op->derive(v->family, &p, derived);
  free(first);
  free(derived);
  if (rc) return err_at(L, at_ymap_get(map, "params"), "%s", at_errmsg());

  if ((n = at_ymap_get(map, "constraints"))) AT_TRY(load_constraints(L, v, n));
  return AT_OK;
}

/* ---- shapes, check, timing -------------------------------------------------------------------- */

int at_shape_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63 || !isalnum((unsigned char)s[0])) return 0;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || strchr("_-.+/", *s))) return 0;
  return 1;
}

/* at[0..2]: the nodes of M, N and K, so that an error points at the value it is about; name: the
 * group's name or NULL. */
static int add_shape(loader *L, const at_ynode *const at[3], int64_t m, int64_t n, int64_t k, const char *name) {
  at_space *s = L->s;
  at_shape sh = {m, n, k};
  int dim = 0;
  if (s->op->check_shape(&sh, &dim)) return err_at(L, at[dim >= 0 && dim < 3 ? dim : 0], "%s", at_errmsg());
  s->shapes = at_xrealloc(s->shapes, sizeof(at_shape) * (s->nshapes + 1));
  s->shapes[s->nshapes] = sh; /* in place for the set; counted only once it is new */
  long i = at_shapeset_add(&L->seen, s->shapes, s->nshapes);
  if (i >= 0)
    return err_at(L, at[0], "shape M=%lld N=%lld K=%lld is listed twice%s%s%s", (long long)m, (long long)n,
                  (long long)k, s->shape_names[i] ? " (first in the group '" : "",
                  s->shape_names[i] ? s->shape_names[i] : "", s->shape_names[i] ? "')" : "");
  s->shape_names = at_xrealloc(s->shape_names, sizeof(char *) * (s->nshapes + 1));
  s->shape_names[s->nshapes] = name ? at_xstrdup(name) : NULL;
  s->shapes[s->nshapes++] = sh;
  return AT_OK;
}

static int load_shapes(loader *L, const at_ynode *list) {
  static const char *const KEYS[] = {"name", "M", "N", "K", NULL};
  AT_TRY(want_kind(L, list, AT_Y_SEQ, "shapes"));
  if (list->n == 0) return err_at(L, list, "shapes must list at least one group");
  for (size_t g = 0; g < list->n; g++) {
    const at_ynode *grp = list->items[g];
    int rc = AT_OK;
    AT_TRY(want_kind(L, grp, AT_Y_MAP, "a shape group"));
    AT_TRY(check_keys(L, grp, "a shape group", KEYS));
    const at_ynode *mn = require(L, grp, "M", "a shape group", &rc), *nn = mn ? require(L, grp, "N", "a shape group", &rc) : NULL,
                   *kn = nn ? require(L, grp, "K", "a shape group", &rc) : NULL, *name = at_ymap_get(grp, "name");
    if (!kn) return rc;
    if (name) {
      AT_TRY(want_kind(L, name, AT_Y_SCALAR, "name"));
      if (!at_shape_name_ok(name->value))
        return err_at(L, name, "name '%s' must be 1 to 63 letters, digits and _ - . + /, starting with a letter or digit",
                      name->value);
    }
    const char *nm = name ? name->value : NULL;
    int64_t n, k;
    AT_TRY(get_int(L, nn, "N", &n));
    AT_TRY(get_int(L, kn, "K", &k));
    if (mn->kind == AT_Y_SCALAR) {
      int64_t m;
      AT_TRY(get_int(L, mn, "M", &m));
      const at_ynode *at[3] = {mn, nn, kn};
      AT_TRY(add_shape(L, at, m, n, k, nm));
      continue;
    }
    AT_TRY(want_kind(L, mn, AT_Y_SEQ, "M"));
    if (mn->n == 0) return err_at(L, mn, "M has an empty value list");
    for (size_t i = 0; i < mn->n; i++) {
      int64_t m;
      AT_TRY(get_int(L, mn->items[i], "M", &m));
      const at_ynode *at[3] = {mn->items[i], nn, kn};
      AT_TRY(add_shape(L, at, m, n, k, nm));
    }
  }
  return AT_OK;
}

static int load_check(loader *L, const at_ynode *map) {
  static const char *const KEYS[] = {"atol", "rtol", "gamma", NULL};
  AT_TRY(want_kind(L, map, AT_Y_MAP, "check"));
  AT_TRY(check_keys(L, map, "check", KEYS));
  const at_ynode *n;
  if ((n = at_ymap_get(map, "atol"))) {
    AT_TRY(get_number(L, n, "atol", &L->s->atol));
    if (L->s->atol < 0) return err_at(L, n, "atol must not be negative");
  }
  if ((n = at_ymap_get(map, "rtol"))) {
    AT_TRY(get_number(L, n, "rtol", &L->s->rtol));
    if (L->s->rtol < 0) return err_at(L, n, "rtol must not be negative");
  }
  /* gamma * (|A| * |B|) is already at least |ref|: from 1 up the check would pass nearly anything. */
  if ((n = at_ymap_get(map, "gamma"))) {
    AT_TRY(get_number(L, n, "gamma", &L->s->gamma));
    if (L->s->gamma < 0 || L->s->gamma >= 1)
      return err_at(L, n, "gamma must be at least 0 and below 1 (got %g)", L->s->gamma);
  }
  return AT_OK;
}

static int timing_int(loader *L, const at_ynode *map, const char *key, int64_t lo, int64_t hi, int *out) {
  const at_ynode *n = at_ymap_get(map, key);
  if (!n) return AT_OK;
  int64_t v;
  AT_TRY(get_int(L, n, key, &v));
  if (v < lo || v > hi) return err_at(L, n, "%s must be between %lld and %lld", key, (long long)lo, (long long)hi);
  *out = (int)v;
  return AT_OK;
}

static int timing_num(loader *L, const at_ynode *map, const char *key, double lo, double hi, double *out) {
  const at_ynode *n = at_ymap_get(map, key);
  if (!n) return AT_OK;
  double v;
  AT_TRY(get_number(L, n, key, &v));
  if (v < lo || v > hi) return err_at(L, n, "%s must be between %g and %g", key, lo, hi);
  *out = v;
  return AT_OK;
}

static int load_timing(loader *L, const at_ynode *map) {
  static const char *const KEYS[] = {"warmup", "samples", "cut_after", "cut_factor", "retime_top",
                                     "retime_samples", "l2_multiple", "timeout_s", NULL};
  at_timing *t = &L->s->timing;
  AT_TRY(want_kind(L, map, AT_Y_MAP, "timing"));
  AT_TRY(check_keys(L, map, "timing", KEYS));
  AT_TRY(timing_int(L, map, "warmup", 0, 1000, &t->warmup));
  AT_TRY(timing_int(L, map, "samples", 10, 10000, &t->samples));
  AT_TRY(timing_int(L, map, "cut_after", 1, 10000, &t->cut_after));
  AT_TRY(timing_num(L, map, "cut_factor", 1.0, 1000.0, &t->cut_factor));
  AT_TRY(timing_int(L, map, "retime_top", 0, 100, &t->retime_top));
  AT_TRY(timing_int(L, map, "retime_samples", 10, 10000, &t->retime_samples));
  AT_TRY(timing_num(L, map, "l2_multiple", 0.0, 64.0, &t->l2_multiple));
  AT_TRY(timing_num(L, map, "timeout_s", 0.1, 3600.0, &t->timeout_s));
  if (t->cut_after > t->samples) return err_at(L, at_ymap_get(map, "cut_after"), "cut_after must not exceed samples");
  return AT_OK;
}

/* ---- the document ----------------------------------------------------------------------------- */

static int load_root(loader *L, const at_ynode *root) {
  static const char *const KEYS[] = {"op", "tag", "variants", "shapes", "check", "timing", "seed", NULL};
  at_space *s = L->s;
  int rc = AT_OK;
  if (!root) return at_fail(AT_ERR_INPUT, "%s:1:1: the file is empty; a search space is a mapping with op, tag, variants and shapes", L->path);
  AT_TRY(want_kind(L, root, AT_Y_MAP, "a search space"));
  AT_TRY(check_keys(L, root, "a search space", KEYS));
  const at_ynode *n;
  if (!(n = require(L, root, "op", "a search space", &rc))) return rc;
  AT_TRY(get_string(L, n, "op", &s->op_name));
  if (!(s->op = at_op_find(s->op_name))) return err_at(L, n, "unknown op '%s' (known: %s)", s->op_name, at_op_names());
  if (!(n = require(L, root, "tag", "a search space", &rc))) return rc;
  AT_TRY(get_string(L, n, "tag", &s->tag));
  if (!is_tag_name(s->tag) || strlen(s->tag) > 64) /* <device>-GEMM-<tag>-N=...-K=....json stays a file name */
    return err_at(L, n, "tag '%.80s' must be 1 to 64 letters, digits and _ (it names files)", s->tag);
  if ((n = at_ymap_get(root, "seed"))) {
    int64_t seed;
    AT_TRY(get_int(L, n, "seed", &seed));
    if (seed < 0) return err_at(L, n, "seed must not be negative");
    s->seed = (uint64_t)seed;
  }
  if ((n = at_ymap_get(root, "check"))) AT_TRY(load_check(L, n));
  if ((n = at_ymap_get(root, "timing"))) AT_TRY(load_timing(L, n));
  if (!(n = require(L, root, "shapes", "a search space", &rc))) return rc;
  AT_TRY(load_shapes(L, n));

  const at_ynode *vars = require(L, root, "variants", "a search space", &rc);
  if (!vars) return rc;
  AT_TRY(want_kind(L, vars, AT_Y_SEQ, "variants"));
  if (vars->n == 0) return err_at(L, vars, "variants must list at least one variant");
  s->variants = at_xcalloc(vars->n, sizeof *s->variants);
  for (size_t i = 0; i < vars->n; i++) {
    at_variant *v = &s->variants[s->nvariants++];
    AT_TRY(load_variant(L, v, vars->items[i]));
    for (size_t j = 0; j < i; j++)
      if (strcmp(s->variants[j].name, v->name) == 0)
        return err_at(L, at_ymap_get(vars->items[i], "name"), "variant name '%s' is used twice", v->name);
  }
  return AT_OK;
}

int at_space_load(const char *path, at_space **out) {
  *out = NULL;
  char *text;
  size_t size;
  AT_TRY(at_read_file(path, AT_YAML_MAX_BYTES, &text, &size));
  at_space *s = at_xcalloc(1, sizeof *s);
  s->path = at_xstrdup(path);
  s->dir = at_dirname(path);
  s->atol = s->rtol = 1e-2;
  s->seed = 20261122;
  s->timing = (at_timing){.warmup = 2,
                          .samples = 10,
                          .cut_after = 3,
                          .cut_factor = 1.5,
                          .retime_top = 5,
                          .retime_samples = 10,
                          .l2_multiple = 2.0,
                          .timeout_s = 10.0};
  at_sha256_hex(text, size, s->hash);
  at_ydoc *doc = NULL;
  int rc = at_yaml_parse(path, text, size, &doc);
  free(text);
  if (rc == AT_OK) {
    loader L = {path, s, doc, {0}};
    rc = load_root(&L, doc->root);
    at_shapeset_free(&L.seen);
  }
  at_yaml_free(doc);
  if (rc) {
    at_space_free(s);
    return rc;
  }
  *out = s;
  return AT_OK;
}

static void free_names(char **names, size_t n) {
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
}

int at_space_load_shapes(const char *path, const at_op *op, at_shape **shapes, char ***names, size_t *n) {
  *shapes = NULL;
  if (names) *names = NULL;
  *n = 0;
  char *text;
  size_t size;
  AT_TRY(at_read_file(path, AT_YAML_MAX_BYTES, &text, &size));
  at_space tmp = {.path = (char *)path, .op = op}; /* only the shapes and their op's rules are used */
  at_ydoc *doc = NULL;
  int rc = at_yaml_parse(path, text, size, &doc);
  free(text);
  if (rc == AT_OK) {
    loader L = {path, &tmp, doc, {0}};
    const at_ynode *root = doc->root, *list = root;
    if (!root)
      rc = at_fail(AT_ERR_INPUT, "%s:1:1: the file is empty; a shapes file lists shape groups like {N: 4096, K: 4096, M: [16, 64]}",
                   path);
    else if (root->kind == AT_Y_SCALAR || (root->kind == AT_Y_MAP && !(list = at_ymap_get(root, "shapes"))))
      rc = err_at(&L, root, "a shapes file is a list of shape groups, or a mapping with the key 'shapes'");
    if (rc == AT_OK) rc = load_shapes(&L, list);
    at_shapeset_free(&L.seen);
  }
  at_yaml_free(doc);
  if (rc || !names) free_names(tmp.shape_names, tmp.nshapes);
  if (rc) {
    free(tmp.shapes);
    return rc;
  }
  *shapes = tmp.shapes;
  if (names) *names = tmp.shape_names;
  *n = tmp.nshapes;
  return AT_OK;
}

void at_space_free(at_space *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nvariants; i++) {
    at_variant *v = &s->variants[i];
    for (size_t j = 0; j < v->nparams; j++) {
      free(v->params[j].name);
      free(v->params[j].values);
    }
    for (size_t j = 0; j < v->nconstraints; j++) {
      free(v->constraints[j].name);
      free(v->constraints[j].text);
      free(v->constraints[j].pos);
      at_expr_free(v->constraints[j].expr);
    }
    free(v->params);
    free(v->constraints);
    free(v->names);
    free(v->name);
    free(v->family);
    free(v->template_arg);
    free(v->template_path);
    free(v->entry);
  }
  free(s->variants);
  free(s->shapes);
  free_names(s->shape_names, s->nshapes);
  free(s->path);
  free(s->dir);
  free(s->op_name);
  free(s->tag);
  free(s);
}

char *at_variant_name_expr(const at_variant *v, const int64_t *values) {
  const char *names[AT_MAX_PARAMS];
  size_t n = v->nparams < AT_MAX_PARAMS ? v->nparams : AT_MAX_PARAMS;
  for (size_t i = 0; i < n; i++) names[i] = v->params[i].name;
  return at_entry_instantiate(v->entry, names, values, (int)n);
}

int at_space_constraint_error(const at_space *s, const at_constraint *c, int col) {
  int line = c->line, column = c->col + col; /* without a position table: one line */
  size_t len = strlen(c->text);
  if (c->pos && col >= 0) {
    size_t i = (size_t)col > len ? len : (size_t)col;
    line = c->pos[2 * i];
    column = c->pos[2 * i + 1];
  }
  return at_fail(AT_ERR_INPUT, "%s:%d:%d: constraint '%s': %s", s->path, line, column, c->name, at_errmsg());
}

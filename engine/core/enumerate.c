/* enumerate.c: see enumerate.h. An odometer over each variant's value lists: a stream of points, of
 * which only the survivors are kept. */
#include "enumerate.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static at_prune_count *count_slot(at_enum *e, size_t variant, const char *rule, int per_shape) {
  for (size_t i = 0; i < e->npruned; i++)
    if (e->pruned[i].variant == variant && e->pruned[i].per_shape == per_shape && strcmp(e->pruned[i].rule, rule) == 0)
      return &e->pruned[i];
  e->pruned = at_xrealloc(e->pruned, sizeof *e->pruned * (e->npruned + 1));
  at_prune_count *p = &e->pruned[e->npruned++];
  p->variant = variant;
  p->rule = at_xstrdup(rule);
  p->per_shape = per_shape;
  p->count = 0;
  return p;
}

static int cmp_param_index(const void *a, const void *b, void *names) {
  const char *const *n = names;
  return strcmp(n[*(const size_t *)a], n[*(const size_t *)b]);
}

/* The canonical JSON of the parameters, keys sorted; with launch_only, of the launch parameters. */
static char *params_json(const at_variant *v, const int64_t *values, int launch_only) {
  size_t *order = at_xcalloc(v->nparams, sizeof *order);
  for (size_t i = 0; i < v->nparams; i++) order[i] = i;
  qsort_r(order, v->nparams, sizeof *order, cmp_param_index, (void *)v->names);
  at_buf b = {0};
  at_buf_puts(&b, "{");
  int first = 1;
  for (size_t i = 0; i < v->nparams; i++) {
    if (launch_only && !v->params[order[i]].launch) continue;
    at_buf_printf(&b, "%s\"%s\":%lld", first ? "" : ",", v->names[order[i]], (long long)values[order[i]]);
    first = 0;
  }
  at_buf_puts(&b, "}");
  free(order);
  return at_buf_steal(&b);
}

/* Evaluates a constraint; 1 keeps, 0 removes, <0 is an error already recorded. */
static int holds(const at_space *s, const at_constraint *c, const int64_t *table) {
  int64_t v;
  int col = 0;
  if (at_expr_eval(c->expr, table, &v, &col)) return -at_space_constraint_error(s, c, col);
  return v != 0;
}

/* Points of a variant before pruning, saturated at INT64_MAX. */
static int64_t variant_points(const at_variant *v) {
  int64_t n = 1;
  for (size_t i = 0; i < v->nparams; i++)
    n = (int64_t)v->params[i].n > INT64_MAX / n ? INT64_MAX : n * (int64_t)v->params[i].n;
  return n;
}

/* Does a constraint read one of the op's derived values? Those are computed only for points that
 * need them: most of a large space is usually pruned by constraints on the parameters alone, and
 * deriving is most of the cost of a point. */
static uint8_t *constraints_using_derived(const at_space *s, const at_variant *v) {
  uint8_t *uses = at_xcalloc(v->nconstraints, 1);
  for (size_t c = 0; c < v->nconstraints; c++)
    for (const char *const *d = s->op->derived; d && *d; d++) uses[c] |= at_expr_uses(v->constraints[c].expr, *d) != 0;
  return uses;
}

/* Keeps one surviving candidate. Arrays grow geometrically: a cap of 100,000 survivors must not
 * cost 100,000 reallocations. */
static void keep(at_enum *e, const at_variant *v, size_t vi, const int64_t *table, const uint8_t *ok) {
  if (e->n == e->cap) {
    e->cap = e->cap ? 2 * e->cap : 64;
    e->c = at_xrealloc(e->c, sizeof *e->c * e->cap);
    e->shape_ok = at_xrealloc(e->shape_ok, e->cap * (e->nshapes ? e->nshapes : 1));
  }
  memcpy(e->shape_ok + e->n * e->nshapes, ok, e->nshapes);
  at_cand *c = &e->c[e->n++];
  c->variant = vi;
  c->table = at_xmalloc(sizeof(int64_t) * v->nnames);
  memcpy(c->table, table, sizeof(int64_t) * v->nnames);
  c->params_json = params_json(v, table, 0);
  c->launch_json = v->nlaunch ? params_json(v, table, 1) : NULL;
  c->name_expr = at_variant_name_expr(v, table);
}

/* One variant, as a stream: the odometer visits every point once and only the survivors are kept,
 * so memory grows with the candidates kept (at most max_keep in all), never with the points. */
static int enumerate_variant(const at_space *s, size_t vi, const at_limits *lim, int64_t max_keep, at_enum *e) {
  const at_variant *v = &s->variants[vi];
  size_t *idx = at_xcalloc(v->nparams, sizeof *idx);
  int64_t *table = at_xcalloc(v->nnames, sizeof *table);
  uint8_t *ok = at_xcalloc(s->nshapes, 1), *uses_derived = constraints_using_derived(s, v);
  at_limits_values(lim, table + v->slot_limits);
  int64_t seen = 0, kept = 0; /* points of this variant visited, and kept */
  int rc = AT_OK;

  /* Register every rule so that zero counts are reported too. */
  for (size_t c = 0; c < v->nconstraints; c++) count_slot(e, vi, v->constraints[c].name, v->constraints[c].uses_shape);
  count_slot(e, vi, "device_threads", 0);
  count_slot(e, vi, "device_smem", 0);
  count_slot(e, vi, "no_shape", 0);

  for (;;) {
    for (size_t i = 0; i < v->nparams; i++) table[i] = v->params[i].values[idx[i]];
    e->total++;
    seen++;
    at_params p = {v->names, table, v->nparams};
    int derived = 0;

    const char *removed_by = NULL;
    for (size_t c = 0; c < v->nconstraints && !removed_by; c++) {
      if (v->constraints[c].uses_shape) continue;
      if (uses_derived[c] && !derived) {
        if ((rc = s->op->derive(v->family, &p, table + v->slot_derived))) goto done;
        derived = 1;
      }
      int h = holds(s, &v->constraints[c], table);
      if (h < 0) {
        rc = -h;
        goto done;
      }
      if (!h) removed_by = v->constraints[c].name;
    }
    if (!removed_by && !derived && (rc = s->op->derive(v->family, &p, table + v->slot_derived))) goto done;
    at_params dv = {v->names + v->slot_derived, table + v->slot_derived, v->nnames - v->slot_derived};
    if (!removed_by && at_params_get(&dv, "threads", 0) > lim->max_threads_per_block) removed_by = "device_threads";
    if (!removed_by && at_params_get(&dv, "smem_bytes", 0) > lim->max_smem_per_block) removed_by = "device_smem";

    if (!removed_by) {
      /* Per-shape constraints: the candidate stays if some shape keeps it. */
      int any = 0;
      for (size_t j = 0; j < s->nshapes; j++) {
        table[v->slot_shape] = s->shapes[j].m;
        table[v->slot_shape + 1] = s->shapes[j].n;
        table[v->slot_shape + 2] = s->shapes[j].k;
        ok[j] = 1;
        for (size_t c = 0; c < v->nconstraints && ok[j]; c++) {
          if (!v->constraints[c].uses_shape) continue;
          int h = holds(s, &v->constraints[c], table);
          if (h < 0) {
            rc = -h;
            goto done;
          }
          if (!h) {
            ok[j] = 0;
            count_slot(e, vi, v->constraints[c].name, 1)->count++;
          }
        }
        any |= ok[j];
      }
      table[v->slot_shape] = table[v->slot_shape + 1] = table[v->slot_shape + 2] = 0;
      if (!any) removed_by = "no_shape";
    }
    if (removed_by) {
      count_slot(e, vi, removed_by, 0)->count++;
    } else if ((int64_t)e->n >= max_keep) {
      /* Stop here rather than count on: the count so far already says that the space is too big. */
      rc = at_fail(AT_ERR_INPUT,
                   "%s:%d:%d: variant '%s': more than %lld candidates survive pruning (the limit, --max-candidates):"
                   " %lld of the first %lld of this variant's %lld points survive; add constraints or raise the limit",
                   s->path, v->line, v->col, v->name, (long long)max_keep, (long long)kept + 1, (long long)seen,
                   (long long)variant_points(v));
      goto done;
    } else {
      keep(e, v, vi, table, ok);
      kept++;
    }

    /* Next point of the odometer; the last parameter turns fastest. */
    size_t i = v->nparams;
    while (i > 0) {
      i--;
      if (++idx[i] < v->params[i].n) break;
      idx[i] = 0;
      if (i == 0) goto done;
    }
    if (v->nparams == 0) break;
  }
done:
  free(idx);
  free(table);
  free(ok);
  free(uses_derived);
  return rc;
}

int at_enumerate(const at_space *s, const at_limits *lim, int64_t max_candidates, at_enum **out) {
  at_enum *e = at_xcalloc(1, sizeof *e);
  e->nshapes = s->nshapes;
  *out = NULL;
  for (size_t vi = 0; vi < s->nvariants; vi++) {
    /* A family the compile target cannot run (sm90 on sm_89): every point is skipped, with why. */
    const char *why = s->op->family_unsupported ? s->op->family_unsupported(s->variants[vi].family, lim->arch) : NULL;
    if (why) {
      char *rule = at_xasprintf("device_arch (%s; the target is %s)", why, lim->arch);
      int64_t points = variant_points(&s->variants[vi]);
      e->total = points > INT64_MAX - e->total ? INT64_MAX : e->total + points;
      count_slot(e, vi, rule, 0)->count += points;
      free(rule);
      continue;
    }
    int rc = enumerate_variant(s, vi, lim, max_candidates, e);
    if (rc) {
      at_enum_free(e);
      return rc;
    }
  }
  *out = e;
  return AT_OK;
}

int64_t at_enum_pruned_total(const at_enum *e) {
  int64_t n = 0;
  for (size_t i = 0; i < e->npruned; i++)
    if (!e->pruned[i].per_shape) n += e->pruned[i].count;
  return n;
}

void at_cand_clear(at_cand *c) {
  free(c->table);
  free(c->params_json);
  free(c->launch_json);
  free(c->name_expr);
  memset(c, 0, sizeof *c);
}

void at_enum_free(at_enum *e) {
  if (!e) return;
  for (size_t i = 0; i < e->n; i++) at_cand_clear(&e->c[i]);
  for (size_t i = 0; i < e->npruned; i++) free(e->pruned[i].rule);
  free(e->c);
  free(e->pruned);
  free(e->shape_ok);
  free(e);
}

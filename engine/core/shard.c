/* shard.c: see shard.h. Integer costs throughout, so that every node, whatever its compiler's
 * floating-point contractions, deals the same shards. */
#include "shard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The fixed part of one evaluation, in 10^9 FLOPs: about 2 ms at a nominal 10^15 FLOP/s. */
enum { FIXED_GFLOP = 2000 };

int at_shard_parse(const char *text, at_shard *out) {
  memset(out, 0, sizeof *out);
  const char *slash = text ? strchr(text, '/') : NULL;
  int64_t i = 0, n = 0;
  int ok = slash != NULL;
  if (ok) {
    char *left = at_xstrndup(text, (size_t)(slash - text));
    ok = at_parse_i64(left, &i) == 0 && at_parse_i64(slash + 1, &n) == 0;
    free(left);
  }
  /* 2^20 shards is far past any cluster; the bound keeps the deal's arrays sane. */
  if (!ok || n < 1 || n > (1 << 20) || i < 1 || i > n)
    return at_fail(AT_ERR_INPUT, "--shard: expects I/N with 1 <= I <= N (shard I of N, e.g. 2/8), got '%s'",
                   text ? text : "");
  out->index = (int)i;
  out->count = (int)n;
  return AT_OK;
}

int64_t at_shard_pair_cost(const at_space *s, const at_shape *sh) {
  double launches = (double)s->timing.warmup + (double)s->timing.samples;
  double gflop = s->op->flops(sh) * (launches > 0 ? launches : 1) / 1e9;
  if (!(gflop >= 0)) gflop = 0;
  if (gflop > 1e15) gflop = 1e15; /* a nonsense shape must not overflow the sums */
  return FIXED_GFLOP + (int64_t)ceil(gflop);
}

typedef struct unit {
  int64_t cost;
  size_t cand;  /* the candidate, or the first of the kernel's */
  size_t shape; /* SIZE_MAX: every kept shape of the candidate (or kernel) */
  size_t kernel; /* SIZE_MAX: the candidate alone; else every candidate of this kernel */
} unit;

/* A candidate's kernel: its template and instantiation. Candidates of one kernel differ only in
 * launch parameters, and one compile serves them all. */
typedef struct kref {
  const char *tpl, *name;
  size_t cand;
} kref;

static int same_kernel(const kref *x, const kref *y) { return strcmp(x->tpl, y->tpl) == 0 && strcmp(x->name, y->name) == 0; }

/* By kernel, then in enumeration order. */
static int cmp_kref(const void *a, const void *b) {
  const kref *x = a, *y = b;
  int c = strcmp(x->tpl, y->tpl);
  if (!c) c = strcmp(x->name, y->name);
  return c ? c : (x->cand < y->cand ? -1 : x->cand > y->cand);
}

/* Largest first; ties in enumeration order, which is the file's order. */
static int cmp_unit(const void *a, const void *b) {
  const unit *x = a, *y = b;
  if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  if (x->cand != y->cand) return x->cand < y->cand ? -1 : 1;
  return x->shape < y->shape ? -1 : x->shape > y->shape;
}

/* A min-heap of shards by (load, index): the least loaded, the lower index on a tie. */
typedef struct heap {
  int *shard;
  int64_t *load;
  int n;
} heap;

static int less(const heap *h, int a, int b) {
  int64_t la = h->load[h->shard[a]], lb = h->load[h->shard[b]];
  return la != lb ? la < lb : h->shard[a] < h->shard[b];
}

static void sift_down(heap *h, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && less(h, l, m)) m = l;
    if (r < h->n && less(h, r, m)) m = r;
    if (m == i) return;
    int t = h->shard[i];
    h->shard[i] = h->shard[m];
    h->shard[m] = t;
    i = m;
  }
}

void at_shard_plan(const at_space *s, const at_enum *e, int count, int *owner, int *shape_owner) {
  size_t ns = e->nshapes;
  int64_t *shape_cost = at_xcalloc(ns ? ns : 1, sizeof *shape_cost);
  uint8_t *shape_used = at_xcalloc(ns ? ns : 1, 1);
  for (size_t j = 0; j < ns; j++) shape_cost[j] = at_shard_pair_cost(s, &s->shapes[j]);

  int64_t total = 0;
  int64_t *cand_cost = at_xcalloc(e->n ? e->n : 1, sizeof *cand_cost);
  for (size_t i = 0; i < e->n; i++)
    for (size_t j = 0; j < ns; j++)
      if (e->shape_ok[i * ns + j]) cand_cost[i] += shape_cost[j], shape_used[j] = 1;
  for (size_t i = 0; i < e->n; i++) total += cand_cost[i];

  /* The kernels: the candidates sorted by kernel, kernel k being order[kstart[k] .. kstart[k + 1])
   * (in enumeration order inside it). */
  kref *refs = at_xcalloc(e->n ? e->n : 1, sizeof *refs);
  for (size_t i = 0; i < e->n; i++) refs[i] = (kref){s->variants[e->c[i].variant].template_path, e->c[i].name_expr, i};
  qsort(refs, e->n, sizeof *refs, cmp_kref);
  size_t *order = at_xcalloc(e->n ? e->n : 1, sizeof *order), *kstart = at_xcalloc(e->n + 1, sizeof *kstart);
  size_t nkernels = 0;
  for (size_t r = 0; r < e->n; r++) {
    order[r] = refs[r].cand;
    if (r == 0 || !same_kernel(&refs[r - 1], &refs[r])) kstart[nkernels++] = r;
  }
  kstart[nkernels] = e->n;
  free(refs);

  /* The units: whole kernels, so that a kernel is compiled by one shard; a kernel too heavy to
   * keep whole is dealt by candidate, and a candidate too heavy for that by shape. */
  const int64_t whole = total / (4 * (int64_t)(count > 0 ? count : 1));
  size_t nunits = 0, cap = e->n ? e->n : 1;
  unit *u = at_xcalloc(cap, sizeof *u);
  for (size_t k = 0; k < nkernels; k++) {
    int64_t kcost = 0;
    size_t first = SIZE_MAX;
    for (size_t r = kstart[k]; r < kstart[k + 1]; r++) {
      kcost += cand_cost[order[r]];
      if (order[r] < first) first = order[r];
    }
    if (count <= 1 || kcost <= whole) {
      if (nunits == cap) u = at_xrealloc(u, sizeof *u * (cap *= 2));
      u[nunits++] = (unit){kcost, first, SIZE_MAX, k};
      continue;
    }
    for (size_t r = kstart[k]; r < kstart[k + 1]; r++) {
      size_t i = order[r];
      int split = cand_cost[i] > whole;
      for (size_t j = 0; j < (split ? ns : 1); j++) {
        if (split && !e->shape_ok[i * ns + j]) continue;
        if (nunits == cap) u = at_xrealloc(u, sizeof *u * (cap *= 2));
        u[nunits++] = (unit){split ? shape_cost[j] : cand_cost[i], i, split ? j : SIZE_MAX, SIZE_MAX};
      }
    }
  }
  qsort(u, nunits, sizeof *u, cmp_unit);

  heap h = {at_xcalloc((size_t)count + 1, sizeof(int)), at_xcalloc((size_t)count + 1, sizeof(int64_t)), count};
  for (int k = 0; k < count; k++) h.shard[k] = k + 1; /* all loads 0: already a heap */
  for (size_t i = 0; i < e->n * ns; i++) owner[i] = 0;
  for (size_t k = 0; k < nunits; k++) {
    int to = h.shard[0];
    h.load[to] += u[k].cost;
    sift_down(&h, 0);
    size_t r0 = u[k].kernel == SIZE_MAX ? 0 : kstart[u[k].kernel], r1 = u[k].kernel == SIZE_MAX ? 1 : kstart[u[k].kernel + 1];
    for (size_t r = r0; r < r1; r++) {
      size_t i = u[k].kernel == SIZE_MAX ? u[k].cand : order[r];
      for (size_t j = 0; j < ns; j++)
        if ((u[k].shape == SIZE_MAX || u[k].shape == j) && e->shape_ok[i * ns + j]) owner[i * ns + j] = to;
    }
  }
  for (size_t j = 0; j < ns; j++) shape_owner[j] = shape_used[j] ? 0 : (int)(j % (size_t)count) + 1;
  free(h.shard);
  free(h.load);
  free(u);
  free(order), free(kstart);
  free(cand_cost);
  free(shape_used);
  free(shape_cost);
}

void at_shard_apply(const at_space *s, at_enum *e, at_shard sh, uint8_t *shapes_on, at_shard_stats *st) {
  size_t ns = e->nshapes;
  memset(st, 0, sizeof *st);
  int *owner = at_xcalloc(e->n * ns > 0 ? e->n * ns : 1, sizeof *owner);
  int *shape_owner = at_xcalloc(ns ? ns : 1, sizeof *shape_owner);
  at_shard_plan(s, e, sh.count, owner, shape_owner);
  int64_t *load = at_xcalloc((size_t)sh.count + 1, sizeof *load);
  for (size_t j = 0; j < ns; j++) shapes_on[j] = shape_owner[j] == sh.index;
  st->cands_total = (int64_t)e->n;

  /* Keep this shard's pairs; compact the candidates that still have one. */
  size_t kept = 0;
  for (size_t i = 0; i < e->n; i++) {
    int any = 0;
    for (size_t j = 0; j < ns; j++) {
      int o = owner[i * ns + j];
      if (!o) continue;
      int64_t c = at_shard_pair_cost(s, &s->shapes[j]);
      st->pairs_total++;
      st->cost_total += c;
      load[o] += c;
      if (o == sh.index) {
        any = 1;
        shapes_on[j] = 1;
        st->pairs_kept++;
        st->cost_kept += c;
      } else {
        e->shape_ok[i * ns + j] = 0;
      }
    }
    if (!any) {
      at_cand_clear(&e->c[i]);
      continue;
    }
    if (kept != i) {
      e->c[kept] = e->c[i];
      memmove(e->shape_ok + kept * ns, e->shape_ok + i * ns, ns);
    }
    kept++;
  }
  e->n = kept;
  st->cands_kept = (int64_t)kept;
  for (int k = 1; k <= sh.count; k++)
    if (load[k] > st->cost_max) st->cost_max = load[k];
  for (size_t j = 0; j < ns; j++) st->shapes_kept += shapes_on[j];
  free(load);
  free(owner);
  free(shape_owner);
}

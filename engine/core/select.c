/* select.c: see select.h. */
#include "select.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A typical M of each bucket, for filling empty buckets from the nearest tuned M. */
static const double BUCKET_M[AT_BUCKET_ANY] = {16, 32, 64, 128, 256, 1024};

void at_device_file_name(const at_device_entry *dev, int product, char *out, size_t n) {
  if (!product) {
    snprintf(out, n, "sm%d", dev->cc);
    return;
  }
  size_t j = 0;
  for (const char *p = dev->name; *p && j + 1 < n; p++) out[j++] = (isalnum((unsigned char)*p) || *p == '-') ? *p : '_';
  out[j] = 0;
}

/* The tuned rows of one (N, K), organised: the distinct M, each M's best time, and lookups (`sorted`:
 * the same rows by candidate, then M, for time_at). */
typedef struct tuned {
  at_tuned_row *rows, *sorted;
  size_t nrows;
  int64_t ms[64];
  double best[64];
  int64_t winner[64]; /* each M's winner (winner_at) and its time: the default file's reference */
  double win_time[64];
  int nm;
} tuned;

static int m_index(const tuned *t, int64_t m) {
  for (int i = 0; i < t->nm; i++)
    if (t->ms[i] == m) return i;
  return -1;
}

static int cmp_row(const void *a, const void *b) {
  const at_tuned_row *x = a, *y = b;
  if (x->candidate_id != y->candidate_id) return x->candidate_id > y->candidate_id ? 1 : -1;
  return (x->m > y->m) - (x->m < y->m);
}

static void free_tuned(tuned *t) {
  free(t->rows);
  free(t->sorted);
}

static double time_at(const tuned *t, int64_t cand, int64_t m);
static int64_t winner_at(const tuned *t, int64_t m);

static int load_tuned(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int64_t n, int64_t k,
                      tuned *t) {
  memset(t, 0, sizeof *t);
  AT_TRY(at_store_tuned_rows(db, op, tag, dev->id, n, k, &t->rows, &t->nrows));
  t->sorted = at_xcalloc(t->nrows ? t->nrows : 1, sizeof *t->sorted);
  if (t->nrows) memcpy(t->sorted, t->rows, sizeof *t->rows * t->nrows);
  qsort(t->sorted, t->nrows, sizeof *t->sorted, cmp_row);
  for (size_t i = 0; i < t->nrows; i++) {
    int mi = m_index(t, t->rows[i].m);
    if (mi < 0) {
      if (t->nm == 64) continue;
      mi = t->nm++;
      t->ms[mi] = t->rows[i].m;
      t->best[mi] = t->rows[i].time_us;
    }
    if (t->rows[i].time_us < t->best[mi]) t->best[mi] = t->rows[i].time_us;
  }
  for (int mi = 0; mi < t->nm; mi++) {
    t->winner[mi] = winner_at(t, t->ms[mi]);
    t->win_time[mi] = time_at(t, t->winner[mi], t->ms[mi]);
  }
  return AT_OK;
}

/* Time of a candidate at an M, or 0 when it has no checked result there (one result per candidate
 * and problem: the results table's key). */
static double time_at(const tuned *t, int64_t cand, int64_t m) {
  at_tuned_row key = {.m = m, .candidate_id = cand};
  const at_tuned_row *r = bsearch(&key, t->sorted, t->nrows, sizeof key, cmp_row);
  return r ? r->time_us : 0;
}

/* The winner at one M: the re-timed winner, else the fastest. */
static int64_t winner_at(const tuned *t, int64_t m) {
  int64_t best = -1;
  double best_t = 0;
  for (size_t i = 0; i < t->nrows; i++) {
    const at_tuned_row *r = &t->rows[i];
    if (r->m != m) continue;
    if (r->winner) return r->candidate_id;
    if (best < 0 || r->time_us < best_t) best = r->candidate_id, best_t = r->time_us;
  }
  return best;
}

/* Summed relative time of a candidate over the M of a bucket; INFINITY when it misses one. */
static double score(const tuned *t, int64_t cand, const int64_t *ms, int nms) {
  double s = 0;
  for (int i = 0; i < nms; i++) {
    double x = time_at(t, cand, ms[i]);
    if (x <= 0) return INFINITY;
    s += x / t->best[m_index(t, ms[i])];
  }
  return s;
}

/* The candidate chosen for a set of M (one bucket). -1 when none passed at all of them. */
static int64_t choose(const tuned *t, const int64_t *ms, int nms) {
  if (nms == 1) return winner_at(t, ms[0]);
  int64_t best = -1;
  double best_s = INFINITY;
  for (size_t i = 0; i < t->nrows; i++) {
    if (t->rows[i].m != ms[0]) continue; /* candidates that have the first M at least */
    double s = score(t, t->rows[i].candidate_id, ms, nms);
    if (s < best_s || (s == best_s && t->rows[i].candidate_id < best)) best = t->rows[i].candidate_id, best_s = s;
  }
  return best;
}

/* ---- names read back from the DB ---------------------------------------------------------------- */

/* What the DB names is checked as the loader checks a search space (space.c): the DB may have been
 * edited by hand, and its tag names files (a tag with "/.." would put them outside --out), its op
 * and family choose code, its template a file. A violation is a corrupt DB. */
int at_select_check_names(at_store *db, const char *op, const char *tag) {
  if (!at_op_find(op))
    return at_fail(AT_ERR_RUNTIME, "%s: corrupt DB: unknown op '%s' (known: %s)", at_store_path(db), op, at_op_names());
  if (!at_name_ok(tag))
    return at_fail(AT_ERR_RUNTIME, "%s: corrupt DB: tag '%s' must be letters, digits and _ (it names files)",
                   at_store_path(db), tag);
  return AT_OK;
}

static int check_config(at_store *db, const char *op_name, int64_t cand, const at_config *c) {
  const at_op *op = at_op_find(op_name);
  const char *path = at_store_path(db), *why = NULL;
  int family_known = 0;
  for (const char *const *f = op ? op->families : NULL; f && *f; f++) family_known |= strcmp(*f, c->family) == 0;
  if (!at_name_ok(c->variant))
    why = "its variant name must be letters, digits and _";
  else if (!family_known)
    why = "its family is not one the op has";
  else if (!c->template_name[0] || strcmp(c->template_name, ".") == 0 || strcmp(c->template_name, "..") == 0)
    why = "its template is not a file name";
  else if (!strchr(c->entry, '<') || c->entry[strlen(c->entry) - 1] != '>')
    why = "its entry is not a kernel template instantiation like 'kernel<BLOCK_M, BLOCK_N>'";
  if (why)
    return at_fail(AT_ERR_RUNTIME, "%s: corrupt DB: candidate %lld (variant '%s', family '%s', template '%s'): %s", path,
                   (long long)cand, c->variant, c->family, c->template_name, why);
  return AT_OK;
}

static int candidate_config(at_store *db, const char *op, int64_t cand, at_config *out) {
  AT_TRY(at_store_candidate_config(db, cand, out));
  return check_config(db, op, cand, out);
}

static int fill(at_store *db, const char *op, tuned *t, at_config_set *out, int b, int64_t cand, const int64_t *ms,
                int nms) {
  AT_TRY(candidate_config(db, op, cand, &out->bucket[b]));
  out->ntuned[b] = 0;
  for (int i = 0; i < nms && i < 16; i++) {
    out->tuned_m[b][i] = ms[i];
    out->time_us[b][i] = time_at(t, cand, ms[i]);
    out->ntuned[b]++;
  }
  return AT_OK;
}

static int header(at_store *db, const at_device_entry *dev, const char *op, const char *tag, at_config_set *out) {
  memset(out, 0, sizeof *out);
  AT_TRY(at_select_check_names(db, op, tag));
  snprintf(out->op, sizeof out->op, "%s", op);
  snprintf(out->tag, sizeof out->tag, "%s", tag);
  at_device_file_name(dev, 0, out->device, sizeof out->device);
  snprintf(out->device_name, sizeof out->device_name, "%s", dev->name);
  snprintf(out->arch, sizeof out->arch, "%s", dev->arch);
  return AT_OK;
}

/* Of the tuned M in ms, the one nearest bucket b's typical M (log2 distance; ties to the smaller M),
 * which fills a bucket no M of its own was tuned for. 0 when ms is empty. */
static int64_t nearest_typical_m(const int64_t *ms, int n, int b) {
  int64_t near = 0;
  double d = INFINITY;
  for (int i = 0; i < n; i++) {
    double x = fabs(log2((double)ms[i]) - log2(BUCKET_M[b]));
    if (x < d || (x == d && ms[i] < near)) d = x, near = ms[i];
  }
  return near;
}

/* Chooses per bucket; chosen[b] gets the candidate id (-1 for none). */
static int select_tuned(at_store *db, const char *op, tuned *t, at_config_set *out, int64_t chosen[AT_NBUCKETS]) {
  int64_t bucket_ms[AT_BUCKET_ANY][64];
  int nb[AT_BUCKET_ANY] = {0};
  int64_t largest = 0;
  for (int i = 0; i < t->nm; i++) {
    int b = at_bucket_of(t->ms[i]);
    bucket_ms[b][nb[b]++] = t->ms[i];
    if (t->ms[i] > largest) largest = t->ms[i];
  }
  for (int b = 0; b < AT_NBUCKETS; b++) chosen[b] = -1;
  for (int b = 0; b < AT_BUCKET_ANY; b++) {
    if (!nb[b]) continue;
    chosen[b] = choose(t, bucket_ms[b], nb[b]);
    if (chosen[b] < 0) chosen[b] = winner_at(t, bucket_ms[b][nb[b] - 1]); /* no config passed them all */
    if (chosen[b] >= 0) AT_TRY(fill(db, op, t, out, b, chosen[b], bucket_ms[b], nb[b]));
  }
  chosen[AT_BUCKET_ANY] = winner_at(t, largest);
  if (chosen[AT_BUCKET_ANY] >= 0) AT_TRY(fill(db, op, t, out, AT_BUCKET_ANY, chosen[AT_BUCKET_ANY], &largest, 1));
  /* Empty buckets: the config of the nearest tuned M. */
  for (int b = 0; b < AT_BUCKET_ANY; b++) {
    if (nb[b]) continue;
    int from = at_bucket_of(nearest_typical_m(t->ms, t->nm, b));
    chosen[b] = chosen[from];
    if (chosen[b] >= 0) {
      out->bucket[b] = out->bucket[from];
      out->ntuned[b] = 0; /* tuned at no M of its own */
    }
  }
  return AT_OK;
}

/* ---- per-M entries (M_LEQ_<m>) ------------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The tuned M that get an entry, ascending: all of them, or, beyond AT_MAX_MLEQ, evenly spaced ones
 * with the smallest and the largest kept (an M left out is answered by the next larger entry). */
static int entry_ms(const int64_t *ms, int nm, int64_t out[AT_MAX_MLEQ]) {
  int64_t sorted[64];
  memcpy(sorted, ms, sizeof *ms * (size_t)nm);
  qsort(sorted, (size_t)nm, sizeof *sorted, cmp_i64);
  if (nm <= AT_MAX_MLEQ) {
    memcpy(out, sorted, sizeof *out * (size_t)nm);
    return nm;
  }
  for (int i = 0; i < AT_MAX_MLEQ; i++) out[i] = sorted[(int)((int64_t)i * (nm - 1) / (AT_MAX_MLEQ - 1))];
  return AT_MAX_MLEQ;
}

/* One entry per tuned M of one (N, K): that M's winner, as for a bucket with one tuned M. */
static int select_per_m(at_store *db, const char *op, const tuned *t, at_config_set *out) {
  int64_t ms[AT_MAX_MLEQ];
  int n = entry_ms(t->ms, t->nm, ms);
  out->nmleq = 0;
  for (int i = 0; i < n; i++) {
    if (ms[i] > AT_MLEQ_MAX_M) break; /* beyond any launch: `any` answers */
    int64_t cand = winner_at(t, ms[i]);
    if (cand < 0) continue;
    int e = out->nmleq;
    AT_TRY(candidate_config(db, op, cand, &out->mleq[e]));
    out->mleq_m[e] = ms[i];
    out->mleq_time_us[e] = time_at(t, cand, ms[i]);
    out->nmleq++;
  }
  return AT_OK;
}

/* ---- the default file: the config for an (N, K) nobody tuned ---------------------------------- */

/* The M of an (N, K) that stands for m in the default file's choice: m itself when it was tuned
 * there, else the smallest tuned M above m (whose entry the runtime takes for m in that (N, K)'s own
 * file), so that an M tuned only on some (N, K) (M = 256 on the small shapes of the shipped job) is
 * still chosen with all of them in view. Not a smaller M: a config's standing at small M says
 * little about large M. Its index, -1 when none. */
static int stand_in(const tuned *t, int64_t m) {
  int best = -1;
  for (int i = 0; i < t->nm; i++) {
    if (t->ms[i] == m) return i;
    if (t->ms[i] > m && (best < 0 || t->ms[i] < t->ms[best])) best = i;
  }
  return best;
}

/* A candidate's log regret at the M in ms over the (N, K) of the tag: the sum, over every (N, K)
 * and every M of ms (or its stand-in there), of ln(time / the winner's time), at least 0 (the
 * winner was re-timed against the fastest first timings and kept: none counts as better than it),
 * ln 10 where the candidate has no checked result. exp(regret / count) is the geometric mean of its slowdown
 * against each (N, K)'s own winner: the default file's choice minimises it, so that an untuned
 * (N, K) gets the config that came closest to the best on the tuned ones, not the one that won
 * most often (on the H100 tuning of e0b458f, the most frequent winner at M = 512 ran up to 2.3x the
 * best of a tuned (N, K); the least-regret one 1.27x). *wins counts the problems it won. */
static double log_regret(const tuned *ts, size_t nsets, int64_t cand, const int64_t *ms, int nms, int *wins) {
  double s = 0;
  *wins = 0;
  for (size_t j = 0; j < nsets; j++)
    for (int i = 0; i < nms; i++) {
      int mi = stand_in(&ts[j], ms[i]);
      if (mi < 0) continue;
      double x = time_at(&ts[j], cand, ts[j].ms[mi]);
      s += x > 0 ? log(fmax(1.0, x / ts[j].win_time[mi])) : log(10.0);
      *wins += ts[j].winner[mi] == cand;
    }
  return s;
}

/* The candidate of least log regret at the M in ms, among every candidate with a checked result in
 * any (N, K) at any of them (each scored once); a tie goes to the one that won more of those
 * problems, then to the lower candidate id. -1 when there is none. */
static int64_t least_regret(const tuned *ts, size_t nsets, const int64_t *ms, int nms) {
  size_t n = 0, cap = 0;
  for (size_t j = 0; j < nsets; j++) cap += ts[j].nrows;
  int64_t *ids = at_xcalloc(cap ? cap : 1, sizeof *ids);
  for (size_t j = 0; j < nsets; j++)
    for (size_t r = 0; r < ts[j].nrows; r++) {
      const at_tuned_row *row = &ts[j].sorted[r];
      int at_ms = 0;
      for (int i = 0; i < nms && !at_ms; i++) {
        int mi = stand_in(&ts[j], ms[i]);
        at_ms = mi >= 0 && row->m == ts[j].ms[mi];
      }
      if (at_ms) ids[n++] = row->candidate_id;
    }
  qsort(ids, n, sizeof *ids, cmp_i64);
  int64_t best = -1;
  double best_s = INFINITY;
  int best_w = 0;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && ids[i] == ids[i - 1]) continue;
    int w;
    double sc = log_regret(ts, nsets, ids[i], ms, nms, &w);
    if (sc < best_s || (sc == best_s && w > best_w)) best = ids[i], best_s = sc, best_w = w; /* ids ascend */
  }
  free(ids);
  return best;
}

/* Every M tuned in any (N, K) of the tag (at most 64), in the order met. */
static int all_tuned_ms(const tuned *ts, size_t nsets, int64_t all[64]) {
  int nall = 0;
  for (size_t i = 0; i < nsets; i++)
    for (int k = 0; k < ts[i].nm; k++) {
      int seen = 0;
      for (int a = 0; a < nall; a++) seen |= all[a] == ts[i].ms[k];
      if (!seen && nall < 64) all[nall++] = ts[i].ms[k];
    }
  return nall;
}

/* The default file's per-M entries: one per M tuned in any (N, K) of the tag. */
static int default_per_m(at_store *db, const char *op, const tuned *ts, size_t nsets, at_config_set *out) {
  int64_t all[64];
  int nall = all_tuned_ms(ts, nsets, all);
  int64_t ms[AT_MAX_MLEQ];
  int n = entry_ms(all, nall, ms);
  out->nmleq = 0;
  for (int i = 0; i < n; i++) {
    if (ms[i] > AT_MLEQ_MAX_M) break;
    int64_t cand = least_regret(ts, nsets, &ms[i], 1);
    if (cand < 0) continue;
    int e = out->nmleq;
    AT_TRY(candidate_config(db, op, cand, &out->mleq[e]));
    out->mleq_m[e] = ms[i];
    out->mleq_time_us[e] = 0; /* a default file stands for no (N, K) of its own */
    out->nmleq++;
  }
  return AT_OK;
}

int at_select_nk(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int64_t n, int64_t k,
                 at_config_set *out) {
  AT_TRY(header(db, dev, op, tag, out));
  out->n = n;
  out->k = k;
  tuned t;
  int rc = load_tuned(db, dev, op, tag, n, k, &t);
  if (rc == AT_OK && t.nm == 0)
    rc = at_fail(AT_ERR_RUNTIME, "nothing tuned for %s %s N=%lld K=%lld on %s", op, tag, (long long)n, (long long)k, dev->name);
  int64_t chosen[AT_NBUCKETS];
  if (rc == AT_OK) rc = select_tuned(db, op, &t, out, chosen);
  if (rc == AT_OK) rc = select_per_m(db, op, &t, out);
  free_tuned(&t);
  return rc;
}

int at_select_default(at_store *db, const at_device_entry *dev, const char *op, const char *tag, at_config_set *out) {
  AT_TRY(header(db, dev, op, tag, out));
  at_tuned_nk *nks;
  size_t nnk;
  AT_TRY(at_store_tuned_nks(db, op, dev->id, &nks, &nnk));
  tuned *ts = at_xcalloc(nnk ? nnk : 1, sizeof *ts);
  size_t nsets = 0;
  int rc = AT_OK;
  for (size_t i = 0; i < nnk && rc == AT_OK; i++) {
    if (strcmp(nks[i].tag, tag) != 0) continue;
    rc = load_tuned(db, dev, op, tag, nks[i].n, nks[i].k, &ts[nsets]);
    nsets++;
  }
  if (rc == AT_OK && nsets == 0) rc = at_fail(AT_ERR_RUNTIME, "nothing tuned for %s %s on %s", op, tag, dev->name);
  out->from_sets = (int)nsets;
  int64_t all[64];
  int nall = all_tuned_ms(ts, nsets, all);
  for (int b = 0; b < AT_NBUCKETS && rc == AT_OK; b++) {
    /* The least log regret over the bucket's tuned M (`any`: the largest tuned M, as `any` of an
     * (N, K) is its winner there; a bucket no (N, K) tuned: the tuned M nearest its typical M). */
    int64_t ms[64];
    int nms = 0;
    for (int a = 0; a < nall; a++) {
      if (b == AT_BUCKET_ANY) {
        if (nms == 0 || all[a] > ms[0]) ms[0] = all[a], nms = 1;
      } else if (at_bucket_of(all[a]) == b) {
        ms[nms++] = all[a];
      }
    }
    if (nms == 0 && b != AT_BUCKET_ANY && nall) ms[0] = nearest_typical_m(all, nall, b), nms = 1;
    int64_t best = nms ? least_regret(ts, nsets, ms, nms) : -1;
    if (best >= 0) rc = candidate_config(db, op, best, &out->bucket[b]);
  }
  if (rc == AT_OK) rc = default_per_m(db, op, ts, nsets, out);
  for (size_t i = 0; i < nsets; i++) free_tuned(&ts[i]);
  free(ts);
  free(nks);
  return rc;
}

int at_select_check_output(at_store *db, const at_device_entry *devs, size_t ndev, int product, const char *cmd) {
  /* Two devices of one name would write the same files: refuse rather than overwrite. */
  for (size_t d = 0; d < ndev; d++)
    for (size_t e = d + 1; e < ndev; e++) {
      char a[128], b[128];
      at_device_file_name(&devs[d], product, a, sizeof a);
      at_device_file_name(&devs[e], product, b, sizeof b);
      if (strcmp(a, b) == 0)
        return at_fail(AT_ERR_INPUT, "%s: %s and %s would both be exported as %s; use --device-name product", cmd,
                       devs[d].name, devs[e].name, a);
    }
  int rc = AT_OK;
  for (size_t d = 0; d < ndev && rc == AT_OK; d++) {
    at_tuned_nk *nks = NULL;
    size_t nnk = 0;
    rc = at_store_tuned_nks(db, NULL, devs[d].id, &nks, &nnk);
    for (size_t i = 0; i < nnk && rc == AT_OK; i++) rc = at_select_check_names(db, nks[i].op, nks[i].tag);
    free(nks);
  }
  return rc;
}

int at_device_name_kind(const char *arg, const char *cmd, int *product) {
  if (strcmp(arg, "arch") != 0 && strcmp(arg, "product") != 0)
    return at_fail(AT_ERR_INPUT, "%s: --device-name must be arch or product, not '%s'", cmd, arg);
  *product = strcmp(arg, "product") == 0;
  return AT_OK;
}

/* lookup.c: see lookup.h. */
#include "lookup.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "json.h"
#include "limits.h"
#include "op.h"
#include "select.h"
#include "timemodel.h"
#include "util.h"

const char *const AT_SOURCE_NAMES[5] = {"db", "nk_file", "model_file", "default_file", "builtin"};

int at_source_untuned(at_source s) { return s == AT_SRC_MODEL_FILE || s == AT_SRC_DEFAULT_FILE; }

int at_source_name_untuned(const char *name) {
  for (int s = 0; s < 5; s++)
    if (strcmp(name, AT_SOURCE_NAMES[s]) == 0) return at_source_untuned((at_source)s);
  return 0;
}

static void warn(const at_lookup_req *q, const char *fmt, ...) AT_PRINTF(2, 3);
static void warn(const at_lookup_req *q, const char *fmt, ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (q->warn)
    q->warn(msg);
  else
    fprintf(stderr, "autotune: warning: %s\n", msg);
}

static int from_db(const at_lookup_req *q, at_lookup_result *out) {
  at_device_entry *devs = NULL;
  size_t ndev = 0;
  if (at_store_devices(q->db, &devs, &ndev)) {
    warn(q, "DB %s unreadable (%s); trying the next source", at_store_path(q->db), at_errmsg());
    return 0;
  }
  int found = 0;
  for (int d = 0; d < 2 && q->device_names[d] && !found; d++)
    for (size_t i = 0; i < ndev && !found; i++) {
      char arch_name[64], product[128];
      at_device_file_name(&devs[i], 0, arch_name, sizeof arch_name);
      at_device_file_name(&devs[i], 1, product, sizeof product);
      if (strcmp(q->device_names[d], arch_name) != 0 && strcmp(q->device_names[d], product) != 0) continue;
      at_tuned_nk *nks = NULL;
      size_t nnk = 0;
      if (at_store_tuned_nks(q->db, q->op, devs[i].id, &nks, &nnk)) {
        warn(q, "DB %s unreadable (%s); trying the next source", at_store_path(q->db), at_errmsg());
        break;
      }
      for (size_t j = 0; j < nnk && !found; j++) {
        if (nks[j].n != q->n || nks[j].k != q->k || (q->tag && strcmp(nks[j].tag, q->tag) != 0)) continue;
        if (at_select_nk(q->db, &devs[i], q->op, nks[j].tag, q->n, q->k, &out->set) == AT_OK) {
          found = 1;
          out->source = AT_SRC_DB;
          snprintf(out->path, sizeof out->path, "%s", at_store_path(q->db));
        } else {
          warn(q, "DB %s: %s; trying the next source", at_store_path(q->db), at_errmsg());
        }
      }
      free(nks);
    }
  free(devs);
  return found;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Is f a configs file of this device prefix and of the tag asked for (any tag when none)? */
static int file_of(const at_lookup_req *q, const char *f, const char *prefix) {
  size_t len = strlen(f), pl = strlen(prefix);
  if (strncmp(f, prefix, pl) != 0 || len < 5 || strcmp(f + len - 5, ".json") != 0) return 0;
  if (!q->tag) return 1;
  size_t tl = strlen(q->tag);
  return strncmp(f + pl, q->tag, tl) == 0 && (f[pl + tl] == '-' || f[pl + tl] == '.');
}

/* Decode sizes. An (N, K) nobody tuned takes its entries for M up to here from the nearest tuned
 * (N, K), the rest from the default file: at these M which tiles fill the GPU, and whether splitting
 * K pays, depend on N and K, and a neighbour's choice carries over (on the H100, 120 untuned LLM
 * shapes: 0.76-0.85x cuBLASLt's time at M 16-128 from the nearest file against 0.89-0.97x from the
 * default file; from M = 256 up the default file did as well or better: docs/perf.md). */
#define NEAREST_MAX_M 128

/* The nearest tuned (N, K) to the asked one among the files names[] of this prefix (distance
 * |log2 N'/N| + |log2 K'/K|; ties to the first in name order) into *near, its path into path.
 * 0 when there is none or it cannot be read (a warning). */
static int nearest_file(const at_lookup_req *q, char **names, size_t n, const char *prefix, at_config_set *near,
                        char *path, size_t path_len) {
  const char *best = NULL;
  double best_d = INFINITY;
  for (size_t i = 0; i < n; i++) {
    const char *nk = strstr(names[i], "-N=");
    long long fn, fk;
    if (!nk || !file_of(q, names[i], prefix) || sscanf(nk, "-N=%lld-K=%lld.json", &fn, &fk) != 2 || fn < 1 || fk < 1)
      continue;
    double d = fabs(log2((double)fn / (double)q->n)) + fabs(log2((double)fk / (double)q->k));
    if (d < best_d) best = names[i], best_d = d;
  }
  if (!best) return 0;
  char *p = at_path_join(q->configs_dir, best);
  at_json *j = NULL;
  int ok = 0;
  if (at_json_load(p, &j) || at_config_set_from_json(p, j, near))
    warn(q, "skipping %s for the decode sizes: %s", p, at_errmsg());
  else
    ok = strcmp(near->op, q->op) == 0;
  if (ok) snprintf(path, path_len, "%s", p);
  at_json_free(j);
  free(p);
  return ok;
}

/* The default file's answer with another answer's per-M entries up to the largest of them at or
 * below max_m (M above that keep the default file's entries); 0 when it has none there. */
static int overlay(at_config_set *def, const at_config_set *near, int64_t max_m) {
  int64_t top = 0;
  for (int i = 0; i < near->nmleq; i++)
    if (near->mleq[i].valid && near->mleq_m[i] <= max_m && near->mleq_m[i] > top) top = near->mleq_m[i];
  if (!top) return 0;
  at_config_set *merged = at_xcalloc(1, sizeof *merged);
  *merged = *def;
  merged->nmleq = 0;
  for (int i = 0; i < near->nmleq && merged->nmleq < AT_MAX_MLEQ; i++)
    if (near->mleq_m[i] <= top) {
      int e = merged->nmleq++;
      merged->mleq_m[e] = near->mleq_m[i], merged->mleq[e] = near->mleq[i];
      merged->mleq_time_us[e] = 0; /* measured on another (N, K), or predicted */
    }
  for (int i = 0; i < def->nmleq && merged->nmleq < AT_MAX_MLEQ; i++)
    if (def->mleq_m[i] > top) {
      int e = merged->nmleq++;
      merged->mleq_m[e] = def->mleq_m[i], merged->mleq[e] = def->mleq[i], merged->mleq_time_us[e] = def->mleq_time_us[i];
    }
  *def = *merged;
  free(merged);
  return 1;
}

/* Every entry of an answer for an (N, K) nobody tuned made for that (N, K) (at_config_for_shape):
 * the default file's, a nearest file's and the model's configs were measured on other shapes, and
 * one may hold its own K's scales (SCALE_KB), which on another K would take shared memory for
 * nothing or read the scales from global memory, 2-3% slower than the form without them. */
static void for_shape_all(const at_op *op, at_config_set *set, int64_t n, int64_t k) {
  for (int b = 0; b < AT_NBUCKETS; b++)
    if (set->bucket[b].valid) at_config_for_shape(op, &set->bucket[b], n, k);
  for (int i = 0; i < set->nmleq; i++)
    if (set->mleq[i].valid) at_config_for_shape(op, &set->mleq[i], n, k);
}

/* The configs directory's file names, sorted; NULL (a warning) when it cannot be opened. */
static char **list_dir(const at_lookup_req *q, size_t *n) {
  DIR *dir = opendir(q->configs_dir);
  *n = 0;
  if (!dir) {
    warn(q, "configs directory %s: cannot open; trying the next source", q->configs_dir);
    return NULL;
  }
  char **names = NULL;
  for (struct dirent *e; (e = readdir(dir));) {
    names = at_xrealloc(names, sizeof *names * (*n + 1));
    names[(*n)++] = at_xstrdup(e->d_name);
  }
  closedir(dir);
  qsort(names, *n, sizeof *names, cmp_str);
  return names;
}

/* Up to which M an (N, K) nobody tuned takes the time model's answer, when there is a default
 * file for the M above. On the H100 (docs/perf.md, "A time model for the (N, K) nobody tuned"),
 * against the default file with the nearest file up to M = 128, on 240 shapes of five models
 * whose weights the model had not seen: the model up to 2048 ran 0.94x and 0.87x cuBLASLt's time
 * against 0.97x and 0.89x, 6 shapes above 1.10x against 13; used at every M, it lost at M 4096 and
 * 8192, where configs differ by a few percent (its error) and the default file's 128 x 256 tiles
 * ran 3-10% faster on most shapes. */
#ifndef MODEL_MAX_M
#define MODEL_MAX_M 2048
#endif

/* Above MODEL_MAX_M the model's answer replaces the default file's at a grid M only where it
 * predicts the default file's config there this many times as slow as its own pick: a wave count
 * gone wrong (the default file's one 128 x 256 config in pairs on a narrow N), not the few percent
 * the model errs by. 0: never. On the H100 (docs/perf.md, "The time model refitted" and "1.10
 * above M = 2048"), on the untuned shapes of llm.yaml's five models and holdout.yaml's prefill
 * groups: 1.15 changed 8 answers against the rule off, at M 3000-4096 (6 ran 5-10% faster, 2
 * slower, one of those a pick taken at 4096 covering M down to 2049, where the rule had kept the
 * default file's config at 3072: model_above now bounds it); 1.10 changed 10 more, mostly to 192 x
 * 192 tiles (7 ran 1.5-3% faster in two rounds, 3 within 0.7%); 1.05 made the set no faster. */
#ifndef MODEL_ABOVE_GAIN
#define MODEL_ABOVE_GAIN 1.10
#endif

/* Model files parsed in this process, by path and content. Every lookup of an (N, K), tuned or not,
 * reads the model, and the runtime looks up each (N, K) it meets; parsing a file of format 3 (93
 * configs' residuals on 585 shapes, 520 KB) takes about 10 ms on the CPU machine, comparing its
 * bytes with the cached ones about a hundredth of that. Keyed by content, not by modification time,
 * whose clock is too coarse to tell two writes apart. Under a lock: the runtime looks up from any
 * thread. */
enum { TM_CACHE = 4 };
static struct tm_cached {
  char *path, *text;
  size_t len;
  at_time_model tm;
} g_tm_cache[TM_CACHE];
static unsigned g_tm_next;
static pthread_mutex_t g_tm_mu = PTHREAD_MUTEX_INITIALIZER;

/* The model file at path, parsed into *out (the caller frees it); as at_json_load and
 * at_tm_from_json fail. */
static int load_model(const char *path, at_time_model *out) {
  char *text = NULL;
  size_t len = 0;
  memset(out, 0, sizeof *out);
  AT_TRY(at_read_file(path, 64u << 20, &text, &len));
  int hit = 0;
  pthread_mutex_lock(&g_tm_mu);
  for (int i = 0; i < TM_CACHE && !hit; i++) {
    struct tm_cached *c = &g_tm_cache[i];
    if (c->path && strcmp(c->path, path) == 0 && c->len == len && memcmp(c->text, text, len) == 0)
      at_tm_copy(out, &c->tm), hit = 1;
  }
  pthread_mutex_unlock(&g_tm_mu);
  if (hit) return free(text), AT_OK;
  at_json *j = NULL;
  int rc = at_json_parse(path, text, len, &j);
  if (rc == AT_OK) rc = at_tm_from_json(path, j, out);
  at_json_free(j);
  if (rc) return free(text), rc;
  pthread_mutex_lock(&g_tm_mu);
  int slot = -1;
  for (int i = 0; i < TM_CACHE && slot < 0; i++)
    if (g_tm_cache[i].path && strcmp(g_tm_cache[i].path, path) == 0) slot = i; /* the same file, rewritten */
  if (slot < 0) slot = (int)(g_tm_next++ % TM_CACHE);
  struct tm_cached *c = &g_tm_cache[slot];
  free(c->path), free(c->text), at_tm_free(&c->tm);
  c->path = at_xstrdup(path), c->text = text, c->len = len;
  at_tm_copy(&c->tm, out);
  pthread_mutex_unlock(&g_tm_mu);
  return AT_OK;
}

/* The time model <device>-GEMM-<tag>-model.json (timemodel.h): its answer for (N, K) into *set,
 * the file into path, its tag into tag. 0 when there is none or it cannot be read (a warning). */
static int from_model(const at_lookup_req *q, const at_op *op, char **names, size_t n, at_config_set *set, char *path,
                      size_t path_len, char *tag, size_t tag_len, at_time_model *keep) {
  int found = 0;
  for (int d = 0; d < 2 && q->device_names[d] && !found; d++) {
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s-GEMM-", q->device_names[d]);
    for (size_t i = 0; i < n && !found; i++) {
      if (!file_of(q, names[i], prefix) || !at_tm_is_model_file(names[i])) continue;
      char *p = at_path_join(q->configs_dir, names[i]);
      at_time_model tm;
      if (load_model(p, &tm)) {
        warn(q, "skipping %s: %s", p, at_errmsg());
      } else {
        /* The tag its name says: the default file that completes it is looked up by that tag. */
        const char *named = names[i] + strlen(prefix);
        size_t tl = strlen(tm.tag);
        if (strncmp(named, tm.tag, tl) != 0 || strcmp(named + tl, "-model.json") != 0)
          warn(q, "skipping %s: its tag \"%s\" is not the one its name says", p, tm.tag);
        else if (strcmp(tm.op, q->op) == 0) {
          at_tm_answer(&tm, op, !q->no_plan, q->n, q->k, q->sm_count, set);
          found = set->nmleq > 0;
          snprintf(path, path_len, "%s", p);
          snprintf(tag, tag_len, "%s", tm.tag);
          if (found && keep) *keep = tm, memset(&tm, 0, sizeof tm); /* the caller frees it */
        }
        at_tm_free(&tm);
      }
      free(p);
    }
  }
  return found;
}

/* Puts config c at M g into set's per-M entries (replacing one at g); 0 when they are full. */
static int put_entry(at_config_set *set, int64_t g, const at_config *c) {
  int i = 0;
  while (i < set->nmleq && set->mleq_m[i] < g) i++;
  if (i == set->nmleq || set->mleq_m[i] != g) {
    if (set->nmleq == AT_MAX_MLEQ) return 0;
    for (int j = set->nmleq; j > i; j--)
      set->mleq_m[j] = set->mleq_m[j - 1], set->mleq[j] = set->mleq[j - 1], set->mleq_time_us[j] = set->mleq_time_us[j - 1];
    set->nmleq++;
  }
  set->mleq_m[i] = g, set->mleq[i] = *c, set->mleq_time_us[i] = 0;
  return 1;
}

/* The default file's entries above MODEL_MAX_M in set, overruled at the model's grid M where the
 * model predicts them MODEL_ABOVE_GAIN times as slow as its own pick (model: its answer). Decided
 * on set as it was, before any insertion. An entry at grid M g answers every M down to the entry below it, so when g is
 * taken and the grid M before it (above MODEL_MAX_M) is not, that one gets an entry too, with the
 * answer set had there: the M it was compared at keep their config. */
static void model_above(at_config_set *set, const at_config_set *model, const at_time_model *tm, const at_lookup_req *q) {
  if (!(MODEL_ABOVE_GAIN > 0)) return;
  int take[AT_MAX_MLEQ] = {0};
  for (int e = 0; e < model->nmleq; e++) {
    const int64_t g = model->mleq_m[e];
    if (g <= MODEL_MAX_M || !model->mleq[e].valid) continue;
    const at_config *now = at_config_for_m(set, g, NULL);
    double t_now = at_tm_predict_config(tm, now, g, q->n, q->k, q->sm_count);
    double t_model = at_tm_predict_config(tm, &model->mleq[e], g, q->n, q->k, q->sm_count);
    take[e] = t_now > 0 && t_model > 0 && t_now > MODEL_ABOVE_GAIN * t_model;
  }
  /* In grid order, each insertion is at or below the grid M being processed, and an entry answers
   * only M at or below its own: set still answers grid M e - 1 as it did before any insertion. */
  for (int e = 0; e < model->nmleq; e++) {
    if (!take[e]) continue;
    if (e > 0 && !take[e - 1] && model->mleq_m[e - 1] > MODEL_MAX_M) {
      const at_config *now = at_config_for_m(set, model->mleq_m[e - 1], NULL);
      if (!now) continue;
      const at_config keep = *now; /* put_entry may shift the entry it points at */
      if (!put_entry(set, model->mleq_m[e - 1], &keep)) continue; /* full: the model's pick would cover it */
    }
    put_entry(set, model->mleq_m[e], &model->mleq[e]);
  }
}

/* Is m one of set's per-M entries? */
static int is_entry(const at_config_set *set, int64_t m) {
  for (int i = 0; i < set->nmleq; i++)
    if (set->mleq_m[i] == m) return 1;
  return 0;
}

/* A tuned file's M between its entries, from above BETWEEN_MIN_M up to MODEL_MAX_M, take the time
 * model's pick for their own tile counts (its grid M there: every multiple of 64) instead of the
 * entry above's, tuned for other tile counts; the file's entries keep their M. On the H100
 * (docs/perf.md, "The time model between a file's entries"), on 51 such shapes sampled at random
 * from every committed file: 0.899x of the time with the entry above, 33 faster and 5 slower by
 * 2% or more, shapes above 1.10x cuBLASLt's time 7 to 0. Below 257 (decode sizes, bound by the
 * weights' bytes, which the model counts coarsely) and above 2048 (where configs differ by less
 * than its error) the entry above answers, unmeasured either way. */
#ifndef BETWEEN_MIN_M
#define BETWEEN_MIN_M 256
#endif

/* The model's answer (model) at its grid M strictly between two of set's per-M entries, above
 * BETWEEN_MIN_M and up to MODEL_MAX_M, into set; 0 when none went in. Stops when set is full. */
static int model_between(at_config_set *set, const at_config_set *model) {
  int added = 0;
  if (set->nmleq < 2) return 0;
  const int64_t lo = set->mleq_m[0], hi = set->mleq_m[set->nmleq - 1];
  for (int e = 0; e < model->nmleq; e++) {
    const int64_t g = model->mleq_m[e];
    if (g <= BETWEEN_MIN_M || g > MODEL_MAX_M || g <= lo || g >= hi || !model->mleq[e].valid) continue;
    /* A file's entry at g keeps it (what went in before is at other grid M, which are distinct). */
    if (is_entry(set, g)) continue;
    if (!put_entry(set, g, &model->mleq[e])) break;
    added++;
  }
  return added;
}

/* A tuned file's M between its entries above MODEL_MAX_M: the entry above answers, tuned for
 * another tile count, unless the model predicts its own pick TUNED_ABOVE_GAIN times as fast at
 * every M it would answer. 3072 x 576 x 7168 ran the M = 4096 entry's 72 tiles of 128 x 192 on
 * 132 SMs at 1.57x cuBLASLt's time. On the H100 (docs/perf.md, "Tuned files above M = 2048"), on
 * 48 such shapes where the model's pick differs, taking it wherever the prediction at the grid M
 * said 1.10 (the default file's rule) ran 0.989x cuBLASLt's time against 1.026x, but lost up to
 * 1.22x on a third of them: the model errs by 10-20% between 128 x 256, 128 x 128 pairs and
 * 192 x 192 tiles. Where it predicted 1.25 at the shape's own M, every one of ten ran faster
 * (0.71x-0.89x of the entry above's time). */
#ifndef TUNED_ABOVE_GAIN
#define TUNED_ABOVE_GAIN 1.25
#endif

/* The M above MODEL_MAX_M at which a tuned file may take the model's pick, each answering M down
 * to the one before (or the file's entry below): every 512 rows to 4096, every 1024 to 8192. */
static const int64_t TUNED_ABOVE_M[] = {2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192};

/* The rule above, on a tuned file's set (tm: the model of its tag), after model_between (which
 * inserts at M <= MODEL_MAX_M only, so the answers above are the file's): at each M p of
 * TUNED_ABOVE_M strictly between the file's entries, the model's pick for p when at every
 * multiple of 64 it would answer (above the set's entry below p, or the point before p when that
 * is nearer: it gets an entry too) it predicts the set's answer TUNED_ABOVE_GAIN times as slow.
 * Every tile's height is a multiple of 64, so an M answers as the multiple of 64 at or above it.
 * Decided on the set as it came; when p is taken and the point before it bounds its M but is not
 * taken, that point gets the set's answer, so that the M at or below it keep it. Returns the count
 * of points taken; stops when the set is full. */
static int tuned_above(at_config_set *set, const at_time_model *tm, const at_op *op, const at_lookup_req *q) {
  enum { NP = sizeof TUNED_ABOVE_M / sizeof TUNED_ABOVE_M[0] };
  if (set->nmleq < 2 || !(TUNED_ABOVE_GAIN > 0)) return 0;
  const int64_t lo = set->mleq_m[0], hi = set->mleq_m[set->nmleq - 1];
  int pick[NP], bounded[NP], kept[NP]; /* bounded: the point before p bounds p's M */
  at_config keep[NP];
  for (int j = 0; j < NP; j++) {
    const int64_t p = TUNED_ABOVE_M[j];
    pick[j] = -1, bounded[j] = 0;
    const at_config *now = at_config_for_m(set, p, NULL);
    if ((kept[j] = now != NULL)) keep[j] = *now; /* the set's answer at p, before any insertion */
    if (p <= MODEL_MAX_M || p <= lo || p >= hi || is_entry(set, p)) continue;
    const int i = at_tm_best(tm, op, !q->no_plan, p, q->n, q->k, q->sm_count);
    if (i < 0) continue;
    int64_t from = lo; /* the set's entry below p (there is one: p > lo) */
    for (int e = 0; e < set->nmleq; e++)
      if (set->mleq_m[e] < p && set->mleq_m[e] > from) from = set->mleq_m[e];
    if (j > 0 && TUNED_ABOVE_M[j - 1] > from) from = TUNED_ABOVE_M[j - 1], bounded[j] = 1;
    int ok = 1;
    for (int64_t m = from - from % 64 + 64; m <= p && ok; m += 64) {
      const double t_now = at_tm_predict_config(tm, at_config_for_m(set, m, NULL), m, q->n, q->k, q->sm_count);
      const double t_pick = at_tm_predict(tm, i, m, q->n, q->k, q->sm_count);
      ok = t_now > 0 && t_pick > 0 && t_now >= TUNED_ABOVE_GAIN * t_pick;
    }
    if (ok) pick[j] = i;
  }
  int taken = 0;
  for (int j = 0; j < NP; j++) {
    if (pick[j] < 0) continue;
    if (bounded[j] && pick[j - 1] < 0 && !is_entry(set, TUNED_ABOVE_M[j - 1])) {
      if (!kept[j - 1]) continue;
      if (!put_entry(set, TUNED_ABOVE_M[j - 1], &keep[j - 1])) break;
    }
    at_config c = tm->configs[pick[j]];
    at_config_for_shape(op, &c, q->n, q->k); /* at_tm_best kept only configs that hold it */
    if (!put_entry(set, TUNED_ABOVE_M[j], &c)) break;
    taken++;
  }
  return taken;
}

/* Files named <device>-GEMM-<tag><suffix>; suffix "-N=..-K=...json" or ".json" (not "-model.json"). */
static int from_files(const at_lookup_req *q, char **names, size_t n, at_lookup_result *out, int default_file,
                      const at_config_set *model, const char *model_path) {
  char nk[96];
  snprintf(nk, sizeof nk, "-N=%lld-K=%lld.json", (long long)q->n, (long long)q->k);
  int found = 0;
  for (int d = 0; d < 2 && q->device_names[d] && !found; d++) {
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%s-GEMM-", q->device_names[d]);
    for (size_t i = 0; i < n && !found; i++) {
      const char *f = names[i];
      size_t len = strlen(f);
      if (!file_of(q, f, prefix)) continue;
      int is_nk = strstr(f, "-N=") != NULL;
      if (at_tm_is_model_file(f)) continue;
      if (default_file ? is_nk : (len < strlen(nk) || strcmp(f + len - strlen(nk), nk) != 0)) continue;
      char *path = at_path_join(q->configs_dir, f);
      at_json *j = NULL;
      if (at_json_load(path, &j) || at_config_set_from_json(path, j, &out->set)) {
        warn(q, "skipping %s: %s", path, at_errmsg());
      } else if (strcmp(out->set.op, q->op) == 0 && (!default_file || (out->set.n == 0 && out->set.k == 0)) &&
                 (default_file || (out->set.n == q->n && out->set.k == q->k))) {
        found = 1;
        out->source = default_file ? AT_SRC_DEFAULT_FILE : AT_SRC_NK_FILE;
        snprintf(out->path, sizeof out->path, "%s", path);
        at_config_set *near = default_file ? at_xcalloc(1, sizeof *near) : NULL;
        char near_path[1024];
        if (default_file && model && overlay(&out->set, model, MODEL_MAX_M)) {
          out->source = AT_SRC_MODEL_FILE;
          snprintf(out->path, sizeof out->path, "%.480s (M > %d: %.500s)", model_path, MODEL_MAX_M, path);
        } else if (near && nearest_file(q, names, n, prefix, near, near_path, sizeof near_path)) {
          overlay(&out->set, near, NEAREST_MAX_M);
          snprintf(out->path, sizeof out->path, "%.500s (M <= %d: %.480s)", path, NEAREST_MAX_M, near_path);
        }
        free(near);
      }
      at_json_free(j);
      free(path);
    }
  }
  return found;
}

static int builtin_config(const at_op *op, at_config *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->variant, sizeof c->variant, "%s", op->builtin.variant);
  snprintf(c->family, sizeof c->family, "%s", op->builtin.family);
  snprintf(c->template_name, sizeof c->template_name, "%s", op->builtin.template_name);
  snprintf(c->entry, sizeof c->entry, "%s", op->builtin.entry);
  AT_TRY(at_config_set_params(c, op->builtin.params_json));
  c->valid = 1;
  return AT_OK;
}

/* Is a config launchable as the op's family says: every parameter in its entry or passed at launch
 * (so that the kernel gets what the launch rule assumes) and every value in range? A config from a
 * hand-edited file must not reach a kernel whose launch rule it breaks. */
static int config_ok(const at_op *op, const at_config *c, char *why, size_t n) {
  for (int i = 0; i < c->nparams; i++)
    if (!at_entry_mentions(c->entry, c->names[i]) && !at_op_launch_param(op, c->names[i]))
      return snprintf(why, n, "parameter %s does not appear in its entry and is not a launch parameter", c->names[i]), 0;
  int64_t derived[16];
  const char *names[AT_MAX_PARAMS];
  at_params p = at_config_params(c, names);
  if (at_op_count_derived(op) > 16 || op->derive(c->family, &p, derived)) return snprintf(why, n, "%s", at_errmsg()), 0;
  return 1;
}

/* Every bucket filled: a config that is not launchable is replaced with a warning, a missing
 * bucket takes `any`, a missing `any` the built-in default. Per-M entries are kept as they are
 * (at_config_for_m prefers them), less those that are not launchable. */
static int complete(const at_lookup_req *q, const at_op *op, at_lookup_result *out) {
  at_config builtin;
  AT_TRY(builtin_config(op, &builtin));
  for (int b = 0; b < AT_NBUCKETS; b++) {
    char why[512];
    if (out->set.bucket[b].valid && !config_ok(op, &out->set.bucket[b], why, sizeof why)) {
      warn(q, "%s: bucket %s is not a launchable config (%s); using another", out->path, AT_BUCKET_NAMES[b], why);
      out->set.bucket[b].valid = 0;
    }
  }
  /* A per-M entry that is not launchable is dropped: its M are answered by the buckets. */
  for (int i = 0; i < out->set.nmleq; i++) {
    char why[512];
    if (out->set.mleq[i].valid && !config_ok(op, &out->set.mleq[i], why, sizeof why)) {
      warn(q, "%s: M_LEQ_%lld is not a launchable config (%s); its M use the buckets", out->path,
           (long long)out->set.mleq_m[i], why);
      out->set.mleq[i].valid = 0;
    }
  }
  if (!out->set.bucket[AT_BUCKET_ANY].valid) out->set.bucket[AT_BUCKET_ANY] = builtin;
  for (int b = 0; b < AT_BUCKET_ANY; b++)
    if (!out->set.bucket[b].valid) out->set.bucket[b] = out->set.bucket[AT_BUCKET_ANY];
  return AT_OK;
}

/* The arch name of a product name given alone (a device named by the caller, not read from a GPU):
 * from the DB's devices, else from the "arch" of one of the product's files ("sm_90a" -> "sm90").
 * A GPU's context gives both names; a caller naming the product (query --device NVIDIA_H200, the
 * runtime's select on a CPU machine) gets the same answer as that GPU would: the product's files
 * first, then its arch's. 0 when neither source knows the product. */
static int arch_of_product(const at_lookup_req *q, char *arch, size_t n) {
  const char *product = q->device_names[0];
  at_device_entry *devs = NULL;
  size_t ndev = 0;
  int found = 0;
  if (q->db && at_store_devices(q->db, &devs, &ndev) == AT_OK)
    for (size_t i = 0; i < ndev && !found; i++) {
      char name[128];
      at_device_file_name(&devs[i], 1, name, sizeof name);
      if (strcmp(name, product) == 0) at_device_file_name(&devs[i], 0, arch, n), found = 1;
    }
  free(devs);
  DIR *dir = !found && q->configs_dir ? opendir(q->configs_dir) : NULL;
  char prefix[160];
  snprintf(prefix, sizeof prefix, "%s-GEMM-", product);
  for (struct dirent *e; dir && !found && (e = readdir(dir));) {
    size_t len = strlen(e->d_name);
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char *path = at_path_join(q->configs_dir, e->d_name);
    at_json *j = NULL;
    const char *a = at_json_load(path, &j) == AT_OK ? at_json_str(j, "arch") : NULL;
    const int cc = a ? at_cc_of_arch(a) : -1;
    if (cc > 0) snprintf(arch, n, "sm%d", cc), found = 1;
    at_json_free(j);
    free(path);
  }
  if (dir) closedir(dir);
  return found;
}

int at_lookup(const at_lookup_req *q, at_lookup_result *out) {
  memset(out, 0, sizeof *out);
  const at_op *op = at_op_find(q->op);
  if (!op) return at_fail(AT_ERR_INPUT, "unknown op '%s' (known: %s)", q->op, at_op_names());
  char arch[64];
  at_lookup_req with_arch;
  if (q->device_names[0] && !q->device_names[1] && !at_device_is_arch_name(q->device_names[0]) &&
      arch_of_product(q, arch, sizeof arch)) {
    with_arch = *q;
    with_arch.device_names[1] = arch;
    q = &with_arch;
  }
  if (q->db && from_db(q, out)) return complete(q, op, out);
  if (q->configs_dir) {
    size_t n = 0;
    char **names = list_dir(q, &n);
    int found = names && from_files(q, names, n, out, 0, NULL, NULL);
    if (found && out->source == AT_SRC_NK_FILE && BETWEEN_MIN_M < MODEL_MAX_M) {
      /* A tuned (N, K): the model of the file's tag between its entries. */
      at_config_set *model = at_xcalloc(1, sizeof *model);
      char model_path[1024], model_tag[64];
      at_lookup_req same_tag = *q;
      same_tag.tag = out->set.tag;
      at_time_model tm;
      memset(&tm, 0, sizeof tm);
      if (from_model(&same_tag, op, names, n, model, model_path, sizeof model_path, model_tag, sizeof model_tag, &tm)) {
        /* model_between first: when the set fills, the M it left below MODEL_MAX_M stay bounded by
         * the file's entries, not by a point tuned_above took. */
        const int between = model_between(&out->set, model);
        const int above = tuned_above(&out->set, &tm, op, q);
        if (between || above) {
          char path[sizeof out->path], what[128] = "", range[32];
          snprintf(range, sizeof range, "%d to %d", BETWEEN_MIN_M + 1, MODEL_MAX_M);
          snprintf(what, sizeof what, "%s%s", between ? range : "", between && above ? ", and " : "");
          if (above) snprintf(what + strlen(what), sizeof what - strlen(what), "above %d where predicted much faster", MODEL_MAX_M);
          snprintf(path, sizeof path, "%s", out->path);
          snprintf(out->path, sizeof out->path, "%.480s (M between its entries, %s: %.400s)", path, what, model_path);
        }
      }
      at_tm_free(&tm);
      free(model);
    }
    if (names && !found) {
      /* An (N, K) nobody tuned: the time model up to MODEL_MAX_M and the default file above; either
       * alone when the other is missing; without a model the nearest file up to NEAREST_MAX_M. */
      at_config_set *model = at_xcalloc(1, sizeof *model);
      at_time_model tm;
      memset(&tm, 0, sizeof tm);
      char model_path[1024], model_tag[64];
      int have_model =
          from_model(q, op, names, n, model, model_path, sizeof model_path, model_tag, sizeof model_tag, &tm);
      at_lookup_req same_tag = *q; /* the default file of the model's tag, not of another */
      if (have_model) same_tag.tag = model_tag;
      found = from_files(&same_tag, names, n, out, 1, have_model ? model : NULL, model_path);
      /* Made for this K before model_above scores the default file's entries: it predicts each as
       * it will run. */
      if (found) for_shape_all(op, &out->set, q->n, q->k);
      if (found && have_model && out->source == AT_SRC_MODEL_FILE) model_above(&out->set, model, &tm, q);
      at_tm_free(&tm);
      if (!found && have_model) {
        out->set = *model; /* at_tm_answer made it for this K */
        out->source = AT_SRC_MODEL_FILE;
        snprintf(out->path, sizeof out->path, "%s", model_path);
        found = 1;
      }
      free(model);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (found) return complete(q, op, out);
  }
  /* The built-in default, in every bucket. */
  memset(&out->set, 0, sizeof out->set);
  snprintf(out->set.op, sizeof out->set.op, "%s", q->op);
  snprintf(out->set.tag, sizeof out->set.tag, "%s", q->tag ? q->tag : "");
  snprintf(out->set.device, sizeof out->set.device, "%s", q->device_names[0] ? q->device_names[0] : "");
  at_config c;
  AT_TRY(builtin_config(op, &c));
  for (int b = 0; b < AT_NBUCKETS; b++) out->set.bucket[b] = c;
  out->source = AT_SRC_BUILTIN;
  snprintf(out->path, sizeof out->path, "(built in)");
  return AT_OK;
}

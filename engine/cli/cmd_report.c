/* cmd_report.c: `autotune report`: what a DB says about its shapes, as a performance engineer reads a
 * sweep: per device, a table of the shapes (winner, TFLOP/s, share of the roofline, the vendor's time
 * and the speedup); per shape, the top candidates with their time, TFLOP/s, roofline share,
 * theoretical occupancy, registers, shared memory, spills and status, and the count of every status;
 * the counts per variant; the pruning counts. --csv writes every result row, --plot an SVG
 * (dbreport.h). Reads the DB only, needs no GPU, and reads every schema version this autotune
 * reads. Options and output: docs/usage.md, "autotune report". */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/store.h"
#include "../core/util.h"
#include "commands.h"
#include "dbreport.h"

static const char *USAGE =
    "usage: autotune report [--db PATH] [--device D] [--tag TAG] [--shape MxNxK]... [--shapes FILE [--only NAME,...]]\n"
    "                       [--top N] [--csv FILE] [--plot FILE.svg [--results FILE]...]\n\n"
    "Prints, from the DB, per device a table of the shapes (winner, TFLOP/s, share of the roofline, vendor\n"
    "time and speedup), per shape its top candidates (time, TFLOP/s, roofline share, theoretical occupancy,\n"
    "registers, shared memory, spills, status) and the count of every status, the counts per variant and\n"
    "the pruning counts. Needs no GPU.\n\n"
    "options:\n"
    "  --db PATH          the DB (default $AUTOTUNE_DB, else tuned/autotune.db)\n"
    "  --device D         only this device: sm90, or a product name (NVIDIA_H100_80GB_HBM3 or as in the DB)\n"
    "  --tag TAG          only the shapes of this tag\n"
    "  --shape MxNxK      only this shape (repeatable), e.g. --shape 16x1536x7168\n"
    "  --shapes FILE      only the shapes of a shapes file, in its order, with its names (CSV or YAML)\n"
    "  --only NAME,...    only these groups of the --shapes file (and those under them, NAME/...)\n"
    "  --top N            candidates shown per shape (default 5; 0: none)\n"
    "  --csv FILE         also write every result row of the chosen shapes as CSV\n"
    "  --plot FILE.svg    also draw an SVG: with one shape, the best time per (BLOCK_M, BLOCK_N) as a heat\n"
    "                     map with occupancy; with several, TFLOP/s against M per provider\n"
    "  --results FILE     more providers for that plot: a results file (compare --json, or another tool's)\n";

enum { MAX_SHAPES = 256, MAX_RESULTS = 8 };

typedef struct options {
  const char *db, *csv, *plot;
  rep_filter f;
  int64_t shape[MAX_SHAPES][3];
  const char *results[MAX_RESULTS]; /* --results FILE */
  int nresults;
  int top;
} options;

static int parse_shape(const char *arg, int64_t out[3]) {
  char *copy = at_xstrdup(arg), *save = NULL, *tok;
  int n = 0, rc = AT_OK;
  for (tok = strtok_r(copy, "xX", &save); tok && rc == AT_OK; tok = strtok_r(NULL, "xX", &save))
    if (n >= 3 || at_parse_i64(tok, &out[n++]) != 0 || out[n - 1] < 1) rc = AT_ERR_INPUT;
  free(copy);
  if (rc || n != 3) return at_fail(AT_ERR_INPUT, "--shape: expects MxNxK like 16x1536x7168, got '%s'", arg);
  return AT_OK;
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {{"db", required_argument, 0, 'd'},     {"device", required_argument, 0, 'D'},
                                       {"tag", required_argument, 0, 't'},    {"shape", required_argument, 0, 's'},
                                       {"shapes", required_argument, 0, 'S'}, {"only", required_argument, 0, 'o'},
                                       {"top", required_argument, 0, 'n'},    {"csv", required_argument, 0, 'c'},
                                       {"plot", required_argument, 0, 'p'},   {"results", required_argument, 0, 'r'},
                                       {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  const char *env_db = getenv("AUTOTUNE_DB");
  o->db = env_db && *env_db ? env_db : "tuned/autotune.db";
  o->top = 5;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'd': o->db = optarg; break;
    case 'D': o->f.device = optarg; break;
    case 't': o->f.tag = optarg; break;
    case 's':
      if (o->f.nshapes == MAX_SHAPES) return at_fail(AT_ERR_INPUT, "--shape: at most %d of them", MAX_SHAPES);
      AT_TRY(parse_shape(optarg, o->shape[o->f.nshapes++]));
      break;
    case 'S': o->f.shapes_file = optarg; break;
    case 'o': o->f.only = optarg; break;
    case 'n': {
      int64_t v;
      if (at_parse_i64(optarg, &v) != 0 || v < 0 || v > 100000)
        return at_fail(AT_ERR_INPUT, "--top: expects a count from 0, got '%s'", optarg);
      o->top = (int)v;
      break;
    }
    case 'c': o->csv = optarg; break;
    case 'p': o->plot = optarg; break;
    case 'r':
      if (o->nresults == MAX_RESULTS) return at_fail(AT_ERR_INPUT, "--results: at most %d files", MAX_RESULTS);
      o->results[o->nresults++] = optarg;
      break;
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "report: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "report: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc) return at_fail(AT_ERR_INPUT, "report: unexpected argument '%s' (see --help)", argv[optind]);
  if (o->f.nshapes && o->f.shapes_file) return at_fail(AT_ERR_INPUT, "report: --shape and --shapes: give one or the other");
  if (o->nresults && !o->plot) return at_fail(AT_ERR_INPUT, "--results adds providers to --plot; give --plot FILE.svg");
  if (o->f.only && !o->f.shapes_file) return at_fail(AT_ERR_INPUT, "--only chooses groups of a --shapes file; give the file");
  o->f.shapes = (const int64_t(*)[3])o->shape;
  if (!at_file_exists(o->db)) return at_fail(AT_ERR_INPUT, "report: --db: no DB at %s", o->db);
  /* Outputs must not be the DB (an atomic write would replace it), nor another input, nor each other. */
  const char *outs[2] = {o->csv, o->plot}, *names[2] = {"--csv", "--plot"};
  for (int i = 0; i < 2; i++)
    if (outs[i] && at_same_file(outs[i], o->db))
      return at_fail(AT_ERR_INPUT, "%s %s is the DB; the report would overwrite it", names[i], outs[i]);
  const char *in[MAX_RESULTS + 3] = {o->db};
  int n = 1;
  if (o->f.shapes_file) in[n++] = o->f.shapes_file;
  for (int i = 0; i < o->nresults; i++) in[n++] = o->results[i];
  for (int i = 0; i < 2; i++)
    if (outs[i]) AT_TRY(at_check_output(names[i], outs[i], in, 0));
  if (o->csv && o->plot && at_same_file(o->csv, o->plot))
    return at_fail(AT_ERR_INPUT, "--csv and --plot name one file (%s)", o->csv);
  return AT_OK;
}

/* ---- the text --------------------------------------------------------------------------------- */

static const char *const STATUSES[] = {"ok", "wrong", "fault", "timeout", "resources", "quarantined"};
enum { NSTATUS = 6 };

static int status_index(const char *s) {
  for (int i = 0; i < NSTATUS; i++)
    if (strcmp(s, STATUSES[i]) == 0) return i;
  return -1;
}

static void count_statuses(const rep_shape *s, int64_t counts[NSTATUS]) {
  memset(counts, 0, sizeof(int64_t) * NSTATUS);
  for (size_t i = 0; i < s->nrows; i++) {
    int k = status_index(s->rows[i].r->status);
    if (k >= 0) counts[k]++;
  }
}

static void print_shape_table(const rep_view *v, size_t from, size_t to) {
  printf("%7s %7s %7s  %-28s %7s %5s %10s %8s %6s %10s %8s %11s %11s\n", "M", "N", "K", "name (tag)", "results", "ok",
         "winner us", "TFLOP/s", "roof%", "vendor us", "speedup", "cuBLAS32 us", "launched us");
  for (size_t i = from; i < to; i++) {
    const rep_shape *s = &v->shapes[i];
    int64_t counts[NSTATUS];
    count_statuses(s, counts);
    char name[96];
    if (s->name)
      snprintf(name, sizeof name, "%s (%s)", s->name, s->prob->tag);
    else
      snprintf(name, sizeof name, "(%s)", s->prob->tag);
    double w = s->winner ? s->winner->time_us : -1, tf = rep_tflops(s, w), rf = rep_roofline(v, s, w);
    char wt[16] = "-", tft[16] = "-", roof[16] = "-", vt[16] = "-", sp[16] = "-", rt[16] = "-", lt[16] = "-";
    if (s->winner && s->winner->launched_us > 0) snprintf(lt, sizeof lt, "%.2f", s->winner->launched_us);
    if (w > 0) {
      snprintf(wt, sizeof wt, "%.2f", w);
      snprintf(tft, sizeof tft, "%.1f", tf);
      if (rf > 0) snprintf(roof, sizeof roof, "%.1f", rf);
    }
    if (s->vendor_us > 0) snprintf(vt, sizeof vt, "%.2f", s->vendor_us);
    if (s->vendor_us > 0 && w > 0) snprintf(sp, sizeof sp, "%.2fx", s->vendor_us / w);
    if (s->ref_us > 0) snprintf(rt, sizeof rt, "%.2f", s->ref_us);
    printf("%7lld %7lld %7lld  %-28s %7zu %5lld %10s %8s %6s %10s %8s %11s %11s\n", (long long)s->prob->m,
           (long long)s->prob->n, (long long)s->prob->k, name, s->nrows, (long long)counts[0], wt, tft, roof, vt, sp, rt,
           lt);
  }
}

static void print_top(const rep_view *v, const rep_shape *s, int top) {
  int64_t counts[NSTATUS];
  count_statuses(s, counts);
  printf("\n-- M=%lld N=%lld K=%lld%s%s%s, tag %s, %s: %zu results:", (long long)s->prob->m, (long long)s->prob->n,
         (long long)s->prob->k, s->name ? " (" : "", s->name ? s->name : "", s->name ? ")" : "", s->prob->tag,
         s->dev->name, s->nrows);
  for (int k = 0; k < NSTATUS; k++) printf("%s %s %lld", k ? "," : "", STATUSES[k], (long long)counts[k]);
  printf("\n");
  if (s->winner && strcmp(s->winner->basis, "launched") == 0)
    printf("   the winner (*) was decided as the runtime launches it (autotune judge): %.2f us launched\n",
           s->winner->launched_us);
  size_t n;
  const rep_row **r = rep_ranked(s, &n);
  if (top == 0 || n == 0) {
    if (n == 0) printf("   no checked result of a current candidate\n");
    free(r);
    return;
  }
  printf("   %4s  %-8s %-44s %8s %9s %8s %6s %5s %4s %-6s %5s %8s %9s %s\n", "rank", "variant", "params", "time us",
         "retime us", "TFLOP/s", "roof%", "occ", "blk", "limit", "regs", "smem KiB", "spills", "status");
  for (size_t i = 0; i < n && i < (size_t)top; i++) {
    const rep_row *w = r[i];
    const at_rep_candidate *c = w->c;
    char params[256], re[16] = "-", occ[16] = "-", blk[8] = "-", roof[16] = "-", spills[24];
    rep_params_short(c->params, params, sizeof params);
    if (w->r->retime_us > 0) snprintf(re, sizeof re, "%.2f", w->r->retime_us);
    double t = rep_rank_time(w->r), tf = rep_tflops(s, t), rf = rep_roofline(v, s, t);
    if (rf > 0) snprintf(roof, sizeof roof, "%.1f", rf);
    if (w->occ.blocks_per_sm >= 0) {
      snprintf(occ, sizeof occ, "%.0f%%", 100.0 * w->occ.fraction);
      snprintf(blk, sizeof blk, "%d", w->occ.blocks_per_sm);
    }
    static const struct {
      const char *full, *brief;
    } LIMITERS[] = {{"registers", "regs"}, {"shared memory", "smem"}, {"warps", "warps"}, {"blocks", "blocks"}};
    const char *lim = "-";
    for (size_t k = 0; k < AT_ARRAY_LEN(LIMITERS); k++)
      if (w->occ.limiter && strcmp(w->occ.limiter, LIMITERS[k].full) == 0) lim = LIMITERS[k].brief;
    if (w->occ.blocks_per_sm == 0) lim = "fits0";
    snprintf(spills, sizeof spills, "%d/%d", c->spill_stores > 0 ? c->spill_stores : 0, c->spill_loads > 0 ? c->spill_loads : 0);
    double smem = ((c->static_smem > 0 ? c->static_smem : 0) + (c->smem_bytes > 0 ? c->smem_bytes : 0)) / 1024.0;
    printf("   %3zu%s  %-8s %-44s %8.2f %9s %8.1f %6s %5s %4s %-6s %5d %8.1f %9s %s\n", i + 1, w->winner ? "*" : " ",
           c->variant, params, w->r->time_us, re, tf, roof, occ, blk, lim, c->regs, smem, spills, w->r->status);
  }
  if (n > (size_t)top) printf("   (%zu more checked results)\n", n - (size_t)top);
  free(r);
}

static void print_variants(const rep_view *v) {
  typedef struct vc {
    const char *name;
    int64_t counts[NSTATUS], total, compiled, failed;
  } vc;
  vc *vs = NULL;
  size_t nv = 0;
  for (size_t i = 0; i < v->n; i++)
    for (size_t j = 0; j < v->shapes[i].nrows; j++) {
      const rep_row *r = &v->shapes[i].rows[j];
      const char *name = r->c ? r->c->variant : "?";
      size_t k = 0;
      while (k < nv && strcmp(vs[k].name, name) != 0) k++;
      if (k == nv) {
        vs = at_xrealloc(vs, sizeof *vs * (nv + 1));
        memset(&vs[nv++], 0, sizeof *vs);
        vs[k].name = name;
      }
      int s = status_index(r->r->status);
      if (s >= 0) vs[k].counts[s]++;
      vs[k].total++;
    }
  for (size_t k = 0; k < nv; k++)
    for (size_t c = 0; c < v->d.ncandidates; c++)
      if (strcmp(v->d.candidates[c].variant, vs[k].name) == 0) {
        if (v->d.candidates[c].compiled)
          vs[k].compiled++;
        else
          vs[k].failed++;
      }
  printf("\nstatuses per variant (the shapes above); compiles of its candidates in the DB:\n");
  printf("  %-12s %8s", "variant", "results");
  for (int s = 0; s < NSTATUS; s++) printf(" %*s", s == 5 ? 11 : 9, STATUSES[s]);
  printf(" %9s %13s\n", "compiled", "compile_error");
  for (size_t k = 0; k < nv; k++) {
    printf("  %-12s %8lld", vs[k].name, (long long)vs[k].total);
    for (int s = 0; s < NSTATUS; s++) printf(" %*lld", s == 5 ? 11 : 9, (long long)vs[k].counts[s]);
    printf(" %9lld %13lld\n", (long long)vs[k].compiled, (long long)vs[k].failed);
  }
  free(vs);
}

/* The pruning counts of the latest run of each tag in the view that recorded some. */
static void print_pruning(const rep_view *v) {
  const at_report_data *d = &v->d;
  int header = 0;
  for (size_t i = 0; i < v->n; i++) {
    const char *tag = v->shapes[i].prob->tag;
    int seen = 0;
    for (size_t j = 0; j < i && !seen; j++) seen = strcmp(v->shapes[j].prob->tag, tag) == 0;
    if (seen) continue;
    int64_t run = -1;
    for (size_t p = 0; p < d->npruned && run < 0; p++) /* latest run first */
      if (strcmp(d->pruned[p].tag, tag) == 0) run = d->pruned[p].run_id;
    if (run < 0) continue;
    if (!header++) printf("\npruning (the latest run of each tag):\n");
    printf("  %s, run %lld:", tag, (long long)run);
    int any = 0;
    for (size_t p = 0; p < d->npruned; p++) {
      const at_rep_pruned *r = &d->pruned[p];
      if (r->run_id != run || r->count == 0) continue;
      printf("%s %s/%s %lld%s", any++ ? "," : "", r->variant, r->rule, (long long)r->count,
             r->per_shape ? " (candidate, shape) pairs" : "");
    }
    printf("%s\n", any ? "" : " nothing pruned");
  }
}

static void print_report(const rep_view *v, const char *db, int top) {
  int64_t compiled = 0;
  for (size_t i = 0; i < v->d.ncandidates; i++) compiled += v->d.candidates[i].compiled;
  printf("report: %s (schema %d): %zu runs, %zu candidates (%lld compiled), %zu results in all; %zu shape%s here\n", db,
         v->d.schema_version, v->d.nruns, v->d.ncandidates, (long long)compiled, v->d.nresults, v->n, v->n == 1 ? "" : "s");
  for (size_t i = 0; i < v->n;) {
    size_t j = i;
    while (j < v->n && v->shapes[j].dev == v->shapes[i].dev) j++;
    const at_rep_device *dev = v->shapes[i].dev;
    double pt, pb;
    rep_peaks(v, dev->id, &pt, &pb);
    char sm[32];
    rep_device_short(dev, sm, sizeof sm);
    printf("\n== %s (%s, %s, %d SMs)", dev->name, sm, dev->arch, dev->sm_count);
    if (pt > 0 || pb > 0)
      printf("; peaks measured: %.0f TFLOP/s FP8, %.0f GB/s\n", pt, pb);
    else
      printf("; no peaks measured (roof%% is left out)\n");
    print_shape_table(v, i, j);
    for (size_t k = i; k < j; k++) print_top(v, &v->shapes[k], top);
    i = j;
  }
  if (v->n) print_variants(v);
  print_pruning(v);
}

int cmd_report(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) return AT_OK; /* --help */
  AT_TRY(rc);
  at_results_file files[MAX_RESULTS];
  for (int i = 0; i < o.nresults; i++) {
    if ((rc = at_results_load(o.results[i], &files[i]))) {
      at_errctx("--results");
      for (int j = 0; j < i; j++) at_results_free(&files[j]);
      return rc;
    }
  }
  rep_view v;
  rc = rep_view_build(o.db, &o.f, &v);
  if (rc) {
    for (int i = 0; i < o.nresults; i++) at_results_free(&files[i]);
    return rc;
  }
  v.files = files, v.nfiles = (size_t)o.nresults;
  int filtered = o.f.device || o.f.tag || o.f.nshapes || o.f.shapes_file;
  for (size_t i = 0; i < v.nmissing; i++) fprintf(stderr, "autotune: report: no results for %s in %s\n", v.missing[i], o.db);
  if (v.n == 0 && filtered) {
    rc = at_fail(AT_ERR_RUNTIME, "report: %s has no results for the shapes asked for", o.db);
  } else {
    print_report(&v, o.db, o.top);
    if (v.n == 0) printf("\nno results: nothing was timed in %s (a compile-only run, or no GPU)\n", o.db);
    if (o.csv) rc = rep_write_csv(&v, o.csv);
    if (rc == AT_OK && o.plot) rc = rep_write_svg(&v, o.plot);
    if (rc == AT_OK && o.csv) fprintf(stderr, "report: wrote %s\n", o.csv);
    if (rc == AT_OK && o.plot) fprintf(stderr, "report: wrote %s\n", o.plot);
  }
  rep_view_free(&v);
  for (int i = 0; i < o.nresults; i++) at_results_free(&files[i]);
  return rc;
}

/* cmd_compare.c: `autotune compare SPACE.yaml`: per shape, every provider asked for, side by side,
 * in one table and one JSON schema (core/results.h): the tuned configs through the runtime library's
 * own launch path (autotune), the op's built-in config through the same path (default), cuBLASLt's
 * block-scaled FP8 GEMM (cublaslt), the cuBLAS FP32 reference (cublas), and results another tool
 * wrote in the schema (file:PATH). Docs: docs/usage.md, "autotune compare".
 *
 * The live providers run on the GPU in a compare worker (compare_session.h), checked and timed in
 * one process on the same inputs; a file's providers are read before anything runs, and a file
 * without a record for a shape of the list is an input error naming both. With only files, no GPU
 * is needed. The first provider is compared with each of the others: the ratio of their times. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/board.h"
#include "../core/results.h"
#include "../core/shapefile.h"
#include "../core/space.h"
#include "../core/util.h"
#include "commands.h"
#include "compare_session.h"

static const char *USAGE =
    "usage: autotune compare SPACE.yaml [--providers LIST] [--db PATH] [--configs DIR] [--shapes FILE]\n"
    "                        [--only NAME,...] [--json FILE] [--gpu N] [--pdl off|on] [--tail off|on]\n"
    "                        [--warmup N] [--samples N] [--rounds N]\n\n"
    "Times, per shape of the space, every provider asked for, each checked against the cuBLAS reference\n"
    "first, the live ones side by side in one process on the same input sets; prints times, TFLOP/s,\n"
    "the share of the roofline floor, the ratio of the first provider's time to each other's and the\n"
    "config the runtime chose, then geometric means. Exit status 1 when a provider has no checked time\n"
    "for a shape; 2 when a file has no record for one.\n\n"
    "providers (comma-separated, in the order of the table; default autotune,cublaslt):\n"
    "  autotune          the tuned configs, through the runtime library's launch path\n"
    "  default           the op's built-in (untuned) config, through the same path: the baseline\n"
    "  cublaslt          cuBLASLt's block-scaled FP8 GEMM (the vendor kernel)\n"
    "  cublas            the cuBLAS FP32 GEMM that makes the reference (not checked: it is the reference)\n"
    "  file:PATH         every provider of a results file another tool wrote (docs/formats.md)\n\n"
    "options:\n"
    "  --db PATH         the runtime's DB (default $AUTOTUNE_DB, else tuned/autotune.db, when it exists)\n"
    "  --configs DIR     the runtime's exported configs (default configs, when it exists)\n"
    "  --shapes FILE     these shapes instead of the space's: CSV with the columns M,N,K (and name), or\n"
    "                    YAML shape groups like the space's shapes section\n"
    "  --only NAME,...   only the shape groups of these names (and those under them, NAME/...)\n"
    "  --json FILE       also write every result as a results file (docs/formats.md)\n"
    "  --gpu N           the GPU to run on (default 0)\n"
    "  --pdl off|on      the runtime's programmatic dependent launch (docs/runtime.md): on, a call may start\n"
    "                    while the one before it ends; default $AUTOTUNE_PDL, else on (the library's default).\n"
    "                    cuBLASLt is launched as always\n"
    "  --tail off|on     the runtime's tail (docs/runtime.md): on, a call whose last wave of tiles would leave\n"
    "                    most SMs idle runs those tiles as a second, finer launch; default $AUTOTUNE_TAIL,\n"
    "                    else on (the library's default)\n"
    "  --warmup N        warm-up replays per provider and shape (default: the space's timing.warmup)\n"
    "  --samples N       timed replays per provider and shape, round-robin (default: the space's\n"
    "                    timing.retime_samples). Many of them keep a large GEMM running long enough to\n"
    "                    reach the GPU's power limit, as a long prefill does (docs/perf.md, \"Sustained load\")\n"
    "  --rounds N        passes over the whole shape list (default 3), each checking and timing every shape\n"
    "                    again on inputs made again; a shape's time is the median of its passes' times. One\n"
    "                    pass can catch a state that slows a shape by up to 35% for that pass only\n"
    "                    (docs/perf.md, \"Weights nobody had measured, again\"); a shape's failure in any pass\n"
    "                    is its result. The rows come in the last pass\n\n"
    "With a live provider, the last line says what the GPU board did (NVML, where the driver has it):\n"
    "each round's power and the share of it the power limit held the clocks down, and the SM clock the\n"
    "shapes were timed at.\n";

enum { MAX_COLUMNS = 32, DEFAULT_ROUNDS = 3, MAX_ROUNDS = 100 };

typedef struct column {
  int live;          /* AT_CMP_*, or -1: a provider of files[file] */
  int file;
  const char *name;  /* the provider's own name (in its file) */
  char label[96];    /* its name in the table and the JSON */
  char code[4];      /* its short name in the ratio headers */
} column;

typedef struct options {
  const char *space, *shapes, *only, *json, *db, *configs, *providers;
  const char *pdl;  /* the runtime's launch mode: off or on */
  const char *tail; /* the runtime's tail: off or on */
  int64_t warmup, samples; /* the timing's counts; -1: the space's */
  int64_t rounds;          /* passes over the shape list */
  int gpu;
} options;

typedef struct run {
  const options *o;
  const at_space *space;
  column cols[MAX_COLUMNS];
  size_t ncols;
  at_results_file *files;
  size_t nfiles;
  int use[AT_CMP_NPROVIDERS], nlive;
  cmp_session S;
  int rounds;             /* passes over the list: --rounds with a live provider, else 1 */
  at_compare_reply *reps; /* one per shape: with several rounds, the rounds merged (merge_round) */
  double *round_us;       /* [shape][live provider][round]: each round's time (0: not ok), for the JSON */
  at_compare_clock *clock;  /* [shape][round]: the SM clock while the shape was timed */
  const at_board *board;  /* the GPU's board (NVML), NULL when not there: board_note says why */
  char board_note[96];
  int limit_w;            /* the board's power limit, read once; 0: not read */
  at_board_span *round_board; /* [round]: the board over each whole round */
} run;

/* What a column says about a shape, live or from a file. */
typedef struct cell {
  const char *status, *message, *kernel;
  double time_us, time_min_us, time_max_us, check_ratio, max_abs_err;
  int64_t samples, bad_count;
  const at_compare_result *live; /* the worker's result, for a live column */
  const at_result_rec *rec;      /* the file's record, for a file column */
} cell;

/* ---- options and providers -------------------------------------------------------------------- */

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* An on/off switch of the runtime: the option (put in the environment for the workers), else the
 * environment's value; *value becomes "on" or "off". */
static int runtime_switch(const char **value, const char *flag, const char *var) {
  if (*value && setenv(var, *value, 1)) return at_fail(AT_ERR_RUNTIME, "setenv %s: %s", var, strerror(errno));
  int on = at_switch_env(var);
  if (on < 0) return at_fail(AT_ERR_INPUT, "%s must be off or on (got '%s')", *value ? flag : var, getenv(var));
  *value = on ? "on" : "off";
  return AT_OK;
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {{"providers", required_argument, 0, 'p'}, {"db", required_argument, 0, 'd'},
                                       {"configs", required_argument, 0, 'c'},   {"shapes", required_argument, 0, 's'},
                                       {"only", required_argument, 0, 'o'},      {"json", required_argument, 0, 'j'},
                                       {"gpu", required_argument, 0, 'g'},       {"pdl", required_argument, 0, 'P'},
                                       {"tail", required_argument, 0, 'T'},      {"warmup", required_argument, 0, 'W'},
                                       {"samples", required_argument, 0, 'S'},   {"rounds", required_argument, 0, 'R'},
                                       {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->providers = "autotune,cublaslt";
  o->warmup = o->samples = -1;
  o->rounds = DEFAULT_ROUNDS;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'p': o->providers = optarg; break;
    case 'd': o->db = optarg; break;
    case 'c': o->configs = optarg; break;
    case 's': o->shapes = optarg; break;
    case 'o': o->only = optarg; break;
    case 'j': o->json = optarg; break;
    case 'g': AT_TRY(cmp_parse_gpu(optarg, &o->gpu)); break;
    case 'P': o->pdl = optarg; break;
    case 'T': o->tail = optarg; break;
    case 'W':
      if (at_parse_i64(optarg, &o->warmup) || o->warmup < 0 || o->warmup > 100000)
        return at_fail(AT_ERR_INPUT, "compare: --warmup expects an integer from 0 to 100000, got '%s'", optarg);
      break;
    case 'S':
      if (at_parse_i64(optarg, &o->samples) || o->samples < 3 || o->samples > 100000)
        return at_fail(AT_ERR_INPUT, "compare: --samples expects an integer from 3 to 100000, got '%s'", optarg);
      break;
    case 'R':
      if (at_parse_i64(optarg, &o->rounds) || o->rounds < 1 || o->rounds > MAX_ROUNDS)
        return at_fail(AT_ERR_INPUT, "compare: --rounds expects an integer from 1 to %d, got '%s'", MAX_ROUNDS, optarg);
      break;
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "compare: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "compare: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return at_fail(AT_ERR_INPUT, optind >= argc ? "compare: missing SPACE.yaml (see --help)"
                                                : "compare: expected one SPACE.yaml, got more arguments (see --help)");
  o->space = argv[optind];
  /* What the user names must exist; the defaults are used when they do. */
  if (o->db && !at_file_exists(o->db)) return at_fail(AT_ERR_INPUT, "--db: %s: no such DB", o->db);
  if (o->configs && !is_dir(o->configs)) return at_fail(AT_ERR_INPUT, "--configs: %s is not a directory", o->configs);
  cmp_default_sources(&o->db, &o->configs);
  /* The workers' runtimes take the modes from the environment they inherit. */
  AT_TRY(runtime_switch(&o->pdl, "--pdl", "AUTOTUNE_PDL"));
  return runtime_switch(&o->tail, "--tail", "AUTOTUNE_TAIL");
}

static const char *const CODES[AT_CMP_NPROVIDERS] = {"at", "lt", "df", "bl"};

static int add_column(run *R, int live, int file, const char *name) {
  if (R->ncols == MAX_COLUMNS) return at_fail(AT_ERR_INPUT, "--providers: at most %d providers", MAX_COLUMNS);
  column *c = &R->cols[R->ncols];
  memset(c, 0, sizeof *c);
  c->live = live, c->file = file, c->name = name;
  snprintf(c->label, sizeof c->label, "%s", name);
  snprintf(c->code, sizeof c->code, "%.2s", live >= 0 ? CODES[live] : name);
  for (size_t i = 0; i < R->ncols; i++) /* the same name twice: the file's gets its file's name */
    if (strcmp(R->cols[i].label, c->label) == 0) {
      if (live >= 0) return at_fail(AT_ERR_INPUT, "--providers: '%s' is listed twice", name);
      /* NAME+STEM, STEM the file's name without its extension, in the characters a name may have */
      const char *path = R->files[file].path, *base = strrchr(path, '/');
      snprintf(c->label, sizeof c->label, "%s+%s", name, base ? base + 1 : path);
      char *dot = strrchr(c->label + strlen(name) + 1, '.');
      if (dot && dot != c->label + strlen(name) + 1) *dot = 0;
      for (char *p = c->label; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_-.+", *p)) *p = '_';
      c->label[63] = 0;
      for (size_t j = 0; j < R->ncols; j++)
        if (strcmp(R->cols[j].label, c->label) == 0)
          return at_fail(AT_ERR_INPUT, "--providers: provider '%s' of %s is listed twice", name, path);
    }
  R->ncols++;
  return AT_OK;
}

/* --providers: the live ones, and every provider of each file:PATH (the files read here). */
static int parse_providers(run *R, const char *list) {
  char *copy = at_xstrdup(list), *save = NULL;
  int rc = AT_OK;
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == AT_OK; tok = strtok_r(NULL, ",", &save)) {
    if (strncmp(tok, "file:", 5) == 0) {
      if (!tok[5]) {
        rc = at_fail(AT_ERR_INPUT, "--providers: file: needs a path (file:PATH)");
        break;
      }
      R->files = at_xrealloc(R->files, sizeof *R->files * (R->nfiles + 1));
      at_results_file *f = &R->files[R->nfiles];
      if ((rc = at_results_load(tok + 5, f))) {
        at_errctx("--providers file:%s", tok + 5);
        break;
      }
      R->nfiles++;
      for (size_t p = 0; p < f->nproviders && rc == AT_OK; p++) rc = add_column(R, -1, (int)R->nfiles - 1, f->providers[p]);
      continue;
    }
    int p = -1;
    for (int i = 0; i < AT_CMP_NPROVIDERS; i++)
      if (strcmp(tok, CMP_PROVIDERS[i]) == 0) p = i;
    if (p < 0) {
      rc = at_fail(AT_ERR_INPUT, "--providers: unknown provider '%s' (known: autotune, default, cublaslt, cublas, file:PATH)",
                   tok);
      break;
    }
    rc = add_column(R, p, -1, CMP_PROVIDERS[p]);
    if (rc == AT_OK) R->use[p] = 1, R->nlive++;
  }
  free(copy);
  /* Ratio headers must tell the columns apart: a code used twice becomes the column's number. */
  int twice[MAX_COLUMNS] = {0};
  for (size_t i = 0; i < R->ncols; i++)
    for (size_t j = 0; j < R->ncols; j++) twice[i] |= i != j && strcmp(R->cols[i].code, R->cols[j].code) == 0;
  for (size_t i = 0; i < R->ncols; i++)
    if (twice[i]) snprintf(R->cols[i].code, sizeof R->cols[i].code, "%d", (int)(i + 1) % 100);
  if (rc == AT_OK && R->ncols == 0)
    rc = at_fail(AT_ERR_INPUT, "--providers: empty list (known: autotune, default, cublaslt, cublas, file:PATH)");
  return rc;
}

/* Every file provider must have a record for every shape, and a file of another op is refused:
 * both before anything runs. */
static int check_files(const run *R) {
  const at_space *s = R->space;
  for (size_t f = 0; f < R->nfiles; f++)
    if (R->files[f].op && strcmp(R->files[f].op, s->op_name) != 0)
      return at_fail(AT_ERR_INPUT, "--providers file:%s: its results are of op %s, the space's op is %s",
                     R->files[f].path, R->files[f].op, s->op_name);
  at_buf miss = {0};
  int count = 0;
  for (size_t c = 0; c < R->ncols; c++) {
    const column *col = &R->cols[c];
    if (col->live >= 0) continue;
    for (size_t i = 0; i < s->nshapes; i++) {
      const at_shape *sh = &s->shapes[i];
      if (at_results_find(&R->files[col->file], col->name, sh->m, sh->n, sh->k)) continue;
      if (count++ < 8)
        at_buf_printf(&miss, "\n  provider %s (file:%s) has no record for M=%lld N=%lld K=%lld%s%s%s", col->label,
                      R->files[col->file].path, (long long)sh->m, (long long)sh->n, (long long)sh->k,
                      s->shape_names[i] ? " (" : "", s->shape_names[i] ? s->shape_names[i] : "",
                      s->shape_names[i] ? ")" : "");
    }
  }
  int rc = AT_OK;
  if (count)
    rc = at_fail(AT_ERR_INPUT, "compare: %d (shape, provider) pair%s without a record, nothing was run:%s%s", count,
                 count == 1 ? "" : "s", miss.data, count > 8 ? "\n  ..." : "");
  at_buf_free(&miss);
  return rc;
}

/* ---- cells ------------------------------------------------------------------------------------ */

static void cell_of(const run *R, size_t i, size_t c, cell *out) {
  memset(out, 0, sizeof *out);
  out->time_us = out->time_min_us = out->time_max_us = out->check_ratio = out->max_abs_err = -1;
  out->samples = -1;
  out->message = "";
  const column *col = &R->cols[c];
  const at_shape *sh = &R->space->shapes[i];
  if (col->live >= 0) {
    const at_compare_result *r = &R->reps[i].r[col->live];
    out->live = r;
    out->status = r->status[0] ? r->status : "-";
    out->message = r->message;
    out->kernel = r->kernel[0] ? r->kernel : NULL;
    out->check_ratio = r->check_ratio, out->max_abs_err = r->max_abs_err, out->bad_count = r->bad_count;
    if (cmp_result_ok(r)) {
      out->time_us = r->time_us, out->time_min_us = r->time_min_us, out->time_max_us = r->time_max_us;
      out->samples = r->samples;
    }
    return;
  }
  const at_result_rec *rec = at_results_find(&R->files[col->file], col->name, sh->m, sh->n, sh->k);
  out->rec = rec;
  if (!rec) {
    out->status = "none";
    return;
  }
  out->status = rec->status;
  out->message = rec->message;
  out->kernel = rec->kernel;
  out->check_ratio = rec->check_ratio;
  if (strcmp(rec->status, "ok") == 0) {
    out->time_us = rec->time_us, out->time_min_us = rec->time_min_us, out->time_max_us = rec->time_max_us;
    out->samples = rec->samples;
  }
}

static int cell_ok(const cell *c) { return strcmp(c->status, "ok") == 0 && c->time_us > 0; }

/* Shape i's times of live provider p, one per round (0 where that round's result was not ok). */
static double *round_slot(const run *R, size_t i, int p) {
  return &R->round_us[(i * AT_CMP_NPROVIDERS + (size_t)p) * (size_t)R->rounds];
}

static double peak_tflops(const run *R) { return R->nlive ? R->S.peak.fp8_tflops : 0; }
static double peak_gbs(const run *R) { return R->nlive ? R->S.peak.copy_gbs : 0; }

static double tflops_of(const run *R, size_t i, double t) {
  return t > 0 ? R->space->op->flops(&R->space->shapes[i]) / (t * 1e-6) / 1e12 : 0;
}

/* The share of the roofline floor: max(flops / peak rate, min bytes / peak bandwidth) over the time. */
static double roof_of(const run *R, size_t i, double t) {
  const at_shape *sh = &R->space->shapes[i];
  double floor_s = 0, flops = R->space->op->flops(sh), bytes = R->space->op->min_bytes(sh);
  if (peak_tflops(R) > 0) floor_s = flops / (peak_tflops(R) * 1e12);
  if (peak_gbs(R) > 0 && bytes / (peak_gbs(R) * 1e9) > floor_s) floor_s = bytes / (peak_gbs(R) * 1e9);
  return t > 0 && floor_s > 0 ? 100.0 * floor_s / (t * 1e-6) : 0;
}

/* The first provider's time over column c's; 0 when either has no checked time. */
static double ratio_of(const run *R, size_t i, size_t c) {
  cell a, b;
  cell_of(R, i, 0, &a);
  cell_of(R, i, c, &b);
  return cell_ok(&a) && cell_ok(&b) ? a.time_us / b.time_us : 0;
}

/* ---- the table -------------------------------------------------------------------------------- */

static void fmt_ratio(char *out, size_t n, double v) {
  if (v < 0)
    snprintf(out, n, "-");
  else if (isinf(v) || v > 1e30)
    snprintf(out, n, "inf");
  else
    snprintf(out, n, "%.3g", v);
}

static int width_of(const column *c) { return (int)strlen(c->label) + 3 > 11 ? (int)strlen(c->label) + 3 : 11; }

static int autotune_column(const run *R) {
  for (size_t c = 0; c < R->ncols; c++)
    if (R->cols[c].live == AT_CMP_AUTOTUNE) return (int)c;
  return -1;
}

static void print_header(const run *R) {
  const options *o = R->o;
  const at_space *s = R->space;
  printf("compare: %s, %zu shapes%s%s; ", s->path, s->nshapes, o->shapes ? " from " : "", o->shapes ? o->shapes : "");
  if (R->nlive)
    printf("GPU %d: %s (%s); peak measured: %.0f TFLOP/s FP8, %.0f GB/s\n", o->gpu, R->S.dev.name, R->S.arch,
           R->S.peak.fp8_tflops, R->S.peak.copy_gbs);
  else
    printf("every provider is a file: no GPU used, no roofline\n");
  if (R->nlive)
    printf("runtime: DB %s, configs %s, tag %s, pdl %s, tail %s; check: atol %g, rtol %g, gamma %g; %d warm-up + %d"
           " samples each, round-robin, inputs rotated past %g x L2%s; %lld round%s%s\n",
           o->db ? o->db : "(none)", o->configs ? o->configs : "(none)", s->tag, o->pdl, o->tail, s->atol, s->rtol, s->gamma,
           s->timing.warmup, s->timing.retime_samples, s->timing.l2_multiple,
           /* the providers timed in turn (the FP32 reference is timed alone): compare.c scrubs */
           R->nlive - R->use[AT_CMP_CUBLAS] > 1 ? ", L2 scrubbed before each sample" : "", (long long)R->rounds,
           R->rounds == 1 ? "" : "s", R->rounds == 1 ? "" : " over the list, a shape's time the median of its rounds'");
  for (size_t f = 0; f < R->nfiles; f++) {
    const at_results_file *file = &R->files[f];
    printf("file %s: %zu provider%s, device %s\n", file->path, file->nproviders, file->nproviders == 1 ? "" : "s",
           file->device ? file->device : "(not said)");
    if (R->nlive && file->device && strcmp(file->device, R->S.dev.name) != 0)
      fprintf(stderr, "autotune: warning: %s was measured on %s, this GPU is %s\n", file->path, file->device,
              R->S.dev.name);
  }
  printf("%7s %7s %7s", "M", "N", "K");
  for (size_t c = 0; c < R->ncols; c++) {
    char h[128];
    snprintf(h, sizeof h, "%s us", R->cols[c].label);
    printf(" %*s %8s %6s %7s", width_of(&R->cols[c]), h, "TFLOP/s", "roof%", "chk");
  }
  for (size_t c = 1; c < R->ncols; c++) {
    char h[16];
    snprintf(h, sizeof h, "%s/%s", R->cols[0].code, R->cols[c].code);
    printf(" %7s", h);
  }
  if (autotune_column(R) >= 0) printf("  runtime config");
  printf("\n");
}

static void print_row(const run *R, size_t i) {
  const at_shape *sh = &R->space->shapes[i];
  printf("%7lld %7lld %7lld", (long long)sh->m, (long long)sh->n, (long long)sh->k);
  for (size_t c = 0; c < R->ncols; c++) {
    cell x;
    cell_of(R, i, c, &x);
    char chk[16], roof[16] = "-";
    fmt_ratio(chk, sizeof chk, x.check_ratio);
    int w = width_of(&R->cols[c]);
    if (cell_ok(&x)) {
      double rf = roof_of(R, i, x.time_us);
      if (rf > 0) snprintf(roof, sizeof roof, "%.1f", rf);
      printf(" %*.2f %8.1f %6s %7s", w, x.time_us, tflops_of(R, i, x.time_us), roof, chk);
    } else {
      printf(" %*s %8s %6s %7s", w, x.status, "-", "-", chk);
    }
  }
  for (size_t c = 1; c < R->ncols; c++) {
    double r = ratio_of(R, i, c);
    if (r > 0)
      printf(" %6.2fx", r);
    else
      printf(" %7s", "-");
  }
  int a = autotune_column(R);
  if (a >= 0) {
    const at_compare_result *r = &R->reps[i].r[AT_CMP_AUTOTUNE];
    printf("  %s %s %s", r->source[0] ? r->source : "-", r->bucket, r->kernel);
  }
  printf("\n");
  fflush(stdout);
}

/* Geometric mean of the first provider's time over column c's, over the shapes whose M is in
 * [lo, hi] and where both answered: of their times (round < 0), or of round `round`'s alone (both
 * columns live; a shape with a ratio was ok in every round). */
static double geomean(const run *R, size_t c, int64_t lo, int64_t hi, int round, int *count) {
  double sum = 0;
  *count = 0;
  for (size_t i = 0; i < R->space->nshapes; i++) {
    if (R->space->shapes[i].m < lo || R->space->shapes[i].m > hi) continue;
    double r = ratio_of(R, i, c);
    if (r <= 0) continue;
    if (round >= 0) r = round_slot(R, i, R->cols[0].live)[round] / round_slot(R, i, R->cols[c].live)[round];
    sum += log(r);
    (*count)++;
  }
  return *count ? exp(sum / *count) : 0;
}

static const struct {
  const char *key, *label;
  int64_t lo, hi;
} GROUPS[] = {{"all", "all shapes", 1, INT64_MAX},
              {"m_le_128", "M <= 128", 1, 128},
              {"m_ge_2048", "M >= 2048", 2048, INT64_MAX}};

/* The shape where the first provider's time over column c's is highest (the first of equals), how
 * many shapes are above 1.10x (the goal's bound for any one shape, docs/perf.md) and how many have
 * a ratio at all; -1 when none has. */
enum { ABOVE_PERMILLE = 1100 };
static long worst_shape(const run *R, size_t c, double *worst, int *above, int *count) {
  long at = -1;
  *worst = 0, *above = 0, *count = 0;
  for (size_t i = 0; i < R->space->nshapes; i++) {
    double r = ratio_of(R, i, c);
    if (r <= 0) continue;
    (*count)++;
    if (r > *worst) *worst = r, at = (long)i;
    if (r > ABOVE_PERMILLE / 1000.0) (*above)++;
  }
  return at;
}

/* The geometric mean over all shapes of the first provider's time over column c's in round r alone,
 * over the shapes that have a ratio (the median's shapes); 0 unless both columns are live and there
 * are rounds. How far these lie apart says how much the headline figure owes to one pass. */
static double round_geomean(const run *R, size_t c, int r) {
  int n;
  if (R->rounds < 2 || R->cols[0].live < 0 || R->cols[c].live < 0) return 0;
  return geomean(R, c, 1, INT64_MAX, r, &n);
}

static void print_summary(const run *R) {
  for (size_t c = 1; c < R->ncols; c++) {
    printf("geomean time %s / %s:", R->cols[0].label, R->cols[c].label);
    for (size_t g = 0; g < AT_ARRAY_LEN(GROUPS); g++) {
      int n;
      double v = geomean(R, c, GROUPS[g].lo, GROUPS[g].hi, -1, &n);
      if (n)
        printf("%s %s %.3fx (%d shape%s)", g ? ";" : "", GROUPS[g].label, v, n, n == 1 ? "" : "s");
      else
        printf("%s %s - (no shape)", g ? ";" : "", GROUPS[g].label);
    }
    printf("\n");
    if (round_geomean(R, c, 0) > 0) {
      printf("geomean time %s / %s by round, all shapes:", R->cols[0].label, R->cols[c].label);
      for (int r = 0; r < R->rounds; r++) printf("%s %.3fx", r ? "," : "", round_geomean(R, c, r));
      printf("\n");
    }
    double worst;
    int above, n;
    long at = worst_shape(R, c, &worst, &above, &n);
    if (at < 0) continue;
    const at_shape *w = &R->space->shapes[at];
    printf("worst time %s / %s: %.3fx at %lld x %lld x %lld; %d of %d shape%s above %.2fx\n", R->cols[0].label,
           R->cols[c].label, worst, (long long)w->m, (long long)w->n, (long long)w->k, above, n, n == 1 ? "" : "s",
           ABOVE_PERMILLE / 1000.0);
  }
}

/* The median of the shapes' median SM clocks in round r (0 when none was read). */
static int round_mhz(const run *R, int r) {
  size_t n = 0;
  double *v = at_xcalloc(R->space->nshapes + 1, sizeof *v);
  for (size_t i = 0; i < R->space->nshapes; i++) {
    const at_compare_clock *c = &R->clock[i * (size_t)R->rounds + (size_t)r];
    if (c->reads) v[n++] = c->median_mhz;
  }
  int mhz = n ? (int)(at_median(v, n) + 0.5) : 0;
  free(v);
  return mhz;
}

/* The lowest and highest median clock of a shape over every round; the host's cost of a read. */
static void clock_range(const run *R, int *lo, int *hi, double *read_us) {
  double sum = 0;
  int n = 0;
  *lo = *hi = 0;
  for (size_t i = 0; i < R->space->nshapes * (size_t)R->rounds; i++) {
    const at_compare_clock *c = &R->clock[i];
    if (!c->reads) continue;
    if (!*lo || c->median_mhz < *lo) *lo = c->median_mhz;
    if (c->median_mhz > *hi) *hi = c->median_mhz;
    sum += c->read_us, n++;
  }
  *read_us = n ? sum / n : 0;
}

/* Why the worker read no clock: its first note ("" when it did not try: nothing was timed). */
static const char *clock_note(const run *R) {
  for (size_t i = 0; i < R->space->nshapes * (size_t)R->rounds; i++)
    if (R->clock[i].note[0]) return R->clock[i].note;
  return "nothing was timed";
}

/* The board while the rounds ran (core/board.h): its power and capped share over each round, the
 * SM clock during the samples. The absolute times depend on it; the ratios much less (the providers
 * were timed in turn). */
static void print_board(const run *R) {
  if (!R->board) {
    printf("board: not read (%s)\n", R->board_note);
    return;
  }
  int lo, hi;
  double read_us;
  clock_range(R, &lo, &hi, &read_us);
  if (R->limit_w)
    printf("board (NVML, power limit %d W):", R->limit_w);
  else
    printf("board (NVML, power limit not read):");
  for (int r = 0; r < R->rounds; r++) {
    const at_board_span *b = &R->round_board[r];
    const int mhz = round_mhz(R, r);
    printf("%s round %d %.1f s", r ? ";" : "", r + 1, b->seconds);
    if (b->watts >= 0) printf(", %.0f W", b->watts);
    if (b->capped_pct >= 0) printf(", power-capped %.0f%%", b->capped_pct);
    if (mhz) printf(", SM %d MHz", mhz);
  }
  if (hi)
    printf("; a shape's SM clock %d-%d MHz (median of a read per turn, %.0f us a read)", lo, hi, read_us);
  else
    printf("; the SM clock not read (%s)", clock_note(R));
  printf("\n");
}

/* ---- the results file ------------------------------------------------------------------------- */

static void json_ratio(at_buf *b, const char *key, double v) {
  if (v < 0)
    at_buf_printf(b, "\"%s\": null", key);
  else if (isinf(v) || v > 1e300)
    at_buf_printf(b, "\"%s\": \"inf\"", key);
  else
    at_buf_printf(b, "\"%s\": %.6g", key, v);
}

static void json_str_or_null(at_buf *b, const char *s) {
  if (s && *s)
    at_buf_json_string(b, s);
  else
    at_buf_puts(b, "null");
}

static void json_selection(at_buf *b, const at_compare_result *r) {
  at_buf_puts(b, ", \"selection\": ");
  if (!r->source[0]) {
    at_buf_puts(b, "null");
    return;
  }
  at_buf_puts(b, "{\"source\": ");
  at_buf_json_string(b, r->source);
  at_buf_puts(b, ", \"path\": ");
  at_buf_json_string(b, r->path);
  at_buf_puts(b, ", \"bucket\": ");
  at_buf_json_string(b, r->bucket);
  at_buf_puts(b, ", \"variant\": ");
  at_buf_json_string(b, r->variant);
  at_buf_puts(b, ", \"params\": ");
  at_buf_json_string(b, r->params); /* the canonical JSON text, as a string */
  at_buf_puts(b, ", \"kernel\": ");
  at_buf_json_string(b, r->kernel);
  at_buf_puts(b, "}");
}

static void json_record(at_buf *b, const run *R, size_t i, size_t c) {
  cell x;
  cell_of(R, i, c, &x);
  at_buf_printf(b, ",\n     ");
  at_buf_json_string(b, R->cols[c].label);
  at_buf_puts(b, ": {\"status\": ");
  at_buf_json_string(b, x.status);
  if (cell_ok(&x)) {
    at_buf_printf(b, ", \"time_us\": %.4f", x.time_us);
    if (x.time_min_us >= 0) at_buf_printf(b, ", \"time_min_us\": %.4f", x.time_min_us);
    if (x.time_max_us >= 0) at_buf_printf(b, ", \"time_max_us\": %.4f", x.time_max_us);
    if (x.samples >= 0) at_buf_printf(b, ", \"samples\": %lld", (long long)x.samples);
    if (x.live && R->rounds > 1) {
      const double *t = round_slot(R, i, R->cols[c].live);
      at_buf_puts(b, ", \"round_times_us\": [");
      for (int r = 0; r < R->rounds; r++) at_buf_printf(b, "%s%.4f", r ? ", " : "", t[r]);
      at_buf_puts(b, "]");
    }
    at_buf_printf(b, ", \"tflops\": %.2f", tflops_of(R, i, x.time_us));
    if (roof_of(R, i, x.time_us) > 0) at_buf_printf(b, ", \"roofline_pct\": %.2f", roof_of(R, i, x.time_us));
  } else {
    at_buf_puts(b, ", \"time_us\": null");
  }
  at_buf_puts(b, ", ");
  json_ratio(b, "check_ratio", x.check_ratio);
  if (x.live) {
    at_buf_puts(b, ", ");
    json_ratio(b, "max_abs_err", x.max_abs_err);
    at_buf_printf(b, ", \"bad_count\": %lld", (long long)x.bad_count);
  }
  at_buf_puts(b, ", \"message\": ");
  at_buf_json_string(b, x.message ? x.message : "");
  at_buf_puts(b, ", \"kernel\": ");
  json_str_or_null(b, x.kernel);
  if (x.live && (R->cols[c].live == AT_CMP_AUTOTUNE || R->cols[c].live == AT_CMP_DEFAULT)) json_selection(b, x.live);
  if (x.rec) {
    at_buf_puts(b, ", \"from\": ");
    at_buf_json_string(b, R->files[R->cols[c].file].path);
    if (x.rec->meta) at_buf_printf(b, ", \"meta\": %s", x.rec->meta);
  }
  at_buf_puts(b, "}");
}

static void json_head(at_buf *b, const run *R) {
  const options *o = R->o;
  const at_space *s = R->space;
  at_buf_puts(b, "{\n  \"format\": \"" AT_RESULTS_FORMAT "\",\n  \"tool\": \"autotune compare\",\n  \"space\": ");
  at_buf_json_string(b, s->path);
  at_buf_puts(b, ",\n  \"shapes_file\": ");
  json_str_or_null(b, o->shapes);
  at_buf_printf(b, ",\n  \"op\": \"%s\",\n  \"tag\": ", s->op_name);
  at_buf_json_string(b, s->tag);
  if (R->nlive) {
    at_buf_printf(b, ",\n  \"gpu\": %d,\n  \"device\": ", o->gpu);
    at_buf_json_string(b, R->S.dev.name);
    at_buf_printf(b, ",\n  \"arch\": \"%s\"", R->S.arch);
  } else {
    at_buf_puts(b, ",\n  \"gpu\": null,\n  \"device\": null,\n  \"arch\": null");
  }
  at_buf_printf(b, ",\n  \"peak_tflops\": %.1f,\n  \"peak_gbs\": %.1f,\n  \"providers\": [", peak_tflops(R), peak_gbs(R));
  for (size_t c = 0; c < R->ncols; c++) {
    if (c) at_buf_puts(b, ", ");
    at_buf_json_string(b, R->cols[c].label);
  }
  at_buf_puts(b, "],\n  \"runtime\": {\"db\": ");
  json_str_or_null(b, o->db);
  at_buf_puts(b, ", \"configs\": ");
  json_str_or_null(b, o->configs);
  at_buf_puts(b, ", \"tag\": ");
  at_buf_json_string(b, s->tag);
  at_buf_printf(b, ", \"pdl\": \"%s\", \"tail\": \"%s\"", o->pdl, o->tail);
  at_buf_printf(b, "},\n  \"check\": {\"atol\": %g, \"rtol\": %g, \"gamma\": %g},\n", s->atol, s->rtol, s->gamma);
  at_buf_printf(b, "  \"timing\": {\"warmup\": %d, \"samples\": %d, \"l2_multiple\": %g, \"seed\": %llu, \"rounds\": %lld},\n",
                s->timing.warmup, s->timing.retime_samples, s->timing.l2_multiple, (unsigned long long)s->seed,
                (long long)R->rounds);
}

static void json_geomean(at_buf *b, const run *R, size_t c) {
  at_buf_puts(b, "{");
  for (size_t g = 0; g < AT_ARRAY_LEN(GROUPS); g++) {
    int n = 0;
    double v = c < R->ncols ? geomean(R, c, GROUPS[g].lo, GROUPS[g].hi, -1, &n) : 0;
    at_buf_printf(b, "%s\"%s\": {", g ? ", " : "", GROUPS[g].key);
    json_ratio(b, "ratio", n ? v : -1);
    at_buf_printf(b, ", \"shapes\": %d}", n);
  }
  double worst = 0;
  int above = 0, count = 0;
  long at = c < R->ncols ? worst_shape(R, c, &worst, &above, &count) : -1;
  if (at >= 0) {
    const at_shape *w = &R->space->shapes[at];
    at_buf_puts(b, ", \"worst\": {");
    json_ratio(b, "ratio", worst);
    at_buf_printf(b, ", \"m\": %lld, \"n\": %lld, \"k\": %lld}", (long long)w->m, (long long)w->n, (long long)w->k);
  } else {
    at_buf_puts(b, ", \"worst\": null");
  }
  at_buf_printf(b, ", \"above_1_10\": %d, \"all_by_round\": ", above);
  if (c < R->ncols && round_geomean(R, c, 0) > 0) {
    at_buf_puts(b, "[");
    for (int r = 0; r < R->rounds; r++) at_buf_printf(b, "%s%.6g", r ? ", " : "", round_geomean(R, c, r));
    at_buf_puts(b, "]}");
  } else {
    at_buf_puts(b, "null}");
  }
}

static void json_num_or_null(at_buf *b, double v, const char *fmt) {
  if (v < 0)
    at_buf_puts(b, "null");
  else
    at_buf_printf(b, fmt, v);
}

/* Top level: the board over each round; {"source": null, "note"} when it was not read. */
static void json_board(at_buf *b, const run *R) {
  if (!R->board) {
    at_buf_puts(b, "{\"source\": null, \"note\": ");
    at_buf_json_string(b, R->nlive ? R->board_note : "no live provider");
    at_buf_puts(b, "}");
    return;
  }
  int lo, hi;
  double read_us;
  clock_range(R, &lo, &hi, &read_us);
  at_buf_puts(b, "{\"source\": \"nvml\", \"limit_w\": ");
  json_num_or_null(b, R->limit_w ? R->limit_w : -1, "%.0f");
  at_buf_puts(b, ", \"clock_read_us\": ");
  json_num_or_null(b, hi ? read_us : -1, "%.1f");
  if (!hi) {
    at_buf_puts(b, ", \"clock_note\": ");
    at_buf_json_string(b, clock_note(R));
  }
  at_buf_puts(b, ", \"rounds\": [");
  for (int r = 0; r < R->rounds; r++) {
    const at_board_span *s = &R->round_board[r];
    const int mhz = round_mhz(R, r);
    at_buf_printf(b, "%s{\"seconds\": %.3f, \"watts\": ", r ? ", " : "", s->seconds);
    json_num_or_null(b, s->watts, "%.1f");
    at_buf_puts(b, ", \"power_capped_pct\": ");
    json_num_or_null(b, s->capped_pct, "%.1f");
    at_buf_puts(b, ", \"sm_mhz\": ");
    json_num_or_null(b, mhz ? mhz : -1, "%.0f");
    at_buf_puts(b, "}");
  }
  at_buf_puts(b, "]}");
}

/* A shape's SM clock while timed, per round: median, lowest, highest read (null where not read). */
static void json_shape_clock(at_buf *b, const run *R, size_t i) {
  const at_compare_clock *c = R->clock + i * (size_t)R->rounds;
  static const char *KEYS[] = {"median", "min", "max"};
  at_buf_puts(b, ",\n     \"sm_mhz\": {");
  for (size_t k = 0; k < AT_ARRAY_LEN(KEYS); k++) {
    at_buf_printf(b, "%s\"%s\": [", k ? ", " : "", KEYS[k]);
    for (int r = 0; r < R->rounds; r++) {
      int v = !c[r].reads ? -1 : k == 0 ? c[r].median_mhz : k == 1 ? c[r].min_mhz : c[r].max_mhz;
      at_buf_puts(b, r ? ", " : "");
      json_num_or_null(b, v, "%.0f");
    }
    at_buf_puts(b, "]");
  }
  at_buf_puts(b, "}");
}

static int write_json(const run *R, double seconds) {
  const at_space *s = R->space;
  at_buf b = {0};
  json_head(&b, R);
  at_buf_puts(&b, "  \"shapes\": [");
  for (size_t i = 0; i < s->nshapes; i++) {
    const at_shape *sh = &s->shapes[i];
    at_buf_printf(&b, "%s\n    {\"m\": %lld, \"n\": %lld, \"k\": %lld", i ? "," : "", (long long)sh->m,
                  (long long)sh->n, (long long)sh->k);
    if (s->shape_names[i]) {
      at_buf_puts(&b, ", \"name\": ");
      at_buf_json_string(&b, s->shape_names[i]);
    }
    at_buf_printf(&b, ", \"sets\": %d, \"flops\": %.6g, \"min_bytes\": %.6g", R->nlive ? R->reps[i].sets : 0,
                  s->op->flops(sh), s->op->min_bytes(sh));
    for (size_t c = 0; c < R->ncols; c++) json_record(&b, R, i, c);
    if (R->nlive) json_shape_clock(&b, R, i);
    at_buf_puts(&b, ",\n     ");
    json_ratio(&b, "ratio", R->ncols > 1 && ratio_of(R, i, 1) > 0 ? ratio_of(R, i, 1) : -1);
    at_buf_puts(&b, ", \"ratios\": {");
    for (size_t c = 1; c < R->ncols; c++) {
      if (c > 1) at_buf_puts(&b, ", ");
      json_ratio(&b, R->cols[c].label, ratio_of(R, i, c) > 0 ? ratio_of(R, i, c) : -1);
    }
    at_buf_puts(&b, "}}");
  }
  at_buf_puts(&b, "\n  ],\n  \"geomean\": ");
  json_geomean(&b, R, 1);
  at_buf_puts(&b, ",\n  \"geomeans\": {");
  for (size_t c = 1; c < R->ncols; c++) {
    at_buf_puts(&b, c > 1 ? ", " : "");
    at_buf_json_string(&b, R->cols[c].label);
    at_buf_puts(&b, ": ");
    json_geomean(&b, R, c);
  }
  at_buf_puts(&b, "},\n  \"board\": ");
  json_board(&b, R);
  at_buf_puts(&b, ",\n  \"missing\": [");
  int first = 1;
  for (size_t i = 0; i < s->nshapes; i++)
    for (size_t c = 0; c < R->ncols; c++) {
      cell x;
      cell_of(R, i, c, &x);
      if (cell_ok(&x)) continue;
      at_buf_printf(&b, "%s\n    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"provider\": ", first ? "" : ",",
                    (long long)s->shapes[i].m, (long long)s->shapes[i].n, (long long)s->shapes[i].k);
      at_buf_json_string(&b, R->cols[c].label);
      at_buf_puts(&b, ", \"status\": ");
      at_buf_json_string(&b, x.status);
      at_buf_puts(&b, ", \"message\": ");
      at_buf_json_string(&b, x.message ? x.message : "");
      at_buf_puts(&b, "}");
      first = 0;
    }
  at_buf_printf(&b, "%s],\n  \"seconds\": %.3f\n}\n", first ? "" : "\n  ", seconds);
  int rc = at_write_file_atomic(R->o->json, b.data, b.len);
  at_buf_free(&b);
  return rc;
}

/* Every (shape, provider) without a checked time, on stderr; the status that main() turns into
 * exit code 1 when there is one. */
static int report_missing(const run *R) {
  int missing = 0;
  for (size_t i = 0; i < R->space->nshapes; i++)
    for (size_t c = 0; c < R->ncols; c++) {
      cell x;
      cell_of(R, i, c, &x);
      if (cell_ok(&x)) continue;
      if (!missing++) fprintf(stderr, "no answer:\n");
      fprintf(stderr, "  M=%lld N=%lld K=%lld %s: %s%s%s\n", (long long)R->space->shapes[i].m,
              (long long)R->space->shapes[i].n, (long long)R->space->shapes[i].k, R->cols[c].label, x.status,
              x.message && x.message[0] ? ": " : "", x.message ? x.message : "");
    }
  if (!missing) return AT_OK;
  return at_fail(AT_ERR_RUNTIME, "compare: %d (shape, provider) pair%s without a checked time (listed above)", missing,
                 missing == 1 ? "" : "s");
}

/* ---- the command ------------------------------------------------------------------------------ */

/* Round `round`'s reply for shape i merged into R->reps[i]. A provider's result stays ok only while
 * it is ok in every round (its first failure replaces it: a shape that fails once has failed); its
 * times and check figures gather (the median is taken once the rounds are done, finish_rounds). */
static void merge_round(run *R, size_t i, int round, const at_compare_reply *rep) {
  R->clock[i * (size_t)R->rounds + (size_t)round] = rep->clock;
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++)
    round_slot(R, i, p)[round] = cmp_result_ok(&rep->r[p]) ? rep->r[p].time_us : 0;
  if (round == 0) {
    R->reps[i] = *rep;
    return;
  }
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
    at_compare_result *m = &R->reps[i].r[p];
    const at_compare_result *x = &rep->r[p];
    if (!R->use[p] || !cmp_result_ok(m)) continue;
    if (!cmp_result_ok(x)) {
      *m = *x;
      continue;
    }
    if (x->time_min_us < m->time_min_us) m->time_min_us = x->time_min_us;
    if (x->time_max_us > m->time_max_us) m->time_max_us = x->time_max_us;
    m->samples += x->samples;
    if (x->check_ratio > m->check_ratio) m->check_ratio = x->check_ratio;
    if (x->max_abs_err > m->max_abs_err) m->max_abs_err = x->max_abs_err;
    if (x->bad_count > m->bad_count) m->bad_count = x->bad_count;
  }
}

/* Each provider still ok after every round: its time is the median of the rounds' times. */
static void finish_rounds(run *R, size_t i) {
  const int n = R->rounds;
  for (int p = 0; p < AT_CMP_NPROVIDERS && n > 1; p++) {
    at_compare_result *m = &R->reps[i].r[p];
    if (!R->use[p] || !cmp_result_ok(m)) continue;
    double t[MAX_ROUNDS];
    memcpy(t, round_slot(R, i, p), (size_t)n * sizeof *t);
    m->time_us = at_median(t, n);
  }
}

static int run_live(run *R, size_t i, int round) {
  const at_space *s = R->space;
  cmp_settings set = {s->atol, s->rtol, s->gamma, s->seed, s->timing.warmup,
                      s->timing.retime_samples, /* a side-by-side timing, like the tuner's re-timing */
                      s->timing.l2_multiple};
  at_compare_req *q = at_xcalloc(1, sizeof *q);
  at_compare_reply *rep = at_xcalloc(1, sizeof *rep);
  cmp_request(q, s->op_name, &s->shapes[i], &set, R->use, R->o->db, R->o->configs, s->tag);
  int rc = cmp_session_shape(&R->S, q, rep);
  if (rc == AT_OK) merge_round(R, i, round, rep);
  free(rep);
  free(q);
  return rc;
}

int cmd_compare(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) return AT_OK; /* --help */
  AT_TRY(rc);
  double t0 = at_now_s();
  run R;
  memset(&R, 0, sizeof R);
  R.o = &o;
  at_space *space = NULL;

  /* Everything the user wrote is checked before any GPU work: bad input is exit 2. */
  if ((rc = at_space_load(o.space, &space))) goto out;
  R.space = space;
  if (o.warmup >= 0) space->timing.warmup = (int)o.warmup;
  if (o.samples >= 0) space->timing.retime_samples = (int)o.samples;
  if (strcmp(space->op_name, "gemm_a8w8_blockscale") != 0) {
    rc = at_fail(AT_ERR_INPUT, "compare: op %s has no runtime launch function to compare; compare knows gemm_a8w8_blockscale",
                 space->op_name);
    goto out;
  }
  if ((rc = at_space_use_shapes(space, o.shapes, o.only))) goto out;
  if ((rc = parse_providers(&R, o.providers))) goto out;
  if ((rc = check_files(&R))) goto out;
  for (size_t f = 0; o.json && f < R.nfiles && rc == AT_OK; f++)
    if (at_same_file(o.json, R.files[f].path))
      rc = at_fail(AT_ERR_INPUT, "--json %s is the results file of a provider; it would be overwritten", o.json);
  if (rc == AT_OK && o.json && at_same_file(o.json, space->path))
    rc = at_fail(AT_ERR_INPUT, "--json %s is the search space; it would be overwritten", o.json);
  if (rc == AT_OK && o.json) {
    const char *files[] = {o.shapes, o.db, NULL};
    rc = at_check_output("--json", o.json, o.shapes ? files : files + 1, 0);
  }
  if (rc) goto out;
  R.reps = at_xcalloc(space->nshapes, sizeof *R.reps);
  R.rounds = R.nlive ? (int)o.rounds : 1; /* files are read once */
  R.round_us = at_xcalloc(space->nshapes * AT_CMP_NPROVIDERS * (size_t)R.rounds, sizeof *R.round_us);
  R.clock = at_xcalloc(space->nshapes * (size_t)R.rounds, sizeof *R.clock);
  R.round_board = at_xcalloc((size_t)R.rounds, sizeof *R.round_board);

  if (R.nlive) {
    if ((rc = cmp_session_probe("compare", o.gpu))) goto out;
    if (!o.db && R.use[AT_CMP_AUTOTUNE])
      fprintf(stderr, "autotune: compare: no DB (--db, $AUTOTUNE_DB or tuned/autotune.db): the runtime answers from the"
                      " configs\n");
    if ((rc = cmp_session_start(&R.S, o.gpu))) goto out;
    if (R.S.peak.note[0]) fprintf(stderr, "autotune: %s\n", R.S.peak.note);
    R.board = at_board_open(R.S.dev.uuid, R.board_note, sizeof R.board_note);
    R.limit_w = at_board_limit_w(R.board);
  }
  print_header(&R);
  /* Round after round over the whole list (not a shape's rounds back to back: a state that lasts a
   * few seconds then weighs on one of its passes only); the rows come with the last round. */
  const int rounds = R.rounds;
  for (int round = 0; round < rounds && rc == AT_OK; round++) {
    if (rounds > 1) fprintf(stderr, "autotune: compare: round %d of %d, %zu shapes\n", round + 1, rounds, space->nshapes);
    at_board_reading from, to;
    at_board_read(R.board, &from);
    for (size_t i = 0; i < space->nshapes && rc == AT_OK; i++) {
      if (R.nlive) rc = run_live(&R, i, round);
      if (rc == AT_OK && round == rounds - 1) {
        finish_rounds(&R, i);
        print_row(&R, i);
      }
    }
    at_board_read(R.board, &to);
    at_board_span_of(&from, &to, &R.round_board[round]);
  }
  cmp_session_stop(&R.S);
  if (rc) goto out;
  print_summary(&R);
  if (R.nlive) print_board(&R);
  if (o.json && (rc = write_json(&R, at_now_s() - t0))) goto out;
  rc = report_missing(&R);

out:
  cmp_session_stop(&R.S);
  for (size_t f = 0; f < R.nfiles; f++) at_results_free(&R.files[f]);
  free(R.files);
  free(R.reps);
  free(R.round_us);
  free(R.clock);
  free(R.round_board);
  at_space_free(space);
  return rc;
}

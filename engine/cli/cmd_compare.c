/* cmd_compare.c: `autotune compare SPACE.yaml`: per shape, the tuned config through the runtime
 * library's own launch path against cuBLASLt's block-scaled FP8 GEMM, checked and timed in one
 * process, same inputs, same method (docs/usage.md, docs/timing.md).
 *
 * This process never touches CUDA: a compare worker (gpu/compare.h) does the GPU work and streams
 * back what it starts (STEP frames) and each shape's results. When the worker dies, the last step
 * says on which shape and provider; the shape is reported as such and a new worker takes the next. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/device.h"
#include "../core/proto.h"
#include "../core/shapefile.h"
#include "../core/space.h"
#include "../core/util.h"
#include "../core/workerproc.h"
#include "commands.h"

static const char *const PROVIDERS[AT_CMP_NPROVIDERS] = {"autotune", "cublaslt"};

/* A worker that says nothing for this long is taken as hung: the first launch of a config includes
 * its NVRTC compile, and a large shape's input sets take a while to make. */
enum { STEP_TIMEOUT_S = 600 };

static const char *USAGE =
    "usage: autotune compare SPACE.yaml [--providers autotune,cublaslt] [--db PATH] [--configs DIR]\n"
    "                        [--shapes FILE] [--json FILE] [--gpu N]\n\n"
    "Times, per shape of the space, the tuned config through the runtime library's launch path\n"
    "(at_gemm_a8w8_blockscale) and cuBLASLt's block-scaled FP8 GEMM, in one process on the same\n"
    "input sets, each checked against the cuBLAS reference first; prints times, TFLOP/s, the ratio,\n"
    "the share of the roofline floor and the config the runtime chose, then geometric means.\n"
    "Exit status 1 when a provider has no checked time for a shape.\n\n"
    "options:\n"
    "  --providers LIST  autotune, cublaslt or both, comma-separated (default: both)\n"
    "  --db PATH         the runtime's DB (default $AUTOTUNE_DB, else tuned/autotune.db, when it exists)\n"
    "  --configs DIR     the runtime's exported configs (default configs, when it exists)\n"
    "  --shapes FILE     these shapes instead of the space's: a CSV file (.csv) with the header M,N,K,\n"
    "                    or a YAML list of shape groups like the space's shapes section\n"
    "  --json FILE       also write everything as JSON (docs/formats.md)\n"
    "  --gpu N           the GPU to run on (default 0)\n";

typedef struct options {
  const char *space, *shapes, *json, *db, *configs;
  int use[AT_CMP_NPROVIDERS];
  int gpu;
} options;

static int parse_providers(const char *list, int use[AT_CMP_NPROVIDERS]) {
  memset(use, 0, sizeof(int) * AT_CMP_NPROVIDERS);
  char *copy = at_xstrdup(list), *save = NULL;
  int n = 0, rc = AT_OK;
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == AT_OK; tok = strtok_r(NULL, ",", &save)) {
    int p = -1;
    for (int i = 0; i < AT_CMP_NPROVIDERS; i++)
      if (strcmp(tok, PROVIDERS[i]) == 0) p = i;
    if (p < 0)
      rc = at_fail(AT_ERR_INPUT, "--providers: unknown provider '%s' (known: autotune, cublaslt)", tok);
    else if (use[p])
      rc = at_fail(AT_ERR_INPUT, "--providers: '%s' is listed twice", tok);
    else
      use[p] = 1, n++;
  }
  free(copy);
  if (rc == AT_OK && n == 0) rc = at_fail(AT_ERR_INPUT, "--providers: empty list (known: autotune, cublaslt)");
  return rc;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {{"providers", required_argument, 0, 'p'}, {"db", required_argument, 0, 'd'},
                                       {"configs", required_argument, 0, 'c'},   {"shapes", required_argument, 0, 's'},
                                       {"json", required_argument, 0, 'j'},      {"gpu", required_argument, 0, 'g'},
                                       {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  for (int i = 0; i < AT_CMP_NPROVIDERS; i++) o->use[i] = 1;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'p': AT_TRY(parse_providers(optarg, o->use)); break;
    case 'd': o->db = optarg; break;
    case 'c': o->configs = optarg; break;
    case 's': o->shapes = optarg; break;
    case 'j': o->json = optarg; break;
    case 'g': {
      int64_t g;
      if (at_parse_i64(optarg, &g) != 0 || g < 0 || g > 1024)
        return at_fail(AT_ERR_INPUT, "--gpu: expects a GPU index (0, 1, ...), got '%s'", optarg);
      o->gpu = (int)g;
      break;
    }
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
  if (!o->db) {
    const char *env = getenv("AUTOTUNE_DB");
    const char *d = env && *env ? env : "tuned/autotune.db";
    if (at_file_exists(d)) o->db = d;
  }
  if (!o->configs && is_dir("configs")) o->configs = "configs";
  return AT_OK;
}

/* ---- one shape on the worker ------------------------------------------------------------------ */

typedef struct run {
  const options *o;
  const at_space *space;
  const at_shape *shapes;
  size_t nshapes;
  at_worker w;
  at_device_info dev;
  char arch[16];
  at_peak_reply peak;
  int have_peak;
  at_compare_reply *reps; /* one per shape */
} run;

static const char *provider_name(int p) { return p >= 0 && p < AT_CMP_NPROVIDERS ? PROVIDERS[p] : "-"; }

static int start_worker(run *R) {
  AT_TRY(at_worker_start_mode(R->o->gpu, "--compare", &R->w));
  R->dev = R->w.info;
  at_arch_for_cc(R->dev.cc, R->arch);
  if (R->have_peak) return AT_OK;
  void *p = NULL;
  size_t len = 0;
  int rc = at_worker_call(&R->w, AT_MSG_PEAK, NULL, 0, NULL, 0, 300.0, AT_MSG_PEAK_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the compare worker %s measuring the peak rates (%s)", R->o->gpu,
                   rc == AT_PROTO_TIMEOUT ? "hung" : "died", R->w.exit_reason);
  AT_TRY(rc);
  memcpy(&R->peak, p, len < sizeof R->peak ? len : sizeof R->peak);
  free(p);
  R->have_peak = 1;
  return AT_OK;
}

/* Marks every provider asked for without a result, after the worker was lost on `at`. */
static void worker_lost(run *R, at_compare_reply *rep, const at_compare_step *at, const char *how) {
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
    at_compare_result *r = &rep->r[p];
    if (!R->o->use[p]) continue;
    snprintf(r->status, sizeof r->status, "%s", p == at->provider ? "fault" : "error");
    if (p == at->provider)
      snprintf(r->message, sizeof r->message, "the compare worker %s during its %s", how, at->what);
    else
      snprintf(r->message, sizeof r->message, "no result: the compare worker %s during %s's %s", how,
               at->provider < 0 ? "the shape" : provider_name(at->provider), at->provider < 0 ? "setup" : at->what);
  }
}

static int compare_shape(run *R, size_t i) {
  const at_space *s = R->space;
  const at_shape *sh = &R->shapes[i];
  at_compare_reply *rep = &R->reps[i];
  memset(rep, 0, sizeof *rep);
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) rep->r[p].check_ratio = rep->r[p].max_abs_err = -1;
  if (!at_worker_alive(&R->w)) AT_TRY(start_worker(R));

  at_compare_req *q = at_xcalloc(1, sizeof *q);
  snprintf(q->shape.op, sizeof q->shape.op, "%s", s->op_name);
  q->shape.m = sh->m, q->shape.n = sh->n, q->shape.k = sh->k;
  q->shape.seed = s->seed;
  q->shape.l2_multiple = s->timing.l2_multiple;
  q->shape.warmup = s->timing.warmup;
  q->shape.samples = s->timing.retime_samples; /* a side-by-side timing, like the tuner's re-timing */
  q->shape.atol = s->atol, q->shape.rtol = s->rtol, q->shape.gamma = s->gamma;
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) q->use[p] = R->o->use[p];
  snprintf(q->db_path, sizeof q->db_path, "%s", R->o->db ? R->o->db : "");
  snprintf(q->configs_dir, sizeof q->configs_dir, "%s", R->o->configs ? R->o->configs : "");
  snprintf(q->tag, sizeof q->tag, "%s", s->tag);
  int rc = at_msg_send(R->w.to_fd, AT_MSG_COMPARE, q, sizeof *q);
  free(q);

  at_compare_step at = {-1, "setup"};
  const char *how = NULL;
  char why[200];
  while (rc == AT_OK) {
    uint32_t type = 0;
    void *p = NULL;
    size_t len = 0;
    rc = at_msg_recv(R->w.from_fd, STEP_TIMEOUT_S, &type, &p, &len);
    if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF) break;
    if (rc) return rc;
    if (type == AT_MSG_COMPARE_STEP && len == sizeof at) {
      memcpy(&at, p, sizeof at);
      at.what[sizeof at.what - 1] = 0;
    } else if (type == AT_MSG_COMPARE_REPLY && len == sizeof *rep) {
      memcpy(rep, p, sizeof *rep);
      free(p);
      if (rep->sticky) at_worker_kill(&R->w); /* it exits after a fault; reap it */
      return AT_OK;
    } else {
      rc = at_fail(AT_ERR_RUNTIME, "GPU %d: the compare worker answered M=%lld N=%lld K=%lld with %s", R->o->gpu,
                   (long long)sh->m, (long long)sh->n, (long long)sh->k,
                   type == AT_MSG_ERROR ? (const char *)p : "a message of the wrong kind");
      free(p);
      at_worker_kill(&R->w);
      return rc;
    }
    free(p);
  }
  /* The worker died or hung: say where, and go on with a new one for the next shape. */
  if (rc == AT_PROTO_TIMEOUT) {
    snprintf(why, sizeof why, "hung (no word for %d s)", STEP_TIMEOUT_S);
    at_worker_kill(&R->w);
  } else {
    at_worker_kill(&R->w); /* already gone: this reaps it and says how */
    snprintf(why, sizeof why, "died (%s)", R->w.exit_reason);
  }
  how = why;
  worker_lost(R, rep, &at, how);
  fprintf(stderr, "autotune: compare: the worker %s on M=%lld N=%lld K=%lld, provider %s, during %s\n", how,
          (long long)sh->m, (long long)sh->n, (long long)sh->k,
          at.provider < 0 ? "(none: the shape's setup)" : provider_name(at.provider), at.what);
  return AT_OK;
}

/* ---- report ----------------------------------------------------------------------------------- */

typedef struct derived {
  double tflops[AT_CMP_NPROVIDERS], roof[AT_CMP_NPROVIDERS];
  double ratio; /* autotune / cublaslt time; 0 when either is missing */
} derived;

static int is_ok(const at_compare_result *r) { return strcmp(r->status, "ok") == 0 && r->time_us > 0; }

static void derive(const run *R, size_t i, derived *d) {
  memset(d, 0, sizeof *d);
  const at_shape *sh = &R->shapes[i];
  const at_compare_reply *rep = &R->reps[i];
  double flops = R->space->op->flops(sh), bytes = R->space->op->min_bytes(sh);
  double floor_s = 0;
  if (R->peak.fp8_tflops > 0) floor_s = flops / (R->peak.fp8_tflops * 1e12);
  if (R->peak.copy_gbs > 0 && bytes / (R->peak.copy_gbs * 1e9) > floor_s) floor_s = bytes / (R->peak.copy_gbs * 1e9);
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
    if (!is_ok(&rep->r[p])) continue;
    double sec = rep->r[p].time_us * 1e-6;
    d->tflops[p] = flops / sec / 1e12;
    d->roof[p] = floor_s > 0 ? 100.0 * floor_s / sec : 0;
  }
  if (is_ok(&rep->r[AT_CMP_AUTOTUNE]) && is_ok(&rep->r[AT_CMP_CUBLASLT]))
    d->ratio = rep->r[AT_CMP_AUTOTUNE].time_us / rep->r[AT_CMP_CUBLASLT].time_us;
}

static void fmt_ratio(char *out, size_t n, double v) {
  if (v < 0)
    snprintf(out, n, "-");
  else if (isinf(v) || v > 1e30)
    snprintf(out, n, "inf");
  else
    snprintf(out, n, "%.3g", v);
}

static void print_header(const run *R) {
  const options *o = R->o;
  printf("compare: %s, %zu shapes%s%s; GPU %d: %s (%s); peak measured: %.0f TFLOP/s FP8, %.0f GB/s\n",
         R->space->path, R->nshapes, o->shapes ? " from " : "", o->shapes ? o->shapes : "", o->gpu, R->dev.name,
         R->arch, R->peak.fp8_tflops, R->peak.copy_gbs);
  printf("runtime: DB %s, configs %s, tag %s; check: atol %g, rtol %g, gamma %g; %d warm-up + %d samples each,"
         " round-robin, inputs rotated past %g x L2\n",
         o->db ? o->db : "(none)", o->configs ? o->configs : "(none)", R->space->tag, R->space->atol, R->space->rtol,
         R->space->gamma, R->space->timing.warmup, R->space->timing.retime_samples, R->space->timing.l2_multiple);
  printf("%7s %7s %7s", "M", "N", "K");
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++)
    if (o->use[p])
      printf(" %11s %8s %6s %7s", p == AT_CMP_AUTOTUNE ? "autotune us" : "cublaslt us", "TFLOP/s", "roof%", "chk");
  if (o->use[AT_CMP_AUTOTUNE] && o->use[AT_CMP_CUBLASLT]) printf(" %7s", "at/lt");
  if (o->use[AT_CMP_AUTOTUNE]) printf("  runtime config");
  printf("\n");
}

static void print_row(const run *R, size_t i) {
  const options *o = R->o;
  const at_shape *sh = &R->shapes[i];
  const at_compare_reply *rep = &R->reps[i];
  derived d;
  derive(R, i, &d);
  printf("%7lld %7lld %7lld", (long long)sh->m, (long long)sh->n, (long long)sh->k);
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
    if (!o->use[p]) continue;
    const at_compare_result *r = &rep->r[p];
    char chk[16];
    fmt_ratio(chk, sizeof chk, r->check_ratio);
    if (is_ok(r))
      printf(" %11.2f %8.1f %6.1f %7s", r->time_us, d.tflops[p], d.roof[p], chk);
    else
      printf(" %11s %8s %6s %7s", r->status[0] ? r->status : "-", "-", "-", chk);
  }
  if (o->use[AT_CMP_AUTOTUNE] && o->use[AT_CMP_CUBLASLT]) {
    if (d.ratio > 0)
      printf(" %6.2fx", d.ratio);
    else
      printf(" %7s", "-");
  }
  if (o->use[AT_CMP_AUTOTUNE])
    printf("  %s %s %s", rep->source[0] ? rep->source : "-", rep->bucket[0] ? rep->bucket : "", rep->kernel);
  printf("\n");
  fflush(stdout);
}

/* Geometric mean of the time ratio over the shapes whose M is in [lo, hi] and where both answered. */
static double geomean(const run *R, int64_t lo, int64_t hi, int *count) {
  double sum = 0;
  *count = 0;
  for (size_t i = 0; i < R->nshapes; i++) {
    if (R->shapes[i].m < lo || R->shapes[i].m > hi) continue;
    derived d;
    derive(R, i, &d);
    if (d.ratio <= 0) continue;
    sum += log(d.ratio);
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

static void print_summary(const run *R) {
  if (!(R->o->use[AT_CMP_AUTOTUNE] && R->o->use[AT_CMP_CUBLASLT])) return;
  printf("geomean time autotune / cublaslt:");
  for (size_t g = 0; g < AT_ARRAY_LEN(GROUPS); g++) {
    int n;
    double v = geomean(R, GROUPS[g].lo, GROUPS[g].hi, &n);
    if (n)
      printf("%s %s %.3fx (%d shape%s)", g ? ";" : "", GROUPS[g].label, v, n, n == 1 ? "" : "s");
    else
      printf("%s %s - (no shape)", g ? ";" : "", GROUPS[g].label);
  }
  printf("\n");
}

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

static int write_json(const run *R, double seconds) {
  const options *o = R->o;
  const at_space *s = R->space;
  at_buf b = {0};
  at_buf_puts(&b, "{\n  \"space\": ");
  at_buf_json_string(&b, s->path);
  at_buf_puts(&b, ",\n  \"shapes_file\": ");
  json_str_or_null(&b, o->shapes);
  at_buf_printf(&b, ",\n  \"op\": \"%s\",\n  \"tag\": ", s->op_name);
  at_buf_json_string(&b, s->tag);
  at_buf_printf(&b, ",\n  \"gpu\": %d,\n  \"device\": ", o->gpu);
  at_buf_json_string(&b, R->dev.name);
  at_buf_printf(&b, ",\n  \"arch\": \"%s\",\n  \"peak_tflops\": %.1f,\n  \"peak_gbs\": %.1f,\n", R->arch, R->peak.fp8_tflops,
                R->peak.copy_gbs);
  at_buf_puts(&b, "  \"providers\": [");
  for (int p = 0, first = 1; p < AT_CMP_NPROVIDERS; p++)
    if (o->use[p]) at_buf_printf(&b, "%s\"%s\"", first ? "" : ", ", PROVIDERS[p]), first = 0;
  at_buf_puts(&b, "],\n  \"runtime\": {\"db\": ");
  json_str_or_null(&b, o->db);
  at_buf_puts(&b, ", \"configs\": ");
  json_str_or_null(&b, o->configs);
  at_buf_puts(&b, ", \"tag\": ");
  at_buf_json_string(&b, s->tag);
  at_buf_printf(&b, "},\n  \"check\": {\"atol\": %g, \"rtol\": %g, \"gamma\": %g},\n", s->atol, s->rtol, s->gamma);
  at_buf_printf(&b, "  \"timing\": {\"warmup\": %d, \"samples\": %d, \"l2_multiple\": %g, \"seed\": %llu},\n",
                s->timing.warmup, s->timing.retime_samples, s->timing.l2_multiple, (unsigned long long)s->seed);
  at_buf_puts(&b, "  \"shapes\": [");
  for (size_t i = 0; i < R->nshapes; i++) {
    const at_shape *sh = &R->shapes[i];
    const at_compare_reply *rep = &R->reps[i];
    derived d;
    derive(R, i, &d);
    at_buf_printf(&b, "%s\n    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"sets\": %d, \"flops\": %.6g, \"min_bytes\": %.6g",
                  i ? "," : "", (long long)sh->m, (long long)sh->n, (long long)sh->k, rep->sets, s->op->flops(sh),
                  s->op->min_bytes(sh));
    for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
      if (!o->use[p]) continue;
      const at_compare_result *r = &rep->r[p];
      at_buf_printf(&b, ",\n     \"%s\": {\"status\": \"%s\"", PROVIDERS[p], r->status);
      if (is_ok(r))
        at_buf_printf(&b, ", \"time_us\": %.4f, \"time_min_us\": %.4f, \"time_max_us\": %.4f, \"samples\": %d, "
                          "\"tflops\": %.2f, \"roofline_pct\": %.2f",
                      r->time_us, r->time_min_us, r->time_max_us, r->samples, d.tflops[p], d.roof[p]);
      else
        at_buf_puts(&b, ", \"time_us\": null");
      at_buf_puts(&b, ", ");
      json_ratio(&b, "check_ratio", r->check_ratio);
      at_buf_puts(&b, ", ");
      json_ratio(&b, "max_abs_err", r->max_abs_err);
      at_buf_printf(&b, ", \"bad_count\": %lld, \"message\": ", (long long)r->bad_count);
      at_buf_json_string(&b, r->message);
      if (p == AT_CMP_CUBLASLT) {
        at_buf_puts(&b, ", \"name\": ");
        json_str_or_null(&b, rep->vendor_name);
      }
      if (p == AT_CMP_AUTOTUNE) {
        at_buf_puts(&b, ", \"selection\": ");
        if (rep->source[0]) {
          at_buf_puts(&b, "{\"source\": ");
          at_buf_json_string(&b, rep->source);
          at_buf_puts(&b, ", \"path\": ");
          at_buf_json_string(&b, rep->path);
          at_buf_puts(&b, ", \"bucket\": ");
          at_buf_json_string(&b, rep->bucket);
          at_buf_puts(&b, ", \"variant\": ");
          at_buf_json_string(&b, rep->variant);
          at_buf_puts(&b, ", \"params\": ");
          at_buf_json_string(&b, rep->params); /* the canonical JSON text, as a string */
          at_buf_puts(&b, ", \"kernel\": ");
          at_buf_json_string(&b, rep->kernel);
          at_buf_puts(&b, "}");
        } else {
          at_buf_puts(&b, "null");
        }
      }
      at_buf_puts(&b, "}");
    }
    at_buf_puts(&b, ",\n     ");
    json_ratio(&b, "ratio", d.ratio > 0 ? d.ratio : -1);
    at_buf_puts(&b, "}");
  }
  at_buf_puts(&b, "\n  ],\n  \"geomean\": {");
  for (size_t g = 0; g < AT_ARRAY_LEN(GROUPS); g++) {
    int n = 0;
    double v = o->use[AT_CMP_AUTOTUNE] && o->use[AT_CMP_CUBLASLT] ? geomean(R, GROUPS[g].lo, GROUPS[g].hi, &n) : 0;
    at_buf_printf(&b, "%s\"%s\": {", g ? ", " : "", GROUPS[g].key);
    json_ratio(&b, "ratio", n ? v : -1);
    at_buf_printf(&b, ", \"shapes\": %d}", n);
  }
  at_buf_puts(&b, "},\n  \"missing\": [");
  int first = 1;
  for (size_t i = 0; i < R->nshapes; i++)
    for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
      const at_compare_result *r = &R->reps[i].r[p];
      if (!o->use[p] || is_ok(r)) continue;
      at_buf_printf(&b, "%s\n    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"provider\": \"%s\", \"status\": \"%s\", \"message\": ",
                    first ? "" : ",", (long long)R->shapes[i].m, (long long)R->shapes[i].n, (long long)R->shapes[i].k,
                    PROVIDERS[p], r->status);
      at_buf_json_string(&b, r->message);
      at_buf_puts(&b, "}");
      first = 0;
    }
  at_buf_printf(&b, "%s],\n  \"seconds\": %.3f\n}\n", first ? "" : "\n  ", seconds);
  int rc = at_write_file_atomic(o->json, b.data, b.len);
  at_buf_free(&b);
  return rc;
}

/* Every (shape, provider) without a checked time, on stderr; the status that main() turns into
 * exit code 1 when there is one. */
static int report_missing(const run *R) {
  int missing = 0;
  for (size_t i = 0; i < R->nshapes; i++)
    for (int p = 0; p < AT_CMP_NPROVIDERS; p++) {
      const at_compare_result *r = &R->reps[i].r[p];
      if (!R->o->use[p] || is_ok(r)) continue;
      if (!missing++) fprintf(stderr, "no answer:\n");
      fprintf(stderr, "  M=%lld N=%lld K=%lld %s: %s%s%s\n", (long long)R->shapes[i].m, (long long)R->shapes[i].n,
              (long long)R->shapes[i].k, PROVIDERS[p], r->status[0] ? r->status : "not run", r->message[0] ? ": " : "",
              r->message);
    }
  if (!missing) return AT_OK;
  return at_fail(AT_ERR_RUNTIME, "compare: %d (shape, provider) pair%s without a checked time (listed above)", missing,
                 missing == 1 ? "" : "s");
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
  at_device_info *all = NULL;
  int nall = 0;
  char why[512] = "";

  /* Everything the user wrote is checked before any GPU work: bad input is exit 2. */
  if ((rc = at_space_load(o.space, &space))) goto out;
  R.space = space;
  if (strcmp(space->op_name, "gemm_a8w8_blockscale") != 0) {
    rc = at_fail(AT_ERR_INPUT, "compare: op %s has no runtime launch function to compare; compare knows gemm_a8w8_blockscale",
                 space->op_name);
    goto out;
  }
  if ((rc = at_space_use_shapes(space, o.shapes, NULL))) goto out;
  R.shapes = space->shapes;
  R.nshapes = space->nshapes;

  /* The GPUs, through a probe worker. */
  if ((rc = at_probe_devices(&all, &nall, why, sizeof why))) goto out;
  if (nall == 0) {
    rc = at_fail(AT_ERR_RUNTIME, "compare needs a GPU, and there is none here (%s); nothing was run",
                 why[0] ? why : "the driver reports none");
    goto out;
  }
  if (o.gpu >= nall) {
    rc = at_fail(AT_ERR_INPUT, "--gpu: %d is not a GPU index (the driver sees %d GPU%s)", o.gpu, nall,
                 nall == 1 ? "" : "s");
    goto out;
  }
  if (!o.db)
    fprintf(stderr, "autotune: compare: no DB (--db, $AUTOTUNE_DB or tuned/autotune.db): the runtime answers from the"
                    " configs\n");

  R.reps = at_xcalloc(R.nshapes, sizeof *R.reps);
  if ((rc = start_worker(&R))) goto out;
  if (R.peak.note[0]) fprintf(stderr, "autotune: %s\n", R.peak.note);
  print_header(&R);
  for (size_t i = 0; i < R.nshapes && rc == AT_OK; i++) {
    rc = compare_shape(&R, i);
    if (rc == AT_OK) print_row(&R, i);
  }
  at_worker_stop(&R.w);
  if (rc) goto out;
  print_summary(&R);
  if (o.json && (rc = write_json(&R, at_now_s() - t0))) goto out;
  rc = report_missing(&R);

out:
  if (at_worker_alive(&R.w)) at_worker_stop(&R.w);
  free(R.reps);
  free(all);
  at_space_free(space);
  return rc;
}

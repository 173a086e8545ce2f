/* cmd_list.c: `autotune list [options] SPACE.yaml`: what a tuning run of the space would do, without
 * compiling or timing anything: the candidates that survive pruning (with the shapes each one is
 * run on), the pruning counts per constraint and device limit, the shapes, and how many distinct
 * kernels the candidates compile to. Like the enumerate mode of a kernel profiler. Needs no GPU: the device limits are those of --arch. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/compile.h"
#include "../core/enumerate.h"
#include "../core/limits.h"
#include "../core/shapefile.h"
#include "../core/space.h"
#include "../core/util.h"
#include "commands.h"

static const char *USAGE =
    "usage: autotune list [options] SPACE.yaml\n\n"
    "Lists the candidates of a search space that survive pruning, the shapes each one would be timed\n"
    "on, the pruning counts per constraint and device limit, the shapes, and the number of distinct\n"
    "kernels (candidates that differ only in launch parameters share one); compiles nothing.\n\n"
    "options:\n"
    "  --arch ARCH          the target whose limits prune (default sm_90a); no GPU is probed\n"
    "  --max-candidates N   stop with an error past N survivors (default 100000)\n"
    "  --json FILE          also write everything as JSON (- for stdout, then nothing else is printed)\n"
    "  --shapes FILE        these shapes instead of the space's (CSV with M,N,K, or YAML groups)\n"
    "  --only NAME,...      only the shape groups of these names (and those under them, NAME/...)\n";

typedef struct options {
  const char *arch, *json, *space, *shapes, *only;
  int64_t max_candidates;
} options;

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {{"arch", required_argument, 0, 'a'},
                                       {"max-candidates", required_argument, 0, 'm'},
                                       {"json", required_argument, 0, 'j'},
                                       {"shapes", required_argument, 0, 's'},
                                       {"only", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->arch = "sm_90a";
  o->max_candidates = AT_DEFAULT_MAX_CANDIDATES;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'a': o->arch = optarg; break;
    case 'j': o->json = optarg; break;
    case 's': o->shapes = optarg; break;
    case 'o': o->only = optarg; break;
    case 'm':
      if (at_parse_i64(optarg, &o->max_candidates) != 0 || o->max_candidates < 1)
        return at_fail(AT_ERR_INPUT, "list: --max-candidates expects a positive integer, got '%s'", optarg);
      break;
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "list: option %s needs a value (see --help)", argv[optind - 1]);
    default:
      if (optopt && strncmp(argv[optind - 1], "--", 2) != 0) /* a short one, maybe inside a cluster */
        return at_fail(AT_ERR_INPUT, "list: unknown option '-%c' (see --help)", optopt);
      return at_fail(AT_ERR_INPUT, "list: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return at_fail(AT_ERR_INPUT, "list: expects one SPACE.yaml argument (see --help), got %d", argc - optind);
  o->space = argv[optind];
  return AT_OK;
}

/* The shapes candidate i is run on, as indices into the space's shapes. */
static void shapes_of(const at_enum *e, size_t i, at_buf *b, int json) {
  int first = 1, all = 1;
  for (size_t j = 0; j < e->nshapes; j++) all &= e->shape_ok[i * e->nshapes + j] != 0;
  if (all && !json) {
    at_buf_puts(b, "all");
    return;
  }
  for (size_t j = 0; j < e->nshapes; j++)
    if (e->shape_ok[i * e->nshapes + j]) at_buf_printf(b, "%s%zu", first ? "" : ",", j), first = 0;
}

static void print_text(const at_space *s, const at_enum *e, size_t kernels, const char *arch) {
  printf("%s: op %s, tag %s, target %s\n", s->path, s->op_name, s->tag, arch);
  printf("variants %zu, candidates %lld, pruned %lld, surviving %zu, kernels %zu\n", s->nvariants, (long long)e->total,
         (long long)at_enum_pruned_total(e), e->n, kernels);
  for (size_t i = 0; i < e->npruned; i++) {
    const at_prune_count *p = &e->pruned[i];
    if (p->count)
      printf("  pruned by %s/%s: %lld%s\n", s->variants[p->variant].name, p->rule, (long long)p->count,
             p->per_shape ? " (candidate, shape) pairs" : "");
  }
  printf("shapes %zu:\n", s->nshapes);
  for (size_t j = 0; j < s->nshapes; j++)
    printf("  %zu: M=%lld N=%lld K=%lld%s%s\n", j, (long long)s->shapes[j].m, (long long)s->shapes[j].n,
           (long long)s->shapes[j].k, s->shape_names[j] ? " " : "", s->shape_names[j] ? s->shape_names[j] : "");
  printf("candidates %zu (variant, parameters, kernel, shapes):\n", e->n);
  for (size_t i = 0; i < e->n; i++) {
    at_buf b = {0};
    shapes_of(e, i, &b, 0);
    char *sh = at_buf_steal(&b);
    printf("  %s %s %s shapes %s\n", s->variants[e->c[i].variant].name, e->c[i].params_json, e->c[i].name_expr, sh);
    free(sh);
  }
}

static char *json_of(const at_space *s, const at_enum *e, size_t kernels, const char *arch) {
  at_buf b = {0};
  at_buf_puts(&b, "{\"space\": ");
  at_buf_json_string(&b, s->path);
  at_buf_puts(&b, ", \"op\": ");
  at_buf_json_string(&b, s->op_name);
  at_buf_puts(&b, ", \"tag\": ");
  at_buf_json_string(&b, s->tag);
  at_buf_puts(&b, ", \"arch\": ");
  at_buf_json_string(&b, arch);
  at_buf_printf(&b, ",\n \"total\": %lld, \"pruned\": %lld, \"surviving\": %zu, \"kernels\": %zu,\n \"pruning\": [",
                (long long)e->total, (long long)at_enum_pruned_total(e), e->n, kernels);
  for (size_t i = 0; i < e->npruned; i++) {
    const at_prune_count *p = &e->pruned[i];
    at_buf_puts(&b, i ? ",\n  {\"variant\": " : "\n  {\"variant\": ");
    at_buf_json_string(&b, s->variants[p->variant].name);
    at_buf_puts(&b, ", \"rule\": ");
    at_buf_json_string(&b, p->rule);
    at_buf_printf(&b, ", \"per_shape\": %s, \"count\": %lld}", p->per_shape ? "true" : "false", (long long)p->count);
  }
  at_buf_puts(&b, "],\n \"shapes\": [");
  for (size_t j = 0; j < s->nshapes; j++) {
    at_buf_printf(&b, "%s{\"M\": %lld, \"N\": %lld, \"K\": %lld", j ? ", " : "", (long long)s->shapes[j].m,
                  (long long)s->shapes[j].n, (long long)s->shapes[j].k);
    if (s->shape_names[j]) {
      at_buf_puts(&b, ", \"name\": ");
      at_buf_json_string(&b, s->shape_names[j]);
    }
    at_buf_puts(&b, "}");
  }
  at_buf_puts(&b, "],\n \"candidates\": [");
  for (size_t i = 0; i < e->n; i++) {
    at_buf_puts(&b, i ? ",\n  {\"variant\": " : "\n  {\"variant\": ");
    at_buf_json_string(&b, s->variants[e->c[i].variant].name);
    at_buf_printf(&b, ", \"params\": %s, \"kernel\": ", e->c[i].params_json);
    at_buf_json_string(&b, e->c[i].name_expr);
    at_buf_puts(&b, ", \"shapes\": [");
    shapes_of(e, i, &b, 1);
    at_buf_puts(&b, "]}");
  }
  at_buf_puts(&b, "]}\n");
  return at_buf_steal(&b);
}

/* The distinct kernels the candidates would compile to (candidates that differ only in launch
 * parameters share one), counted as the tuner counts them: by compile key. */
static int count_kernels(const at_space *s, const at_enum *e, const char *arch, size_t *out) {
  at_jit_source **sources = NULL;
  int64_t *variant_ids = NULL;
  int rc = at_compile_prepare(s, &sources, &variant_ids);
  if (rc == AT_OK) {
    at_compiled *res = at_xcalloc(e->n ? e->n : 1, sizeof *res);
    at_jit_options opts = {arch, 0};
    *out = at_compile_kernels(e, sources, &opts, res);
    free(res);
  }
  at_compile_unprepare(s, sources, variant_ids);
  return rc;
}

int cmd_list(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) return AT_OK; /* --help */
  AT_TRY(rc);
  at_limits lim;
  AT_TRY(at_limits_for_arch(o.arch, &lim));
  at_space *space = NULL;
  AT_TRY(at_space_load(o.space, &space));
  at_enum *e = NULL;
  if (o.json && strcmp(o.json, "-") != 0) { /* not over the space, its templates or the shapes */
    const char **in = at_xcalloc(space->nvariants + 3, sizeof *in);
    size_t n = 0;
    in[n++] = o.space;
    if (o.shapes) in[n++] = o.shapes;
    for (size_t v = 0; v < space->nvariants; v++) in[n++] = space->variants[v].template_path;
    rc = at_check_output("--json", o.json, in, 0);
    free(in);
    if (rc) {
      at_space_free(space);
      return rc;
    }
  }
  rc = at_space_use_shapes(space, o.shapes, o.only);
  if (rc == AT_OK) rc = at_enumerate(space, &lim, o.max_candidates, &e);
  size_t kernels = 0;
  if (rc == AT_OK) rc = count_kernels(space, e, o.arch, &kernels);
  if (rc == AT_OK) {
    char *json = o.json ? json_of(space, e, kernels, o.arch) : NULL;
    if (!json || strcmp(o.json, "-") != 0) print_text(space, e, kernels, o.arch);
    if (json && strcmp(o.json, "-") == 0) fputs(json, stdout);
    else if (json && (rc = at_write_file_atomic(o.json, json, strlen(json))))
      rc = at_fail(rc, "list: --json %s: %s", o.json, at_errmsg());
    free(json);
  }
  at_enum_free(e);
  at_space_free(space);
  return rc;
}

/* cmd_query.c: `autotune query`: the configuration the runtime library would launch for a
 * problem, and which source answered (lookup order: core/lookup.h). The shape is checked against
 * the op's rules (a shape the op cannot run has no answer), and a --device that no source knows is
 * said, since its answer can only be the built-in config. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/lookup.h"
#include "../core/util.h"
#include "../ops/gemm_a8w8_blockscale_tail.h"
#include "commands.h"
#include "devicearg.h"

static const char *USAGE =
    "usage: autotune query --op OP -M m -N n -K k [--device D] [--sm-count N] [--tag TAG] [--db PATH]\n"
    "                      [--configs DIR]\n\n"
    "Prints, as JSON, the config chosen for the problem and the source that answered: the DB's\n"
    "results for the exact (N, K), the (N, K) file, the time model with the default file (an (N, K)\n"
    "nobody tuned; predicted for this machine's SM count, the model's own with --device), or the\n"
    "built-in default.\n"
    "\"bucket\" names the entry that answered: M_LEQ_<m>, the smallest tuned M at or above -M (any\n"
    "above the largest), or the seed's bucket of -M where the source has no per-M entries.\n"
    "\"tail\" says how the runtime would split the call (its tail launch), for a GPU of that many SMs.\n\n"
    "  --device D     sm90, or a product name like NVIDIA_H200 (its own files first, then its arch's)\n"
    "                 (default: this machine's GPU; without one, the only device the configs\n"
    "                 directory has files for, or the one arch name among several)\n"
    "  --sm-count N   the GPU's SMs, for the time model and the tail (default: this machine's GPU's;\n"
    "                 with --device and no GPU: the model's own, and no tail)\n"
    "  --db PATH      look in this DB first\n"
    "  --configs DIR  exported files (default configs, when it exists)\n";

static int parse_dim(const char *name, const char *v, int64_t *out) {
  if (at_parse_i64(v, out) != 0 || *out < 1)
    return at_fail(AT_ERR_INPUT, "query: %s expects a positive integer, got '%s'", name, v);
  return AT_OK;
}

/* The problem against the op's rules, naming the argument at fault. */
static int check_problem(const char *op_name, int64_t m, int64_t n, int64_t k) {
  const at_op *op = at_op_find(op_name);
  if (!op) return at_fail(AT_ERR_INPUT, "unknown op '%s' (known: %s)", op_name, at_op_names());
  at_shape s = {m, n, k};
  int dim = 0;
  if (op->check_shape(&s, &dim) == AT_OK) return AT_OK;
  static const char *const ARG[3] = {"-M", "-N", "-K"};
  int64_t v[3] = {m, n, k};
  dim = dim >= 0 && dim < 3 ? dim : 0;
  return at_fail(AT_ERR_INPUT, "query: %s %lld: %s", ARG[dim], (long long)v[dim], at_errmsg());
}

/* The runtime's tail for config c on the shape (docs/runtime.md, "The tail"; the same plan as the
 * runtime's and compare's), as the JSON value of "tail": {"plan": "none" | "last wave" | "padding" |
 * "whole call", ...}, "off" when $AUTOTUNE_TAIL is off, "unknown" without an SM count. */
static void put_tail(at_buf *b, const char *op, const at_config *c, at_source src, const at_shape *s, int sm_count) {
  if (strcmp(op, "gemm_a8w8_blockscale") != 0 || strcmp(c->family, "sm90") != 0) {
    at_buf_puts(b, "{\"plan\": \"none\"}");
    return;
  }
  if (at_tail_env() != 1) {
    at_buf_puts(b, "{\"plan\": \"off\", \"why\": \"AUTOTUNE_TAIL is off\"}");
    return;
  }
  if (sm_count < 1) {
    at_buf_puts(b, "{\"plan\": \"unknown\", \"why\": \"the SM count is not known: give --sm-count\"}");
    return;
  }
  const char *names[AT_MAX_PARAMS];
  const at_params p = at_config_params(c, names);
  at_a8w8_tail t;
  at_a8w8_tail_plan("sm90", &p, s, sm_count, at_source_untuned(src), &t);
  if (!t.split) {
    at_buf_printf(b, "{\"plan\": \"none\", \"sm_count\": %d}", sm_count);
    return;
  }
  const char *plan = at_a8w8_tail_kind(&t);
  int tm = 0, tn = 0;
  at_a8w8_tail_tile(t.tile, &tm, &tn);
  at_buf_printf(b,
                "{\"plan\": \"%s\", \"sm_count\": %d, \"main_units\": %lld, \"main_m\": %lld, \"main_n\": %lld, "
                "\"m0\": %lld, \"n0\": %lld, \"tile\": \"%dx%d\", \"cluster_k\": %d}",
                plan, sm_count, (long long)t.unit_end, (long long)t.main_m, (long long)t.main_n, (long long)t.m0,
                (long long)t.n0, tm, tn, t.cluster_k);
}

int cmd_query(int argc, char **argv) {
  static const struct option LONG[] = {{"op", required_argument, 0, 'o'},     {"device", required_argument, 0, 'D'},
                                       {"tag", required_argument, 0, 't'},    {"db", required_argument, 0, 'd'},
                                       {"configs", required_argument, 0, 'c'}, {"sm-count", required_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  const char *op = NULL, *device = NULL, *tag = NULL, *db_path = NULL, *configs = NULL;
  int64_t m = 0, n = 0, k = 0, sm_arg = 0;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":hM:N:K:", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'o': op = optarg; break;
    case 'D': device = optarg; break;
    case 't': tag = optarg; break;
    case 'd': db_path = optarg; break;
    case 'c': configs = optarg; break;
    case 's':
      if (at_parse_i64(optarg, &sm_arg) != 0 || sm_arg < 1 || sm_arg > 4096)
        return at_fail(AT_ERR_INPUT, "query: --sm-count expects a number of SMs from 1 to 4096, got '%s'", optarg);
      break;
    case 'M': AT_TRY(parse_dim("-M", optarg, &m)); break;
    case 'N': AT_TRY(parse_dim("-N", optarg, &n)); break;
    case 'K': AT_TRY(parse_dim("-K", optarg, &k)); break;
    case 'h': fputs(USAGE, stdout); return AT_OK;
    case ':': return at_fail(AT_ERR_INPUT, "query: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "query: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc) return at_fail(AT_ERR_INPUT, "query: unexpected argument '%s'", argv[optind]);
  if (!op) return at_fail(AT_ERR_INPUT, "query: --op is required (see --help)");
  if (!m || !n || !k) return at_fail(AT_ERR_INPUT, "query: -M, -N and -K are required (see --help)");
  AT_TRY(check_problem(op, m, n, k));
  if (!configs) {
    DIR *d = opendir("configs");
    if (d) closedir(d), configs = "configs";
  }

  at_device_arg dev;
  AT_TRY(at_device_arg_resolve("query", device, configs, 1, &dev));
  if (sm_arg) dev.sm_count = (int)sm_arg;
  const char(*names)[128] = dev.names;
  const int sm_count = dev.sm_count; /* the probed GPU's, for the time model; a named device: the model's own */

  at_store *db = NULL;
  if (db_path && at_store_open_readonly(db_path, &db) != AT_OK)
    fprintf(stderr, "autotune: warning: DB %s unusable (%s); trying the next source\n", db_path, at_errmsg());
  if (device) at_device_arg_warn_unknown("query", device, NULL, db, configs);
  /* As the runtime asks: without its tail, the time model does not compose the tail in. */
  at_lookup_req q = {op, tag, {names[0], names[1][0] ? names[1] : NULL}, n, k, db, configs, NULL, sm_count,
                     at_tail_env() != 1};
  at_lookup_result r;
  int rc = at_lookup(&q, &r);
  at_store_close(db);
  AT_TRY(rc);
  int entry;
  const at_config *c = at_config_for_m(&r.set, m, &entry);
  if (!c) return at_fail(AT_ERR_RUNTIME, "query: %s has no config for M=%lld", r.path, (long long)m);
  char entry_name[32]; /* a bucket, or M_LEQ_<m> */
  at_config_entry_name(&r.set, entry, entry_name, sizeof entry_name);
  char *params = at_config_params_json(c), *expr = at_config_name_expr(c);
  at_buf b = {0};
  at_buf_printf(&b, "{\"op\": \"%s\", \"M\": %lld, \"N\": %lld, \"K\": %lld, \"device\": ", op, (long long)m, (long long)n,
                (long long)k);
  at_buf_json_string(&b, names[0]);
  at_buf_printf(&b, ",\n \"source\": \"%s\", \"path\": ", AT_SOURCE_NAMES[r.source]);
  at_buf_json_string(&b, r.path);
  at_buf_printf(&b, ", \"bucket\": \"%s\",\n \"config\": {\"variant\": ", entry_name);
  at_buf_json_string(&b, c->variant);
  at_buf_puts(&b, ", \"template\": ");
  at_buf_json_string(&b, c->template_name);
  at_buf_printf(&b, ", \"params\": %s},\n \"kernel\": ", params);
  at_buf_json_string(&b, expr);
  const at_shape shape = {m, n, k};
  at_buf_puts(&b, ",\n \"tail\": ");
  put_tail(&b, op, c, r.source, &shape, sm_count);
  at_buf_puts(&b, "}\n");
  fputs(b.data, stdout);
  at_buf_free(&b);
  free(params);
  free(expr);
  return AT_OK;
}

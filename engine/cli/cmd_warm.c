/* cmd_warm.c: `autotune warm`: fills the compile cache, with no GPU needed, with every kernel the
 * runtime library would launch for the calls of the given (N, K) weights at M = 1 .. --m-max: the
 * kernels at_runtime_prepare makes on a GPU, found by the same walk (gemm_a8w8_blockscale_calls.h)
 * over the same answers (lookup.h), compiled as the runtime compiles them (the same templates,
 * options and arch, hence the same compile keys: jit.h). A deployment image built with it serves
 * its first calls without NVRTC.
 *
 * The answers depend on the device (its files, then its arch's) and on its SM count (the time
 * model's picks, the tail plan), and the compile keys on the arch the runtime compiles for there
 * (at_arch_for_cc): all three are this machine's GPU's, or given together (--device, --arch for a
 * product name, --sm-count), never guessed: a cache for the wrong GPU would fill without error and
 * serve nothing. The sources are the runtime's defaults ($AUTOTUNE_CONFIGS, $AUTOTUNE_DB) unless
 * named; a source named that cannot be read is an error, not a fallback to the built-in config. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/cache.h"
#include "../core/device.h"
#include "../core/jit.h"
#include "../core/limits.h"
#include "../core/lookup.h"
#include "../core/pool.h"
#include "../core/progress.h"
#include "../core/shapefile.h"
#include "../core/util.h"
#include "../ops/gemm_a8w8_blockscale_calls.h"
#include "commands.h"
#include "devicearg.h"

static const char *USAGE =
    "usage: autotune warm [--device D] [--arch A] [--sm-count N] [--m-max M] [--tag TAG] [--db PATH]\n"
    "                     [--configs DIR] [--cache DIR] [--jobs J] [--op OP] [--shapes FILE [--only NAMES]]\n"
    "                     [N,K ...]\n\n"
    "Compiles into the compile cache every kernel the runtime library would launch for the calls\n"
    "of each N,K weight at M = 1 .. --m-max (as at_runtime_prepare makes them on a GPU), so that a\n"
    "process using that cache (AUTOTUNE_CACHE) serves its first calls without compiling. Needs no\n"
    "GPU: build it into a deployment image. Prints each kernel: compiled, cached or failed.\n\n"
    "  --device D     the GPU the cache is for, as it looks itself up: a product name like\n"
    "                 NVIDIA_H200 (its files, then its arch's) or an arch name like sm90 (default:\n"
    "                 this machine's GPU; without one, --device is needed)\n"
    "  --arch A       with a product name: the arch the runtime compiles for on it, e.g. sm_90a\n"
    "  --sm-count N   with --device: the GPU's SMs (the time model's picks and the tail depend on\n"
    "                 them; 132 on an H100 SXM or an H200)\n"
    "  --m-max M      the largest M the calls have (default 65536, at most 1048576)\n"
    "  --db PATH      look in this DB first, as the runtime given it does (default $AUTOTUNE_DB)\n"
    "  --configs DIR  exported files (default $AUTOTUNE_CONFIGS, as the runtime's; no default else)\n"
    "  --cache DIR    the compile cache (default $AUTOTUNE_CACHE, else ~/.cache/autotune)\n"
    "  --jobs J       compiles at once (default: the CPUs)\n"
    "  --op OP        the op (default gemm_a8w8_blockscale)\n"
    "  --shapes FILE  also the weights (N, K) of a shape file (CSV or YAML, as tune's --shapes)\n"
    "  --only NAMES   of its groups, these (comma-separated names, NAME/... and wildcards)\n"
    "AUTOTUNE_TAIL=off leaves the tails out, as it does in the runtime. Exit 1 when a kernel does not\n"
    "compile or cannot be stored, 2 on bad arguments.\n";

enum { MAX_M_MAX = 1 << 20 };

/* One kernel to make: a template instantiated. */
typedef struct kernel {
  char *template_name;
  char *name_expr;
  size_t source; /* index into warm.sources */
  at_jit_result res;
  char *error; /* at_jit_compile failed (not a compile error: NVRTC itself), why */
} kernel;

typedef struct warm {
  kernel *k;
  size_t n, cap;
  char **template_names; /* one source per distinct template */
  at_jit_source **sources;
  size_t nsources;
  at_jit_options opts;
  const char *cache_dir;
} warm;

/* The index of config c's kernel in w, added unless it is there already. */
static size_t add_kernel(warm *w, const at_config *c) {
  char *name = at_config_name_expr(c);
  for (size_t i = 0; i < w->n; i++)
    if (strcmp(w->k[i].name_expr, name) == 0 && strcmp(w->k[i].template_name, c->template_name) == 0) {
      free(name);
      return i;
    }
  size_t s = 0;
  while (s < w->nsources && strcmp(w->template_names[s], c->template_name) != 0) s++;
  if (s == w->nsources) {
    w->template_names = at_xrealloc(w->template_names, sizeof *w->template_names * (s + 1));
    w->sources = at_xrealloc(w->sources, sizeof *w->sources * (s + 1));
    w->template_names[s] = at_xstrdup(c->template_name);
    w->sources[s] = NULL;
    w->nsources++;
  }
  if (w->n == w->cap) w->cap = w->cap ? 2 * w->cap : 32, w->k = at_xrealloc(w->k, sizeof *w->k * w->cap);
  w->k[w->n] = (kernel){at_xstrdup(c->template_name), name, s, {0}, NULL};
  return w->n++;
}

/* Everything w holds (a kernel's result and a source are NULL until made: free is fine). */
static void warm_free(warm *w) {
  for (size_t i = 0; i < w->n; i++)
    free(w->k[i].template_name), free(w->k[i].name_expr), free(w->k[i].error), at_jit_result_free(&w->k[i].res);
  for (size_t s = 0; s < w->nsources; s++) free(w->template_names[s]), at_jit_source_free(w->sources[s]);
  free(w->k), free(w->template_names), free(w->sources);
}

static void compile_one(void *ctx, size_t i) {
  warm *w = ctx;
  kernel *k = &w->k[i];
  if (at_jit_compile(w->sources[k->source], k->name_expr, &w->opts, w->cache_dir, &k->res))
    k->error = at_xstrdup(at_errmsg()); /* this thread's message */
}

/* "N,K" with both positive and a shape the op can run at M = 1. */
static int parse_nk(const at_op *op, const char *arg, int64_t *n, int64_t *k) {
  const char *comma = strchr(arg, ',');
  char first[32];
  if (!comma || (size_t)(comma - arg) >= sizeof first)
    return at_fail(AT_ERR_INPUT, "warm: '%s' is not N,K (two positive integers, like 4096,14336)", arg);
  snprintf(first, sizeof first, "%.*s", (int)(comma - arg), arg);
  if (at_parse_i64(first, n) || at_parse_i64(comma + 1, k) || *n < 1 || *k < 1)
    return at_fail(AT_ERR_INPUT, "warm: '%s' is not N,K (two positive integers, like 4096,14336)", arg);
  at_shape s = {1, *n, *k};
  int dim = 0;
  if (op->check_shape(&s, &dim) != AT_OK) return at_fail(AT_ERR_INPUT, "warm: N,K %s: %s", arg, at_errmsg());
  return AT_OK;
}

/* Appends (n, k) to the *count weights in nk unless it is there. */
static void add_nk(int64_t (*nk)[2], int *count, int64_t n, int64_t k) {
  for (int i = 0; i < *count; i++)
    if (nk[i][0] == n && nk[i][1] == k) return;
  nk[*count][0] = n, nk[*count][1] = k, ++*count;
}

/* The GPU the cache is for, into dev and arch (see the top of the file). */
static int target(const char *device, const char *arch_arg, int64_t sm_arg, at_device_arg *dev, char arch[16]) {
  int cc = arch_arg ? at_cc_of_arch(arch_arg) : 0;
  if (arch_arg) {
    at_arch_for_cc(cc, arch);
    if (strcmp(arch, arch_arg) != 0)
      return at_fail(AT_ERR_INPUT, "warm: --arch %s: the runtime compiles for %s on a GPU of that arch; give that",
                     arch_arg, arch);
  }
  if (!device) {
    AT_TRY(at_device_arg_resolve("warm", NULL, NULL, 0, dev));
    if (arch_arg && cc != dev->cc)
      return at_fail(AT_ERR_INPUT, "warm: --arch %s: this machine's GPU (%s) is of compute capability %d.%d", arch_arg,
                     dev->names[0], dev->cc / 10, dev->cc % 10);
    cc = dev->cc;
  } else {
    memset(dev, 0, sizeof *dev);
    snprintf(dev->names[0], sizeof dev->names[0], "%s", device);
    if (at_device_is_arch_name(device)) {
      char *end;
      const long named = strtol(device + 2, &end, 10);
      char probe[16];
      at_arch_for_cc((int)(named > 0 && named < 1000 ? named : 0), probe);
      if (*end || named <= 0 || named >= 1000 || at_cc_of_arch(probe) <= 0)
        return at_fail(AT_ERR_INPUT, "warm: --device %s: not an arch name like sm90", device);
      if (arch_arg && named != cc)
        return at_fail(AT_ERR_INPUT, "warm: --arch %s does not match --device %s", arch_arg, device);
      cc = (int)named;
    } else if (!arch_arg) {
      return at_fail(AT_ERR_INPUT, "warm: --arch is needed with a product name (--device %s): the arch the runtime "
                                   "compiles for on it, e.g. sm_90a",
                     device);
    } else {
      /* Its files, then its arch's, as the runtime on that GPU reads them. */
      snprintf(dev->names[1], sizeof dev->names[1], "sm%d", cc);
    }
    if (!sm_arg)
      return at_fail(AT_ERR_INPUT, "warm: --sm-count is needed with --device: the time model's picks and the tail "
                                   "depend on the GPU's SM count (132 on an H100 SXM or an H200)");
  }
  if (sm_arg) dev->sm_count = (int)sm_arg;
  at_arch_for_cc(cc, arch);
  return AT_OK;
}

/* The kernels of one (N, K)'s calls added to w; prints what answered. */
static int add_weight(warm *w, const at_lookup_req *q, int64_t m_max, int tail) {
  at_lookup_result *r = at_xmalloc(sizeof *r); /* large: per-M configs */
  int rc = at_lookup(q, r);
  at_a8w8_calls calls;
  if (!rc) rc = at_a8w8_calls_walk(&r->set, q->n, q->k, m_max, q->sm_count, at_source_untuned(r->source), tail, &calls);
  if (!rc && r->source == AT_SRC_BUILTIN)
    fprintf(stderr, "autotune: warm: warning: N=%lld K=%lld: no DB or file answers it for %s; its calls take the built-in config\n",
            (long long)q->n, (long long)q->k, q->device_names[0]);
  const size_t before = w->n;
  size_t mine[AT_MAX_ENTRIES * 7]; /* this weight's kernels: an entry's and its tails' */
  int nmine = 0;
  for (int e = 0; !rc && e < AT_MAX_ENTRIES; e++) {
    if (!calls.entry[e]) continue;
    const at_config *c = at_config_entry(&r->set, e);
    mine[nmine++] = add_kernel(w, c);
    for (int t = 0; t < 3; t++)
      for (int ck = 0; ck < 2; ck++) {
        at_config tc;
        if (calls.tail[t][ck][e] && at_a8w8_tail_config(c, t, ck + 1, &tc) == 0) mine[nmine++] = add_kernel(w, &tc);
      }
  }
  int distinct = 0;
  for (int i = 0; i < nmine; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = mine[j] == mine[i];
    distinct += !seen;
  }
  if (!rc)
    printf("N=%lld K=%lld: %d kernels (%zu not among the weights before), from %s %s\n", (long long)q->n,
           (long long)q->k, distinct, w->n - before, AT_SOURCE_NAMES[r->source], r->path);
  free(r);
  return rc;
}

int cmd_warm(int argc, char **argv) {
  static const struct option LONG[] = {
      {"device", required_argument, 0, 'D'}, {"arch", required_argument, 0, 'a'},   {"sm-count", required_argument, 0, 's'},
      {"m-max", required_argument, 0, 'm'},  {"tag", required_argument, 0, 't'},    {"db", required_argument, 0, 'd'},
      {"configs", required_argument, 0, 'c'}, {"cache", required_argument, 0, 'C'}, {"jobs", required_argument, 0, 'j'},
      {"op", required_argument, 0, 'o'},     {"shapes", required_argument, 0, 'S'}, {"only", required_argument, 0, 'O'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
  const char *device = NULL, *arch_arg = NULL, *tag = NULL, *db_path = NULL, *configs = NULL, *cache = NULL;
  const char *op_name = "gemm_a8w8_blockscale", *shapes = NULL, *only = NULL;
  int64_t sm_arg = 0, m_max = 65536, jobs = 0;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'D': device = optarg; break;
    case 'a':
      if (at_cc_of_arch(optarg) < 0)
        return at_fail(AT_ERR_INPUT, "warm: --arch: '%s' is not an architecture like sm_90a", optarg);
      arch_arg = optarg;
      break;
    case 's':
      if (at_parse_i64(optarg, &sm_arg) != 0 || sm_arg < 1 || sm_arg > 4096)
        return at_fail(AT_ERR_INPUT, "warm: --sm-count expects a number of SMs from 1 to 4096, got '%s'", optarg);
      break;
    case 'm':
      if (at_parse_i64(optarg, &m_max) != 0 || m_max < 1 || m_max > MAX_M_MAX)
        return at_fail(AT_ERR_INPUT, "warm: --m-max expects an M from 1 to %d, got '%s'", MAX_M_MAX, optarg);
      break;
    case 'j':
      if (at_parse_i64(optarg, &jobs) != 0 || jobs < 1 || jobs > 1024)
        return at_fail(AT_ERR_INPUT, "warm: --jobs expects a number from 1 to 1024, got '%s'", optarg);
      break;
    case 't': tag = optarg; break;
    case 'd': db_path = optarg; break;
    case 'c': configs = optarg; break;
    case 'C': cache = optarg; break;
    case 'o': op_name = optarg; break;
    case 'S': shapes = optarg; break;
    case 'O': only = optarg; break;
    case 'h': fputs(USAGE, stdout); return AT_OK;
    case ':': return at_fail(AT_ERR_INPUT, "warm: option %s needs a value (see --help)", argv[optind - 1]);
    default:
      if (optopt && strncmp(argv[optind - 1], "--", 2) != 0)
        return at_fail(AT_ERR_INPUT, "warm: unknown option '-%c' (see --help)", optopt);
      return at_fail(AT_ERR_INPUT, "warm: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  const at_op *op = at_op_find(op_name);
  if (!op || strcmp(op_name, "gemm_a8w8_blockscale") != 0)
    return at_fail(AT_ERR_INPUT, "warm: --op: '%s' is not an op the runtime launches (gemm_a8w8_blockscale)", op_name);
  if (only && !shapes) return at_fail(AT_ERR_INPUT, "warm: --only chooses groups of a --shapes file; none given");
  if (cache && !cache[0]) return at_fail(AT_ERR_INPUT, "warm: --cache: the directory is empty (give one, or leave it out)");
  if (configs && !configs[0]) return at_fail(AT_ERR_INPUT, "warm: --configs: the directory is empty (give one, or leave it out)");
  if (optind == argc && !shapes) return at_fail(AT_ERR_INPUT, "warm: no N,K given, nor --shapes (see --help)");
  at_shape_list file = {0};
  if (shapes) {
    AT_TRY(at_shapes_load(shapes, op, &file));
    if (only && at_shapes_select(&file, only, shapes) != AT_OK) return at_shape_list_free(&file), AT_ERR_INPUT;
  }
  /* The weights: the arguments', then the file's, each once. */
  int64_t(*nk)[2] = at_xmalloc(sizeof *nk * ((size_t)(argc - optind) + file.n + 1));
  int nweights = 0, rc = AT_OK;
  for (int i = optind; i < argc && !rc; i++) {
    int64_t n, k;
    if (!(rc = parse_nk(op, argv[i], &n, &k))) add_nk(nk, &nweights, n, k);
  }
  for (size_t i = 0; i < file.n; i++) add_nk(nk, &nweights, file.shapes[i].n, file.shapes[i].k);
  at_shape_list_free(&file);
  const int tail = at_tail_env();
  if (!rc && tail < 0) rc = at_fail(AT_ERR_INPUT, "warm: AUTOTUNE_TAIL must be off or on (got \"%s\")", getenv("AUTOTUNE_TAIL"));
  /* The sources, as the runtime's: named, else its environment variables (no ./configs: the
   * runtime never reads it, and a cache warmed from files it does not read serves nothing). */
  const char *env_configs = getenv("AUTOTUNE_CONFIGS"), *env_db = getenv("AUTOTUNE_DB");
  const int configs_named = configs != NULL, db_named = db_path != NULL;
  if (!configs && env_configs && *env_configs) configs = env_configs;
  if (!db_path && env_db && *env_db) db_path = env_db;
  DIR *d = configs ? opendir(configs) : NULL;
  if (d) closedir(d);
  else if (!rc && configs_named) rc = at_fail(AT_ERR_INPUT, "warm: --configs %s: not a directory that can be read", configs);
  /* (an unreadable $AUTOTUNE_CONFIGS is passed on: the lookup warns and skips it, as the runtime's) */
  at_device_arg dev;
  char arch[16];
  if (!rc) rc = target(device, arch_arg, sm_arg, &dev, arch);
  at_store *db = NULL;
  if (!rc && db_path && at_store_open_readonly(db_path, &db) != AT_OK) {
    if (db_named) rc = at_fail(AT_ERR_INPUT, "warm: --db %s: %s", db_path, at_errmsg());
    else fprintf(stderr, "autotune: warm: warning: $AUTOTUNE_DB %s unusable (%s); trying the next source\n", db_path, at_errmsg());
  }
  if (rc) return free(nk), rc;
  if (device) at_device_arg_warn_unknown("warm", device, dev.names[1][0] ? dev.names[1] : NULL, db, configs);

  /* What the calls launch, weight by weight, as the runtime would look it up. */
  warm w = {0};
  for (int i = 0; i < nweights && !rc; i++) {
    at_lookup_req q = {op_name, tag, {dev.names[0], dev.names[1][0] ? dev.names[1] : NULL}, nk[i][0], nk[i][1], db,
                       configs, NULL, dev.sm_count, !tail};
    rc = add_weight(&w, &q, m_max, tail);
  }
  at_store_close(db);
  free(nk);
  if (rc) return warm_free(&w), rc;
  char *cache_dir = cache ? at_xstrdup(cache) : at_cache_dir();
  printf("warm: %zu kernels for %s (%s, %d SMs%s) up to M = %lld, into %s\n", w.n, dev.names[0], arch, dev.sm_count,
         tail ? "" : ", tails off", (long long)m_max, cache_dir);
  fflush(stdout);

  /* Compiled in threads, each from its template's source (loaded once). */
  for (size_t s = 0; s < w.nsources && !rc; s++) {
    char *path = at_path_join(at_templates_dir(), w.template_names[s]);
    rc = at_jit_source_load(path, at_templates_dir(), &w.sources[s]);
    free(path);
  }
  int failed = 0, compiled = 0, cached = 0;
  double nvrtc_s = 0, t0 = at_now_s();
  if (!rc && w.n) {
    w.opts = (at_jit_options){arch, 0};
    w.cache_dir = cache_dir;
    at_progress *bar = at_progress_start("warm: compiling", (int64_t)w.n);
    at_pool *pool = at_pool_start(jobs ? (int)jobs : at_cpu_count(), w.n, compile_one, &w);
    int64_t done = 0;
    while (at_pool_next_done(pool) >= 0) at_progress_update(bar, ++done, NULL);
    at_pool_join(pool);
    at_progress_finish(bar, NULL);
    for (size_t i = 0; i < w.n; i++) {
      kernel *k = &w.k[i];
      char *why = k->error ? at_xasprintf("NVRTC failed: %s", k->error)
                  : !k->res.ok ? at_jit_first_error(k->res.log)
                  : k->res.cache_unwritable ? at_xasprintf("the cache %s could not store it", cache_dir)
                                            : NULL;
      if (why) {
        printf("  failed    %s: %s\n", k->name_expr, why);
        failed++;
      } else if (k->res.cache_hit) {
        printf("  cached    %s\n", k->name_expr);
        cached++;
      } else {
        printf("  compiled  %s (%.2f s)\n", k->name_expr, k->res.compile_ms / 1e3);
        compiled++;
        nvrtc_s += k->res.compile_ms / 1e3;
      }
      free(why);
    }
  }
  if (!rc)
    printf("warm: %d compiled (%.1f s of NVRTC), %d already cached, %d failed, in %.1f s\n", compiled, nvrtc_s, cached,
           failed, at_now_s() - t0);
  if (!rc && failed) rc = at_fail(AT_ERR_RUNTIME, "warm: %d of %zu kernels failed (listed above)", failed, w.n);
  warm_free(&w);
  free(cache_dir);
  return rc;
}

/* cmd_tune.c: `autotune [tune] [options] SPACE.yaml`: load, enumerate, compile, and (with a GPU)
 * check and time every candidate on every shape, recording everything in the DB.
 *
 * Order matters: everything that can reject the user's input (options, the space, its templates,
 * the enumeration with its constraint arithmetic, an output path that is one of the inputs)
 * happens before the DB is opened, so bad input exits 2 and leaves no trace. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/cache.h"
#include "../core/compile.h"
#include "../core/device.h"
#include "../core/enumerate.h"
#include "../core/shapefile.h"
#include "../core/shard.h"
#include "../core/space.h"
#include "../core/store.h"
#include "../core/tune.h"
#include "../core/util.h"
#include "../core/workerproc.h"
#include "commands.h"
#include "judge.h"
#include "report.h"

static volatile sig_atomic_t g_stop;
/* The first Ctrl-C or SIGTERM stops cleanly (running work finishes, everything is kept); a second
 * one, of either kind, ends the process at once (its workers die with it). Only async-signal-safe
 * calls here. */
static void on_signal(int sig) {
  (void)sig;
  static const char msg[] = "\nautotune: stopping after the work in progress; press Ctrl-C again to quit at once\n";
  g_stop = 1;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  (void)!write(2, msg, sizeof msg - 1);
}

/* After a stop, how long recording the run's end may wait for another writer's lock on the DB. */
enum { FINAL_LOCK_WAIT_S = 10 };

static const char *USAGE =
    "usage: autotune [tune] [options] SPACE.yaml\n\n"
    "Compiles every candidate of the search space with NVRTC, checks each against the reference on the\n"
    "GPU, times it, and records every outcome in the DB. Re-running resumes: finished work is kept.\n\n"
    "options:\n"
    "  --db PATH            the SQLite DB (default $AUTOTUNE_DB, else tuned/autotune.db)\n"
    "  --jobs N, -j N       compile threads (default: all cores)\n"
    "  --arch ARCH          compile target, e.g. sm_90a or sm_89 (default: the GPU's, else sm_90a)\n"
    "  --gpus LIST          GPUs to tune on, e.g. 0,1 (default: all of GPU 0's model)\n"
    "  --compile-only       stop after compiling\n"
    "  --fresh              ignore earlier results in the DB: compile (from the compile cache when it\n"
    "                       has the cubin) and time everything again\n"
    "  --no-baselines       do not time the vendor kernel per shape\n"
    "  --no-judge           keep the winners the tuner decided alone: without it, a run that tuned on a GPU\n"
    "                       decides each shape's winner again on its leaders' times as the runtime library\n"
    "                       launches them, the runtime's tail included (`autotune judge`; not with --shard:\n"
    "                       judge the merged DB)\n"
    "  --pch                use NVRTC precompiled headers\n"
    "  --summary-json FILE  also write the summary as JSON (not over an input of the run)\n"
    "  --max-candidates N   refuse a space with more than N candidates after pruning (default 100000)\n"
    "  --shard I/N          only shard I of N (1 <= I <= N): every (candidate, shape) is in one shard,\n"
    "                       dealt by estimated cost from the space alone; give each shard its own --db\n"
    "                       and combine them with `autotune merge` (docs/cluster.md)\n"
    "  --shapes FILE        tune these shapes instead of the space's (CSV with M,N,K, or YAML groups)\n"
    "  --only NAME,...      only the shape groups of these names (and those under them, NAME/...)\n"
    "environment: AUTOTUNE_DB, AUTOTUNE_CACHE (compile cache dir), AUTOTUNE_TEMPLATES, AUTOTUNE_PROGRESS,\n"
    "             AUTOTUNE_DEBUG (a line per outcome), AUTOTUNE_DUMP_PTX (a directory for the PTX of compiles),\n"
    "             AUTOTUNE_WORKER_PROFILE (each worker's seconds per phase, when it ends),\n"
    "             AUTOTUNE_PDL (off: launch candidates without programmatic dependent launch)\n";

typedef struct options {
  const char *db;
  int jobs;
  const char *arch;
  const char *gpus;
  int compile_only, fresh, pch, no_baselines, no_judge;
  const char *summary_json;
  int64_t max_candidates;
  at_shard shard; /* count 0: the whole space */
  const char *shapes, *only; /* --shapes FILE, --only NAMES (core/shapefile.h) */
  const char *space;
} options;

static int parse_int_opt(const char *name, const char *v, int lo, int hi, int *out) {
  int64_t x;
  if (at_parse_i64(v, &x) != 0 || x < lo || x > hi)
    return at_fail(AT_ERR_INPUT, "%s: expects an integer from %d to %d, got '%s'", name, lo, hi, v);
  *out = (int)x;
  return AT_OK;
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {
      {"db", required_argument, 0, 'd'},      {"jobs", required_argument, 0, 'j'},
      {"arch", required_argument, 0, 'a'},    {"gpus", required_argument, 0, 'g'},
      {"compile-only", no_argument, 0, 'c'},  {"fresh", no_argument, 0, 'f'},
      {"pch", no_argument, 0, 'p'},           {"no-baselines", no_argument, 0, 'B'},
      {"no-judge", no_argument, 0, 'J'},
      {"summary-json", required_argument, 0, 's'}, {"max-candidates", required_argument, 0, 'm'},
      {"shard", required_argument, 0, 'S'},   {"shapes", required_argument, 0, 'H'},
      {"only", required_argument, 0, 'O'},    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  const char *env_db = getenv("AUTOTUNE_DB");
  o->db = env_db && *env_db ? env_db : "tuned/autotune.db";
  o->jobs = at_cpu_count();
  o->max_candidates = AT_DEFAULT_MAX_CANDIDATES;
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":hj:", LONG, NULL)) != -1) {
    switch (ch) {
    case 'd': o->db = optarg; break;
    case 'j': AT_TRY(parse_int_opt("--jobs", optarg, 1, 1024, &o->jobs)); break;
    case 'a': o->arch = optarg; break;
    case 'g': o->gpus = optarg; break;
    case 'c': o->compile_only = 1; break;
    case 'f': o->fresh = 1; break;
    case 'p': o->pch = 1; break;
    case 'B': o->no_baselines = 1; break;
    case 'J': o->no_judge = 1; break;
    case 's': o->summary_json = optarg; break;
    case 'm':
      if (at_parse_i64(optarg, &o->max_candidates) != 0 || o->max_candidates < 1)
        return at_fail(AT_ERR_INPUT, "--max-candidates: expects a positive integer, got '%s'", optarg);
      break;
    case 'S':
      AT_TRY(at_shard_parse(optarg, &o->shard));
      break;
    case 'H': o->shapes = optarg; break;
    case 'O': o->only = optarg; break;
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "tune: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "tune: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return at_fail(AT_ERR_INPUT, optind >= argc ? "tune: missing SPACE.yaml (see --help)"
                                                : "tune: expected one SPACE.yaml, got more arguments (see --help)");
  o->space = argv[optind];
  if (!o->db[0]) return at_fail(AT_ERR_INPUT, "tune: --db: the path is empty (the results need a DB file)");
  if (at_pdl_env() < 0) return at_fail(AT_ERR_INPUT, "AUTOTUNE_PDL must be off or on (got '%s')", getenv("AUTOTUNE_PDL"));
  if (o->arch) {
    at_limits l;
    AT_TRY(at_limits_for_arch(o->arch, &l));
  }
  return AT_OK;
}

/* --gpus "0,2" -> those devices; all when NULL. */
static int select_gpus(const char *list, const at_device_info *all, int nall, at_device_info **out, int *n) {
  *out = at_xcalloc((size_t)(nall ? nall : 1), sizeof **out);
  *n = 0;
  if (!list) {
    /* All of them, when they are one model; otherwise the first and those like it, said plainly. */
    for (int i = 0; i < nall; i++)
      if (all[i].cc == all[0].cc && strcmp(all[i].name, all[0].name) == 0) (*out)[(*n)++] = all[i];
    if (*n < nall)
      fprintf(stderr, "autotune: tuning on the %d GPU%s like GPU 0 (%s); use --gpus to choose others\n", *n,
              *n == 1 ? "" : "s", all[0].name);
    return AT_OK;
  }
  char *copy = at_xstrdup(list), *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int64_t g;
    if (at_parse_i64(tok, &g) != 0 || g < 0 || g >= nall) {
      free(copy);
      return at_fail(AT_ERR_INPUT, "--gpus: '%s' is not a GPU index (the driver sees %d GPU%s)", tok, nall,
                     nall == 1 ? "" : "s");
    }
    for (int i = 0; i < *n; i++)
      if ((*out)[i].index == g) {
        free(copy);
        return at_fail(AT_ERR_INPUT, "--gpus: GPU %lld is listed twice", (long long)g);
      }
    (*out)[(*n)++] = all[g];
  }
  free(copy);
  if (*n == 0) return at_fail(AT_ERR_INPUT, "--gpus: empty list");
  for (int i = 1; i < *n; i++)
    if ((*out)[i].cc != (*out)[0].cc || strcmp((*out)[i].name, (*out)[0].name) != 0)
      return at_fail(AT_ERR_INPUT, "--gpus: GPUs %d and %d are different models; tune each model in its own run",
                     (*out)[0].index, (*out)[i].index);
  return AT_OK;
}

/* --summary-json must not name a file the run reads or writes: the atomic write would replace the
 * DB (or its journal), the space or a template with a page of JSON. Checked before anything is
 * written, by device and inode where both exist and by canonical path where not (the DB of a first
 * run does not exist yet). */
static int check_output(const options *o, const at_space *space) {
  if (!o->summary_json) return AT_OK;
  const char *files[] = {o->shapes, NULL}; /* and not a directory: before the run, not after (its own */
  AT_TRY(at_check_output("--summary-json", o->summary_json, files, 1)); /* directory is made, as the DB's is) */
  char *inputs[4] = {at_xstrdup(o->db), at_xasprintf("%s-wal", o->db), at_xasprintf("%s-shm", o->db),
                     at_xasprintf("%s-journal", o->db)};
  const char *what = NULL, *path = NULL;
  for (int i = 0; i < 4 && !what; i++)
    if (at_same_file(o->summary_json, inputs[i])) what = i ? "a file of the DB" : "the DB", path = inputs[i];
  if (!what && at_same_file(o->summary_json, space->path)) what = "the search space", path = space->path;
  for (size_t v = 0; v < space->nvariants && !what; v++)
    if (at_same_file(o->summary_json, space->variants[v].template_path))
      what = "a template of the space", path = space->variants[v].template_path;
  int rc = what ? at_fail(AT_ERR_INPUT, "--summary-json %s is %s (%s); the summary would overwrite it", o->summary_json,
                          what, path)
                : AT_OK;
  for (int i = 0; i < 4; i++) free(inputs[i]);
  return rc;
}

/* The judge phase (judge.h): after a GPU phase that finished, each shape's winner decided again on
 * its leaders' times as the runtime launches them, on the first GPU of the run, recorded under the
 * run. Its lines (the shapes whose winner changed or that failed, and the summary) go to *log, which
 * the caller prints after the report. A GPU the judge cannot use is a warning: the tuning is kept,
 * and `autotune judge` can do it later. */
static int judge_phase(const at_space *space, at_store *db, int64_t run_id, int gpu, at_judge_stats *st, char **log) {
  size_t len = 0;
  FILE *f = open_memstream(log, &len);
  if (!f) return at_fail(AT_ERR_RUNTIME, "judge: open_memstream failed");
  at_judge *J = NULL;
  const char *arch;
  int rc = at_judge_open(db, gpu, &J, &arch);
  char err[512] = "";
  if (rc == AT_OK) {
    const at_judge_opts jo = {AT_JUDGE_TOP, AT_JUDGE_WITHIN, 0, 0};
    rc = at_judge_shapes(J, space, run_id, &jo, &g_stop, f, st);
    if (rc) snprintf(err, sizeof err, "%s", at_errmsg()); /* before the worker's stop can say more */
    at_judge_print_summary(f, st);
  } else {
    fprintf(f, "judge: not run (%s); `autotune judge` decides the winners as launched later\n", at_errmsg());
    rc = AT_OK;
  }
  at_judge_close(J);
  fclose(f);
  return rc ? at_fail(rc, "judge: %s", err) : AT_OK;
}

static char *command_line(int argc, char **argv) {
  at_buf b = {0};
  for (int i = 0; i < argc; i++) at_buf_printf(&b, "%s%s", i ? " " : "", argv[i]);
  return at_buf_steal(&b);
}

int cmd_tune(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) return AT_OK; /* --help */
  AT_TRY(rc);
  double t0 = at_now_s();
  /* With stderr or stdout a closed pipe (`autotune ... 2>&1 | true`), a progress line must not kill
   * the run and leave it marked running: writes fail quietly and the work goes on. */
  signal(SIGPIPE, SIG_IGN);

  at_space *space = NULL;
  at_enum *cands = NULL;
  at_device_info *all = NULL, *gpus = NULL;
  int nall = 0, ngpus = 0;
  at_jit_source **sources = NULL;
  int64_t *variant_ids = NULL;
  at_store *db = NULL;
  at_compiled *compiled = NULL;
  at_compile_stats cstats = {0};
  at_tune_stats tstats = {0};
  char *cache_dir = at_cache_dir(), *cmdline = command_line(argc, argv);
  char why[512] = "";
  uint8_t *shapes_on = NULL; /* --shard: the shapes this shard sets up */
  int64_t run_id = 0;
  int have_tune = 0, judged = 0;
  at_judge_stats jst;
  memset(&jst, 0, sizeof jst);
  char *judge_log = NULL, judge_err[512] = "";

  if ((rc = at_space_load(o.space, &space))) goto out;
  if ((rc = at_space_use_shapes(space, o.shapes, o.only))) goto out;
  if ((rc = check_output(&o, space))) goto out;

  /* The GPUs, through a probe worker (the parent itself never touches CUDA). */
  if (!(o.compile_only && o.arch)) {
    if ((rc = at_probe_devices(&all, &nall, why, sizeof why))) goto out;
    if (nall && (rc = select_gpus(o.gpus, all, nall, &gpus, &ngpus))) goto out;
    if (!nall && o.gpus) {
      rc = at_fail(AT_ERR_INPUT, "--gpus: no GPU is available (%s)", why);
      goto out;
    }
  }
  at_limits limits;
  char arch[16];
  if (ngpus) {
    at_device_limits(&gpus[0], &limits);
    snprintf(arch, sizeof arch, "%s", limits.arch);
    if (o.arch && strcmp(o.arch, arch) != 0) { /* (with --compile-only and --arch no GPU is probed) */
      rc = at_fail(AT_ERR_INPUT, "--arch %s does not match GPU %d (%s, %s); timing compiles for the GPU's arch", o.arch,
                   gpus[0].index, gpus[0].name, arch);
      goto out;
    }
  } else {
    snprintf(arch, sizeof arch, "%s", o.arch ? o.arch : "sm_90a");
    if ((rc = at_limits_for_arch(arch, &limits))) goto out;
  }

  if ((rc = at_enumerate(space, &limits, o.max_candidates, &cands))) goto out;
  if (o.shard.count) {
    /* Before compiling: a shard compiles only the candidates it times. */
    at_shard_stats ss;
    shapes_on = at_xcalloc(space->nshapes ? space->nshapes : 1, 1);
    at_shard_apply(space, cands, o.shard, shapes_on, &ss);
    printf("shard %d/%d: %lld of %lld candidates, %lld of %lld (candidate, shape) pairs, %lld of %zu shapes;"
           " %.1f%% of the estimated cost (the largest shard %.1f%%)\n",
           o.shard.index, o.shard.count, (long long)ss.cands_kept, (long long)ss.cands_total, (long long)ss.pairs_kept,
           (long long)ss.pairs_total, (long long)ss.shapes_kept, space->nshapes,
           ss.cost_total ? 100.0 * (double)ss.cost_kept / (double)ss.cost_total : 0.0,
           ss.cost_total ? 100.0 * (double)ss.cost_max / (double)ss.cost_total : 0.0);
    fflush(stdout);
  }
  if ((rc = at_compile_prepare(space, &sources, &variant_ids))) goto out;

  /* From here on the input is known good: the DB is opened and written. */
  if ((rc = at_store_open(o.db, &db))) goto out;
  at_store_set_stop(db, &g_stop); /* a Ctrl-C ends a wait for another writer's lock */
  char shard[32] = "";
  if (o.shard.count) snprintf(shard, sizeof shard, "%d/%d", o.shard.index, o.shard.count);
  at_run_info info = {space->path, space->hash, space->op_name, space->tag, arch, at_nvrtc_version(), cmdline,
                      shard[0] ? shard : NULL};
  if ((rc = at_store_begin_run(db, &info, &run_id))) goto out;
  for (size_t v = 0; v < space->nvariants; v++) {
    const at_variant *var = &space->variants[v];
    if ((rc = at_store_variant(db, space->op_name, var->name, var->family, var->template_path, var->entry, sources[v]->hash,
                               run_id, &variant_ids[v])))
      goto out;
  }
  {
    at_prune_row *rows = at_xcalloc(cands->npruned ? cands->npruned : 1, sizeof *rows);
    for (size_t i = 0; i < cands->npruned; i++)
      rows[i] = (at_prune_row){variant_ids[cands->pruned[i].variant], cands->pruned[i].rule, cands->pruned[i].per_shape,
                               cands->pruned[i].count};
    rc = at_store_put_pruned(db, run_id, rows, (int)cands->npruned);
    free(rows);
    if (rc) goto out;
  }

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  at_compile_job cj = {space, cands, &limits, db, run_id, variant_ids, sources,
                       {arch, o.pch}, cache_dir, o.jobs, o.fresh, &g_stop};
  /* With a GPU, the GPU phase starts first and takes candidates as they compile (core/tune.h). */
  at_tune_job tj = {space, cands, sources, {arch, o.pch}, cache_dir, db, run_id, gpus, ngpus,
                    o.fresh, !o.no_baselines, shapes_on, &g_stop};
  at_tune *tune = NULL;
  if (!g_stop && !o.compile_only && ngpus) {
    if ((rc = at_tune_start(&tj, &tstats, &tune))) goto out;
    have_tune = 1;
    cj.feed = at_tune_feed(tune);
  }
  rc = at_compile_all(&cj, &compiled, &cstats);
  if (tune) {
    int rc2 = at_tune_finish(tune, rc);
    if (rc == AT_OK) rc = rc2;
  }
  /* Only an op the runtime launches, a whole space (a shard's leaders are not the shape's), a run
   * that was not stopped. */
  if (rc == AT_OK && tune && !g_stop && !o.no_judge && !o.shard.count &&
      strcmp(space->op_name, "gemm_a8w8_blockscale") == 0) {
    judged = 1;
    /* A failure of the judge is not the tuning's: the run ends done, the report is printed, and
     * the command then exits 1 with the judge's error. */
    if (judge_phase(space, db, run_id, gpus[0].index, &jst, &judge_log))
      snprintf(judge_err, sizeof judge_err, "%s", at_errmsg());
  }

out:;
  int interrupted = g_stop != 0;
  if (db && run_id) {
    if (interrupted) {
      /* The write that the stop cut short is the interruption, not a failure of the run; the run's
       * end is recorded if the other writer lets go soon, and a second Ctrl-C ends the wait. */
      if (rc && at_store_lock_interrupted(db)) rc = AT_OK;
      at_store_set_stop(db, NULL);
      at_store_set_lock_wait(db, FINAL_LOCK_WAIT_S);
    }
    const char *status = rc ? "failed" : interrupted ? "interrupted" : (o.compile_only || !ngpus) ? "compiled" : "done";
    int rc2 = at_store_end_run(db, run_id, status);
    if (rc2 && interrupted)
      fprintf(stderr, "autotune: warning: %s; the run stays marked running\n", at_errmsg());
    else if (!rc)
      rc = rc2;
  }
  if (cands && compiled && (rc == AT_OK || interrupted)) {
    at_report rep = {space, cands, &cstats, have_tune ? &tstats : NULL, judged ? &jst : NULL, arch, o.db,
                     ngpus ? NULL : (why[0] ? why : "no GPU found"), o.compile_only, interrupted, at_now_s() - t0};
    at_report_print(&rep);
    if (judge_log) fputs(judge_log, stdout);
    if (o.summary_json) {
      char *dir = at_dirname(o.summary_json);
      int rc2 = at_mkdirs(dir);
      free(dir);
      if (rc2 == AT_OK) rc2 = at_report_write_json(&rep, o.summary_json);
      if (!rc) rc = rc2;
    }
  }
  if (interrupted && rc == AT_OK) rc = at_fail(AT_ERR_RUNTIME, "interrupted");
  if (rc == AT_OK && judge_err[0])
    rc = at_fail(AT_ERR_RUNTIME, "%s (the tuning is kept; `autotune judge` can judge again)", judge_err);
  else if (rc == AT_OK && judged && jst.failed)
    rc = at_fail(AT_ERR_RUNTIME, "judge: %d shape%s with a config that has no launched time or was not judged (above)",
                 jst.failed, jst.failed == 1 ? "" : "s");
  free(judge_log);
  at_tune_stats_free(&tstats);
  at_compile_stats_free(&cstats);
  free(compiled);
  at_store_close(db);
  if (space) at_compile_unprepare(space, sources, variant_ids);
  at_enum_free(cands);
  at_space_free(space);
  free(all);
  free(gpus);
  free(shapes_on);
  free(cache_dir);
  free(cmdline);
  return rc;
}

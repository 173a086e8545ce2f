/* cmd_judge.c: `autotune judge SPACE.yaml`: the tuned shapes' winners decided again on their times as
 * the runtime library launches them (judge.h says how and why). Docs: docs/usage.md, "autotune
 * judge". Bad input is exit 2 before the DB is opened; the judgement is recorded as a run of its own
 * (runs.command "autotune judge ..."), done, failed or interrupted. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/jit.h"
#include "../core/shapefile.h"
#include "../core/space.h"
#include "../core/store.h"
#include "../core/util.h"
#include "commands.h"
#include "compare_session.h"
#include "judge.h"

static const char *USAGE =
    "usage: autotune judge SPACE.yaml [--db PATH] [--top N] [--within X] [--shapes FILE] [--only NAME,...]\n"
    "                      [--gpu N] [--warmup N] [--samples N] [--dry-run]\n\n"
    "Decides each tuned shape's winner again on launched times: the shape's fastest checked candidates\n"
    "in the DB and its recorded winner, each launched through the runtime library as a user's call is\n"
    "(the runtime's tail included), checked against the cuBLAS reference and timed side by side in one\n"
    "process. A candidate at most 0.99x the winner's launched time becomes the winner (winners.basis\n"
    "'launched'); every launched time is kept in the DB (table launches). export, query and the runtime\n"
    "follow the new winners. Shapes the DB has no results for are skipped, and said. Exit status 1 when a\n"
    "config fails its check or cannot be timed as launched, or a shape cannot be judged (all listed).\n\n"
    "options:\n"
    "  --db PATH         the tuned DB (default $AUTOTUNE_DB, else tuned/autotune.db)\n"
    "  --top N           the fastest N candidates of each shape (2 to 8, default 8), the winner among them\n"
    "  --within X        only candidates at most X times the fastest one's time alone (default 1.30)\n"
    "  --shapes FILE     these shapes instead of the space's (CSV M,N,K or YAML shape groups)\n"
    "  --only NAME,...   only the shape groups of these names\n"
    "  --gpu N           the GPU to run on (default 0); the DB must have results of its model\n"
    "  --warmup N        warm-up replays per config (default: the space's timing.warmup)\n"
    "  --samples N       timed replays per config, round-robin (default: the space's timing.retime_samples)\n"
    "  --dry-run         measure and print, write nothing (the DB is opened read-only)\n";

typedef struct options {
  const char *space, *db, *shapes, *only;
  int64_t top, warmup, samples;
  double within;
  int gpu, dry_run;
} options;

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option LONG[] = {{"db", required_argument, 0, 'd'},     {"top", required_argument, 0, 't'},
                                       {"within", required_argument, 0, 'w'}, {"shapes", required_argument, 0, 's'},
                                       {"only", required_argument, 0, 'o'},   {"gpu", required_argument, 0, 'g'},
                                       {"warmup", required_argument, 0, 'W'}, {"samples", required_argument, 0, 'S'},
                                       {"dry-run", no_argument, 0, 'n'},      {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->top = AT_JUDGE_TOP;
  o->within = AT_JUDGE_WITHIN;
  o->warmup = o->samples = -1;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    char *end = NULL;
    switch (ch) {
    case 'd': o->db = optarg; break;
    case 's': o->shapes = optarg; break;
    case 'o': o->only = optarg; break;
    case 'g': AT_TRY(cmp_parse_gpu(optarg, &o->gpu)); break;
    case 'n': o->dry_run = 1; break;
    case 't':
      if (at_parse_i64(optarg, &o->top) || o->top < 2 || o->top > AT_CMP_MAX_JUDGED)
        return at_fail(AT_ERR_INPUT, "judge: --top expects an integer from 2 to %d, got '%s'", AT_CMP_MAX_JUDGED, optarg);
      break;
    case 'w':
      errno = 0;
      o->within = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(o->within >= 1.0 && o->within <= 10.0))
        return at_fail(AT_ERR_INPUT, "judge: --within expects a number from 1 to 10, got '%s'", optarg);
      break;
    case 'W':
      if (at_parse_i64(optarg, &o->warmup) || o->warmup < 0 || o->warmup > 100000)
        return at_fail(AT_ERR_INPUT, "judge: --warmup expects an integer from 0 to 100000, got '%s'", optarg);
      break;
    case 'S':
      if (at_parse_i64(optarg, &o->samples) || o->samples < 3 || o->samples > 100000)
        return at_fail(AT_ERR_INPUT, "judge: --samples expects an integer from 3 to 100000, got '%s'", optarg);
      break;
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "judge: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "judge: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc - 1)
    return at_fail(AT_ERR_INPUT, optind >= argc ? "judge: missing SPACE.yaml (see --help)"
                                                : "judge: expected one SPACE.yaml, got more arguments (see --help)");
  o->space = argv[optind];
  if (!o->db) {
    const char *env = getenv("AUTOTUNE_DB");
    o->db = env && *env ? env : "tuned/autotune.db";
  }
  if (!at_file_exists(o->db)) return at_fail(AT_ERR_INPUT, "--db: %s: no such DB (judge decides a tuned DB's winners)", o->db);
  return AT_OK;
}

static char *command_line(int argc, char **argv) {
  at_buf b = {0};
  at_buf_puts(&b, "autotune");
  for (int i = 0; i < argc; i++) at_buf_printf(&b, " %s", argv[i]);
  return at_buf_steal(&b);
}

int cmd_judge(int argc, char **argv) {
  options o;
  int rc = parse_options(argc, argv, &o);
  if (rc == -1) return AT_OK; /* --help */
  AT_TRY(rc);
  signal(SIGPIPE, SIG_IGN);
  at_space *space = NULL;
  at_store *db = NULL, *ro = NULL; /* ro: the read-only handle the device is found with */
  at_judge *J = NULL;
  int64_t run_id = 0;
  at_judge_stats st;
  memset(&st, 0, sizeof st);
  char *cmdline = command_line(argc, argv);
  if ((rc = at_space_load(o.space, &space))) goto out;
  if (o.warmup >= 0) space->timing.warmup = (int)o.warmup;
  if (o.samples >= 0) space->timing.retime_samples = (int)o.samples;
  if (strcmp(space->op_name, "gemm_a8w8_blockscale") != 0) {
    rc = at_fail(AT_ERR_INPUT, "judge: op %s has no runtime launch function; judge knows gemm_a8w8_blockscale",
                 space->op_name);
    goto out;
  }
  if ((rc = at_space_use_shapes(space, o.shapes, o.only))) goto out;
  if ((rc = cmp_session_probe("judge", o.gpu))) goto out;
  /* Read-only until the DB is known to hold this GPU's model: an input error migrates nothing. */
  if ((rc = at_store_open_readonly(o.db, &ro))) {
    if (rc == AT_ERR_RUNTIME) rc = at_fail(AT_ERR_INPUT, "--db: %s", at_errmsg());
    goto out;
  }
  const char *arch;
  if ((rc = at_judge_open(ro, o.gpu, &J, &arch))) goto out;
  if (o.dry_run) {
    db = ro, ro = NULL;
  } else {
    if ((rc = at_store_open(o.db, &db))) goto out;
    at_judge_use_db(J, db);
    at_store_close(ro);
    ro = NULL;
  }
  if (!o.dry_run) {
    at_store_set_stop(db, &g_stop); /* a Ctrl-C ends a wait for another writer's lock */
    at_run_info info = {space->path, space->hash, space->op_name, space->tag, arch, at_nvrtc_version(), cmdline, NULL};
    if ((rc = at_store_begin_run(db, &info, &run_id))) goto out;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  printf("judge: %s on GPU %d, %zu shapes, up to %lld configs each within %.2fx of the fastest alone%s\n", o.db, o.gpu,
         space->nshapes, (long long)o.top, o.within, o.dry_run ? "; dry run: nothing written" : "");
  fflush(stdout);
  at_judge_opts jo = {(int)o.top, o.within, o.dry_run, 1};
  rc = at_judge_shapes(J, space, run_id, &jo, &g_stop, stdout, &st);
  at_judge_print_summary(stdout, &st);
  if (rc == AT_OK && g_stop) rc = at_fail(AT_ERR_RUNTIME, "judge: interrupted; the shapes judged before it are kept");
  if (rc == AT_OK && st.failed)
    rc = at_fail(AT_ERR_RUNTIME, "judge: %d shape%s with a config that has no launched time or was not judged (above)",
                 st.failed, st.failed == 1 ? "" : "s");
  if (run_id > 0) {
    at_store_set_stop(db, NULL); /* the run's end is recorded even after a Ctrl-C, waiting a little */
    at_store_set_lock_wait(db, 10);
    int rc2 = at_store_end_run(db, run_id, g_stop ? "interrupted" : rc ? "failed" : "done");
    if (rc == AT_OK) rc = rc2;
  }
out:
  at_judge_close(J);
  at_store_close(ro);
  at_store_close(db);
  at_space_free(space);
  free(cmdline);
  return rc;
}

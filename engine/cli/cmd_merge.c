/* cmd_merge.c: `autotune merge --db OUT IN.db...`: combines tuning DBs of one device model (the
 * shards of a space tuned on several nodes, docs/cluster.md) into OUT, created when missing. The
 * rules are store_merge.h's; this file owns the options and what is said to the user.
 *
 * Order matters as in tune: every input is checked before OUT is opened, so a refused merge leaves
 * no trace, and a merge that fails later leaves OUT as it was (one transaction; an OUT that this
 * command created is removed). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/store.h"
#include "../core/store_merge.h"
#include "../core/util.h"
#include "commands.h"

static const char *USAGE =
    "usage: autotune merge --db OUT [--force] IN.db...\n\n"
    "Merges tuning DBs (e.g. the shards of `autotune SPACE --shard I/N`) into OUT, created when missing.\n"
    "Rows are matched by content; a result measured more than once keeps its newest measurement and\n"
    "the run it came from; the winner of each shape is chosen again (the lowest re-timed time among\n"
    "the inputs' winners). Merging is order-independent and idempotent.\n\n"
    "options:\n"
    "  --db OUT    the merged DB (required)\n"
    "  --force     merge DBs of different device models or toolchains, or of an older schema version\n";

static void remove_db(const char *path) {
  static const char *const SUFFIX[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof SUFFIX / sizeof SUFFIX[0]; i++) {
    char *p = at_xasprintf("%s%s", path, SUFFIX[i]);
    unlink(p);
    free(p);
  }
}

int cmd_merge(int argc, char **argv) {
  static const struct option LONG[] = {
      {"db", required_argument, 0, 'd'}, {"force", no_argument, 0, 'f'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
  const char *out_path = NULL;
  int force = 0, ch;
  optind = 1;
  opterr = 0;
  while ((ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (ch) {
    case 'd': out_path = optarg; break;
    case 'f': force = 1; break;
    case 'h': fputs(USAGE, stdout); return AT_OK;
    case ':': return at_fail(AT_ERR_INPUT, "merge: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "merge: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (!out_path || !out_path[0]) return at_fail(AT_ERR_INPUT, "merge: --db OUT is required (see --help)");
  if (optind >= argc) return at_fail(AT_ERR_INPUT, "merge: no input DB (see --help)");
  const char *const *inputs = (const char *const *)argv + optind;
  size_t n = (size_t)(argc - optind);
  for (size_t i = 0; i < n; i++)
    if (!at_file_exists(inputs[i])) return at_fail(AT_ERR_INPUT, "merge: %s: no such DB", inputs[i]);
  struct stat sb; /* OUT is a DB file or nothing yet: a failed merge removes what it created, nothing else */
  if (stat(out_path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return at_fail(AT_ERR_INPUT, "merge: --db %s exists and is not a file (a DB is written there)", out_path);
  AT_TRY(at_merge_check(out_path, inputs, n, force));

  int created = lstat(out_path, &sb) != 0 && errno == ENOENT;
  at_store *out = NULL;
  at_merge_stats st;
  int rc = at_store_open(out_path, &out);
  if (rc == AT_OK) rc = at_merge(out, inputs, n, &st);
  if (rc == AT_OK) {
    printf("merged %zu DB%s into %s\n", n, n == 1 ? "" : "s", out_path);
    printf("  runs: %lld (%lld new)\n", (long long)st.runs_total, (long long)st.runs_added);
    printf("  candidates: %lld (%lld new)\n", (long long)st.candidates_total, (long long)st.candidates_added);
    printf("  results: %lld (%lld new, %lld replaced by a newer measurement)\n", (long long)st.results_total,
           (long long)st.results_added, (long long)st.results_replaced);
    if (st.results_remeasured)
      printf("  %lld (candidate, shape) measured in more than one run, %lld of them with different outcomes:"
             " the newest kept\n",
             (long long)st.results_remeasured, (long long)st.results_disagree);
    printf("  winners: %lld shape%s decided\n", (long long)st.winners_total, st.winners_total == 1 ? "" : "s");
    if (st.winners_dropped)
      printf("  %lld winner%s dropped: no input's winner of the shape has a checked result any more\n",
             (long long)st.winners_dropped, st.winners_dropped == 1 ? "" : "s");
    if (st.undecided)
      printf("  warning: %lld shape%s have checked results but no winner: a shard stopped before deciding them;"
             " re-run it and merge again\n",
             (long long)st.undecided, st.undecided == 1 ? "" : "s");
    rc = at_merge_report_shards(out, stdout);
    fflush(stdout);
  }
  at_store_close(out);
  if (rc && created) remove_db(out_path); /* nothing half-written: OUT did not exist before */
  return rc;
}

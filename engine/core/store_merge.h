/* store_merge.h: combining tuning DBs into one (`autotune merge`; docs/cluster.md): the shards of
 * one space tuned on several nodes, or any DBs of one device model.
 *
 * Rows are matched by content, never by row id: devices by (name, arch), runs by their uid,
 * variants by (op, name, family, entry, source hash), candidates by compile key, problems by
 * (op, tag, M, N, K), results by (candidate, problem, device), baselines by (problem, device,
 * name). Where several inputs hold the same row, one is chosen by a rule on its content alone:
 *  - a result measured in more than one run: the newest (as a re-run replaces a result), ties by
 *    run; it keeps its run, and the run lists the DBs it came from (run_sources): provenance;
 *  - a candidate: its first compile; quarantined if any input quarantined it;
 *  - a baseline: the newest run's; a run: its most finished copy; a variant: its latest run;
 *  - the winner of a shape: the tuner's rule, the lowest side-by-side re-timed time, among the
 *    winners the inputs decided whose candidate still has a checked (ok) result, ties by compile key.
 * The output DB's own rows take part like an input's, so merging is order-independent and
 * idempotent: merge(A, B) = merge(B, A), and merging again changes nothing.
 *
 * Refused unless force is set (AT_ERR_INPUT, naming the file): a schema version other than this
 * autotune's (a newer one always), a second device model, a second toolchain (compile target or
 * NVRTC version). Every write is one transaction: a failed merge leaves the output as it was. */
#ifndef AT_STORE_MERGE_H
#define AT_STORE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct at_merge_stats {
  int64_t runs_added, runs_total;
  int64_t candidates_added, candidates_total;
  int64_t results_added, results_replaced, results_total;
  int64_t results_remeasured; /* (candidate, problem, device) measured in more than one run */
  int64_t results_disagree;   /* ... with different statuses */
  int64_t winners_total, winners_dropped; /* dropped: no input's winner has a checked result now */
  int64_t undecided;          /* shapes with checked results and no winner (a shard did not finish) */
} at_merge_stats;

/* Checks that the inputs (and out_path, when it exists) can be merged, before anything is written:
 * each is an autotune DB, not out_path itself, of this schema version, one device model and one
 * toolchain (unless force). */
int at_merge_check(const char *out_path, const char *const *inputs, size_t n, int force);

/* Merges the inputs into out (opened for writing). */
int at_merge(at_store *out, const char *const *inputs, size_t n, at_merge_stats *st);

/* One line per shard seen in out's runs ("I/N") with its best status, for the user to see what is
 * missing; writes to f. */
int at_merge_report_shards(at_store *out, void *f);

#endif

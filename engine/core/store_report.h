/* store_report.h: a DB read whole for `autotune report` and `autotune expect record`: every
 * device, problem, candidate, result, winner and baseline, and the pruning counts of the runs. SQL
 * and nothing else (what is made of it is the commands' business).
 *
 * Reads every schema version this autotune reads (AT_STORE_SCHEMA_OLDEST_READ on): a column added
 * after version 1 reads as NULL in an older DB. Numbers that are NULL in the DB read as -1. */
#ifndef AT_STORE_REPORT_H
#define AT_STORE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct at_rep_device {
  int64_t id;
  char name[128], arch[16];
  int cc, sm_count;
  int64_t smem_per_block; /* -1: not recorded */
} at_rep_device;

typedef struct at_rep_problem {
  int64_t id;
  char op[64], tag[64];
  int64_t m, n, k;
} at_rep_problem;

typedef struct at_rep_candidate {
  int64_t id;
  char *variant, *family; /* the variant's name and family */
  char *params;           /* canonical JSON of the parameters */
  char *name_expr;        /* the kernel instantiated */
  int compiled;           /* 0: compile_error */
  int regs, spill_stores, spill_loads, static_smem, stack_bytes;
  int64_t threads, smem_bytes; /* smem_bytes: dynamic, per block */
  int quarantined;
  int current; /* of the version of its variant that the latest run used, and not quarantined: what
                  export trusts (docs/formats.md, "What export trusts") */
} at_rep_candidate;

typedef struct at_rep_result {
  int64_t candidate_id, problem_id, device_id, run_id;
  char status[16];
  double time_us, time_min_us, time_max_us, retime_us;
  double tflops, gbs, roofline_pct, check_ratio, max_abs_err;
  int64_t samples, cut, occupancy, bad_count;
  char *message;
} at_rep_result;

typedef struct at_rep_winner {
  int64_t problem_id, device_id, candidate_id;
  double time_us;     /* alone (winners.time_us) */
  char basis[16];     /* "alone" or "launched" (winners.basis; "alone" before schema 4) */
  double launched_us; /* basis "launched": its checked time as the runtime launches it (launches); else -1 */
} at_rep_winner;

typedef struct at_rep_baseline {
  int64_t problem_id, device_id;
  char name[64];
  double time_us, check_ratio;
} at_rep_baseline;

typedef struct at_rep_pruned {
  int64_t run_id;
  char tag[64], variant[64], rule[64];
  int per_shape;
  int64_t count;
} at_rep_pruned;

typedef struct at_rep_run {
  int64_t id, device_id;
  char tag[64], status[16], started[32];
  double peak_tflops, peak_gbs;
} at_rep_run;

typedef struct at_report_data {
  int schema_version;
  at_rep_device *devices;
  at_rep_problem *problems;
  at_rep_candidate *candidates; /* by id */
  at_rep_result *results;       /* by device, problem, then candidate id */
  at_rep_winner *winners;
  at_rep_baseline *baselines;
  at_rep_pruned *pruned; /* of every run, the latest first */
  at_rep_run *runs;
  size_t ndevices, nproblems, ncandidates, nresults, nwinners, nbaselines, npruned, nruns;
} at_report_data;

int at_store_report_load(at_store *s, at_report_data *out);
void at_report_data_free(at_report_data *d);

/* Lookups by id (binary search: the arrays come sorted by id); NULL when absent. */
const at_rep_candidate *at_rep_candidate_of(const at_report_data *d, int64_t id);
const at_rep_problem *at_rep_problem_of(const at_report_data *d, int64_t id);
const at_rep_device *at_rep_device_of(const at_report_data *d, int64_t id);
const at_rep_winner *at_rep_winner_of(const at_report_data *d, int64_t problem_id, int64_t device_id);

#endif

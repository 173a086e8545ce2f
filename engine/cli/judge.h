/* judge.h: deciding tuned shapes' winners again on their times as the runtime library launches
 * them (`autotune judge`, and the last phase of `autotune tune`). docs/usage.md, "autotune judge".
 *
 * Why: the tuner times every candidate alone, one kernel over the whole call. The runtime launches a
 * call whose last wave of tiles would leave most SMs idle as two launches (the tail,
 * docs/runtime.md), so at mid M a wide tile that loses alone can win as launched (docs/perf.md,
 * "The tuner's winners decided as launched").
 *
 * How: per shape, the DB's checked results of the trusted candidates, fastest first; the first `top`
 * of them within `within` of the fastest, and the recorded winner, each written as a configs
 * directory of one file (the config at that M) and sent to the compare worker as a judged provider
 * (compare_session.h): one process, the same input sets, each checked (poisoned, twice) against the
 * reference and then timed side by side through the runtime's own launch path. A challenger replaces
 * the winner when its launched median is at most AT_JUDGE_GAIN of the winner's.
 *
 * Invariants:
 *  - The tuner's results stay what the tuner measured: launched times go to their own table
 *    (launches), and a shape's launches and its winner are written in one transaction, so a killed
 *    judge leaves every shape either judged or as it was. winners.time_us stays a time alone.
 *  - A winner that fails its check or cannot be timed as launched is never replaced on that
 *    evidence: the shape is left as it was and counted as failed (judge decides between timed configs).
 *  - This process never touches CUDA. */
#ifndef AT_CLI_JUDGE_H
#define AT_CLI_JUDGE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/space.h"
#include "../core/store.h"

/* A challenger replaces the winner at this fraction of its launched time or less: two medians of
 * one side-by-side timing differ by about 0.5% between runs (docs/perf.md), and a change of winner
 * is worth making only where it repeats. */
#define AT_JUDGE_GAIN 0.99

typedef struct at_judge_opts {
  int top;       /* the fastest candidates judged per shape (2 to AT_CMP_MAX_JUDGED), and the winner */
  double within; /* only those at most this times the fastest one's time alone */
  int dry_run;   /* measure, write nothing */
  int all;       /* print every shape's configs; 0: the shapes whose winner changed or failed, and the summary */
} at_judge_opts;

/* Defaults of `autotune judge` and of tune's judge phase. The tail rescues up to a fifth of a call
 * (the tail plan's own estimate at 640 x 7168 x 1024: 0.81x), so a config 20-30% slower alone can
 * win as launched: on the H100 (docs/perf.md, "The tuner's winners decided as launched"), the 8
 * fastest within 1.30x found 25 new winners on 130 shapes at M 576-960 where the 4 within 1.10x
 * found 19, the 14 shapes where the two differ 0.961x the time with the narrower net's (704 x 14336
 * x 8192: 1.08x cuBLASLt's time to 0.93x), none slower; 9 s against 5 for the 130. */
#define AT_JUDGE_TOP 8
#define AT_JUDGE_WITHIN 1.30

typedef struct at_judge_stats {
  int judged;      /* shapes decided (the winner kept or replaced) */
  int changed;     /* of them, a new winner */
  int skipped;     /* no results, or one candidate within `within`: nothing to judge */
  int failed;      /* shapes with a config that has no launched time, or that could not be judged */
  double log_gain; /* sum over the judged shapes of ln(chosen / winner), both launched */
  double seconds;
} at_judge_stats;

typedef struct at_judge at_judge;

/* Starts the compare worker on GPU `gpu` and finds db's row of its model: AT_ERR_INPUT when db has
 * no results of that model, AT_ERR_RUNTIME when the GPU cannot be used. *arch: the device row's
 * arch (e.g. "sm_90a"), valid until at_judge_close. db may be a read-only handle, so that an input
 * error leaves the file as it was; at_judge_use_db then hands over the one to write. */
int at_judge_open(at_store *db, int gpu, at_judge **out, const char **arch);
void at_judge_use_db(at_judge *j, at_store *db);
/* Judges sp's shapes (db opened for writing unless o->dry_run), writing launches and winners under
 * run_id; its lines go to out. Stops between shapes when *stop is set (may be NULL). The shapes'
 * outcomes are in st, also on failure. */
int at_judge_shapes(at_judge *j, const at_space *sp, int64_t run_id, const at_judge_opts *o,
                    volatile sig_atomic_t *stop, FILE *out, at_judge_stats *st);
void at_judge_close(at_judge *j);

/* "judge: 22 shapes judged, 5 winners changed, ..." */
void at_judge_print_summary(FILE *out, const at_judge_stats *st);

#endif

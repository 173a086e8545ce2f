/* timemodel_fit.h: the time model (timemodel.h) of an (op, tag) on a device, fitted on a DB's
 * checked results (first-pass times, the newest version of each template).
 *
 * A config enters the model when it was measured on at least min_share percent of the shapes the
 * DB has for that (op, tag) (and on 10 at least): a model of a config measured only where the
 * tuner's pruning let it run would extrapolate blindly. So the DB to fit from is a menu run, every
 * config of the menu on every shape (scripts/menu_space.py, docs/usage.md).
 *
 * Candidates that differ only in the op's shape parameter (op.h: the sm90 family's SCALE_KB, which
 * a menu sets to K / 128 on each shape) are fitted as one config, stored with the value of the
 * first of them (the lookup sets it for the asked shape, at_config_for_shape); its share counts
 * the shapes that can hold it only. */
#ifndef AT_TIMEMODEL_FIT_H
#define AT_TIMEMODEL_FIT_H

#include "store.h"
#include "timemodel.h"

typedef struct at_tm_fit_stats {
  int shapes, results, dropped; /* dropped: configs measured on too few shapes, or without tiles */
  double regret;                /* geomean over the shapes of picked config's time / best time measured */
  double worst_regret;
  int64_t worst_m, worst_n, worst_k;
} at_tm_fit_stats;

int at_tm_fit_db(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int min_share,
                 at_time_model *out, at_tm_fit_stats *stats);

/* How the model generalises, from the same DB: each (N, K) in turn left out of the fit (its
 * results, and its shapes from the residuals' list), the model fitted on the rest picks for its
 * shapes as the runtime picks for an (N, K) with no file (at_tm_best with the op, without the
 * tail: the times were measured alone), and the pick's measured time is set against the fastest
 * measured there. The in-sample figure of at_tm_fit_db fits the coefficients on the very shape it
 * scores; this one is what a model change should be judged by before the GPU runs it. */
typedef struct at_tm_cv_shape {
  int64_t m, n, k;
  double regret; /* the pick's time / the best time measured */
} at_tm_cv_shape;

typedef struct at_tm_cv_stats {
  int folds;            /* (N, K) left out in turn */
  int unmeasured;       /* shapes where the pick was not measured (not scored) */
  int above_110;        /* shapes whose pick took more than 1.10x the best */
  double regret;        /* geomean over the scored shapes */
  at_tm_cv_shape *shape; /* the scored shapes, worst first (malloc'd) */
  int nshapes, cap;
} at_tm_cv_stats;

int at_tm_cv_db(at_store *db, const at_device_entry *dev, const char *op, const char *tag, int min_share,
                at_tm_cv_stats *cv);

#endif

/* report.h: what `autotune tune` prints at the end of a run, and its --summary-json twin. */
#ifndef AT_REPORT_H
#define AT_REPORT_H

#include "../core/compile.h"
#include "../core/enumerate.h"
#include "../core/space.h"
#include "../core/tune.h"

typedef struct at_report {
  const at_space *space;
  const at_enum *cands;
  const at_compile_stats *compile;
  const at_tune_stats *tune; /* NULL when no GPU phase ran */
  /* the judge phase (judge.h), NULL when none ran; the winners of `tune` are the tuner's, decided alone */
  const struct at_judge_stats *judge;
  const char *arch;
  const char *db_path;
  const char *no_gpu_reason; /* set when timing was skipped for want of a GPU */
  int compile_only;
  int interrupted;
  double seconds;
} at_report;

void at_report_print(const at_report *r);
int at_report_write_json(const at_report *r, const char *path);

#endif

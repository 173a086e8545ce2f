/* progress.h: progress of long work on stderr: a redrawn bar with rate and ETA on a terminal,
 * plain lines at most every few seconds otherwise (logs, CI). AUTOTUNE_PROGRESS=plain forces
 * lines; =none silences it. */
#ifndef AT_PROGRESS_H
#define AT_PROGRESS_H

#include <stdint.h>

typedef struct at_progress at_progress;

at_progress *at_progress_start(const char *label, int64_t total);
/* done of total; extra (may be NULL) is shown after the numbers, e.g. the best time so far. */
void at_progress_update(at_progress *p, int64_t done, const char *extra);
/* The total changes (work found not to be needed, such as the evaluations of a candidate that did
 * not compile); shown at the next update. */
void at_progress_set_total(at_progress *p, int64_t total);
/* Prints a final line and frees. */
void at_progress_finish(at_progress *p, const char *extra);
/* Prints a message line without breaking a bar that is being redrawn. */
void at_progress_note(at_progress *p, const char *msg);

#endif

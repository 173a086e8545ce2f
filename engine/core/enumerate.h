/* enumerate.h: the candidates of a search space: the cartesian product of each variant's
 * parameter values, pruned by the variant's constraints and by the device's limits.
 *
 * Counting rule: a variant whose family the compile target cannot run (the op's
 * family_unsupported) is skipped whole, every point counted under "device_arch (reason)".
 * Otherwise a candidate is counted once, under the first rule that removes it, in this
 * order: the variant's constraints that do not mention M, N or K (in file order), then the device
 * limits on threads and shared memory. Constraints that mention M, N or K are evaluated per shape;
 * they remove (candidate, shape) pairs, counted per constraint separately, and a candidate that no
 * shape keeps is counted under "no_shape". Registers are only known after compiling, so that rule
 * ("device_registers") is applied and counted by the tuner.
 *
 * Memory: points are visited one at a time and only survivors are kept, so a space of 10^8 points
 * that its constraints prune to a few costs what the few cost. The survivors are capped: more than
 * max_candidates is an input error naming the variant and the counts. */
#ifndef AT_ENUMERATE_H
#define AT_ENUMERATE_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"
#include "space.h"

typedef struct at_cand {
  size_t variant;    /* index into space->variants */
  int64_t *table;    /* value table (variant->names order); the M, N, K slots are 0 */
  char *params_json; /* canonical parameters: {"NAME":value,...}, keys sorted */
  char *launch_json; /* the same of its launch parameters alone; NULL when the variant has none */
  char *name_expr;   /* the kernel instantiation, e.g. "kernel<64, 128>": launch parameters left out */
} at_cand;

typedef struct at_prune_count {
  size_t variant;
  char *rule;    /* a constraint name, or device_threads / device_smem / no_shape */
  int per_shape; /* counts (candidate, shape) pairs rather than candidates */
  int64_t count;
} at_prune_count;

typedef struct at_enum {
  at_cand *c;
  size_t n;
  size_t cap;             /* slots allocated in c and shape_ok */
  int64_t total;          /* candidates before pruning, all variants */
  at_prune_count *pruned; /* every rule of every variant, zero counts included */
  size_t npruned;
  size_t nshapes;
  uint8_t *shape_ok; /* shape_ok[i * nshapes + j]: candidate i is to be run on shape j */
} at_enum;

/* The default of --max-candidates. Every survivor is compiled and timed on every shape, so far more
 * than this is almost always a constraint missing from the space, not a plan. */
#define AT_DEFAULT_MAX_CANDIDATES 100000

int at_enumerate(const at_space *s, const at_limits *lim, int64_t max_candidates, at_enum **out);
void at_enum_free(at_enum *e);
/* Frees what one candidate owns (for a caller that drops candidates from an enumeration). */
void at_cand_clear(at_cand *c);

/* Candidates removed before compiling (the per-candidate counts). */
int64_t at_enum_pruned_total(const at_enum *e);

#endif

/* shard.h: one share of a tuning run's work, for spreading one space over several nodes
 * (`autotune SPACE --shard I/N`; docs/cluster.md).
 *
 * The unit of work is a (candidate, shape) pair of the enumeration. Every pair belongs to exactly
 * one of the N shards, decided from the enumeration alone (the space, its shapes and the compile
 * target's limits), never from what a DB holds: the same space and N give the same shards on every
 * node and every re-run, so a shard that is re-run resumes its own work and nobody else's.
 *
 * Balance is by estimated cost, not count (at_shard_pair_cost). Kernels (the candidates of one
 * template instantiation, which differ only in launch parameters and share one compile) are kept
 * whole where they are small against a shard's share, so that a shard compiles only the kernels it
 * times and a kernel is compiled by one shard alone. A kernel whose pairs weigh more than a quarter
 * of a share is dealt by candidate, and such a candidate (a space of few candidates) by shape. Units are dealt largest first to the
 * least loaded shard (LPT), ties to the lower shard, so the deal is a function of the enumeration.
 *
 * A shape that no candidate keeps is still set up once (its reference and vendor baseline are
 * recorded, as an unsharded run does): by shard (j mod N) + 1. */
#ifndef AT_SHARD_H
#define AT_SHARD_H

#include <stdint.h>

#include "enumerate.h"
#include "space.h"

typedef struct at_shard {
  int index; /* 1..count */
  int count; /* 0: not sharded */
} at_shard;

/* "I/N" with 1 <= I <= N; anything else is AT_ERR_INPUT naming --shard. */
int at_shard_parse(const char *text, at_shard *out);

/* The estimated cost of timing one candidate on shape sh, in units of 10^9 FLOPs: a fixed part per
 * evaluation (loading the cubin, the check, the worker's round trip: a few ms whatever the shape,
 * which dominates small shapes) plus the FLOPs of its warm-up and samples. Candidates weigh alike:
 * how fast each is, is what the run is there to find out. */
int64_t at_shard_pair_cost(const at_space *s, const at_shape *sh);

/* The deal: owner[i * e->nshapes + j] = the shard (1..count) of pair (i, j), 0 for a pair the
 * enumeration does not keep; shape_owner[j] = the shard that sets up a shape no candidate keeps, 0
 * for the others. Both allocated by the caller. */
void at_shard_plan(const at_space *s, const at_enum *e, int count, int *owner, int *shape_owner);

typedef struct at_shard_stats {
  int64_t cands_total, cands_kept; /* candidates of the enumeration, and this shard's */
  int64_t pairs_total, pairs_kept;
  int64_t cost_total, cost_kept, cost_max; /* estimated cost: all, this shard's, the largest shard's */
  int64_t shapes_kept;                     /* shapes this shard sets up */
} at_shard_stats;

/* Narrows e to shard sh: pairs of other shards are cleared from shape_ok and candidates left with
 * none are dropped (they are not compiled). shapes_on[j] (nshapes bytes, caller's) is set to 1 for
 * the shapes this shard sets up. */
void at_shard_apply(const at_space *s, at_enum *e, at_shard sh, uint8_t *shapes_on, at_shard_stats *st);

#endif

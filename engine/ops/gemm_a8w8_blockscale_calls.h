/* gemm_a8w8_blockscale_calls.h: the kernels the runtime launches for the calls of one (N, K)
 * weight at M = 1 .. m_max, read off its answer (a config set, lookup.h) the way the launch path
 * reads it: the entry at_config_for_m takes for each M, and the tail config the tail plan adds to
 * it (gemm_a8w8_blockscale_tail.h). One walk for the two users that make these kernels before the
 * calls do: at_runtime_prepare (loads each on the GPU) and `autotune warm` (compiles each into the
 * compile cache, no GPU needed), so that both make exactly what the calls would.
 *
 * The one place they differ is on purpose. The runtime keeps one tail kernel per (tile, CLUSTER_K)
 * of a weight, made from the template of the first call's config that needs it. Prepare makes it
 * first, from the first entry planned on it (which then serves every call); warm cannot know which
 * call comes first, so it compiles the tail from every entry planned on it. The two lists are the
 * same while those entries share a template, as every sm90 config does today. */
#ifndef AT_OPS_GEMM_A8W8_BLOCKSCALE_CALLS_H
#define AT_OPS_GEMM_A8W8_BLOCKSCALE_CALLS_H

#include <stdint.h>

#include "../core/config.h"

typedef struct at_a8w8_calls {
  unsigned char entry[AT_MAX_ENTRIES];      /* 1: some M takes this entry of the set */
  unsigned char tail[3][2][AT_MAX_ENTRIES]; /* 1: a tail of that tile and CLUSTER_K (- 1) is planned on
                                               calls of this entry */
} at_a8w8_calls;

/* Walks M = 1 .. m_max on a GPU of sm_count SMs. tail 0: the runtime's tail is off (no tails).
 * whole: the answer is a guess for an (N, K) nobody tuned (at_source_untuned). AT_ERR_RUNTIME
 * naming the M when the set has no config for it. The SM count cannot be left out: it decides the
 * tail plan here, and the time model's picks in the set already. */
int at_a8w8_calls_walk(const at_config_set *set, int64_t n, int64_t k, int64_t m_max, int sm_count, int whole,
                       int tail, at_a8w8_calls *out);

/* The tail config (tile, CLUSTER_K ck) of a main config: main's template with the tail's entry
 * and parameters. -1 for a tile and ck the tail has no config for. */
int at_a8w8_tail_config(const at_config *main, int tile, int ck, at_config *out);

#endif

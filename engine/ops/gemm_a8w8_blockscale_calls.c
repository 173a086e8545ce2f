/* gemm_a8w8_blockscale_calls.c: see gemm_a8w8_blockscale_calls.h. */
#include "gemm_a8w8_blockscale_calls.h"

#include <stdio.h>
#include <string.h>

#include "../core/util.h"
#include "gemm_a8w8_blockscale_tail.h"

int at_a8w8_calls_walk(const at_config_set *set, int64_t n, int64_t k, int64_t m_max, int sm_count, int whole,
                       int tail, at_a8w8_calls *out) {
  memset(out, 0, sizeof *out);
  const char *names[AT_MAX_PARAMS];
  at_params p = {0};
  for (int64_t m = 1, last = -1; m <= m_max; m++) {
    int entry;
    const at_config *cfg = at_config_for_m(set, m, &entry);
    if (!cfg) return at_fail(AT_ERR_RUNTIME, "no config for M=%lld", (long long)m);
    out->entry[entry] = 1;
    if (!tail) continue;
    if (entry != last) p = at_config_params(cfg, names), last = entry;
    const at_shape shape = {m, n, k};
    at_a8w8_tail t;
    at_a8w8_tail_plan(cfg->family, &p, &shape, sm_count, whole, &t);
    if (t.split) out->tail[t.tile][t.cluster_k - 1][entry] = 1;
  }
  return AT_OK;
}

int at_a8w8_tail_config(const at_config *main, int tile, int ck, at_config *out) {
  char params[256];
  if (at_a8w8_tail_params(tile, ck, params, sizeof params) != 0) return -1;
  *out = *main;
  snprintf(out->entry, sizeof out->entry, "%s", AT_A8W8_TAIL_ENTRY);
  return at_config_set_params(out, params) == AT_OK ? 0 : -1;
}

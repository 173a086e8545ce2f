/* test_enumerate.c: the cartesian product and its pruning counts, on a space whose counts are
 * worked out by hand in its header (test/data/spaces/enum.yaml), and the order and uniqueness of
 * the candidates. */
#include <stdlib.h>
#include <string.h>

#include "core/enumerate.h"
#include "core/util.h"
#include "check.h"

static int64_t count_of(const at_enum *e, const char *rule, int per_shape) {
  for (size_t i = 0; i < e->npruned; i++)
    if (strcmp(e->pruned[i].rule, rule) == 0 && e->pruned[i].per_shape == per_shape) return e->pruned[i].count;
  return -1;
}

int main(void) {
  char *path = at_path_join(getenv("AT_TEST_DATA"), "spaces/enum.yaml");
  at_space *s;
  CHECK_EQ_INT(at_space_load(path, &s), AT_OK);
  if (!s) return check_summary();
  at_limits lim;
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  at_enum *e;
  CHECK_EQ_INT(at_enumerate(s, &lim, &e), AT_OK);
  CHECK_EQ_INT(e->total, 64);
  CHECK_EQ_INT(count_of(e, "even", 0), 8);
  CHECK_EQ_INT(count_of(e, "roomy", 0), 0);
  CHECK_EQ_INT(count_of(e, "device_smem", 0), 4);
  CHECK_EQ_INT(count_of(e, "device_threads", 0), 0);
  CHECK_EQ_INT(count_of(e, "split_rows", 1), 26);
  CHECK_EQ_INT(count_of(e, "no_shape", 0), 0);
  CHECK_EQ_INT(e->n, 52);
  CHECK_EQ_INT(at_enum_pruned_total(e), 12);

  /* Per-shape keep flags: shape 0 (M=32) keeps everything, shape 1 (M=256) no SPLIT_K 2. */
  int kept0 = 0, kept1 = 0;
  for (size_t i = 0; i < e->n; i++) {
    kept0 += e->shape_ok[i * 2];
    kept1 += e->shape_ok[i * 2 + 1];
  }
  CHECK_EQ_INT(kept0, 52);
  CHECK_EQ_INT(kept1, 26);

  /* Candidates are distinct, canonical (sorted keys) and instantiate the entry. */
  for (size_t i = 0; i < e->n; i++)
    for (size_t j = i + 1; j < e->n; j++) CHECK(strcmp(e->c[i].params_json, e->c[j].params_json) != 0);
  CHECK(strncmp(e->c[0].params_json, "{\"BLOCK_K\":128,\"BLOCK_M\":16,", 28) == 0);
  CHECK_CONTAINS(e->c[0].name_expr, "gemm_a8w8_blockscale_mma<16, 64, 128, 1, 2, 2, 1, 1, 0>");

  /* A smaller device: sm_89's 99 KiB removes more for shared memory. */
  at_limits small;
  CHECK_EQ_INT(at_limits_for_arch("sm_89", &small), AT_OK);
  at_enum *e2;
  CHECK_EQ_INT(at_enumerate(s, &small, &e2), AT_OK);
  CHECK(count_of(e2, "device_smem", 0) > 4);
  CHECK_EQ_INT(e2->total, 64);
  CHECK_EQ_INT((int64_t)e2->n + at_enum_pruned_total(e2), 64);

  at_enum_free(e2);
  at_enum_free(e);
  at_space_free(s);
  free(path);
  return check_summary();
}

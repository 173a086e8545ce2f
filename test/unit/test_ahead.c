/* test_ahead.c: the runtime's compiles ahead (engine/runtime/ahead.h), no GPU needed: each distinct
 * kernel compiled once into the cache, in threads, and nothing else; a repeated kernel, a kernel
 * that does not compile and a template that cannot be read are left for the loads that follow;
 * a second pass finds everything in the cache and compiles nothing; a cache that cannot store
 * stores nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/jit.h"
#include "core/util.h"
#include "runtime/ahead.h"
#include "check.h"
#include "proc.h"

static const char *TPL = "gemm_a8w8_blockscale_mma.cuh";
static const char *GOOD = "gemm_a8w8_blockscale_mma<16, 64, 128, 1, 2, 3, 1, 1, 0>";
static const char *GOOD2 = "gemm_a8w8_blockscale_mma<64, 128, 128, 2, 2, 3, 8, 2, 1>";
static const char *BAD = "gemm_a8w8_blockscale_mma<16, 64, 64, 1, 2, 3, 1, 1, 0>"; /* BLOCK_K 64 */

/* The .cubin files under a cache, counted. */
static int cubins(const char *cache) {
  char *cmd = at_xasprintf("find '%s' -name '*.cubin' | wc -l", cache);
  FILE *f = popen(cmd, "r");
  int n = -1;
  if (f && fscanf(f, "%d", &n) != 1) n = -1;
  if (f) pclose(f);
  free(cmd);
  return n;
}

static int cached(const char *cache, const at_jit_source *src, const char *name) {
  char key[65];
  at_jit_key(src, name, &(at_jit_options){"sm_90a", 0}, key);
  at_cache_entry e;
  int damaged = 0;
  int ok = at_cache_get(cache, key, &e, &damaged) == AT_OK;
  if (ok) at_cache_entry_free(&e);
  return ok;
}

int main(void) {
  const char *tdir = getenv("AUTOTUNE_TEMPLATES");
  char *tmp = scratch_dir("ahead"), *cache = at_path_join(tmp, "cache");
  char *tpl = at_path_join(tdir, TPL);
  at_jit_source *src;
  CHECK_EQ_INT(at_jit_source_load(tpl, tdir, &src), AT_OK);

  at_ahead_kernel k[] = {{TPL, at_xstrdup(GOOD)},
                         {TPL, at_xstrdup(BAD)},
                         {"no_such_template.cuh", at_xstrdup(GOOD)},
                         {TPL, at_xstrdup(GOOD2)},
                         {TPL, at_xstrdup(GOOD)}}; /* repeated */
  const size_t n = sizeof k / sizeof k[0];
  CHECK_EQ_INT(at_ahead_compile(k, n, tdir, "sm_90a", cache, 3), 2);
  CHECK_EQ_INT(cubins(cache), 2);
  CHECK(cached(cache, src, GOOD) && cached(cache, src, GOOD2) && !cached(cache, src, BAD));
  /* Again: all in the cache. */
  CHECK_EQ_INT(at_ahead_compile(k, n, tdir, "sm_90a", cache, 3), 0);
  CHECK_EQ_INT(cubins(cache), 2);
  /* No cache: nothing to fill, nothing compiled. */
  CHECK_EQ_INT(at_ahead_compile(k, n, tdir, "sm_90a", NULL, 3), 0);
  /* A cache that cannot store (its directory under a regular file, which stops root too): the
   * first compile that finds so stops the rest, and none counts as stored. */
  char *file = at_path_join(tmp, "a-file"), *under = at_path_join(file, "cache");
  FILE *f = fopen(file, "w");
  CHECK(f != NULL);
  if (f) fclose(f);
  CHECK_EQ_INT(at_ahead_compile(k, n, tdir, "sm_90a", under, 1), 0);
  free(file), free(under);

  for (size_t i = 0; i < n; i++) free(k[i].name_expr);
  at_jit_source_free(src);
  free(tpl), free(cache), free(tmp);
  return check_summary();
}

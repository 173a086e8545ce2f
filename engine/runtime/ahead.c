/* ahead.c: see ahead.h. The threads are the compile phase's pool (core/pool.h): the kernels are its
 * jobs, and the caller, waiting on it, stops it at the first cubin the cache could not store. */
#include "ahead.h"

#include <stdlib.h>
#include <string.h>

#include "../core/jit.h"
#include "../core/pool.h"
#include "../core/util.h"

typedef struct work {
  const at_ahead_kernel *kernels;
  at_jit_source **sources; /* per kernel: its template, loaded once (NULL: unreadable, or the kernel
                              repeats an earlier one) */
  at_jit_options opts;
  const char *cache_dir;
  unsigned char *outcome; /* per kernel: what its compile did (below) */
} work;

enum { UNTOUCHED = 0, STORED = 1, NOT_STORED = 2 }; /* a kernel's outcome: not compiled now, or compiled
                                                      and stored, or compiled and not stored */

static void compile_one(void *ctx, size_t i) {
  work *w = ctx;
  if (!w->sources[i]) return;
  at_jit_result r;
  if (at_jit_compile(w->sources[i], w->kernels[i].name_expr, &w->opts, w->cache_dir, &r) == AT_OK && r.ok &&
      !r.cache_hit)
    w->outcome[i] = r.cache_unwritable ? NOT_STORED : STORED;
  at_jit_result_free(&r); /* (a failed call may have left a log) */
}

int at_ahead_compile(const at_ahead_kernel *kernels, size_t n, const char *templates_dir, const char *arch,
                     const char *cache_dir, int threads) {
  if (!n || !cache_dir) return 0;
  work w = {kernels, at_xcalloc(n, sizeof(at_jit_source *)), {arch, 0, 1} /* for the loads: cubins only */, cache_dir,
            at_xcalloc(n, 1)};
  /* One source per template (kernels of one template share it: NVRTC only reads it). */
  at_jit_source **owned = at_xcalloc(n, sizeof *owned);
  for (size_t i = 0; i < n; i++) {
    int repeat = 0;
    for (size_t j = 0; j < i && !repeat; j++)
      repeat = strcmp(kernels[j].template_name, kernels[i].template_name) == 0 &&
               strcmp(kernels[j].name_expr, kernels[i].name_expr) == 0;
    if (repeat) continue;
    for (size_t j = 0; j < i && !w.sources[i]; j++)
      if (strcmp(kernels[j].template_name, kernels[i].template_name) == 0) w.sources[i] = w.sources[j];
    if (w.sources[i]) continue;
    char *path = at_path_join(templates_dir, kernels[i].template_name);
    if (at_jit_source_load(path, templates_dir, &owned[i]) == AT_OK) w.sources[i] = owned[i];
    free(path);
  }
  at_pool *pool = at_pool_start(threads, n, compile_one, &w);
  int compiled = 0;
  for (ssize_t i; (i = at_pool_next_done(pool)) >= 0;) {
    compiled += w.outcome[i] == STORED;
    if (w.outcome[i] == NOT_STORED) at_pool_stop(pool); /* nothing kept: the loads compile anyway */
  }
  at_pool_join(pool);
  for (size_t i = 0; i < n; i++) at_jit_source_free(owned[i]);
  free(owned);
  free(w.sources);
  free(w.outcome);
  return compiled;
}

/* ahead.c: see ahead.h. */
#include "ahead.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../core/jit.h"
#include "../core/util.h"

typedef struct work {
  const at_ahead_kernel *kernels;
  at_jit_source **sources; /* per kernel: its template, loaded once (NULL: unreadable, or the kernel
                              repeats an earlier one) */
  size_t n;
  at_jit_options opts;
  const char *cache_dir;
  _Atomic size_t next;
  _Atomic int compiled;
} work;

static void *compile_some(void *p) {
  work *w = p;
  for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
    if (!w->sources[i]) continue;
    at_jit_result r;
    if (at_jit_compile(w->sources[i], w->kernels[i].name_expr, &w->opts, w->cache_dir, &r) == AT_OK && r.ok &&
        !r.cache_hit) {
      if (r.cache_unwritable) atomic_store(&w->next, w->n); /* nothing kept: the loads compile anyway */
      else atomic_fetch_add(&w->compiled, 1);
    }
    at_jit_result_free(&r); /* (a failed call may have left a log) */
  }
  return NULL;
}

int at_ahead_compile(const at_ahead_kernel *kernels, size_t n, const char *templates_dir, const char *arch,
                     const char *cache_dir, int threads) {
  if (!n || !cache_dir) return 0;
  work w = {kernels, at_xcalloc(n, sizeof(at_jit_source *)), n, {arch, 0}, cache_dir, 0, 0};
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
  if (threads < 1) threads = 1;
  if ((size_t)threads > n) threads = (int)n;
  pthread_t *th = at_xcalloc((size_t)threads, sizeof *th);
  int started = 0;
  for (int t = 1; t < threads; t++) started += pthread_create(&th[started], NULL, compile_some, &w) == 0;
  compile_some(&w); /* the caller's thread is one of them */
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  for (size_t i = 0; i < n; i++) at_jit_source_free(owned[i]);
  free(owned);
  free(th);
  free(w.sources);
  return atomic_load(&w.compiled);
}

/* ahead.h: kernels compiled into the compile cache ahead of their loads, in threads.
 *
 * at_runtime_prepare loads its kernels one after another through the launch path's own loads (the
 * registry's mutex held, one CUDA module at a time). Compiling is the slow part of a load from an
 * empty cache (about 0.9 s of CPU a kernel on the GPU hosts), and NVRTC compiles in parallel
 * threads; so prepare first compiles every kernel it will load, here, with no lock held, and the
 * loads then find each one in the cache. Nothing here touches CUDA. */
#ifndef AT_RUNTIME_AHEAD_H
#define AT_RUNTIME_AHEAD_H

#include <stddef.h>

typedef struct at_ahead_kernel {
  const char *template_name; /* in templates_dir */
  char *name_expr;           /* owned by the caller */
} at_ahead_kernel;

/* Compiles kernels[0..n) for arch into cache_dir (each template read once, each name compiled once),
 * in up to `threads` threads. A template that cannot be read or a kernel that does not compile is
 * left for the load that follows, which meets and reports it as it would without this; a cache that
 * cannot store a cubin stops it (the loads would compile each again). Returns the number compiled
 * now and stored. */
int at_ahead_compile(const at_ahead_kernel *kernels, size_t n, const char *templates_dir, const char *arch,
                     const char *cache_dir, int threads);

#endif

/* jitproc.h: NVRTC in compiler processes, for the tuner's and warm's many compiles.
 *
 * Why processes: NVRTC in threads of one process does not scale. On the GPU hosts (16 CPUs) 16
 * threads compiled the Llama-3-8B space's 882 kernels in 58.6 s, about what one thread takes
 * (61 ms a kernel), while 16 processes of one thread each took 4.5 s (docs/perf.md, "Compiles in
 * processes"). So each compile thread hands its kernels to a process of its own, which runs NVRTC
 * and nothing else (no CUDA: the parent-never-touches-CUDA rule is about the driver, and these
 * children never load it either).
 *
 * What stays in the caller: the compile cache (lookup before, store after; one place decides what
 * is cached), the key, and every decision. A compiler process gets each template once (its text and
 * headers, as the caller hashed them: the key names exactly what was compiled) and then compile
 * requests naming it by its hash. It answers with the at_jit_result at_jit_nvrtc made.
 *
 * Failure: a compiler process that dies mid-compile (NVRTC crashed, the OOM killer) is replaced and
 * the kernel tried once more in the new one; a second death is that kernel's compile error (ok 0,
 * the log says how the process ended), so one bad candidate costs itself, not the run. If no
 * compiler process can be started at all (the program cannot exec itself), the set says so once on
 * stderr and compiles in the calling thread from then on.
 *
 * $AUTOTUNE_JIT_PROCESSES=off compiles in the calling threads instead (as before session 45). */
#ifndef AT_JITPROC_H
#define AT_JITPROC_H

#include "jit.h"

typedef struct at_jitprocs at_jitprocs;

/* A set of n compiler processes, started now from the calling thread (so that they outlive the
 * threads that use them; exe NULL: this program, which must be autotune), niced by nice_incr (the
 * tuner's compiles yield to its GPU feed). Never fails: processes that cannot start make the set
 * compile in the calling threads. */
at_jitprocs *at_jitprocs_start(int n, const char *exe, int nice_incr);

/* at_jit_compile's contract, the NVRTC step in a free process of the set. Safe from n threads at
 * once. */
int at_jitprocs_compile(at_jitprocs *set, const at_jit_source *s, const char *name_expr, const at_jit_options *o,
                        const char *cache_dir, at_jit_result *r);

/* Compiler processes started after a death (for tests and the summary). */
int at_jitprocs_restarts(const at_jitprocs *set);
/* The pid of process i, 0 when it is not running (tests). */
int at_jitprocs_pid(const at_jitprocs *set, int i);

/* Asks every process to quit (killing those that do not) and frees the set. NULL is fine. */
void at_jitprocs_stop(at_jitprocs *set);

/* The compiler process's side: serves requests on in_fd/out_fd until told to quit or the parent is
 * gone (`autotune worker --compiler`). */
int at_jitproc_serve(int in_fd, int out_fd);

#endif

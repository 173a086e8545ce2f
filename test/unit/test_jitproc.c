/* test_jitproc.c AUTOTUNE: NVRTC in compiler processes (core/jitproc.h), no GPU needed.
 *   - a kernel compiled in a process is the one compiled in this thread: same cubin bytes, lowered
 *     name, resources and log; a compile error comes back as one, with the same log;
 *   - the cache around it: the process's result is stored, the next compile is a hit;
 *   - a process killed between compiles is replaced, and the kernel compiled (one restart);
 *   - a process that dies on every request makes that kernel a compile error saying so (ok 0), and
 *     the set is still usable;
 *   - a program that cannot be started, or $AUTOTUNE_JIT_PROCESSES=off, compiles in the thread;
 *   - four threads on a set of two processes: every kernel right. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/jit.h"
#include "core/jitproc.h"
#include "core/util.h"
#include "check.h"
#include "proc.h"

static const char *GOOD = "gemm_a8w8_blockscale_mma<16, 64, 128, 1, 2, 3, 1, 1, 0>";
static const char *GOOD2 = "gemm_a8w8_blockscale_mma<64, 128, 128, 2, 2, 3, 8, 2, 1>";
static const char *BAD = "gemm_a8w8_blockscale_mma<16, 64, 64, 1, 2, 3, 1, 1, 0>"; /* BLOCK_K 64 */
static const at_jit_options OPTS = {"sm_90a", 0};

/* A log without ptxas's "Compile time = ... ms" lines, which differ from compile to compile. */
static char *steady_log(const char *log) {
  char *s = at_xstrdup(log), *t;
  while ((t = strstr(s, "Compile time = "))) {
    char *eol = strchr(t, '\n');
    memmove(t, eol ? eol + 1 : t + strlen(t), strlen(eol ? eol + 1 : t + strlen(t)) + 1);
  }
  return s;
}

/* The same kernel and report; on a difference, says which. */
static int same_result(const at_jit_result *a, const at_jit_result *b) {
  char *la = steady_log(a->log), *lb = steady_log(b->log);
  const char *diff = a->ok != b->ok ? "ok"
                     : a->cubin_size != b->cubin_size || (a->cubin_size && memcmp(a->cubin, b->cubin, a->cubin_size))
                         ? "cubin"
                     : strcmp(a->cubin_hash, b->cubin_hash) ? "cubin_hash"
                     : a->regs != b->regs || a->spill_stores != b->spill_stores || a->static_smem != b->static_smem
                         ? "resources"
                     : strcmp(a->lowered_name ? a->lowered_name : "", b->lowered_name ? b->lowered_name : "")
                         ? "lowered_name"
                     : strcmp(la, lb) ? "log"
                                      : NULL;
  if (diff) fprintf(stderr, "results differ in %s; logs:\n[%s]\n[%s]\n", diff, la, lb);
  free(la), free(lb);
  return !diff;
}

typedef struct job {
  at_jitprocs *set;
  const at_jit_source *src;
  const char *name;
  const at_jit_result *want;
  int ok;
} job;

static void *compile_thread(void *p) {
  job *j = p;
  at_jit_result r;
  j->ok = at_jitprocs_compile(j->set, j->src, j->name, &OPTS, NULL, &r) == AT_OK && same_result(&r, j->want);
  at_jit_result_free(&r);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: test_jitproc AUTOTUNE\n"), 2;
  const char *exe = argv[1], *tdir = getenv("AUTOTUNE_TEMPLATES");
  char *tmp = scratch_dir("jitproc"), *cache = at_path_join(tmp, "cache");
  char *tpl = at_path_join(tdir, "gemm_a8w8_blockscale_mma.cuh");
  at_jit_source *src;
  CHECK_EQ_INT(at_jit_source_load(tpl, tdir, &src), AT_OK);

  /* In this thread, no cache: what the processes must reproduce. */
  at_jit_result good, good2, bad;
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &OPTS, NULL, &good), AT_OK);
  CHECK_EQ_INT(at_jit_compile(src, GOOD2, &OPTS, NULL, &good2), AT_OK);
  CHECK_EQ_INT(at_jit_compile(src, BAD, &OPTS, NULL, &bad), AT_OK);
  CHECK(good.ok && good2.ok && !bad.ok);

  at_jitprocs *set = at_jitprocs_start(2, exe, 0);
  CHECK(at_jitprocs_pid(set, 0) > 0 && at_jitprocs_pid(set, 1) > 0);
  at_jit_result r;
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD, &OPTS, NULL, &r), AT_OK);
  CHECK(same_result(&r, &good));
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, BAD, &OPTS, NULL, &r), AT_OK);
  CHECK(same_result(&r, &bad));
  CHECK_CONTAINS(r.log, "error");
  at_jit_result_free(&r);

  /* The cache is the caller's: stored after the process's compile, then a hit. */
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD2, &OPTS, cache, &r), AT_OK);
  CHECK(same_result(&r, &good2) && !r.cache_hit && !r.cache_unwritable);
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD2, &OPTS, cache, &r), AT_OK);
  CHECK(r.cache_hit && r.cubin_size == good2.cubin_size && memcmp(r.cubin, good2.cubin, r.cubin_size) == 0);
  at_jit_result_free(&r);

  /* Killed between compiles: replaced, and the next compile is right (the new process gets the
   * source again). Process 0 is the one a lone caller takes. */
  int pid0 = at_jitprocs_pid(set, 0);
  CHECK(pid0 > 0 && kill(pid0, SIGKILL) == 0);
  usleep(100000);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD, &OPTS, NULL, &r), AT_OK);
  CHECK(same_result(&r, &good));
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jitprocs_restarts(set), 1);
  CHECK(at_jitprocs_pid(set, 0) > 0 && at_jitprocs_pid(set, 0) != pid0);

  /* Four threads, two processes. */
  job jobs[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (job){set, src, i % 2 ? GOOD2 : GOOD, i % 2 ? &good2 : &good, 0};
    pthread_create(&th[i], NULL, compile_thread, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    CHECK(jobs[i].ok);
  }
  at_jitprocs_stop(set);

  /* A compiler process that says hello, then dies on its first request. */
  char *dying = at_path_join(tmp, "dying.sh");
  const char *script = "#!/bin/sh\nprintf '\\001\\000\\000\\000\\000\\000\\000\\000' >&4\n"
                       "head -c 8 <&3 >/dev/null\nkill -9 $$\n";
  CHECK_EQ_INT(at_write_file_atomic(dying, script, strlen(script)), AT_OK);
  chmod(dying, 0755);
  set = at_jitprocs_start(1, dying, 0);
  CHECK(at_jitprocs_pid(set, 0) > 0);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD, &OPTS, cache, &r), AT_OK);
  CHECK(!r.ok && !r.cubin);
  CHECK_CONTAINS(r.log, "compiler process died twice");
  CHECK_CONTAINS(r.log, "signal 9");
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jitprocs_restarts(set), 1); /* started again once, for the second try */
  at_jitprocs_stop(set);

  /* No process at all: compiled here, said once. */
  set = at_jitprocs_start(2, "/nonexistent/autotune", 0);
  CHECK_EQ_INT(at_jitprocs_pid(set, 0), 0);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, GOOD, &OPTS, NULL, &r), AT_OK);
  CHECK(same_result(&r, &good));
  at_jit_result_free(&r);
  at_jitprocs_stop(set);
  setenv("AUTOTUNE_JIT_PROCESSES", "off", 1);
  set = at_jitprocs_start(2, exe, 0);
  CHECK_EQ_INT(at_jitprocs_pid(set, 0), 0);
  CHECK_EQ_INT(at_jitprocs_compile(set, src, BAD, &OPTS, NULL, &r), AT_OK);
  CHECK(same_result(&r, &bad));
  at_jit_result_free(&r);
  at_jitprocs_stop(set);
  unsetenv("AUTOTUNE_JIT_PROCESSES");

  at_jit_result_free(&good), at_jit_result_free(&good2), at_jit_result_free(&bad);
  at_jit_source_free(src);
  free(dying), free(tpl), free(cache), free(tmp);
  return check_summary();
}

/* test_enumerate.c: the cartesian product and its pruning counts, on a space whose counts are
 * worked out by hand in its header (test/data/spaces/enum.yaml), and the order and uniqueness of
 * the candidates; a space of 10^8 points pruned to 10, enumerated in bounded memory (under an
 * address-space limit far below what keeping the points would take); the cap on survivors. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/enumerate.h"
#include "core/util.h"
#include "check.h"

static int64_t count_of(const at_enum *e, const char *rule, int per_shape) {
  for (size_t i = 0; i < e->npruned; i++)
    if (strcmp(e->pruned[i].rule, rule) == 0 && e->pruned[i].per_shape == per_shape) return e->pruned[i].count;
  return -1;
}

/* The process's address space now, in bytes (first field of /proc/self/statm, in pages). */
static long long address_space(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long long pages = -1;
  if (f) {
    if (fscanf(f, "%lld", &pages) != 1) pages = -1;
    fclose(f);
  }
  return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}

/* Enumerates a space in a child whose address space may grow by 256 MiB at most; res gets the
 * status, the points seen, the candidates kept and the growth of the peak RSS (KiB). A child that
 * keeps what it should not dies on an allocation failure. */
static int enumerate_limited(const char *path, long long res[4]) {
  at_space *s;
  CHECK_EQ_INT(at_space_load(path, &s), AT_OK);
  if (!s) return -1;
  at_limits lim;
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  int fd[2];
  CHECK_EQ_INT(pipe(fd), 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    long long as = address_space();
    struct rlimit rl = {(rlim_t)(as + (256LL << 20)), (rlim_t)(as + (256LL << 20))};
    if (as < 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    at_enum *e = NULL;
    int rc = at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e);
    getrusage(RUSAGE_SELF, &after);
    long long r[4] = {rc, e ? e->total : -1, e ? (long long)e->n : -1, after.ru_maxrss - before.ru_maxrss};
    if (write(fd[1], r, sizeof r) != (ssize_t)sizeof r) _exit(4);
    _exit(0);
  }
  close(fd[1]);
  for (int i = 0; i < 4; i++) res[i] = -1;
  ssize_t got = read(fd[0], res, 4 * sizeof res[0]);
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  fprintf(stderr, "%s: child %s, rc %lld, points %lld, kept %lld, peak RSS growth %lld KiB, %.1f s\n", path,
          WIFEXITED(st) ? "exited" : "killed", res[0], res[1], res[2], res[3], secs);
  at_space_free(s);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 && got == 4 * (ssize_t)sizeof res[0] ? 0 : -1;
}

/* Keeping every one of 10^8 points (a value table, two strings and a record each, some 400 bytes)
 * would take 40 GB. test/data/spaces/huge.yaml has 10^8 points pruned to 10: enumerated in full in
 * bounded memory. The same space without its constraint: stopped at the cap, also in bounded
 * memory (before the cap, it grew until the allocator gave up). */
static void bounded_memory(void) {
  char *path = at_path_join(getenv("AT_TEST_DATA"), "spaces/huge.yaml");
  long long res[4];
  CHECK_EQ_INT(enumerate_limited(path, res), 0);
  CHECK_EQ_INT(res[0], AT_OK);
  CHECK_EQ_INT(res[1], 100000000);
  CHECK_EQ_INT(res[2], 10);
  CHECK(res[3] >= 0 && res[3] < 64 * 1024);

  /* The copy without the constraint, its template path made absolute. */
  char *text;
  size_t n;
  CHECK_EQ_INT(at_read_file(path, 0, &text, &n), AT_OK);
  char *cons = text ? strstr(text, "    constraints:") : NULL, *shapes = text ? strstr(text, "shapes:") : NULL;
  char *tpl = text ? strstr(text, "../../../templates/") : NULL;
  CHECK(cons && shapes && tpl);
  if (cons && shapes && tpl) {
    *cons = 0;
    tpl[0] = 0;
    char *copy = at_xasprintf("%s%s/templates/%s%s", text, getenv("AT_TEST_SOURCE_ROOT"), tpl + strlen("../../../templates/"),
                              shapes);
    const char *base = getenv("AT_TEST_TMP");
    at_mkdirs(base && *base ? base : "/tmp");
    char *unpruned = at_xasprintf("%s/huge_unpruned.%d.yaml", base && *base ? base : "/tmp", (int)getpid());
    CHECK_EQ_INT(at_write_file_atomic(unpruned, copy, strlen(copy)), AT_OK);
    CHECK_EQ_INT(enumerate_limited(unpruned, res), 0);
    CHECK_EQ_INT(res[0], AT_ERR_INPUT);
    CHECK(res[3] >= 0 && res[3] < 192 * 1024);
    unlink(unpruned);
    free(unpruned), free(copy);
  }
  free(text);
  free(path);
}

/* More survivors than the cap: an input error at the variant, naming the cap and the counts, and
 * nothing returned. */
static void capped(const at_space *s, const at_limits *lim) {
  at_enum *e = (at_enum *)1;
  at_errclear();
  CHECK_EQ_INT(at_enumerate(s, lim, 10, &e), AT_ERR_INPUT);
  CHECK(e == NULL);
  const char *msg = at_errmsg();
  CHECK_CONTAINS(msg, "enum.yaml:");
  CHECK_CONTAINS(msg, "variant 'mma': more than 10 candidates survive pruning");
  CHECK_CONTAINS(msg, "11 of the first");
  CHECK_CONTAINS(msg, "of this variant's 64 points");
  /* Exactly at the cap is allowed. */
  CHECK_EQ_INT(at_enumerate(s, lim, 52, &e), AT_OK);
  if (e) CHECK_EQ_INT(e->n, 52);
  at_enum_free(e);
}

int main(void) {
  char *path = at_path_join(getenv("AT_TEST_DATA"), "spaces/enum.yaml");
  at_space *s;
  CHECK_EQ_INT(at_space_load(path, &s), AT_OK);
  if (!s) return check_summary();
  at_limits lim;
  CHECK_EQ_INT(at_limits_for_arch("sm_90a", &lim), AT_OK);
  at_enum *e;
  CHECK_EQ_INT(at_enumerate(s, &lim, AT_DEFAULT_MAX_CANDIDATES, &e), AT_OK);
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
  CHECK_EQ_INT(at_enumerate(s, &small, AT_DEFAULT_MAX_CANDIDATES, &e2), AT_OK);
  CHECK(count_of(e2, "device_smem", 0) > 4);
  CHECK_EQ_INT(e2->total, 64);
  CHECK_EQ_INT((int64_t)e2->n + at_enum_pruned_total(e2), 64);

  capped(s, &lim);
  at_enum_free(e2);
  at_enum_free(e);
  at_space_free(s);
  free(path);
  bounded_memory();
  return check_summary();
}

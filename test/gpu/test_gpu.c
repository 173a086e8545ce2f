/* test_gpu.c: the GPU suite (needs a GPU; exits 77 where there is none). argv[1] is the autotune
 * binary, argv[2] the case:
 *   edge     the mma template against the cuBLAS reference on edge shapes (M = 1, 17, 255, 4097,
 *            an N tail, the largest shipped N and K): every candidate passes, every shape has a
 *            winner
 *   planted  a kernel that reads out of bounds, one that never ends and one that leaves its last
 *            tile unwritten are caught as fault, timeout and wrong (then quarantined after two
 *            dead workers) while the run completes and the correct kernel wins every shape; on
 *            GPU 0 alone, where one worker walks the shapes in a known order
 *   resume   a tuning run killed with SIGKILL on the GPU, and then one stopped with SIGTERM,
 *            resume to the same results, leave no worker behind, and the DB passes
 *            integrity_check; after a template edit that changes a comment alone, a rerun
 *            adopts every result from the candidates of the same cubin and evaluates none
 *   sm90     the sm90 (Hopper) family on edge shapes: M = 1, 63, 65, 4097, N tails, K = 128, split-K
 *   sm90_random  a random sample of sm90 candidates on random shapes (seed printed, AT_RANDOM_SEED),
 *                one of them with the operands swapped (SWAP_AB)
 *   multi    with two GPUs or more (skipped otherwise): the edge space tuned on every GPU at once
 *            completes with every result checked, and the same winners' counts as on one GPU;
 *            the planted space on every GPU, where workers meet a bad candidate at once */
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "../unit/dbq.h"
#include "../unit/proc.h"
#include "core/store.h"
#include "core/util.h"

static const char *EXE;
static char *TMP;

/* autotune on a space of test/data into db: on the GPUs of --gpus when gpus is not NULL, else on
 * all of them (the default). */
static int tune_on(const char *space, const char *db, double timeout, const char *gpus) {
  char *sp = at_path_join(getenv("AT_TEST_DATA"), space), *out = at_path_join(TMP, "tune.txt");
  char *argv[] = {(char *)EXE, "--db", (char *)db, sp, NULL, NULL, NULL};
  if (gpus) argv[4] = "--gpus", argv[5] = (char *)gpus;
  int rc = proc_run(argv, out, timeout);
  char *text = slurp(out);
  fprintf(stderr, "---- autotune %s%s%s (exit %d)\n%s----\n", space, gpus ? " --gpus " : "", gpus ? gpus : "", rc, text);
  free(text), free(sp), free(out);
  return rc;
}

static int tune(const char *space, const char *db, double timeout) { return tune_on(space, db, timeout, NULL); }

/* Worker processes still alive anywhere (their command line says "worker --gpu"). */
static int live_workers(void) {
  static const char *const NEEDLES[] = {"worker --gpu", "autotune", NULL};
  return proc_find(NEEDLES, NULL);
}

static void edge(void) {
  char *db = at_path_join(TMP, "edge.db");
  CHECK_EQ_INT(tune("spaces/edge.yaml", db, 900), 0);
  int64_t cands = dbq(db, "SELECT count(*) FROM candidates WHERE status='ok'");
  CHECK(cands > 20);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM problems"), 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), cands * 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status != 'ok'"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status='ok' AND (time_us IS NULL OR time_us <= 0 OR samples < 3)"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE max_abs_err IS NULL OR max_abs_err > 1"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners"), 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM baselines WHERE name='cublas_fp32_reference' AND time_us > 0"), 4);
  free(db);
}

/* The GPU's compile target, from `autotune devices` ("sm_90a", ...). */
static void gpu_arch(char out[16]) {
  char *path = at_path_join(TMP, "devices.txt");
  char *argv[] = {(char *)EXE, "devices", NULL};
  proc_run(argv, path, 120);
  char *text = slurp(path);
  const char *p = strstr(text, ", sm_");
  snprintf(out, 16, "%s", p ? p + 2 : "?");
  char *comma = strchr(out, ' ');
  if (comma) *comma = 0;
  free(text), free(path);
}

/* The sm90 family on its edge shapes: every candidate passes every shape. */
static void sm90(void) {
  char arch[16];
  gpu_arch(arch);
  if (strcmp(arch, "sm_90a") != 0) check_skip("the sm90 family needs an sm_90 GPU");
  char *db = at_path_join(TMP, "sm90.db");
  CHECK_EQ_INT(tune("spaces/sm90_edge.yaml", db, 900), 0);
  int64_t cands = dbq(db, "SELECT count(*) FROM candidates WHERE status='ok'");
  CHECK(cands >= 16);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM problems"), 5);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), cands * 5);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status != 'ok'"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners"), 5);
  free(db);
}

/* A random sample of the family's candidates on random shapes (the seed is printed). */
static void sm90_random(void) {
  char arch[16];
  gpu_arch(arch);
  if (strcmp(arch, "sm_90a") != 0) check_skip("the sm90 family needs an sm_90 GPU");
  const char *env = getenv("AT_RANDOM_SEED");
  uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL), r = seed;
  fprintf(stderr, "sm90_random: seed %llu (AT_RANDOM_SEED reruns it)\n", (unsigned long long)seed);
  static const int BN[] = {64, 96, 112, 128, 144, 160, 192, 256};
  char *path = at_path_join(TMP, "sm90_random.yaml");
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fprintf(f, "op: gemm_a8w8_blockscale\ntag: SM90_RANDOM\ncheck: {atol: 1e-2, rtol: 1e-2, gamma: 0.001953125}\n"
             "variants:\n");
  for (int v = 0; v < 6; v++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    /* RESCALE (one accumulator rescaled in place) frees the registers for tiles up to 256 wide */
    int rescale = (int)((r >> 62) & 1);
    int bm = 64 << ((r >> 33) % 3), bn = BN[(r >> 40) % (rescale ? 8 : 6)], stages = 2 + (int)((r >> 50) % 3);
    int split = 1 + (int)((r >> 20) % 4), group = (r >> 10) & 1 ? 8 : 1;
    int pingpong = bm >= 128 ? (int)((r >> 5) % 3) : 0;
    int cm = 1 + (int)((r >> 56) & 1), cn = 1 + (int)((r >> 58) & 1); /* clusters of 1, 2 or 4 */
    if (bm == 256 && bn > 128) bn = 128; /* registers: the kernel's static_assert */
    /* two k-blocks in flight: one slice per warpgroup, no turns, 3 x BLOCK_N / 2 registers */
    int kpipe = !rescale && bm <= 128 && pingpong == 0 && (bm == 64 || bn <= 128) && ((r >> 60) & 1) ? 2 : 1;
    if (rescale && bn > 128 && stages > 3) stages = 3; /* 128 x 256 holds 4 stages at most */
    /* the producer's warps store the results (2: from two areas), or TMA tensor stores (3: passes
     * of whole 64-column boxes, BLOCK_N 64, 128 or 256) */
    int store = (int)((r >> 3) % 4);
    if (store == 3 && bn != 64 && bn != 128 && bn != 256) store = 0;
    if (store == 2 && stages > 3) stages = 3; /* two staging areas leave room for 3 stages at 256 x 128 */
    /* two CTAs of a cluster split each tile's k-blocks: one-split kernels of one slice, no store
     * warps; with a multicast pair, clusters of four */
    int ck = 1;
    if (cm * cn <= 2 && bm <= 128 && ((r >> 1) & 1)) ck = 2, split = 1, store = store == 3 && bn >= 128 ? 3 : 0;
    /* or four, each keeping a quarter of the columns: no multicast, 32-column multiples, two stages
     * (three slots of a quarter beside them) */
    if (ck == 2 && cm * cn == 1 && bn % 32 == 0 && ((r >> 2) & 1)) ck = 4, store = 0, stages = 2;
    fprintf(f,
            "  - name: s%d\n    family: sm90\n    template: %s/templates/gemm_a8w8_blockscale_sm90.cuh\n"
            "    entry: \"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, "
            "CLUSTER_N, KPIPE, RESCALE, STORE, CLUSTER_K>\"\n"
            "    params: {BLOCK_M: %d, BLOCK_N: %d, STAGES: %d, GROUP_M: %d, SPLIT_K: %d, PINGPONG: %d, CLUSTER_M: %d, "
            "CLUSTER_N: %d, KPIPE: %d, RESCALE: %d, STORE: %d, CLUSTER_K: %d}\n",
            v, getenv("AT_TEST_SOURCE_ROOT"), bm, bn, stages, group, split, pingpong, cm, cn, kpipe, rescale, store, ck);
  }
  {
    /* One with the operands swapped (SWAP_AB: 16 to 64 tokens on the wgmma's N side, one or two
     * math warpgroups of 64 weight rows), on the same shapes, whatever their M. */
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    int bm = 16 << ((r >> 33) % 3), bn = 64 << ((r >> 40) & 1), stages = 2 + (int)((r >> 50) % 7);
    int split = 1 + (int)((r >> 20) % 4), group = (r >> 10) & 1 ? 8 : 1, kpipe = 1 + (int)((r >> 60) & 1);
    int cluster = (int)((r >> 56) % 3); /* none, a pair along M (sharing weights), along N (tokens) */
    fprintf(f,
            "  - name: s6\n    family: sm90\n    template: %s/templates/gemm_a8w8_blockscale_sm90.cuh\n"
            "    entry: \"gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, GROUP_M, SPLIT_K, PINGPONG, CLUSTER_M, "
            "CLUSTER_N, KPIPE, 0, 0, 1, SWAP_AB>\"\n"
            "    params: {BLOCK_M: %d, BLOCK_N: %d, STAGES: %d, GROUP_M: %d, SPLIT_K: %d, PINGPONG: 0, CLUSTER_M: %d, "
            "CLUSTER_N: %d, KPIPE: %d, SWAP_AB: 1}\n",
            getenv("AT_TEST_SOURCE_ROOT"), bm, bn, stages, group, split, cluster == 1 ? 2 : 1, cluster == 2 ? 2 : 1,
            kpipe);
  }
  fprintf(f, "shapes:\n");
  for (int i = 0; i < 3; i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    int m = 1 + (int)((r >> 33) % 3000), n = 8 * (1 + (int)((r >> 45) % 768)), k = 128 * (1 + (int)((r >> 20) % 40));
    fprintf(f, "  - {N: %d, K: %d, M: [%d]}\n", n, k, m);
  }
  fprintf(f, "timing: {samples: 10, retime_top: 2}\n");
  fclose(f);
  char *db = at_path_join(TMP, "sm90_random.db");
  char *argv[] = {(char *)EXE, "--db", db, path, NULL};
  char *out = at_path_join(TMP, "sm90_random.txt");
  int rc = proc_run(argv, out, 900);
  char *text = slurp(out);
  fprintf(stderr, "---- autotune sm90_random.yaml (exit %d, seed %llu)\n%s----\n", rc, (unsigned long long)seed, text);
  CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status != 'ok'"), 0);
  CHECK(dbq(db, "SELECT count(*) FROM results WHERE status = 'ok'") >= 7);
  free(text), free(out), free(db), free(path);
}

static int64_t status_of(const char *db, const char *variant, int64_t m) {
  /* 0 ok, 1 wrong, 2 fault, 3 timeout, 5 quarantined, as a number: easy to compare. */
  return dbq(db,
           "SELECT CASE r.status WHEN 'ok' THEN 0 WHEN 'wrong' THEN 1 WHEN 'fault' THEN 2 WHEN 'timeout' THEN 3"
           " WHEN 'resources' THEN 4 WHEN 'quarantined' THEN 5 END FROM results r JOIN candidates c ON c.id=r.candidate_id"
           " JOIN variants v ON v.id=c.variant_id JOIN problems p ON p.id=r.problem_id WHERE v.name='%s' AND p.m=%lld",
           variant, (long long)m);
}

static const int64_t PLANTED_MS[3] = {64, 96, 128};
static const char *const PLANTED_BAD[2] = {"oob", "hang"};
static const int64_t PLANTED_BAD_STATUS[2] = {2, 3};

/* What planted.yaml leaves in db whatever the GPUs: every result recorded once, the broken
 * candidates quarantined and the correct one the winner everywhere, no worker left. */
static void planted_common(const char *db) {
  for (int i = 0; i < 3; i++) CHECK_EQ_INT(status_of(db, "unwritten", PLANTED_MS[i]), 1);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), 15);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results r JOIN candidates c ON c.id=r.candidate_id JOIN variants v"
                     " ON v.id=c.variant_id WHERE v.name='good' AND r.status='ok'"),
               6);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners w JOIN candidates c ON c.id=w.candidate_id JOIN variants v"
                     " ON v.id=c.variant_id WHERE v.name='good'"),
               3);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM candidates WHERE quarantined=1"), 2);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status='wrong' AND bad_count > 0 AND first_bad >= 0"), 3);
  CHECK_EQ_INT(live_workers(), 0);
}

static void planted(void) {
  char *db = at_path_join(TMP, "planted.db");
  /* One GPU: one worker walks the shapes, so the order of the statuses is known. */
  CHECK_EQ_INT(tune_on("spaces/planted.yaml", db, 900, "0"), 0);
  /* A bad candidate kills the worker on the first two shapes it meets and is quarantined on the
   * third: which shapes those are depends on its batch's walk, file order or backwards (tune.c). */
  for (int b = 0; b < 2; b++) {
    const int64_t bs = PLANTED_BAD_STATUS[b];
    const int64_t first = status_of(db, PLANTED_BAD[b], PLANTED_MS[0]), last = status_of(db, PLANTED_BAD[b], PLANTED_MS[2]);
    CHECK_EQ_INT(status_of(db, PLANTED_BAD[b], PLANTED_MS[1]), bs);
    CHECK((first == bs && last == 5) || (first == 5 && last == bs));
  }
  planted_common(db);
  /* A rerun, on every GPU, redoes nothing and keeps every result as it was. */
  CHECK_EQ_INT(tune("spaces/planted.yaml", db, 900), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), 15);
  CHECK_EQ_INT(dbq(db, "SELECT count(DISTINCT run_id) FROM results"), 1);
  free(db);
}

static void resume(void) {
  char *db = at_path_join(TMP, "resume.db"), *clean = at_path_join(TMP, "clean.db");
  char *sp = at_path_join(getenv("AT_TEST_DATA"), "spaces/edge.yaml"), *out = at_path_join(TMP, "killed.txt");
  char *argv[] = {(char *)EXE, "--db", db, sp, NULL};
  pid_t pid = proc_start(argv, out);
  int64_t done = 0;
  for (int i = 0; i < 30000 && done < 40; i++) {
    usleep(10000);
    done = dbq(db, "SELECT count(*) FROM results");
  }
  kill(pid, SIGKILL);
  proc_wait(pid, 60);
  int64_t kept = dbq(db, "SELECT count(*) FROM results");
  fprintf(stderr, "killed with %lld results recorded\n", (long long)kept);
  CHECK(kept >= 40);
  usleep(500000);
  CHECK_EQ_INT(live_workers(), 0); /* workers die with their parent */
  /* SIGTERM (or Ctrl-C) stops cleanly: exit 1, the run marked interrupted, no worker left. */
  pid = proc_start(argv, out);
  int64_t before = dbq(db, "SELECT count(*) FROM results");
  for (int i = 0; i < 30000 && dbq(db, "SELECT count(*) FROM results") < before + 20; i++) usleep(10000);
  kill(pid, SIGTERM);
  CHECK_EQ_INT(proc_wait(pid, 120), 1);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM runs WHERE status='interrupted'"), 1);
  CHECK_EQ_INT(live_workers(), 0);
  CHECK_EQ_INT(tune("spaces/edge.yaml", db, 900), 0);
  CHECK_EQ_INT(tune("spaces/edge.yaml", clean, 900), 0);
  int64_t total = dbq(clean, "SELECT count(*) FROM results");
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), total);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status='ok'"), dbq(clean, "SELECT count(*) FROM results WHERE status='ok'"));
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners"), dbq(clean, "SELECT count(*) FROM winners"));
  CHECK(dbq(db, "SELECT count(DISTINCT run_id) FROM results") >= 2); /* the first run's results were kept */
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check='ok'"), 1);
  free(db), free(clean), free(sp), free(out);
}

/* Copies the regular files of directory src (text: the templates) into a new directory dst. */
static void copy_dir(const char *src, const char *dst) {
  CHECK_EQ_INT(mkdir(dst, 0755), 0);
  DIR *d = opendir(src);
  CHECK(d != NULL);
  int copied = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char *from = at_path_join(src, e->d_name), *to = at_path_join(dst, e->d_name);
    struct stat st;
    if (stat(from, &st) == 0 && S_ISREG(st.st_mode)) {
      char *text = slurp(from);
      FILE *f = fopen(to, "w");
      CHECK(f != NULL);
      if (f) fputs(text, f), fclose(f);
      free(text);
      copied++;
    }
    free(from), free(to);
  }
  if (d) closedir(d);
  CHECK(copied > 0);
}

/* A template edit that leaves the machine code alone (a comment) makes new candidates (identity
 * is the template's text), whose results are adopted from the old ones of the same cubin: the
 * rerun checks and times no candidate (each shape's leaders are still re-timed side by side, as
 * for any shape whose winner the run records) and says where each result came from. */
static void resume_after_comment(void) {
  char *tpl = at_path_join(TMP, "tpl"), *db = at_path_join(TMP, "twin.db"), *out = at_path_join(TMP, "twin.txt");
  char *src = at_path_join(getenv("AT_TEST_SOURCE_ROOT"), "templates");
  copy_dir(src, tpl);
  /* The edge space, its template taken from the copy. */
  char *edge = at_path_join(getenv("AT_TEST_DATA"), "spaces/edge.yaml"), *text = slurp(edge);
  char *sp = at_path_join(TMP, "edge_copy.yaml");
  FILE *f = fopen(sp, "w");
  CHECK(f != NULL);
  const char *from = "../../../templates/";
  for (const char *p = text; f && *p; p++) {
    if (strncmp(p, from, strlen(from)) == 0) {
      fprintf(f, "%s/", tpl);
      p += strlen(from) - 1;
    } else {
      fputc(*p, f);
    }
  }
  if (f) fclose(f);
  char *argv[] = {(char *)EXE, "--db", db, sp, NULL};
  CHECK_EQ_INT(proc_run(argv, out, 900), 0);
  int64_t results = dbq(db, "SELECT count(*) FROM results"), cands = dbq(db, "SELECT count(*) FROM candidates");
  int64_t last = dbq(db, "SELECT max(id) FROM candidates");
  CHECK(results > 0);
  char *mma = at_path_join(tpl, "gemm_a8w8_blockscale_mma.cuh");
  f = fopen(mma, "a");
  CHECK(f != NULL);
  if (f) fputs("// A comment: the compile key changes, the cubin does not.\n", f), fclose(f);
  CHECK_EQ_INT(proc_run(argv, out, 900), 0);
  char *report = slurp(out);
  fprintf(stderr, "---- rerun after a comment\n%s----\n", report);
  CHECK_CONTAINS(report, " 0 evaluated now");
  char adopted[96];
  snprintf(adopted, sizeof adopted, "(%lld from a candidate with the same cubin)", (long long)results);
  CHECK_CONTAINS(report, adopted);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM candidates"), 2 * cands);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), 2 * results);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE message LIKE 'same cubin as candidate %%'"), results);
  /* Each shape's winner is decided again among this run's candidates: the new ones. */
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners WHERE candidate_id > %lld", (long long)last), 4);
  CHECK_EQ_INT(live_workers(), 0);
  free(tpl), free(db), free(out), free(src), free(edge), free(text), free(sp), free(mma), free(report);
}

static int gpu_count(void) {
  char *out = at_path_join(TMP, "devices.txt");
  char *argv[] = {(char *)EXE, "devices", NULL};
  proc_run(argv, out, 120);
  char *text = slurp(out);
  int n = 0;
  for (const char *p = text; (p = strstr(p, "GPU ")); p++) n++;
  free(text), free(out);
  return n;
}

static void multi(void) {
  if (gpu_count() < 2) check_skip("fewer than two GPUs");
  char *db = at_path_join(TMP, "multi.db"), *one = at_path_join(TMP, "one.db");
  char *sp = at_path_join(getenv("AT_TEST_DATA"), "spaces/edge.yaml"), *out = at_path_join(TMP, "one.txt");
  CHECK_EQ_INT(tune("spaces/edge.yaml", db, 900), 0); /* all GPUs: the default */
  char *argv[] = {(char *)EXE, "--gpus", "0", "--db", one, sp, NULL};
  CHECK_EQ_INT(proc_run(argv, out, 900), 0);
  int64_t cands = dbq(db, "SELECT count(*) FROM candidates WHERE status='ok'");
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), cands * 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results WHERE status != 'ok'"), 0);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM winners"), 4);
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM results"), dbq(one, "SELECT count(*) FROM results"));
  CHECK_EQ_INT(dbq(db, "SELECT count(*) FROM devices"), 1);
  CHECK_EQ_INT(live_workers(), 0);

  /* The planted faults on every GPU: the shapes are dealt to several workers that meet a bad
   * candidate at the same time, so it may fail on all three shapes (each worker's batch sorted out
   * before the other's kill was counted) or on two and be quarantined on the third, in any order. */
  char *planted = at_path_join(TMP, "planted_all.db");
  CHECK_EQ_INT(tune("spaces/planted.yaml", planted, 900), 0);
  for (int b = 0; b < 2; b++) {
    int failed = 0, quarantined = 0;
    for (int i = 0; i < 3; i++) {
      const int64_t st = status_of(planted, PLANTED_BAD[b], PLANTED_MS[i]);
      failed += st == PLANTED_BAD_STATUS[b], quarantined += st == 5;
    }
    CHECK(failed >= 2);
    CHECK_EQ_INT(failed + quarantined, 3);
  }
  planted_common(planted);
  free(db), free(one), free(sp), free(out), free(planted);
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  EXE = argv[1];
  TMP = scratch_dir(argv[2]);
  char *cache = at_path_join(TMP, "cache");
  setenv("AUTOTUNE_CACHE", cache, 1);
  proc_require_gpu(EXE, TMP);
  if (strcmp(argv[2], "edge") == 0) edge();
  else if (strcmp(argv[2], "planted") == 0) planted();
  else if (strcmp(argv[2], "resume") == 0) resume(), resume_after_comment();
  else if (strcmp(argv[2], "multi") == 0) multi();
  else if (strcmp(argv[2], "sm90") == 0) sm90();
  else if (strcmp(argv[2], "sm90_random") == 0) sm90_random();
  else return 2;
  free(cache);
  return check_summary();
}

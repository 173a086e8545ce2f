/* test_jit.c: NVRTC compiles of real candidates (no GPU needed): resources read from the ptxas
 * report, the cache hit on the second compile, a damaged cache entry detected and rebuilt (and one
 * with no registers, as NVRTC's own cache left them), a compile error kept with its log, ptxas
 * advisories kept through the cache, and compile keys that follow content (a header edit changes
 * them, moving the file does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "core/jit.h"
#include "core/sha256.h"
#include "core/util.h"
#include "check.h"
#include "proc.h"

static const char *GOOD = "gemm_a8w8_blockscale_mma<16, 64, 128, 1, 2, 3, 1, 1, 0>";
static const char *GOOD2 = "gemm_a8w8_blockscale_mma<64, 128, 128, 2, 2, 3, 8, 2, 1>";
static const char *BAD = "gemm_a8w8_blockscale_mma<16, 64, 64, 1, 2, 3, 1, 1, 0>"; /* BLOCK_K 64 */

/* A kernel that reads a wgmma accumulator while its batch is in flight: ptxas waits for the batch
 * there and says so in an advisory, "(C7517) warpgroup.wait is injected ...". */
static const char *ADVISED = "template <int X>\n"
                             "__global__ void advised(float *out, unsigned long long da, unsigned long long db) {\n"
                             "  float d[8];\n"
                             "  for (int i = 0; i < 8; i++) d[i] = 0.f;\n"
                             "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
                             "  asm volatile(\"wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, "
                             "%6, %7}, %8, %9, 1, 1, 1;\"\n"
                             "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]), \"+f\"(d[4]), "
                             "\"+f\"(d[5]), \"+f\"(d[6]), \"+f\"(d[7])\n"
                             "               : \"l\"(da), \"l\"(db));\n"
                             "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
                             "  out[threadIdx.x] = d[0] * X;\n"
                             "  asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
                             "  for (int i = 1; i < 8; i++) out[threadIdx.x + 128 * i] = d[i];\n"
                             "}\n";

static void copy_file(const char *from, const char *to) {
  char *d;
  size_t n;
  if (at_read_file(from, 0, &d, &n) == AT_OK) {
    at_write_file_atomic(to, d, n);
    free(d);
  }
}

int main(void) {
  const char *tdir = getenv("AUTOTUNE_TEMPLATES");
  char *tmp = scratch_dir("jit"), *cache = at_path_join(tmp, "cache");
  char *tpl = at_path_join(tdir, "gemm_a8w8_blockscale_mma.cuh");
  at_jit_source *src;
  CHECK_EQ_INT(at_jit_source_load(tpl, tdir, &src), AT_OK);
  CHECK_EQ_INT(src->nheaders, 2); /* at_ptx.cuh and the args header */
  at_jit_options o = {"sm_90a", 0};
  char *ptx_dir = at_path_join(tmp, "ptx");
  setenv("AUTOTUNE_DUMP_PTX", ptx_dir, 1);

  at_jit_result r;
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  unsetenv("AUTOTUNE_DUMP_PTX");
  {
    char k0[65];
    at_jit_key(src, GOOD, &o, k0);
    char *ptx_path = at_xasprintf("%s/%s.ptx", ptx_dir, k0);
    char *ptx = slurp(ptx_path);
    CHECK_CONTAINS(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"); /* $AUTOTUNE_DUMP_PTX */
    free(ptx), free(ptx_path);
  }
  CHECK(r.ok);
  CHECK(!r.cache_hit);
  CHECK(r.cubin_size > 1000);
  CHECK(r.regs > 16 && r.regs <= 255);
  CHECK(r.compile_ms > 0);
  CHECK(strncmp(r.lowered_name, "_Z24gemm_a8w8_blockscale_mma", 28) == 0);
  char first_hash[65];
  memcpy(first_hash, r.cubin_hash, sizeof first_hash);
  int regs = r.regs;
  at_jit_result_free(&r);

  /* Second compile: from the cache, same cubin and resources. */
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  CHECK(r.ok && r.cache_hit);
  CHECK(strcmp(r.cubin_hash, first_hash) == 0);
  CHECK_EQ_INT(r.regs, regs);
  at_jit_result_free(&r);

  /* Damage the entry: flip a byte of its body. The next compile notices and rebuilds. */
  char key[65];
  at_jit_key(src, GOOD, &o, key);
  char *entry = at_xasprintf("%s/%.2s/%s.cubin", cache, key, key);
  FILE *f = fopen(entry, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, -10, SEEK_END);
    int c = fgetc(f);
    fseek(f, -10, SEEK_END);
    fputc(c ^ 0xff, f);
    fclose(f);
  }
  at_cache_entry ce;
  int damaged = 0;
  CHECK(at_cache_get(cache, key, &ce, &damaged) != AT_OK);
  CHECK(damaged);
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  CHECK(r.ok && !r.cache_hit && r.cache_damaged);
  CHECK(strcmp(r.cubin_hash, first_hash) == 0);
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_cache_get(cache, key, &ce, &damaged), AT_OK); /* rebuilt whole */
  at_cache_entry_free(&ce);
  /* A truncated entry too. */
  truncate(entry, 40);
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  CHECK(r.ok && r.cache_damaged);
  int regs1 = r.regs;
  /* An entry of a kernel with 0 registers (stored from a compile that NVRTC's own cache answered,
   * with no ptxas report): compiled again, the registers back. */
  CHECK(regs1 > 0);
  CHECK_EQ_INT(at_cache_put(cache, key, "lowered=k\nregs=0\n", r.cubin, r.cubin_size), AT_OK);
  char zero_regs_hash[65];
  memcpy(zero_regs_hash, r.cubin_hash, sizeof zero_regs_hash);
  at_jit_result_free(&r);
  /* A caller that only loads the cubin (the runtime: cubin_only) takes that entry as it is, its
   * cubin and name; the key is the same. */
  at_jit_options loads = o;
  loads.cubin_only = 1;
  char key_loads[65];
  at_jit_key(src, GOOD, &loads, key_loads);
  CHECK(strcmp(key_loads, key) == 0);
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &loads, cache, &r), AT_OK);
  CHECK(r.ok && r.cache_hit && !r.cache_damaged && r.regs == 0);
  CHECK(r.lowered_name && strcmp(r.lowered_name, "k") == 0);
  CHECK(strcmp(r.cubin_hash, zero_regs_hash) == 0);
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  CHECK(r.ok && !r.cache_hit && r.cache_damaged);
  CHECK_EQ_INT(r.regs, regs1);
  CHECK_CONTAINS(r.log, "Used ");
  at_jit_result_free(&r);
  CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
  CHECK(r.cache_hit && r.regs == regs1);
  at_jit_result_free(&r);

  /* Another candidate (split-K, L2 hint) compiles too; a different key. */
  char key2[65];
  at_jit_key(src, GOOD2, &o, key2);
  CHECK(strcmp(key, key2) != 0);
  CHECK_EQ_INT(at_jit_compile(src, GOOD2, &o, cache, &r), AT_OK);
  CHECK(r.ok);
  at_jit_result_free(&r);

  /* A compile error is an outcome with its log, not a failure of the call. */
  CHECK_EQ_INT(at_jit_compile(src, BAD, &o, cache, &r), AT_OK);
  CHECK(!r.ok);
  CHECK_CONTAINS(r.log, "BLOCK_K must be 128");
  char *line = at_jit_first_error(r.log);
  CHECK_CONTAINS(line, "error");
  free(line);
  at_jit_result_free(&r);

  /* The rescaling kernel refuses warp columns that straddle two scale blocks (BLOCK_N 384 over 4
   * warps: 96 columns each). */
  CHECK_EQ_INT(at_jit_compile(src, "gemm_a8w8_blockscale_mma_rs<64, 384, 128, 1, 4, 3, 1, 1, 0>", &o, cache, &r), AT_OK);
  CHECK(!r.ok);
  CHECK_CONTAINS(r.log, "128-column scale block");
  at_jit_result_free(&r);

  /* A ptxas advisory is in the log of the compile, and again when the kernel comes from the cache
   * (whose entry keeps the codes); a kernel without one has an empty log from the cache. */
  {
    char *adv_path = at_path_join(tmp, "advised.cu");
    CHECK_EQ_INT(at_write_file_atomic(adv_path, ADVISED, strlen(ADVISED)), AT_OK);
    at_jit_source *asrc;
    CHECK_EQ_INT(at_jit_source_load(adv_path, NULL, &asrc), AT_OK);
    CHECK_EQ_INT(at_jit_compile(asrc, "advised<1>", &o, cache, &r), AT_OK);
    CHECK(r.ok && !r.cache_hit);
    CHECK_CONTAINS(r.log, "(C7517)");
    at_jit_result_free(&r);
    CHECK_EQ_INT(at_jit_compile(asrc, "advised<1>", &o, cache, &r), AT_OK);
    CHECK(r.ok && r.cache_hit);
    CHECK_CONTAINS(r.log, "(C7517)");
    CHECK_CONTAINS(r.log, "from the compile cache");
    at_jit_result_free(&r);
    at_jit_source_free(asrc);
    free(adv_path);
    CHECK_EQ_INT(at_jit_compile(src, GOOD, &o, cache, &r), AT_OK);
    CHECK(r.ok && r.cache_hit && strcmp(r.log, "") == 0);
    at_jit_result_free(&r);
  }

  /* Keys follow content: the same files elsewhere give the same key; an edited header changes it;
   * another arch changes it. */
  char *copy = at_path_join(tmp, "tpl");
  at_mkdirs(copy);
  const char *files[] = {"gemm_a8w8_blockscale_mma.cuh", "at_ptx.cuh", "gemm_a8w8_blockscale_args.h"};
  for (int i = 0; i < 3; i++) {
    char *a = at_path_join(tdir, files[i]), *b = at_path_join(copy, files[i]);
    copy_file(a, b);
    free(a), free(b);
  }
  char *tpl2 = at_path_join(copy, files[0]);
  at_jit_source *src2;
  CHECK_EQ_INT(at_jit_source_load(tpl2, NULL, &src2), AT_OK);
  char k_copy[65];
  at_jit_key(src2, GOOD, &o, k_copy);
  CHECK(strcmp(k_copy, key) == 0);
  at_jit_source_free(src2);
  char *hdr = at_path_join(copy, "at_ptx.cuh");
  FILE *h = fopen(hdr, "a");
  if (h) fputs("\n// an edit\n", h), fclose(h);
  CHECK_EQ_INT(at_jit_source_load(tpl2, NULL, &src2), AT_OK);
  at_jit_key(src2, GOOD, &o, k_copy);
  CHECK(strcmp(k_copy, key) != 0);
  at_jit_source_free(src2);
  at_jit_options o89 = {"sm_89", 0};
  at_jit_key(src, GOOD, &o89, k_copy);
  CHECK(strcmp(k_copy, key) != 0);

  /* A candidate's key: its kernel's key without launch parameters; with them, a hash of the
   * kernel's key and their values, one per set of values, never the kernel's key itself. */
  {
    char c0[65], c1[65], c1again[65], c2[65], c89[65];
    at_cand_key(key, NULL, c0);
    CHECK(strcmp(c0, key) == 0);
    at_cand_key(key, "{\"GROUP_M\":1,\"SPLIT_K\":1}", c1);
    at_cand_key(key, "{\"GROUP_M\":1,\"SPLIT_K\":1}", c1again);
    at_cand_key(key, "{\"GROUP_M\":1,\"SPLIT_K\":2}", c2);
    at_cand_key(k_copy, "{\"GROUP_M\":1,\"SPLIT_K\":1}", c89); /* k_copy: the sm_89 kernel */
    CHECK_EQ_INT(strlen(c1), 64);
    CHECK(strcmp(c1, c1again) == 0);
    CHECK(strcmp(c1, key) != 0);
    CHECK(strcmp(c1, c2) != 0);
    CHECK(strcmp(c1, c89) != 0);
    /* the format, spelled out: SHA-256 over NUL-terminated fields */
    char want[65];
    at_sha256 sh;
    at_sha256_init(&sh);
    at_sha256_field(&sh, "autotune-cand-1");
    at_sha256_field(&sh, key);
    at_sha256_field(&sh, "{\"GROUP_M\":1,\"SPLIT_K\":1}");
    at_sha256_final_hex(&sh, want);
    CHECK(strcmp(c1, want) == 0);
  }

  /* A missing include is an input error naming it. */
  char *lonely = at_path_join(tmp, "lonely.cuh");
  at_write_file_atomic(lonely, "#include \"nowhere.cuh\"\n", 23);
  at_jit_source *src3 = NULL;
  CHECK_EQ_INT(at_jit_source_load(lonely, NULL, &src3), AT_ERR_INPUT);
  CHECK_CONTAINS(at_errmsg(), "nowhere.cuh");

  at_jit_source_free(src);
  free(ptx_dir);
  free(lonely), free(hdr), free(tpl2), free(copy), free(entry), free(tpl), free(cache), free(tmp);
  return check_summary();
}

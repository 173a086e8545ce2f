/* test_report.c: `autotune report` on a copy of the committed DB test/data/db/v3.db (argv[1] is the
 * binary): the tables (per shape, the top candidates with occupancy, every status counted per shape
 * and per variant, the pruning counts), --csv with one row per result (RFC 4180, every row as wide
 * as the header), --plot as well-formed XML (python3's parser) in both kinds, the filters, and errors
 * naming the argument; the theoretical occupancy (core/occupancy.h) against hand-worked cases; and on
 * v4.db (a judge run made one shape's winner as launched) the launched time of the judged winners. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/occupancy.h"
#include "core/util.h"
#include "dbq.h"
#include "proc.h"

static const char *EXE;
static char *TMP, *DB;

static int report(char **out, ...) {
  const char *const pre[] = {"report", "--db", DB, NULL};
  va_list ap;
  va_start(ap, out);
  int rc = proc_run_pre(EXE, pre, TMP, 120, out, ap);
  va_end(ap);
  return rc;
}
#define REPORT(out, ...) report(out, __VA_ARGS__, (const char *)NULL)

/* Records of a CSV text (quoted fields may hold line breaks); -1 when a record's field count differs
 * from the header's. */
static int csv_records(const char *text, int *columns) {
  int records = 0, fields = 1, quoted = 0;
  *columns = -1;
  for (const char *p = text; *p; p++) {
    if (*p == '"') quoted = !quoted;
    else if (!quoted && *p == ',') fields++;
    else if (!quoted && *p == '\n') {
      if (*columns < 0) *columns = fields;
      else if (fields != *columns) return -1;
      records++;
      fields = 1;
    }
  }
  return records - 1; /* the header is not a row */
}

/* Is the file well-formed XML with an <svg> root? Through python3's parser; 77 when no python3. */
static int svg_ok(const char *path) {
  char *cmd = at_xasprintf("python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot();"
                           " sys.exit(0 if r.tag == '{http://www.w3.org/2000/svg}svg' else 1)\" '%s'",
                           path);
  int rc = system("python3 -c '' 2>/dev/null") == 0 ? system(cmd) : 77 << 8;
  free(cmd);
  return WEXITSTATUS(rc);
}

static void tables(void) {
  char *out;
  CHECK_EQ_INT(REPORT(&out, "--top", "3"), 0);
  CHECK_CONTAINS(out, "(schema 3): 2 runs, 18 candidates (18 compiled), 90 results in all; 5 shapes here");
  CHECK_CONTAINS(out, "== NVIDIA H100 80GB HBM3 (sm90, sm_90a, 132 SMs); peaks measured: 1485 TFLOP/s FP8, 2986 GB/s");
  CHECK_CONTAINS(out, "winner us  TFLOP/s  roof%  vendor us  speedup");
  CHECK_EQ_INT(count_of(out, "\n-- M="), 5);
  CHECK_CONTAINS(out, "-- M=16 N=1024 K=512, tag REPORT, NVIDIA H100 80GB HBM3: 18 results: ok 16, wrong 0, fault 0,"
                      " timeout 1, resources 1, quarantined 0");
  CHECK_CONTAINS(out, "-- M=512 N=1024 K=512, tag REPORT, NVIDIA H100 80GB HBM3: 18 results: ok 16, wrong 1,");
  CHECK_CONTAINS(out, "occ  blk limit   regs smem KiB    spills status");
  CHECK_EQ_INT(count_of(out, "     1*  mma      BK128 "), 5); /* every shape's winner ranks first */
  CHECK_EQ_INT(count_of(out, "(13 more checked results)") + count_of(out, "(14 more checked results)"), 5);
  CHECK_CONTAINS(out, "  mma                90        82         1         1         1         5           0        18             0");
  CHECK_CONTAINS(out, "pruning (the latest run of each tag):\n  REPORT, run 1: mma/split_small 6");
  free(out);
  /* Filters: a shape, a shapes file with names (in its order), a tag, a device. */
  CHECK_EQ_INT(REPORT(&out, "--shape", "64x1024x512"), 0);
  CHECK_EQ_INT(count_of(out, "\n-- M="), 1);
  CHECK_CONTAINS(out, "-- M=64 N=1024 K=512, tag REPORT");
  free(out);
  char *shapes = at_path_join(getenv("AT_TEST_DATA"), "spaces/report.yaml");
  CHECK_EQ_INT(REPORT(&out, "--shapes", shapes, "--only", "*/decode", "--tag", "REPORT", "--device", "sm90"), 0);
  CHECK_EQ_INT(count_of(out, "\n-- M="), 4);
  CHECK_CONTAINS(out, "     16    1024     512  w1/decode (REPORT)");
  CHECK_CONTAINS(out, "-- M=16 N=2048 K=1024 (w2/decode), tag REPORT");
  free(out);
  char *csv = at_path_join(TMP, "some.csv");
  const char *two = "M,N,K\n16,1024,512\n32,1024,512\n";
  at_write_file_atomic(csv, two, strlen(two));
  CHECK_EQ_INT(REPORT(&out, "--shapes", csv), 0); /* a shape with no results is said, not fatal */
  CHECK_CONTAINS(out, "report: no results for M=32 N=1024 K=512 in");
  CHECK_EQ_INT(count_of(out, "\n-- M="), 1);
  free(out), free(csv), free(shapes);
}

static void outputs(void) {
  char *csv = at_path_join(TMP, "all.csv"), *svg = at_path_join(TMP, "lines.svg"), *heat = at_path_join(TMP, "heat.svg");
  char *out;
  CHECK_EQ_INT(REPORT(&out, "--csv", csv, "--plot", svg, "--top", "0"), 0);
  free(out);
  char *text = slurp(csv);
  int columns;
  CHECK_EQ_INT(csv_records(text, &columns), dbq(DB, "SELECT count(*) FROM results"));
  CHECK_EQ_INT(columns, 39);
  CHECK(strncmp(text, "device,arch,op,tag,M,N,K,name,variant,family,params,kernel,status,", 66) == 0);
  CHECK_CONTAINS(text, "NVIDIA H100 80GB HBM3,sm_90a,gemm_a8w8_blockscale,REPORT,512,1024,512,,mma,mma,\"{\"\"BLOCK_K\"\":128,");
  CHECK_CONTAINS(text, ",cublaslt_blockscale_fp8,");
  CHECK_EQ_INT(count_of(text, ",ok,1,1,"), 5); /* one winner per shape, all current */
  free(text);
  int rc = svg_ok(svg);
  if (rc == 77)
    fprintf(stderr, "no python3: the SVG is not parsed\n");
  else
    CHECK_EQ_INT(rc, 0);
  text = slurp(svg);
  CHECK_CONTAINS(text, "TFLOP/s against M per provider");
  CHECK_EQ_INT(count_of(text, "<polyline "), 6); /* 2 panels x 3 providers */
  free(text);
  /* A results file's providers join the plot against M. */
  char *res = at_path_join(TMP, "res.json");
  const char *rj = "{\"format\": \"autotune-results/1\", \"providers\": [\"triton\"], \"shapes\": ["
                   "{\"m\": 16, \"n\": 1024, \"k\": 512, \"triton\": {\"status\": \"ok\", \"time_us\": 3}},"
                   "{\"m\": 64, \"n\": 1024, \"k\": 512, \"triton\": {\"status\": \"ok\", \"time_us\": 4}}]}";
  at_write_file_atomic(res, rj, strlen(rj));
  CHECK_EQ_INT(REPORT(&out, "--top", "0", "--plot", svg, "--results", res), 0);
  free(out);
  text = slurp(svg);
  CHECK_EQ_INT(count_of(text, "<polyline "), 7); /* the triton line in the first panel only */
  CHECK_CONTAINS(text, ">triton</text>");
  free(text);
  rc = svg_ok(svg);
  if (rc != 77) CHECK_EQ_INT(rc, 0);
  CHECK_EQ_INT(REPORT(&out, "--results", res), 2);
  CHECK_CONTAINS(out, "--results adds providers to --plot");
  free(out), free(res);
  CHECK_EQ_INT(REPORT(&out, "--shape", "512x1024x512", "--plot", heat), 0);
  free(out);
  rc = svg_ok(heat);
  if (rc != 77) CHECK_EQ_INT(rc, 0);
  text = slurp(heat);
  CHECK_CONTAINS(text, "best time per (BLOCK_M, BLOCK_N)");
  CHECK_EQ_INT(count_of(text, " us ("), 4); /* 2 BLOCK_M x 2 BLOCK_N cells */
  CHECK_CONTAINS(text, "occ ");
  free(text);
  free(csv), free(svg), free(heat);
}

static void errors(void) {
  char *out;
  static const struct {
    const char *a, *b, *msg;
  } BAD[] = {
      {"--shape", "16x1024", "--shape: expects MxNxK like 16x1536x7168, got '16x1024'"},
      {"--tag", "NOPE", "--tag: no shape of tag NOPE in the DB (its tags: REPORT)"},
      {"--device", "sm80", "--device: no device sm80 in the DB (it has: NVIDIA H100 80GB HBM3 (sm90))"},
      {"--top", "-1", "--top: expects a count from 0"},
      {"--only", "x", "--only chooses groups of a --shapes file"},
      {"--bogus", "1", "report: unknown option '--bogus'"},
  };
  for (size_t i = 0; i < AT_ARRAY_LEN(BAD); i++) {
    CHECK_EQ_INT(REPORT(&out, BAD[i].a, BAD[i].b), 2);
    CHECK_CONTAINS(out, BAD[i].msg);
    free(out);
  }
  CHECK_EQ_INT(REPORT(&out, "--csv", DB), 2);
  CHECK_CONTAINS(out, "is the DB");
  free(out);
  CHECK_EQ_INT(REPORT(&out, "--shape", "32x1024x512"), 1);
  CHECK_CONTAINS(out, "has no results for the shapes asked for");
  free(out);
  char *argv[] = {(char *)EXE, "report", "--db", "/nonexistent/x.db", NULL};
  char *path = at_path_join(TMP, "out.txt");
  CHECK_EQ_INT(proc_run(argv, path, 60), 2);
  out = slurp(path);
  CHECK_CONTAINS(out, "report: --db: no DB at /nonexistent/x.db");
  free(out), free(path);
}

/* Hand-worked occupancy on an H100 (64 warps, 32 blocks, 64K registers in 4 parts, 228 KiB). */
static void occupancy(void) {
  at_occ_limits l;
  CHECK_EQ_INT(at_occ_limits_for_cc(90, &l), AT_OK);
  at_occupancy o;
  at_occupancy_of(&l, 128, 24, 0, &o); /* warps: 64 / 4 = 16 blocks; registers: 4 x 21 = 84 warps */
  CHECK(o.blocks_per_sm == 16 && strcmp(o.limiter, "warps") == 0 && o.fraction == 1.0);
  at_occupancy_of(&l, 128, 255, 0, &o); /* 8192 registers a warp: 2 a part, 8 warps, 2 blocks */
  CHECK(o.blocks_per_sm == 2 && strcmp(o.limiter, "registers") == 0 && o.warps_per_sm == 8);
  at_occupancy_of(&l, 64, 149, 20736, &o); /* 4864 a warp: 3 a part, 12 warps, 6 blocks of 2 */
  CHECK(o.blocks_per_sm == 6 && strcmp(o.limiter, "registers") == 0);
  at_occupancy_of(&l, 384, 64, 200 * 1024, &o); /* 201 KiB with the reserved 1 KiB: one block (registers: 2) */
  CHECK(o.blocks_per_sm == 1 && strcmp(o.limiter, "shared memory") == 0);
  at_occupancy_of(&l, 128, 64, 232448 + 1, &o);
  CHECK(o.blocks_per_sm == 0 && strcmp(o.limiter, "shared memory per block") == 0);
  at_occupancy_of(&l, 1024, 64, 0, &o); /* 32 warps x 2048 registers: the whole file, one block */
  CHECK(o.blocks_per_sm == 1);
  at_occupancy_of(&l, 1024, 128, 0, &o); /* 131072 registers: more than a block may have */
  CHECK(o.blocks_per_sm == 0 && strcmp(o.limiter, "registers per block") == 0);
  at_occupancy_of(&l, 32, 16, 0, &o); /* tiny blocks: the 32 block slots */
  CHECK(o.blocks_per_sm == 32 && strcmp(o.limiter, "blocks") == 0 && o.fraction == 0.5);
  CHECK_EQ_INT(at_occ_limits_for_cc(89, &l), AT_OK);
  at_occupancy_of(&l, 256, 32, 0, &o); /* 48 warps / 8 */
  CHECK(o.blocks_per_sm == 6 && strcmp(o.limiter, "warps") == 0);
  CHECK_EQ_INT(at_occ_limits_for_cc(75, &l), AT_ERR_INPUT);
}

/* v4.db: the winners a judge run decided (two shapes: one changed, one kept) show their launched
 * time; the others, and every winner of v3.db, a dash. */
static void launched(void) {
  char *out;
  CHECK_EQ_INT(REPORT(&out, "--top", "1"), 0); /* v3.db: schema 3, no launches */
  CHECK_CONTAINS(out, "cuBLAS32 us launched us\n");
  CHECK_EQ_INT(count_of(out, "decided as the runtime launches it"), 0);
  free(out);
  char *v3 = DB;
  DB = at_path_join(TMP, "v4.db");
  char *src = at_path_join(getenv("AT_TEST_DATA"), "db/v4.db");
  char *cmd = at_xasprintf("cp '%s' '%s'", src, DB);
  CHECK_EQ_INT(system(cmd), 0);
  free(cmd), free(src);
  CHECK_EQ_INT(REPORT(&out, "--top", "1"), 0);
  CHECK_EQ_INT(count_of(out, "the winner (*) was decided as the runtime launches it (autotune judge): "), 2);
  int dashes = 0, times = 0; /* the last column of the five shape rows */
  for (const char *p = out; (p = strstr(p, "(REPORT) ")); p++) {
    const char *eol = strchr(p, '\n');
    if (eol && eol > p + 2 && eol[-1] == '-' && eol[-2] == ' ') dashes++;
    else times++;
  }
  CHECK_EQ_INT(dashes, 3);
  CHECK_EQ_INT(times, 2);
  free(out);
  free(DB);
  DB = v3;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  EXE = argv[1];
  TMP = scratch_dir("report");
  DB = at_path_join(TMP, "v3.db");
  char *src = at_path_join(getenv("AT_TEST_DATA"), "db/v3.db");
  char *cmd = at_xasprintf("cp '%s' '%s'", src, DB);
  if (system(cmd) != 0) return 1;
  free(cmd), free(src);
  occupancy();
  tables();
  outputs();
  errors();
  launched();
  return check_summary();
}

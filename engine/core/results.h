/* results.h: the one JSON schema of provider results, "autotune-results/1" (docs/formats.md, "Results
 * files"): what `autotune compare --json` writes for every provider it ran, and what another tool
 * writes to take part in a comparison (`compare --providers file:PATH`), such as a Triton or CUTLASS
 * sweep. This file reads it; the writer is compare's.
 *
 *   {"format": "autotune-results/1", "op": "gemm_a8w8_blockscale", "device": "NVIDIA H100 80GB HBM3",
 *    "providers": ["triton"],
 *    "shapes": [{"m": 16, "n": 1536, "k": 7168,
 *                "triton": {"status": "ok", "time_us": 12.5, "kernel": "matmul_kernel",
 *                           "meta": {"BLOCK_M": 16, "num_warps": 4}}}]}
 *
 * Required: format, providers (names of letters, digits and _ - . +), shapes (each m, n, k positive
 * integers, each (m, n, k) once), and in a provider's record its status; a record with status "ok"
 * needs a positive time_us. A provider absent from a shape has no record for it. Everything else is
 * optional and other members are ignored. Errors are AT_ERR_INPUT naming the file and the place
 * ("f.json: shapes[3] (M=16 N=1536 K=7168), triton: ..."). */
#ifndef AT_RESULTS_H
#define AT_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#define AT_RESULTS_FORMAT "autotune-results/1"

typedef struct at_result_rec {
  const char *provider; /* one of the file's providers */
  int64_t m, n, k;
  char status[16];
  double time_us, time_min_us, time_max_us; /* -1: not given */
  double check_ratio;                       /* -1: not given; a huge value for "inf" */
  int64_t samples;                          /* -1: not given */
  char *message;                            /* "" when not given */
  char *kernel;                             /* NULL when not given */
  char *meta;                               /* the "meta" value as JSON text, NULL when not given */
} at_result_rec;

typedef struct at_results_file {
  char *path;
  char *op, *device, *arch, *tag; /* NULL when the file does not say */
  char **providers;
  size_t nproviders;
  at_result_rec *recs;
  size_t n;
} at_results_file;

int at_results_load(const char *path, at_results_file *out);
/* The same, from text already read (path names it in errors). */
int at_results_parse(const char *path, const char *text, size_t len, at_results_file *out);
void at_results_free(at_results_file *f);

/* The record of a provider for a shape, or NULL. */
const at_result_rec *at_results_find(const at_results_file *f, const char *provider, int64_t m, int64_t n, int64_t k);

/* A provider name a results file may use: 1 to 63 letters, digits and _ - . +, and not a member
 * name the schema gives to a shape (m, n, k, name, sets, flops, min_bytes, ratio, ratios). */
int at_results_provider_name_ok(const char *name);

#endif

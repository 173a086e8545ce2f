/* expect.h: performance expectations (`autotune expect`, docs/formats.md "Expectations files"): the
 * TFLOP/s of the tuned configs per (device, op, tag, shape), with the check and timing settings to
 * measure them again, and the comparison of a measurement with them. No GPU, no DB here: the
 * command measures (or reads a measurement) and this file judges, so the judgement is tested on the
 * CPU.
 *
 *   {"format": "autotune-expectations/1", "recorded": "...", "source": "db", "db": "tuned/autotune.db",
 *    "check": {"atol": 0.01, "rtol": 0.01, "gamma": 0.0009765625},
 *    "timing": {"warmup": 1, "samples": 20, "l2_multiple": 2, "seed": 20261122},
 *    "expectations": [{"device": "NVIDIA H100 80GB HBM3", "arch": "sm_90a", "op": "gemm_a8w8_blockscale",
 *                      "tag": "A8W8_BLOCKSCALE", "m": 16, "n": 1024, "k": 1024, "tflops": 5.05,
 *                      "time_us": 6.65, "config": {"variant": "mma", "params": {...}}}]} */
#ifndef AT_EXPECT_H
#define AT_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include "results.h"

#define AT_EXPECT_FORMAT "autotune-expectations/1"

typedef struct at_expect_settings {
  double atol, rtol, gamma; /* the check's bound */
  uint64_t seed;
  int warmup, samples;
  double l2_multiple;
} at_expect_settings;

/* The shipped spaces' check and a re-timing's samples: what `expect` uses without --space. */
void at_expect_default_settings(at_expect_settings *s);

typedef struct at_expect_entry {
  char device[128], arch[16], op[64], tag[64]; /* tag "" in a measurement: any tag */
  int64_t m, n, k;
  double tflops;  /* > 0 in a file; -1 in a measurement that has none */
  double time_us; /* -1 when not known */
  char *config;   /* JSON text of {"variant", "params"}, or NULL */
} at_expect_entry;

typedef struct at_expect_file {
  char *source, *db, *recorded; /* NULL when not said */
  at_expect_settings settings;
  at_expect_entry *e;
  size_t n;
} at_expect_file;

int at_expect_load(const char *path, at_expect_file *out);
int at_expect_parse(const char *path, const char *text, size_t len, at_expect_file *out);
/* The file's JSON text, malloc'd. */
char *at_expect_to_json(const at_expect_file *f);
void at_expect_free(at_expect_file *f);
/* Appends an entry (config copied; may be NULL). */
void at_expect_add(at_expect_file *f, const at_expect_entry *e);

/* A results file's provider (core/results.h) as a measurement: its device and op from the file
 * (the device is required), its tag when it says one, the TFLOP/s of each record with a time. */
int at_expect_from_results(const at_results_file *r, const char *provider, at_expect_file *out);

enum {
  AT_EXPECT_OK,           /* within the tolerance, or faster by less */
  AT_EXPECT_FASTER,       /* faster than the tolerance: worth recording again */
  AT_EXPECT_SLOWER,       /* a regression: slower than the tolerance allows */
  AT_EXPECT_MISSING,      /* the measurement has the device but no time for the entry */
  AT_EXPECT_OTHER_DEVICE, /* the measurement is of other devices: not judged */
};

typedef struct at_expect_verdict {
  int kind;             /* AT_EXPECT_* */
  double got_tflops;    /* -1 when none */
  double change_pct;    /* 100 (got / expected - 1) when both are known */
} at_expect_verdict;

/* Judges every entry of want against the entry of got with the same device name, op, shape and tag
 * (a got tag "" matches any): slower when got < want x (1 - tolerance/100). out has want->n slots.
 * *failures counts SLOWER and MISSING; *judged the entries not of another device. */
void at_expect_judge(const at_expect_file *want, const at_expect_file *got, double tolerance_pct,
                     at_expect_verdict *out, int *failures, int *judged);

#endif

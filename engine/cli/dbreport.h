/* dbreport.h: the view of a DB that `autotune report` prints, writes as CSV and plots: the chosen
 * (device, shape) pairs with their results, winners, baselines and the derived figures (theoretical
 * occupancy, TFLOP/s), built once from core/store_report.h's snapshot.
 *
 * Owned here: which shapes are in the view (--device, --tag, --shape, --shapes/--only) and what a
 * row of it means. The text tables are cmd_report.c's, the CSV dbreport_csv.c's, the SVG
 * dbreport_svg.c's. */
#ifndef AT_CLI_DBREPORT_H
#define AT_CLI_DBREPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/occupancy.h"
#include "../core/results.h"
#include "../core/store_report.h"

typedef struct rep_row {
  const at_rep_result *r;
  const at_rep_candidate *c; /* NULL only in a DB whose result names no candidate */
  at_occupancy occ;          /* theoretical, on the shape's device; blocks_per_sm -1: not known */
  int winner;                /* the shape's recorded winner */
} rep_row;

typedef struct rep_shape {
  const at_rep_device *dev;
  const at_rep_problem *prob;
  const char *name;          /* its group in --shapes, or NULL */
  rep_row *rows;             /* every result of the shape, by candidate id */
  size_t nrows;
  const at_rep_winner *winner;
  double ref_us, vendor_us;  /* the baselines; -1 when not timed */
  const char *vendor_name;
  double flops, min_bytes; /* the op's, for the shape */
} rep_shape;

typedef struct rep_filter {
  const char *device; /* "sm90", or a product name as in exported files or the DB, or NULL */
  const char *tag;
  const int64_t (*shapes)[3]; /* --shape M N K, nshapes of them */
  size_t nshapes;
  const char *shapes_file, *only;
} rep_filter;

typedef struct rep_view {
  at_report_data d;
  rep_shape *shapes;
  size_t n;
  /* Shapes asked for (--shape, --shapes) that have no result in the DB: "M=.. N=.. K=.. (name)". */
  char **missing;
  size_t nmissing;
  /* More providers for the plot against M (report --results FILE): results files (core/results.h). */
  const at_results_file *files;
  size_t nfiles;
} rep_view;

/* Reads the DB at path (read-only) and builds the view. Errors: AT_ERR_INPUT for a filter that
 * names nothing in the DB or a bad shapes file, AT_ERR_RUNTIME for the DB. */
int rep_view_build(const char *db_path, const rep_filter *f, rep_view *v);
void rep_view_free(rep_view *v);
/* The view's order without a shapes list, a qsort comparator of rep_shape: by device, tag, N, K,
 * then M ascending (which is also what the plot against M wants within a panel). */
int rep_shape_order(const void *a, const void *b);

/* The time a result is ranked by: its side-by-side re-timing where it was a leader, else its first
 * median; -1 when not timed. */
double rep_rank_time(const at_rep_result *r);
/* TFLOP/s of a time on a shape (0 when no time). */
double rep_tflops(const rep_shape *s, double time_us);
/* The ok results of current candidates, fastest first (rep_rank_time); *n of them, malloc'd. */
const rep_row **rep_ranked(const rep_shape *s, size_t *n);
/* "BM32 BN64 S3 ..." from canonical parameters JSON: each name by the initials of its words. */
void rep_params_short(const char *params, char *out, size_t cap);
/* A parameter's value from canonical JSON; dflt when absent. */
int64_t rep_param(const char *params, const char *name, int64_t dflt);
/* The share of the roofline floor a time reaches, in percent: max(flops / peak FP8 rate, min_bytes
 * / peak copy rate) over the time, with the peaks measured on the shape's device; 0 when unknown. */
double rep_roofline(const rep_view *v, const rep_shape *s, double time_us);
/* The peak rates of the latest run on a device that measured them; 0 when none. */
void rep_peaks(const rep_view *v, int64_t device_id, double *tflops, double *gbs);
/* Does a device answer to a name: "sm90", its product name as in exported files
 * (NVIDIA_H100_80GB_HBM3), or its name as the DB has it? */
int rep_device_matches(const at_rep_device *d, const char *want);
/* "sm90" of a device (at_device_file_name's arch form). */
void rep_device_short(const at_rep_device *d, char *out, size_t cap);

int rep_write_csv(const rep_view *v, const char *path);
/* One shape in the view: the heat map of best time per (BLOCK_M, BLOCK_N); several: TFLOP/s
 * against M per provider (the DB's, then every provider of v->files), one panel per (N, K). */
int rep_write_svg(const rep_view *v, const char *path);

#endif

/* report.c: see report.h. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/jit.h"
#include "../core/util.h"
#include "judge.h"

static void params_of(const at_report *r, int64_t cand, char *out, size_t n) {
  const at_cand *c = &r->cands->c[cand];
  snprintf(out, n, "%s %s", r->space->variants[c->variant].name, c->params_json);
}

void at_report_print(const at_report *r) {
  const at_space *s = r->space;
  const at_enum *e = r->cands;
  const at_compile_stats *c = r->compile;
  FILE *f = stdout;
  fprintf(f, "\n== %s: op %s, tag %s, target %s (NVRTC %s)\n", s->path, s->op_name, s->tag, r->arch, at_nvrtc_version());
  fprintf(f, "variants %zu, candidates %lld, pruned %lld, surviving %zu\n", s->nvariants, (long long)e->total,
          (long long)at_enum_pruned_total(e), e->n);
  for (size_t i = 0; i < e->npruned; i++) {
    const at_prune_count *p = &e->pruned[i];
    if (!p->count) continue;
    fprintf(f, "  pruned by %s/%s: %lld%s\n", s->variants[p->variant].name, p->rule, (long long)p->count,
            p->per_shape ? " (candidate, shape) pairs" : "");
  }
  if (c->pruned_registers)
    fprintf(f, "  pruned by device_registers (after compiling): %lld\n", (long long)c->pruned_registers);
  /* ok, failed and known from the DB count candidates; compiled now and from the cache, kernels. */
  fprintf(f, "compile: %lld ok, %lld failed; %zu candidates, %lld kernels: %lld compiled now (%.1f s of NVRTC,"
             " %.0f ms each), %lld from the cache; %lld candidates known from the DB; %.1f s wall\n",
          (long long)c->ok, (long long)c->failed, e->n, (long long)c->kernels, (long long)c->compiled_now,
          c->compile_ms_sum / 1e3, c->compiled_now ? c->compile_ms_sum / (double)c->compiled_now : 0.0,
          (long long)c->cache_hits, (long long)c->db_hits, c->wall_s);
  if (c->cache_repaired) fprintf(f, "  %lld damaged cache entries rebuilt\n", (long long)c->cache_repaired);
  for (size_t i = 0; i < c->nfailures; i++)
    fprintf(f, "  failed %lldx: %s\n    first: %s\n", (long long)c->failures[i].count, c->failures[i].first_line,
            c->failures[i].example);

  const at_tune_stats *t = r->tune;
  if (t) {
    fprintf(f, "device: %s; peak measured: %.0f TFLOP/s FP8, %.0f GB/s\n", t->device_name, t->peak_tflops, t->peak_gbs);
    fprintf(f, "%-22s %-58s %10s %9s %7s %10s %10s %10s\n", "shape (M N K)", "winner", "time us", "TFLOP/s", "roof%",
            "cuBLAS32 us", "vendor us", "vendor chk");
    for (size_t i = 0; i < t->nshapes; i++) {
      const at_shape_outcome *o = &t->shapes[i];
      if (o->skipped) continue; /* another shard's */
      char shape[64], win[256] = "-";
      snprintf(shape, sizeof shape, "%lld %lld %lld", (long long)o->shape.m, (long long)o->shape.n,
               (long long)o->shape.k);
      if (o->winner >= 0) params_of(r, o->winner, win, sizeof win);
      char vchk[32] = "-"; /* the vendor output's worst error / bound: above 1 it failed the check */
      if (o->vendor_check_ratio >= 0) snprintf(vchk, sizeof vchk, "%.3g", o->vendor_check_ratio);
      fprintf(f, "%-22s %-58s %10.2f %9.1f %7.1f %10.2f %10.2f %10s\n", shape, win, o->winner_us, o->tflops,
              o->roofline_pct, o->ref_us, o->vendor_us, vchk);
    }
    fprintf(f, "results:");
    for (int k = 0; k < AT_ST_COUNT; k++) fprintf(f, " %s %lld", AT_STATUS_NAMES[k], (long long)t->counts[k]);
    fprintf(f, "; %lld evaluated now, %lld from the DB", (long long)t->evaluated, (long long)t->resumed);
    if (t->adopted) fprintf(f, " (%lld from a candidate with the same cubin)", (long long)t->adopted);
    fputc('\n', f);
    fprintf(f, "gpu phase: %.1f s (setup %.1f, check+time %.1f, re-time %.1f), %.1f evaluations/s\n", t->wall_s,
            t->setup_s, t->eval_s, t->retime_s, t->wall_s > 0 ? (double)t->evaluated / t->wall_s : 0.0);
    /* The GPU phase runs beside the compile phase: how much of it the GPUs were at work, and how
     * long they waited for compiles (the rest of the idle time is the parent's own turn-around). */
    double gpu_s = t->wall_s * (t->ngpus > 0 ? t->ngpus : 1);
    fprintf(f, "gpus: busy %.1f s, idle %.1f s (%.1f%% of %d x the gpu phase), %.1f s of it waiting for compiles\n",
            t->busy_s, gpu_s - t->busy_s, gpu_s > 0 ? 100.0 * (gpu_s - t->busy_s) / gpu_s : 0.0, t->ngpus,
            t->starved_s);
  }
  if (r->no_gpu_reason && !r->compile_only)
    fprintf(f, "timing needs a GPU: %s. Everything above is recorded in %s; run again on a machine with a GPU.\n",
            r->no_gpu_reason, r->db_path);
  if (r->interrupted) fprintf(f, "interrupted: finished work is kept in %s; run the same command again to resume.\n", r->db_path);
  fprintf(f, "wall time: %.1f s; DB: %s\n", r->seconds, r->db_path);
  fflush(f);
}

int at_report_write_json(const at_report *r, const char *path) {
  const at_enum *e = r->cands;
  const at_compile_stats *c = r->compile;
  at_buf b = {0};
  at_buf_puts(&b, "{\n  \"space\": ");
  at_buf_json_string(&b, r->space->path);
  at_buf_printf(&b, ",\n  \"arch\": \"%s\",\n  \"nvrtc\": \"%s\",\n", r->arch, at_nvrtc_version());
  at_buf_printf(&b, "  \"variants\": %zu,\n  \"candidates\": %lld,\n  \"pruned\": %lld,\n  \"surviving\": %zu,\n",
                r->space->nvariants, (long long)e->total, (long long)at_enum_pruned_total(e), e->n);
  at_buf_puts(&b, "  \"pruned_by\": {");
  int first = 1;
  for (size_t i = 0; i < e->npruned; i++) {
    const at_prune_count *p = &e->pruned[i];
    if (p->per_shape) continue;
    at_buf_printf(&b, "%s\"%s/%s\": %lld", first ? "" : ", ", r->space->variants[p->variant].name, p->rule,
                  (long long)p->count);
    first = 0;
  }
  at_buf_printf(&b, "},\n  \"pruned_registers\": %lld,\n", (long long)c->pruned_registers);
  at_buf_printf(&b,
                "  \"kernels\": %lld,\n  \"compiled\": %lld,\n  \"compile_failed\": %lld,\n  \"compiled_now\": %lld,\n"
                "  \"cache_hits\": %lld,\n  \"db_hits\": %lld,\n  \"cache_repaired\": %lld,\n  \"compile_ms_sum\": %.1f,\n"
                "  \"compile_seconds\": %.3f,\n",
                (long long)c->kernels, (long long)c->ok, (long long)c->failed, (long long)c->compiled_now,
                (long long)c->cache_hits, (long long)c->db_hits, (long long)c->cache_repaired, c->compile_ms_sum, c->wall_s);
  at_buf_puts(&b, "  \"compile_failures\": [");
  for (size_t i = 0; i < c->nfailures; i++) {
    at_buf_puts(&b, i ? ", " : "");
    at_buf_printf(&b, "{\"count\": %lld, \"first_line\": ", (long long)c->failures[i].count);
    at_buf_json_string(&b, c->failures[i].first_line);
    at_buf_puts(&b, "}");
  }
  at_buf_puts(&b, "],\n");
  const at_tune_stats *t = r->tune;
  if (t) {
    at_buf_printf(&b, "  \"device\": ");
    at_buf_json_string(&b, t->device_name);
    at_buf_printf(&b, ",\n  \"peak_tflops\": %.1f,\n  \"peak_gbs\": %.1f,\n", t->peak_tflops, t->peak_gbs);
    at_buf_puts(&b, "  \"results\": {");
    for (int k = 0; k < AT_ST_COUNT; k++)
      at_buf_printf(&b, "%s\"%s\": %lld", k ? ", " : "", AT_STATUS_NAMES[k], (long long)t->counts[k]);
    at_buf_printf(&b, "},\n  \"evaluated\": %lld,\n  \"resumed\": %lld,\n  \"adopted\": %lld,\n  \"replaced_workers\": %lld,\n",
                  (long long)t->evaluated, (long long)t->resumed, (long long)t->adopted, (long long)t->replaced_workers);
    at_buf_printf(&b, "  \"gpu_seconds\": %.3f,\n  \"setup_seconds\": %.3f,\n  \"eval_seconds\": %.3f,\n"
                      "  \"retime_seconds\": %.3f,\n",
                  t->wall_s, t->setup_s, t->eval_s, t->retime_s);
    at_buf_printf(&b, "  \"gpus\": %d,\n  \"gpu_busy_seconds\": %.3f,\n  \"gpu_starved_seconds\": %.3f,\n", t->ngpus,
                  t->busy_s, t->starved_s);
    at_buf_puts(&b, "  \"shapes\": [");
    int listed = 0;
    for (size_t i = 0; i < t->nshapes; i++) {
      const at_shape_outcome *o = &t->shapes[i];
      if (o->skipped) continue; /* another shard's */
      at_buf_printf(&b, "%s\n    {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"winner\": ", listed++ ? "," : "", (long long)o->shape.m,
                    (long long)o->shape.n, (long long)o->shape.k);
      if (o->winner >= 0) {
        const at_cand *cd = &r->cands->c[o->winner];
        at_buf_printf(&b, "{\"variant\": \"%s\", \"params\": %s}", r->space->variants[cd->variant].name, cd->params_json);
      } else {
        at_buf_puts(&b, "null");
      }
      at_buf_printf(&b, ", \"time_us\": %.3f, \"tflops\": %.2f, \"roofline_pct\": %.2f, \"ref_us\": %.3f, \"vendor_us\": %.3f",
                    o->winner_us, o->tflops, o->roofline_pct, o->ref_us, o->vendor_us);
      if (o->vendor_check_ratio >= 0 && o->vendor_check_ratio <= 1e300)
        at_buf_printf(&b, ", \"vendor_check_ratio\": %.4g", o->vendor_check_ratio);
      else
        at_buf_puts(&b, o->vendor_check_ratio > 1e300 ? ", \"vendor_check_ratio\": \"inf\"" : ", \"vendor_check_ratio\": null");
      at_buf_puts(&b, ", \"counts\": {");
      for (int k = 0; k < AT_ST_COUNT; k++)
        at_buf_printf(&b, "%s\"%s\": %lld", k ? ", " : "", AT_STATUS_NAMES[k], (long long)o->counts[k]);
      at_buf_puts(&b, "}}");
    }
    at_buf_puts(&b, "\n  ],\n");
  }
  if (r->judge) {
    const at_judge_stats *j = r->judge;
    at_buf_printf(&b,
                  "  \"judge\": {\"judged\": %d, \"changed\": %d, \"skipped\": %d, \"failed\": %d, \"launched_ratio\": %.4f,"
                  " \"seconds\": %.3f},\n",
                  j->judged, j->changed, j->skipped, j->failed, j->judged ? exp(j->log_gain / j->judged) : 1.0, j->seconds);
  } else {
    at_buf_puts(&b, "  \"judge\": null,\n");
  }
  at_buf_printf(&b, "  \"timing_skipped\": %s,\n", r->no_gpu_reason || r->compile_only ? "true" : "false");
  at_buf_printf(&b, "  \"interrupted\": %s,\n", r->interrupted ? "true" : "false");
  at_buf_printf(&b, "  \"seconds\": %.3f\n}\n", r->seconds);
  int rc = at_write_file_atomic(path, b.data, b.len);
  at_buf_free(&b);
  return rc;
}

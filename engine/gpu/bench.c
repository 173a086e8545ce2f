/* bench.c: see bench.h. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "../core/util.h"

struct at_timed {
  const at_gpu *g;
  CUgraph graph;
  CUgraphExec exec;
  CUevent start, stop;
  int sets;
};

void at_timed_destroy(at_timed *t) {
  if (!t) return;
  if (t->exec) at_cu->GraphExecDestroy(t->exec);
  if (t->graph) at_cu->GraphDestroy(t->graph);
  if (t->start) at_cu->EventDestroy(t->start);
  if (t->stop) at_cu->EventDestroy(t->stop);
  free(t);
}

static int capture(at_timed *t, at_enqueue_fn fn, void *ctx) {
  CUstream s = t->g->stream;
  CU_CHECK(at_cu->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  int rc = AT_OK;
  for (int i = 0; i < t->sets && rc == AT_OK; i++) rc = fn(ctx, i, s);
  CUgraph graph = NULL;
  CUresult er = at_cu->StreamEndCapture(s, &graph);
  t->graph = graph;
  AT_TRY(rc);
  CU_CHECK(er);
  CU_CHECK(at_cu->GraphInstantiate(&t->exec, t->graph, 0));
  return AT_OK;
}

int at_timed_create(const at_gpu *g, at_enqueue_fn fn, void *ctx, int sets, at_timed **out) {
  at_timed *t = at_xcalloc(1, sizeof *t);
  t->g = g;
  t->sets = sets;
  *out = NULL;
  int rc = capture(t, fn, ctx);
  if (rc == AT_OK) {
    CUresult r = at_cu->EventCreate(&t->start, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) r = at_cu->EventCreate(&t->stop, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) rc = at_fail_api("CUDA", "cuEventCreate", __FILE__, __LINE__, r, at_cu_error_name(r), "");
  }
  if (rc) {
    at_timed_destroy(t);
    return rc;
  }
  *out = t;
  return AT_OK;
}

int at_timed_sample(at_timed *t, double *us) {
  CUstream s = t->g->stream;
  CU_CHECK(at_cu->EventRecord(t->start, s));
  CU_CHECK(at_cu->GraphLaunch(t->exec, s));
  CU_CHECK(at_cu->EventRecord(t->stop, s));
  CU_CHECK(at_cu->EventSynchronize(t->stop));
  float ms = 0;
  CU_CHECK(at_cu->EventElapsedTime(&ms, t->start, t->stop));
  *us = (double)ms * 1e3 / t->sets;
  return AT_OK;
}

int at_bench_timed(at_timed *t, const at_bench_cfg *cfg, at_bench_result *r) {
  memset(r, 0, sizeof *r);
  double *v = at_xcalloc((size_t)cfg->samples, sizeof *v), *tmp = at_xcalloc((size_t)cfg->samples, sizeof *tmp);
  int rc = AT_OK, n = 0;
  double us = 0;
  for (int i = 0; i < cfg->warmup && rc == AT_OK; i++) {
    rc = at_timed_sample(t, &us);
    r->replay_us += us * t->sets;
  }
  while (rc == AT_OK && n < cfg->samples) {
    if ((rc = at_timed_sample(t, &v[n]))) break;
    r->replay_us += v[n] * t->sets;
    n++;
    if (cfg->cut_us > 0 && n >= cfg->cut_after && n < cfg->samples) {
      memcpy(tmp, v, sizeof *v * (size_t)n);
      if (at_median(tmp, n) > cfg->cut_us) {
        r->cut = 1;
        break;
      }
    }
  }
  if (rc == AT_OK && n > 0) {
    r->samples = n;
    r->median_us = at_median(v, n); /* sorted now */
    r->min_us = v[0];
    r->max_us = v[n - 1];
  }
  free(v);
  free(tmp);
  return rc;
}

int at_bench(const at_gpu *g, at_enqueue_fn fn, void *ctx, const at_bench_cfg *cfg, at_bench_result *r) {
  memset(r, 0, sizeof *r);
  at_timed *t;
  AT_TRY(at_timed_create(g, fn, ctx, cfg->sets, &t));
  int rc = at_bench_timed(t, cfg, r);
  at_timed_destroy(t);
  return rc;
}

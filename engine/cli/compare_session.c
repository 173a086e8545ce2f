/* compare_session.c: see compare_session.h. */
#include "compare_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/limits.h"
#include "../core/util.h"

const char *const CMP_PROVIDERS[AT_CMP_NPROVIDERS] = {"autotune", "cublaslt", "default", "cublas"};

/* A worker that says nothing for this long is taken as hung: the first launch of a config includes
 * its NVRTC compile, and a large shape's input sets take a while to make. */
enum { STEP_TIMEOUT_S = 600 };

/* A provider's name; from AT_CMP_NPROVIDERS up, judged configs (`autotune judge`): "config 1", ... */
static const char *provider_name(int p) {
  static const char *const JUDGED[AT_CMP_MAX_JUDGED] = {"config 1", "config 2", "config 3", "config 4",
                                                        "config 5", "config 6", "config 7", "config 8"};
  if (p >= 0 && p < AT_CMP_NPROVIDERS) return CMP_PROVIDERS[p];
  if (p >= AT_CMP_NPROVIDERS && p < AT_CMP_ALL_PROVIDERS) return JUDGED[p - AT_CMP_NPROVIDERS];
  return "-";
}

void cmp_default_sources(const char **db, const char **configs) {
  if (!*db) {
    const char *env = getenv("AUTOTUNE_DB");
    const char *d = env && *env ? env : "tuned/autotune.db";
    if (at_file_exists(d)) *db = d;
  }
  struct stat st;
  if (!*configs && stat("configs", &st) == 0 && S_ISDIR(st.st_mode)) *configs = "configs";
}

int cmp_result_ok(const at_compare_result *r) { return strcmp(r->status, "ok") == 0 && r->time_us > 0; }

int cmp_parse_gpu(const char *arg, int *gpu) {
  int64_t g;
  if (at_parse_i64(arg, &g) != 0 || g < 0 || g > 1024)
    return at_fail(AT_ERR_INPUT, "--gpu: expects a GPU index (0, 1, ...), got '%s'", arg);
  *gpu = (int)g;
  return AT_OK;
}

int cmp_session_probe(const char *who, int gpu) {
  at_device_info *all = NULL;
  int nall = 0;
  char why[512] = "";
  int rc = at_probe_devices(&all, &nall, why, sizeof why);
  free(all);
  AT_TRY(rc);
  if (nall == 0)
    return at_fail(AT_ERR_RUNTIME, "%s needs a GPU, and there is none here (%s); nothing was run", who,
                   why[0] ? why : "the driver reports none");
  if (gpu >= nall)
    return at_fail(AT_ERR_INPUT, "--gpu: %d is not a GPU index (the driver sees %d GPU%s)", gpu, nall, nall == 1 ? "" : "s");
  return AT_OK;
}

static int start_worker(cmp_session *S) {
  AT_TRY(at_worker_start_mode(S->gpu, "--compare", &S->w));
  S->dev = S->w.info;
  at_arch_for_cc(S->dev.cc, S->arch);
  if (S->have_peak) return AT_OK;
  void *p = NULL;
  size_t len = 0;
  int rc = at_worker_call(&S->w, AT_MSG_PEAK, NULL, 0, NULL, 0, 300.0, AT_MSG_PEAK_REPLY, &p, &len);
  if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF)
    return at_fail(AT_ERR_RUNTIME, "GPU %d: the compare worker %s measuring the peak rates (%s)", S->gpu,
                   rc == AT_PROTO_TIMEOUT ? "hung" : "died", S->w.exit_reason);
  AT_TRY(rc);
  memcpy(&S->peak, p, len < sizeof S->peak ? len : sizeof S->peak);
  free(p);
  S->have_peak = 1;
  return AT_OK;
}

int cmp_session_start(cmp_session *S, int gpu) {
  memset(S, 0, sizeof *S);
  S->gpu = gpu;
  return start_worker(S);
}

void cmp_request(at_compare_req *q, const char *op, const at_shape *sh, const cmp_settings *set,
                 const int use[AT_CMP_NPROVIDERS], const char *db, const char *configs, const char *tag) {
  memset(q, 0, sizeof *q);
  snprintf(q->shape.op, sizeof q->shape.op, "%s", op);
  q->shape.m = sh->m, q->shape.n = sh->n, q->shape.k = sh->k;
  q->shape.seed = set->seed;
  q->shape.l2_multiple = set->l2_multiple;
  q->shape.warmup = set->warmup;
  q->shape.samples = set->samples;
  q->shape.atol = set->atol, q->shape.rtol = set->rtol, q->shape.gamma = set->gamma;
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) q->use[p] = use[p];
  snprintf(q->db_path, sizeof q->db_path, "%s", db ? db : "");
  snprintf(q->configs_dir, sizeof q->configs_dir, "%s", configs ? configs : "");
  snprintf(q->tag, sizeof q->tag, "%s", tag ? tag : "");
}

/* Marks every provider asked for without a result, after the worker was lost on `at`. */
static void worker_lost(const at_compare_req *q, at_compare_reply *rep, const at_compare_step *at, const char *how) {
  for (int p = 0; p < AT_CMP_ALL_PROVIDERS; p++) {
    at_compare_result *r = at_cmp_result_of(rep, p);
    if (!at_cmp_wanted(q, p)) continue;
    snprintf(r->status, sizeof r->status, "%s", p == at->provider ? "fault" : "error");
    if (p == at->provider)
      snprintf(r->message, sizeof r->message, "the compare worker %s during its %s", how, at->what);
    else
      snprintf(r->message, sizeof r->message, "no result: the compare worker %s during %s's %s", how,
               at->provider < 0 ? "the shape" : provider_name(at->provider), at->provider < 0 ? "setup" : at->what);
  }
}

int cmp_session_shape(cmp_session *S, const at_compare_req *q, at_compare_reply *rep) {
  memset(rep, 0, sizeof *rep);
  for (int p = 0; p < AT_CMP_NPROVIDERS; p++) rep->r[p].check_ratio = rep->r[p].max_abs_err = -1;
  for (int i = 0; i < AT_CMP_MAX_JUDGED; i++) rep->judged[i].check_ratio = rep->judged[i].max_abs_err = -1;
  if (!at_worker_alive(&S->w)) AT_TRY(start_worker(S));
  int rc = at_msg_send(S->w.to_fd, AT_MSG_COMPARE, q, sizeof *q);
  at_compare_step at = {-1, "setup"};
  while (rc == AT_OK) {
    uint32_t type = 0;
    void *p = NULL;
    size_t len = 0;
    rc = at_msg_recv(S->w.from_fd, STEP_TIMEOUT_S, &type, &p, &len);
    if (rc == AT_PROTO_TIMEOUT || rc == AT_PROTO_EOF) break;
    if (rc) return rc;
    if (type == AT_MSG_COMPARE_STEP && len == sizeof at) {
      memcpy(&at, p, sizeof at);
      at.what[sizeof at.what - 1] = 0;
    } else if (type == AT_MSG_COMPARE_REPLY && len == sizeof *rep) {
      memcpy(rep, p, sizeof *rep);
      free(p);
      if (rep->sticky) at_worker_kill(&S->w); /* it exits after a fault; reap it */
      return AT_OK;
    } else {
      rc = at_fail(AT_ERR_RUNTIME, "GPU %d: the compare worker answered M=%lld N=%lld K=%lld with %s", S->gpu,
                   (long long)q->shape.m, (long long)q->shape.n, (long long)q->shape.k,
                   type == AT_MSG_ERROR ? (const char *)p : "a message of the wrong kind");
      free(p);
      at_worker_kill(&S->w);
      return rc;
    }
    free(p);
  }
  /* The worker died or hung: say where, and go on with a new one for the next shape. */
  char why[200];
  if (rc == AT_PROTO_TIMEOUT) {
    snprintf(why, sizeof why, "hung (no word for %d s)", STEP_TIMEOUT_S);
    at_worker_kill(&S->w);
  } else {
    at_worker_kill(&S->w); /* already gone: this reaps it and says how */
    snprintf(why, sizeof why, "died (%s)", S->w.exit_reason);
  }
  worker_lost(q, rep, &at, why);
  fprintf(stderr, "autotune: compare: the worker %s on M=%lld N=%lld K=%lld, provider %s, during %s\n", why,
          (long long)q->shape.m, (long long)q->shape.n, (long long)q->shape.k,
          at.provider < 0 ? "(none: the shape's setup)" : provider_name(at.provider), at.what);
  return AT_OK;
}

void cmp_session_stop(cmp_session *S) {
  if (at_worker_alive(&S->w)) at_worker_stop(&S->w);
}

/* judge.c: see judge.h. */
#include "judge.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "../core/config.h"
#include "../core/progress.h"
#include "../core/select.h"
#include "../core/util.h"
#include "compare_session.h"

typedef struct judged {
  at_tuned_row l;
  at_config cfg;
  at_compare_result *r; /* the worker's result for it */
} judged;

/* A judgement in progress: the worker and the device, then one space's shapes. */
struct at_judge {
  at_store *db;
  int gpu;
  cmp_session S;
  at_device_entry dev;
  char dir[4096]; /* the configs directories' parent */
  /* the shapes being judged (at_judge_shapes) */
  const at_judge_opts *o;
  const at_space *sp;
  int64_t run_id;
  FILE *out;
  at_judge_stats *st;
};
typedef struct at_judge judge_run;

static int by_time(const void *a, const void *b) {
  const at_tuned_row *x = a, *y = b;
  if (x->time_us != y->time_us) return x->time_us > y->time_us ? 1 : -1;
  return (x->candidate_id > y->candidate_id) - (x->candidate_id < y->candidate_id);
}

/* The shape's checked results (of the trusted candidates, as export reads them: at_store_tuned_rows),
 * fastest first, moved to the front of rows; returns how many. */
static size_t leaders(at_tuned_row *rows, size_t n, int64_t m) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (rows[i].m == m) rows[k++] = rows[i];
  qsort(rows, k, sizeof *rows, by_time);
  return k;
}

/* The configs judged for a shape: the first `top` leaders within `within` of the fastest, and the
 * winner wherever it ranks (it then takes the slowest place). Returns how many. */
static int pick(const at_tuned_row *ls, size_t n, const at_judge_opts *o, judged *out) {
  int k = 0, have_winner = 0;
  for (size_t i = 0; i < n && k < o->top; i++) {
    if (ls[i].time_us > o->within * ls[0].time_us) break;
    out[k++].l = ls[i];
    have_winner |= ls[i].winner;
  }
  for (size_t i = 0; i < n && !have_winner; i++)
    if (ls[i].winner) {
      if (k == o->top) k--;
      out[k++].l = ls[i];
      have_winner = 1;
    }
  return k;
}

static void nk_file_name(const judge_run *R, const at_shape *sh, char *out, size_t n) {
  char device[32];
  at_device_file_name(&R->dev, 0, device, sizeof device);
  snprintf(out, n, "%s-GEMM-%s-N=%lld-K=%lld.json", device, R->sp->tag, (long long)sh->n, (long long)sh->k);
}

/* dir/<i>/<device>-GEMM-<tag>-N=..-K=...json: the config as the entry at M and every bucket, so that
 * a runtime opened on dir/<i> answers the shape with it; and dir/<i>/templates, a link to the
 * directory of the space's variant of that name, so that it compiles the template the tuner did
 * (none when the space has no such variant: the runtime's own templates). */
static int write_config_dir(const judge_run *R, int i, const at_shape *sh, const at_config *cfg) {
  char sub[4200], file[256];
  snprintf(sub, sizeof sub, "%s/%d", R->dir, i);
  AT_TRY(at_mkdirs(sub));
  for (size_t v = 0; v < R->sp->nvariants; v++)
    if (strcmp(R->sp->variants[v].name, cfg->variant) == 0) {
      char *tdir = at_dirname(R->sp->variants[v].template_path), *real = realpath(tdir, NULL);
      char *link = at_path_join(sub, "templates");
      int bad = !real || symlink(real, link) != 0;
      free(tdir), free(real), free(link);
      if (bad) return at_fail(AT_ERR_RUNTIME, "judge: cannot link %s/templates: %s", sub, strerror(errno));
      break;
    }
  at_config_set *cs = at_xcalloc(1, sizeof *cs);
  snprintf(cs->op, sizeof cs->op, "%s", R->sp->op_name);
  snprintf(cs->tag, sizeof cs->tag, "%s", R->sp->tag);
  at_device_file_name(&R->dev, 0, cs->device, sizeof cs->device);
  snprintf(cs->device_name, sizeof cs->device_name, "%s", R->dev.name);
  snprintf(cs->arch, sizeof cs->arch, "%s", R->dev.arch);
  cs->n = sh->n, cs->k = sh->k;
  for (int b = 0; b < AT_NBUCKETS; b++) cs->bucket[b] = *cfg;
  cs->nmleq = 1;
  cs->mleq_m[0] = sh->m;
  cs->mleq[0] = *cfg;
  nk_file_name(R, sh, file, sizeof file);
  char *path = at_path_join(sub, file), *json = at_config_set_to_json(cs);
  int rc = at_write_file_atomic(path, json, strlen(json));
  free(path), free(json), free(cs);
  return rc;
}

static void remove_config_dirs(const judge_run *R, int n, const at_shape *sh) {
  char file[256], path[4400];
  nk_file_name(R, sh, file, sizeof file);
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%d/%s", R->dir, i, file);
    unlink(path);
    snprintf(path, sizeof path, "%s/%d/templates", R->dir, i);
    unlink(path);
    snprintf(path, sizeof path, "%s/%d", R->dir, i);
    rmdir(path);
  }
}

static void print_config(FILE *f, const judged *j, const char *mark) {
  const at_compare_result *r = j->r;
  char *params = at_config_params_json(&j->cfg);
  if (cmp_result_ok(r))
    fprintf(f, "  %s %9.2f us launched %9.2f alone  %s %s\n", mark, r->time_us, j->l.time_us, r->kernel, params);
  else
    fprintf(f, "  %s %9s    launched %9.2f alone  %s: %s (%s)\n", mark, r->status, j->l.time_us, params, r->message,
            r->kernel[0] ? r->kernel : "nothing ran");
  free(params);
}

/* A result is a launched time only when the runtime answered with the judged config itself, from
 * its one file: otherwise (an unreadable file, a name the lookup did not match) the runtime would
 * have fallen back to another source, and two configs would be timed as one. Such a result becomes
 * an error. */
static void verify_launched(judged *j) {
  at_compare_result *r = j->r;
  if (strcmp(r->status, "ok") != 0) return;
  char *want = at_config_params_json(&j->cfg);
  if (strcmp(r->source, "nk_file") != 0 || strcmp(r->params, want) != 0) {
    snprintf(r->status, sizeof r->status, "error");
    snprintf(r->message, sizeof r->message, "the runtime launched another config (%.16s %.400s), not the judged one",
             r->source[0] ? r->source : "no source", r->params);
  } else if (!cmp_result_ok(r)) {
    snprintf(r->status, sizeof r->status, "error");
    snprintf(r->message, sizeof r->message, "checked but not timed (the worker was lost before the timing)");
  }
  free(want);
}

/* Which config the shape takes: the winner (*w, its index; -1 when none is among js), or the
 * fastest launched config where it is at most AT_JUDGE_GAIN of the winner's launched time; -1 (*why
 * says why) when the shape is not judged: every config must have a launched time, or nothing is
 * decided on this evidence. */
static int decide(const at_compare_reply *rep, const judged *js, int n, int *w_out, const char **why) {
  int w = -1, best = -1, timed = 0;
  for (int i = 0; i < n; i++) {
    if (js[i].l.winner) w = i;
    if (!cmp_result_ok(js[i].r)) continue;
    timed++;
    if (best < 0 || js[i].r->time_us < js[best].r->time_us) best = i;
  }
  *w_out = w;
  if (!rep->ok) return *why = "not judged: the shape could not be set up, or the worker was lost (below)", -1;
  if (w < 0) return *why = "not judged: the DB records no winner for it (a tuning run that finishes decides one)", -1;
  if (timed < n) return *why = "not judged: a config has no launched time (below); the winner is left as it was", -1;
  if (best != w && js[best].r->time_us <= AT_JUDGE_GAIN * js[w].r->time_us) return *why = "new winner", best;
  return *why = "the winner stays", w;
}

static int judge_shape(judge_run *R, size_t si) {
  const at_space *sp = R->sp;
  const at_shape *sh = &sp->shapes[si];
  at_tuned_row *ls = NULL;
  size_t nl = 0;
  int64_t problem = -1;
  AT_TRY(at_store_tuned_rows(R->db, sp->op_name, sp->tag, R->dev.id, sh->n, sh->k, &ls, &nl));
  nl = leaders(ls, nl, sh->m);
  judged js[AT_CMP_MAX_JUDGED];
  memset(js, 0, sizeof js);
  int n = pick(ls, nl, R->o, js);
  free(ls);
  char head[128];
  snprintf(head, sizeof head, "[%zu/%zu] M=%lld N=%lld K=%lld: ", si + 1, sp->nshapes, (long long)sh->m,
           (long long)sh->n, (long long)sh->k);
  if (n < 2) {
    if (R->o->all)
      fprintf(R->out, "%s%s\n", head, nl ? "one candidate within --within of the fastest: nothing to judge"
                                          : "no checked results in the DB: skipped");
    R->st->skipped++;
    return AT_OK;
  }
  int rc = AT_OK;
  for (int i = 0; i < n && rc == AT_OK; i++) {
    rc = at_store_candidate_config(R->db, js[i].l.candidate_id, &js[i].cfg);
    if (rc == AT_OK) rc = write_config_dir(R, i, sh, &js[i].cfg);
  }
  at_compare_req *q = at_xcalloc(1, sizeof *q);
  at_compare_reply *rep = at_xcalloc(1, sizeof *rep);
  if (rc == AT_OK) {
    cmp_settings set = {sp->atol, sp->rtol, sp->gamma, sp->seed, sp->timing.warmup, sp->timing.retime_samples,
                        sp->timing.l2_multiple};
    const int none[AT_CMP_NPROVIDERS] = {0};
    cmp_request(q, sp->op_name, sh, &set, none, NULL, NULL, sp->tag);
    q->judged = n;
    snprintf(q->judge_dir, sizeof q->judge_dir, "%s", R->dir);
    rc = cmp_session_shape(&R->S, q, rep);
  }
  remove_config_dirs(R, n, sh);
  if (rc) goto out;
  for (int i = 0; i < n; i++) {
    js[i].r = &rep->judged[i];
    verify_launched(&js[i]);
  }

  const char *why;
  int w, wrong = 0, chosen = decide(rep, js, n, &w, &why);
  for (int i = 0; i < n; i++) wrong += !cmp_result_ok(js[i].r);
  if (chosen >= 0) {
    R->st->judged++;
    R->st->changed += chosen != w;
    R->st->log_gain += log(js[chosen].r->time_us / js[w].r->time_us);
  }
  if (chosen < 0 || wrong) R->st->failed++; /* a config the tuner passed that fails as launched is a finding */
  if (R->o->all || chosen != w || wrong) {
    fprintf(R->out, "%s%d configs as launched: %s", head, n, why);
    if (chosen >= 0 && chosen != w)
      fprintf(R->out, " (%.3fx the winner's launched time)", js[chosen].r->time_us / js[w].r->time_us);
    fprintf(R->out, "\n");
    if (!rep->ok && rep->message[0]) fprintf(R->out, "  %s\n", rep->message);
    for (int i = 0; i < n; i++) print_config(R->out, &js[i], i == chosen && i != w ? "*" : i == w ? "w" : " ");
    fflush(R->out);
  }
  if (!R->o->dry_run && (rc = at_store_problem(R->db, sp->op_name, sp->tag, sh->m, sh->n, sh->k, &problem)) == AT_OK) {
    at_launch_row rows[AT_CMP_MAX_JUDGED];
    for (int i = 0; i < n; i++) {
      const at_compare_result *r = js[i].r;
      const int timed = cmp_result_ok(r);
      rows[i] = (at_launch_row){js[i].l.candidate_id, problem, R->dev.id, R->run_id, r->status,
                                timed ? r->time_us : 0, timed ? r->time_min_us : 0, timed ? r->time_max_us : 0,
                                timed ? r->samples : 0, r->check_ratio, r->kernel, r->message};
    }
    /* The winner keeps its time alone (judge.h): the tuner's re-timed median where it has one. */
    rc = at_store_put_judgement(R->db, rows, n, chosen >= 0 ? js[chosen].l.candidate_id : -1,
                                chosen >= 0 ? js[chosen].l.alone_us : 0);
  }
out:
  free(q);
  free(rep);
  return rc;
}

/* The DB's row for the worker's GPU: its model and arch must have been tuned. */
static int find_device(judge_run *R) {
  at_device_entry *devs = NULL;
  size_t nd = 0;
  AT_TRY(at_store_devices(R->db, &devs, &nd));
  int found = 0;
  for (size_t i = 0; i < nd && !found; i++)
    if (strcmp(devs[i].name, R->S.dev.name) == 0 && strcmp(devs[i].arch, R->S.arch) == 0) R->dev = devs[i], found = 1;
  free(devs);
  if (!found)
    return at_fail(AT_ERR_INPUT, "judge: %s has no results of GPU %d's model (%s, %s); judge on the GPU model it was"
                   " tuned on", at_store_path(R->db), R->gpu, R->S.dev.name, R->S.arch);
  return AT_OK;
}

/* A judge's directory: dir/<i>/ per config, each holding files and a `templates` link, nothing
 * deeper. Removes what a run left (links are unlinked, never followed). */
static void remove_judge_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char sub[4400], path[4700];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
    DIR *s = opendir(sub);
    if (!s) {
      unlink(sub);
      continue;
    }
    struct dirent *f;
    while ((f = readdir(s)))
      if (f->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", sub, f->d_name), unlink(path);
    closedir(s);
    rmdir(sub);
  }
  closedir(d);
  rmdir(dir);
}

/* The directories of judges killed before they could remove theirs (SIGKILL, a crash): named
 * autotune-judge-<pid>-XXXXXX, removed once no process of that pid is left. */
static void sweep_dead_judges(const char *tmp) {
  DIR *d = opendir(tmp);
  if (!d) return;
  struct dirent *e;
  char path[4400];
  while ((e = readdir(d))) {
    int pid = 0, end = 0;
    if (sscanf(e->d_name, "autotune-judge-%d-%n", &pid, &end) != 1 || end == 0 || pid <= 0) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to ask about */
    snprintf(path, sizeof path, "%s/%s", tmp, e->d_name);
    remove_judge_dir(path);
  }
  closedir(d);
}

int at_judge_open(at_store *db, int gpu, at_judge **out, const char **arch) {
  judge_run *R = at_xcalloc(1, sizeof *R);
  R->db = db, R->gpu = gpu;
  int rc = cmp_session_start(&R->S, gpu);
  if (rc == AT_OK) rc = find_device(R);
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  if (rc == AT_OK) sweep_dead_judges(tmp);
  snprintf(R->dir, sizeof R->dir, "%s/autotune-judge-%d-XXXXXX", tmp, (int)getpid());
  if (rc == AT_OK && !mkdtemp(R->dir))
    rc = at_fail(AT_ERR_RUNTIME, "judge: cannot make a directory under %s: %s", tmp, strerror(errno));
  if (rc) {
    R->dir[0] = 0;
    at_judge_close(R);
    *out = NULL;
    return rc;
  }
  *out = R;
  *arch = R->dev.arch;
  return AT_OK;
}

int at_judge_shapes(at_judge *R, const at_space *sp, int64_t run_id, const at_judge_opts *o,
                    volatile sig_atomic_t *stop, FILE *out, at_judge_stats *st) {
  memset(st, 0, sizeof *st);
  double t0 = at_now_s();
  R->o = o, R->sp = sp, R->run_id = run_id, R->out = out, R->st = st;
  int rc = AT_OK;
  at_progress *pg = at_progress_start("judge", (int64_t)sp->nshapes); /* stderr; AUTOTUNE_PROGRESS */
  for (size_t i = 0; i < sp->nshapes && rc == AT_OK && !(stop && *stop); i++) {
    rc = judge_shape(R, i);
    char extra[64];
    snprintf(extra, sizeof extra, "%d winners changed", st->changed);
    at_progress_update(pg, (int64_t)i + 1, extra);
  }
  char extra[96];
  snprintf(extra, sizeof extra, "%d judged, %d winners changed", st->judged, st->changed);
  at_progress_finish(pg, extra);
  st->seconds = at_now_s() - t0;
  return rc;
}

void at_judge_use_db(at_judge *R, at_store *db) { R->db = db; }

void at_judge_close(at_judge *R) {
  if (!R) return;
  if (R->dir[0]) remove_judge_dir(R->dir); /* empty unless a shape stopped half-way */
  cmp_session_stop(&R->S);
  free(R);
}

void at_judge_print_summary(FILE *out, const at_judge_stats *st) {
  fprintf(out,
          "judge: %d shapes judged, %d winners changed, %d skipped, %d with a config not timed or not judged; the"
          " winners as launched %.3fx the tuner's winners' launched time (geomean); %.0f s\n",
          st->judged, st->changed, st->skipped, st->failed, st->judged ? exp(st->log_gain / st->judged) : 1.0,
          st->seconds);
}

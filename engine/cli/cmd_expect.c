/* cmd_expect.c: `autotune expect record|check`: performance expectations for CI (core/expect.h).
 *
 *   record: the TFLOP/s of the tuned configs per (device, tag, shape), from the DB's winners (no GPU),
 *           or measured again through the runtime library (--measure, the way check measures), into
 *           an expectations file (default tuned/expectations/<device>.json, e.g. sm90.json);
 *   check:  measures them again on this GPU through the runtime library's launch path, with compare's
 *           machinery (compare_session.h), or takes a measurement from a file (--measured: an
 *           expectations file or a results file of compare), prints the table, and fails (exit 1) on
 *           a shape slower than the tolerance or without a measurement.
 * Docs: docs/usage.md, "autotune expect". */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/expect.h"
#include "../core/json.h"
#include "../core/limits.h"
#include "../core/results.h"
#include "../core/space.h"
#include "../core/util.h"
#include "commands.h"
#include "compare_session.h"
#include "dbreport.h"

static const char *USAGE =
    "usage: autotune expect record [--db PATH] [--out FILE] [--device D] [--tag TAG] [--measure [--gpu N]]\n"
    "                              [--configs DIR] [--space SPACE.yaml]\n"
    "       autotune expect check [--file FILE] [--tolerance PCT] [--db PATH] [--configs DIR] [--gpu N]\n"
    "                             [--measured FILE [--provider NAME]]\n\n"
    "record: writes the TFLOP/s of the tuned configs per (device, tag, shape): the DB's winners (their\n"
    "        re-timed medians; no GPU), or with --measure each timed again on this GPU through the runtime\n"
    "        library, as check times them (recommended for CI). Default --out: tuned/expectations/<device>.json.\n"
    "check:  times every expectation of this GPU's model again through the runtime library (the tuned\n"
    "        config, as an application gets it: --db, --configs as for compare) and prints expected against\n"
    "        measured; exit 1 when one is slower than the tolerance or has no measurement. --measured takes\n"
    "        the measurement from a file instead (an expectations file, or compare --json's results file,\n"
    "        provider --provider, default autotune): no GPU. Default --file: tuned/expectations/<device>.json.\n\n"
    "options:\n"
    "  --db PATH         the DB (record: default $AUTOTUNE_DB, else tuned/autotune.db; check: the runtime's)\n"
    "  --out FILE        record: where to write\n"
    "  --device D        record: the device of the DB (sm90 or a product name) when it has several\n"
    "  --tag TAG         record: only this tag\n"
    "  --measure         record: time each shape on the GPU instead of taking the DB's time\n"
    "  --space FILE      record: the check (atol, rtol, gamma), seed and timing to measure with (default:\n"
    "                    atol = rtol = 0.01, gamma = 2^-10, 1 warm-up, 20 samples, inputs past 2 x L2)\n"
    "  --configs DIR     the runtime's exported configs (check: default configs, when it exists)\n"
    "  --gpu N           the GPU (default 0)\n"
    "  --file FILE       check: the expectations\n"
    "  --tolerance PCT   check: how much slower than expected is still a pass (default 10)\n"
    "  --measured FILE   check: the measurement, from a file (no GPU)\n"
    "  --provider NAME   check --measured with a results file: whose records (default autotune)\n";

typedef struct options {
  const char *db, *out, *device, *tag, *space, *configs, *file, *measured, *provider;
  int measure, gpu;
  double tolerance;
} options;

static int parse_options(int argc, char **argv, int check, options *o) {
  static const struct option LONG[] = {
      {"db", required_argument, 0, 'd'},       {"out", required_argument, 0, 'o'},
      {"device", required_argument, 0, 'D'},   {"tag", required_argument, 0, 't'},
      {"measure", no_argument, 0, 'm'},        {"space", required_argument, 0, 's'},
      {"configs", required_argument, 0, 'c'},  {"gpu", required_argument, 0, 'g'},
      {"file", required_argument, 0, 'f'},     {"tolerance", required_argument, 0, 'T'},
      {"measured", required_argument, 0, 'M'}, {"provider", required_argument, 0, 'p'},
      {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
  static const char *const RECORD_ONLY = "oDtms", *const CHECK_ONLY = "fTMp";
  const char *cmd = check ? "expect check" : "expect record";
  memset(o, 0, sizeof *o);
  o->tolerance = 10;
  o->provider = "autotune";
  optind = 1;
  opterr = 0;
  int li = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, &li)) != -1;) {
    if (ch != ':' && ch != '?' && ch != 'h' && strchr(check ? RECORD_ONLY : CHECK_ONLY, ch))
      return at_fail(AT_ERR_INPUT, "%s: --%s is an option of expect %s (see --help)", cmd, LONG[li].name,
                     check ? "record" : "check");
    switch (ch) {
    case 'd': o->db = optarg; break;
    case 'o': o->out = optarg; break;
    case 'D': o->device = optarg; break;
    case 't': o->tag = optarg; break;
    case 'm': o->measure = 1; break;
    case 's': o->space = optarg; break;
    case 'c': o->configs = optarg; break;
    case 'f': o->file = optarg; break;
    case 'M': o->measured = optarg; break;
    case 'p': o->provider = optarg; break;
    case 'g': AT_TRY(cmp_parse_gpu(optarg, &o->gpu)); break;
    case 'T': {
      char *end;
      o->tolerance = strtod(optarg, &end);
      if (end == optarg || *end || !(o->tolerance >= 0 && o->tolerance < 100))
        return at_fail(AT_ERR_INPUT, "--tolerance: expects a percentage from 0 to below 100, got '%s'", optarg);
      break;
    }
    case 'h': fputs(USAGE, stdout); return -1;
    case ':': return at_fail(AT_ERR_INPUT, "%s: option %s needs a value (see --help)", cmd, argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "%s: unknown option '%s' (see --help)", cmd, argv[optind - 1]);
    }
  }
  if (optind != argc) return at_fail(AT_ERR_INPUT, "%s: unexpected argument '%s' (see --help)", cmd, argv[optind]);
  if (o->db && !at_file_exists(o->db)) return at_fail(AT_ERR_INPUT, "%s: --db: no DB at %s", cmd, o->db);
  return AT_OK;
}

static void settings_of_space(const at_space *s, at_expect_settings *e) {
  *e = (at_expect_settings){s->atol, s->rtol, s->gamma, s->seed, s->timing.warmup, s->timing.retime_samples,
                            s->timing.l2_multiple};
}

static void device_short(const char *arch, char *out, size_t cap) {
  int cc = at_cc_of_arch(arch);
  if (cc > 0)
    snprintf(out, cap, "sm%d", cc);
  else
    snprintf(out, cap, "%s", arch);
}

/* ---- measuring -------------------------------------------------------------------------------- */

/* Times every entry of `want` on this GPU through the runtime (the autotune provider) into got: an
 * entry each, tflops -1 where there is no checked time (the reason on stderr). */
static int measure(const at_expect_file *want, const char *db, const char *configs, cmp_session *S,
                   at_expect_file *got, int *failed) {
  int use[AT_CMP_NPROVIDERS] = {0};
  use[AT_CMP_AUTOTUNE] = 1;
  const at_expect_settings *st = &want->settings;
  cmp_settings set = {st->atol, st->rtol, st->gamma, st->seed, st->warmup, st->samples, st->l2_multiple};
  *failed = 0;
  memset(got, 0, sizeof *got);
  got->settings = *st;
  at_compare_req *q = at_xcalloc(1, sizeof *q);
  at_compare_reply *rep = at_xcalloc(1, sizeof *rep);
  int rc = AT_OK;
  for (size_t i = 0; i < want->n && rc == AT_OK; i++) {
    const at_expect_entry *w = &want->e[i];
    if (strcmp(w->device, S->dev.name) != 0) continue;
    const at_op *op = at_op_find(w->op);
    if (!op) {
      rc = at_fail(AT_ERR_INPUT, "an expectation names the op %s, which this autotune does not know", w->op);
      break;
    }
    at_shape sh = {w->m, w->n, w->k};
    cmp_request(q, w->op, &sh, &set, use, db, configs, w->tag);
    if ((rc = cmp_session_shape(S, q, rep))) break;
    const at_compare_result *r = &rep->r[AT_CMP_AUTOTUNE];
    at_expect_entry e = *w;
    e.config = NULL;
    e.time_us = cmp_result_ok(r) ? r->time_us : -1;
    e.tflops = cmp_result_ok(r) ? op->flops(&sh) / (r->time_us * 1e-6) / 1e12 : -1;
    if (!cmp_result_ok(r)) {
      fprintf(stderr, "autotune: expect: %s M=%lld N=%lld K=%lld: %s%s%s\n", w->tag, (long long)w->m, (long long)w->n,
              (long long)w->k, r->status, r->message[0] ? ": " : "", r->message);
      (*failed)++;
    } else if (r->kernel[0]) {
      at_buf b = {0};
      at_buf_puts(&b, "{\"variant\": ");
      at_buf_json_string(&b, r->variant);
      at_buf_printf(&b, ", \"params\": %s, \"source\": ", r->params[0] ? r->params : "{}");
      at_buf_json_string(&b, r->source);
      at_buf_puts(&b, "}");
      e.config = at_buf_steal(&b);
    }
    at_expect_add(got, &e);
    free(e.config);
  }
  free(q);
  free(rep);
  return rc;
}

/* ---- record ----------------------------------------------------------------------------------- */

/* The DB's winners of one device (and tag) as expectations. */
static int from_db(const options *o, const char *db_path, at_expect_file *f, const at_rep_device **dev_out,
                   rep_view *v) {
  rep_filter filter = {o->device, o->tag, NULL, 0, NULL, NULL};
  AT_TRY(rep_view_build(db_path, &filter, v));
  const at_rep_device *dev = NULL;
  for (size_t i = 0; i < v->n; i++) {
    if (!v->shapes[i].winner) continue;
    if (dev && dev != v->shapes[i].dev)
      return at_fail(AT_ERR_INPUT, "expect record: %s has winners on %s and %s; choose one with --device", db_path,
                     dev->name, v->shapes[i].dev->name);
    dev = v->shapes[i].dev;
  }
  if (!dev)
    return at_fail(AT_ERR_RUNTIME, "expect record: %s has no tuned shape (no winner)%s%s to record", db_path,
                   o->tag ? " of tag " : "", o->tag ? o->tag : "");
  for (size_t i = 0; i < v->n; i++) {
    const rep_shape *s = &v->shapes[i];
    if (!s->winner || s->winner->time_us <= 0) continue;
    at_expect_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.device, sizeof e.device, "%s", s->dev->name);
    snprintf(e.arch, sizeof e.arch, "%s", s->dev->arch);
    snprintf(e.op, sizeof e.op, "%s", s->prob->op);
    snprintf(e.tag, sizeof e.tag, "%s", s->prob->tag);
    e.m = s->prob->m, e.n = s->prob->n, e.k = s->prob->k;
    e.time_us = s->winner->time_us;
    e.tflops = rep_tflops(s, e.time_us);
    const at_rep_candidate *c = at_rep_candidate_of(&v->d, s->winner->candidate_id);
    if (c) {
      at_buf b = {0};
      at_buf_puts(&b, "{\"variant\": ");
      at_buf_json_string(&b, c->variant);
      at_buf_printf(&b, ", \"params\": %s}", c->params);
      e.config = at_buf_steal(&b);
    }
    at_expect_add(f, &e);
    free(e.config);
  }
  *dev_out = dev;
  return AT_OK;
}

static int write_file(const char *path, const at_expect_file *f) {
  char *dir = at_dirname(path);
  int rc = at_mkdirs(dir);
  free(dir);
  char *json = at_expect_to_json(f);
  if (rc == AT_OK) rc = at_write_file_atomic(path, json, strlen(json));
  free(json);
  if (rc) at_errctx("expect record: --out %s", path);
  return rc;
}

static int record(const options *o) {
  const char *env = getenv("AUTOTUNE_DB");
  const char *db = o->db ? o->db : env && *env ? env : "tuned/autotune.db";
  if (!at_file_exists(db)) return at_fail(AT_ERR_INPUT, "expect record: --db: no DB at %s", db);
  at_expect_file f, got;
  memset(&f, 0, sizeof f);
  memset(&got, 0, sizeof got);
  at_expect_default_settings(&f.settings);
  at_space *space = NULL;
  rep_view v;
  memset(&v, 0, sizeof v);
  const at_rep_device *dev = NULL;
  cmp_session S;
  memset(&S, 0, sizeof S);
  char out[512];
  int rc = AT_OK;
  if (o->out) { /* a place to write it, and not over the DB or the space: before any measuring */
    const char *in[] = {db, o->space, NULL};
    if ((rc = at_check_output("--out", o->out, in, 1))) goto done; /* it makes --out's directory */
  }
  if (o->space) {
    if ((rc = at_space_load(o->space, &space))) goto done;
    settings_of_space(space, &f.settings);
  }
  if ((rc = from_db(o, db, &f, &dev, &v))) goto done;
  f.source = at_xstrdup(o->measure ? "measured" : "db");
  f.db = at_xstrdup(db);
  f.recorded = at_utc_now_iso();
  char sm[32];
  rep_device_short(dev, sm, sizeof sm);
  snprintf(out, sizeof out, "%s", o->out ? o->out : "");
  if (!o->out) snprintf(out, sizeof out, "tuned/expectations/%s.json", sm);
  if (o->measure) {
    if ((rc = cmp_session_probe("expect record --measure", o->gpu)) || (rc = cmp_session_start(&S, o->gpu))) goto done;
    if (strcmp(S.dev.name, dev->name) != 0) {
      rc = at_fail(AT_ERR_INPUT, "expect record --measure: GPU %d is %s, the DB's tuned device is %s", o->gpu,
                   S.dev.name, dev->name);
      goto done;
    }
    int failed;
    if ((rc = measure(&f, db, o->configs, &S, &got, &failed))) goto done;
    if (failed) {
      rc = at_fail(AT_ERR_RUNTIME, "expect record: %d shape%s without a checked time (listed above); nothing written",
                   failed, failed == 1 ? "" : "s");
      goto done;
    }
    for (size_t i = 0; i < f.n && i < got.n; i++) f.e[i].tflops = got.e[i].tflops, f.e[i].time_us = got.e[i].time_us;
  }
  if ((rc = write_file(out, &f))) goto done;
  printf("%s\n", out);
  fprintf(stderr, "expect record: %zu expectations of %s (%s) from %s%s\n", f.n, dev->name, sm, db,
          o->measure ? ", measured on this GPU" : ", the winners' re-timed medians");
done:
  cmp_session_stop(&S);
  rep_view_free(&v);
  at_space_free(space);
  at_expect_free(&f);
  at_expect_free(&got);
  return rc;
}

/* ---- check ------------------------------------------------------------------------------------ */

/* --measured FILE: an expectations file, or a results file (its provider's records). */
static int load_measured(const options *o, at_expect_file *got) {
  char *text;
  size_t n;
  AT_TRY(at_read_file(o->measured, 256u << 20, &text, &n));
  at_json *j = NULL;
  int rc = at_json_parse(o->measured, text, n, &j);
  const char *format = rc == AT_OK ? at_json_str(j, "format") : NULL;
  if (rc == AT_OK && format && strcmp(format, AT_RESULTS_FORMAT) == 0) {
    at_results_file r;
    rc = at_results_parse(o->measured, text, n, &r);
    if (rc == AT_OK) rc = at_expect_from_results(&r, o->provider, got);
    if (rc == AT_OK) at_results_free(&r);
  } else if (rc == AT_OK) {
    rc = at_expect_parse(o->measured, text, n, got);
  }
  at_json_free(j);
  free(text);
  if (rc) at_errctx("--measured");
  return rc;
}

static const char *const VERDICT[] = {"ok", "faster", "SLOWER", "NO TIME", "other device"};

static void print_table(const at_expect_file *want, const at_expect_verdict *v) {
  printf("%-6s %-20s %7s %7s %7s %12s %12s %8s  %s\n", "device", "tag", "M", "N", "K", "expected", "measured", "change",
         "verdict");
  for (size_t i = 0; i < want->n; i++) {
    const at_expect_entry *e = &want->e[i];
    if (v[i].kind == AT_EXPECT_OTHER_DEVICE) continue;
    char sm[32], got[32] = "-", change[32] = "-";
    device_short(e->arch, sm, sizeof sm);
    if (v[i].got_tflops > 0) {
      snprintf(got, sizeof got, "%.2f", v[i].got_tflops);
      snprintf(change, sizeof change, "%+.1f%%", v[i].change_pct);
    }
    printf("%-6s %-20s %7lld %7lld %7lld %12.2f %12s %8s  %s\n", sm, e->tag, (long long)e->m, (long long)e->n,
           (long long)e->k, e->tflops, got, change, VERDICT[v[i].kind]);
  }
}

static int check(const options *o) {
  at_expect_file want, got;
  memset(&want, 0, sizeof want);
  memset(&got, 0, sizeof got);
  cmp_session S;
  memset(&S, 0, sizeof S);
  at_expect_verdict *v = NULL;
  char file[512] = "", sm[32];
  const char *db = o->db, *configs = o->configs;
  int rc = AT_OK, failures = 0, judged = 0, others = 0;
  if (o->measured) {
    if ((rc = load_measured(o, &got))) goto done;
    if (!o->file && (got.n == 0 || !got.e[0].arch[0])) {
      rc = at_fail(AT_ERR_INPUT, "expect check: %s does not say its device's arch; name the expectations with --file",
                   o->measured);
      goto done;
    }
    if (!o->file) device_short(got.e[0].arch, sm, sizeof sm);
  } else {
    cmp_default_sources(&db, &configs);
    if ((rc = cmp_session_probe("expect check", o->gpu)) || (rc = cmp_session_start(&S, o->gpu))) goto done;
    device_short(S.arch, sm, sizeof sm);
  }
  snprintf(file, sizeof file, "%s", o->file ? o->file : "");
  if (!o->file) snprintf(file, sizeof file, "tuned/expectations/%s.json", sm);
  if ((rc = at_expect_load(file, &want))) {
    if (!o->file) at_errctx("expect check: the default --file");
    goto done;
  }
  if (!o->measured) {
    int failed;
    int mine = 0;
    for (size_t i = 0; i < want.n; i++) mine += strcmp(want.e[i].device, S.dev.name) == 0;
    if (!mine) {
      rc = at_fail(AT_ERR_RUNTIME, "expect check: %s has no expectation for this GPU (%s)", file, S.dev.name);
      goto done;
    }
    printf("expect check: %s (%s%s%s), GPU %d: %s; runtime: DB %s, configs %s; tolerance %g%%\n", file,
           want.source ? want.source : "?", want.recorded ? ", " : "", want.recorded ? want.recorded : "", o->gpu,
           S.dev.name, db ? db : "(none)", configs ? configs : "(none)", o->tolerance);
    if ((rc = measure(&want, db, configs, &S, &got, &failed))) goto done;
  } else {
    printf("expect check: %s (%s%s%s) against %s; tolerance %g%%\n", file, want.source ? want.source : "?",
           want.recorded ? ", " : "", want.recorded ? want.recorded : "", o->measured, o->tolerance);
  }
  v = at_xcalloc(want.n ? want.n : 1, sizeof *v);
  at_expect_judge(&want, &got, o->tolerance, v, &failures, &judged);
  if (judged == 0) {
    rc = at_fail(AT_ERR_RUNTIME, "expect check: no expectation of %s is for the measured device (%s)", file,
                 got.n ? got.e[0].device : "none measured");
    goto done;
  }
  print_table(&want, v);
  int counts[5] = {0};
  for (size_t i = 0; i < want.n; i++) counts[v[i].kind]++;
  others = counts[AT_EXPECT_OTHER_DEVICE];
  printf("%d checked: %d ok, %d faster than expected by more than %g%%, %d slower by more than %g%%, %d without a"
         " measurement%s",
         judged, counts[AT_EXPECT_OK], counts[AT_EXPECT_FASTER], o->tolerance, counts[AT_EXPECT_SLOWER], o->tolerance,
         counts[AT_EXPECT_MISSING], others ? "; " : "\n");
  if (others) printf("%d of other devices not checked\n", others);
  fflush(stdout); /* the table before the error on stderr, also when both go to one file */
  if (failures)
    rc = at_fail(AT_ERR_RUNTIME, "expect check: %d of %d expectations not met (slower by more than %g%%, or not measured)",
                 failures, judged, o->tolerance);
done:
  cmp_session_stop(&S);
  free(v);
  at_expect_free(&want);
  at_expect_free(&got);
  return rc;
}

int cmd_expect(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(USAGE, argc < 2 ? stderr : stdout);
    return argc < 2 ? at_fail(AT_ERR_INPUT, "expect: record or check? (see --help)") : AT_OK;
  }
  int is_check = strcmp(argv[1], "check") == 0;
  if (!is_check && strcmp(argv[1], "record") != 0)
    return at_fail(AT_ERR_INPUT, "expect: unknown subcommand '%s' (record or check)", argv[1]);
  options o;
  int rc = parse_options(argc - 1, argv + 1, is_check, &o);
  if (rc == -1) return AT_OK;
  AT_TRY(rc);
  return is_check ? check(&o) : record(&o);
}

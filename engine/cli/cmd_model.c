/* cmd_model.c: `autotune model`: the time model of each (device, op, tag) in a DB
 * (core/timemodel_fit.h), written as <device>-GEMM-<TAG>-model.json beside the exported files. The
 * runtime answers an (N, K) that has no file of its own from it (docs/runtime.md). The DB is a menu
 * run: the configs of the exported files, each timed on every shape of a shape list
 * (scripts/menu_space.py; docs/usage.md, "A time model for the (N, K) nobody tuned"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/select.h"
#include "../core/store.h"
#include "../core/timemodel_fit.h"
#include "../core/util.h"
#include "commands.h"

static const char *USAGE =
    "usage: autotune model [--db PATH] [--out DIR] [--device-name arch|product] [--tag TAG] [--min-share PCT]\n"
    "                      [--cv [--worst N]]\n\n"
    "Fits the time model of every (device, op, tag) of a menu run's DB and writes\n"
    "DIR/<device>-GEMM-<TAG>-model.json: per config, six coefficients of its time against the\n"
    "geometry of its launch, and its residuals on the fit's shapes, which correct a prediction near\n"
    "them. The runtime picks from it for an (N, K) with no file of its own.\n\n"
    "  --db PATH            the DB of a menu run (default $AUTOTUNE_DB, else tuned/autotune.db)\n"
    "  --out DIR            where the file goes (default configs)\n"
    "  --device-name KIND   arch: sm90 (default); product: NVIDIA_H100_80GB_HBM3\n"
    "  --tag TAG            this tag only\n"
    "  --min-share PCT      a config enters the model when measured on PCT% of the shapes it can run on\n"
    "                       (default 90; a SCALE_KB config: those whose scales its slots hold)\n"
    "  --cv                 write nothing: fit once per (N, K) of the DB with that (N, K) left out, pick\n"
    "                       for its shapes as the runtime does, and print the picks' time against the\n"
    "                       fastest measured (geomean, shapes above 1.10x, the worst shapes)\n"
    "  --worst N            with --cv, how many of the worst shapes to list (default 10)\n";

static int write_model(const at_time_model *tm, const char *dir, const char *device) {
  char name[512];
  snprintf(name, sizeof name, "%s-GEMM-%s-model.json", device, tm->tag);
  if (strchr(name, '/')) return at_fail(AT_ERR_RUNTIME, "model: refusing to write '%s', which is not a plain file name", name);
  at_time_model copy = *tm;
  snprintf(copy.device, sizeof copy.device, "%s", device);
  char *json = at_tm_to_json(&copy), *path = at_path_join(dir, name);
  int rc = at_write_file_atomic(path, json, strlen(json));
  if (rc == AT_OK) printf("%s\n", path);
  free(json);
  free(path);
  return rc;
}

/* --cv: the model's picks with each (N, K) left out of its fit (core/timemodel_fit.h). */
static int print_cv(at_store *db, const at_device_entry *dev, const char *device, const char *op, const char *tag,
                    int share, int worst) {
  at_tm_cv_stats cv;
  AT_TRY(at_tm_cv_db(db, dev, op, tag, share, &cv));
  printf("%s %s/%s: each of %d (N, K) left out of the fit in turn, the runtime's pick for its shapes costs %.3fx "
         "the best time measured (geomean over %d shapes), %d above 1.10x; %d picks not measured\n",
         device, op, tag, cv.folds, cv.regret, cv.nshapes, cv.above_110, cv.unmeasured);
  for (int s = 0; s < cv.nshapes && s < worst; s++)
    printf("  %.3fx at %lld x %lld x %lld\n", cv.shape[s].regret, (long long)cv.shape[s].m, (long long)cv.shape[s].n,
           (long long)cv.shape[s].k);
  free(cv.shape);
  return AT_OK;
}

int cmd_model(int argc, char **argv) {
  static const struct option LONG[] = {{"db", required_argument, 0, 'd'},          {"out", required_argument, 0, 'o'},
                                       {"device-name", required_argument, 0, 'n'}, {"tag", required_argument, 0, 't'},
                                       {"min-share", required_argument, 0, 's'},   {"cv", no_argument, 0, 'c'},
                                       {"worst", required_argument, 0, 'w'},       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *env_db = getenv("AUTOTUNE_DB");
  const char *db_path = env_db && *env_db ? env_db : "tuned/autotune.db", *out = "configs", *tag = NULL;
  int product = 0;
  int64_t share = 90, worst = 10;
  int cv = 0, worst_set = 0;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'd': db_path = optarg; break;
    case 'o': out = optarg; break;
    case 't': tag = optarg; break;
    case 's':
      if (at_parse_i64(optarg, &share) || share < 1 || share > 100)
        return at_fail(AT_ERR_INPUT, "model: --min-share must be a percentage from 1 to 100, not '%s'", optarg);
      break;
    case 'c': cv = 1; break;
    case 'w':
      if (at_parse_i64(optarg, &worst) || worst < 0 || worst > 100000)
        return at_fail(AT_ERR_INPUT, "model: --worst must be a count from 0 to 100000, not '%s'", optarg);
      worst_set = 1;
      break;
    case 'n': AT_TRY(at_device_name_kind(optarg, "model", &product)); break;
    case 'h': fputs(USAGE, stdout); return AT_OK;
    case ':': return at_fail(AT_ERR_INPUT, "model: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "model: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc) return at_fail(AT_ERR_INPUT, "model: unexpected argument '%s' (see --help)", argv[optind]);
  if (worst_set && !cv) return at_fail(AT_ERR_INPUT, "model: --worst lists the worst shapes of --cv, which was not given");
  if (!at_file_exists(db_path)) return at_fail(AT_ERR_INPUT, "model: --db: no DB at %s", db_path);
  at_store *db;
  AT_TRY(at_store_open_readonly(db_path, &db));
  int rc = cv ? AT_OK : at_mkdirs(out), written = 0;
  at_device_entry *devs = NULL;
  size_t ndev = 0;
  if (rc == AT_OK) rc = at_store_devices(db, &devs, &ndev);
  if (rc == AT_OK) rc = at_select_check_output(db, devs, ndev, product, "model");
  for (size_t d = 0; d < ndev && rc == AT_OK; d++) {
    char device[128];
    at_device_file_name(&devs[d], product, device, sizeof device);
    at_tuned_nk *nks = NULL;
    size_t nnk = 0;
    rc = at_store_tuned_nks(db, NULL, devs[d].id, &nks, &nnk);
    for (size_t i = 0; i < nnk && rc == AT_OK; i++) {
      /* One model per (op, tag): at its first (N, K). */
      if ((tag && strcmp(tag, nks[i].tag) != 0) ||
          (i > 0 && strcmp(nks[i - 1].tag, nks[i].tag) == 0 && strcmp(nks[i - 1].op, nks[i].op) == 0))
        continue;
      if (cv) {
        rc = print_cv(db, &devs[d], device, nks[i].op, nks[i].tag, (int)share, (int)worst);
        written += rc == AT_OK;
        continue;
      }
      at_time_model tm;
      at_tm_fit_stats st;
      rc = at_tm_fit_db(db, &devs[d], nks[i].op, nks[i].tag, (int)share, &tm, &st);
      if (rc != AT_OK) break;
      rc = write_model(&tm, out, device);
      fprintf(stderr,
              "%s %s/%s: %d configs from %d results on %d shapes (%d measured on fewer than %lld%% of them, or "
              "without BLOCK_M and BLOCK_N, left out); "
              "picking by the model as for an unseen (N, K) (no residual of its own) costs %.3fx the best time measured "
              "(geomean), worst %.2fx at %lld x %lld x %lld\n",
              device, nks[i].op, nks[i].tag, tm.nconfigs, st.results, st.shapes, st.dropped, (long long)share, st.regret,
              st.worst_regret, (long long)st.worst_m, (long long)st.worst_n, (long long)st.worst_k);
      at_tm_free(&tm);
      written += rc == AT_OK;
    }
    free(nks);
  }
  if (rc == AT_OK && written == 0)
    rc = at_fail(AT_ERR_INPUT, "model: %s has no checked results%s%s", db_path, tag ? " for tag " : "", tag ? tag : "");
  free(devs);
  at_store_close(db);
  return rc;
}

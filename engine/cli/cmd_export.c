/* cmd_export.c: `autotune export`: the tuned configs of the DB as JSON files, one per
 * (device, tag, N, K) with the M buckets and an M_LEQ_<m> entry per tuned M (core/select.h), plus
 * one default file per (device, tag). Everything is
 * computed from the DB; earlier files are never read. Format: docs/formats.md.
 *
 * The DB is input like any other: every (op, tag) in it is checked (core/select.h) before the first
 * file is written, so a DB edited by hand cannot make a file name that leaves --out. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/select.h"
#include "../core/store.h"
#include "../core/util.h"
#include "commands.h"

static const char *USAGE =
    "usage: autotune export [--db PATH] [--out DIR] [--device-name arch|product] [--tag TAG]\n\n"
    "Writes DIR/<device>-GEMM-<TAG>-N=<N>-K=<K>.json for every tuned (N, K) and the default file\n"
    "DIR/<device>-GEMM-<TAG>.json, from the checked results in the DB.\n\n"
    "  --db PATH            the DB (default $AUTOTUNE_DB, else tuned/autotune.db)\n"
    "  --out DIR            where the files go (default configs)\n"
    "  --device-name KIND   arch: sm90 (default); product: NVIDIA_H100_80GB_HBM3\n"
    "  --tag TAG            export this tag only\n";

static int write_set(const at_config_set *cs, const char *dir, const char *device, int64_t *written) {
  char name[512];
  if (cs->n)
    snprintf(name, sizeof name, "%s-GEMM-%s-N=%lld-K=%lld.json", device, cs->tag, (long long)cs->n, (long long)cs->k);
  else
    snprintf(name, sizeof name, "%s-GEMM-%s.json", device, cs->tag);
  if (strchr(name, '/')) /* the names were checked; this is the last line of defence */
    return at_fail(AT_ERR_RUNTIME, "export: refusing to write '%s', which is not a plain file name", name);
  char *path = at_path_join(dir, name);
  at_config_set copy = *cs;
  snprintf(copy.device, sizeof copy.device, "%s", device);
  char *json = at_config_set_to_json(&copy);
  int rc = at_write_file_atomic(path, json, strlen(json));
  if (rc == AT_OK) printf("%s\n", path);
  free(json);
  free(path);
  (*written)++;
  return rc;
}

int cmd_export(int argc, char **argv) {
  static const struct option LONG[] = {{"db", required_argument, 0, 'd'},
                                       {"out", required_argument, 0, 'o'},
                                       {"device-name", required_argument, 0, 'n'},
                                       {"tag", required_argument, 0, 't'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *env_db = getenv("AUTOTUNE_DB");
  const char *db_path = env_db && *env_db ? env_db : "tuned/autotune.db", *out = "configs", *tag = NULL;
  int product = 0;
  optind = 1;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", LONG, NULL)) != -1;) {
    switch (ch) {
    case 'd': db_path = optarg; break;
    case 'o': out = optarg; break;
    case 't': tag = optarg; break;
    case 'n': AT_TRY(at_device_name_kind(optarg, "export", &product)); break;
    case 'h': fputs(USAGE, stdout); return AT_OK;
    case ':': return at_fail(AT_ERR_INPUT, "export: option %s needs a value (see --help)", argv[optind - 1]);
    default: return at_fail(AT_ERR_INPUT, "export: unknown option '%s' (see --help)", argv[optind - 1]);
    }
  }
  if (optind != argc) return at_fail(AT_ERR_INPUT, "export: unexpected argument '%s' (see --help)", argv[optind]);
  if (!at_file_exists(db_path)) return at_fail(AT_ERR_INPUT, "export: --db: no DB at %s", db_path);
  at_store *db;
  AT_TRY(at_store_open_readonly(db_path, &db));
  int rc = at_mkdirs(out);
  at_device_entry *devs = NULL;
  size_t ndev = 0;
  int64_t written = 0;
  if (rc == AT_OK) rc = at_store_devices(db, &devs, &ndev);
  if (rc == AT_OK) rc = at_select_check_output(db, devs, ndev, product, "export");
  for (size_t d = 0; d < ndev && rc == AT_OK; d++) {
    char device[128];
    at_device_file_name(&devs[d], product, device, sizeof device);
    at_tuned_nk *nks = NULL;
    size_t nnk = 0;
    rc = at_store_tuned_nks(db, NULL, devs[d].id, &nks, &nnk);
    for (size_t i = 0; i < nnk && rc == AT_OK; i++) {
      if (tag && strcmp(tag, nks[i].tag) != 0) continue;
      at_config_set cs;
      rc = at_select_nk(db, &devs[d], nks[i].op, nks[i].tag, nks[i].n, nks[i].k, &cs);
      if (rc == AT_OK) rc = write_set(&cs, out, device, &written);
      /* One default file per (op, tag): after its last (N, K). */
      int last = i + 1 == nnk || strcmp(nks[i + 1].tag, nks[i].tag) != 0 || strcmp(nks[i + 1].op, nks[i].op) != 0;
      if (rc == AT_OK && last) {
        rc = at_select_default(db, &devs[d], nks[i].op, nks[i].tag, &cs);
        if (rc == AT_OK) rc = write_set(&cs, out, device, &written);
      }
    }
    free(nks);
  }
  if (rc == AT_OK && written == 0)
    rc = at_fail(AT_ERR_RUNTIME, "export: %s has no checked results%s%s to export", db_path, tag ? " for tag " : "",
                 tag ? tag : "");
  if (rc == AT_OK) fprintf(stderr, "exported %lld files to %s\n", (long long)written, out);
  free(devs);
  at_store_close(db);
  return rc;
}

/* devicearg.c: see devicearg.h. */
#include "devicearg.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/device.h"
#include "../core/select.h"
#include "../core/util.h"
#include "../core/workerproc.h"

/* Device names, each once. */
typedef struct name_list {
  char v[64][128];
  int n;
} name_list;

static void add_name(name_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i], name) == 0) return;
  if (l->n < 64) snprintf(l->v[l->n++], sizeof l->v[0], "%s", name);
}

void at_device_arg_warn_unknown(const char *cmd, const char *device, const char *arch_name, at_store *db,
                                const char *configs) {
  name_list known = {.n = 0};
  at_device_entry *devs = NULL;
  size_t ndev = 0;
  if (db && at_store_devices(db, &devs, &ndev) == AT_OK)
    for (size_t i = 0; i < ndev; i++)
      for (int product = 0; product < 2; product++) {
        char name[128];
        at_device_file_name(&devs[i], product, name, sizeof name);
        add_name(&known, name);
      }
  free(devs);
  DIR *d = configs ? opendir(configs) : NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    const char *g = strstr(e->d_name, "-GEMM-");
    size_t len = strlen(e->d_name);
    if (!g || len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(g - e->d_name), e->d_name);
    add_name(&known, name);
  }
  if (d) closedir(d);
  for (int i = 0; i < known.n; i++)
    if (strcmp(known.v[i], device) == 0 || (arch_name && strcmp(known.v[i], arch_name) == 0)) return;
  at_buf list = {0};
  for (int i = 0; i < known.n; i++) at_buf_printf(&list, "%s%s", i ? ", " : "", known.v[i]);
  fprintf(stderr,
          "autotune: %s: warning: --device %s: neither the DB nor the configs know it%s%s (known: %s); the answer is the "
          "built-in config\n",
          cmd, device, arch_name ? " or " : "", arch_name ? arch_name : "", known.n ? list.data : "none");
  at_buf_free(&list);
}

static int cmp_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* The one device the configs directory has files for; of several, the one arch name among them
 * (the shipped configs: sm90's files and a product's, NVIDIA_H200's, which a GPU of that product
 * reads first), said on stderr; else an error listing them. */
static int device_from_configs(const char *cmd, const char *dir, char *out, size_t n) {
  DIR *d = dir ? opendir(dir) : NULL;
  char seen[8][128];
  int nseen = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    const char *g = strstr(e->d_name, "-GEMM-");
    if (!g || (size_t)(g - e->d_name) >= sizeof seen[0]) continue;
    char dev[128];
    snprintf(dev, sizeof dev, "%.*s", (int)(g - e->d_name), e->d_name);
    int known = 0;
    for (int i = 0; i < nseen; i++) known |= strcmp(seen[i], dev) == 0;
    if (!known && nseen < 8) snprintf(seen[nseen++], sizeof seen[0], "%s", dev);
  }
  if (d) closedir(d);
  qsort(seen, (size_t)nseen, sizeof seen[0], cmp_name); /* the same message whatever readdir's order */
  if (nseen == 1) {
    snprintf(out, n, "%s", seen[0]);
    return AT_OK;
  }
  int arch = -1, narch = 0;
  at_buf list = {0};
  for (int i = 0; i < nseen; i++) {
    at_buf_printf(&list, "%s%s", i ? ", " : "", seen[i]);
    if (at_device_is_arch_name(seen[i])) arch = i, narch++;
  }
  int rc = AT_OK;
  if (narch == 1) {
    snprintf(out, n, "%s", seen[arch]);
    fprintf(stderr, "autotune: %s: no GPU here; the configs have files for %s: answering for %s (--device names another)\n",
            cmd, list.data, seen[arch]);
  } else {
    rc = at_fail(AT_ERR_INPUT, "%s: --device is needed: there is no GPU here and %s%s", cmd,
                 nseen ? "the configs have several devices: " : "no configs to infer it from", nseen ? list.data : "");
  }
  at_buf_free(&list);
  return rc;
}

int at_device_arg_resolve(const char *cmd, const char *device, const char *configs, int infer, at_device_arg *out) {
  memset(out, 0, sizeof *out);
  if (device) {
    snprintf(out->names[0], sizeof out->names[0], "%s", device);
    return AT_OK;
  }
  at_device_info *devs = NULL;
  int ndev = 0;
  char why[256];
  AT_TRY(at_probe_devices(&devs, &ndev, why, sizeof why));
  int rc = AT_OK;
  if (ndev) {
    out->sm_count = devs[0].sm_count;
    out->cc = devs[0].cc;
    at_device_export_name(&devs[0], 1, out->names[0], sizeof out->names[0]);
    at_device_export_name(&devs[0], 0, out->names[1], sizeof out->names[1]);
  } else if (infer) {
    rc = device_from_configs(cmd, configs, out->names[0], sizeof out->names[0]);
  } else {
    rc = at_fail(AT_ERR_INPUT, "%s: --device is needed: there is no GPU here (%s)", cmd, why);
  }
  free(devs);
  return rc;
}

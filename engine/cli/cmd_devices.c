/* cmd_devices.c: `autotune devices`: the GPUs a worker can see, with the limits that prune. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/device.h"
#include "../core/workerproc.h"
#include "commands.h"

int cmd_devices(int argc, char **argv) {
  (void)argv;
  if (argc > 1) {
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
      printf("usage: autotune devices\n\nLists the GPUs autotune can see, with the limits it prunes by.\n");
      return AT_OK;
    }
    return at_fail(AT_ERR_INPUT, "devices: unexpected argument '%s'", argv[1]);
  }
  at_device_info *d;
  int n;
  char why[512] = "";
  AT_TRY(at_probe_devices(&d, &n, why, sizeof why));
  if (n == 0) {
    printf("no GPU: %s\n", why[0] ? why : "the driver reports none");
    return AT_OK;
  }
  for (int i = 0; i < n; i++) {
    char arch[16];
    at_arch_for_cc(d[i].cc, arch);
    printf("GPU %d: %s, %s (cc %d.%d), %d SMs, %.1f GiB, L2 %.0f MiB, smem/block %lld KiB, driver %d.%d, %s\n",
           d[i].index, d[i].name, arch, d[i].cc / 10, d[i].cc % 10, d[i].sm_count, (double)d[i].mem_bytes / (1 << 30),
           (double)d[i].l2_bytes / (1 << 20), (long long)d[i].smem_optin / 1024, d[i].driver_version / 1000,
           d[i].driver_version % 1000 / 10, d[i].uuid);
  }
  free(d);
  return AT_OK;
}

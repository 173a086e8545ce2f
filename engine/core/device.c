/* device.c: see device.h. */
#include "device.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void at_device_limits(const at_device_info *d, at_limits *out) {
  char arch[16];
  at_arch_for_cc(d->cc, arch);
  if (at_limits_for_arch(arch, out) != 0) memset(out, 0, sizeof *out), snprintf(out->arch, sizeof out->arch, "%s", arch);
  out->cc = d->cc;
  out->max_threads_per_block = d->max_threads_per_block;
  out->max_smem_per_block = d->smem_optin;
  out->regs_per_block = d->regs_per_block;
  out->regs_per_sm = d->regs_per_sm;
  out->sm_count = d->sm_count;
  out->l2_bytes = d->l2_bytes;
}

int at_device_is_arch_name(const char *name) {
  if (strncmp(name, "sm", 2) != 0 || !name[2]) return 0;
  for (name += 2; *name; name++)
    if (!isdigit((unsigned char)*name)) return 0;
  return 1;
}

void at_device_export_name(const at_device_info *d, int product, char *out, int n) {
  if (!product) {
    snprintf(out, (size_t)n, "sm%d", d->cc);
    return;
  }
  int j = 0;
  for (const char *p = d->name; *p && j < n - 1; p++) out[j++] = (isalnum((unsigned char)*p) || *p == '-') ? *p : '_';
  out[j] = 0;
}

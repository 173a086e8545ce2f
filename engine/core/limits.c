/* limits.c: documented per-architecture limits (see limits.h). */
#include "limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

const char *const AT_LIMIT_NAMES[] = {"cc",           "max_threads_per_block", "max_smem_per_block",
                                      "max_regs_per_thread", "regs_per_block", "regs_per_sm", "sm_count"};

void at_limits_values(const at_limits *l, int64_t *out) {
  out[0] = l->cc;
  out[1] = l->max_threads_per_block;
  out[2] = l->max_smem_per_block;
  out[3] = l->max_regs_per_thread;
  out[4] = l->regs_per_block;
  out[5] = l->regs_per_sm;
  out[6] = l->sm_count;
}

int at_cc_of_arch(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0) return -1;
  char *end;
  long v = strtol(arch + 3, &end, 10);
  if (end == arch + 3 || (*end && strcmp(end, "a") != 0 && strcmp(end, "f") != 0) || v < 50 || v > 1000) return -1;
  return (int)v;
}

void at_arch_for_cc(int cc, char out[16]) {
  /* Architecture-specific features (wgmma, setmaxnreg) exist on 9.0 and 10.x; take them there. */
  snprintf(out, 16, "sm_%d%s", cc, (cc == 90 || cc == 100 || cc == 103) ? "a" : "");
}

int at_limits_for_arch(const char *arch, at_limits *out) {
  int cc = at_cc_of_arch(arch);
  if (cc < 0) return at_fail(AT_ERR_INPUT, "--arch: '%s' is not an architecture like sm_90a or sm_89", arch);
  memset(out, 0, sizeof *out);
  snprintf(out->arch, sizeof out->arch, "%s", arch);
  out->cc = cc;
  out->max_threads_per_block = 1024;
  out->max_regs_per_thread = 255;
  out->regs_per_block = 65536;
  out->regs_per_sm = 65536;
  switch (cc) {
  case 80:
  case 87: out->max_smem_per_block = 166912; break; /* 163 KB */
  case 86:
  case 89: out->max_smem_per_block = 101376; break; /* 99 KB */
  case 90:
  case 100:
  case 103: out->max_smem_per_block = 232448; break; /* 227 KB */
  case 120: out->max_smem_per_block = 101376; break;
  default:
    if (cc < 80) return at_fail(AT_ERR_INPUT, "--arch: %s is older than sm_80, which autotune does not support", arch);
    out->max_smem_per_block = 101376;
  }
  return AT_OK;
}

/* occupancy.c: see occupancy.h. */
#include "occupancy.h"

#include <string.h>

#include "error.h"

static int64_t round_up(int64_t v, int64_t unit) { return (v + unit - 1) / unit * unit; }

int at_occ_limits_for_cc(int cc, at_occ_limits *out) {
  if (cc < 80) return at_fail(AT_ERR_INPUT, "compute capability %d.%d: autotune knows the limits of 8.0 and later", cc / 10, cc % 10);
  memset(out, 0, sizeof *out);
  out->cc = cc;
  out->max_threads_per_block = 1024;
  out->max_regs_per_thread = 255;
  out->regs_per_sm = out->regs_per_block = 65536;
  out->smem_reserved = 1024;
  out->smem_unit = 128;
  out->reg_unit = 256;
  out->sub_partitions = 4;
  /* Warp slots, block slots and the shared-memory carve-out of one SM, per generation. */
  switch (cc) {
  case 80:
    out->max_warps_per_sm = 64, out->max_blocks_per_sm = 32, out->smem_per_sm = 167936; /* 164 KiB */
    break;
  case 87:
    out->max_warps_per_sm = 48, out->max_blocks_per_sm = 16, out->smem_per_sm = 167936;
    break;
  case 89:
    out->max_warps_per_sm = 48, out->max_blocks_per_sm = 24, out->smem_per_sm = 102400; /* 100 KiB */
    break;
  case 90:
  case 100:
  case 103:
    out->max_warps_per_sm = 64, out->max_blocks_per_sm = 32, out->smem_per_sm = 233472; /* 228 KiB */
    break;
  case 120:
  case 121:
    out->max_warps_per_sm = 48, out->max_blocks_per_sm = 32, out->smem_per_sm = 102400;
    break;
  default: /* 8.6 and anything unknown: the smallest of the table */
    out->max_warps_per_sm = 48, out->max_blocks_per_sm = 16, out->smem_per_sm = 102400;
  }
  out->smem_per_block = out->smem_per_sm - out->smem_reserved;
  return AT_OK;
}

void at_occupancy_of(const at_occ_limits *l, int64_t threads, int regs, int64_t smem_bytes, at_occupancy *out) {
  memset(out, 0, sizeof *out);
  int64_t warps = (threads + 31) / 32;
  int64_t regs_per_warp = round_up((int64_t)(regs > 0 ? regs : 0) * 32, l->reg_unit);
  if (threads < 1 || threads > l->max_threads_per_block) {
    out->limiter = "threads";
    return;
  }
  if (regs > l->max_regs_per_thread || warps * regs_per_warp > l->regs_per_block) {
    out->limiter = "registers per block";
    return;
  }
  if (smem_bytes > l->smem_per_block) {
    out->limiter = "shared memory per block";
    return;
  }
  /* Each limit as a number of blocks; the first smallest names the limiter. */
  int64_t by_regs = l->max_blocks_per_sm;
  if (regs_per_warp > 0) {
    int64_t per_part = l->regs_per_sm / l->sub_partitions / regs_per_warp; /* warps per sub-partition */
    by_regs = per_part * l->sub_partitions / warps;
  }
  int64_t alloc = round_up(smem_bytes + l->smem_reserved, l->smem_unit);
  int64_t by_smem = l->smem_per_sm / alloc;
  int64_t by_warps = l->max_warps_per_sm / warps;
  const struct {
    int64_t blocks;
    const char *name;
  } LIM[] = {{by_regs, "registers"}, {by_smem, "shared memory"}, {by_warps, "warps"}, {l->max_blocks_per_sm, "blocks"}};
  int best = 0;
  for (int i = 1; i < 4; i++)
    if (LIM[i].blocks < LIM[best].blocks) best = i;
  out->blocks_per_sm = (int)LIM[best].blocks;
  out->limiter = LIM[best].name;
  out->warps_per_sm = (int)(LIM[best].blocks * warps);
  out->fraction = (double)out->warps_per_sm / l->max_warps_per_sm;
}

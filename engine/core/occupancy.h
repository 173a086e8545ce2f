/* occupancy.h: theoretical occupancy of a kernel from what the DB knows of it (registers per thread,
 * shared memory and threads per block) and the per-SM limits of its GPU, as NVIDIA's occupancy
 * calculator computes it: resident blocks per SM are the fewest that registers, shared memory,
 * warps and the block slots allow.
 *
 * Rules (CUDA C Programming Guide, "Compute Capabilities" and the occupancy calculator):
 *  - registers are allocated per warp in units of 256, and an SM's register file is split evenly
 *    among its 4 sub-partitions, each holding whole warps: warps = 4 x floor(regs_per_sm / 4 /
 *    ceil(regs x 32, 256));
 *  - shared memory per block is its static and dynamic bytes plus 1 KiB the system reserves, in
 *    units of 128 bytes, against the SM's largest carve-out;
 *  - a block is ceil(threads / 32) warps, against the SM's warp and block slots.
 * Thread-block clusters are not modelled (a cluster launch may fit fewer blocks). */
#ifndef AT_OCCUPANCY_H
#define AT_OCCUPANCY_H

#include <stdint.h>

typedef struct at_occ_limits {
  int cc;                      /* 90 */
  int max_warps_per_sm;        /* 64 on sm_80 and sm_90, 48 on sm_86 and sm_89 */
  int max_blocks_per_sm;
  int max_threads_per_block;
  int max_regs_per_thread;
  int64_t regs_per_sm, regs_per_block;
  int64_t smem_per_sm;         /* the largest shared-memory carve-out of one SM, bytes */
  int64_t smem_per_block;      /* the largest a block can opt in to (static + dynamic) */
  int64_t smem_reserved;       /* per block, taken by the system */
  int smem_unit, reg_unit;     /* allocation granularity: bytes, registers per warp */
  int sub_partitions;
} at_occ_limits;

/* The documented limits of compute capability cc (10 x major + minor). Capabilities not in the
 * table take the most conservative row of their generation; below 80 it is AT_ERR_INPUT. */
int at_occ_limits_for_cc(int cc, at_occ_limits *out);

typedef struct at_occupancy {
  int blocks_per_sm; /* 0: one block does not fit (limiter says why) */
  int warps_per_sm;
  double fraction;     /* active warps / max_warps_per_sm */
  const char *limiter; /* "registers", "shared memory", "warps", "blocks"; "threads" or "registers per
                          block" or "shared memory per block" when one block exceeds a limit */
} at_occupancy;

/* smem_bytes: static + dynamic shared memory per block. */
void at_occupancy_of(const at_occ_limits *l, int64_t threads, int regs, int64_t smem_bytes, at_occupancy *out);

#endif

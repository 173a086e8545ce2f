/* limits.h: the device limits that prune candidates, from the GPU when there is one, otherwise
 * from the documented limits of the target architecture (CUDA C Programming Guide, "Compute
 * Capabilities" table). Their names are usable in constraint expressions. */
#ifndef AT_LIMITS_H
#define AT_LIMITS_H

#include <stdint.h>

typedef struct at_limits {
  char arch[16];                  /* NVRTC target, e.g. "sm_90a" */
  int64_t cc;                     /* compute capability as 10*major + minor, e.g. 90 */
  int64_t max_threads_per_block;
  int64_t max_smem_per_block;     /* opt-in maximum of dynamic + static shared memory, bytes */
  int64_t max_regs_per_thread;
  int64_t regs_per_block;
  int64_t regs_per_sm;
  int64_t sm_count;               /* 0 when not known (no GPU) */
  int64_t l2_bytes;               /* 0 when not known */
} at_limits;

/* The names, in the order at_limits_values() writes them. */
extern const char *const AT_LIMIT_NAMES[];
#define AT_LIMIT_COUNT 7
void at_limits_values(const at_limits *l, int64_t *out);

/* Limits from the documented table for an arch like "sm_90a", "sm_89", "sm_80". */
int at_limits_for_arch(const char *arch, at_limits *out);

/* The NVRTC target for a compute capability: 90 -> "sm_90a" (wgmma needs the a), 89 -> "sm_89". */
void at_arch_for_cc(int cc, char out[16]);
/* "sm_90a" -> 90; -1 when the text is not an arch. */
int at_cc_of_arch(const char *arch);

#endif

/* device.h: what a worker reports about its GPU (the parent learns it over the pipe). */
#ifndef AT_DEVICE_H
#define AT_DEVICE_H

#include <stdint.h>

#include "limits.h"

typedef struct at_device_info {
  int index;          /* CUDA device ordinal */
  int count;          /* devices the driver sees */
  char name[128];     /* "NVIDIA H100 80GB HBM3" */
  char uuid[48];      /* "GPU-xxxxxxxx-..." */
  int cc;             /* 90 */
  int driver_version; /* 13000 */
  int sm_count;
  int max_threads_per_block;
  int64_t smem_optin;  /* max shared memory per block, opt-in */
  int64_t regs_per_block, regs_per_sm;
  int64_t l2_bytes;
  int64_t mem_bytes;
  int clock_khz, mem_clock_khz, bus_width_bits;
} at_device_info;

/* The pruning limits of this device (limits.h), with arch the NVRTC target to use. */
void at_device_limits(const at_device_info *d, at_limits *out);

/* "sm90" (arch) or "NVIDIA_H100_80GB_HBM3" (product): the device name used in exported files. */
void at_device_export_name(const at_device_info *d, int product, char *out, int n);

/* 1 for an arch name as at_device_export_name writes it ("sm90", "sm100"), 0 for a product name. */
int at_device_is_arch_name(const char *name);

#endif

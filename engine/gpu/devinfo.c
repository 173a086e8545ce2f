/* devinfo.c: see devinfo.h. */
#include "devinfo.h"

#include <stdio.h>
#include <string.h>

#include "cuda.h"

static int attr(CUdevice dev, CUdevice_attribute a, int *v) {
  CU_CHECK(at_cu->DeviceGetAttribute(v, a, dev));
  return AT_OK;
}

int at_gpu_device_info(int ordinal, at_device_info *d) {
  const at_cuda_api *cu;
  AT_TRY(at_cuda_load(&cu));
  memset(d, 0, sizeof *d);
  int count = 0;
  CU_CHECK(cu->DeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count)
    return at_fail(AT_ERR_INPUT, "--gpus: there is no GPU %d (the driver sees %d)", ordinal, count);
  CUdevice dev;
  CU_CHECK(cu->DeviceGet(&dev, ordinal));
  d->index = ordinal;
  d->count = count;
  CU_CHECK(cu->DeviceGetName(d->name, sizeof d->name, dev));
  int major, minor, v;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major));
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor));
  d->cc = major * 10 + minor;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &d->sm_count));
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &d->max_threads_per_block));
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &v));
  d->smem_optin = v;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &v));
  d->regs_per_block = v;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &v));
  d->regs_per_sm = v;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &v));
  d->l2_bytes = v;
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &d->clock_khz));
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &d->mem_clock_khz));
  AT_TRY(attr(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &d->bus_width_bits));
  size_t mem = 0;
  CU_CHECK(cu->DeviceTotalMem(&mem, dev));
  d->mem_bytes = (int64_t)mem;
  CUuuid u;
  if (cu->DeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(d->uuid, sizeof d->uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  }
  cu->DriverGetVersion(&d->driver_version);
  return AT_OK;
}

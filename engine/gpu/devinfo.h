/* devinfo.h: reading a GPU's properties through the driver API (worker side). */
#ifndef AT_GPU_DEVINFO_H
#define AT_GPU_DEVINFO_H

#include "../core/device.h"

/* Fills d for a CUDA device ordinal. */
int at_gpu_device_info(int ordinal, at_device_info *d);

#endif

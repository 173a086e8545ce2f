/* peak.h: the two ceilings of the device, measured once per run (docs/timing.md): copy bandwidth
 * and the dense FP8 tensor-core rate. The roofline percentage of every result is against them. */
#ifndef AT_GPU_PEAK_H
#define AT_GPU_PEAK_H

#include "../core/proto.h"
#include "gpuctx.h"

int at_measure_peaks(const at_gpu *g, at_peak_reply *r);

#endif

/* launch.h: one kernel launch as the worker and the runtime library both do it: the kernel's
 * parameters (an op's argument struct, then any TMA descriptors, each passed by value) and the
 * launch itself, with a thread-block cluster when the family asks for one. */
#ifndef AT_GPU_LAUNCH_H
#define AT_GPU_LAUNCH_H

#include "../core/op.h"
#include "cuda.h"

enum { AT_KPARAMS_MAX = 6, AT_KPARAMS_BYTES = 896 }; /* the sm90 family: args and five tensor maps */

/* The parameters of one launch, as cuLaunchKernel takes them: ptr[i] points at parameter i inside
 * storage (64-byte aligned, which a CUtensorMap needs). */
typedef struct at_kparams {
  _Alignas(64) unsigned char storage[AT_KPARAMS_BYTES];
  void *ptr[AT_KPARAMS_MAX];
  int count;
  size_t used; /* bytes of storage taken */
} at_kparams;

/* Appends a parameter of `bytes` bytes aligned to `align`; returns where to write it, NULL when
 * storage is full. */
void *at_kparams_push(at_kparams *k, size_t bytes, size_t align);

/* cuLaunchKernel, or cuLaunchKernelEx with a cluster dimension when L->cluster > 1 and with
 * programmatic stream serialization when pdl and L->griddep: the kernel may then be scheduled while
 * the stream's preceding kernel still runs (it waits for it itself). A persistent grid of
 * clusters (L->persistent) is launched with at most as many clusters as the GPU holds at once
 * (cuOccupancyMaxActiveClusters). */
CUresult at_launch_kernel(CUfunction fn, const at_launch *L, CUstream stream, at_kparams *k, int pdl);

/* The x extent of a persistent grid of clusters of `cluster` CTAs when the GPU holds `fit` such
 * clusters at once: grid_x, or fit clusters where grid_x / cluster is more (fit < 1: unknown, no
 * change). */
unsigned at_launch_grid_fit(unsigned grid_x, unsigned cluster, int fit);

#endif

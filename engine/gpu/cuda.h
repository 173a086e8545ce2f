/* cuda.h: the CUDA driver API, opened with dlopen("libcuda.so.1") on first use, so that autotune
 * starts (and compiles, and records) on a machine with no GPU driver at all.
 *
 * Only worker processes and the runtime library call into it: the tuner's parent process never
 * touches CUDA (a faulting kernel leaves a context that cannot be used again). */
#ifndef AT_GPU_CUDA_H
#define AT_GPU_CUDA_H

#include <cuda.h>

#include "../core/error.h"

/* field, prototype (from cuda.h, after its versioning macros), exported symbol */
#define AT_CUDA_FUNCS(X)                                                                                               \
  X(Init, cuInit, "cuInit")                                                                                            \
  X(DriverGetVersion, cuDriverGetVersion, "cuDriverGetVersion")                                                        \
  X(DeviceGetCount, cuDeviceGetCount, "cuDeviceGetCount")                                                              \
  X(DeviceGet, cuDeviceGet, "cuDeviceGet")                                                                             \
  X(DeviceGetName, cuDeviceGetName, "cuDeviceGetName")                                                                 \
  X(DeviceGetAttribute, cuDeviceGetAttribute, "cuDeviceGetAttribute")                                                 \
  X(DeviceTotalMem, cuDeviceTotalMem, "cuDeviceTotalMem_v2")                                                           \
  X(DeviceGetUuid, cuDeviceGetUuid, "cuDeviceGetUuid_v2")                                                              \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                                      \
  X(CtxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent")                                                                 \
  X(CtxGetCurrent, cuCtxGetCurrent, "cuCtxGetCurrent")                                                                 \
  X(CtxGetDevice, cuCtxGetDevice, "cuCtxGetDevice")                                                                    \
  X(CtxGetId, cuCtxGetId, "cuCtxGetId")                                                                                \
  X(DevicePrimaryCtxReset, cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2")                                      \
  X(CtxSynchronize, cuCtxSynchronize, "cuCtxSynchronize")                                                              \
  X(ModuleLoadData, cuModuleLoadData, "cuModuleLoadData")                                                              \
  X(ModuleUnload, cuModuleUnload, "cuModuleUnload")                                                                    \
  X(ModuleGetFunction, cuModuleGetFunction, "cuModuleGetFunction")                                                     \
  X(FuncSetAttribute, cuFuncSetAttribute, "cuFuncSetAttribute")                                                        \
  X(FuncGetAttribute, cuFuncGetAttribute, "cuFuncGetAttribute")                                                        \
  X(LaunchKernel, cuLaunchKernel, "cuLaunchKernel")                                                                    \
  X(LaunchKernelEx, cuLaunchKernelEx, "cuLaunchKernelEx")                                                              \
  X(TensorMapEncodeTiled, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled")                                            \
  X(MemAlloc, cuMemAlloc, "cuMemAlloc_v2")                                                                             \
  X(MemFree, cuMemFree, "cuMemFree_v2")                                                                                \
  X(MemAllocAsync, cuMemAllocAsync, "cuMemAllocAsync")                                                                 \
  X(MemFreeAsync, cuMemFreeAsync, "cuMemFreeAsync")                                                                    \
  X(MemGetInfo, cuMemGetInfo, "cuMemGetInfo_v2")                                                                       \
  X(MemcpyHtoD, cuMemcpyHtoD, "cuMemcpyHtoD_v2")                                                                       \
  X(MemcpyDtoH, cuMemcpyDtoH, "cuMemcpyDtoH_v2")                                                                       \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")                                                        \
  X(MemsetD8Async, cuMemsetD8Async, "cuMemsetD8Async")                                                                 \
  X(MemsetD16Async, cuMemsetD16Async, "cuMemsetD16Async")                                                              \
  X(StreamCreate, cuStreamCreate, "cuStreamCreate")                                                                    \
  X(StreamDestroy, cuStreamDestroy, "cuStreamDestroy_v2")                                                              \
  X(StreamSynchronize, cuStreamSynchronize, "cuStreamSynchronize")                                                     \
  X(StreamQuery, cuStreamQuery, "cuStreamQuery")                                                                       \
  X(StreamIsCapturing, cuStreamIsCapturing, "cuStreamIsCapturing")                                                     \
  X(StreamGetId, cuStreamGetId, "cuStreamGetId")                                                                       \
  X(EventCreate, cuEventCreate, "cuEventCreate")                                                                       \
  X(EventDestroy, cuEventDestroy, "cuEventDestroy_v2")                                                                 \
  X(EventRecord, cuEventRecord, "cuEventRecord")                                                                       \
  X(EventSynchronize, cuEventSynchronize, "cuEventSynchronize")                                                        \
  X(EventElapsedTime, cuEventElapsedTime, "cuEventElapsedTime_v2")                                                     \
  X(StreamBeginCapture, cuStreamBeginCapture, "cuStreamBeginCapture_v2")                                               \
  X(StreamEndCapture, cuStreamEndCapture, "cuStreamEndCapture")                                                        \
  X(GraphInstantiate, cuGraphInstantiate, "cuGraphInstantiateWithFlags")                                               \
  X(GraphLaunch, cuGraphLaunch, "cuGraphLaunch")                                                                       \
  X(GraphExecDestroy, cuGraphExecDestroy, "cuGraphExecDestroy")                                                        \
  X(GraphDestroy, cuGraphDestroy, "cuGraphDestroy")                                                                    \
  X(GraphGetNodes, cuGraphGetNodes, "cuGraphGetNodes")                                                                 \
  X(GraphNodeGetType, cuGraphNodeGetType, "cuGraphNodeGetType")                                                        \
  X(GraphKernelNodeGetParams, cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2")                              \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor,                            \
    "cuOccupancyMaxActiveBlocksPerMultiprocessor")                                                                     \
  X(OccupancyMaxActiveClusters, cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters")                          \
  X(GetErrorName, cuGetErrorName, "cuGetErrorName")                                                                    \
  X(GetErrorString, cuGetErrorString, "cuGetErrorString")

typedef struct at_cuda_api {
#define AT_CUDA_FIELD(field, proto, sym) __typeof__(&proto) field;
  AT_CUDA_FUNCS(AT_CUDA_FIELD)
#undef AT_CUDA_FIELD
} at_cuda_api;

/* The table, loaded (and cuInit called) on first use; thread-safe. Fails with AT_ERR_RUNTIME and
 * a plain message ("no NVIDIA driver: libcuda.so.1 ...") when there is no driver. */
int at_cuda_load(const at_cuda_api **out);
/* The table once loaded (NULL before); for the check macro. */
extern const at_cuda_api *at_cu;

const char *at_cu_error_name(CUresult r);
const char *at_cu_error_text(CUresult r);

#define CU_CHECK(expr) AT_API_CHECK("CUDA", CUresult, expr, CUDA_SUCCESS, at_cu_error_name, at_cu_error_text)

/* A context instance: the driver's handle and its id. The id is unique for the process's life; the
 * handle is not: a reset primary context (cudaDeviceReset) keeps its handle and gets a new id, and a
 * context made after another was destroyed may get the old one's handle. What was made in a context
 * (modules, device memory) dies with it, so caches of such things key on the id. */
typedef struct at_ctx_ref {
  CUcontext handle;
  unsigned long long id;
} at_ctx_ref;

/* The current context (AT_ERR_RUNTIME without one). */
static inline int at_ctx_current(at_ctx_ref *out) {
  if (at_cu->CtxGetCurrent(&out->handle) != CUDA_SUCCESS || !out->handle)
    return at_fail(AT_ERR_RUNTIME, "no current CUDA context: make one current (cudaSetDevice or cuCtxSetCurrent) first");
  CU_CHECK(at_cu->CtxGetId(out->handle, &out->id));
  return AT_OK;
}

/* Is c's context instance still there (not destroyed, not reset since)? Only then may what was made
 * in it be freed: after a reset its addresses may hold the new context's memory. */
static inline int at_ctx_alive(const at_ctx_ref *c) {
  unsigned long long id = 0;
  return c->handle && at_cu && at_cu->CtxGetId(c->handle, &id) == CUDA_SUCCESS && id == c->id;
}

/* Errors after which the context is unusable: the process must end. */
int at_cu_is_sticky(CUresult r);

#endif

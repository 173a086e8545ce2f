// graph_chain.cuh: the time per call of a chain of launches captured in one CUDA graph, as `autotune
// compare` runs the library's calls back to back (for the single-file benchmarks of bench/).
#pragma once
#include <algorithm>
#include <vector>

#include "cuda_check.cuh"

// launch(stream, i) issues call i of `launches` (returning a cudaError_t); the graph is replayed
// once to warm up, then 9 times; *us gets the median replay's time per call. Returns 0, or 1 on a
// CUDA error (reported by CK).
template <class Launch>
static int graph_chain_us(int launches, Launch launch, float *us) {
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; i++) CK(launch(s, i));
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t ge;
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(ge, s));  // warm-up
  std::vector<float> t;
  for (int r = 0; r < 9; r++) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / launches);
  }
  std::sort(t.begin(), t.end());
  *us = t[t.size() / 2];
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
  return 0;
}

// A launch configuration of `grid` x `threads`, with programmatic stream serialization when pdl.
struct chain_launch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  chain_launch(int grid, int threads, cudaStream_t s, bool pdl) {
    cfg.gridDim = dim3(grid), cfg.blockDim = dim3(threads), cfg.stream = s;
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at, cfg.numAttrs = pdl ? 1 : 0;
  }
};

// The GPU's SM count and L2 size, and a word per SM for a kernel to write (so it keeps its loads).
static int chain_device(int *sms, int *l2, unsigned **out) {
  CK(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(l2, cudaDevAttrL2CacheSize, 0));
  CK(cudaMalloc(out, sizeof(unsigned) * *sms));
  return 0;
}

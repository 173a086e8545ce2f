// pdl_overlap.cu: does a second grid launched with programmatic dependent launch (PDL) run on the
// SMs that a persistent first grid frees early, as the runtime's tail is meant to? Both grids are
// clusters of two CTAs with 220 KB of shared memory (one CTA an SM, as the sm90 kernels), and do
// nothing but wait out their "tiles" on %globaltimer:
//   main  132 CTAs walk 126 units of 50 us persistently (1.91 waves: 12 SMs idle in the second)
//   tail  154 CTAs, one unit of 25 us each, launched right after it; with late wait 1 each CTA,
//         with 2 only the grid's last one, waits for the main grid (griddepcontrol.wait) before
//         it exits, as the template's late_wait did before and does since session 17
// It prints when the main grid ends, how many tail CTAs started before that, and when the tail
// ends (a tail on the freed SMs ends near 125 us, one after the main grid at 150), plainly and with
// PDL, launched on a stream and replayed from a CUDA graph. (H100, docs/perf.md, "The tail by rows":
// with every CTA waiting, the 12 CTAs that start early keep their SMs until the main grid ends.)
//   nvcc -O2 -arch=sm_90a bench/pdl_overlap.cu -o /tmp/pdl_overlap && /tmp/pdl_overlap
#include <cstdio>

#include "cuda_check.cuh"

enum { SMEM = 220 * 1024, MAIN_UNITS = 126, MAIN_NS = 50000, TAIL_CTAS = 154, TAIL_NS = 25000 };

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// rec[3 b]: CTA b's start, end (ns) and SM. late 0: wait first (a main launch); 1: every CTA waits
// before it exits; 2: only the grid's last CTA does.
__global__ void grid_of_units(unsigned long long *rec, int units, int unit_ns, int late) {
  extern __shared__ char smem[];
  if (late == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
  const int cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
  const unsigned long long t0 = now_ns();
  int mine = 0;
  for (int u = cluster; u < units; u += clusters) mine++;
  while (now_ns() - t0 < (unsigned long long)mine * unit_ns) {
  }
  if (late == 1 || (late == 2 && blockIdx.x == gridDim.x - 1)) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    rec[3 * blockIdx.x] = t0, rec[3 * blockIdx.x + 1] = now_ns(), rec[3 * blockIdx.x + 2] = sm;
    smem[0] = 0;
  }
}

static cudaError_t launch(int ctas, unsigned long long *rec, int units, int unit_ns, int late, cudaStream_t s, int pdl) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(ctas);
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = SMEM;
  cfg.stream = s;
  cudaLaunchAttribute at[2];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 2, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
  at[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[1].val.programmaticStreamSerializationAllowed = pdl;
  cfg.attrs = at;
  cfg.numAttrs = 2;
  return cudaLaunchKernelEx(&cfg, grid_of_units, rec, units, unit_ns, late);
}

int main() {
  CK(cudaFuncSetAttribute(grid_of_units, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long *rm, *rt;
  CK(cudaMallocManaged(&rm, 3 * sizeof *rm * sms));
  CK(cudaMallocManaged(&rt, 3 * sizeof *rt * TAIL_CTAS));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  for (int late = 1; late <= 2; late++)
    for (int graph = 0; graph < 2; graph++)
      for (int pdl = 0; pdl < 2; pdl++) {
        cudaGraphExec_t exec = nullptr;
        for (int rep = 0; rep < 3; rep++) {  // the last repetition is printed
          if (graph && !exec) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            CK(launch(sms, rm, MAIN_UNITS, MAIN_NS, 0, s, pdl));
            CK(launch(TAIL_CTAS, rt, TAIL_CTAS / 2, TAIL_NS, late, s, pdl));
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&exec, g, 0));
            CK(cudaGraphDestroy(g));
          }
          if (graph) {
            CK(cudaGraphLaunch(exec, s));
          } else {
            CK(launch(sms, rm, MAIN_UNITS, MAIN_NS, 0, s, pdl));
            CK(launch(TAIL_CTAS, rt, TAIL_CTAS / 2, TAIL_NS, late, s, pdl));
          }
          CK(cudaStreamSynchronize(s));
        }
        if (exec) CK(cudaGraphExecDestroy(exec));
        unsigned long long t0 = ~0ull, main_end = 0, tail_end = 0;
        for (int i = 0; i < sms; i++) {
          if (rm[3 * i] < t0) t0 = rm[3 * i];
          if (rm[3 * i + 1] > main_end) main_end = rm[3 * i + 1];
        }
        int early = 0;
        for (int i = 0; i < TAIL_CTAS; i++) {
          if (rt[3 * i + 1] > tail_end) tail_end = rt[3 * i + 1];
          early += rt[3 * i] < main_end;
        }
        printf("late wait %s, %s, %s: main ends at %.1f us, %d tail CTAs start before that, tail ends at %.1f us\n",
               late == 1 ? "every CTA" : "last CTA", graph ? "graph" : "stream", pdl ? "PDL" : "plain",
               (main_end - t0) / 1e3, early, (tail_end - t0) / 1e3);
      }
  return 0;
}

/* compare_session.h: the parent's side of the compare worker (gpu/compare.h), for `autotune compare`
 * and `autotune expect`: find the GPU, start the worker, measure the peaks once, send one shape
 * through the live providers, and when the worker dies or hangs, say where and start another one
 * for the next shape. This process never touches CUDA. */
#ifndef AT_CLI_COMPARE_SESSION_H
#define AT_CLI_COMPARE_SESSION_H

#include "../core/device.h"
#include "../core/proto.h"
#include "../core/workerproc.h"
#include "../core/op.h"

/* How a shape is checked and timed: a space's check, seed and timing (docs/timing.md). */
typedef struct cmp_settings {
  double atol, rtol, gamma;
  uint64_t seed;
  int warmup, samples;
  double l2_multiple;
} cmp_settings;

typedef struct cmp_session {
  int gpu;
  at_worker w;
  at_device_info dev; /* the GPU, once started */
  char arch[16];
  at_peak_reply peak;
  int have_peak;
} cmp_session;

/* The provider names of AT_CMP_* ("autotune", "cublaslt", "default", "cublas"). */
extern const char *const CMP_PROVIDERS[AT_CMP_NPROVIDERS];

/* --gpu N: a GPU index; AT_ERR_INPUT naming the option otherwise. */
int cmp_parse_gpu(const char *arg, int *gpu);
/* Finds GPU `gpu` through a probe worker: AT_ERR_RUNTIME "<who> needs a GPU, and there is none here
 * (...)" without one, AT_ERR_INPUT for an index the driver does not have. */
int cmp_session_probe(const char *who, int gpu);
/* Starts the worker and measures the peak rates (once per session). */
int cmp_session_start(cmp_session *S, int gpu);
/* The request for one shape of `op`, with the runtime's sources (NULL: none) and tag. */
void cmp_request(at_compare_req *q, const char *op, const at_shape *sh, const cmp_settings *set,
                 const int use[AT_CMP_NPROVIDERS], const char *db, const char *configs, const char *tag);
/* Sends q, waits for its reply. A worker lost on the way (died, or silent for 600 s) is said on
 * stderr with the provider and step it was at; rep then marks every provider asked for, and the
 * next call starts a new worker. Fails only when the worker cannot be used at all. */
int cmp_session_shape(cmp_session *S, const at_compare_req *q, at_compare_reply *rep);
void cmp_session_stop(cmp_session *S);

/* The runtime's sources when the user names none: $AUTOTUNE_DB, else tuned/autotune.db, and the
 * directory configs, each only when it exists (NULL otherwise). */
void cmp_default_sources(const char **db, const char **configs);

/* A provider's result with a checked time. */
int cmp_result_ok(const at_compare_result *r);

#endif

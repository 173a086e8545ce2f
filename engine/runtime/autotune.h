/* autotune.h: the runtime library. An inference process opens it once, then calls the op's launch
 * function; the library picks the tuned kernel for the problem and the current GPU, compiles it on
 * first use (sharing the tuner's compile cache), and launches it on the caller's stream.
 *
 * Lookup order (the same `autotune query` prints): the DB's results for the exact (N, K); the
 * exported file for (N, K) (between its tuned M, from 257 to 2048, the time model's picks); the
 * tag's time model; the tag's default file; the op's built-in default. A missing, corrupt or
 * wrong-schema DB or file is skipped with one warning on stderr.
 *
 * Cost: after the first call for a shape and device, a call does no SQL, no allocation and takes
 * no lock; calls from several threads are safe. A DB rewritten by a tuner is noticed within a
 * second, without a restart.
 *
 * All functions return AT_STATUS_OK, AT_STATUS_ERROR (CUDA, compile or I/O failure) or
 * AT_STATUS_INVALID (an argument is wrong; the message names it); at_runtime_last_error() gives
 * the calling thread's last message. docs/runtime.md is the reference. */
#ifndef AUTOTUNE_H
#define AUTOTUNE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: what this header declares is all it exports. */
#if defined(__GNUC__) || defined(__clang__)
#define AT_API __attribute__((visibility("default")))
#else
#define AT_API
#endif

#define AT_STATUS_OK 0
#define AT_STATUS_ERROR 1
#define AT_STATUS_INVALID 2

typedef struct at_runtime at_runtime;

typedef struct at_runtime_options {
  const char *db_path;       /* a tuned DB; NULL: $AUTOTUNE_DB when set, else none */
  const char *configs_dir;   /* exported JSON files; NULL: $AUTOTUNE_CONFIGS when set, else none */
  const char *tag;           /* only configs of this tag (e.g. "A8W8_BLOCKSCALE"), or NULL for any */
  const char *templates_dir; /* NULL: $AUTOTUNE_TEMPLATES, else the directory built in */
  const char *cache_dir;     /* NULL: the tuner's ($AUTOTUNE_CACHE, else $XDG_CACHE_HOME/autotune, else ~/.cache/autotune) */
  int pdl;                   /* AT_PDL_*: 0 (AT_PDL_DEFAULT) takes $AUTOTUNE_PDL, else AT_PDL_ON */
  int tail;                  /* AT_TAIL_*: 0 (AT_TAIL_DEFAULT) takes $AUTOTUNE_TAIL, else AT_TAIL_ON */
} at_runtime_options;

/* Programmatic dependent launch (sm_90 and later; docs/runtime.md): whether a launch may overlap the
 * end of the kernel before it on the stream.
 *   AT_PDL_ON   (the default) kernels of the families that support it (sm90) are launched so that
 *               they may be scheduled while the kernel before them ends: they set themselves up
 *               meanwhile and wait for it before they touch any memory, so the result is the same
 *               as with plain launches whatever ran before. Other families launch plainly. A driver
 *               that refuses the launch attribute gets plain launches (one warning on stderr).
 *   AT_PDL_OFF  plain launches only.
 * $AUTOTUNE_PDL: "off" or "on". */
#define AT_PDL_DEFAULT 0
#define AT_PDL_OFF 1
#define AT_PDL_ON 2

/* The tail (docs/runtime.md): whether a call whose last wave of tiles would leave most SMs idle
 * runs that wave's tiles as a second launch of a finer config over their part of C (and, for an
 * (N, K) nobody tuned, whether a call that would fill less than half of the GPU runs as such a
 * launch instead).
 *   AT_TAIL_ON   (the default) for sm90 configs without split K, where the launch's cost model
 *                predicts a gain. Every element is still computed once, by one kernel: the tail's
 *                elements by the tail config, so they round as that config does (both are within
 *                the op's check; the bits may differ from AT_TAIL_OFF's).
 *   AT_TAIL_OFF  one launch per call, the tuned config's alone.
 * $AUTOTUNE_TAIL: "off" or "on". */
#define AT_TAIL_DEFAULT 0
#define AT_TAIL_OFF 1
#define AT_TAIL_ON 2

AT_API int at_runtime_open(const at_runtime_options *options, at_runtime **out);
AT_API void at_runtime_close(at_runtime *rt);
AT_API const char *at_runtime_last_error(void);

typedef struct at_selection {
  const char *source;  /* "db", "nk_file", "model_file", "default_file" or "builtin" */
  const char *path;    /* the DB or file that answered */
  const char *bucket;  /* "M_LEQ_<m>" (a file's or the DB's per-M entry), or "small", "medium_M32", ... "any" */
  const char *variant;
  const char *params;  /* canonical JSON object of the parameters */
  const char *kernel;  /* the instantiated kernel, e.g. gemm_a8w8_blockscale_mma<64, 128, ...> */
} at_selection;

/* The configuration for a problem. device: "sm90" or a product name like NVIDIA_H200 (its own files
 * first, then its arch's, as on that GPU); NULL means the device of the calling thread's current
 * CUDA context. The strings stay valid until at_runtime_close. Needs no GPU when a device is named. */
AT_API int at_runtime_select(at_runtime *rt, const char *op, int64_t m, int64_t n, int64_t k, const char *device,
                             at_selection *out);

/* Makes ready, on the current CUDA context, every kernel that calls of `op` on (N, K) with M from 1
 * to m_max (at most 2^20) would launch, tails included: the lookup done, each kernel compiled with
 * NVRTC (in threads, one per online CPU) or taken from the compile cache, and loaded. Calls at
 * those M then never wait for a compile: what a server does at start-up, before its first request
 * or graph capture. *kernels (may be NULL): the kernels now ready for them. AT_STATUS_ERROR when a
 * config's kernel cannot be made (the message names it; its calls fail the same way), after the
 * others are; a tail that cannot be made is left out (its calls run their config alone). */
AT_API int at_runtime_prepare(at_runtime *rt, const char *op, int64_t n, int64_t k, int64_t m_max, int *kernels);

/* C = (A * As)(B * Bs)^T on the current CUDA context, on `stream` (a CUstream or cudaStream_t; NULL
 * for the default stream). A: M x K e4m3 row-major; As: M x K/128 fp32 row-major; B: N x K e4m3
 * row-major; Bs: ceil(N/128) x K/128 fp32 row-major; C: M x N bf16 row-major. M >= 1, N a multiple
 * of 8, K a multiple of 128; A, B, C 16-byte aligned, the scales 4-byte aligned. */
AT_API int at_gemm_a8w8_blockscale(at_runtime *rt, const void *a, const float *a_scale, const void *b,
                                   const float *b_scale, void *c, int64_t m, int64_t n, int64_t k, void *stream);

#ifdef __cplusplus
}
#endif

#endif

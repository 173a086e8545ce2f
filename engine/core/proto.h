/* proto.h: the pipe protocol between the tuner (parent) and a worker process.
 *
 * Frames: {uint32 type, uint32 length} then length bytes. Both ends are the same binary, so
 * payloads are plain structs followed by variable-length parts. The parent writes requests to
 * the worker's fd 3 and reads replies from its fd 4; every request gets exactly one reply. A
 * worker that dies, or does not reply within the request's budget, is the parent's to kill and
 * replace: that is how a faulting or hanging kernel costs one candidate, not the run.
 *
 * What a worker keeps between requests (so that a cubin crosses the pipe once per worker, and a
 * shape's inputs are made once per worker):
 *  - shapes: SHAPE makes a shape current. The worker keeps the inputs and reference of several
 *    shapes, keyed by the whole at_shape_req; asking again for a kept shape only makes it current
 *    (the reply is the first one again, with `cached` set). It evicts the least recently used when
 *    its bound or the GPU's memory says so; the parent never needs to know which are kept.
 *  - modules: a table of AT_MODULE_SLOTS loaded cubins whose slots the parent assigns, one per
 *    kernel: candidates that share a kernel (they differ only in launch parameters) share its slot.
 *    An EVAL or RETIME entry names its slot and the kernel's compile key; with `load` set, the
 *    cubin follows and replaces whatever the slot held. The parent mirrors the table (it chose
 *    every slot) and forgets it when the worker is replaced; the worker checks the key and refuses
 *    a request for a slot that holds another kernel (a parent bug, not a candidate's fault). The
 *    candidate's family and parameters come with every entry: a launch uses the request's own. */
#ifndef AT_PROTO_H
#define AT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

enum {
  AT_MSG_HELLO = 1,  /* worker -> parent, once at start: at_device_info, or AT_MSG_ERROR */
  AT_MSG_ERROR,      /* worker -> parent: a message (NUL-terminated) */
  AT_MSG_PEAK,       /* measure peak bandwidth and FP8 rate -> AT_MSG_PEAK_REPLY */
  AT_MSG_PEAK_REPLY, /* at_peak_reply */
  AT_MSG_SHAPE,      /* at_shape_req: make inputs and reference -> AT_MSG_SHAPE_REPLY */
  AT_MSG_SHAPE_REPLY,
  AT_MSG_EVAL,       /* at_eval_req (+ the cubin when req.load): check and time one candidate on the
                        current shape -> AT_MSG_EVAL_REPLY */
  AT_MSG_EVAL_REPLY, /* at_eval_reply */
  AT_MSG_RETIME,       /* uint32 count, then count x {at_eval_req, uint64 cubin size (0 unless
                          load), cubin}: the leaders of the current shape */
  AT_MSG_RETIME_REPLY, /* uint32 count, count x at_eval_reply, double vendor_us: the leaders (and the
                        * vendor's kernel, 0 when not timed) timed side by side */
  AT_MSG_QUIT,
  AT_MSG_COMPARE,       /* at_compare_req: one shape through each provider -> STEP frames, COMPARE_REPLY */
  AT_MSG_COMPARE_STEP,  /* at_compare_step: what the compare worker starts now, so a death has a place */
  AT_MSG_COMPARE_REPLY, /* at_compare_reply */
};

/* Reads and writes whole frames. recv waits at most timeout_s (< 0: forever); returns AT_OK,
 * AT_PROTO_TIMEOUT or AT_PROTO_EOF (the peer is gone), or AT_ERR_RUNTIME. */
enum { AT_PROTO_TIMEOUT = 100, AT_PROTO_EOF = 101 };
int at_msg_send(int fd, uint32_t type, const void *payload, size_t len);
int at_msg_send2(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
int at_msg_recv(int fd, double timeout_s, uint32_t *type, void **payload, size_t *len);

typedef struct at_peak_reply {
  double copy_gbs;     /* device-to-device copy, bytes read + written per second / 1e9 */
  double fp8_tflops;   /* dense FP8 GEMM through cuBLASLt, large size */
  char note[256];      /* how they were measured, or why one is missing */
} at_peak_reply;

typedef struct at_shape_req {
  char op[64];
  int64_t m, n, k;
  uint64_t seed;
  double l2_multiple; /* rotate input sets until a sample reads this many L2s of distinct data */
  int warmup, samples;
  int baselines;      /* also time the vendor baselines */
  double atol, rtol, gamma; /* the check's bound (gpu/check.h), for the vendor baseline's check */
} at_shape_req;

typedef struct at_shape_reply {
  int ok;
  int sets;             /* input sets rotated through */
  double set_bytes;     /* distinct bytes per set */
  double ref_us;        /* the cuBLAS FP32 reference GEMM (dequantized inputs), median */
  double vendor_us;     /* the vendor's own kernel for this op (cuBLASLt block-scaled FP8), 0 if none */
  char vendor_name[64];
  double vendor_check_ratio; /* the vendor output's worst error / bound; -1 when not checked */
  int sticky; /* the GPU faulted during setup: the worker exits after replying */
  int cached; /* the worker kept this shape from an earlier SHAPE: nothing was measured now */
  char message[512];
} at_shape_reply;

/* Modules a worker keeps loaded at once. Re-timing needs retime_top (at most 100) of them at the
 * same time, and the batches of candidates the parent walks across shapes fit beside them. */
enum { AT_MAX_PARAMS = 32, AT_MODULE_SLOTS = 256 };

typedef struct at_eval_req {
  int64_t candidate_id;
  int32_t slot;   /* the worker's module slot for this candidate's kernel, 0 .. AT_MODULE_SLOTS - 1 */
  int32_t load;   /* 1: the cubin follows; load it into the slot first (what the slot held goes) */
  char key[65];   /* the kernel's compile key: its content identity, checked against the slot */
  char lowered_name[512]; /* what a load needs: the kernel's name in the cubin */
  /* the candidate: how each launch of this request is made (geometry, workspace, kernel arguments) */
  char family[32];
  int nparams;
  char param_names[AT_MAX_PARAMS][32];
  int64_t param_values[AT_MAX_PARAMS];
  double atol, rtol, gamma; /* the check's bound (gpu/check.h) */
  int warmup, samples, cut_after;
  double cut_us; /* stop sampling when the median so far is above this (0: never) */
  int check_only;
  /* the cubin follows when load is set */
} at_eval_req;

typedef struct at_eval_reply {
  int64_t candidate_id;
  char status[16]; /* ok wrong fault timeout resources */
  int sticky;      /* the worker's context is dead; it exits after this reply */
  double time_us, time_min_us, time_max_us;
  int samples, cut;
  int occupancy; /* blocks per SM */
  double max_abs_err;
  double check_ratio; /* worst |out - ref| / bound over both checks; -1 when not checked */
  int64_t bad_count, first_bad;
  char message[512];
} at_eval_reply;

/* ---- autotune compare (cli/cmd_compare.c, gpu/compare.c) ----------------------------------------
 * The compare worker (`autotune worker --gpu N --compare`) answers PEAK like a tuning worker, and
 * COMPARE: per shape, inputs and reference as for tuning, then each provider checked (poisoned,
 * twice) and the passing ones timed round-robin on the same input sets. Before each step it sends a
 * STEP frame; the reply ends the request. The providers it runs: the runtime library with the tuned
 * configs (autotune) and with none (default: the op's built-in config), cuBLASLt's block-scaled FP8
 * GEMM (cublaslt) and the cuBLAS FP32 reference (cublas). */
enum { AT_CMP_AUTOTUNE, AT_CMP_CUBLASLT, AT_CMP_DEFAULT, AT_CMP_CUBLAS, AT_CMP_NPROVIDERS };

typedef struct at_compare_req {
  at_shape_req shape;          /* op, M N K, seed, l2_multiple, warmup, samples, the check's bound */
  int use[AT_CMP_NPROVIDERS];  /* the providers to run */
  char db_path[4096];          /* the runtime library's DB, "" for none */
  char configs_dir[4096];      /* its exported configs, "" for none */
  char tag[64];                /* its tag filter, "" for any */
  /* `autotune judge`: configs directories judge_dir/0 .. judge_dir/<judged - 1>, each the runtime's
   * only source of one more provider (a candidate's config as the runtime launches it, tail
   * included), checked and timed side by side with the others; 0 for none. */
  int judged;
  char judge_dir[4096];
} at_compare_req;

/* The most candidates one COMPARE request judges. */
#define AT_CMP_MAX_JUDGED 8

typedef struct at_compare_step {
  int provider;  /* AT_CMP_*, or -1 for the shape's inputs and reference */
  char what[32]; /* setup, select, prepare, check, capture, timing */
} at_compare_step;

typedef struct at_compare_result {
  char status[16]; /* ok (checked, timed), wrong (failed the check), none (no answer for the shape),
                      error (a failure that left the GPU usable), fault (the context died) */
  char message[512];
  double check_ratio, max_abs_err; /* -1 when not checked (always, for cublas: it is the reference) */
  int64_t bad_count, first_bad;
  double time_us, time_min_us, time_max_us;
  int samples;
  char kernel[512]; /* what ran: the runtime's kernel, or the library's entry; "" when nothing did */
  /* autotune and default: what at_runtime_select answered (source "" when it had no answer) */
  char source[16], bucket[16], variant[64];
  char path[1024], params[1024];
} at_compare_result;

/* The SM clock while a shape's providers were timed in turn (core/board.h): read once per turn. */
typedef struct at_compare_clock {
  int reads;                        /* 0: not read (note says why, when it was tried) */
  int median_mhz, min_mhz, max_mhz;
  double read_us;                   /* what a read cost the host, on average */
  char note[96];
} at_compare_clock;

typedef struct at_compare_reply {
  int ok;       /* the inputs and reference were made; else message says why */
  int sticky;   /* the GPU context died: the worker exits after this reply */
  int sets;     /* input sets rotated through */
  char message[512];
  at_compare_clock clock;   /* the SM clock over the timing of the providers in turn */
  at_compare_result r[AT_CMP_NPROVIDERS];
  at_compare_result judged[AT_CMP_MAX_JUDGED]; /* the request's judged configs, in its order */
} at_compare_reply;

/* Providers are numbered AT_CMP_* and, from AT_CMP_NPROVIDERS up, the request's judged configs (the
 * worker's STEP frames say them so): provider p's result, and whether the request asks for it. */
enum { AT_CMP_ALL_PROVIDERS = AT_CMP_NPROVIDERS + AT_CMP_MAX_JUDGED };
static inline at_compare_result *at_cmp_result_of(at_compare_reply *rep, int p) {
  return p >= AT_CMP_NPROVIDERS ? &rep->judged[p - AT_CMP_NPROVIDERS] : &rep->r[p];
}
static inline int at_cmp_wanted(const at_compare_req *q, int p) {
  return p >= AT_CMP_NPROVIDERS ? p - AT_CMP_NPROVIDERS < q->judged : q->use[p];
}

#endif

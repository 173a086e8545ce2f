/* op.h: what the engine needs to know about an operator, on the CPU side: the operator interface
 * of the core (the layers: core <- gpu <- ops; an op in engine/ops/ implements this interface and
 * the GPU half in engine/gpu/gpu_op.h; neither core nor gpu includes anything from engine/ops).
 *
 * An operator is one file in engine/ops/ (plus its GPU half, see gpu/gpu_op.h): the problem shape and
 * its rules, the launch geometry of each template family it supports, the values it derives from
 * a candidate's parameters for constraints (threads, shared memory), its FLOP and byte counts, and
 * optionally how its runtime launch plan changes a config's time (for the time model).
 * Nothing here touches CUDA: the parent process uses it to prune, and the worker to launch. */
#ifndef AT_OP_H
#define AT_OP_H

#include <stddef.h>
#include <stdint.h>

/* One candidate's parameters: values[i] is the value of names[i]. */
typedef struct at_params {
  const char *const *names;
  const int64_t *values;
  size_t n;
} at_params;

/* The value of a parameter, or dflt when the candidate does not have it. */
int64_t at_params_get(const at_params *p, const char *name, int64_t dflt);

typedef struct at_shape {
  int64_t m, n, k;
} at_shape;

typedef struct at_launch {
  unsigned grid[3];
  unsigned block[3];
  unsigned cluster;        /* thread blocks per cluster along x; 1: no cluster */
  unsigned smem_bytes;     /* dynamic shared memory per block */
  unsigned griddep;        /* the kernel waits for the stream's preceding kernel itself (griddepcontrol.wait
                            * before it touches memory): it may be launched with programmatic dependent
                            * launch (at_launch_kernel's pdl) */
  unsigned persistent;     /* the kernel walks its work strided by gridDim: fewer clusters than grid[0] /
                            * cluster compute the same result, so at_launch_kernel launches at most as
                            * many as the GPU holds at once (the rest would run as a second wave) */
  int64_t ws_counters;     /* split-K arrival counters the launch needs; 0: no workspace */
  size_t ws_partial_bytes; /* split-K partial tiles, after the counters */
} at_launch;

/* Bytes of a split-K workspace in one buffer: `counters` zeroed counters, then, 256-byte aligned,
 * the partial tiles (how the worker and the runtime's per-stream workspaces lay them out). */
static inline size_t at_ws_bytes(int64_t counters, size_t partial_bytes) {
  return (size_t)(((counters * 4 + 255) / 256) * 256) + partial_bytes;
}

/* The configuration used when nothing was tuned for a shape: safe everywhere the op runs. */
typedef struct at_builtin_config {
  const char *variant, *family, *template_name, *entry, *params_json;
} at_builtin_config;

/* at_op.plan_factor's mode: the config's own plan, every kind (AT_PLAN_CONFIG); a last wave moved
 * to a tail launch only, any other plan counting as none (AT_PLAN_LAST_WAVE); or as the runtime
 * plans a config not tuned for the (N, K), which may give the whole call to another config
 * (AT_PLAN_UNTUNED). */
enum { AT_PLAN_CONFIG = 0, AT_PLAN_LAST_WAVE = 1, AT_PLAN_UNTUNED = 2 };

typedef struct at_op {
  const char *name;
  at_builtin_config builtin;
  const char *const *families; /* template families the op knows, NULL-terminated */
  const char *const *derived;  /* names derive() fills, NULL-terminated; usable in constraints */
  /* Parameters the op can pass to a kernel at run time (in its argument struct), NULL-terminated.
   * A variant's entry may leave these out: the kernel is then compiled without them and each launch
   * hands it the candidate's value (a launch parameter), so candidates that differ only in them
   * share one compiled kernel. Any other parameter must appear in the entry. */
  const char *const *launch_params;
  /* Checks that a variant of this family has every parameter it needs, and fills derived[] (one
   * value per name in ->derived) for one candidate. Fails with AT_ERR_INPUT naming the parameter. */
  int (*derive)(const char *family, const at_params *p, int64_t *derived);
  /* Checks one value of a parameter of a family (range, kind); AT_ERR_INPUT with the reason.
   * Parameters the family does not know are accepted (they may reach the kernel only). */
  int (*check_param)(const char *family, const char *name, int64_t value);
  /* NULL when the family can run on the compile target `arch` (e.g. "sm_90a"), else the reason
   * (the family's variants are then skipped with it). */
  const char *(*family_unsupported)(const char *family, const char *arch);
  /* Checks a problem shape against the op's documented rules; AT_ERR_INPUT with the reason and
   * *dim = 0, 1 or 2 for the dimension (M, N, K) at fault. */
  int (*check_shape)(const at_shape *s, int *dim);
  /* The launch of a candidate on a shape, on a GPU with sm_count multiprocessors (persistent
   * kernels size their grid by it). */
  int (*launch)(const char *family, const at_params *p, const at_shape *s, int sm_count, at_launch *out);
  double (*flops)(const at_shape *s);
  double (*min_bytes)(const at_shape *s); /* each input read once, each output written once */
  /* How the runtime's launch plan changes the time of a config that the tuner measured alone on a
   * shape (the op's tail, say): a factor, 1 where it changes nothing. `mode` (AT_PLAN_*): which plans
   * count. NULL: the runtime launches configs as they were measured. The time model composes it
   * into its predictions (timemodel.h). */
  double (*plan_factor)(const char *family, const at_params *p, const at_shape *s, int sm_count, int mode);
  /* A parameter whose nonzero value the shape sets rather than the tuner (the sm90 family's
   * SCALE_KB, which spaces constrain to K / 128); NULL: none. Configs that differ only in its
   * nonzero value are one config to the time model, and a config measured on one (N, K) is given
   * its value for another before it is launched there (at_config_for_shape). */
  const char *shape_param;
  /* Its value for a config with it nonzero, on shape s: 0 where the config cannot hold it there
   * (it then runs the form without it: the same config but for that parameter, which a menu
   * measured only if some file names it). */
  int64_t (*shape_value)(const char *family, const at_params *p, const at_shape *s);
} at_op;

const at_op *at_op_find(const char *name);
/* "a, b, c": the names of all known ops, for messages. */
const char *at_op_names(void);
size_t at_op_count_derived(const at_op *op);
/* Can op pass the parameter `name` to a kernel at launch (op->launch_params)? */
int at_op_launch_param(const at_op *op, const char *name);
/* "A, B": op's launch parameters, for messages, written into buf ("none" when it has none). */
const char *at_op_launch_param_names(const at_op *op, char *buf, size_t n);

#endif

/* registry.c: the table of operators, CPU halves (the runtime library needs these alone; the GPU
 * halves are in gpu_registry.c, linked into the tuner). A new operator adds a line to each. */
#include <stdio.h>
#include <string.h>

#include "../core/op.h"

extern const at_op at_op_gemm_a8w8_blockscale;

static const at_op *const OPS[] = {&at_op_gemm_a8w8_blockscale};

const at_op *at_op_find(const char *name) {
  for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
    if (strcmp(OPS[i]->name, name) == 0) return OPS[i];
  return NULL;
}

const char *at_op_names(void) { return "gemm_a8w8_blockscale"; }

size_t at_op_count_derived(const at_op *op) {
  size_t n = 0;
  while (op->derived && op->derived[n]) n++;
  return n;
}

int at_op_launch_param(const at_op *op, const char *name) {
  for (const char *const *l = op->launch_params; l && *l; l++)
    if (strcmp(*l, name) == 0) return 1;
  return 0;
}

const char *at_op_launch_param_names(const at_op *op, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (const char *const *l = op->launch_params; l && *l && used < n; l++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", l == op->launch_params ? "" : ", ", *l);
  return buf[0] ? buf : "none";
}

int64_t at_params_get(const at_params *p, const char *name, int64_t dflt) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->names[i], name) == 0) return p->values[i];
  return dflt;
}

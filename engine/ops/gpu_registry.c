/* gpu_registry.c: the table of operators, GPU halves (input sets, reference, baselines): the
 * worker's, never the runtime library's. A new operator adds a line here and in registry.c. */
#include <string.h>

#include "../gpu/gpu_op.h"

extern const at_gpu_op at_gpu_op_gemm_a8w8_blockscale;

static const at_gpu_op *const GPU_OPS[] = {&at_gpu_op_gemm_a8w8_blockscale};

const at_gpu_op *at_gpu_op_find(const char *name) {
  for (size_t i = 0; i < sizeof GPU_OPS / sizeof GPU_OPS[0]; i++)
    if (strcmp(GPU_OPS[i]->name, name) == 0) return GPU_OPS[i];
  return NULL;
}

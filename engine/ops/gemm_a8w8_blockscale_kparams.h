/* gemm_a8w8_blockscale_kparams.h: the launch protocol of each template family of the a8w8
 * blockscale GEMM: what a kernel of the family takes as parameters. Shared by the worker (which
 * checks and times candidates) and the runtime library (which launches the tuned ones), so that a
 * kernel is launched the same way in both.
 *
 *   mma    (args)
 *   sm90   (args, tensor maps of A: whole and end boxes, of B: whole and end boxes): TMA descriptors
 *          with 128-byte swizzle, boxes of 128 bytes of K by a CTA's share of the tile's rows
 *          (BLOCK_M / CLUSTER_N of A, BLOCK_N / CLUSTER_M of B), and by the rows left at the end
 *          of A and B (M and N modulo the share), so that no load reaches past the end; and a
 *          map of C (args' c, m rows, n columns, row stride ldc or n) in 64 x 64 boxes for the
 *          epilogue's tensor stores (STORE 3; zeros for the other kernels, which never read it:
 *          no encode per new output pointer); made with
 *          the driver's cuTensorMapEncodeTiled and passed by value (__grid_constant__), so that a
 *          CUDA graph that captured the launch keeps its own copy. */
#ifndef AT_OPS_GEMM_A8W8_BLOCKSCALE_KPARAMS_H
#define AT_OPS_GEMM_A8W8_BLOCKSCALE_KPARAMS_H

#include "../../templates/gemm_a8w8_blockscale_args.h"
#include "../gpu/launch.h"
#include "../core/op.h"

/* What a family needs per launch, worked out once per kernel from its parameters. */
typedef struct at_a8w8_plan {
  int tma;              /* 1: the sm90 protocol */
  int c_map;            /* 1: the kernel stores C by TMA (STORE 3): its fifth map is made, else zeroed */
  int box_m, box_n;     /* TMA box rows of A and B: a CTA's share of the tile */
  int group_m, split_k; /* the candidate's GROUP_M and SPLIT_K, for args (its launch parameters) */
} at_a8w8_plan;

int at_a8w8_plan_of(const char *family, const at_params *p, at_a8w8_plan *out);

/* The parameters of one launch: args as given, with group_m and split_k from the plan. Tensor maps are cached per thread by (pointer, rows, K, box). */
int at_a8w8_kparams(const at_a8w8_plan *plan, const at_gemm_a8w8_blockscale_args *args, at_kparams *out);

#endif

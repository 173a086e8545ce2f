#!/usr/bin/env python3
"""timeline_template.py SRC_DIR DST_DIR: copies the templates and instruments the sm90 kernel with
%globaltimer stamps of where one call's time goes (bench/decode_timeline.c reads them back).

The shipped template stays as it is (its content is its identity: an edit would change every
kernel the tuner knows); this writes an instrumented copy to run through AUTOTUNE_TEMPLATES.
Each CTA stamps, relative to its entry: the end of the setup (barriers, cluster sync), the return
of griddepcontrol.wait, the first stage full (seen by an idle producer thread), the producer's last
TMA issue, the end of the math loop, the end of the CLUSTER_K exchange, and the end of its
epilogue's stores; then math thread 0 writes the stamps over the first 64 bytes of its last
tile's first row of C (the first 32 columns it stores, so BLOCK_N / CLUSTER_K >= 32): the call's
output is then wrong there, which is the point of a separate copy. Layout (16 u32): entry ns (u64),
7 deltas in ns, smid, blockIdx.x, magic 0xA7A7A7A7.
"""
import os
import shutil
import sys

NAME = "gemm_a8w8_blockscale_sm90.cuh"

# (anchor, text inserted after the anchor's line); each anchor must occur exactly once.
EDITS = [
    ("  const int tid = threadIdx.x;\n",
     "  __shared__ unsigned long long at_tl[8];\n"
     "  auto at_now = [] { unsigned long long t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); return t; };\n"
     "  if (tid == 0) {\n"
     "    for (int i = 1; i < 8; i++) at_tl[i] = 0;\n"
     "    at_tl[0] = at_now();\n"
     "  }\n"),
    ("  at_griddep_launch_dependents();\n",
     "  if (tid == 0) at_tl[2] = at_now();\n"),
    ("      for (int i = 0; i < (CLUSTER_MN > 1 ? STAGES : 0); i++, it++)\n"
     "        at_mbar_wait(empty0 + (it % STAGES) * 8, ((at_u32)(it / STAGES) & 1u) ^ 1u);\n",
     "      at_tl[4] = at_now();\n"),
    ("    if (offload && tid >= 32) {\n", None),  # checked only: the observer below needs STORE 0
    ("  const int first_unit = blockIdx.x / CLUSTER, unit_step = gridDim.x / CLUSTER;\n", None),
]
# Inserted before the anchor's line.
BEFORE = [
    ("  // Programmatic dependent launch (docs/runtime.md): launched with it",
     "  if (tid == 0) at_tl[1] = at_now();\n"),
    ("    if (offload && tid >= 32) {\n",
     "    if (tid == 32 && !offload && first_unit < units) {  // an idle producer thread: the first stage's arrival\n"
     "      at_mbar_wait(full0, 0);\n"
     "      at_tl[3] = at_now();\n"
     "    }\n"),
    ("    if constexpr (CLUSTER_K == 2) {\n      // The two halves of the k-blocks meet",
     "    at_tl[5] = at_now();\n"),
    ("    if (split_k > 1) {\n      // Publish this split's partial",
     "    at_tl[6] = at_now();\n"),
]
# Appended after the epilogue of a unit (before the CLUSTER_K free of the staging area).
TAIL_ANCHOR = ("    if constexpr (CLUSTER_K == 2) {\n"
               "      // The epilogue is done with the staging area")
TAIL = (
    "    at_named_barrier(1 + w, 128);\n"
    "    if (t == 0 && w == 0) {\n"
    "      const unsigned long long t7 = at_now();\n"
    "      unsigned *o = (unsigned *)(C + (long)p.m0 * ldc + p.n0 + (CLUSTER_K == 2 ? kr * (BLOCK_N / 2) : 0));\n"
    "      o[0] = (unsigned)at_tl[0], o[1] = (unsigned)(at_tl[0] >> 32);\n"
    "      for (int i = 1; i < 7; i++) o[1 + i] = at_tl[i] ? (unsigned)(at_tl[i] - at_tl[0]) : 0xFFFFFFFFu;\n"
    "      o[8] = (unsigned)(t7 - at_tl[0]);\n"
    "      unsigned smid; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid));\n"
    "      o[9] = smid, o[10] = blockIdx.x, o[11] = 0xA7A7A7A7u;\n"
    "      for (int i = 12; i < 16; i++) o[i] = 0;\n"
    "    }\n")


def instrument(text):
    for anchor, add in EDITS:
        if text.count(anchor) != 1:
            sys.exit(f"timeline_template.py: anchor found {text.count(anchor)} times: {anchor!r}")
        if add:
            text = text.replace(anchor, anchor + add)
    for anchor, add in BEFORE:
        if text.count(anchor) != 1:
            sys.exit(f"timeline_template.py: anchor found {text.count(anchor)} times: {anchor!r}")
        text = text.replace(anchor, add + anchor)
    if text.count(TAIL_ANCHOR) != 1:
        sys.exit("timeline_template.py: epilogue anchor not found once")
    return text.replace(TAIL_ANCHOR, TAIL + TAIL_ANCHOR)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: timeline_template.py SRC_DIR DST_DIR")
    src, dst = sys.argv[1:]
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    path = os.path.join(dst, NAME)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(instrument(text))


if __name__ == "__main__":
    main()

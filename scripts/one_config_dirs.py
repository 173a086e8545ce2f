#!/usr/bin/env python3
"""one_config_dirs.py OUTDIR YAML... -- NAME=PARAMS...: for each NAME, a configs directory OUTDIR/NAME
whose files answer every (N, K) named in the YAML files (shape files or spaces: any `N: n, K: k`)
with one sm90 config at every M. PARAMS is a JSON object of the config's parameters; those left
out take GROUP_M 8, SPLIT_K 1, UNSPLIT 1, PINGPONG 0, CLUSTER_M/N/K 1, KPIPE 1, RESCALE 0, STORE 0;
with SWAP_AB 1 the config is the sm90_swap variant's; SCALE_KB, when given, is the entry's 14th argument.

What for: `autotune compare --configs OUTDIR/NAME` then times that one config on every shape through
the runtime's own launch path (its tail included), next to cuBLASLt, in the same way as the
committed answers; a few such runs give a matrix of configs x shapes in which to see where a
config would beat what the files and the time model answer (docs/perf.md, "One config for every
prefill shape"). The files are for experiments: hand-written, without per-M entries; they name
the H100 as their device_name, which the lookup does not read (it goes by the file name's sm90).
Only flow-style shape lines (`- {N: 4096, K: 4096, ...}`) are read."""
import json
import os
import re
import sys

ENTRY = ("gemm_a8w8_blockscale_sm90<BLOCK_M, BLOCK_N, STAGES, 0, UNSPLIT, PINGPONG, CLUSTER_M, CLUSTER_N, KPIPE, "
         "RESCALE, STORE, CLUSTER_K>")
DEFAULTS = dict(GROUP_M=8, SPLIT_K=1, UNSPLIT=1, PINGPONG=0, CLUSTER_M=1, CLUSTER_N=1, CLUSTER_K=1, KPIPE=1,
                RESCALE=0, STORE=0)
BUCKETS = ["small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge", "any"]


def main(argv):
    if "--" not in argv or len(argv) < 5:
        sys.exit(__doc__.split("\n\n")[0])
    cut = argv.index("--")
    out, yamls, specs = argv[1], argv[2:cut], argv[cut + 1:]
    nk = set()
    for path in yamls:
        with open(path) as f:
            for line in f:
                m = re.search(r"N: (\d+), K: (\d+)", line)
                if m and not line.lstrip().startswith("#"):
                    nk.add((int(m.group(1)), int(m.group(2))))
    for spec in specs:
        name, _, js = spec.partition("=")
        try:
            given = json.loads(js)
        except ValueError as e:
            sys.exit(f"one_config_dirs.py: {name}: PARAMS is not JSON: {e}")
        if not name or not isinstance(given, dict):
            sys.exit(f"one_config_dirs.py: {spec!r}: expected NAME={{...parameters...}}")
        params = dict(DEFAULTS)
        params.update(given)
        for key in ("BLOCK_M", "BLOCK_N", "STAGES"):
            if key not in params:
                sys.exit(f"one_config_dirs.py: {name}: {key} is missing")
        swap = params.get("SWAP_AB", 0) == 1  # the operands swapped: the sm90_swap variant's entry
        text = ENTRY[:-1] + (", SWAP_AB" if swap else ", 0" if "SCALE_KB" in params else "")
        text += (", SCALE_KB" if "SCALE_KB" in params else "") + ">"  # scales in shared memory: the 14th argument
        entry = dict(variant="sm90_swap" if swap else "sm90", family="sm90", template="gemm_a8w8_blockscale_sm90.cuh",
                     entry=text,
                     params=dict(sorted(params.items())), tuned_M=[], time_us=[])
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):  # a directory of an earlier run answers only what this one writes
            if old.endswith(".json"):
                os.remove(os.path.join(d, old))
        for n, k in sorted(nk):
            f = dict(format="autotune-configs/1", op="gemm_a8w8_blockscale", tag="A8W8_BLOCKSCALE", device="sm90",
                     device_name="NVIDIA H100 80GB HBM3", arch="sm_90a", N=n, K=k,
                     buckets={b: entry for b in BUCKETS})
            with open(os.path.join(d, f"sm90-GEMM-A8W8_BLOCKSCALE-N={n}-K={k}.json"), "w") as fh:
                json.dump(f, fh, indent=1)
        print(f"{d}: {len(nk)} (N, K)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""menu_space.py CONFIGS_DIR [EXTRA.json] > menu.yaml: a search space of exactly the sm90 configs that
the exported files in CONFIGS_DIR name (every bucket and per-M entry of every file), one variant per
tile shape, without the shipped space's per-shape pruning: tuned on a shape list, it measures every
config the runtime could pick from those files on every shape, which is what a rule for shapes
nobody tuned is judged against (scripts/pick_eval.py), and what the time model picks from.

A config that holds its unit's scales in shared memory (SCALE_KB, the op's shape parameter) is
measured with SCALE_KB = K / 128 on every shape whose scales its slots can hold (a variant of its
own, menu_<BM>x<BN>_scales): its files name it with their own K's value, and the time model fits
the candidates of every K as one config (engine/core/timemodel_fit.h).

EXTRA.json (search_spaces/menu_extra.json): configs to add that no file names, each
{"why": "...", "params": {...}} with every sm90 parameter: configs measured to win shapes that no
tuned (N, K) has, which the model could not otherwise pick (docs/perf.md, "Split K at M = 256"), or
that the files stopped naming while the model still picks them. SWAP_AB 1 puts one in a swapped
variant; SCALE_KB is refused (it follows K: the menu adds each such config's plain form itself)."""
import collections
import glob
import json
import os
import sys

SHIPPED = ["  - {N: %d, K: %d, M: [16, 32, 64, 128, 256, 512, 2048, 4096]}" % nk
           for nk in [(1024, 1024), (4096, 1024), (1024, 2048), (6144, 1024), (1024, 3072)]]
KEYS = ["STAGES", "GROUP_M", "SPLIT_K", "UNSPLIT", "PINGPONG", "CLUSTER_M", "CLUSTER_N", "KPIPE", "RESCALE", "STORE",
        "CLUSTER_K"]
SCALE_KB = list(range(4, 129, 4))  # K / 128 where the kernel's slots can take it: multiples of 4 up to 128
# The op's values for an optional parameter a file leaves out (engine/ops/gemm_a8w8_blockscale.c,
# SM90_OPTIONAL); the others are required.
ABSENT = {"CLUSTER_M": 1, "CLUSTER_N": 1, "KPIPE": 1, "RESCALE": 0, "STORE": 0, "CLUSTER_K": 1, "SWAP_AB": 0,
          "SCALE_KB": 0}


def keys(entry, scales):
    """The parameters a group's configs are told apart by: KEYS, and SWAP_AB and SCALE_KB where the
    entry has them (but SCALE_KB where it is on: it follows the shape then)."""
    return KEYS + [k for k in ["SWAP_AB", "SCALE_KB"] if k in entry and not (k == "SCALE_KB" and scales)]


def value(p, k):
    return p[k] if k in p else ABSENT[k]


def main():
    d = sys.argv[1]
    groups = collections.defaultdict(set)  # (BLOCK_M, BLOCK_N, scales in shared memory, entry, template) -> configs
    plain = None  # (entry, template) of a config with neither SWAP_AB nor SCALE_KB in its entry, for the extras
    swap = None  # (entry, template) of one with SWAP_AB and without SCALE_KB, for the extras that swap
    extra = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else []
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        if f.endswith("-model.json"):  # the time model fitted from a menu run, not a menu
            continue
        j = json.load(open(f))
        for e in list(j["buckets"].values()) + list(j.get("per_M", {}).values()):
            if e["family"] != "sm90":
                continue
            p, entry = e["params"], e["entry"]
            scales = int(value(p, "SCALE_KB") != 0)
            if plain is None and "SWAP_AB" not in entry and "SCALE_KB" not in entry:
                plain = (entry, e["template"])
            if swap is None and "SWAP_AB" in entry and "SCALE_KB" not in entry:
                swap = (entry, e["template"])
            groups[(p["BLOCK_M"], p["BLOCK_N"], scales, entry, e["template"])].add(
                tuple(value(p, k) for k in keys(entry, scales)))
    # Each config with its scales in shared memory also in its plain form (the sm90 entry without
    # SCALE_KB): its slots hold K / 128 only where that is a multiple of 4 up to 128, and elsewhere
    # the model would have neither form to pick (128 x 112 in pairs along N, the H200's tuned winner
    # at 128 x 28672 x 4096, was missing at K = 5376: docs/perf.md, "Weights nobody had measured,
    # again (session 46)").
    if plain:
        for (bm, bn, scales, entry, template), cfgs in list(groups.items()):
            if scales:
                # Told apart by the same KEYS (the SCALE_KB entry fixes SWAP_AB at 0), so the plain
                # entry's tuples have the same length: checked, a longer one would be cut silently.
                assert all(len(c) == len(KEYS) for c in cfgs), "a SCALE_KB config with more than KEYS"
                groups[(bm, bn, 0) + plain].update(cfgs)
    for x in extra:
        p = x["params"]
        missing = [k for k in ["BLOCK_M", "BLOCK_N"] + KEYS if k not in p]
        # An extra takes the plain sm90 entry, or with SWAP_AB 1 the swapped one; never SCALE_KB (it
        # follows the shape, and the menu adds each such config's plain form itself).
        # No file naming a swapped config: the plain entry with SWAP_AB after CLUSTER_K, the
        # template's order (its entries in the spaces are written the same way).
        if value(p, "SWAP_AB") and not swap and plain and plain[0].endswith(", CLUSTER_K>"):
            swap = (plain[0][:-1] + ", SWAP_AB>", plain[1])
        base = swap if value(p, "SWAP_AB") else plain
        if missing or not base or value(p, "SCALE_KB"):
            sys.exit("menu_space.py: %s: %s" % (sys.argv[2], "an extra config lacks " + ", ".join(missing) if missing
                                                else "an extra config cannot take SCALE_KB" if base
                                                else "no file names an sm90 config whose entry it could take"))
        ks = keys(base[0], 0)
        groups[(p["BLOCK_M"], p["BLOCK_N"], 0) + base].add(tuple(value(p, k) for k in ks))
    src = d + (" and " + sys.argv[2] if extra else "")
    out = ["# Generated by scripts/menu_space.py from %s: the sm90 configs its files name%s." % (src, " and the extra ones" if extra else ""),
           "op: gemm_a8w8_blockscale", "tag: A8W8_BLOCKSCALE", "",
           "check:", "  atol: 1e-2", "  rtol: 1e-2", "  gamma: 0.0009765625", "", "variants:"]
    total = 0
    names = collections.Counter()
    for (bm, bn, scales, entry, template), cfgs in sorted(groups.items()):
        total += len(cfgs)
        name = "menu_%dx%d%s" % (bm, bn, "_scales" if scales else "_swap" if "SWAP_AB" in entry else "")
        names[name] += 1
        if names[name] > 1:  # another entry of the same kind: a name of its own
            name += "_%d" % names[name]
        ks = keys(entry, scales)
        out += ["  - name: " + name, "    family: sm90",
                "    template: ../templates/%s" % template, '    entry: "%s"' % entry, "    params:",
                "      BLOCK_M: [%d]" % bm, "      BLOCK_N: [%d]" % bn]
        for i, k in enumerate(ks):
            out.append("      %s: [%s]" % (k, ", ".join(str(v) for v in sorted({c[i] for c in cfgs}))))
        if scales:
            out.append("      SCALE_KB: [%s]" % ", ".join(str(v) for v in SCALE_KB))
        terms = ["(" + " && ".join("%s == %d" % (k, c[i]) for i, k in enumerate(ks)) + ")" for c in sorted(cfgs)]
        out += ["    constraints:", '      menu: "%s"' % " || ".join(terms)]
        if scales:
            out.append('      scale_kb: "SCALE_KB == K / 128"')
    out += ["", "shapes:  # the shipped job's; --shapes for others"] + SHIPPED + ["",
            "timing:", "  warmup: 1", "  samples: 10", "  cut_after: 3", "  cut_factor: 1.25", "  retime_top: 5",
            "  retime_samples: 20", "  l2_multiple: 2", "  timeout_s: 10"]
    print("\n".join(out))
    print("menu: %d configs in %d variants" % (total, len(groups)), file=sys.stderr)


main()

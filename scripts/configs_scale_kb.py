#!/usr/bin/env python3
"""configs_scale_kb.py IN_DIR OUT_DIR [--min-stages S]: a copy of the config files in IN_DIR in which
every sm90 entry that can take its scales from shared memory (SCALE_KB: KPIPE 2, STORE 0, not
swapped, K / 128 a multiple of 4) does so, as the sm90_scales variant, with SCALE_KB = K / 128 and as many of its stages as
still fit in shared memory (entries that would keep fewer than S stages, default 5, or fewer
than they had minus one, are left as they are). The copies are written without the seed's flat
top-level members (optional in the format), so only `buckets` and `per_M` answer.

What for: `autotune compare --configs OUT_DIR` against `--configs IN_DIR` times the same answers
with and without SCALE_KB on every shape, through the runtime's own launch path, in one run
(docs/perf.md, "A unit's scales in shared memory"). Prints one line per entry changed.

configs_scale_kb.py --apply KEYS DIR: the same change, in place, to the entries that KEYS names
(lines `N K M_LEQ_<m>`, `#` comments), in the layout `autotune export` writes (the `export` unit
test reads every committed file and writes it back byte for byte): the per_M entry's `entry` and
`params` lines, a bucket's when it holds the same config and was tuned only at M so changed, and
their flat top-level copies. Their `tuned_M` and `time_us` stay: the tuner's, for the config
they came from."""
import argparse
import json
import math
import os
import sys

SMEM_MAX = 232448  # the H100's dynamic shared memory per block (227 KiB)


def scale_blocks(bn):
    """at_sm90::scale_blocks: the weight-scale blocks a tile of bn columns may touch."""
    if 128 % bn == 0:
        return 1
    if bn % 64 == 0 or 128 - math.gcd(bn, 128) + bn <= 256:
        return 2 if bn % 128 != 0 else 3
    return 3


def smem_bytes(p, scale_kb):
    """sm90_smem_bytes of engine/ops/gemm_a8w8_blockscale.c (one math warpgroup per 64 rows up to 128)."""
    bm, bn, stages, ck, store = p["BLOCK_M"], p["BLOCK_N"], p["STAGES"], p.get("CLUSTER_K", 1), p.get("STORE", 0)
    epi_n = bn // 2 if bn > 128 or ck == 2 else bn
    half = bn // 4
    xf = half if half <= 32 else half // 2 if half % 8 == 0 else half // 3 if half % 12 == 0 else 4
    x_bytes = 128 * xf * 4 if ck == 2 else 0
    pitch = epi_n * 2 + (32 if epi_n % 16 == 8 else 16)
    c_wg = max(64 * pitch, x_bytes)
    wg = 3 if bm == 192 else 2 if bm >= 128 else 1
    scales = 2 * scale_kb * (bm + scale_blocks(bn)) * 4 + 32 if scale_kb else 0
    return (stages * (bm + bn) * 128 + wg * c_wg * (2 if store == 2 else 1) + scales + 2 * stages * 8 +
            (16 * wg if ck == 2 else 0) + 16)


def convert(e, k, min_stages):
    p = e["params"]
    if (e["variant"] != "sm90" or p.get("KPIPE", 1) != 2 or p.get("STORE", 0) != 0 or p.get("SWAP_AB", 0)
            or (k // 128) % 4 or "SCALE_KB" in p):
        return None
    q = dict(p)
    q["SCALE_KB"] = k // 128
    while q["STAGES"] > 2 and smem_bytes(q, q["SCALE_KB"]) > SMEM_MAX:
        q["STAGES"] -= 1
    if q["STAGES"] < min_stages or q["STAGES"] < p["STAGES"] - 1:
        return None
    out = dict(e)
    out["variant"] = "sm90_scales"  # the variant of the spaces that offer SCALE_KB
    out["params"] = dict(sorted(q.items()))
    out["entry"] = e["entry"][:-1] + ", 0, SCALE_KB>"
    return out


def compact(params):
    return "{" + ",".join(f'"{k}":{v}' for k, v in sorted(params.items())) + "}"


def flat(variant, params):
    return "{" + ", ".join([f'"variant": "{variant}"'] + [f'"{k}": {v}' for k, v in sorted(params.items())]) + "}"


def apply(keys_path, folder):
    want = {}
    with open(keys_path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if line:
                want.setdefault((int(line[0]), int(line[1])), set()).add(line[2])
    for (n, k), keys in sorted(want.items()):
        path = os.path.join(folder, f"sm90-GEMM-A8W8_BLOCKSCALE-N={n}-K={k}.json")
        with open(path) as f:
            text = f.read()
        d = json.loads(text)
        lines = text.splitlines(keepends=True)
        changes = {}  # (group, key) -> (old entry, new entry)
        for key in sorted(keys):
            old = d["per_M"][key]
            new = convert(old, k, 5)
            if not new:
                sys.exit(f"configs_scale_kb.py: {path} {key} cannot take SCALE_KB")
            changes[("per_M", key)] = (old, new)
        changed_m = {int(key[len("M_LEQ_"):]): changes[("per_M", key)][0]["params"] for key in keys}
        for b, e in d["buckets"].items():
            ms = e.get("tuned_M", [])
            if ms and all(changed_m.get(m) == e["params"] for m in ms):
                changes[("buckets", b)] = (e, convert(e, k, 5))
        for (group, key), (old, new) in changes.items():
            start = lines.index(f'  "{group}": {{\n')
            i = next(j for j in range(start + 1, len(lines)) if lines[j].startswith(f'    "{key}": {{'))
            lines[i] = lines[i].replace(f'{{"variant": "{old["variant"]}",', f'{{"variant": "{new["variant"]}",')
            for j in range(i, i + 4):
                if lines[j].lstrip().startswith('"entry": '):
                    lines[j] = lines[j].replace(old["entry"], new["entry"])
                if '"params": ' in lines[j]:
                    lines[j] = lines[j].replace(compact(old["params"]), compact(new["params"]))
            for j in range(len(lines)):
                if lines[j].startswith(f'  "{key}": {{"variant"'):
                    lines[j] = lines[j].replace(flat(old["variant"], old["params"]), flat(new["variant"], new["params"]))
            print(f"{path} {group} {key}: STAGES {old['params']['STAGES']} -> {new['params']['STAGES']}, SCALE_KB "
                  f"{new['params']['SCALE_KB']}")
        out = "".join(lines)
        after = json.loads(out)
        for (group, key), (old, new) in changes.items():  # the surgery did what it meant to
            if any(after[group][key][x] != new[x] for x in ("variant", "entry", "params")):
                sys.exit(f"configs_scale_kb.py: {path} {group} {key}: not in the expected layout")
            flat_copy = after.get(key)
            if flat_copy is not None and flat_copy != dict(variant=new["variant"], **new["params"]):
                sys.exit(f"configs_scale_kb.py: {path} {key}: its flat copy is not in the expected layout")
        with open(path, "w") as f:
            f.write(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=True)
    ap.add_argument("--apply", metavar="KEYS", help="change the entries KEYS names, in place, in DIR")
    ap.add_argument("--min-stages", type=int, default=5, metavar="S")
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    a = ap.parse_args(argv[1:])
    if a.apply:
        if len(a.dirs) != 1:
            ap.error("--apply KEYS takes one DIR")
        return apply(a.apply, a.dirs[0])
    if len(a.dirs) != 2:
        ap.error("expected IN_DIR OUT_DIR")
    (src, dst), min_stages = a.dirs, a.min_stages
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(src, name)) as f:
            d = json.load(f)
        out = {key: d[key] for key in ("format", "op", "tag", "device", "device_name", "arch", "N", "K") if key in d}
        for group in ("buckets", "per_M"):
            if group not in d:
                continue
            out[group] = {}
            for key, e in d[group].items():
                c = convert(e, d["K"], min_stages) if isinstance(d.get("K"), int) else None  # the default file: any K
                out[group][key] = c or e
                if c:
                    print(f"{name} {group} {key}: STAGES {e['params']['STAGES']} -> {c['params']['STAGES']}, SCALE_KB "
                          f"{c['params']['SCALE_KB']}")
        for key in d:  # other members of the format (the model's file has its own)
            if key not in out and key not in ("small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge",
                                              "any") and not key.startswith("M_LEQ_"):
                out[key] = d[key]
        with open(os.path.join(dst, name), "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv)

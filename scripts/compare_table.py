#!/usr/bin/env python3
"""compare_table.py FILE.json...: the Markdown tables of docs/perf.md from `autotune compare --json`
output (docs/formats.md): per shape, both providers' times, TFLOP/s, the ratio and the config the
runtime chose (and cuBLASLt's tile, cluster and split where the file names its algorithm); then the
geometric means."""
import json
import re
import sys


def short(params):
    p = json.loads(params)
    keys = [("BLOCK_M", "BM"), ("BLOCK_N", "BN"), ("STAGES", "S"), ("GROUP_M", "G"), ("SPLIT_K", "SK"),
            ("PINGPONG", "PP"), ("CLUSTER_M", "CM"), ("CLUSTER_N", "CN"), ("KPIPE", "KP"), ("WARPS_M", "WM"),
            ("WARPS_N", "WN"), ("B_HINT", "H")]
    # the optional sm90 switches, printed only when on
    flags = [("RESCALE", "RS"), ("STORE", "ST"), ("CLUSTER_K", "CK")]
    return " ".join([f"{a}{p[k]}" for k, a in keys if k in p] + [f"{a}{p[k]}" for k, a in flags if p.get(k, 0) > 1 or
                                                                   (k != "CLUSTER_K" and p.get(k, 0) == 1)])


def vendor(kernel):
    """cuBLASLt's tile, cluster and split K from its `kernel` entry, in the op's N x M order."""
    m = re.search(r"tile (\S+) \(N x M\), stages \S+, split K (\d+)[^,]*, cluster (\S+),", kernel or "")
    if not m:
        return "-"
    return f"{m.group(1)} C{m.group(3)}" + (f" SK{m.group(2)}" if m.group(2) != "1" else "")


for path in sys.argv[1:]:
    d = json.load(open(path))
    print(f"`{d['space']}` on {d['device']} ({d['arch']}), peaks measured {d['peak_tflops']:.0f} TFLOP/s, "
          f"{d['peak_gbs']:.0f} GB/s\n")
    algo = any("(algo " in ((s.get("cublaslt") or {}).get("kernel") or "") for s in d["shapes"])
    print("| M | N | K | autotune us | TFLOP/s | cuBLASLt us | TFLOP/s | time ratio | runtime's config (source, bucket) |"
          + (" cuBLASLt's tile, cluster (N x M) |" if algo else ""))
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|" + ("---|" if algo else ""))
    worst = 0.0
    for s in d["shapes"]:
        a, c = s.get("autotune") or {}, s.get("cublaslt") or {}
        sel = a.get("selection") or {}
        ratio = s.get("ratio")
        worst = max(worst, ratio or 0)
        cfg = f"{sel.get('variant', '?')} {short(sel['params'])} ({sel.get('source')}, {sel.get('bucket')})" if sel else "-"
        if " + tail " in (a.get("kernel") or ""):  # the runtime's tail launch (docs/runtime.md)
            tile = a["kernel"].split(" + tail ")[1].split("] ")[-1]
            cfg += (" instead: tail " if "(whole call" in a["kernel"] else " + tail ") + tile
        print(f"| {s['m']} | {s['n']} | {s['k']} | {a.get('time_us', 0):.2f} | {a.get('tflops', 0):.0f} | "
              f"{c.get('time_us', 0):.2f} | {c.get('tflops', 0):.0f} | {ratio:.2f}x | {cfg} |"
              + (f" {vendor(c.get('kernel'))} |" if algo else ""))
    g = d["geomean"]
    print(f"\nGeometric mean of the time ratio autotune / cuBLASLt: **{g['all']['ratio']:.3f}x** over "
          f"{g['all']['shapes']} shapes; {g['m_le_128']['ratio']:.3f}x at M <= 128 ({g['m_le_128']['shapes']}); "
          f"{g['m_ge_2048']['ratio']:.3f}x at M >= 2048 ({g['m_ge_2048']['shapes']}). Slowest shape: {worst:.2f}x.\n")

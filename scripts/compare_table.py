#!/usr/bin/env python3
"""compare_table.py FILE.json...: the Markdown tables of docs/perf.md from `autotune compare --json`
output (docs/formats.md): per shape, both providers' times, TFLOP/s, the ratio and the config the
runtime chose; then the geometric means."""
import json
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


for path in sys.argv[1:]:
    d = json.load(open(path))
    print(f"`{d['space']}` on {d['device']} ({d['arch']}), peaks measured {d['peak_tflops']:.0f} TFLOP/s, "
          f"{d['peak_gbs']:.0f} GB/s\n")
    print("| M | N | K | autotune us | TFLOP/s | cuBLASLt us | TFLOP/s | time ratio | runtime's config (source, bucket) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
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
              f"{c.get('time_us', 0):.2f} | {c.get('tflops', 0):.0f} | {ratio:.2f}x | {cfg} |")
    g = d["geomean"]
    print(f"\nGeometric mean of the time ratio autotune / cuBLASLt: **{g['all']['ratio']:.3f}x** over "
          f"{g['all']['shapes']} shapes; {g['m_le_128']['ratio']:.3f}x at M <= 128 ({g['m_le_128']['shapes']}); "
          f"{g['m_ge_2048']['ratio']:.3f}x at M >= 2048 ({g['m_ge_2048']['shapes']}). Slowest shape: {worst:.2f}x.\n")

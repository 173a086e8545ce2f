#!/usr/bin/env python3
"""keep_faster_entries.py --base A1.json,A2.json,... --cand B1.json,B2.json,... --export DIR --out OUTDIR
[--configs configs] [--gain 0.99]: the entries of a product's export that ran faster through the runtime
than the committed files, in every round, put into product files.

The rounds are `autotune compare --json` outputs, interleaved in one run on one GPU: --base with the
committed files (`--configs configs`), --cand with files whose entries at the shapes' M are the
export's. A shape (M, N, K) keeps the export's entry at M when every candidate round ran faster than
the base round of the same index and the geometric mean of candidate / base is at most --gain
(default 0.99: 1% faster). For each (N, K) with a kept M the output is OUTDIR/<the export's file
name>: where configs/ already has that product's file, it with the kept entries replaced
(scripts/configs_add_m.py --add "" --replace); else the arch's file relabelled with the product and
the kept entries replaced (scripts/configs_for_device.py --replace). Printed: one line per shape
(its times and the verdict), the kept M per (N, K), and the count.

Why: a tune's winner is one noisy draw, timed alone; the runtime's launch (its tail, programmatic
dependent launch, the L2 left by the call before) decides. Sessions 40 and 41 made the H200's files
this way (docs/perf.md, "The H200"; docs/usage.md, "Files for another GPU of the same arch"). A shape
without an `ok` time in every round keeps the committed entry, and so does an M that the committed
file or the export has no entry of its own for (it answers from the entry above)."""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


def times(paths):
    """{(m, n, k): [time_us or None per round]} over the compare outputs, in order."""
    out = defaultdict(lambda: [None] * len(paths))
    for i, p in enumerate(paths):
        try:
            shapes = json.load(open(p))["shapes"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit("keep_faster_entries.py: %s: not a compare --json output (%s)" % (p, e))
        for s in shapes:
            a = s.get("autotune") or {}
            out[(s["m"], s["n"], s["k"])][i] = a.get("time_us") if a.get("status") == "ok" else None
    return out


def verdicts(base, cand, gain):
    """[(m, n, k, base times, cand times, geomean or None, kept)] for every shape of both."""
    rows = []
    for key in sorted(set(base) | set(cand), key=lambda t: (t[1], t[2], t[0])):
        a, b = base.get(key, []), cand.get(key, [])
        ok = len(a) == len(b) and a and None not in a and None not in b
        g = math.exp(sum(math.log(y / x) for x, y in zip(a, b)) / len(a)) if ok else None
        keep = ok and all(y < x for x, y in zip(a, b)) and g <= gain
        rows.append(key + (a, b, g, keep))
    return rows


def product_file(export, configs, n, k):
    """(export file, its name, committed product file or None, arch file or None) for (N, K)."""
    found = glob.glob(os.path.join(export, "*-GEMM-*-N=%d-K=%d.json" % (n, k)))
    if len(found) != 1:
        sys.exit("keep_faster_entries.py: --export %s: %d files for N=%d K=%d (want one)" % (export, len(found), n, k))
    name = os.path.basename(found[0])
    rest = name.split("-GEMM-", 1)[1]
    own = os.path.join(configs, name)
    # arch files: a device name of "sm" and digits (engine/core/device.c, at_device_is_arch_name)
    arch = [f for f in glob.glob(os.path.join(configs, "*-GEMM-" + rest))
            if re.fullmatch(r"sm\d+", os.path.basename(f).split("-GEMM-")[0])]
    if not os.path.exists(own) and len(arch) > 1:
        sys.exit("keep_faster_entries.py: no %s in %s and %d arch files for it" % (name, configs, len(arch)))
    return found[0], name, own if os.path.exists(own) else None, arch[0] if arch else None  # both None: a new (N, K)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="compare outputs with the committed files, comma-separated, in round order")
    ap.add_argument("--cand", required=True, help="compare outputs with the export's entries, in the same round order")
    ap.add_argument("--export", required=True, help="the product's export (autotune export --device-name product)")
    ap.add_argument("--out", required=True, help="where the product files go")
    ap.add_argument("--configs", default="configs", help="the committed files (default configs)")
    ap.add_argument("--gain", type=float, default=0.99, help="the largest geomean of candidate / base kept (default 0.99)")
    o = ap.parse_args()
    base, cand = o.base.split(","), o.cand.split(",")
    if len(base) != len(cand):
        sys.exit("keep_faster_entries.py: --base has %d rounds, --cand %d: the same count is needed" % (len(base), len(cand)))
    if not 0 < o.gain <= 1:
        sys.exit("keep_faster_entries.py: --gain %g: between 0 and 1" % o.gain)
    rows = verdicts(times(base), times(cand), o.gain)
    kept = defaultdict(list)
    for m, n, k, a, b, g, keep in rows:
        fmt = lambda v: "/".join("%.2f" % x if x else "-" for x in v)
        print("%6d x %6d x %6d  base %s  cand %s  %s%s" % (m, n, k, fmt(a), fmt(b), "cand/base %.3f" % g if g else "not timed in every round",
                                                        "  kept" if keep else ""))
        if keep:
            kept[(n, k)].append(m)
    os.makedirs(o.out, exist_ok=True)
    written = 0
    for (n, k), ms in sorted(kept.items()):
        exported, name, own, arch = product_file(o.export, o.configs, n, k)
        if not own and not arch:
            print("N=%d K=%d: no committed file to put entries into (the export's file is all new), left out" % (n, k))
            continue
        both = set(json.load(open(own or arch))["per_M"]) & set(json.load(open(exported))["per_M"])
        if any("M_LEQ_%d" % m not in both for m in ms):  # an M the files lack: no entry of its own to replace
            print("N=%d K=%d: M %s not in both files, left out" % (n, k, sorted(m for m in ms if "M_LEQ_%d" % m not in both)))
            ms = [m for m in ms if "M_LEQ_%d" % m in both]
            if not ms:
                continue
        ml = ",".join(map(str, sorted(ms)))
        if own:
            cmd = [os.path.join(HERE, "configs_add_m.py"), own, exported, "--add", "", "--replace", ml]
        else:
            cmd = [os.path.join(HERE, "configs_for_device.py"), arch, exported, "--replace", ml]
        r = subprocess.run([sys.executable] + cmd, capture_output=True, text=True)
        if r.returncode:
            sys.exit("keep_faster_entries.py: N=%d K=%d: %s" % (n, k, r.stderr.strip()))
        with open(os.path.join(o.out, name), "w") as fh:
            fh.write(r.stdout)
        written += len(ms)
        print("kept N=%d K=%d M %s -> %s (%s)" % (n, k, ml, os.path.join(o.out, name), "its product file" if own else "the arch file relabelled"))
    print("kept %d of %d shapes" % (written, len(rows)))


if __name__ == "__main__":
    main()

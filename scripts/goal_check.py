#!/usr/bin/env python3
"""goal_check.py SHIPPED.json LLAMA.json: issue 8's goal, judged from two `autotune compare` JSON files.

The goal (stated for the H100): own kernels only, through the runtime library, next to cuBLASLt in
one run: on the shipped job's 40 shapes and on the Llama-3-8B set (24 shapes), each a geometric-mean
time of at most 0.80x cuBLASLt's, no shape slower than 1.10x, and at least 1,300 TFLOP/s at M = 4096
on (N, K) = (28672, 4096) and (4096, 14336). Made on the GPU with the committed files:

    autotune compare search_spaces/a8w8_blockscale.yaml --configs configs --json shipped.json
    autotune compare search_spaces/llama3_8b.yaml --configs configs --json llama.json
    python3 scripts/goal_check.py shipped.json llama.json

Prints one line per criterion (the figure, the bound, met or not) and a verdict. A file is refused
(exit 2) unless it is a compare of autotune against cublaslt on the committed files (no DB) of the
space its slot names, with every shape of that space answered by both providers; a shape a provider
had no answer for fails the goal (compare exits non-zero for it too). The kernels must be the
library's own (the runtime has no vendor fallback; this checks every answer's kernel name anyway).
Exit 0 when every criterion is met on an H100, 1 when one is not or the GPU is another (the verdict
says which), 2 on bad input."""
import json
import math
import sys

GEOMEAN_MAX = 0.80
SHAPE_MAX = 1.10
TFLOPS_MIN = 1300.0
TFLOPS_SHAPES = [(4096, 28672, 4096), (4096, 4096, 14336)]  # (M, N, K), in the Llama-3-8B set
SETS = [  # (slot, the space compare must have run, shapes it has)
    ("shipped", "search_spaces/a8w8_blockscale.yaml", 40),
    ("Llama-3-8B", "search_spaces/llama3_8b.yaml", 24),
]
OWN_KERNEL = "gemm_a8w8_blockscale_"


def die(msg):
    print("goal_check.py: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path, slot, space, count):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    if not isinstance(d, dict) or d.get("tool") != "autotune compare":
        die("%s: not the JSON of `autotune compare`" % path)
    if d.get("providers") != ["autotune", "cublaslt"]:
        die("%s: providers %s, not autotune and cublaslt" % (path, d.get("providers")))
    if not str(d.get("space", "")).endswith(space) or d.get("shapes_file"):
        die("%s: the %s slot takes a compare of %s on its own shapes (this one: %s%s)" %
            (path, slot, space, d.get("space"), ", --shapes " + d["shapes_file"] if d.get("shapes_file") else ""))
    rt = d.get("runtime") or {}
    if rt.get("db"):
        die("%s: run with a DB (%s): the goal is for the committed files alone" % (path, rt["db"]))
    shapes = d.get("shapes")
    if not isinstance(shapes, list) or len(shapes) + len(d.get("missing") or []) < count:
        die("%s: %d shapes, the %s set has %d" % (path, len(shapes or []), slot, count))
    return d


def main(argv):
    if len(argv) != 3:
        die("usage: goal_check.py SHIPPED.json LLAMA.json (from `autotune compare ... --json`)")
    files = [load(p, *s) for p, s in zip(argv[1:], SETS)]
    devices = sorted({f.get("device", "?") for f in files})
    if len(devices) != 1:
        die("the two files are from different GPUs: %s" % ", ".join(devices))
    device = devices[0]
    lines, met = [], True

    def judge(ok, text):
        nonlocal met
        met = met and ok
        lines.append("%-4s %s" % ("ok" if ok else "NOT", text))

    llama = None
    for (slot, _, _), d in zip(SETS, files):
        ratios, worst, foreign = [], None, []
        for s in d["shapes"]:
            a, b = s.get("autotune") or {}, s.get("cublaslt") or {}
            shape = "%d x %d x %d" % (s["m"], s["n"], s["k"])
            if a.get("status") != "ok" or b.get("status") != "ok" or not s.get("ratio"):
                judge(False, "%s %s: no answer (autotune %s, cublaslt %s)" % (slot, shape, a.get("status"), b.get("status")))
                continue
            if not str(a.get("kernel", "")).startswith(OWN_KERNEL):
                foreign.append(shape)
            ratios.append(s["ratio"])
            if worst is None or s["ratio"] > worst[0]:
                worst = (s["ratio"], shape)
        for m in d.get("missing") or []:
            judge(False, "%s: a shape without an answer: %s" % (slot, json.dumps(m)))
        judge(not foreign, "%s: every answer an own kernel%s" % (slot, (" (not: " + ", ".join(foreign) + ")") if foreign else ""))
        if ratios:
            g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            judge(g <= GEOMEAN_MAX, "%s: geomean time autotune / cublaslt %.3fx over %d shapes (at most %.2fx)" %
                  (slot, g, len(ratios), GEOMEAN_MAX))
            judge(worst[0] <= SHAPE_MAX, "%s: slowest shape %.3fx at %s (at most %.2fx)" % (slot, worst[0], worst[1], SHAPE_MAX))
        if slot == "Llama-3-8B":
            llama = d
    for m, n, k in TFLOPS_SHAPES:
        s = next((s for s in llama["shapes"] if (s["m"], s["n"], s["k"]) == (m, n, k)), None)
        t = (s or {}).get("autotune", {}).get("tflops") if s and s["autotune"].get("status") == "ok" else None
        judge(t is not None and t >= TFLOPS_MIN, "Llama-3-8B %d x %d x %d: %s TFLOP/s (at least %d)" %
              (m, n, k, "%.0f" % t if t is not None else "no answer", TFLOPS_MIN))
    print("\n".join(lines))
    h100 = "H100" in device
    if met and h100:
        print("goal met on %s" % device)
        return 0
    print("goal %s on %s%s" % ("met" if met else "not met", device,
                                "" if h100 else " (the goal is stated for the H100: this is not its figure)"))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""model_add_configs.py COMMITTED.json REFIT.json KEY=VALUE... > OUT.json: the committed time model with
the configs of a refit that match every KEY=VALUE (e.g. CLUSTER_K=4) and that it lacks appended, each
entry copied whole, text included; nothing else changes, so only the answers where an added config
predicts fastest move.

Why this is sound: a model's configs are fitted one by one (each config's coefficients are the least
squares of its own times, its residuals its own), so a config from another fit of the same menu shapes
is the same kind of entry. Checked here: the same format, device, op, tag, SM count and features, and
fit shapes that are the committed model's or some of them (a menu of configs that hold their scales in
shared memory alone has no result where K / 128 is not a multiple of 4, so its fit leaves those shapes
out): an added entry's residuals are then put in the committed model's order, null where the refit had
no such shape, written as `autotune model` writes them. A config is the committed one's when it differs
only in SCALE_KB, the op's shape parameter (the fit keeps the value of the first K it measured). Not
checked, and the caller's to show: that the two DBs time alike (session 50: the shared configs'
predictions agreed within 0.4%, docs/perf.md, "The time model and clusters of four"). Exit 2 on bad
input, naming it."""
import json
import re
import sys

SAME = ["format", "op", "tag", "device", "sm_count", "features"]
SHAPE_PARAM = "SCALE_KB"  # the op's (engine/ops/gemm_a8w8_blockscale.c, shape_param)


def load(path):
    try:
        text = open(path).read()
        return text, json.loads(text)
    except (OSError, ValueError) as e:
        print("model_add_configs.py: %s: %s" % (path, e), file=sys.stderr)
        sys.exit(2)


def blocks(text, path):
    """The text of each entry of "configs", in order (autotune model writes one entry a block, each
    starting on its own line with {"variant"), and where the array's closing line begins."""
    start, end = text.find('"configs": [\n'), text.rfind("\n  ]\n}")
    if start < 0 or end < start:
        print("model_add_configs.py: %s: not laid out as `autotune model` writes it" % path, file=sys.stderr)
        sys.exit(2)
    return re.split(r',\n(?=    \{"variant")', text[start + len('"configs": [\n'):end]), end


def key(c):
    return c["variant"], json.dumps({k: v for k, v in c["params"].items() if k != SHAPE_PARAM}, sort_keys=True)


def resid_text(values):
    """A "resid" array as `autotune model` writes it (engine/core/timemodel.c): %.3f or null, 16 a line."""
    out = []
    for s, v in enumerate(values):
        if s:
            out.append(", " if s % 16 else ",\n               ")
        out.append("null" if v is None else "%.3f" % (v if v != 0 else 0.0))
    return '"resid": [' + "".join(out) + "]"


def refit_in_order(block, c, order):
    """The block with its residuals on the committed fit shapes: order[i] is the refit's index of the
    committed model's shape i, or None."""
    a = block.find('"resid": [')
    if a < 0:  # a model without residuals (before format 3): nothing indexed by the fit shapes
        return block
    b = block.index("]", a)  # the array holds numbers and nulls only
    return block[:a] + resid_text([None if i is None else c["resid"][i] for i in order]) + block[b + 1:]


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (old_text, old), (new_text, new) = load(sys.argv[1]), load(sys.argv[2])
    want = {}
    for a in sys.argv[3:]:
        m = re.fullmatch(r"([A-Z_]+)=(-?\d+)", a)
        if not m:
            print("model_add_configs.py: KEY=VALUE: not a parameter and an integer: '%s'" % a, file=sys.stderr)
            sys.exit(2)
        want[m.group(1)] = int(m.group(2))
    for k in SAME:
        if old.get(k) != new.get(k):
            print("model_add_configs.py: %s and %s differ in '%s': not fits of one menu's shapes on one device"
                  % (sys.argv[1], sys.argv[2], k), file=sys.stderr)
            sys.exit(2)
    old_fit, new_fit = [tuple(x) for x in old.get("fit", [])], [tuple(x) for x in new.get("fit", [])]
    at = {x: i for i, x in enumerate(new_fit)}
    if len(at) != len(new_fit) or not set(new_fit) <= set(old_fit):
        print("model_add_configs.py: %s's fit shapes are not %s's or some of them: not fits of one menu's shapes"
              % (sys.argv[2], sys.argv[1]), file=sys.stderr)
        sys.exit(2)
    order = None if new_fit == old_fit else [at.get(x) for x in old_fit]
    unknown = [k for k in want if not any(k in c["params"] for c in new["configs"])]
    if unknown:
        print("model_add_configs.py: KEY=VALUE: no config of %s has the parameter %s" % (sys.argv[2], ", ".join(unknown)),
              file=sys.stderr)
        sys.exit(2)
    new_blocks, _ = blocks(new_text, sys.argv[2])
    if len(new_blocks) != len(new["configs"]):
        print("model_add_configs.py: %s: %d entries read as text, %d as JSON" % (sys.argv[2], len(new_blocks), len(new["configs"])),
              file=sys.stderr)
        sys.exit(2)
    _, end = blocks(old_text, sys.argv[1])
    have = {key(c) for c in old["configs"]}
    add = [b if order is None else refit_in_order(b, c, order) for b, c in zip(new_blocks, new["configs"])
           if all(c["params"].get(k) == v for k, v in want.items()) and key(c) not in have]
    if not add:
        print("model_add_configs.py: no config of %s matches %s and is new" % (sys.argv[2], " ".join(sys.argv[3:])),
              file=sys.stderr)
        sys.exit(2)
    out = old_text[:end] + ",\n" + ",\n".join(add) + old_text[end:]
    parsed = json.loads(out)  # what was written parses, or nothing is
    assert all(len(c["resid"]) == len(old_fit) for c in parsed["configs"] if "resid" in c), "residuals out of step"
    sys.stdout.write(out)
    print("model_add_configs.py: %d configs added to %d" % (len(add), len(old["configs"])), file=sys.stderr)


if __name__ == "__main__":
    main()

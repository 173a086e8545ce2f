#!/usr/bin/env python3
"""model_add_configs.py COMMITTED.json REFIT.json KEY=VALUE... > OUT.json: the committed time model with
the configs of a refit that match every KEY=VALUE (e.g. CLUSTER_K=4) and that it lacks appended, each
entry copied whole, text included; nothing else changes, so only the answers where an added config
predicts fastest move.

Why this is sound: a model's configs are fitted one by one (each config's coefficients are the least
squares of its own times, its residuals its own), so a config from another fit of the same menu shapes
is the same kind of entry. Checked here: the same format, device, op, tag, SM count, features and fit
shapes (the residuals are indexed by them). Not checked, and the caller's to show: that the two DBs
time alike (session 50: the shared configs' predictions agreed within 0.4%, docs/perf.md, "The time
model and clusters of four"). Exit 2 on bad input, naming it."""
import json
import re
import sys

SAME = ["format", "op", "tag", "device", "sm_count", "features", "fit"]


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
    return c["variant"], json.dumps(c["params"], sort_keys=True)


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
    add = [b for b, c in zip(new_blocks, new["configs"])
           if all(c["params"].get(k) == v for k, v in want.items()) and key(c) not in have]
    if not add:
        print("model_add_configs.py: no config of %s matches %s and is new" % (sys.argv[2], " ".join(sys.argv[3:])),
              file=sys.stderr)
        sys.exit(2)
    out = old_text[:end] + ",\n" + ",\n".join(add) + old_text[end:]
    json.loads(out)  # what was written parses, or nothing is
    sys.stdout.write(out)
    print("model_add_configs.py: %d configs added to %d" % (len(add), len(old["configs"])), file=sys.stderr)


main()

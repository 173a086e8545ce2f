#!/usr/bin/env python3
"""configs_seed_shape.py FILE.json...: adds to exported config files written before it existed the
top-level copy of every entry in the seed's shape (docs/formats.md, "The seed's shape"): each bucket
and each M_LEQ_<m> entry as a member of its own, a flat object of its kernel parameters with the
variant's name. Nothing else in the file changes; the text added is what `autotune export` writes
(the unit test `export` reads each committed file and writes it back with the exporter, and
compares the bytes). A file that already has the copies is left as it is."""
import json
import os
import sys

BUCKETS = ["small", "medium_M32", "medium_M64", "medium_M128", "large", "xlarge", "any"]


def flat(key, entry):
    members = [("variant", entry["variant"])] + sorted(entry["params"].items())
    return f',\n  {json.dumps(key)}: {{' + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members) + "}"


def main(paths):
    for path in paths:
        text = open(path).read()
        data = json.loads(text)
        if any(b in data for b in BUCKETS):
            print(f"{path}: has the seed's shape already")
            continue
        if not text.endswith("\n}\n"):
            sys.exit(f"{path}: does not end as an exported file does")
        added = [flat(b, data["buckets"][b]) for b in BUCKETS if b in data["buckets"]]
        per_m = data.get("per_M", {})
        added += [flat(k, per_m[k]) for k in sorted(per_m, key=lambda k: int(k[len("M_LEQ_"):]))]
        with open(path + ".tmp", "w") as f:
            f.write(text[: -len("\n}\n")] + "".join(added) + "\n}\n")
        json.loads(open(path + ".tmp").read())  # still JSON
        os.replace(path + ".tmp", path)
        print(f"{path}: {len(added)} entries copied to the top level")


if __name__ == "__main__":
    main(sys.argv[1:])

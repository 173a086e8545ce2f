#!/usr/bin/env python3
"""configs_add_m.py COMMITTED.json NEWER.json > MERGED.json: the per-M entries (`per_M`, `M_LEQ_<m>`)
that a newer export of the same (device, tag, N, K) has for M the committed file lacks, added to the
committed file; every entry the committed file has, its buckets included, stays as it is.

Why: a file tuned at some M answers any other M with the entry of the next tuned M above it (at
M = 256 a Llama-3-8B file tuned at 16, 64, 128 and 512 answered with its 512 entry, 1.40x
cuBLASLt's time where a tuned 256 entry runs 0.96x: docs/perf.md). Tuning the missing M into a
fresh DB and exporting gives a whole new file, whose entries at the M already tuned are a second
draw of the same noisy choice; this keeps the first draw there and adds only what was missing.

The output is text surgery on the committed file, in the layout `autotune export` writes (the
`export` unit test reads every committed file and writes it back byte for byte): each new entry's
lines are copied from the newer file, in M order, with the commas between members fixed."""
import json
import re
import sys


def per_m_blocks(lines):
    """(start, end) of the `per_M` object's member lines, and {m: [lines]} of its members."""
    start = lines.index('  "per_M": {\n') + 1
    end = start
    while lines[end] not in ("  },\n", "  }\n"):
        end += 1
    blocks, cur = {}, None
    for line in lines[start:end]:
        m = re.match(r'    "M_LEQ_(\d+)": ', line)
        if m:
            cur = int(m.group(1))
            blocks[cur] = []
        blocks[cur].append(line)
    return start, end, blocks


def top_copies(lines):
    """{m: (index, line)} of the top-level `M_LEQ_<m>` copies."""
    return {int(m.group(1)): (i, line) for i, line in enumerate(lines) if (m := re.match(r'  "M_LEQ_(\d+)": ', line))}


def with_comma(line, comma):
    body = line.rstrip("\n").rstrip(",")
    return body + ("," if comma else "") + "\n"


def merge(old_text, new_text):
    old, new = json.loads(old_text), json.loads(new_text)
    for key in ("format", "op", "tag", "device", "device_name", "arch", "N", "K"):
        if old.get(key) != new.get(key):
            sys.exit(f"configs_add_m.py: the files differ in {key}: {old.get(key)!r} and {new.get(key)!r}")
    if "per_M" not in old or "per_M" not in new:
        sys.exit("configs_add_m.py: both files need per_M entries")
    ol, nl = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    o_start, o_end, o_blocks = per_m_blocks(ol)
    _, _, n_blocks = per_m_blocks(nl)
    added = sorted(set(n_blocks) - set(o_blocks))
    if not added:
        return old_text, added
    blocks = dict(o_blocks)
    blocks.update({m: n_blocks[m] for m in added})
    ms = sorted(blocks)
    body = []
    for j, m in enumerate(ms):
        b = list(blocks[m])
        b[-1] = with_comma(b[-1], j + 1 < len(ms))
        body += b
    # The top-level copies: the committed file's, and the new file's for the added M, in M order
    # where the committed file has its M_LEQ copies (after the seed's buckets, to the end).
    o_top, n_top = top_copies(ol), top_copies(nl)
    top = {m: line for m, (_, line) in o_top.items()}
    top.update({m: n_top[m][1] for m in added if m in n_top})
    out = ol[:o_start] + body + ol[o_end:]
    shift = len(body) - (o_end - o_start)
    if o_top:
        first = min(i for i, _ in o_top.values()) + shift
        last = max(i for i, _ in o_top.values()) + shift
        tail = out[last + 1:]
        tms = sorted(top)
        copies = [with_comma(top[m], j + 1 < len(tms) or tail[0].strip() != "}") for j, m in enumerate(tms)]
        out = out[:first] + copies + tail
    return "".join(out), added


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.split("\n\n")[0])
    with open(argv[1]) as f:
        old_text = f.read()
    with open(argv[2]) as f:
        new_text = f.read()
    text, added = merge(old_text, new_text)
    json.loads(text)  # still JSON
    sys.stdout.write(text)
    print(f"{argv[1]}: added M {', '.join(map(str, added)) or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)

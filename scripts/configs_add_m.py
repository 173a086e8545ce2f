#!/usr/bin/env python3
"""configs_add_m.py COMMITTED.json NEWER.json [--add M,M...] [--replace M,M...] > MERGED.json: the
per-M entries (`per_M`, `M_LEQ_<m>`) that a newer export of the same (device, tag, N, K) has for M
the committed file lacks (with --add, only those M, none for --add "": the ones that won when
measured), added to the committed file; every entry the committed file has stays as it is, its
buckets too, except `any` (the winner at the largest tuned M, used above it), which follows an added
M above the largest. With --replace, the entries at those M (which both files must have) are the
newer file's too: for entries tuned again whose new config won when measured through the runtime
(the buckets stay, the runtime reads `per_M` first).

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


def object_blocks(lines, key):
    """(start, end) of the member lines of the top-level object `key`, and {name: [lines]} of its
    members (each from its `    "name": {` line to the next)."""
    try:
        start = lines.index('  "%s": {\n' % key) + 1
    except ValueError:
        sys.exit("configs_add_m.py: no %s object in the layout `autotune export` writes" % key)
    end = start
    while end < len(lines) and lines[end] not in ("  },\n", "  }\n"):
        end += 1
    blocks, cur = {}, None
    for line in lines[start:end]:
        m = re.match(r'    "([^"]+)": ', line)
        if m:
            cur = m.group(1)
            blocks[cur] = []
        if cur is None:
            sys.exit("configs_add_m.py: unexpected line in %s: %s" % (key, line.strip()))
        blocks[cur].append(line)
    return start, end, blocks


def per_m_blocks(lines):
    start, end, blocks = object_blocks(lines, "per_M")
    return start, end, {int(k[len("M_LEQ_"):]): v for k, v in blocks.items()}


def top_copies(lines):
    """{m: (index, line)} of the top-level `M_LEQ_<m>` copies."""
    return {int(m.group(1)): (i, line) for i, line in enumerate(lines) if (m := re.match(r'  "M_LEQ_(\d+)": ', line))}


def top_line(lines, key):
    """The index of the top-level copy of bucket `key`."""
    for i, line in enumerate(lines):
        if line.startswith('  "%s": {"variant"' % key):
            return i
    sys.exit("configs_add_m.py: no top-level copy of %s (written by autotune export, or scripts/configs_seed_shape.py)" % key)


def with_comma(line, comma):
    body = line.rstrip("\n").rstrip(",")
    return body + ("," if comma else "") + "\n"


def merge(old_text, new_text, replace=(), only=None):
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
    if only is not None:
        for m in only:
            if m not in added:
                sys.exit("configs_add_m.py: --add %d: the newer file needs an entry at that M and the committed file none" % m)
        added = sorted(only)
    for m in replace:
        if m not in o_blocks or m not in n_blocks:
            sys.exit("configs_add_m.py: --replace %d: both files need an entry at that M" % m)
    if not added and not replace:
        return old_text, added
    taken = added + list(replace)  # the M whose entries come from the newer file
    blocks = dict(o_blocks)
    blocks.update({m: n_blocks[m] for m in taken})
    ms = sorted(blocks)
    body = []
    for j, m in enumerate(ms):
        b = list(blocks[m])
        b[-1] = with_comma(b[-1], j + 1 < len(ms))
        body += b
    # The top-level copies: the committed file's, and the new file's for the added M, in M order
    # where the committed file has its M_LEQ copies (after the seed's buckets, to the end).
    o_top, n_top = top_copies(ol), top_copies(nl)
    if not o_top:
        sys.exit("configs_add_m.py: %s has no top-level copies: run scripts/configs_seed_shape.py on it first" % "the committed file")
    missing = [m for m in taken if m not in n_top]
    if missing:
        sys.exit("configs_add_m.py: the newer file has no top-level copy of M_LEQ_%d" % missing[0])
    top = {m: line for m, (_, line) in o_top.items()}
    top.update({m: n_top[m][1] for m in taken})
    out = ol[:o_start] + body + ol[o_end:]
    shift = len(body) - (o_end - o_start)
    first = min(i for i, _ in o_top.values()) + shift
    last = max(i for i, _ in o_top.values()) + shift
    tail = out[last + 1:]
    tms = sorted(top)
    copies = [with_comma(top[m], j + 1 < len(tms) or tail[0].strip() != "}") for j, m in enumerate(tms)]
    out = out[:first] + copies + tail
    # `any` is the largest tuned M's winner: the newer file's when an added M is above the largest.
    if added and max(added) > max(o_blocks):
        b_start, _, o_b = object_blocks(out, "buckets")
        _, _, n_b = object_blocks(nl, "buckets")
        if "any" not in o_b or "any" not in n_b:
            sys.exit("configs_add_m.py: a file without an `any` bucket")
        names = list(o_b)  # members in file order: `any` starts after the lines of those before it
        i = b_start + sum(len(o_b[k]) for k in names[: names.index("any")])
        new_any = list(n_b["any"])
        new_any[-1] = with_comma(new_any[-1], out[i + len(o_b["any"]) - 1].rstrip("\n").endswith(","))
        out = out[:i] + new_any + out[i + len(o_b["any"]):]
        j, k = top_line(out, "any"), top_line(nl, "any")
        out[j] = with_comma(nl[k], out[j].rstrip("\n").endswith(","))
    return "".join(out), added


def m_list(flag, text):
    try:
        return sorted({int(x) for x in text.split(",") if x != ""})  # --add "": add none
    except ValueError:
        sys.exit("configs_add_m.py: %s takes M values separated by commas, not %r" % (flag, text))


def main(argv):
    replace, only, files = [], None, []
    args = iter(argv[1:])
    for a in args:
        if a in ("--replace", "--add"):
            v = next(args, None)
            if v is None:
                sys.exit("configs_add_m.py: %s needs M values" % a)
            if a == "--replace":
                replace = m_list(a, v)
            else:
                only = m_list(a, v)
        else:
            files.append(a)
    if len(files) != 2:
        sys.exit(__doc__.split("\n\n")[0])
    with open(files[0]) as f:
        old_text = f.read()
    with open(files[1]) as f:
        new_text = f.read()
    text, added = merge(old_text, new_text, replace, only)
    # What the text must say: the committed file with the added per-M entries (and copies), and
    # `any` the newer file's when the largest M is one of them.
    got, old, new = json.loads(text), json.loads(old_text), json.loads(new_text)
    want = dict(old)
    want["per_M"] = dict(sorted({**old["per_M"], **{"M_LEQ_%d" % m: new["per_M"]["M_LEQ_%d" % m] for m in added + replace}}.items(),
                                key=lambda kv: int(kv[0][len("M_LEQ_"):])))
    for m in added + replace:
        want["M_LEQ_%d" % m] = new["M_LEQ_%d" % m]
    if added and max(added) > max(int(k[len("M_LEQ_"):]) for k in old["per_M"]):
        want["buckets"] = dict(old["buckets"], any=new["buckets"]["any"])
        want["any"] = new["any"]
    if got != want:
        sys.exit("configs_add_m.py: the merged text does not say what it should (an unexpected layout?)")
    sys.stdout.write(text)
    print(f"{files[0]}: added M {', '.join(map(str, added)) or 'none'}"
          + (f", replaced M {', '.join(map(str, replace))}" if replace else ""), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)

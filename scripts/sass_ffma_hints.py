#!/usr/bin/env python3
"""sass_ffma_hints.py CACHE_DIR MODE: rewrite the scheduling hints of the FFMA instructions in
every cubin of an autotune compile cache, in place, for an experiment (docs/perf.md, "Scheduling
hints on the promotion's FFMAs", session 52: none of the modes was kept).

Why: the promotion (acc += partial * scale) and the in-place rescale are long FFMA chains in the
math warpgroups' k-loop. Each sm_90 instruction is 16 bytes; the high 8 bytes hold its control
bits: a stall count (bits 41-44), a bit that keeps the warp from yielding its scheduler after it
(45) and operand-reuse flags (58-61). ptxas alternates them along a chain: an FFMA that keeps its
scale operand in the reuse cache may not yield, the next reads it from there and may. A warp that
yields loses its reuse cache, so a rewrite that lets an FFMA yield clears its reuse flags with it.

MODE
  yield          every FFMA (R, R, R, R form: opcode 0x223) that holds a reuse flag drops it and may yield
  yield-half     every other one of those, counted through each kernel
  yield-first    those among the first 9/16 of each kernel's FFMAs
  no-yield       every FFMA that may yield is told not to (reuse flags unchanged)
  no-yield-fmul  the same for FFMA and FMUL (0x220, 0x820: the rescale's multiplies)

The cubins are the ELF files after each cache entry's header (docs/formats.md, the compile cache entry);
the header's sha256 is written again, so the runtime serves the rewritten kernels as its own.
Warm a cache with `autotune warm --cache DIR`, copy it, rewrite the copy, and run `compare` with
AUTOTUNE_CACHE set to each in turn. Prints, per rewritten kernel, how many instructions changed.
"""
import hashlib
import os
import struct
import sys

FFMA = 0x223
FMUL = (0x220, 0x820)
NO_YIELD = 1 << 45
REUSE = 0xF << 58
MODES = ("yield", "yield-half", "yield-first", "no-yield", "no-yield-fmul")


def text_sections(elf):
    """(name, offset, size) of each .text.<kernel> section of a 64-bit ELF."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    for name, _type, _flags, _addr, off, size in heads:
        s = bytes(elf[names + name:elf.index(b"\0", names + name)]).decode()
        if s.startswith(".text."):
            yield s[len(".text."):], off, size


def rewrite(elf, mode):
    """Rewrites elf (a bytearray) in place; returns {kernel: (changed, instructions looked at)}."""
    opcodes = (FFMA,) + FMUL if mode == "no-yield-fmul" else (FFMA,)
    out = {}
    for kernel, off, size in list(text_sections(elf)):
        at = [p for p in range(off, off + size, 16) if struct.unpack_from("<Q", elf, p)[0] & 0xFFF in opcodes]
        if mode == "yield-first":
            at = at[:len(at) * 9 // 16]
        changed = held = 0
        for p in at:
            hi, = struct.unpack_from("<Q", elf, p + 8)
            if mode.startswith("no-yield"):
                if not hi & NO_YIELD:
                    struct.pack_into("<Q", elf, p + 8, hi | NO_YIELD)
                    changed += 1
                continue
            if not hi & REUSE or not hi & NO_YIELD:
                continue
            held += 1
            if mode == "yield-half" and held % 2 == 0:
                continue
            struct.pack_into("<Q", elf, p + 8, hi & ~(REUSE | NO_YIELD))
            changed += 1
        out[kernel] = (changed, len(at))
    return out


def rewrite_entry(path, mode):
    data = open(path, "rb").read()
    if not data.startswith(b"AUTOTUNE-CUBIN 1\n"):
        raise SystemExit(f"{path}: not an autotune cache entry")
    body = bytearray(data[data.index(b"\n\n") + 2:])
    start = body.find(b"\x7fELF")
    if start < 0:
        raise SystemExit(f"{path}: no cubin in the entry")
    elf = bytearray(body[start:])
    counts = rewrite(elf, mode)
    if not any(n for n, _ in counts.values()):
        return {}
    body[start:] = elf
    head = b"AUTOTUNE-CUBIN 1\nsha256=%s\nsize=%d\n\n" % (hashlib.sha256(body).hexdigest().encode(), len(body))
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head + bytes(body))
    os.replace(tmp, path)
    return counts


def main(argv):
    if len(argv) != 3 or argv[2] not in MODES:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print(f"usage: {argv[0]} CACHE_DIR {'|'.join(MODES)}", file=sys.stderr)
        return 2
    root, mode = argv[1], argv[2]
    if not os.path.isdir(root):
        print(f"{argv[0]}: CACHE_DIR: {root} is not a directory", file=sys.stderr)
        return 2
    for sub in sorted(os.listdir(root)):
        d = os.path.join(root, sub)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".cubin"):
                for kernel, (n, total) in rewrite_entry(os.path.join(d, name), mode).items():
                    print(f"{name[:12]} {kernel}: {n} of {total} instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""configs_for_device.py ARCH.json PRODUCT.json [--replace M,M...] > OUT.json: a tuned file for one
product (the runtime reads `<product>-GEMM-...` before `sm90-GEMM-...`, docs/runtime.md) made of
the arch file's entries with those at the given M taken from a tune on that product.

ARCH.json is a committed file (`sm90-GEMM-<TAG>-N=<N>-K=<K>.json`), PRODUCT.json the same (N, K)
exported from a tune on the product (`autotune export --device-name product`). The output is
ARCH.json relabelled with PRODUCT.json's device and device_name, its per-M entries at the --replace
M (default: every M both files have) replaced by PRODUCT.json's, every other entry kept
(scripts/configs_add_m.py does the text surgery, so the file reads back byte for byte).

Why: a product file is all the runtime reads for its (N, K) on that product, so it must answer every
M the arch file answers. A tune on the product at a few M (the Llama-3-8B set's six on the H200,
docs/perf.md "The H200") gives entries for those M only; the rest keep the arch file's choices
until they are tuned there too. Which M to replace is decided by measurement (`compare` with each
file), not by the tuner's times alone."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from configs_add_m import m_list, merge  # noqa: E402


def relabel(text, old, new):
    """ARCH's text with PRODUCT's device and device_name (the two header lines export writes)."""
    for key in ("device", "device_name"):
        line = '  "%s": %s,\n' % (key, json.dumps(old[key]))
        if text.count(line) != 1:
            sys.exit("configs_for_device.py: no single %r line in the arch file's header" % key)
        text = text.replace(line, '  "%s": %s,\n' % (key, json.dumps(new[key])))
    return text


def main(argv):
    replace, files = None, []
    args = iter(argv[1:])
    for a in args:
        if a == "--replace":
            v = next(args, None)
            if v is None:
                sys.exit("configs_for_device.py: --replace needs M values")
            replace = m_list(a, v)
        else:
            files.append(a)
    if len(files) != 2:
        sys.exit(__doc__.split("\n\n")[0])
    arch_text, prod_text = (open(f).read() for f in files)
    arch, prod = json.loads(arch_text), json.loads(prod_text)
    if arch.get("device") == prod.get("device"):
        sys.exit("configs_for_device.py: both files are for device %r" % arch.get("device"))
    both = sorted(set(arch.get("per_M", {})) & set(prod.get("per_M", {})), key=lambda k: int(k[len("M_LEQ_"):]))
    if replace is None:
        replace = [int(k[len("M_LEQ_"):]) for k in both]
    text, _ = merge(relabel(arch_text, arch, prod), prod_text, replace, only=[])
    sys.stdout.write(text)
    print(f"{files[0]} as {prod['device']}: replaced M {', '.join(map(str, replace)) or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)

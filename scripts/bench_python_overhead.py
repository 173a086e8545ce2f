#!/usr/bin/env python3
"""bench_python_overhead.py: host time per call of the Python GEMM, against torch's scaled matmuls.

    PYTHONPATH=python AUTOTUNE_LIBRARY=build python3 scripts/bench_python_overhead.py [--calls N]
        [--repeats R] [--shape M N K] [--configs DIR]

On a tiny shape (default M=16, N=K=1024: a few microseconds of GPU time), after a warm-up, each row
times N back-to-back calls from Python: "host" is the CPU time to issue them (the wall time of the
loop, before synchronizing), "wall" includes the final torch.cuda.synchronize(). Host below the
GPU's time per kernel cannot be seen (the queue of launches fills and the loop waits): where wall
is about host, the loop was host-bound and host is the overhead per call. Each figure is the median
of R repeats. Rows:

  autotune (op)            autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale): the torch op,
                           output from torch's allocator
  autotune (op, out=)      the same into an existing tensor (the op ..._out)
  torch.ops.autotune       the op's overload called directly (no package wrapper)
  autotune impl, no dispatcher   the op's CUDA implementation called as a Python function: what
                           the dispatcher's round trip costs (a breakdown, not an API)
  autotune ptr (ctypes)    Runtime.gemm_a8w8_blockscale_ptr on precomputed pointers: the library
                           call through ctypes, no torch
  F.scaled_mm blockwise    torch.nn.functional.scaled_mm with the same scales (1x128 on A,
                           128x128 on B), where this torch has it and the GPU runs it
  torch._scaled_mm tensorwise  per-tensor scales: the vendor baseline available on every FP8 GPU

Prints a Markdown table for docs/perf.md with the device, torch, shape and date."""
import argparse
import datetime
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402

import autotune  # noqa: E402


def operands(m, n, k, dev):
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)

    def signed(shape):
        return (torch.rand(shape, generator=gen, device=dev) * 1.5 + 0.5) * (
            torch.randint(0, 2, shape, generator=gen, device=dev) * 2 - 1)

    a = signed((m, k)).to(torch.float8_e4m3fn)
    b = signed((n, k)).to(torch.float8_e4m3fn)
    a_scale = torch.rand((m, k // 128), generator=gen, device=dev) + 0.5
    b_scale = torch.rand(((n + 127) // 128, k // 128), generator=gen, device=dev) + 0.5
    return a, a_scale, b, b_scale


def measure(fn, calls, repeats, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / calls * 1e6)
        wall.append((t2 - t0) / calls * 1e6)
    return statistics.median(host), statistics.median(wall)


def gpu_time_us(fn, calls=100):
    """GPU time per call: `calls` calls captured in a CUDA graph, the replay timed with CUDA events
    (no host in the way). None where the call cannot be captured."""
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        g.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            g.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / (5 * calls)
    except Exception:
        torch.cuda.synchronize()
        return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=2000, help="calls per timed loop (default 2000)")
    p.add_argument("--repeats", type=int, default=7, help="timed loops per row; the median is shown (default 7)")
    p.add_argument("--warmup", type=int, default=200, help="calls before timing (default 200)")
    p.add_argument("--shape", type=int, nargs=3, metavar=("M", "N", "K"), default=(16, 1024, 1024))
    p.add_argument("--configs", default=os.path.join(HERE, "..", "configs"),
                   help="exported configs for the module runtime (default: the repository's configs/)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_python_overhead: torch sees no CUDA device")
    os.environ.setdefault("AUTOTUNE_CONFIGS", args.configs)
    m, n, k = args.shape
    dev = torch.device("cuda", torch.cuda.current_device())
    a, a_scale, b, b_scale = operands(m, n, k, dev)
    out = torch.empty((m, n), dtype=torch.bfloat16, device=dev)
    ops = autotune.torch_ops()
    rt = autotune._default_runtime()
    stream = torch.cuda.current_stream().cuda_stream
    ptrs = (a.data_ptr(), a_scale.data_ptr(), b.data_ptr(), b_scale.data_ptr(), out.data_ptr(), m, n, k, stream)
    op = torch.ops.autotune.gemm_a8w8_blockscale.default

    rows = [
        ("autotune.gemm_a8w8_blockscale (op)", lambda: autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale)),
        ("autotune.gemm_a8w8_blockscale (op, out=)",
         lambda: autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=out)),
        ("torch.ops.autotune.gemm_a8w8_blockscale", lambda: op(a, a_scale, b, b_scale)),
        ("autotune impl, no dispatcher (breakdown)", lambda: ops._gemm_cuda(a, a_scale, b, b_scale)),
        ("autotune ptr, ctypes only (breakdown)", lambda: rt.gemm_a8w8_blockscale_ptr(*ptrs)),
    ]
    F = torch.nn.functional
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        # 1x128 on A: (M, K/128) M-major; 128x128 on B: (L4, N/128) with K/128 padded to a multiple of 4, K-major
        l4 = (k // 128 + 3) // 4 * 4
        sa = a_scale.t().contiguous().t()
        sb = torch.zeros(((n + 127) // 128, l4), dtype=torch.float32, device=dev)
        sb[:, :k // 128] = b_scale
        sb = sb.t()
        bt = b.t()
        rows.append(("F.scaled_mm blockwise 1x128 x 128x128",
                     lambda: F.scaled_mm(a, bt, sa, F.ScalingType.BlockWise1x128, sb, F.ScalingType.BlockWise128x128,
                                         output_dtype=torch.bfloat16)))
    one = torch.ones((), dtype=torch.float32, device=dev)
    bt = b.t()
    rows.append(("torch._scaled_mm tensorwise", lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,
                                                                      out_dtype=torch.bfloat16)))

    print(f"device: {torch.cuda.get_device_name(dev)}; torch {torch.__version__}; Python {platform.python_version()}; "
          f"libautotune {autotune.library_path()}")
    print(f"shape M={m} N={n} K={k}; {args.calls} calls per loop, median of {args.repeats} loops, "
          f"{args.warmup} warm-up calls; {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%MZ}")
    sel = rt.select("gemm_a8w8_blockscale", m, n, k)
    print(f"autotune config: {sel.source} {sel.bucket} {sel.kernel}")
    print()
    print("| call | host us/call | wall us/call | GPU us/call |")
    print("| --- | ---: | ---: | ---: |")
    for name, fn in rows:
        try:
            host, wall = measure(fn, args.calls, args.repeats, args.warmup)
            gpu = gpu_time_us(fn)
            gpu = "n/a" if gpu is None else f"{gpu:.2f}"
            print(f"| {name} | {host:.2f} | {wall:.2f} | {gpu} |", flush=True)
        except Exception as e:  # a baseline this torch or GPU does not run
            msg = " ".join(str(e).split())[:160]
            print(f"| {name} | failed: {type(e).__name__}: {msg} | | |", flush=True)
    print()
    print("host: CPU time to issue one call (the loop, before synchronizing); wall: with the final synchronize; "
          "GPU: the kernel's own time (100 calls in a CUDA graph; n/a: not capturable as called). "
          "Where GPU < host, the loop was host-bound and host is the overhead per call.")


if __name__ == "__main__":
    main()

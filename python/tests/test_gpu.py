"""test_gpu.py: the tensor op on a GPU, with torch (the meson `gpu` suite runs it as a script;
exit 77, meson's "skipped", without torch or a CUDA device). Environment as in the unit test:
PYTHONPATH=python, AUTOTUNE_LIBRARY=the build's libautotune; the op's module runtime reads the
committed configs/ ($AUTOTUNE_CONFIGS), the compile cache is $AUTOTUNE_CACHE or one under $AT_TEST_TMP.

- against a reference computed in torch (dequantized in fp32, matmul in fp32 without TF32) on
  random inputs (no zeros), the output poisoned with NaN first, on shapes of tuned (N, K), of the
  default file, with an N tail, M = 1 and a split-K config;
- the launch goes on torch's current stream: behind a long sleep on a side stream, a copy made
  on another stream still sees the poison;
- Runtime.prepare on torch's context, then calls right;
- CUDA graph capture on a side stream after a warm-up on another, replayed on new inputs;
- torch.compile(fullgraph=True), with a dynamic M, with out=, and mode="reduce-overhead";
- ValueErrors naming the argument on real CUDA tensors (dtype, device, shape, alignment, contiguity)."""
import json
import os
import sys
import tempfile
import unittest


def _skip(why):
    print(f"skipped: {why}", file=sys.stderr)
    sys.exit(77)


try:
    import torch
except ImportError:
    _skip("torch is not installed")
if not torch.cuda.is_available():
    _skip("torch sees no CUDA device")

ROOT = os.environ.get("AT_TEST_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("AUTOTUNE_CONFIGS", os.path.join(ROOT, "configs"))
if not os.environ.get("AUTOTUNE_CACHE"):
    os.environ["AUTOTUNE_CACHE"] = tempfile.mkdtemp(prefix="python-gpu-cache.", dir=os.environ.get("AT_TEST_TMP"))

import autotune  # noqa: E402  (after the environment it reads)

OP = "gemm_a8w8_blockscale"
DEV = torch.device("cuda", torch.cuda.current_device())
torch.backends.cuda.matmul.allow_tf32 = False
# (M, N, K): tuned (N, K) of configs/, a split-K entry (N=1024, K=3072 at small M on sm90), M = 1,
# an N tail with no file of its own (the default file), a larger M.
SHAPES = [(64, 1024, 1024), (16, 1024, 3072), (1, 4096, 1024), (200, 1032, 512), (300, 6144, 1024)]


def signed_uniform(shape, gen, lo=0.5, hi=2.0):
    """Random values of random sign with magnitudes in [lo, hi): never zero."""
    mag = torch.rand(shape, generator=gen, device=DEV) * (hi - lo) + lo
    sign = torch.randint(0, 2, shape, generator=gen, device=DEV) * 2 - 1
    return mag * sign


def operands(m, n, k, seed):
    gen = torch.Generator(device=DEV)
    gen.manual_seed(seed)
    a = signed_uniform((m, k), gen).to(torch.float8_e4m3fn)
    b = signed_uniform((n, k), gen).to(torch.float8_e4m3fn)
    a_scale = torch.rand((m, k // 128), generator=gen, device=DEV) * 1.5 + 0.25
    b_scale = torch.rand(((n + 127) // 128, k // 128), generator=gen, device=DEV) * 1.5 + 0.25
    return a, a_scale, b, b_scale


def dequantized(a, a_scale, b, b_scale):
    n = b.shape[0]
    af = a.float() * a_scale.repeat_interleave(128, dim=1)
    bf = b.float() * b_scale.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)
    return af, bf


def reference(a, a_scale, b, b_scale):
    af, bf = dequantized(a, a_scale, b, b_scale)
    return af @ bf.t()


class GpuCase(unittest.TestCase):
    def assertMatches(self, out, args, what):
        """out (bf16) against the fp32 reference: finite (no poison left), each element within
        1e-2 + 1e-2 |ref| + 2^-9 (|A| |B|^T) (the engine's bound for FP8 tensor-core accumulation),
        and the whole within 1e-2 relative (Frobenius): a wrong tile or scale misses by far more."""
        torch.cuda.synchronize()
        self.assertEqual(out.dtype, torch.bfloat16, what)
        self.assertEqual(tuple(out.shape), (args[0].shape[0], args[2].shape[0]), what)
        self.assertTrue(bool(torch.isfinite(out).all()), f"{what}: NaN or Inf in the output")
        af, bf = dequantized(*args)
        ref = af @ bf.t()
        bound = 1e-2 + 1e-2 * ref.abs() + 2.0 ** -9 * (af.abs() @ bf.abs().t())
        err = (out.float() - ref).abs()
        bad = int((err > bound).sum())
        self.assertEqual(bad, 0, f"{what}: {bad} elements out of bound (worst error {float(err.max()):.4g})")
        rel = float((out.float() - ref).norm() / ref.norm())
        self.assertLess(rel, 1e-2, f"{what}: relative error {rel:.3g}")


class TestReference(GpuCase):
    def test_shapes(self):
        rt = autotune.Runtime(configs_dir=os.environ["AUTOTUNE_CONFIGS"])
        for i, (m, n, k) in enumerate(SHAPES):
            with self.subTest(M=m, N=n, K=k):
                args = operands(m, n, k, seed=100 + i)
                sel = rt.select(OP, m, n, k)
                print(f"M={m} N={n} K={k}: {sel.source} {sel.bucket} {sel.kernel}", file=sys.stderr)
                out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=DEV)
                self.assertIs(autotune.gemm_a8w8_blockscale(*args, out=out), out)
                self.assertMatches(out, args, f"out= M={m} N={n} K={k}")
                c = autotune.gemm_a8w8_blockscale(*args)  # allocated by torch
                self.assertMatches(c, args, f"allocated M={m} N={n} K={k}")
                c2 = rt.gemm_a8w8_blockscale(*args)  # a Runtime of its own, through the same op
                self.assertMatches(c2, args, f"Runtime M={m} N={n} K={k}")
                c3 = torch.ops.autotune.gemm_a8w8_blockscale(*args)
                self.assertMatches(c3, args, f"torch.ops M={m} N={n} K={k}")
        rt.close()


class TestPrepare(GpuCase):
    def test_prepare_then_call(self):
        """Runtime.prepare on torch's context (made current by torch's first use of the device): at
        least one kernel ready per distinct config the calls up to M = 512 select (tails come on
        top), then calls in that range right."""
        torch.zeros(1, device=DEV)  # torch's context, current in this thread
        rt = autotune.Runtime(configs_dir=os.environ["AUTOTUNE_CONFIGS"])
        n, k = 4096, 1024
        ready = rt.prepare(OP, n, k, 512)
        selections = (rt.select(OP, m, n, k) for m in range(1, 513))
        configs = {(s.kernel, json.dumps(s.params, sort_keys=True)) for s in selections}
        self.assertGreaterEqual(ready, len(configs))
        for i, m in enumerate((1, 64, 300, 512)):
            args = operands(m, n, k, seed=300 + i)
            self.assertMatches(rt.gemm_a8w8_blockscale(*args), args, f"after prepare M={m}")
        self.assertEqual(rt.prepare(OP, n, k, 512), ready)  # all loaded already: the same kernels
        rt.close()


class TestStream(GpuCase):
    def test_current_stream(self):
        m, n, k = 64, 1024, 1024
        args = operands(m, n, k, seed=7)
        autotune.gemm_a8w8_blockscale(*args)  # compiled and loaded before the timing-sensitive part
        side, other = torch.cuda.Stream(), torch.cuda.Stream()
        out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=DEV)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            self.assertEqual(autotune._torch._raw_stream(DEV.index), torch.cuda.current_stream().cuda_stream)
            torch.cuda._sleep(1_000_000_000)  # about half a second: the GEMM waits behind it on `side`
            autotune.gemm_a8w8_blockscale(*args, out=out)
        with torch.cuda.stream(other):
            snapshot = out.clone()
        other.synchronize()
        self.assertTrue(bool(torch.isnan(snapshot.float()).all()), "the GEMM did not wait for its stream's work")
        side.synchronize()
        self.assertMatches(out, args, "on a side stream")


class TestGraph(GpuCase):
    def test_capture_on_side_stream(self):
        """Warm-up on one side stream, capture on another (torch.cuda.graph's own pattern), replay
        on new inputs: the allocating form (output in the graph's pool) and out=."""
        for i, (m, n, k) in enumerate([(16, 1024, 3072), (200, 1032, 512), (64, 1024, 1024)]):
            with self.subTest(M=m, N=n, K=k):
                static = operands(m, n, k, seed=300 + i)
                fixed_out = torch.empty((m, n), dtype=torch.bfloat16, device=DEV)
                warm = torch.cuda.Stream()
                warm.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(warm):
                    for _ in range(3):
                        autotune.gemm_a8w8_blockscale(*static)
                        autotune.gemm_a8w8_blockscale(*static, out=fixed_out)
                torch.cuda.current_stream().wait_stream(warm)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                capture = torch.cuda.Stream()
                with torch.cuda.graph(g, stream=capture):
                    graph_out = autotune.gemm_a8w8_blockscale(*static)
                    autotune.gemm_a8w8_blockscale(*static, out=fixed_out)
                for replay in range(3):
                    fresh = operands(m, n, k, seed=400 + 10 * i + replay)
                    for dst, src in zip(static, fresh):
                        dst.copy_(src)
                    graph_out.fill_(float("nan"))
                    fixed_out.fill_(float("nan"))
                    g.replay()
                    self.assertMatches(graph_out, fresh, f"graph replay {replay}, allocated, M={m} N={n} K={k}")
                    self.assertMatches(fixed_out, fresh, f"graph replay {replay}, out=, M={m} N={n} K={k}")


def compile_and_call(f, *args):
    """torch.compile(f, fullgraph=True) called on args. Inductor compiles the graph's other ops
    with Triton, which needs a C compiler and Python's headers: where inductor fails for a reason
    other than the op's own ValueError, the same fullgraph trace runs with the aot_eager backend,
    said on stderr. The op itself is an external call either way."""
    import torch._inductor.exc
    backend_errors = (torch._dynamo.exc.BackendCompilerFailed, getattr(torch._inductor.exc, "InductorError",
                                                                       torch._dynamo.exc.BackendCompilerFailed))
    torch._dynamo.reset()
    try:
        return torch.compile(f, fullgraph=True)(*args), "inductor"
    except backend_errors as e:
        if isinstance(e.__cause__, ValueError):
            raise
        print(f"inductor failed ({' '.join(str(e).split())[:400]}): aot_eager instead", file=sys.stderr)
        torch._dynamo.reset()
        return torch.compile(f, fullgraph=True, backend="aot_eager")(*args), "aot_eager"


class TestCompile(GpuCase):
    def test_fullgraph(self):
        def f(a, a_scale, b, b_scale):
            return autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale).float() * 2.0

        args = operands(64, 1024, 1024, seed=500)
        got, backend = compile_and_call(f, *args)
        self.assertMatches((got / 2.0).to(torch.bfloat16), args, f"compiled ({backend}) M=64")
        cf = torch.compile(f, fullgraph=True, **({} if backend == "inductor" else {"backend": backend}))
        for i, m in enumerate((64, 100, 33)):  # M varies: a recompile with a dynamic M
            args = operands(m, 1024, 1024, seed=510 + i)
            got = cf(*args)
            self.assertMatches((got / 2.0).to(torch.bfloat16), args, f"compiled ({backend}) M={m}")

    def test_fullgraph_out(self):
        def f(a, a_scale, b, b_scale, out):
            autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=out)
            return out.float().sum(dim=1)

        m, n, k = 128, 4096, 1024
        args = operands(m, n, k, seed=600)
        out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=DEV)
        sums, _ = compile_and_call(f, *args, out)
        self.assertMatches(out, args, "compiled out=")
        torch.testing.assert_close(sums, out.float().sum(dim=1))

    def test_reduce_overhead(self):
        """torch.compile's CUDA graphs (cudagraph trees): the op captured and replayed by torch (a
        graph of the op alone: no Triton kernel to build)."""
        torch._dynamo.reset()

        def f(a, a_scale, b, b_scale):
            return autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale)

        cf = torch.compile(f, fullgraph=True, mode="reduce-overhead")
        m, n, k = 64, 1024, 1024
        for call in range(4):
            args = operands(m, n, k, seed=700 + call)
            got = cf(*args).clone()
            self.assertMatches(got, args, f"reduce-overhead call {call}")


class TestErrors(unittest.TestCase):
    def test_value_errors(self):
        m, n, k = 64, 1024, 1024
        good = operands(m, n, k, seed=1)
        flat = torch.empty(m * k + 16, dtype=torch.float8_e4m3fn, device=DEV)
        misaligned = flat[1:1 + m * k].view(m, k)
        cases = [
            ("a", dict(a=good[0].to(torch.float16)), "a must be torch.float8_e4m3fn"),
            ("b_scale", dict(b_scale=good[3].double()), "b_scale must be torch.float32"),
            ("a_scale", dict(a_scale=good[1].cpu()), "a_scale must be on a CUDA device"),
            ("b", dict(b=good[2][:, :512].contiguous()), r"b must have shape \(1024, 1024\)"),
            ("b_scale", dict(b_scale=good[3][:, :4].contiguous()), r"b_scale must have shape \(8, 8\)"),
            ("a", dict(a=misaligned), "a must be 16-byte aligned"),
            ("b", dict(b=good[2].t().contiguous().t()), "b must be contiguous"),
            ("out", dict(out=torch.empty((m, n), dtype=torch.float32, device=DEV)), "out must be torch.bfloat16"),
            ("out", dict(out=torch.empty((m, n + 8), dtype=torch.bfloat16, device=DEV)), "out must have shape"),
        ]
        for name, change, message in cases:
            with self.subTest(argument=name):
                args = dict(zip(("a", "a_scale", "b", "b_scale"), good))
                args.update(change)
                with self.assertRaisesRegex(ValueError, message):
                    autotune.gemm_a8w8_blockscale(**args)
        with self.assertRaisesRegex(ValueError, "a must be on a CUDA device"):
            autotune.gemm_a8w8_blockscale(*(t.cpu() for t in good))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

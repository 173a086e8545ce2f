"""test_cpu.py: the Python package without a GPU (the unit suite runs it with PYTHONPATH=python and
AUTOTUNE_LIBRARY=the build's libautotune): import (without torch too), select with a named device
against the committed configs, argument errors naming the argument (the package's own checks on
tensors, with stand-ins for torch tensors, and the library's on raw pointers), and a clear error
when the library is missing. Where torch is installed: the ops' registration, their fake
implementation (FakeTensor and meta tensors: output shape and dtype, errors), torch.library.opcheck,
torch.compile(fullgraph=True) tracing them, and the launch path's quick check against the full one."""
import os
import re
import subprocess
import sys
import unittest

import autotune

try:
    import torch
except ImportError:
    torch = None

ROOT = os.environ.get("AT_TEST_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIGS = os.path.join(ROOT, "configs")
OP = "gemm_a8w8_blockscale"


class Device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __str__(self):
        return f"{self.type}:{self.index}"


class Tensor:
    """Enough of a torch tensor for check_gemm_a8w8_blockscale."""

    def __init__(self, shape, dtype, device=None, ptr=1 << 20, contiguous=True):
        self.shape, self.dtype, self.device = shape, dtype, device or Device("cuda")
        self._ptr, self._contiguous = ptr, contiguous

    def data_ptr(self):
        return self._ptr

    def is_contiguous(self):
        return self._contiguous


def operands(m=64, n=1024, k=1024):
    return dict(a=Tensor((m, k), "torch.float8_e4m3fn"), a_scale=Tensor((m, k // 128), "torch.float32"),
                b=Tensor((n, k), "torch.float8_e4m3fn"), b_scale=Tensor(((n + 127) // 128, k // 128), "torch.float32"),
                out=Tensor((m, n), "torch.bfloat16"))


class TestPackage(unittest.TestCase):
    def setUp(self):
        self.rt = autotune.Runtime(configs_dir=CONFIGS)

    def tearDown(self):
        self.rt.close()

    def test_library(self):
        self.assertTrue(os.path.exists(autotune.library_path()))

    def test_select(self):
        s = self.rt.select(OP, 64, 1024, 1024, device="sm90")
        self.assertEqual(s.source, "nk_file")
        self.assertEqual(s.bucket, "M_LEQ_64")
        # the tuned file, and the time model that answers between its entries (M 257 to 2048)
        self.assertTrue(s.path.startswith(os.path.join("configs", "sm90-GEMM-A8W8_BLOCKSCALE-N=1024-K=1024.json")) or
                        "/sm90-GEMM-A8W8_BLOCKSCALE-N=1024-K=1024.json (" in s.path, s.path)
        self.assertIn("-model.json", s.path)
        self.assertIsInstance(s.params["BLOCK_M"], int)
        self.assertTrue(s.kernel.startswith("gemm_a8w8_blockscale_"))
        # an (N, K) without a file: the time model up to M = 2048, the tag's default file above
        # (the source names the model: it answered the (N, K)); beyond the tuned M: any
        self.assertEqual(self.rt.select(OP, 64, 5120, 1024, device="sm90").bucket, "M_LEQ_64")
        self.assertEqual(self.rt.select(OP, 100000, 5120, 1024, device="sm90").source, "model_file")
        self.assertEqual(self.rt.select(OP, 100000, 5120, 1024, device="sm90").bucket, "any")

    def test_module_select(self):
        os.environ["AUTOTUNE_CONFIGS"] = CONFIGS
        self.assertEqual(autotune.select(OP, 16, 1024, 1024, device="sm90").bucket, "M_LEQ_16")

    def test_select_errors(self):
        with self.assertRaisesRegex(ValueError, "unknown op 'nope'"):
            self.rt.select("nope", 1, 1024, 1024, device="sm90")
        with self.assertRaisesRegex(ValueError, "^M must be positive"):
            self.rt.select(OP, 0, 1024, 1024, device="sm90")
        with self.assertRaisesRegex(ValueError, "^K must be an int"):
            self.rt.select(OP, 1, 1024, 10.5, device="sm90")
        with self.assertRaisesRegex(ValueError, "^device must be"):
            self.rt.select(OP, 1, 1024, 1024, device=90)

    def test_pdl_option(self):
        with self.assertRaisesRegex(ValueError, "^pdl must be None, 'off' or 'on'"):
            autotune.Runtime(configs_dir=CONFIGS, pdl="sometimes")
        autotune.Runtime(configs_dir=CONFIGS, pdl="off").close()

    def test_tail_option(self):
        with self.assertRaisesRegex(ValueError, "^tail must be None, 'off' or 'on'"):
            autotune.Runtime(configs_dir=CONFIGS, tail=1)
        autotune.Runtime(configs_dir=CONFIGS, tail="off").close()

    def test_prepare_errors(self):
        """prepare checks its arguments before it touches CUDA, and needs a current context."""
        with self.assertRaisesRegex(ValueError, "unknown op 'nope'"):
            self.rt.prepare("nope", 1024, 1024, 64)
        with self.assertRaisesRegex(ValueError, "k must be a positive multiple of 128"):
            self.rt.prepare(OP, 1024, 1000, 64)
        with self.assertRaisesRegex(ValueError, "m_max must be from 1 to 2\\^20"):
            self.rt.prepare(OP, 1024, 1024, (1 << 20) + 1)
        with self.assertRaisesRegex(ValueError, "^m_max must be positive"):
            self.rt.prepare(OP, 1024, 1024, 0)
        with self.assertRaises(RuntimeError):  # no driver here, or no context made current
            self.rt.prepare(OP, 1024, 1024, 64)

    def test_pointer_errors(self):
        """The library checks its arguments before it touches CUDA: no GPU needed."""
        ok = 1 << 20
        with self.assertRaisesRegex(ValueError, "a must be a 16-byte aligned device pointer"):
            self.rt.gemm_a8w8_blockscale_ptr(0, ok, ok, ok, ok, 64, 1024, 1024)
        with self.assertRaisesRegex(ValueError, "b_scale must be a 4-byte aligned device pointer"):
            self.rt.gemm_a8w8_blockscale_ptr(ok, ok, ok, ok + 2, ok, 64, 1024, 1024)
        with self.assertRaisesRegex(ValueError, "k must be a positive multiple of 128"):
            self.rt.gemm_a8w8_blockscale_ptr(ok, ok, ok, ok, ok, 64, 1024, 1000)
        with self.assertRaisesRegex(ValueError, "^c must be a device address"):
            self.rt.gemm_a8w8_blockscale_ptr(ok, ok, ok, ok, -1, 64, 1024, 1024)
        with self.assertRaisesRegex(ValueError, "^stream must be a device address"):
            self.rt.gemm_a8w8_blockscale_ptr(ok, ok, ok, ok, ok, 64, 1024, 1024, stream="s")

    def test_tensor_checks(self):
        check = autotune.check_gemm_a8w8_blockscale
        self.assertEqual(check(**operands()), (64, 1024, 1024))
        cases = [
            ("a", dict(a=Tensor((64, 1024), "torch.float16")), "a must be torch.float8_e4m3fn"),
            ("b_scale", dict(b_scale=Tensor((8, 8), "torch.bfloat16")), "b_scale must be torch.float32"),
            ("out", dict(out=Tensor((64, 1024), "torch.float32")), "out must be torch.bfloat16"),
            ("b", dict(b=Tensor((1024, 1024), "torch.float8_e4m3fn", device=Device("cpu"))),
             "b must be on a CUDA device"),
            ("a_scale", dict(a_scale=Tensor((64, 8), "torch.float32", device=Device("cuda", 1))),
             "a_scale is on cuda:1, a on cuda:0"),
            ("b", dict(b=Tensor((1024, 1024), "torch.float8_e4m3fn", contiguous=False)), "b must be contiguous"),
            ("a_scale", dict(a_scale=Tensor((64, 7), "torch.float32")), r"a_scale must have shape \(64, 8\)"),
            ("out", dict(out=Tensor((64, 1000), "torch.bfloat16")), r"out must have shape \(64, 1024\)"),
            ("a", dict(a=Tensor((64, 1024), "torch.float8_e4m3fn", ptr=(1 << 20) + 8)), "a must be 16-byte aligned"),
            ("b_scale", dict(b_scale=Tensor((8, 8), "torch.float32", ptr=(1 << 20) + 2)),
             "b_scale must be 4-byte aligned"),
            ("a", dict(a=[[1]]), "a must be a torch tensor"),
        ]
        for name, change, message in cases:
            with self.subTest(argument=name):
                args = operands()
                args.update(change)
                with self.assertRaisesRegex(ValueError, message):
                    check(**args)
        args = operands(k=1000)
        with self.assertRaisesRegex(ValueError, "K must be a positive multiple of 128"):
            check(**args)

    def test_closed(self):
        self.rt.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            self.rt.select(OP, 1, 1024, 1024, device="sm90")

    def test_import_without_torch(self):
        """The package imports, selects and checks pointers where torch cannot be imported; the
        tensor call then says it needs torch. Importing it does not import torch."""
        code = ("import sys\n"
                "class NoTorch:\n"
                "    def find_spec(self, name, path=None, target=None):\n"
                "        if name == 'torch' or name.startswith('torch.'):\n"
                "            raise ImportError('no torch here')\n"
                "sys.meta_path.insert(0, NoTorch())\n"
                "import autotune\n"
                "rt = autotune.Runtime(configs_dir=sys.argv[1])\n"
                "print(rt.select('gemm_a8w8_blockscale', 64, 1024, 1024, device='sm90').bucket)\n"
                "try:\n"
                "    autotune.gemm_a8w8_blockscale(1, 2, 3, 4)\n"
                "except ImportError as e:\n"
                "    print('ImportError:', e)\n")
        r = subprocess.run([sys.executable, "-c", code, CONFIGS], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("M_LEQ_64", r.stdout)
        self.assertIn("ImportError: the tensor call needs torch", r.stdout)
        r = subprocess.run([sys.executable, "-c", "import sys, autotune; print('torch' in sys.modules)"],
                           capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "False"), r.stderr)

    def test_library_missing(self):
        env = dict(os.environ, AUTOTUNE_LIBRARY="/nonexistent/libautotune.so.0")
        r = subprocess.run([sys.executable, "-c", "import autotune; autotune.select('x', 1, 8, 128, 'sm90')"], env=env,
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryNotFound", r.stderr)
        self.assertIn("AUTOTUNE_LIBRARY", r.stderr)


def meta_operands(m=64, n=1024, k=1024, device="meta"):
    return (torch.empty((m, k), dtype=torch.float8_e4m3fn, device=device),
            torch.empty((m, k // 128), dtype=torch.float32, device=device),
            torch.empty((n, k), dtype=torch.float8_e4m3fn, device=device),
            torch.empty(((n + 127) // 128, k // 128), dtype=torch.float32, device=device))


class CudaLike(Tensor):
    """A stand-in for a CUDA torch tensor as the launch path's quick check reads it."""

    def __init__(self, shape, dtype, device=None, ptr=1 << 20, contiguous=True):
        super().__init__(torch.Size(shape), getattr(torch, dtype.split(".")[1]), device, ptr, contiguous)
        self.is_cuda = self.device.type == "cuda"

    def get_device(self):
        return self.device.index if self.is_cuda else -1


@unittest.skipIf(torch is None, "torch is not installed")
class TestTorchOp(unittest.TestCase):
    """The torch ops without a GPU: registration, fake implementation, tracing."""

    @classmethod
    def setUpClass(cls):
        cls.ops = autotune.torch_ops()

    def test_registered(self):
        op = torch.ops.autotune.gemm_a8w8_blockscale.default
        self.assertEqual(str(op._schema), "autotune::gemm_a8w8_blockscale(Tensor a, Tensor a_scale, Tensor b, "
                                          "Tensor b_scale, int runtime=0) -> Tensor")
        out = torch.ops.autotune.gemm_a8w8_blockscale_out.default
        self.assertEqual(str(out._schema), "autotune::gemm_a8w8_blockscale_out(Tensor a, Tensor a_scale, Tensor b, "
                                           "Tensor b_scale, Tensor(a!) out, int runtime=0) -> ()")
        self.assertIs(self.ops.gemm, op)
        # torch imported first: importing autotune registers the ops at once
        r = subprocess.run([sys.executable, "-c", "import torch, autotune; "
                            "print(torch.ops.autotune.gemm_a8w8_blockscale.default._schema.name)"],
                           capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), "autotune::gemm_a8w8_blockscale", r.stderr)

    def test_fake(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            args = meta_operands(100, 1032, 512, device="cuda")
            c = autotune.gemm_a8w8_blockscale(*args)
            self.assertEqual((tuple(c.shape), c.dtype, c.device.type), ((100, 1032), torch.bfloat16, "cuda"))
            out = torch.empty((100, 1032), dtype=torch.bfloat16, device="cuda")
            self.assertIs(autotune.gemm_a8w8_blockscale(*args, out=out), out)
            with self.assertRaisesRegex(ValueError, r"b_scale must have shape \(9, 4\)"):
                autotune.gemm_a8w8_blockscale(*args[:3], torch.empty((8, 4), device="cuda"))
            with self.assertRaisesRegex(ValueError, "out must be torch.bfloat16"):
                autotune.gemm_a8w8_blockscale(*args, out=out.float())
            with self.assertRaisesRegex(ValueError, "a must be torch.float8_e4m3fn"):
                autotune.gemm_a8w8_blockscale(args[0].to(torch.float16), *args[1:])
        c = autotune.gemm_a8w8_blockscale(*meta_operands(7, 256, 384))  # meta tensors: the fake too
        self.assertEqual((tuple(c.shape), c.dtype, c.device.type), ((7, 256), torch.bfloat16, "meta"))
        with self.assertRaisesRegex(ValueError, "a must be 2-D"):
            autotune.gemm_a8w8_blockscale(torch.empty((1, 64, 1024), dtype=torch.float8_e4m3fn, device="meta"),
                                          *meta_operands()[1:])

    def test_cpu_tensors(self):
        with self.assertRaisesRegex(ValueError, "a must be on a CUDA device"):
            autotune.gemm_a8w8_blockscale(*meta_operands(device="cpu"))
        args = meta_operands(device="cpu")
        with self.assertRaisesRegex(ValueError, "a must be torch.float8_e4m3fn"):
            autotune.gemm_a8w8_blockscale(args[0].to(torch.float16), *args[1:])
        with self.assertRaisesRegex(ValueError, "a must be on a CUDA device"):
            autotune.gemm_a8w8_blockscale(*args, out=torch.empty((64, 1024), dtype=torch.bfloat16))

    def test_opcheck(self):
        """torch's own checks of a custom op (schema, fake vs kernel, AOT dispatch) on meta tensors."""
        args = meta_operands(48, 512, 256)
        for op, extra in ((torch.ops.autotune.gemm_a8w8_blockscale.default, ()),
                          (torch.ops.autotune.gemm_a8w8_blockscale_out.default,
                           (torch.empty((48, 512), dtype=torch.bfloat16, device="meta"),))):
            result = torch.library.opcheck(op, args + extra)
            self.assertEqual(set(result.values()), {"SUCCESS"}, result)

    def test_compile(self):
        """torch.compile(fullgraph=True) traces the module call, a Runtime's call and out=, with a
        dynamic M, without a graph break (the aot_eager backend: on meta tensors, no GPU)."""
        torch._dynamo.reset()
        rt = autotune.Runtime(configs_dir=CONFIGS)

        def f(a, a_scale, b, b_scale):
            c = autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale)
            d = rt.gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=torch.empty_like(c))
            return c.float() + d.float()

        cf = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
        for m in (64, 33):
            got = cf(*meta_operands(m, 1024, 512))
            self.assertEqual((tuple(got.shape), got.dtype), ((m, 1024), torch.float32))
        # a wrong argument fails the trace, torch's error carrying the fake implementation's message
        bad = meta_operands(64, 1024, 512)[:3] + (torch.empty((3, 4), device="meta"),)
        with self.assertRaisesRegex(Exception, r"b_scale must have shape \(8, 4\)"):
            torch.compile(lambda *x: autotune.gemm_a8w8_blockscale(*x), fullgraph=True, backend="aot_eager")(*bad)
        rt.close()

    def test_quick_check(self):
        """The launch path's quick check accepts what the full check accepts, and raises the full
        check's error for everything else."""
        quick = self.ops.check
        full = autotune.check_gemm_a8w8_blockscale

        def args(m=64, n=1024, k=1024, **change):
            d = dict(a=CudaLike((m, k), "torch.float8_e4m3fn"), a_scale=CudaLike((m, k // 128), "torch.float32"),
                     b=CudaLike((n, k), "torch.float8_e4m3fn"),
                     b_scale=CudaLike(((n + 127) // 128, k // 128), "torch.float32"),
                     out=CudaLike((m, n), "torch.bfloat16"))
            d.update(change)
            return d

        for shape in ((64, 1024, 1024), (1, 8, 128), (5, 1032, 384)):
            self.assertEqual(quick(**args(*shape)), shape + (0,))
            self.assertEqual(quick(**dict(args(*shape), out=None)), shape + (0,))
        on1 = {k: CudaLike(v.shape, str(v.dtype), device=Device("cuda", 1)) for k, v in args().items()}
        self.assertEqual(quick(**on1), (64, 1024, 1024, 1))
        cases = [
            dict(a=CudaLike((64, 1024), "torch.float16")),
            dict(b=CudaLike((1024, 1024), "torch.float8_e5m2")),
            dict(a_scale=CudaLike((64, 8), "torch.bfloat16")),
            dict(out=CudaLike((64, 1024), "torch.float32")),
            dict(b=CudaLike((1024, 1024), "torch.float8_e4m3fn", device=Device("cpu"))),
            dict(b_scale=CudaLike((8, 8), "torch.float32", device=Device("cuda", 1))),
            dict(out=CudaLike((64, 1024), "torch.bfloat16", device=Device("cuda", 1))),
            dict(b=CudaLike((1024, 1024), "torch.float8_e4m3fn", contiguous=False)),
            dict(out=CudaLike((64, 1024), "torch.bfloat16", contiguous=False)),
            dict(a_scale=CudaLike((64, 7), "torch.float32")),
            dict(a_scale=CudaLike((64, 8, 1), "torch.float32")),
            dict(b=CudaLike((1024, 512), "torch.float8_e4m3fn")),
            dict(out=CudaLike((64, 1000), "torch.bfloat16")),
            dict(a=CudaLike((64, 1024), "torch.float8_e4m3fn", ptr=(1 << 20) + 8)),
            dict(b=CudaLike((1024, 1024), "torch.float8_e4m3fn", ptr=(1 << 20) + 1)),
            dict(out=CudaLike((64, 1024), "torch.bfloat16", ptr=(1 << 20) + 2)),
            dict(b_scale=CudaLike((8, 8), "torch.float32", ptr=(1 << 20) + 2)),
            dict(a_scale=CudaLike((64, 8), "torch.float32", ptr=(1 << 20) + 1)),
            dict(a=[[1]]),
            dict(a=CudaLike((0, 1024), "torch.float8_e4m3fn"), a_scale=CudaLike((0, 8), "torch.float32"),
                 out=CudaLike((0, 1024), "torch.bfloat16")),
        ]
        for i, change in enumerate(cases):
            with self.subTest(case=i, change=sorted(change)):
                a = args(**change)
                with self.assertRaises(ValueError) as want:
                    full(**a)
                with self.assertRaisesRegex(ValueError, "^" + re.escape(str(want.exception)) + "$"):
                    quick(**a)
        for k in (1000, 64, 0):
            a = args(k=k)
            with self.assertRaises(ValueError) as want:
                full(**a)
            with self.assertRaisesRegex(ValueError, re.escape(str(want.exception))):
                quick(**a)
        for n in (1020, 0):
            a = args(n=n)
            with self.assertRaises(ValueError) as want:
                full(**a)
            with self.assertRaisesRegex(ValueError, re.escape(str(want.exception))):
                quick(**a)


if __name__ == "__main__":
    unittest.main()

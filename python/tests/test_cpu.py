"""test_cpu.py: the Python package without a GPU (the unit suite runs it with PYTHONPATH=python and
AUTOTUNE_LIBRARY=the build's libautotune): import, select with a named device against the committed
configs, argument errors naming the argument (the package's own checks on tensors, with stand-ins
for torch tensors, and the library's on raw pointers), and a clear error when the library is
missing."""
import os
import subprocess
import sys
import unittest

import autotune

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
        self.assertTrue(s.path.endswith("sm90-GEMM-A8W8_BLOCKSCALE-N=1024-K=1024.json"))
        self.assertIsInstance(s.params["BLOCK_M"], int)
        self.assertTrue(s.kernel.startswith("gemm_a8w8_blockscale_"))
        # an (N, K) without a file: the tag's default file; beyond the tuned M: any
        self.assertEqual(self.rt.select(OP, 100000, 7168, 2048, device="sm90").source, "default_file")
        self.assertEqual(self.rt.select(OP, 100000, 7168, 2048, device="sm90").bucket, "any")

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

    def test_library_missing(self):
        env = dict(os.environ, AUTOTUNE_LIBRARY="/nonexistent/libautotune.so.0")
        r = subprocess.run([sys.executable, "-c", "import autotune; autotune.select('x', 1, 8, 128, 'sm90')"], env=env,
                           capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryNotFound", r.stderr)
        self.assertIn("AUTOTUNE_LIBRARY", r.stderr)


if __name__ == "__main__":
    unittest.main()

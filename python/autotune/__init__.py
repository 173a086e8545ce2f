"""autotune: tuned CUDA kernels from Python, through libautotune (docs/runtime.md, "Python").

    import autotune
    rt = autotune.Runtime(configs_dir="configs")           # and/or db_path="tuned/autotune.db"
    sel = rt.select("gemm_a8w8_blockscale", 64, 4096, 1024, device="sm90")   # no GPU needed
    c = rt.gemm_a8w8_blockscale(a, a_scale, b, b_scale)    # torch tensors on a CUDA device
    rt.gemm_a8w8_blockscale_ptr(a, a_scale, b, b_scale, c, m, n, k, stream)  # raw device pointers

torch is imported only by the tensor call. The library is found as autotune._lib says
($AUTOTUNE_LIBRARY, pkg-config, the loader's path). Argument errors raise ValueError naming the
argument; failures of CUDA, compiling or I/O raise RuntimeError with the library's message."""
import json
import os
from collections import namedtuple

from . import _lib
from ._lib import LibraryNotFound

__all__ = ["Runtime", "Selection", "LibraryNotFound", "select", "gemm_a8w8_blockscale", "library_path"]
__version__ = "0.1.0"

OP_GEMM_A8W8_BLOCKSCALE = "gemm_a8w8_blockscale"
STATUS_OK, STATUS_ERROR, STATUS_INVALID = 0, 1, 2

# What at_runtime_select answers; params is a dict of the kernel's parameters.
Selection = namedtuple("Selection", "source path bucket variant params kernel")


def library_path():
    """The file of the libautotune this process loaded (loading it if needed)."""
    return _lib.load().autotune_path


def _enc(s):
    return None if s is None else os.fsencode(s)


def _raise(status, lib):
    msg = lib.at_runtime_last_error().decode(errors="replace")
    raise (ValueError if status == STATUS_INVALID else RuntimeError)(msg)


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{name} must be an int (got {type(v).__name__})")
    if v < 1:
        raise ValueError(f"{name} must be positive (got {v})")
    return v


class Runtime:
    """One at_runtime: open once, then select and launch from any thread. The options are those of
    at_runtime_options; None leaves each to the library's default."""

    def __init__(self, configs_dir=None, db_path=None, tag=None, templates_dir=None, cache_dir=None):
        self._lib = _lib.load()
        # kept alive for as long as the C strings may be read
        self._opts = _lib.Options(_enc(db_path), _enc(configs_dir), _enc(tag), _enc(templates_dir), _enc(cache_dir))
        h = _lib.ctypes.c_void_p()
        status = self._lib.at_runtime_open(_lib.ctypes.byref(self._opts), _lib.ctypes.byref(h))
        if status != STATUS_OK:
            _raise(status, self._lib)
        self._h = h

    def close(self):
        if getattr(self, "_h", None):
            self._lib.at_runtime_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._h:
            raise ValueError("the runtime is closed")
        return self._h

    def select(self, op, M, N, K, device=None):
        """The config a launch of op on (M, N, K) would use. device: "sm90" or a product name
        ("NVIDIA_H100_80GB_HBM3"); None: the device of this thread's current CUDA context."""
        if not isinstance(op, str):
            raise ValueError(f"op must be a str (got {type(op).__name__})")
        if device is not None and not isinstance(device, str):
            raise ValueError(f"device must be a str or None (got {type(device).__name__})")
        M, N, K = _positive_int("M", M), _positive_int("N", N), _positive_int("K", K)
        out = _lib.CSelection()
        status = self._lib.at_runtime_select(self._handle(), op.encode(), M, N, K, _enc(device),
                                             _lib.ctypes.byref(out))
        if status != STATUS_OK:
            _raise(status, self._lib)
        d = lambda b: b.decode() if b is not None else None
        return Selection(d(out.source), d(out.path), d(out.bucket), d(out.variant), json.loads(out.params or b"{}"),
                         d(out.kernel))

    def gemm_a8w8_blockscale_ptr(self, a, a_scale, b, b_scale, c, m, n, k, stream=0):
        """C = (A * As)(B * Bs)^T on raw device pointers (ints) and a stream handle (int; 0 is the
        default stream), on the current CUDA context. Layouts: autotune.h. Asynchronous."""
        for name, v in (("a", a), ("a_scale", a_scale), ("b", b), ("b_scale", b_scale), ("c", c),
                        ("stream", stream)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be a device address as a non-negative int (got {v!r})")
        for name, v in (("m", m), ("n", n), ("k", k)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{name} must be an int (got {type(v).__name__})")
        status = self._lib.at_gemm_a8w8_blockscale(self._handle(), a, a_scale, b, b_scale, c, m, n, k, stream or None)
        if status != STATUS_OK:
            _raise(status, self._lib)

    def gemm_a8w8_blockscale(self, a, a_scale, b, b_scale, out=None):
        """The GEMM on torch tensors: a (M, K) and b (N, K) float8_e4m3fn, a_scale (M, K/128) and
        b_scale (ceil(N/128), K/128) float32, all row-major and on one CUDA device; returns out, a
        (M, N) bfloat16 tensor (made when None). Runs on the current torch stream of that device."""
        m, n, k = check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out)
        import torch
        if out is None:
            out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        with torch.cuda.device(a.device):
            stream = torch.cuda.current_stream(a.device).cuda_stream
            self.gemm_a8w8_blockscale_ptr(a.data_ptr(), a_scale.data_ptr(), b.data_ptr(), b_scale.data_ptr(),
                                          out.data_ptr(), m, n, k, stream)
        return out


def check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=None):
    """The tensor rules of the GEMM (docs/operators.md), each failure a ValueError naming the
    argument; returns (M, N, K). Reads only dtype, device, shape, is_contiguous() and data_ptr(), so
    it needs no GPU."""
    args = (("a", a, "torch.float8_e4m3fn"), ("a_scale", a_scale, "torch.float32"), ("b", b, "torch.float8_e4m3fn"),
            ("b_scale", b_scale, "torch.float32"))
    if out is not None:
        args += (("out", out, "torch.bfloat16"),)
    for name, t, dtype in args:
        if not all(hasattr(t, x) for x in ("dtype", "device", "shape", "is_contiguous", "data_ptr")):
            raise ValueError(f"{name} must be a torch tensor (got {type(t).__name__})")
        if str(t.dtype) != dtype:
            raise ValueError(f"{name} must be {dtype} (got {t.dtype})")
        if getattr(t.device, "type", None) != "cuda":
            raise ValueError(f"{name} must be on a CUDA device (got {t.device})")
        if t.device != a.device:
            raise ValueError(f"{name} is on {t.device}, a on {a.device}: all must be on one device")
        if len(t.shape) != 2:
            raise ValueError(f"{name} must be 2-D (got shape {tuple(t.shape)})")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major)")
    m, k = a.shape
    n = b.shape[0]
    if m < 1:
        raise ValueError(f"a must have at least one row (got shape {tuple(a.shape)})")
    if k < 128 or k % 128:
        raise ValueError(f"a and b: K must be a positive multiple of 128 (got {k})")
    if n < 8 or n % 8:
        raise ValueError(f"b: N must be a positive multiple of 8 (got {n})")
    want = {"a_scale": (m, k // 128), "b": (n, k), "b_scale": ((n + 127) // 128, k // 128), "out": (m, n)}
    for name, t, _ in args[1:]:
        if tuple(t.shape) != want[name]:
            raise ValueError(f"{name} must have shape {want[name]} for M={m}, N={n}, K={k} (got {tuple(t.shape)})")
    for name, t, _ in args:
        align = 4 if name.endswith("_scale") else 16
        if t.data_ptr() % align:
            raise ValueError(f"{name} must be {align}-byte aligned (its data starts at {t.data_ptr():#x})")
    return m, n, k


_default = None


def _default_runtime():
    """The module's runtime, opened on first use from $AUTOTUNE_CONFIGS and $AUTOTUNE_DB."""
    global _default
    if _default is None:
        _default = Runtime(configs_dir=os.environ.get("AUTOTUNE_CONFIGS") or None,
                           db_path=os.environ.get("AUTOTUNE_DB") or None)
    return _default


def select(op, M, N, K, device=None):
    """Runtime.select on the module's runtime ($AUTOTUNE_CONFIGS, $AUTOTUNE_DB)."""
    return _default_runtime().select(op, M, N, K, device)


def gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=None):
    """Runtime.gemm_a8w8_blockscale on the module's runtime ($AUTOTUNE_CONFIGS, $AUTOTUNE_DB)."""
    return _default_runtime().gemm_a8w8_blockscale(a, a_scale, b, b_scale, out)

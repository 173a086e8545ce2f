"""autotune: tuned CUDA kernels from Python, through libautotune (docs/runtime.md, "Python").

    import autotune
    rt = autotune.Runtime(configs_dir="configs")           # and/or db_path="tuned/autotune.db"
    sel = rt.select("gemm_a8w8_blockscale", 64, 4096, 1024, device="sm90")   # no GPU needed
    c = rt.gemm_a8w8_blockscale(a, a_scale, b, b_scale)    # torch tensors on a CUDA device
    rt.gemm_a8w8_blockscale_ptr(a, a_scale, b, b_scale, c, m, n, k, stream)  # raw device pointers

The tensor call is the torch op torch.ops.autotune.gemm_a8w8_blockscale (autotune._torch), so
torch.compile(fullgraph=True) and CUDA graph capture see one op. torch is imported only by the tensor
call (or at once, when it was imported before autotune). The library is found as autotune._lib says
($AUTOTUNE_LIBRARY, pkg-config, the loader's path). Argument errors raise ValueError naming the
argument; failures of CUDA, compiling or I/O raise RuntimeError with the library's message."""
import itertools
import json
import os
import sys
import weakref
from collections import namedtuple

from . import _lib
from ._lib import LibraryNotFound

__all__ = ["Runtime", "Selection", "LibraryNotFound", "select", "gemm_a8w8_blockscale", "check_gemm_a8w8_blockscale",
           "torch_ops", "library_path"]
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


def _raise(status, lib, msg=None):
    if msg is None:
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
    at_runtime_options; None leaves each to the library's default. pdl: "off" or "on"
    (programmatic dependent launch, docs/runtime.md); None takes $AUTOTUNE_PDL, else "on". tail: "off"
    or "on" (the tail launch of a partial last wave, docs/runtime.md); None takes $AUTOTUNE_TAIL, else
    "on"."""

    def __init__(self, configs_dir=None, db_path=None, tag=None, templates_dir=None, cache_dir=None, pdl=None,
                 tail=None):
        self._lib = _lib.load()
        modes = {None: 0, "off": 1, "on": 2}
        if not isinstance(pdl, (str, type(None))) or pdl not in modes:
            raise ValueError(f"pdl must be None, 'off' or 'on' (got {pdl!r})")
        if not isinstance(tail, (str, type(None))) or tail not in modes:
            raise ValueError(f"tail must be None, 'off' or 'on' (got {tail!r})")
        # kept alive for as long as the C strings may be read
        self._opts = _lib.Options(_enc(db_path), _enc(configs_dir), _enc(tag), _enc(templates_dir), _enc(cache_dir),
                                  modes[pdl], modes[tail])
        h = _lib.ctypes.c_void_p()
        status = self._lib.at_runtime_open(_lib.ctypes.byref(self._opts), _lib.ctypes.byref(h))
        if status != STATUS_OK:
            _raise(status, self._lib)
        self._h = h
        # the key by which the torch ops name this runtime (an int in their schema)
        self._key = next(_keys)
        _runtimes[self._key] = weakref.ref(self)

    def close(self):
        if _runtimes is not None:  # None while the interpreter shuts down
            _runtimes.pop(getattr(self, "_key", None), None)
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

    def prepare(self, op, N, K, m_max):
        """Compiles (or takes from the compile cache) and loads every kernel that calls of op on
        (N, K) with M from 1 to m_max (at most 2**20) would launch, on the current CUDA context
        (torch's, once it has used the device): calls at those M then never wait for a compile.
        Returns how many kernels are ready. Raises when a config's kernel cannot be made (after
        making the others)."""
        if not isinstance(op, str):
            raise ValueError(f"op must be a str (got {type(op).__name__})")
        N, K, m_max = _positive_int("N", N), _positive_int("K", K), _positive_int("m_max", m_max)
        ready = _lib.ctypes.c_int(0)
        status = self._lib.at_runtime_prepare(self._handle(), op.encode(), N, K, m_max, _lib.ctypes.byref(ready))
        if status != STATUS_OK:
            _raise(status, self._lib)
        return ready.value

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
        (M, N) bfloat16 tensor (made by torch's allocator when None). Runs on the current torch
        stream of that device, through the torch op torch.ops.autotune.gemm_a8w8_blockscale (or
        ..._out when out is given): torch.compile and CUDA graph capture see one op."""
        return _tensor_gemm(self._key, a, a_scale, b, b_scale, out)


# The open runtimes by key, for the torch ops (key 0: the module's runtime, opened on first use).
_keys = itertools.count(1)
_runtimes = {}


def _runtime_of(key):
    if key == 0:
        return _default_runtime()
    ref = _runtimes.get(key)
    rt = ref() if ref is not None else None
    if rt is None:
        raise ValueError(f"the runtime is closed (key {key} of the torch op)")
    return rt


_torch_ops = None


def torch_ops():
    """The module of the torch ops (autotune._torch), importing torch and registering the ops
    torch.ops.autotune.gemm_a8w8_blockscale and ..._out on first use. Importing autotune when torch
    is already imported registers them at once."""
    global _torch_ops
    if _torch_ops is None:
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise ImportError("the tensor call needs torch (pip install torch); without it, use "
                              "Runtime.gemm_a8w8_blockscale_ptr on device pointers") from e
        from . import _torch
        _torch_ops = _torch
    return _torch_ops


def _tensor_gemm(key, a, a_scale, b, b_scale, out):
    ops = _torch_ops or torch_ops()
    if out is None:
        return ops.gemm(a, a_scale, b, b_scale, key)
    ops.gemm_out(a, a_scale, b, b_scale, out, key)
    return out


_DTYPES = {"a": "torch.float8_e4m3fn", "a_scale": "torch.float32", "b": "torch.float8_e4m3fn",
           "b_scale": "torch.float32", "out": "torch.bfloat16"}


def check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out=None, fake=False):
    """The tensor rules of the GEMM (docs/operators.md), each failure a ValueError naming the
    argument; returns (M, N, K). Reads only dtype, device, shape, is_contiguous() and data_ptr(), so
    it needs no GPU. fake: tensors without data (torch's FakeTensor while tracing, or meta tensors):
    the alignment is not checked, and the meta device is accepted."""
    args = (("a", a), ("a_scale", a_scale), ("b", b), ("b_scale", b_scale))
    if out is not None:
        args += (("out", out),)
    for name, t in args:
        if not all(hasattr(t, x) for x in ("dtype", "device", "shape", "is_contiguous", "data_ptr")):
            raise ValueError(f"{name} must be a torch tensor (got {type(t).__name__})")
        if str(t.dtype) != _DTYPES[name]:
            raise ValueError(f"{name} must be {_DTYPES[name]} (got {t.dtype})")
        kind = getattr(t.device, "type", None)
        if kind != "cuda" and not (fake and kind == "meta"):
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
    for name, t in args[1:]:
        if tuple(t.shape) != want[name]:
            raise ValueError(f"{name} must have shape {want[name]} for M={m}, N={n}, K={k} (got {tuple(t.shape)})")
    if fake:
        return m, n, k
    for name, t in args:
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
    """Runtime.gemm_a8w8_blockscale on the module's runtime ($AUTOTUNE_CONFIGS, $AUTOTUNE_DB), opened
    by the op's first launch: torch.ops.autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale), or
    ..._out(a, a_scale, b, b_scale, out) when out is given (returned)."""
    return _tensor_gemm(0, a, a_scale, b, b_scale, out)


# torch already imported: register the ops now, so that torch.compile never traces their import.
if "torch" in sys.modules:
    torch_ops()

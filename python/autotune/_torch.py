"""_torch.py: the GEMM as torch custom ops, imported (with torch) by the first tensor call.

Two ops in the namespace `autotune` (torch.library, with fake implementations so that torch.compile
traces them and FakeTensor / meta tensors get the output's shape and dtype without a GPU):

    torch.ops.autotune.gemm_a8w8_blockscale(a, a_scale, b, b_scale, runtime=0) -> Tensor
    torch.ops.autotune.gemm_a8w8_blockscale_out(a, a_scale, b, b_scale, out, runtime=0) -> ()   # mutates out

`runtime` is the key of an autotune.Runtime (0: the module's runtime, opened on first use); see
autotune._runtime_of. The CUDA implementation checks the tensors (ValueError naming the argument),
takes the output from torch's allocator (the caching allocator, or the graph's pool while a CUDA graph
is captured) and launches on torch's current stream of the tensors' device, asynchronously; it never
synchronizes, so it can be captured. The CPU implementation only checks, and so says which argument
is not on a CUDA device."""
import torch

from . import STATUS_OK, _raise, _runtime_of, check_gemm_a8w8_blockscale

NAMESPACE = "autotune"
GEMM = "gemm_a8w8_blockscale"
GEMM_OUT = "gemm_a8w8_blockscale_out"

# A fragment: the namespace's ops are defined here, and nothing else of it is claimed.
_library = torch.library.Library(NAMESPACE, "FRAGMENT")
_library.define(f"{GEMM}(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, int runtime=0) -> Tensor")
_library.define(f"{GEMM_OUT}(Tensor a, Tensor a_scale, Tensor b, Tensor b_scale, Tensor(a!) out, "
                "int runtime=0) -> ()")

_BF16, _F8, _F32 = torch.bfloat16, torch.float8_e4m3fn, torch.float32
# The raw cudaStream_t of the current stream of a device: the same value as
# torch.cuda.current_stream(device).cuda_stream, without making a Stream object (what inductor's
# generated code calls). Older torch: through the public call.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)
_current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def check(a, a_scale, b, b_scale, out=None):
    """check_gemm_a8w8_blockscale's rules for real tensors in a few attribute reads (the launch
    path); where any rule fails, the full check, which raises naming the argument and the rule.
    Returns (M, N, K, the CUDA device's index)."""
    try:
        m, k = a.shape
        n, kb = b.shape
        g = k >> 7
        d = a.get_device()
        ok = (a.dtype is _F8 and b.dtype is _F8 and a_scale.dtype is _F32 and b_scale.dtype is _F32
              and a.is_cuda and b.is_cuda and a_scale.is_cuda and b_scale.is_cuda and d >= 0
              and b.get_device() == d and a_scale.get_device() == d and b_scale.get_device() == d
              and m >= 1 and kb == k and k >= 128 and not k & 127 and n >= 8 and not n & 7
              and a_scale.shape == (m, g) and b_scale.shape == ((n + 127) >> 7, g)
              and a.is_contiguous() and b.is_contiguous() and a_scale.is_contiguous() and b_scale.is_contiguous()
              and not (a.data_ptr() | b.data_ptr()) & 15 and not (a_scale.data_ptr() | b_scale.data_ptr()) & 3)
        if ok and out is not None:
            ok = (out.dtype is _BF16 and out.is_cuda and out.get_device() == d and out.shape == (m, n)
                  and out.is_contiguous() and not out.data_ptr() & 15)
    except Exception:
        ok = False
    if not ok:
        m, n, k = check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out)
        d = a.get_device()
    return m, n, k, d


def _launch(runtime, a, a_scale, b, b_scale, out, m, n, k, index):
    rt = _runtime_of(runtime)
    h = rt._handle()
    lib = rt._lib
    if _current_device() != index:
        with torch.cuda.device(index):
            return _launch(runtime, a, a_scale, b, b_scale, out, m, n, k, index)
    args = (h, a.data_ptr(), a_scale.data_ptr(), b.data_ptr(), b_scale.data_ptr(), out.data_ptr(), m, n, k,
            _raw_stream(index) or None)
    status = lib.at_gemm_a8w8_blockscale(*args)
    if status != STATUS_OK:
        msg = lib.at_runtime_last_error().decode(errors="replace")
        if "no current CUDA context" not in msg:
            _raise(status, lib, msg)
        # A thread on which the CUDA runtime has not run yet has no current context: a runtime call
        # that needs one makes the device's primary context (torch's) current; then launch again.
        torch.cuda.synchronize(index)
        status = lib.at_gemm_a8w8_blockscale(*args)
        if status != STATUS_OK:
            _raise(status, lib)


def _gemm_cuda(a, a_scale, b, b_scale, runtime=0):
    m, n, k, d = check(a, a_scale, b, b_scale)
    out = torch.empty((m, n), dtype=_BF16, device=a.device)
    _launch(runtime, a, a_scale, b, b_scale, out, m, n, k, d)
    return out


def _gemm_out_cuda(a, a_scale, b, b_scale, out, runtime=0):
    m, n, k, d = check(a, a_scale, b, b_scale, out)
    _launch(runtime, a, a_scale, b, b_scale, out, m, n, k, d)


def _gemm_cpu(a, a_scale, b, b_scale, runtime=0):
    check_gemm_a8w8_blockscale(a, a_scale, b, b_scale)  # raises: a CPU tensor is never right
    raise ValueError("a must be on a CUDA device")


def _gemm_out_cpu(a, a_scale, b, b_scale, out, runtime=0):
    check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out)
    raise ValueError("a must be on a CUDA device")


def _gemm_fake(a, a_scale, b, b_scale, runtime=0):
    m, n, _ = check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, fake=True)
    return a.new_empty((m, n), dtype=_BF16)


def _gemm_out_fake(a, a_scale, b, b_scale, out, runtime=0):
    check_gemm_a8w8_blockscale(a, a_scale, b, b_scale, out, fake=True)


_library.impl(GEMM, _gemm_cuda, "CUDA")
_library.impl(GEMM_OUT, _gemm_out_cuda, "CUDA")
_library.impl(GEMM, _gemm_cpu, "CPU")
_library.impl(GEMM_OUT, _gemm_out_cpu, "CPU")
# torch < 2.4 calls it impl_abstract
_register_fake = getattr(torch.library, "register_fake", None) or torch.library.impl_abstract
_register_fake(f"{NAMESPACE}::{GEMM}", _gemm_fake, lib=_library)
_register_fake(f"{NAMESPACE}::{GEMM_OUT}", _gemm_out_fake, lib=_library)

# The overloads, called directly: an OpOverload call skips the packet's overload resolution.
gemm = getattr(torch.ops, NAMESPACE).gemm_a8w8_blockscale.default
gemm_out = getattr(torch.ops, NAMESPACE).gemm_a8w8_blockscale_out.default

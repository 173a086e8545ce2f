#!/usr/bin/env python3
"""nvrtc_phases.py: where NVRTC's time goes for one candidate of each family (no GPU needed):
parsing the template alone, parsing + instantiation + NVVM to PTX (compute_90a), and the whole
compile to a cubin (sm_90a, PTX + ptxas); the median of 3 compiles each, one thread."""
import ctypes, time, sys
lib = ctypes.CDLL('/usr/local/cuda/lib64/libnvrtc.so')
import os
tdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'templates') + '/'
def compile_once(src, name_expr, arch, extra=()):
    hdrs = ['at_ptx.cuh','at_sm90.cuh','at_wgmma_e4m3.cuh','gemm_a8w8_blockscale_args.h','at_support.cuh']
    texts = [open(tdir+h).read().encode() for h in hdrs]
    prog = ctypes.c_void_p()
    H = (ctypes.c_char_p*len(hdrs))(*[h.encode() for h in hdrs]); T = (ctypes.c_char_p*len(hdrs))(*texts)
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b'k.cu', len(hdrs), T, H) == 0
    if name_expr: assert lib.nvrtcAddNameExpression(prog, name_expr.encode()) == 0
    opts = [f'--gpu-architecture={arch}'.encode(), b'-std=c++17', b'-DAUTOTUNE_NVRTC=1'] + [e.encode() for e in extra]
    O = (ctypes.c_char_p*len(opts))(*opts)
    t = time.time(); rc = lib.nvrtcCompileProgram(prog, len(opts), O); dt = time.time() - t
    if rc != 0:
        n = ctypes.c_size_t(); lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)); b = ctypes.create_string_buffer(n.value); lib.nvrtcGetProgramLog(prog, b); print(b.value.decode()[:2000])
    return dt
sm90 = open(tdir+'gemm_a8w8_blockscale_sm90.cuh').read()
mma = open(tdir+'gemm_a8w8_blockscale_mma.cuh').read()
def med(f, n=3):
    v = sorted(f() for _ in range(n)); return v[n//2]
e1 = 'gemm_a8w8_blockscale_sm90<128, 128, 6, 8, 1, 0, 2, 1, 2>'
print('sm90: parse only (no instantiation), compute_90a  %.0f ms' % (1000*med(lambda: compile_once(sm90, None, 'compute_90a'))))
print('sm90: to PTX (compute_90a)                       %.0f ms' % (1000*med(lambda: compile_once(sm90, '&'+e1, 'compute_90a'))))
print('sm90: to cubin (sm_90a)                          %.0f ms' % (1000*med(lambda: compile_once(sm90, '&'+e1, 'sm_90a'))))
e2 = 'gemm_a8w8_blockscale_mma<64, 128, 128, 2, 2, 3, 8, 1, 0>'
print('mma: parse only, compute_90a                     %.0f ms' % (1000*med(lambda: compile_once(mma, None, 'compute_90a'))))
print('mma: to PTX                                      %.0f ms' % (1000*med(lambda: compile_once(mma, '&'+e2, 'compute_90a'))))
print('mma: to cubin                                    %.0f ms' % (1000*med(lambda: compile_once(mma, '&'+e2, 'sm_90a'))))

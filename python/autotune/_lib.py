"""_lib.py: finding and loading libautotune with ctypes, and the C declarations of autotune.h.

Where the library is looked for, first match wins:
  1. $AUTOTUNE_LIBRARY: the library file, or a directory holding it (an install's lib directory or
     a build directory);
  2. pkg-config's libdir of `autotune` (an installed prefix on PKG_CONFIG_PATH);
  3. the dynamic loader's own search (ldconfig's cache, LD_LIBRARY_PATH).
The SONAME is libautotune.so.0: that file is tried first in a directory, then libautotune.so."""
import ctypes
import os
import subprocess

SONAMES = ("libautotune.so.0", "libautotune.so")


class LibraryNotFound(OSError):
    pass


class Options(ctypes.Structure):
    _fields_ = [("db_path", ctypes.c_char_p), ("configs_dir", ctypes.c_char_p), ("tag", ctypes.c_char_p),
                ("templates_dir", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p), ("pdl", ctypes.c_int),
                ("tail", ctypes.c_int)]


class CSelection(ctypes.Structure):
    _fields_ = [("source", ctypes.c_char_p), ("path", ctypes.c_char_p), ("bucket", ctypes.c_char_p),
                ("variant", ctypes.c_char_p), ("params", ctypes.c_char_p), ("kernel", ctypes.c_char_p)]


def _candidates():
    env = os.environ.get("AUTOTUNE_LIBRARY")
    if env:
        if os.path.isdir(env):
            return [os.path.join(env, n) for n in SONAMES], "$AUTOTUNE_LIBRARY=" + env
        return [env], "$AUTOTUNE_LIBRARY=" + env
    tried = []
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "autotune"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        if libdir:
            tried += [os.path.join(libdir, n) for n in SONAMES]
    except (OSError, subprocess.SubprocessError):
        pass
    return tried + list(SONAMES), "pkg-config and the loader's path"


def _declare(lib):
    p = ctypes.POINTER
    lib.at_runtime_open.argtypes = [p(Options), p(ctypes.c_void_p)]
    lib.at_runtime_open.restype = ctypes.c_int
    lib.at_runtime_close.argtypes = [ctypes.c_void_p]
    lib.at_runtime_close.restype = None
    lib.at_runtime_last_error.argtypes = []
    lib.at_runtime_last_error.restype = ctypes.c_char_p
    lib.at_runtime_select.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                                      ctypes.c_int64, ctypes.c_char_p, p(CSelection)]
    lib.at_runtime_select.restype = ctypes.c_int
    lib.at_runtime_prepare.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                                       ctypes.c_int64, p(ctypes.c_int)]
    lib.at_runtime_prepare.restype = ctypes.c_int
    lib.at_gemm_a8w8_blockscale.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 5 + [ctypes.c_int64] * 3 + [
        ctypes.c_void_p]
    lib.at_gemm_a8w8_blockscale.restype = ctypes.c_int
    return lib


_lib = None


def load():
    """The loaded library (once per process). Raises LibraryNotFound saying where it looked."""
    global _lib
    if _lib is not None:
        return _lib
    paths, where = _candidates()
    errors = []
    for path in paths:
        try:
            _lib = _declare(ctypes.CDLL(path))
            _lib.autotune_path = path
            return _lib
        except OSError as e:
            errors.append(str(e))
    raise LibraryNotFound("libautotune not found (looked in " + where + "): set AUTOTUNE_LIBRARY to the library "
                          "or its directory (e.g. build/ or <prefix>/lib/x86_64-linux-gnu), or put the install's "
                          "pkgconfig directory on PKG_CONFIG_PATH; tried: " + "; ".join(errors))

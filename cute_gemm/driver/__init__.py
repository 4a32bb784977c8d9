"""The driver layer: cuda.bindings' driver module, checked calls, cuInit, the primary
contexts and the relaxed capture mode. launch.py (modules, launches, memory), pool.py
(stream-ordered scratch) and workspace.py (stream-K workspaces) are its users.

Only this module imports cuda.bindings' driver (compile.py imports NVRTC's, launch.py
cuda.core's array view); every call is checked, and a failure raises CudaError naming the
call, the kernel and the CUDA error. Users call driver.bindings() through this module, so a
stub driver put in its place (tests/stub_driver.py) serves them all.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from ..base.errors import CudaError, NoDeviceError

lock = threading.RLock()     # guards the contexts, loaded modules and scratch pools


@functools.lru_cache(maxsize=None)
def bindings():
    """The cuda.bindings.driver module (imported on first use)."""
    try:
        from cuda.bindings import driver
    except ImportError as e:  # pragma: no cover
        raise NoDeviceError("cuda-python (cuda.bindings) is not installed") from e
    return driver


def check(result, what: str, kernel: str | None = None):
    """cuda.bindings returns (err, *values); raise CudaError unless err is CUDA_SUCCESS."""
    drv = bindings()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, msg = drv.cuGetErrorString(err)
        name = name.decode() if name else str(err)
        msg = msg.decode() if msg else ""
        where = f" (kernel {kernel!r})" if kernel else ""
        raise CudaError(f"{what}{where} failed: {name}: {msg}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


_init_done = False


def init() -> None:
    """cuInit once; NoDeviceError, saying what still works, when there is no driver or device."""
    global _init_done
    if _init_done:
        return
    drv = bindings()
    try:
        (err,) = drv.cuInit(0)
    except Exception as e:  # libcuda.so missing: cuda.bindings raises on first use
        raise NoDeviceError(
            f"no CUDA driver ({e}); compile-only use still works, e.g. "
            "cute_gemm.compile_kernel(name, arch='sm_90') or `cute-gemm compile --arch sm_90`") from None
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        raise NoDeviceError(
            f"no usable CUDA driver or device (cuInit: {name.decode() if name else err}); "
            "compile-only use still works, e.g. `cute-gemm compile --arch sm_90`")
    count = check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
    if count == 0:
        raise NoDeviceError("the CUDA driver reports no device; compile-only use still works "
                            "(`cute-gemm compile --arch sm_90`)")
    _init_done = True


def available() -> bool:
    """True when a CUDA driver and at least one device are present."""
    try:
        init()
        return True
    except NoDeviceError:
        return False


_contexts: dict[int, object] = {}
_context_ids: dict[int, int] = {}     # the same contexts' handles as integers


def ensure_context(ordinal: int):
    """Make the primary context of `ordinal` current (shared with CuPy/PyTorch) and return it."""
    drv = bindings()
    ctx = _contexts.get(ordinal)
    if ctx is not None:                 # every hot call: one query, no check
        err, cur = drv.cuCtxGetCurrent()
        if not err and int(cur) == _context_ids[ordinal]:
            return ctx
    init()
    if ctx is None:
        with lock:
            ctx = _contexts.get(ordinal)
            if ctx is None:
                dev = check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
                ctx = check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
                _context_ids[ordinal] = int(ctx)
                _contexts[ordinal] = ctx
    cur = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(cur) != int(ctx):
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def current_ordinal() -> int:
    """The device of the current context if one is current, else 0."""
    drv = bindings()
    init()
    cur = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(cur) == 0:
        return 0
    return int(check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))


@contextlib.contextmanager
def relaxed():
    """This thread's driver calls in the block run in the relaxed capture mode: a call that
    the global or thread-local mode refuses while a stream captures (a module load, a
    synchronous allocation, an event query) neither fails nor invalidates the capture. For
    calls that touch no captured stream, as cuBLAS does around its own."""
    drv = bindings()
    prev = check(drv.cuThreadExchangeStreamCaptureMode(
        drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuThreadExchangeStreamCaptureMode")
    try:
        yield
    finally:
        drv.cuThreadExchangeStreamCaptureMode(prev)

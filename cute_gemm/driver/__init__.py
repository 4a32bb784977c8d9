"""The driver layer: cuda.bindings' driver module, checked calls, cuInit, the primary contexts
and the relaxed capture mode. Every driver call goes through bindings(), so the tests' stub
driver stands in for all of them."""
from __future__ import annotations

import contextlib
import functools
import threading

from ..base.errors import CudaError, NoDeviceError

lock = threading.RLock()     # guards the contexts, loaded modules and scratch pools
_COMPILE_ONLY = ("; compile-only use still works, e.g. cute_gemm.compile_kernel(name, arch='sm_90') "
                 "or `cute-gemm compile --arch sm_90`")


@functools.lru_cache(maxsize=None)
def bindings():
    """The cuda.bindings.driver module, imported on first use (`import cute_gemm` stays light)."""
    try:
        from cuda.bindings import driver
    except ImportError as e:  # pragma: no cover
        raise NoDeviceError("cuda-python (cuda.bindings) is not installed") from e
    return driver


def _error_name(err) -> str:
    _, name = bindings().cuGetErrorName(err)
    return name.decode() if name else str(err)


def check(result, what: str, kernel: str | None = None):
    """cuda.bindings' (err, *values) as None, the one value or a tuple; CudaError naming the
    call (and kernel) unless err is CUDA_SUCCESS, which is 0: a success is one truth test,
    cheap on the paths that call this per launch."""
    if not isinstance(result, tuple):
        result = (result,)
    err = result[0]
    if err:
        _, msg = bindings().cuGetErrorString(err)
        where = f" (kernel {kernel!r})" if kernel else ""
        raise CudaError(f"{what}{where} failed: {_error_name(err)}: {msg.decode() if msg else ''}")
    return result[1] if len(result) == 2 else (result[1:] or None)


_init_done = False


def init() -> None:
    """cuInit once; NoDeviceError, saying what still works, without a driver or a device."""
    global _init_done
    if _init_done:
        return
    drv = bindings()
    try:
        (err,) = drv.cuInit(0)
    except Exception as e:  # libcuda.so missing: cuda.bindings raises on first use
        raise NoDeviceError(f"no CUDA driver ({e}){_COMPILE_ONLY}") from None
    if err != drv.CUresult.CUDA_SUCCESS:
        raise NoDeviceError(f"no usable CUDA driver or device (cuInit: {_error_name(err)}){_COMPILE_ONLY}")
    if check(drv.cuDeviceGetCount(), "cuDeviceGetCount") == 0:
        raise NoDeviceError(f"the CUDA driver reports no device{_COMPILE_ONLY}")
    _init_done = True


def available() -> bool:
    """True when a CUDA driver and at least one device are present."""
    with contextlib.suppress(NoDeviceError):
        init()
        return True
    return False


_contexts: dict[int, tuple[object, int]] = {}    # ordinal -> (primary context, its handle)


def ensure_context(ordinal: int):
    """Make the primary context of `ordinal` (CuPy's and PyTorch's) current and return it (one
    query when it already is)."""
    drv = bindings()
    known = _contexts.get(ordinal)
    if known is not None:
        err, cur = drv.cuCtxGetCurrent()
        if not err and int(cur) == known[1]:
            return known[0]
    init()
    with lock:
        if ordinal not in _contexts:
            dev = check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
            ctx = check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _contexts[ordinal] = (ctx, int(ctx))
        ctx, handle = _contexts[ordinal]
    if int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")) != handle:
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def current_ordinal() -> int:
    """The device of the current context if one is current, else 0."""
    drv = bindings()
    init()
    current = int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent"))
    return int(check(drv.cuCtxGetDevice(), "cuCtxGetDevice")) if current else 0


@contextlib.contextmanager
def relaxed():
    """This thread's driver calls in the block in the relaxed capture mode, so that a call a
    capture refuses (module load, allocation, event query) neither fails nor ends it; only
    for calls that touch no captured stream, as cuBLAS does."""
    drv = bindings()
    prev = check(drv.cuThreadExchangeStreamCaptureMode(
        drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuThreadExchangeStreamCaptureMode")
    try:
        yield
    finally:
        drv.cuThreadExchangeStreamCaptureMode(prev)

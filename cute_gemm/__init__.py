"""cute_gemm: CUDA GEMM kernels compiled at run time with NVRTC, launched and diffed.

    import numpy as np, cute_gemm
    c = cute_gemm.gemm(a, b)                    # the kernel the selector picks for this GPU
    c = cute_gemm.run("cute_smem", a, b)        # numpy in, numpy out, one named kernel
    report = cute_gemm.cross_check(a, b)        # every kernel vs float64 and each other
"""
from __future__ import annotations

from .api import (clear_caches, compile_kernel, flops, gemm, gemm_choice, resolved_launches, run,
                  wait_for_compiles)
from .select.choice import Choice
from .driver.arrays import SUPPORTED_DTYPES, DeviceArray
from .driver.epilogue import Epilogue
from .base.errors import (AutoTableWarning, CompileError, CudaError, CuteGemmError, DTypeError,
                          HeadersNotFound, InputError, NoDeviceError, NotAnArrayError,
                          NvrtcNotFound, ShapeError, ShapeLimitError, UnknownKernelError)
from .driver import available as gpu_available
from .registry import Kernel, Variant, get as get_kernel, kernels
from . import torch  # noqa: F401  (run()'s autograd route; imports no torch until used)
from .base.version import __version__

import importlib

# imported when first used: a program that only calls run() does not pay for them
_LAZY = {"cross_check": "check", "CheckReport": "check", "bench": "perf.runner"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    return value


__all__: list[str] = [
    "gemm", "gemm_choice", "Choice", "run", "clear_caches", "resolved_launches",
    "wait_for_compiles", "cross_check", "bench", "kernels", "get_kernel", "compile_kernel",
    "flops", "gpu_available", "DeviceArray", "Epilogue", "CheckReport", "Kernel", "Variant",
    "SUPPORTED_DTYPES", "CuteGemmError", "CompileError", "HeadersNotFound", "NvrtcNotFound",
    "CudaError", "NoDeviceError", "InputError", "NotAnArrayError", "ShapeError", "DTypeError",
    "ShapeLimitError", "UnknownKernelError", "AutoTableWarning"]

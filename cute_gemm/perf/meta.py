"""Where a number was made: the device (with its FP32 peak formula), the driver and the
versions of everything that changes a result. Stored in every bench JSON."""
from __future__ import annotations

import sys

import numpy as np

from ..build.compile import nvrtc_version
from ..base.version import __version__
from .stats import peak_formula, peak_tflops


def _dist_version(dist: str) -> str | None:
    try:
        import importlib.metadata as md
        return md.version(dist)
    except Exception:
        return None


def versions(backend=None) -> dict:
    v = {"cute_gemm": __version__, "python": sys.version.split()[0], "numpy": np.__version__,
         "cuda-bindings": _dist_version("cuda-bindings"), "cuda-core": _dist_version("cuda-core"),
         "nvidia-cutlass": _dist_version("nvidia-cutlass"),
         "nvidia-cuda-nvrtc": _dist_version("nvidia-cuda-nvrtc")}
    try:
        v["nvrtc"] = ".".join(map(str, nvrtc_version()))
    except Exception:
        v["nvrtc"] = None
    if backend is not None:
        v[backend.library] = backend.version
        if backend.cublas_version:
            v["cublas"] = backend.cublas_version
    return v


def driver_text(v: int) -> str:
    """CUDA driver version as the driver API reports it (13000) -> "13.0"."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def device_meta(info) -> dict:
    peak = peak_tflops(info.sm_count, info.fp32_lanes_per_sm, info.clock_khz)
    return {"name": info.name, "arch": info.arch, "ordinal": info.ordinal, "sm_count": info.sm_count,
            "fp32_lanes_per_sm": info.fp32_lanes_per_sm, "clock_khz": info.clock_khz,
            "l2_bytes": info.l2_bytes, "fp32_peak_tflops": peak,
            "peak_formula": peak_formula(info.sm_count, info.fp32_lanes_per_sm, info.clock_khz)}

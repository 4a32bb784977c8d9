"""The cuBLAS fp32 peer, through CuPy or PyTorch (optional, imported lazily), TF32 off.

The bench's check would catch a TF32 result anyway (its error is ~2^13 times fp32's).
Without either library, find_cublas says so plainly and the ratio column stays empty.
A backend wraps device arrays zero-copy (__cuda_array_interface__) and calls matmul.
"""
from __future__ import annotations

import importlib
import os

import numpy as np


def _import(name: str):
    """Lazy import (tests simulate a missing library by putting None in sys.modules)."""
    return importlib.import_module(name)


class _CuPyBLAS:
    library = "cupy"

    def __init__(self):
        # TF32 off: CuPy reads CUPY_TF32 at its first float32 matmul; cuBLAS itself honours
        # NVIDIA_TF32_OVERRIDE=0 (effective if cuBLAS was not initialised before us).
        os.environ["CUPY_TF32"] = "0"
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        cp = _import("cupy")
        cp.cuda.runtime.getDeviceCount()
        self.cp = cp
        self.version = cp.__version__
        self.tf32 = "off: CUPY_TF32=0, NVIDIA_TF32_OVERRIDE=0"
        try:
            L = _import("cupy._core._routines_linalg")
            L.set_compute_type(np.float32, L.COMPUTE_TYPE_DEFAULT)  # CUBLAS_COMPUTE_32F
            self.tf32 += ", compute type CUBLAS_COMPUTE_32F (COMPUTE_TYPE_DEFAULT)"
        except Exception:
            pass
        try:
            self.cublas_version = str(cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle()))
        except Exception:
            self.cublas_version = ""

    def wrap(self, dev_array):
        return self.cp.asarray(dev_array)      # zero-copy through __cuda_array_interface__

    def matmul(self, a, b, out):
        self.cp.matmul(a, b, out=out)


class _TorchBLAS:
    library = "torch"

    def __init__(self):
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        torch = _import("torch")
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        mm = torch.backends.cuda.matmul
        if hasattr(mm, "fp32_precision"):     # torch >= 2.9: the new precision API
            mm.fp32_precision = "ieee"
            self.tf32 = "off: torch.backends.cuda.matmul.fp32_precision='ieee', NVIDIA_TF32_OVERRIDE=0"
        else:
            mm.allow_tf32 = False
            self.tf32 = "off: torch.backends.cuda.matmul.allow_tf32=False, NVIDIA_TF32_OVERRIDE=0"
        self.torch = torch
        self.version = torch.__version__
        self.cublas_version = ""

    def wrap(self, dev_array):
        return self.torch.as_tensor(dev_array, device="cuda")

    def matmul(self, a, b, out):
        self.torch.matmul(a, b, out=out)


_BACKENDS = {"cupy": _CuPyBLAS, "torch": _TorchBLAS}


def find_cublas(prefer: str = "auto"):
    """(backend or None, description). The description says which library and how TF32
    was switched off, or plainly why cuBLAS is not measured."""
    if prefer in (None, "none", "off"):
        return None, "cuBLAS NOT MEASURED: disabled (--cublas none)"
    order = list(_BACKENDS) if prefer == "auto" else [prefer]
    why = []
    for name in order:
        cls = _BACKENDS.get(name)
        if cls is None:
            raise ValueError(f"unknown cuBLAS route {name!r}: use auto, {', '.join(_BACKENDS)} or none")
        try:
            b = cls()
        except Exception as e:  # ImportError, or a library present but unusable
            why.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": "))
            continue
        return b, f"cuBLAS fp32 via {b.library} {b.version} (TF32 {b.tf32})"
    hint = "pip install cupy-cuda13x (or torch) to compare" if prefer == "auto" else ""
    if prefer == "auto":
        try:
            _import("nvmath")
            hint += "; nvmath-python is installed but needs CuPy or PyTorch arrays on the device"
        except Exception:
            pass
    return None, f"cuBLAS NOT MEASURED: {'; '.join(why)}" + (f" ({hint})" if hint else "")


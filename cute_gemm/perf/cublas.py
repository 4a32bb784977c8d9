"""The cuBLAS peer at each precision through CuPy or PyTorch (optional, imported lazily): fp32
with TF32 off (the fp32 check would catch a TF32 result), TF32 on for its own calls only."""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from ..base.precisions import DTYPE, PRECISION
from .schema import first_line


class _BLAS:
    """A backend: wrap() device arrays zero-copy, matmul() them (tf32: TF32 on for that call)."""

    def matmul(self, a, b, out, precision: str = "fp32"):
        if precision != "tf32":
            return self.mm(a, b, out=out)
        self._tf32(True)
        try:
            self.mm(a, b, out=out)
        finally:
            self._tf32(False)


class _CuPyBLAS(_BLAS):
    library = "cupy"
    precisions = ("fp32", "tf32", "fp16")      # CuPy has no bfloat16

    def __init__(self):
        os.environ["CUPY_TF32"] = "0"      # CuPy's compute type for float32 matmuls, per call
        cp = importlib.import_module("cupy")
        cp.cuda.runtime.getDeviceCount()
        self.cp, self.version, self.L, self.mm = cp, cp.__version__, None, cp.matmul
        self.tf32 = "off: CUPY_TF32=0"
        try:
            L = importlib.import_module("cupy._core._routines_linalg")
            L.set_compute_type(np.float32, L.COMPUTE_TYPE_DEFAULT)  # CUBLAS_COMPUTE_32F
            self.L = L
            self.tf32 += (", compute type CUBLAS_COMPUTE_32F (COMPUTE_TYPE_DEFAULT); "
                          "the TF32 peer: COMPUTE_TYPE_TF32 for its own calls")
        except Exception:
            pass
        try:
            self.cublas_version = str(cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle()))
        except Exception:
            self.cublas_version = ""

    def wrap(self, dev_array):
        return self.cp.asarray(dev_array)      # zero-copy through __cuda_array_interface__

    def _tf32(self, on: bool) -> None:
        if self.L is None:
            raise RuntimeError("this CuPy cannot switch its compute type to TF32")
        self.L.set_compute_type(np.float32, self.L.COMPUTE_TYPE_TF32 if on else self.L.COMPUTE_TYPE_DEFAULT)


class _F16View:
    """bfloat16 storage seen as float16 through __cuda_array_interface__ (bfloat16 has no
    typestr there): torch views the tensor back as bfloat16, zero-copy."""

    def __init__(self, d):
        self.__cuda_array_interface__ = {"shape": d.shape, "typestr": "<f2",
                                         "data": (d.ptr, False), "version": 3,
                                         "strides": (2 * d.strides[0], 2 * d.strides[1])}


class _TorchBLAS(_BLAS):
    library = "torch"
    precisions = ("fp32", "tf32", "bf16", "fp16")

    def __init__(self):
        torch = importlib.import_module("torch")
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        self.torch, self.version, self.cublas_version = torch, torch.__version__, ""
        self.mm = lambda a, b, out: torch.matmul(a, b, out=out)      # looked up at each call
        self.new_api = hasattr(torch.backends.cuda.matmul, "fp32_precision")    # torch >= 2.9
        self._tf32(False)
        self.tf32 = ("off: torch.backends.cuda.matmul." +
                     ("fp32_precision='ieee'" if self.new_api else "allow_tf32=False") +
                     "; the TF32 peer switches it on for its own calls")

    def _tf32(self, on: bool) -> None:
        mm = self.torch.backends.cuda.matmul
        if self.new_api:
            mm.fp32_precision = "tf32" if on else "ieee"
        else:
            mm.allow_tf32 = on

    def wrap(self, dev_array):
        if getattr(dev_array, "dtype_name", "") == "bfloat16":
            return self.torch.as_tensor(_F16View(dev_array), device="cuda").view(self.torch.bfloat16)
        return self.torch.as_tensor(dev_array, device="cuda")


_BACKENDS = {"cupy": _CuPyBLAS, "torch": _TorchBLAS}


def find_cublas(prefer: str = "auto", precisions=("fp32",)):
    """(backend or None, description): which library and how TF32 was switched off, or
    plainly why cuBLAS is not measured. "auto" takes PyTorch first when a precision needs it
    (bfloat16: CuPy has none)."""
    if prefer in (None, "none", "off"):
        return None, "cuBLAS NOT MEASURED: disabled (--cublas none)"
    order = list(_BACKENDS) if prefer == "auto" else [prefer]
    if prefer == "auto" and any(not DTYPE[p.dtype].cupy for n, p in PRECISION.items()
                                if n in precisions):
        order = ["torch", "cupy"]
    why = []
    for name in order:
        if name not in _BACKENDS:
            raise ValueError(f"unknown cuBLAS route {name!r}: use auto, {', '.join(_BACKENDS)} or none")
        try:
            b = _BACKENDS[name]()
        except Exception as e:  # ImportError, or a library present but unusable
            why.append(f"{name}: {first_line(e)}".rstrip(": "))
            continue
        return b, f"cuBLAS via {b.library} {b.version} (TF32 {b.tf32})"
    hint = "pip install cupy-cuda13x (or torch) to compare" if prefer == "auto" else ""
    if prefer == "auto" and importlib.util.find_spec("nvmath") is not None:
        hint += "; nvmath-python is installed but needs CuPy or PyTorch arrays on the device"
    return None, f"cuBLAS NOT MEASURED: {'; '.join(why)}" + (f" ({hint})" if hint else "")

"""A call on numpy operands: the operands uploaded (their order kept), the product run on
the device, the result copied back; no products (K = 0, alpha = 0) computed on the host, as
BLAS defines them (A and B unread, C unread when beta == 0)."""
from __future__ import annotations

import sys

import numpy as np

from ..base.errors import CaptureError
from ..base.precisions import DTYPE
from .. import driver
from ..driver import launch
from ..driver.arrays import Operand, narrow, widen
from ..registry.records import AS_PLANNED
from .execute import gemm_device


def host_result(shape, A: Operand, out_dtype: str) -> np.ndarray:
    """A new numpy result (of ml_dtypes' type where numpy lacks one)."""
    d = DTYPE[out_dtype]
    return np.empty(shape, dtype=(np.dtype(d.storage) if d.numpy else A.host.dtype
                                  if A.dtype == out_dtype
                                  else np.dtype(getattr(sys.modules["ml_dtypes"], d.name))))


def host_context(s: int) -> int:
    """The current device, its context current, for a call on numpy operands (CaptureError in
    a graph capture)."""
    ordinal = driver.current_ordinal()
    driver.ensure_context(ordinal)
    if launch.capturing(s):
        raise CaptureError("numpy operands need copies to and from the host and a wait for "
                           "them, which a CUDA graph capture cannot hold: pass device arrays")
    return ordinal


def _upload(op: Operand, ordinal: int, stream: int, owned: list) -> Operand:
    """Copy a host operand to the device keeping its order when it is C- or F-contiguous."""
    h = op.host
    src = h if h.flags.c_contiguous or h.flags.f_contiguous else np.ascontiguousarray(h)
    strides = (1, h.shape[0]) if src is h and not h.flags.c_contiguous else (h.shape[1], 1)
    buf = launch.DeviceBuffer(max(src.nbytes, 4), ordinal)
    owned.append(buf)
    if src.nbytes:
        launch.memcpy_htod(buf.ptr, src.ctypes.data, src.nbytes, stream)
    return Operand(op.name, buf, True, buf.ptr, op.shape, strides, op.dtype)


def run_host(k, A, B, C, O, m, n, kk, alpha, beta, s, prec="fp32", out_dtype="float32",
              pick=AS_PLANNED, stand_in=None):
    result = O.host if O is not None else host_result((m, n), A, out_dtype)
    if m == 0 or n == 0:
        return result
    if kk == 0 or alpha == 0.0:
        # no products, no launch: beta * C in float32, rounded once (BLAS: A and B unread,
        # C unread when beta == 0)
        v = np.zeros((m, n), np.float32) if beta == 0.0 else np.float32(beta) * widen(C.host, C.dtype)
        stored = narrow(v, out_dtype)
        result.view(stored.dtype)[...] = stored
        return result
    ordinal = host_context(s)
    owned: list = []
    try:
        dA, dB = _upload(A, ordinal, s, owned), _upload(B, ordinal, s, owned)
        buf = launch.DeviceBuffer(DTYPE[out_dtype].itemsize * m * n, ordinal)
        owned.append(buf)
        dT = Operand("tmp", None, True, buf.ptr, (m, n), (n, 1), out_dtype)
        if beta != 0.0:   # C goes straight into the result buffer, updated in place
            hc = np.ascontiguousarray(C.host)
            launch.memcpy_htod(dT.ptr, hc.ctypes.data, hc.nbytes, s)
        gemm_device(k, dA, dB, dT if beta != 0.0 else None, dT, alpha, beta, s, ordinal, prec,
                    pick, stand_in)
        host = result if result.flags.c_contiguous else np.empty((m, n), dtype=result.dtype)
        launch.memcpy_dtoh(host.ctypes.data, dT.ptr, host.nbytes, s)
        launch.check_last(k.name, s)
        if host is not result:
            result[...] = host
    finally:
        for b in owned:
            b.close()
    return result

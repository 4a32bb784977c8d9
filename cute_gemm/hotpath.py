"""run()'s signature hot path: a repeat call on device arrays with `out`, no `c`, on a
one-device host goes from its operands' attributes straight to the launch resolved for it.

A call's signature holds everything validation, the entry choice and the launch depend
on: the kernel, the precision asked for, the call's stream, and per operand what its
kind of array can change — shape, strides, element type and pointer alignment class
(ptr & 255) always; the read-only flag, mask and producer stream of a
__cuda_array_interface__; requires_grad of a PyTorch tensor; CuPy's current stream (which
its CAI reports as the producer stream). The first call with a signature goes through
run()'s full path; if that launched one resolved Launcher with no producer stream to wait
for, the signature is remembered (`remember`), and later calls with it skip parse() and
validation: they test only what the signature cannot hold (null pointers, an `out` that
overlaps an input) and launch with their own pointers and alpha.

Each array type is read by the cheapest means that sees what the full path sees: our
DeviceArray and PyTorch tensors by their attributes (PyTorch builds its CAI dict in
Python), CuPy arrays by theirs, anything else by its CAI.
"""
from __future__ import annotations

import sys

from . import launch
from .arrays import DeviceArray, Operand
from .resolve import CACHE

HOT_ENTRIES = 4096     # remembered signatures (all forgotten at once past this)


def _read_cai(x):
    c = x.__cuda_array_interface__
    p = c["data"][0]
    return (c["shape"], c.get("strides"), c["typestr"], c["data"][1], c.get("mask"),
            c.get("stream"), p & 255), p


def _read_device_array(x):
    p = x.ptr
    return (x.shape, x.strides, x.dtype_name, p & 255), p


def _torch_reader(torch):
    def read(t):
        # a CPU tensor must never match a CUDA one; requires_grad decides whether out is refused
        if not t.is_cuda:
            return None
        p = t.data_ptr()
        return (t.shape, t.stride(), t.dtype, t.requires_grad, p & 255), p
    return read


def _cupy_reader(cupy):
    current = cupy.cuda.get_current_stream

    def read(x):
        p = x.data.ptr
        # the producer stream its CAI would report is a function of the current stream
        return (x.shape, x.strides, x.dtype, current().ptr, p & 255), p
    return read


# type -> reader; type -> whether its signature holds the producer stream the full path reads
_READ: dict = {}
_HOLDS_STREAM: dict = {}


def _reader(tp):
    torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
    holds = False
    if issubclass(tp, DeviceArray):
        r = _read_device_array
    elif torch is not None and tp in (getattr(torch, "Tensor", None),
                                      getattr(getattr(torch, "nn", None), "Parameter", None)):
        r = _torch_reader(torch)      # (subclasses: their CAI, which dispatches)
    elif cupy is not None and tp is getattr(cupy, "ndarray", None):
        r, holds = _cupy_reader(cupy), True
    else:
        r, holds = _read_cai, True
    _HOLDS_STREAM[tp] = holds
    _READ[tp] = r
    return r


def launch_or_sign(name, precision, a, b, out, alpha, stream):
    """True if the call was launched through a remembered signature; else what `remember`
    needs once the full path has run (None: this call has no signature)."""
    try:
        ra = (_READ.get(type(a)) or _reader(type(a)))(a)
        rb = (_READ.get(type(b)) or _reader(type(b)))(b)
        ro = (_READ.get(type(out)) or _reader(type(out)))(out)
        s = 0 if stream is None else launch.stream_handle(stream)
        key = (name, precision, launch.canonical_stream(s), ra[0], rb[0], ro[0])
        entry = CACHE.hot.get(key)      # (TypeError for an unhashable field: no signature)
    except Exception:    # (a reader's None included) the full path reads it and says what is wrong
        return None
    if entry is None:
        return key
    launcher, (alo, ahi, blo, bhi, olo, ohi) = entry
    pa, pb, po = ra[1], rb[1], ro[1]
    if (pa and pb and po and not (pa + alo < po + ohi and po + olo < pa + ahi)
            and not (pb + blo < po + ohi and po + olo < pb + bhi)):
        launch.ensure_context(0)
        launcher(pa, pb, po, alpha, 0.0, s)
        return True
    return None      # null pointers or an overlapping out: the full path names or handles it


def remember(key, fast, A: Operand, B: Operand, O: Operand) -> None:
    """Keep the signature of a call the full path has just launched through `fast` (gemm_device's
    (key, Launcher)), if nothing it did depends on more than the signature: no producer stream
    was waited for, and an operand whose signature does not hold its producer stream had none."""
    cs = key[2]
    for op in (A, B, O):
        if op.stream is not None and not (_HOLDS_STREAM.get(type(op.obj))
                                          and launch.canonical_stream(op.stream) == cs):
            return
    if len(CACHE.hot) >= HOT_ENTRIES:
        CACHE.hot.clear()
    # each operand's byte span relative to its pointer (fixed by the signature), for the
    # overlap test
    CACHE.hot[key] = (fast[1], tuple(x - op.ptr for op in (A, B, O) for x in op.span()))

"""run()'s signature hot path. A call's signature holds everything validation, the entry
choice and the launch depend on: the kernel, the precision, the stream, and per operand
what its kind of array can change (shape, strides, element type, ptr & 255; a CAI's
read-only flag, mask and producer stream; CuPy's current stream). The first call with a
signature goes the full way; if that launched one resolved launch with no producer stream
to wait for, it is remembered, and later calls (device arrays, one device) only test what
the signature cannot hold (null pointers, an out overlapping an input) and launch with
their own pointers, alpha and beta; a C other than out is copied into it first, as the
full path does. A call without `out` allocates its result as the full path did
(launch_new), C copied into it likewise. A tensor autograd records has no signature. Each
array type is read by the cheapest means that sees what the full path sees."""
from __future__ import annotations

import sys

from .. import driver
from ..driver import launch
from ..driver.arrays import DeviceArray, Operand, framework_stream, stream_reader
from .resolve import CACHE

HOT_ENTRIES = 4096     # remembered signatures (all forgotten at once past this)


# ---- each kind's readers: of one operand (a call of mixed kinds), and of three of one kind
# (one function, one flat signature)
def _read_cai(x):
    c = x.__cuda_array_interface__
    p = c["data"][0]
    return (c["shape"], c.get("strides"), c["typestr"], c["data"][1], c.get("mask"),
            c.get("stream"), p & 255), p


def _read3_cai(a, b, o):
    cs = (a.__cuda_array_interface__, b.__cuda_array_interface__, o.__cuda_array_interface__)
    return (("cai", *[(c["shape"], c.get("strides"), c["typestr"], c["data"][1], c.get("mask"),
                       c.get("stream"), c["data"][0] & 255) for c in cs]), *[c["data"][0] for c in cs])


def _read_device_array(x):
    p = x.ptr
    return ("da", x.shape, x.strides, x.dtype_name, p & 255), p


def _read3_device_arrays(a, b, o):
    pa, pb, po = a.ptr, b.ptr, o.ptr
    return (("da", a.shape, a.strides, a.dtype_name, pa & 255, b.shape, b.strides, b.dtype_name,
             pb & 255, o.shape, o.strides, o.dtype_name, po & 255), pa, pb, po)


def _torch_readers(torch):
    grad = torch.is_grad_enabled

    def read(t):
        # a CPU tensor must never match a CUDA one; one autograd records goes the full way
        if not t.is_cuda or (t.requires_grad and grad()):
            return None
        p = t.data_ptr()
        return ("torch", t.shape, t.stride(), t.dtype, p & 255), p

    def read3(a, b, o):
        if not (a.is_cuda and b.is_cuda and o.is_cuda):
            return None
        # the full path refuses an out that requires grad, and out= beside an operand
        # autograd records
        if o.requires_grad or ((a.requires_grad or b.requires_grad) and grad()):
            return None
        pa, pb, po = a.data_ptr(), b.data_ptr(), o.data_ptr()
        return (("torch", a.shape, a.stride(), a.dtype, pa & 255, b.shape, b.stride(), b.dtype,
                 pb & 255, o.shape, o.stride(), o.dtype, po & 255), pa, pb, po)
    return read, read3


def _cupy_readers(cupy):
    current = cupy.cuda.get_current_stream

    def read(x):
        p = x.data.ptr
        # the producer stream its CAI reports is CuPy's current stream
        return ("cupy", x.shape, x.strides, x.dtype, current().ptr, p & 255), p

    def read3(a, b, o):
        pa, pb, po = a.data.ptr, b.data.ptr, o.data.ptr
        # each one's CAI reports the current stream as its producer's: read once
        return (("cupy", a.shape, a.strides, a.dtype, pa & 255, b.shape, b.strides, b.dtype,
                 pb & 255, o.shape, o.strides, o.dtype, po & 255, current().ptr), pa, pb, po)
    return read, read3


def _mixed(ra, rb, ro):
    def read3(a, b, o):
        (sa, pa), (sb, pb), (so, po) = ra(a), rb(b), ro(o)     # (None: TypeError, caught)
        return (sa, sb, so), pa, pb, po
    return read3


# (type(a), type(b), type(out)) -> (read3: (signature, pa, pb, po) or None, a's stream
# reader); type -> whether its signature holds the producer stream the full path reads
_READ3: dict = {}
_HOLDS_STREAM: dict = {}


def _kind(tp):
    """(reader of one operand, read3 of three of this type or None, holds its producer stream)."""
    torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
    if issubclass(tp, DeviceArray):
        return _read_device_array, _read3_device_arrays, False
    if torch is not None and tp in (getattr(torch, "Tensor", None),
                                    getattr(getattr(torch, "nn", None), "Parameter", None)):
        return *_torch_readers(torch), False     # (subclasses: their CAI)
    if cupy is not None and tp is getattr(cupy, "ndarray", None):
        return *_cupy_readers(cupy), True
    return _read_cai, _read3_cai, True


def _read3_for(types):
    kinds = [_kind(tp) for tp in types]
    for tp, k in zip(types, kinds):
        _HOLDS_STREAM[tp] = k[2]
    r = kinds[0][1] if types[0] is types[1] is types[2] and kinds[0][1] else \
        _mixed(*(k[0] for k in kinds))
    _READ3[types] = r, stream_reader(types[0])
    return _READ3[types]


# ---- a call without out: a result allocated as the full path did, then the launch ----------
def _read1_for(tp):
    r, _, _HOLDS_STREAM[tp] = _kind(tp)
    _READ1[tp] = r
    return r


_READ1: dict = {}     # type -> reader of one operand of it


def launch_new(name, precision, a, b, alpha, stream, ep=None, c=None, beta=0.0):
    """(result, None) if a call without `out` was launched through a remembered signature of
    its a, b (fused epilogue `ep`, and C `c`, copied into the result first where beta != 0)
    into a result allocated as the full path did; else (None, the key remember_new needs;
    None: no signature)."""
    try:
        ra = _READ1.get(type(a)) or _read1_for(type(a))
        rb = _READ1.get(type(b)) or _read1_for(type(b))
        (sa, pa), (sb, pb) = ra(a), rb(b)      # (None for a CPU tensor: TypeError, caught)
        es, eptrs = NO_EPILOGUE if ep is None else read_epilogue(ep)
        s = framework_stream(a) if stream is None else launch.stream_handle(stream)
        # (a's type: the library the result is allocated by, which not every signature holds)
        key = (name, precision, s, type(a), sa, sb) + es
        pc = 1
        if c is not None:
            sc, pc = (_READ1.get(type(c)) or _read1_for(type(c)))(c)
            key += ("c", sc)
        entry = CACHE.results.get(key)
    except Exception:    # the full path reads the operands and says what is wrong
        return None, None
    if entry is None or not (pa and pb and pc):     # null pointers: the full path names them
        return None, key
    launcher, alloc, ptr_of, epi, copier = entry
    out = alloc(a)      # (a new allocation of the library's: it overlaps neither a nor b)
    po = ptr_of(out)
    driver.ensure_context(0)
    if copier is None or beta == 0.0:   # (BLAS: with beta == 0, C is not read)
        beta = 0.0
    else:
        copier((1.0,), (pc,), (po,), s)
    if epi is None:
        launcher(pa, pb, po, alpha, beta, s)
    else:
        launcher(pa, pb, po, alpha, beta, s, epi.values_at(eptrs))
    return out, None


# ---- a fused epilogue: its vectors read per call ----------------------------------------------
NO_EPILOGUE: tuple[tuple, tuple] = ((), ())     # read_epilogue's answer for a call without one


class Scales(tuple):
    """A call's scale_a and scale_b given without an epilogue, read on the hot path as they are:
    the full path makes them an Epilogue (driver.epilogue.scaled, by their shapes), which this
    path's signature (their shapes included) fixes, so a repeat call builds none."""
    __slots__ = ()


def read_epilogue(ep) -> tuple[tuple, tuple]:
    """(signature, vector pointers) of a call's fused epilogue (driver.epilogue.Epilogue; the
    pointers in its vectors' order), or of its Scales (their two pointers)."""
    if type(ep) is Scales:
        x, y = ep
        sa, pa = (None, 0) if x is None else (_READ1.get(type(x)) or _read1_for(type(x)))(x)
        sb, pb = (None, 0) if y is None else (_READ1.get(type(y)) or _read1_for(type(y)))(y)
        return ("scales", sa, sb), (pa, pb)
    read = [(None, 0) if x is None else (_READ1.get(type(x)) or _read1_for(type(x)))(x)
            for x in (ep.bias, ep.scale_rows, ep.scale_cols, ep.blocks_a, ep.blocks_b)]
    return (("epilogue", ep.bias_axis, ep.activation, ep.clamp, ep.out_dtype, *[s for s, _ in read]),
            tuple(p for _, p in read))


class EpilogueAt:
    """A remembered fused epilogue: its run-time half without the vectors' pointers, each
    vector's byte span from its pointer (the overlap test with out), and `last`, one call's
    pointers and fields as one reference (no thread mixes two calls'). `slots`: where a Scales
    call's two pointers go among the vectors (scale_rows or blocks_a; scale_cols or blocks_b).
    `checks`: per kind of call (Scales, an Epilogue), each vector's (index among
    read_epilogue's pointers, byte span from its pointer)."""
    __slots__ = ("values", "last", "slots", "checks")

    def __init__(self, prepared):
        values = self.values = prepared.values
        spans = [(lo_ - v.ptr, hi_ - v.ptr) for v in prepared.vectors for lo_, hi_ in (v.span(),)]
        self.slots = (3 if values.blk_a else 1, 4 if values.blk_b else 2)
        self.last = ((), ())
        # prepared.vectors: the present ones in read_epilogue's order (bias, scale_rows,
        # scale_cols, blocks_a, blocks_b), present where the kernel reads them (non-null)
        at = [i for i, ptr in enumerate((values.bias, values.srow, values.scol, values.blk_a,
                                         values.blk_b)) if ptr]
        pair = {self.slots[0]: 0, self.slots[1]: 1}
        self.checks = (tuple((pair.get(i, -1), lo, hi) for i, (lo, hi) in zip(at, spans)),
                       tuple((i, lo, hi) for i, (lo, hi) in zip(at, spans)))

    def placed(self, ptrs) -> tuple:
        """read_epilogue's pointers in the vectors' order (a Scales call's two placed)."""
        if len(ptrs) != 2:
            return ptrs
        out = [0, 0, 0, 0, 0]
        out[self.slots[0]], out[self.slots[1]] = ptrs
        return tuple(out)

    def values_at(self, ptrs) -> tuple:
        """EpiArgs' fields with this call's vector pointers (read_epilogue's)."""
        last = self.last
        if last[0] == ptrs:
            return last[1]
        values = self.values.pointing(self.placed(ptrs))
        self.last = (ptrs, values)
        return values

    def overlaps(self, ptrs, olo: int, ohi: int) -> bool:
        """Whether a vector at these pointers overlaps out's bytes [olo, ohi), or one the
        remembered call had is null (or missing) in this one: the full path's to say."""
        for i, lo, hi in self.checks[len(ptrs) != 2]:
            p = ptrs[i] if i >= 0 else 0
            if not p or (p + lo < ohi and olo < p + hi):
                return True
        return False


def allocates_in_capture(obj) -> bool:
    """True for CuPy and PyTorch arrays: their libraries allocate inside a graph capture
    (our DeviceArray's cuMemAlloc is refused there)."""
    return type(obj).__module__.split(".")[0] in ("cupy", "torch")


def _allocator(result, a):
    """(allocate(a), pointer of) for results like `result` the full path allocated for `a`;
    None unless allocates_in_capture."""
    mod = type(result).__module__.split(".")[0]
    lib = sys.modules.get(mod) if allocates_in_capture(result) else None
    if lib is None:
        return None
    empty, shape, dtype = lib.empty, tuple(result.shape), result.dtype
    if mod == "cupy":
        return (lambda _: empty(shape, dtype=dtype)), (lambda x: x.data.ptr)   # one device
    device, data_ptr = result.device, type(result).data_ptr
    if type(a) in (lib.Tensor, getattr(getattr(lib, "nn", None), "Parameter", None)):
        # empty_like of a broadcast view (strides 0) is a fresh row-major tensor: PyTorch's
        # cheapest allocation from Python (docs/design/host_overhead.md)
        unit = _UNITS.get((dtype, device))
        if unit is None:
            unit = _UNITS[dtype, device] = empty((1,), dtype=dtype, device=device)
        like, proto = lib.empty_like, unit.expand(shape)
        return (lambda _: like(proto)), data_ptr
    return (lambda _: empty(shape, dtype=dtype, device=device)), data_ptr


_UNITS: dict = {}    # (dtype, device) -> a one-element tensor, the allocator's views' base


def remember_new(key, fast, A: Operand, B: Operand, result, epi=None, C: Operand | None = None,
                 copier=None) -> None:
    """Keep the signature of a call without `out` the full path launched through `fast` into
    `result`, which it allocated, where `remember` would (epi: its epilogue's Prepared; C and
    copier: the call's C and the prepared copy of it into the result)."""
    alloc = _allocator(result, A.obj)
    if alloc is None or not _streams_held(key[2], (A, B) if C is None else (A, B, C)):
        return
    if len(CACHE.results) >= HOT_ENTRIES:       # (bounded: base/memo.py)
        CACHE.results.clear()
    CACHE.results[key] = (fast[1], *alloc, None if epi is None else EpilogueAt(epi), copier)


def launch_or_sign(name, precision, a, b, out, alpha, beta, stream, ep=None, c=None):
    """True if the call was launched through a remembered signature (with its fused epilogue
    `ep`; its C `c`: None, out itself (an update in place, beta an argument), or another
    array copied into out first as the full path copies it); else the key `remember` needs
    (None: no signature)."""
    beta, c = (0.0, None) if c is None else (beta, None if c is out else c)
    try:
        types = (type(a), type(b), type(out))
        read3, current = _READ3.get(types) or _read3_for(types)
        r = read3(a, b, out)
        if r is None:
            return None
        es, eptrs = NO_EPILOGUE if ep is None else read_epilogue(ep)
        s = (0 if current is None else current(a)) if stream is None else \
            launch.stream_handle(stream)
        key = (name, precision, s, r[0]) + es
        if c is not None:
            sc, pc = (_READ1.get(type(c)) or _read1_for(type(c)))(c)   # (None: TypeError)
            key += ("c", sc)
        entry = CACHE.hot.get(key)      # (TypeError for an unhashable field: no signature)
    except Exception:    # the full path reads the operands and says what is wrong
        return None
    if entry is None:
        return key
    launcher, (alo, ahi, blo, bhi, olo, ohi), epi, copy = entry
    _, pa, pb, po = r
    if (pa and pb and po and not (pa + alo < po + ohi and po + olo < pa + ahi)
            and not (pb + blo < po + ohi and po + olo < pb + bhi)
            and (epi is None or not epi.overlaps(eptrs, po + olo, po + ohi))):
        if copy is not None:
            copier, clo, chi = copy
            if not pc or (pc + clo < po + ohi and po + olo < pc + chi):
                return None     # a null C, or one overlapping out: the full path's
            driver.ensure_context(0)
            if beta != 0.0:     # (BLAS: with beta == 0, C is not read)
                copier((1.0,), (pc,), (po,), s)
        else:
            driver.ensure_context(0)
        if epi is None:
            launcher(pa, pb, po, alpha, beta, s)
        else:
            launcher(pa, pb, po, alpha, beta, s, epi.values_at(eptrs))
        return True
    return None      # null pointers or an overlapping out: the full path names or handles it


def _streams_held(stream, ops) -> bool:
    """Whether the call waited for no producer stream: each of `ops` has none, or its
    signature holds it and it is the call's stream."""
    cs = launch.canonical_stream(stream)
    return all(op.stream is None or (_HOLDS_STREAM.get(type(op.obj), False)
                                     and launch.canonical_stream(op.stream) == cs)
               for op in ops)


def remember(key, fast, sig, epi=None, copier=None) -> None:
    """Keep the signature of a call (Signature `sig`) the full path launched through `fast`
    (gemm_device's (key, launcher)), unless it waited for a producer stream. copier: where the
    call's C is not out, the prepared copy of C into out that precedes the launch."""
    A, B, C, O = sig.A, sig.B, sig.C, sig.O
    if sig.producers and not _streams_held(key[2], (A, B, O) if C is None else (A, B, C, O)):
        return
    # each operand's byte span relative to its pointer (fixed by the signature)
    (alo, ahi), (blo, bhi), (olo, ohi) = sig.spans["a"], sig.spans["b"], sig.spans["out"]
    copy = None
    if copier is not None:
        clo, chi = sig.spans["c"]
        copy = (copier, clo - C.ptr, chi - C.ptr)
    if len(CACHE.hot) >= HOT_ENTRIES:           # (bounded: base/memo.py)
        CACHE.hot.clear()
    CACHE.hot[key] = (fast[1], (alo - A.ptr, ahi - A.ptr, blo - B.ptr, bhi - B.ptr,
                                olo - O.ptr, ohi - O.ptr), None if epi is None else EpilogueAt(epi),
                      copy)

"""Carrying out one GEMM on the device: T = alpha * A @ B + beta * C with operands already
validated. Everything around the kernel launch lives here: an output that aliases an
input is computed apart and copied; a problem past one launch is cut into launches;
operands a kernel cannot take as they are are copied into a layout it can; a composed
kernel (Kernel.gemm_of) runs its pre-pass, then the GEMM it names; scratch is allocated
and freed in stream order (launch.alloc_async), so nothing outlives the call.
"""
from __future__ import annotations

import ctypes
import warnings

from . import launch, registry
from .arrays import Operand
from .errors import CaptureError, PrecisionFallbackWarning
from .resolve import (CACHE, UTIL, UTIL_ENTRY, choose, copy_target, loaded, oriented, resolve,
                      swapped)


def _util_fn(ordinal: int, dtype: str) -> launch.Function:
    return loaded(UTIL, ordinal).function(UTIL_ENTRY[dtype])


def _sub(op: Operand | None, i0: int, j0: int, rows: int, cols: int) -> Operand | None:
    """The (rows, cols) block of a device operand starting at element (i0, j0)."""
    if op is None:
        return None
    off = op.itemsize * (i0 * op.strides[0] + j0 * op.strides[1])
    return Operand(op.name, op.obj, True, op.ptr + off, (rows, cols), op.strides, op.dtype,
                   op.readonly)


def _pieces(extent: int, step: int):
    """(start, size) of the launches that cover `extent` in pieces of at most `step`."""
    return [(i, min(step, extent - i)) for i in range(0, extent, step)]


def _padded(op: Operand) -> tuple[int, int]:
    """The extents of `op` with its contiguous mode stretched to its leading dimension."""
    (m, n), (s0, s1) = op.shape, op.strides
    return (m, max(n, s0)) if s1 == 1 and m > 0 else (max(m, s1), n) if s0 == 1 else (m, n)


def _scale2d(ordinal: int, stream: int, s: float, src: Operand | None, dst: Operand,
             pad: bool = False) -> None:
    """dst = s * src (src None or s == 0: zeros), both of dst's element type. pad: also zero
    dst's pad, between its contiguous extent and its leading dimension."""
    m, n = dst.shape
    if m * n == 0:
        return
    wm, wn = _padded(dst) if pad else (m, n)
    f = _util_fn(ordinal, dst.dtype)
    mc, nc, _ = UTIL.launch_extents(wm, wn, 1)
    for i0, r in _pieces(wm, mc):
        for j0, c in _pieces(wn, nc):
            launch.launch(f, UTIL.grid(r, c, 1), UTIL.block, 0, stream,
                          _pack_scale(r, c, max(0, min(r, m - i0)), max(0, min(c, n - j0)), s,
                                      _sub(src, i0, j0, r, c), _sub(dst, i0, j0, r, c)))


class _ScaleArgs(ctypes.Structure):
    """kernels/util/scale2d.cu's parameters, in order."""
    _fields_ = [("M", ctypes.c_int), ("N", ctypes.c_int), ("MS", ctypes.c_int),
                ("NS", ctypes.c_int), ("s", ctypes.c_float),
                ("src", ctypes.c_void_p), ("ss0", ctypes.c_longlong), ("ss1", ctypes.c_longlong),
                ("dst", ctypes.c_void_p), ("ds0", ctypes.c_longlong), ("ds1", ctypes.c_longlong)]


_SCALE_OFFSETS = tuple(getattr(_ScaleArgs, f).offset for f, _ in _ScaleArgs._fields_)


def _packed(args: ctypes.Structure, offsets: tuple[int, ...]):
    """(keepalive, address of the void*[] the driver wants) for one argument struct."""
    base = ctypes.addressof(args)
    ptrs = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
    return (args, ptrs), ctypes.addressof(ptrs)


def _pack_scale(m, n, ms, ns, s, src, dst):
    return _packed(_ScaleArgs(m, n, ms, ns, s, src.ptr if src else None,
                              *(src.strides if src else (0, 0)), dst.ptr, *dst.strides),
                   _SCALE_OFFSETS)


class _SplitArgs(ctypes.Structure):
    """kernels/cute/c7_3xtf32.cu's parameters, in order: an (R, K) source of strides
    (sr, sk) into R rows of ld floats, and the range flags."""
    _fields_ = [("R", ctypes.c_int), ("K", ctypes.c_int), ("src", ctypes.c_void_p),
                ("sr", ctypes.c_longlong), ("sk", ctypes.c_longlong), ("dst", ctypes.c_void_p),
                ("ld", ctypes.c_longlong), ("flags", ctypes.c_void_p)]


_SPLIT_OFFSETS = tuple(getattr(_SplitArgs, f).offset for f, _ in _SplitArgs._fields_)


def _temp(shape, dtype: str, ordinal: int, stream: int, owned: list,
          strides: tuple[int, int] | None = None) -> Operand:
    """A scratch matrix in stream order (freed by _release on the same stream), row-major
    unless `strides` say otherwise."""
    strides = strides or (shape[1], 1)
    op = Operand("tmp", None, True, 0, tuple(shape), strides, dtype)
    # the last row's pad too: _scale2d(pad=True) writes it
    span = 1 + sum((x - 1) * st for x, st in zip(_padded(op), strides) if x > 0)
    op.ptr = launch.alloc_async(op.itemsize * max(span, 1), ordinal, stream)
    owned.append(op.ptr)
    return op


def _copy_for(v, role: str, op: Operand, ordinal: int, stream: int, owned: list) -> Operand:
    """A scratch copy of `op` in the layout entry point `v` wants for `role`."""
    return _temp(op.shape, op.dtype, ordinal, stream, owned, copy_target(v, role, op.shape)[1])


def _release(owned: list, stream: int) -> None:
    """Free scratch in stream order: after the work queued so far, no host wait."""
    for ptr in owned:
        launch.free_async(ptr, stream)
    owned.clear()


# ---- composed kernels (Kernel.gemm_of): a pre-pass, then another kernel's GEMM --------------
SPLIT_ALIGN = 4     # floats: A' and B' rows start 16 bytes apart (TMA strides), pad zeroed


def split_operands(k, A: Operand, B: Operand, stream: int, ordinal: int,
                   owned: list) -> tuple[Operand, Operand, int]:
    """A' (M x K', row-major) and B' (K' x N, column-major), K' = k.gemm_of.k_prime(K), in stream-ordered
    scratch (appended to `owned`), written by k's pre-pass (its variants: A's entry, then
    B's), and the device word (in `owned` too) where the pre-pass sets bit 0 (A) or 1 (B)
    for inputs it cannot split exactly."""
    g = k.gemm_of
    m, kk = A.shape
    n = B.shape[1]
    kp = g.k_prime(kk)
    ld = registry.cdiv(kp, SPLIT_ALIGN) * SPLIT_ALIGN
    flags = launch.alloc_async(4, ordinal, stream)
    owned.append(flags)
    launch.memset_f32(flags, 0, 1, stream)
    A2 = _temp((m, kp), "float32", ordinal, stream, owned, (ld, 1))
    B2 = _temp((kp, n), "float32", ordinal, stream, owned, (1, ld))
    lk = loaded(k, ordinal)
    # each operand as (rows, K) with (row stride, k stride): A as it is, B transposed
    for v, rows, src, (sr, sk), dst in ((k.variants[0], m, A, A.strides, A2),
                                        (k.variants[1], n, B, B.strides[::-1], B2)):
        launch.launch(lk.function(v.entry, k.entries), k.grid.of(rows, kk), k.block, 0, stream,
                      _packed(_SplitArgs(rows, kk, src.ptr, sr, sk, dst.ptr, ld, flags),
                              _SPLIT_OFFSETS))
    return A2, B2, flags


def _flagged(bad: int, g) -> str:
    """What the pre-pass's flags say (bits 0/1: a/b with magnitudes the split cannot
    represent; bits 2/3: a/b with ±Inf, which the GEMM's compensated sum would turn into
    NaN)."""
    def names(lo: int) -> tuple[str, str]:
        which = [r for bit, r in ((lo, "a"), (2 * lo, "b")) if bad & bit]
        return " and ".join(which), "hold" if len(which) == 2 else "holds"
    said = []
    if bad & 3:
        which, verb = names(1)
        said.append(f"{which} {verb} magnitudes below 2^-103 (subnormal, or whose tf32 split leaves "
                    f"a subnormal part) that {g.k_parts}x{g.precision} cannot represent exactly")
    if bad & 12:
        which, verb = names(4)
        said.append(f"{which} {verb} ±Inf, which its compensated sums would turn into NaN")
    return "; ".join(said)


def _composed(k, A: Operand, B: Operand, C: Operand | None, T: Operand, alpha: float,
              beta: float, stream: int, ordinal: int, transposed: bool = False) -> None:
    """T = alpha * A @ B + beta * C by a composed kernel: its pre-pass writes A' and B' and
    range flags, the GEMM kernel multiplies A' and B' in its precision over K' = k_prime(K)
    (through gemm_device like any call), and where the flags are set the fp32 fallback
    multiplies A and B instead. The host reads the flags (a 4-byte copy); the GEMM is queued
    before it waits for them, so the GPU does not idle for the round trip, and a flagged
    call's fallback then overwrites T. Where the GEMM would overwrite C (in place, beta != 0)
    the fallback needs C as it was: there the host reads the flags first, and queues one of
    the two. Scratch is freed in stream order on every path. transposed: the GEMM (or the
    fallback) is asked for on the transposed problem (gemm_device); the pre-pass splits A
    and B as they are."""
    g = k.gemm_of
    if launch.capturing(stream):    # before anything is enqueued: the capture stays valid
        raise CaptureError(f"kernel {k.name!r} reads its pre-pass's range check on the host "
                           "before the GEMM, which a CUDA graph capture cannot wait for: capture "
                           f"{g.fallback!r} (fp32), or call {k.name!r} outside the capture")
    gemm_first = C is None or not C.overlaps(T)
    owned: list = []
    try:
        A2, B2, flags = split_operands(k, A, B, stream, ordinal, owned)
        read = launch.fetch_word(flags, stream, ordinal)

        def gemm() -> None:
            gemm_device(g.kernel, A2, B2, C, T, alpha, beta, stream, ordinal, g.precision,
                        transposed)
        if gemm_first:
            gemm()
        bad = read()
        if bad:
            warnings.warn(f"{k.name}: {_flagged(bad, g)}; computed with {g.fallback} (fp32) instead",
                          PrecisionFallbackWarning, stacklevel=2)
            gemm_device(registry.get(g.fallback), A, B, C, T, alpha, beta, stream, ordinal, "fp32",
                        transposed)
        elif not gemm_first:
            gemm()
    finally:
        _release(owned, stream)


def gemm_device(k, A: Operand, B: Operand, C: Operand | None, T: Operand,
                alpha: float, beta: float, stream: int, ordinal: int, precision: str = "fp32",
                transposed: bool = False):
    """T = alpha * A @ B + beta * C on the device (C may be T itself, or None) in
    `precision` (A and B of its type; C of T's). transposed: asked for on the transposed
    problem C^T = B^T A^T (gemm()'s table pick; resolve.swapped decides what each launch
    computes). Returns (key, launcher) of the CACHE.launches entry the call went through,
    or None."""
    m, kk = A.shape
    n = B.shape[1]
    if C is None or beta == 0.0:
        C, beta = None, 0.0     # BLAS: with beta == 0, C is not read
    if m == 0 or n == 0:
        return None
    products = kk > 0 and alpha != 0.0     # BLAS: with alpha == 0, A and B are not read
    read = ((A, B) if products else ()) + ((C,) if C is not None else ())
    if any(T.overlaps(x) and not (x is C and C.same_view(T)) for x in read):
        # T aliases an input other than as C in place: compute apart, then copy into T
        owned: list = []
        try:
            # row-major in the problem asked for (C^T's, for a pick of the transposed
            # problem): written as the launch would write a fresh result of that problem
            W = _temp(T.shape, T.dtype, ordinal, stream, owned,
                      (1, T.shape[0]) if transposed else None)
            gemm_device(k, A, B, C, W, alpha, beta, stream, ordinal, precision, transposed)
            _scale2d(ordinal, stream, 1.0, W, T)
        finally:
            _release(owned, stream)
        return None
    if not products:
        _scale2d(ordinal, stream, beta, C, T)
        return None
    mc, nc, kc = k.launch_extents(m, n, kk, transposed)
    if (mc, nc, kc) != (m, n, kk):
        # beyond one launch (grid limits, 32-bit indices): launches on blocks of C, and
        # along K each piece adds to what the one before left in T
        for i0, r in _pieces(m, mc):
            for j0, c in _pieces(n, nc):
                Tb = _sub(T, i0, j0, r, c)
                for p0, q in _pieces(kk, kc):
                    gemm_device(k, _sub(A, i0, p0, r, q), _sub(B, p0, j0, q, c),
                                _sub(C, i0, j0, r, c) if p0 == 0 else Tb, Tb, alpha,
                                beta if p0 == 0 else 1.0, stream, ordinal, precision, transposed)
        return None
    if k.gemm_of is not None:
        _composed(k, A, B, C, T, alpha, beta, stream, ordinal, transposed)
        return None
    # the hot path: a launch already resolved for this kernel, shape, strides, pointer
    # alignment class and pick of the transposed problem (everything swapped(), choose() and
    # the grid depend on) skips straight to the driver
    key = (k.name, precision, T.dtype, ordinal, m, n, kk, A.strides, B.strides, T.strides,
           A.ptr & 255, B.ptr & 255, T.ptr & 255, transposed)
    fast = CACHE.launches.get(key)
    if fast is not None and (C is None or C.same_view(T)):
        fast(A.ptr, B.ptr, T.ptr, alpha, beta, stream)
        return key, fast
    lk = loaded(k, ordinal)
    smem = k.smem_bytes(m, n, kk)
    if smem:
        k.check_limits(m, n, kk, lk.smem_limit)
    # the operands in the roles the entry sees: A, B, C, or where the launch computes the
    # transpose, B^T, A^T, C^T (the copies are made in those roles, then turned back)
    swap = swapped(k, m, n, transposed)
    ops = oriented(swap, {"a": A, "b": B, "c": T})
    variant, copies = choose(k, ops, precision, T.dtype)
    owned: list = []
    try:
        for r in copies:
            X = _copy_for(variant, r, ops[r], ordinal, stream, owned)
            if r != "c":
                _scale2d(ordinal, stream, 1.0, ops[r], X, pad=True)
            ops[r] = X
        ops = oriented(swap, ops)     # the caller's roles: the Launcher turns them (plan.swap)
        A, B = ops["a"], ops["b"]
        W = ops["c"] if "c" in copies else T
        if C is not None and not C.same_view(W):
            _scale2d(ordinal, stream, 1.0, C, W)   # the kernel updates W in place
        resolved = resolve(k, ordinal, variant, copies, m, n, kk, (A.strides, B.strides, W.strides),
                           swap)
        resolved(A.ptr, B.ptr, W.ptr, alpha, beta, stream)
        if not copies:   # no temporaries: the next call with this key can go straight to it
            if len(CACHE.launches) >= 4096:
                CACHE.launches.clear()
            CACHE.launches[key] = resolved
        if W is not T:
            _scale2d(ordinal, stream, 1.0, W, T)
        return (key, resolved) if not copies else None
    finally:
        _release(owned, stream)


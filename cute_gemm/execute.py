"""Carrying out one GEMM on the device: T = alpha * A @ B + beta * C with operands already
validated. Everything around the kernel launch lives here: an output that aliases an
input is computed apart and copied; a problem past one launch is cut into launches;
operands a kernel cannot take as they are are copied into a layout it can; a composed
kernel (Kernel.gemm_of) runs its pre-pass, then the GEMM it names; scratch is allocated
and freed in stream order (launch.alloc_async), so nothing outlives the call.
"""
from __future__ import annotations

import ctypes
import functools
import warnings

from . import launch, memo, registry
from .kernel_args import packed
from .relayout import Relaid, Scale2d, pieces, scratch_bytes
from .arrays import Operand
from .errors import CaptureError, CudaError, PrecisionFallbackWarning
from .records import AS_PLANNED, PRECISION_DTYPE, Pick
from .resolve import (CACHE, UTIL, choose, launch_entries, layout_launches, loaded, oriented,
                      resolve, swapped)


def _sub(op: Operand | None, i0: int, j0: int, rows: int, cols: int) -> Operand | None:
    """The (rows, cols) block of a device operand starting at element (i0, j0)."""
    if op is None:
        return None
    off = op.itemsize * (i0 * op.strides[0] + j0 * op.strides[1])
    return Operand(op.name, op.obj, True, op.ptr + off, (rows, cols), op.strides, op.dtype,
                   op.readonly)


def _scale2d(ordinal: int, stream: int, s: float, src: Operand | None, dst: Operand,
             pad: bool = False) -> None:
    """dst = s * src, once (relayout.Scale2d, which says what src, s and pad may be)."""
    Scale2d(ordinal, src, dst, pad)(s, src.ptr if src is not None else None, dst.ptr, stream)


def _args(name: str, doc: str, fields):
    """A ctypes struct of a kernel's parameters in order, and their offsets."""
    cls = type(name, (ctypes.Structure,), {"__doc__": doc, "_fields_": fields})
    return cls, tuple(getattr(cls, f).offset for f, _ in fields)


_I, _L, _P, _F = ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_float
# kernels/cute/c7_3xtf32.cu's passes: each operand as an (R, K) source of strides (sr, sk)
_RangeArgs, _RANGE_OFFSETS = _args("_RangeArgs", "c7's range pass", [
    ("R", _I), ("K", _I), ("src", _P), ("sr", _L), ("sk", _L), ("rmax", _P), ("flags", _P)])
_SplitArgs, _SPLIT_OFFSETS = _args("_SplitArgs", "c7's split pass: R rows of ld halves", [
    ("R", _I), ("K", _I), ("src", _P), ("sr", _L), ("sk", _L), ("dst", _P), ("ld", _L),
    ("rmax", _P), ("inexact", _P), ("flags", _P), ("norms", _P), ("sums", _P)])
_NormsArgs, _NORMS_OFFSETS = _args("_NormsArgs", "c7's norms: |B_k|^2 from B's tile sums", [
    ("R", _I), ("K", _I), ("sums", _P), ("norms", _P)])
_FinishArgs, _FINISH_OFFSETS = _args("_FinishArgs", "c7's finish: T from W by rows", [
    ("M", _I), ("N", _I), ("K", _I), ("A", _P), ("sam", _L), ("sak", _L), ("B", _P),
    ("sbk", _L), ("sbn", _L), ("rmax", _P), ("inexact", _P), ("W", _P), ("ldw", _L), ("C", _P),
    ("scm", _L), ("scn", _L), ("T", _P), ("stm", _L), ("stn", _L), ("alpha", _F),
    ("beta", _F), ("flags", _P), ("sums", _P), ("ny", _I), ("marked", _P)])
_FixArgs, _FIX_OFFSETS = _args("_FixArgs", "c7's fix: B's residuals by columns", [
    ("M", _I), ("N", _I), ("K", _I), ("A", _P), ("sam", _L), ("sak", _L), ("B", _P),
    ("sbk", _L), ("sbn", _L), ("rmax", _P), ("inexact", _P), ("T", _P), ("stm", _L),
    ("stn", _L), ("alpha", _F), ("flags", _P), ("marked", _P)])
_RefineArgs, _REFINE_OFFSETS = _args("_RefineArgs", "c7's refine: marked rows in float64", [
    ("M", _I), ("N", _I), ("K", _I), ("A", _P), ("sam", _L), ("sak", _L), ("B", _P),
    ("sbk", _L), ("sbn", _L), ("C", _P), ("scm", _L), ("scn", _L), ("T", _P), ("stm", _L),
    ("stn", _L), ("alpha", _F), ("beta", _F), ("flags", _P), ("marked", _P)])
# refine_rows.cuh's tile of T (rows, columns); CTAs across T's columns
REFINE_TILE_M, REFINE_TILE_N, REFINE_GRID_Y = 64, 128, 16


def _temp(shape, dtype: str, ordinal: int, stream: int, owned: list,
          strides: tuple[int, int] | None = None) -> Operand:
    """A scratch matrix in stream order (freed by _release on the same stream), row-major
    unless `strides` say otherwise."""
    strides = strides or (shape[1], 1)
    op = Operand("tmp", None, True, 0, tuple(shape), strides, dtype)
    op.ptr = launch.alloc_async(scratch_bytes(op), ordinal, stream)
    owned.append(op.ptr)
    return op


def _release(owned: list, stream: int) -> None:
    """Free scratch in stream order: after the work queued so far, no host wait."""
    for ptr in owned:
        launch.free_async(ptr, stream)
    owned.clear()


# ---- composed kernels (Kernel.gemm_of): passes around another kernel's GEMM -----------------
class Split:
    """cute_3xtf32's passes (kernels/cute/c7_3xtf32.cu) in stream-ordered scratch (in `owned`):
    A' (M x K' fp16) and B' (K' x N, column-major), K' = gemm_of.k_prime(K); per row of A and
    column of B the largest magnitude (rmax) and the count of elements whose residual the
    finish and fix passes add (inexact); the device word of range flags; the rows finish
    leaves to refine (marked, then their count); the sums of squares of the cancellation test
    (float64: B's per tile of 32 columns and k, |B_k|^2, A's per row and split CTA column); and
    W (M x N fp32), the GEMM's scaled result, which finish() turns into T."""

    def __init__(self, k, A: Operand, B: Operand, stream: int, ordinal: int, owned: list):
        g = k.gemm_of
        m, kk = A.shape
        n = B.shape[1]
        kp = g.k_prime(kk)
        self.A, self.B, self.stream, self.ordinal, self.owned = A, B, stream, ordinal, owned
        words = 2 * (m + n) + 1 + m + 1
        self.aux = launch.alloc_async(4 * words, ordinal, stream)
        owned.append(self.aux)
        launch.memset_f32(self.aux, 0, words, stream)
        self.rmax, self.inexact, self.flags = self.aux, self.aux + 4 * (m + n), self.aux + 8 * (m + n)
        self.marked = self.flags + 4
        tiles_b, self.ny = -(-n // k.grid.tile), k.grid.of(m, kk)[1]
        self.sq = launch.alloc_async(8 * (tiles_b * kk + kk + m * self.ny), ordinal, stream)
        owned.append(self.sq)
        b_sums, norms = self.sq, self.sq + 8 * tiles_b * kk
        self.a_sums = norms + 8 * kk
        self.A2 = _temp((m, kp), "float16", ordinal, stream, owned, (kp, 1))
        self.B2 = _temp((kp, n), "float16", ordinal, stream, owned, (1, kp))
        lk = loaded(k, ordinal)
        self.fn = {v.entry[len(k.name) + 1:]: lk.function(v.entry, k.entries) for v in k.variants}
        # each operand as (rows, K) with (row stride, k stride): A as it is, B transposed;
        # B split first: A's split reads |B_k|^2
        roles = ((n, B, B.strides[::-1], self.B2, m, "b", None, b_sums),
                 (m, A, A.strides, self.A2, 0, "a", norms, self.a_sums))
        for rows, src, (sr, sk), _, off, r, _, _ in roles[::-1]:
            launch.launch(self.fn[f"range_{r}"], k.grid.of(rows, kk), k.block, 0, stream,
                          packed(_RangeArgs(rows, kk, src.ptr, sr, sk, self.rmax + 4 * off,
                                             self.flags), _RANGE_OFFSETS))
        for rows, src, (sr, sk), dst, off, r, reads, sums in roles:
            launch.launch(self.fn[f"split_{r}"], k.grid.of(rows, kk), k.block, 0, stream,
                          packed(_SplitArgs(rows, kk, src.ptr, sr, sk, dst.ptr, kp,
                                             self.rmax + 4 * off, self.inexact + 4 * off,
                                             self.flags, reads, sums), _SPLIT_OFFSETS))
            if r == "b":
                launch.launch(self.fn["norms_b"], (min(-(-kk // k.threads), registry.GRID_X_MAX), 1, 1),
                              k.block, 0, stream,
                              packed(_NormsArgs(n, kk, b_sums, norms), _NORMS_OFFSETS))

    def scratch_out(self) -> Operand:
        """W: where the GEMM writes its scaled result (row-major M x N fp32)."""
        m, n = self.A.shape[0], self.B.shape[1]
        self.W = _temp((m, n), "float32", self.ordinal, self.stream, self.owned)
        return self.W

    def finish(self, C: Operand | None, T: Operand, alpha: float, beta: float) -> None:
        """T = alpha (W unscaled + r_A B + A r_B) + beta C (c7's finish and fix passes), the
        rows whose sum cancels recomputed in float64 (refine); nothing where the flags are
        set."""
        A, B, W, (m, kk), n = self.A, self.B, self.W, self.A.shape, self.B.shape[1]
        args = (m, n, kk, A.ptr, *A.strides, B.ptr, *B.strides)
        c, beta = ((C.ptr, *C.strides), beta) if C else ((None, 0, 0), 0.0)
        launch.launch(self.fn["finish"], (m, 1, 1), (256, 1, 1), 0, self.stream,
                      packed(_FinishArgs(*args, self.rmax, self.inexact, W.ptr, W.strides[0],
                                          *c, T.ptr, *T.strides, alpha, beta, self.flags,
                                          self.a_sums, self.ny, self.marked),
                              _FINISH_OFFSETS))
        launch.launch(self.fn["fix"], (n, 1, 1), (256, 1, 1), 0, self.stream,
                      packed(_FixArgs(*args, self.rmax, self.inexact, T.ptr, *T.strides, alpha,
                                       self.flags, self.marked), _FIX_OFFSETS))
        grid = (min(-(-m // REFINE_TILE_M), registry.GRID_X_MAX),
                min(-(-n // REFINE_TILE_N), REFINE_GRID_Y), 1)
        launch.launch(self.fn["refine"], grid, (256, 1, 1), 0, self.stream,
                      packed(_RefineArgs(*args, *c, T.ptr, *T.strides, alpha, beta, self.flags,
                                          self.marked),
                              _REFINE_OFFSETS))


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
        said.append(f"{which} {verb} magnitudes too far below their row's (or column's) largest "
                    f"(under 2^-38 of it, or densely under 2^-16) or subnormal, which its fp16 "
                    f"split cannot carry")
    if bad & 12:
        which, verb = names(4)
        said.append(f"{which} {verb} ±Inf, which its compensated sums would turn into NaN")
    return "; ".join(said)


def _composed(k, A: Operand, B: Operand, C: Operand | None, T: Operand, alpha: float,
              beta: float, stream: int, ordinal: int, pick: Pick = AS_PLANNED) -> None:
    """T = alpha * A @ B + beta * C by a composed kernel (Split: its passes, the GEMM kernel
    on A' and B' in its precision over K' = k_prime(K) through gemm_device like any call,
    into scratch W, then the passes that write T from W). Where the pre-pass sets the range
    flags, the passes that write T do nothing (they read the flags on the device) and the
    fp32 fallback computes T from A, B and C instead, so everything is queued before the
    host waits for the flags (a 4-byte copy queued behind the pre-pass): the GPU does not
    idle for the round trip, and C is still as it was for the fallback, in place or not.
    Scratch is freed in stream order on every path. pick: how the GEMM is asked for
    (gemm_device; the fallback, another kernel, keeps only its transposed); the passes see
    A and B as they are."""
    g = k.gemm_of
    if launch.capturing(stream):    # before anything is enqueued: the capture stays valid
        raise CaptureError(f"kernel {k.name!r} reads its pre-pass's range check on the host "
                           "before the GEMM, which a CUDA graph capture cannot wait for: capture "
                           f"{g.fallback!r} (fp32), or call {k.name!r} outside the capture")
    owned: list = []
    try:
        sp = Split(k, A, B, stream, ordinal, owned)
        read = launch.fetch_word(sp.flags, stream, ordinal)
        gemm_device(g.kernel, sp.A2, sp.B2, None, sp.scratch_out(), 1.0, 0.0, stream, ordinal,
                    g.precision, pick)
        sp.finish(C, T, alpha, beta)
        bad = read()
        if bad:
            warnings.warn(f"{k.name}: {_flagged(bad, g)}; computed with {g.fallback} (fp32) instead",
                          PrecisionFallbackWarning, stacklevel=2)
            gemm_device(registry.get(g.fallback), A, B, C, T, alpha, beta, stream, ordinal, "fp32",
                        Pick(pick.transposed))
    finally:
        _release(owned, stream)


def _pick_ready(lk, group: tuple[str, ...], stream: int) -> bool:
    """Whether gemm()'s pick runs this call rather than its stand-in: its launch's entry
    points are at hand (Loaded.ready); inside a graph capture always, compiled there if
    need be: every replay runs what the capture holds, so it holds the pick (its module
    loads in the relaxed capture mode, launch.relaxed)."""
    return launch.capturing(stream) or lk.ready(group, start=False)


def _composed_ready(k, ordinal: int, start: bool = False) -> bool:
    """Whether a composed kernel's launches can be had without NVRTC (Loaded.ready): its
    pre-pass and its GEMM's launches on A' and B' (resolve.layout_launches); with `start`,
    begins the compile of those that cannot in the background. (Its fp32 fallback, for
    inputs the pre-pass cannot split, is compiled when first used, as without a stand-in.)"""
    return all([loaded(x, ordinal).ready(group, start=start)
                for x, group in _composed_launches(k.name)])


@functools.lru_cache(maxsize=None)
def _composed_launches(name: str) -> tuple:
    """(kernel, entry set) of each launch a call of composed kernel `name` makes, as
    resolve.layout_launches says: registry data, the same for every call."""
    k = registry.get(name)
    kernels = {x.name: x for x in (k, k.gemm_of.kernel, UTIL)}
    return tuple((kernels[n], group) for n, groups in layout_launches(k, "nn").items()
                 for group in groups)


def _stand_in(stand_in, A: Operand, B: Operand, C: Operand | None, T: Operand, alpha: float,
              beta: float, stream: int, ordinal: int) -> bool:
    """The call run by gemm()'s stand-in (auto.stand_in: kernel, precision): on A and B as
    they are where they have that precision's type, else on copies widened to it (exact),
    into T, or where the kernel writes only float32 and T is 16-bit, into a float32 copy
    rounded into T once. False where that scratch cannot be had: the call then waits for
    its pick, as it would without a stand-in."""
    quick, precision = stand_in
    dtype = PRECISION_DTYPE[precision]
    owned: list = []
    try:
        try:
            A2, B2 = (X if X.dtype == dtype else _temp(X.shape, dtype, ordinal, stream, owned)
                      for X in (A, B))
            W = (T if quick.computes(precision, T.dtype) else
                 _temp(T.shape, "float32", ordinal, stream, owned))
        except CudaError:
            return False
        for X, X2 in ((A, A2), (B, B2)):
            if X2 is not X:
                _scale2d(ordinal, stream, 1.0, X, X2)
        CW = C
        if C is not None and W is not T:
            _scale2d(ordinal, stream, 1.0, C, W)    # widened into W, which the GEMM updates
            CW = W
        gemm_device(quick, A2, B2, CW, W, alpha, beta, stream, ordinal, precision)
        if W is not T:
            _scale2d(ordinal, stream, 1.0, W, T)
        return True
    finally:
        _release(owned, stream)


def gemm_device(k, A: Operand, B: Operand, C: Operand | None, T: Operand,
                alpha: float, beta: float, stream: int, ordinal: int, precision: str = "fp32",
                pick: Pick = AS_PLANNED, stand_in=None):
    """T = alpha * A @ B + beta * C on the device (C may be T itself, or None) in
    `precision` (A and B of its type; C of T's). pick: gemm()'s table pick (records.Pick):
    on the transposed problem C^T = B^T A^T (resolve.swapped decides what each launch
    computes), with split_k CTAs per tile (resolve). stand_in: (kernel, precision) that runs
    the call instead (as planned) while k's entry points for it compile in the background
    (auto.stand_in; Loaded.ready). Returns (key, launcher) of the CACHE.launches entry the
    call went through, or None (always None from a stand-in: run()'s signature hot path
    must not keep it)."""
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
                      (1, T.shape[0]) if pick.transposed else None)
            gemm_device(k, A, B, C, W, alpha, beta, stream, ordinal, precision, pick, stand_in)
            _scale2d(ordinal, stream, 1.0, W, T)
        finally:
            _release(owned, stream)
        return None
    if not products:
        _scale2d(ordinal, stream, beta, C, T)
        return None
    mc, nc, kc = k.launch_extents(m, n, kk, pick.transposed)
    if (mc, nc, kc) != (m, n, kk):
        # beyond one launch (grid limits, 32-bit indices): launches on blocks of C, and
        # along K each piece adds to what the one before left in T
        for i0, r in pieces(m, mc):
            for j0, c in pieces(n, nc):
                Tb = _sub(T, i0, j0, r, c)
                for p0, q in pieces(kk, kc):
                    gemm_device(k, _sub(A, i0, p0, r, q), _sub(B, p0, j0, q, c),
                                _sub(C, i0, j0, r, c) if p0 == 0 else Tb, Tb, alpha,
                                beta if p0 == 0 else 1.0, stream, ordinal, precision, pick,
                                stand_in)
        return None
    if k.gemm_of is not None:
        # (inside a capture _composed raises, stand-in or not: it waits on the host)
        if (stand_in is not None and not launch.capturing(stream)
                and not _composed_ready(k, ordinal)
                and _stand_in(stand_in, A, B, C, T, alpha, beta, stream, ordinal)):
            _composed_ready(k, ordinal, start=True)     # after the stand-in's own compile
            return None
        _composed(k, A, B, C, T, alpha, beta, stream, ordinal, pick)
        return None
    # the hot path: a launch already resolved for this kernel, shape, strides, pointer
    # alignment class and pick (everything swapped(), choose() and the grid depend on)
    # skips straight to the driver; a launch on relayout copies too (relayout.Relaid: the
    # copies' layouts follow from the key, only their stream-ordered pointers change)
    key = (k.name, precision, T.dtype, ordinal, m, n, kk, A.strides, B.strides, T.strides,
           A.ptr & 255, B.ptr & 255, T.ptr & 255, pick)
    fast = CACHE.launches.get(key)
    if fast is None:
        lk = loaded(k, ordinal)
        smem = k.smem_bytes(m, n, kk)
        if smem:
            k.check_limits(m, n, kk, lk.smem_limit)
        # the operands in the roles the entry sees: A, B, C, or where the launch computes the
        # transpose, B^T, A^T, C^T (the copies are made in those roles, then turned back)
        swap = swapped(k, m, n, pick.transposed)
        variant, copies = choose(k, oriented(swap, {"a": A, "b": B, "c": T}), precision, T.dtype)
        if stand_in is not None:
            group = launch_entries(k, variant, reduce=pick.reduce and pick.split_k > 0)
            if not _pick_ready(lk, group, stream):
                if _stand_in(stand_in, A, B, C, T, alpha, beta, stream, ordinal):
                    lk.ready(group)             # begins the compile, after the stand-in's own
                    return None
        if copies:
            fast = Relaid(k, ordinal, variant, copies, swap, A, B, T, pick.split_k, pick.reduce)
        else:
            fast = resolve(k, ordinal, variant, copies, m, n, kk,
                           (A.strides, B.strides, T.strides), swap, pick.split_k, pick.reduce)
        memo.keep(CACHE.launches, key, fast)
    if C is not None and not C.same_view(T):
        _scale2d(ordinal, stream, 1.0, C, T)       # the launch updates T in place
    fast(A.ptr, B.ptr, T.ptr, alpha, beta, stream)
    return key, fast

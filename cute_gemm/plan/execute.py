"""Carrying out one GEMM on the device, T = alpha * A @ B + beta * C on validated operands,
and everything around its launch: an output aliasing an input computed apart and copied, a
problem past one launch cut into launches, relayout copies, a composed kernel's passes, a
stand-in while the pick compiles. Scratch is allocated and freed in stream order."""
from __future__ import annotations

import functools
from dataclasses import replace

from .. import registry
from ..base import memo
from ..driver import launch, pool
from .composed import Composed
from .relayout import Copies, batch_scratch, pieces, prepared
from ..driver.arrays import Operand
from ..base.errors import CudaError, ShapeLimitError
from ..base.precisions import ACCUMULATOR
from ..registry.epilogue import EPILOGUE_ONLY
from ..registry.records import AS_PLANNED, ONE_LAUNCH, PRECISION_DTYPE, Pick
from .resolve import CACHE, UTIL, entry_for, launch_group, layout_launches, loaded


def _sub(op: Operand | None, i0: int, j0: int, rows: int, cols: int) -> Operand | None:
    """The (rows, cols) block of a device operand starting at element (i0, j0)."""
    if op is None:
        return None
    off = op.itemsize * (i0 * op.strides[0] + j0 * op.strides[1])
    return replace(op, ptr=op.ptr + off, shape=(rows, cols), host=None)


def copier(ordinal: int, src: Operand | None, dst: Operand, *more) -> Copies:
    """The prepared relayout.Copies of dst = s * src (and of each further (src, dst) pair in
    `more`) for their geometry (kept: per call only pointers and scales change)."""
    pairs = ((src, dst), *more)
    key = (ordinal, *((None if x is None else x.geometry(), y.geometry()) for x, y in pairs))
    c = CACHE.copies.get(key)
    if c is None:
        if len(CACHE.copies) >= memo.ENTRIES:      # (bounded: base/memo.py)
            CACHE.copies.clear()
        c = CACHE.copies[key] = Copies(ordinal, [(x, y, False) for x, y in pairs])
    return c


def _scale2d(ordinal: int, stream: int, s: float, src: Operand | None, dst: Operand) -> None:
    """dst = s * src, once."""
    copier(ordinal, src, dst)((s,), (src.ptr if src is not None else None,), (dst.ptr,), stream)


def _temp(shape, dtype: str, ordinal: int, stream: int, owned: list,
          strides: tuple[int, int] | None = None, bcount: tuple[int, int] = (1, 1)) -> Operand:
    """A scratch matrix (one per problem of a batch of `bcount`) in stream order, row-major
    unless `strides` say otherwise; `owned` keeps it for _release."""
    strides = strides or (shape[1], 1)
    op = Operand("tmp", None, True, 0, tuple(shape), strides, dtype, bcount=bcount)
    nbytes, bstrides = batch_scratch(op)
    op = replace(op, bstrides=bstrides, ptr=pool.alloc_async(nbytes, ordinal, stream))
    owned.append(op.ptr)
    return op


def _release(owned: list, stream: int) -> None:
    """Free scratch in stream order: after the work queued so far, no host wait."""
    for ptr in owned:
        pool.free_async(ptr, stream)
    owned.clear()


def _pick_ready(lk, group: tuple[str, ...], stream: int) -> bool:
    """Whether gemm()'s pick runs this call rather than its stand-in: its entry points are at
    hand, or the stream captures a graph (every replay runs what the capture holds, so it
    must hold the pick, compiled there if need be)."""
    return launch.capturing(stream) or lk.ready(group, start=False)


def at_hand(k, A: Operand, B: Operand, T: Operand, precision: str, pick: Pick, ordinal: int,
            start: bool) -> bool:
    """Whether `k`'s launches of this call as `pick` (a composed kernel's passes and GEMM too)
    run without compiling; with `start`, those that do not begin compiling in the background."""
    if k.gemm_of is not None:
        launches = _composed_launches(k.name)
    else:
        _, variant, _ = entry_for(k, loaded(k, ordinal), A, B, T, precision, pick)
        launches = ((k, launch_group(k, variant, pick, T.bcount != (1, 1))),)
    return all([loaded(x, ordinal).ready(group, start=start) for x, group in launches])


@functools.lru_cache(maxsize=None)
def _composed_launches(name: str) -> tuple:
    """(kernel, entry set) of each launch a call of composed kernel `name` makes."""
    k = registry.get(name)
    kernels = {x.name: x for x in (k, k.gemm_of.kernel, UTIL)}
    return tuple((kernels[n], group) for n, groups in layout_launches(k, "nn").items()
                 for group in groups)


def _stand_in(stand_in, A: Operand, B: Operand, C: Operand | None, T: Operand, alpha: float,
              beta: float, stream: int, ordinal: int) -> bool:
    """The call run by gemm()'s stand-in (stand_in(): (kernel, precision)), on A and B widened
    to that precision's type where they differ (exact), into T or, where the kernel cannot
    write T's type, a float32 copy rounded into T once. False where there is no stand-in or
    no scratch: the call then waits for its pick."""
    quick, precision = stand_in() or (None, None)
    if quick is None or (T.bcount != (1, 1) and not quick.batched):
        return False
    dtype = PRECISION_DTYPE[precision]
    owned: list = []
    try:
        try:
            A2, B2 = (X if X.dtype == dtype else
                      _temp(X.shape, dtype, ordinal, stream, owned, bcount=X.bcount)
                      for X in (A, B))
            W = (T if quick.computes(precision, T.dtype) else
                 _temp(T.shape, ACCUMULATOR, ordinal, stream, owned, bcount=T.bcount))
        except CudaError:
            return False
        # A and B widened, and C into W, which the GEMM updates: one launch where types allow
        widened = [(X, X2) for X, X2 in ((A, A2), (B, B2)) if X2 is not X]
        CW = C
        if C is not None and W is not T:
            widened.append((C, W))
            CW = W
        if widened:
            copier(ordinal, *widened[0], *widened[1:])(
                (1.0,) * len(widened), [X.ptr for X, _ in widened], [X2.ptr for _, X2 in widened],
                stream)
        gemm_device(quick, A2, B2, CW, W, alpha, beta, stream, ordinal, precision)
        if W is not T:
            _scale2d(ordinal, stream, 1.0, W, T)
        return True
    finally:
        _release(owned, stream)


def gemm_device(k, A: Operand, B: Operand, C: Operand | None, T: Operand,
                alpha: float, beta: float, stream: int, ordinal: int, precision: str = "fp32",
                pick: Pick = AS_PLANNED, stand_in=None, call=None, epi=None):
    """T = alpha * A @ B + beta * C on the device (C may be T itself, or None) in `precision`.
    pick: gemm()'s table pick. stand_in: answers (kernel, precision) that run the call while
    k's entry points compile in the background, or None. call: run()'s Signature where T is
    its out (spans and fits read once). epi: a fused epilogue (driver.epilogue.Prepared) k
    applies. Returns (key, launcher) of the CACHE.launches entry the call went through, or
    None (always from a stand-in: the hot path must not keep it)."""
    m, kk = A.shape
    n = B.shape[1]
    if C is None or beta == 0.0:
        C, beta = None, 0.0     # BLAS: with beta == 0, C is not read
    if m == 0 or n == 0 or 0 in T.bcount:
        return None
    products = kk > 0 and alpha != 0.0     # BLAS: with alpha == 0, A and B are not read
    read = (((A, "a"), (B, "b")) if products else ()) + (((C, "c"),) if C is not None else ())
    spans = call.spans if call is not None else {"out": T.span(), **{r: x.span() for x, r in read}}
    if epi is not None:         # the epilogue's vectors are read too
        read += tuple((v, f"v{i}") for i, v in enumerate(epi.vectors))
        spans = {**spans, **{f"v{i}": v.span() for i, v in enumerate(epi.vectors)}}
    (tlo, thi) = spans["out"]
    if any(tlo < spans[r][1] and spans[r][0] < thi and not (x is C and C.same_view(T))
           for x, r in read):
        # T aliases an input other than as C in place: compute apart, then copy into T
        owned: list = []
        try:
            # row-major in the problem asked for (C^T's, for a pick of the transposed
            # problem): written as the launch would write a fresh result of that problem
            W = _temp(T.shape, T.dtype, ordinal, stream, owned,
                      (1, T.shape[0]) if pick.transposed else None, T.bcount)
            gemm_device(k, A, B, C, W, alpha, beta, stream, ordinal, precision, pick, stand_in,
                        epi=epi)
            _scale2d(ordinal, stream, 1.0, W, T)
        finally:
            _release(owned, stream)
        return None
    if not products and epi is None:
        _scale2d(ordinal, stream, beta, C, T)
        return None
    if not products:
        # the epilogue of beta * C alone: its kernel of no k-tile, on K = 0 (A, B unread),
        # in a precision of its own that writes T's type where it computes none of A's
        k, pick = registry.get_fused(EPILOGUE_ONLY, epi.spec), AS_PLANNED
        if not k.computes(precision, T.dtype):
            precision = next(p for p in k.precisions if k.computes(p, T.dtype))
        dt = PRECISION_DTYPE[precision]
        A, B, kk = replace(A, shape=(m, 0), dtype=dt), replace(B, shape=(0, n), dtype=dt), 0
    mc, nc, kc = ((m, n, kk) if max(m, n, kk) <= ONE_LAUNCH
                  else k.launch_extents(m, n, kk, pick.transposed))
    if (mc, nc, kc) != (m, n, kk):
        # beyond one launch (grid limits, 32-bit indices): launches on blocks of C, and
        # along K each piece adds to what the one before left in T
        if epi is not None and kc < kk:
            raise ShapeLimitError(f"a fused epilogue on K = {kk}: {k.name} covers K in "
                                  f"launches of {kc}, and the epilogue runs after the last")
        for i0, r in pieces(m, mc):
            for j0, c in pieces(n, nc):
                Tb = _sub(T, i0, j0, r, c)
                for p0, q in pieces(kk, kc):
                    gemm_device(k, _sub(A, i0, p0, r, q), _sub(B, p0, j0, q, c),
                                _sub(C, i0, j0, r, c) if p0 == 0 else Tb, Tb, alpha,
                                beta if p0 == 0 else 1.0, stream, ordinal, precision, pick,
                                stand_in, epi=None if epi is None else epi.block(i0, j0))
        return None
    # a launch already resolved for this kernel, shape, strides, pointer alignment class and
    # pick (all that swapped(), choose() and the grid read) goes straight to the driver; one
    # on relayout copies or a composed kernel's too (only their pointers change)
    key = (k.name, precision, T.dtype, ordinal, m, n, kk, A.strides, B.strides, T.strides,
           A.ptr & 255, B.ptr & 255, T.ptr & 255, pick)
    if T.bcount != (1, 1):
        key += (T.bcount, A.bstrides, B.bstrides, T.bstrides)
    fast = CACHE.launches.get(key)
    if fast is None:
        if k.gemm_of is not None:
            launches = _composed_launches(k.name) if stand_in is not None else ()
            if (launches and not all([_pick_ready(loaded(x, ordinal), g, stream) for x, g in launches])
                    and _stand_in(stand_in, A, B, C, T, alpha, beta, stream, ordinal)):
                for x, group in launches:   # their compiles begin, after the stand-in's own
                    loaded(x, ordinal).ready(group)
                return None
            fast = Composed(k, ordinal, A, B, T, pick)
        else:
            smem = k.dyn_smem(m, n, kk)       # (read once: the device's limit, the launch)
            lk = loaded(k, ordinal)
            swap, variant, copies = entry_for(k, lk, A, B, T, precision, pick,
                                              call.fits if call is not None else None, smem)
            if stand_in is not None:
                group = launch_group(k, variant, pick, T.bcount != (1, 1))
                if (not _pick_ready(lk, group, stream)
                        and _stand_in(stand_in, A, B, C, T, alpha, beta, stream, ordinal)):
                    lk.ready(group)             # begins the compile, after the stand-in's own
                    return None
            fast = prepared(k, ordinal, A, B, T, swap, variant, copies, pick, smem)
        if len(CACHE.launches) >= memo.ENTRIES:     # (bounded: base/memo.py)
            CACHE.launches.clear()
        CACHE.launches[key] = fast
    if C is not None and not C.same_view(T):
        _scale2d(ordinal, stream, 1.0, C, T)       # the launch updates T in place
    if epi is not None:
        fast(A.ptr, B.ptr, T.ptr, alpha, beta, stream, epi.values)
    else:
        fast(A.ptr, B.ptr, T.ptr, alpha, beta, stream)
    return key, fast

"""A call's Signature: its operands parsed and validated once (a CuteGemmError before any
launch for anything the kernels cannot take), and what the steps after it read of them."""
from __future__ import annotations

import numpy as np

from . import batching
from ..base.errors import AliasError, InputError, ShapeError
from ..base.precisions import ITEMSIZE
from .arrays import fits, parse


class Signature:
    """The operands of alpha * a @ b + beta * c into out, parsed and checked once (run() and
    cross_check() share it): A, B, C, O (C, O may be None), M, N, K, the stream, `fits` (of A, B
    and out as "c"), `spans` (role -> Operand.span()), `producers` (CAI v3 streams). N-D
    operands: `shape` (the result's; None: 2-D), `made` (the layout of a result run()
    allocates), `batch` ((outer, inner) problems; (1, 1): one, or folded into one taller
    problem unless not can_fold). The call's class as the tune tables name it: `layout`
    (records.LAYOUTS) and `aligned` (pointers and leading dimensions 16-byte aligned, a new
    result counting as row-major: the vector and TMA paths')."""
    __slots__ = ("A", "B", "C", "O", "m", "n", "k", "stream", "fits", "spans", "producers",
                 "shape", "batch", "made", "layout", "aligned")

    def __init__(self, a, b, c, out, alpha, beta, stream: int | None = None,
                 can_fold: bool = True):
        A, B = parse("a", a, stream), parse("b", b, stream)
        (m, k1), (k2, n) = A.shape, B.shape
        if k1 != k2:
            raise ShapeError(f"inner dimensions differ: a is {A.lead + A.shape}, b is "
                             f"{B.lead + B.shape} ({k1} != {k2})")
        C = parse("c", c, stream) if c is not None else None
        O = parse("out", out, stream) if out is not None else None
        for op in (C, O):
            if op is not None and op.shape != (m, n):
                raise ShapeError(f"{op.name} must have shape {(m, n)} (a @ b), got {op.shape}")
        shape = made = None
        if any(x is not None and x.lead for x in (A, B, C, O)):
            A, B, C, O, shape, made = batching.plan(A, B, C, O, can_fold)
        self.A, self.B, self.C, self.O, self.stream = A, B, C, O, stream
        self.shape, self.batch, self.made = shape, A.bcount, made
        (self.m, self.k), self.n = A.shape, n        # (a fold makes M taller)
        self.fits = fits({"a": A, "b": B} if O is None else {"a": A, "b": B, "c": O})
        # a major in fits (a unit stride, the other stride past it) rules out a shared address
        # within one problem; anything else, or a batch, is counted out by self_overlapping
        if (O is not None and (self.fits["c"][0] == "strided" or O.bcount != (1, 1))
                and O.self_overlapping()):
            raise AliasError(f"out has strides {O.lead_strides + O.strides} (elements) for "
                             f"shape {shape or O.shape}: several of its elements share one "
                             "address, so it cannot hold a result")
        if O is not None and O.readonly:
            raise InputError("out is read-only")
        for nm, v in (("alpha", alpha), ("beta", beta)):
            if type(v) is not float and (not isinstance(v, (int, float, np.floating, np.integer))
                                         or isinstance(v, bool)):
                raise InputError(f"{nm} must be a real number, got {type(v).__name__}")
        ops = [x for x in (A, B, C, O) if x is not None]
        if any(x.device != A.device for x in ops):
            where = ", ".join(f"{x.name}={'device' if x.device else 'host'}" for x in ops)
            raise InputError(f"mixing host and device arrays is not supported ({where})")
        (a_major, a_align), (b_major, b_align) = self.fits["a"], self.fits["b"]
        self.layout = ("t" if a_major == "m" else "n") + ("t" if b_major == "k" else "n")
        e = ITEMSIZE[A.dtype]
        self.aligned = ((self.n * e % 16 == 0 if O is None
                         else self.fits["c"][1] * ITEMSIZE[O.dtype] >= 16)
                        and a_align * e >= 16 and b_align * ITEMSIZE[B.dtype] >= 16)
        self.spans, self.producers = {}, set()
        for role, op in (("a", A), ("b", B), ("c", C), ("out", O)):
            if op is None:
                continue
            if op.stream is not None:
                self.producers.add(op.stream)
            if op.bcount != (1, 1):
                self.spans[role] = op.span()
                continue
            (r, c), (sr, sc), e = op.shape, op.strides, ITEMSIZE[op.dtype]
            self.spans[role] = (0, 0) if r == 0 or c == 0 else (    # (span(), inlined)
                op.ptr + e * (min(0, (r - 1) * sr) + min(0, (c - 1) * sc)),
                op.ptr + e * (max(0, (r - 1) * sr) + max(0, (c - 1) * sc) + 1))

    @property
    def modes(self) -> int:
        """The batch modes its launches walk (Kernel.batch_modes)."""
        return 2 if self.batch[0] > 1 else 1


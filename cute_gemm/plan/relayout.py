"""Copies around a launch, prepared once: `Scale2d` (dst = s * src by resolve.UTIL) for fixed
shapes, strides and types, and `Relaid`, a launch on stream-ordered copies of the operands
its entry cannot take as they are. Both pack their blocks once per thread, as a Launcher:
per call only pointers and scales change."""
from __future__ import annotations

import threading
from dataclasses import replace

from .. import registry
from ..driver import launch, pool
from ..driver.batching import Z_MAX
from ..driver.arrays import Operand
from ..driver.kernel_args import F, I, L, P, arg_block, packed
from ..registry.records import AS_PLANNED, Pick
from .launcher import pieces
from .resolve import UTIL, UTIL_ENTRY, copy_target, loaded, oriented, resolve


def padded(op: Operand) -> tuple[int, int]:
    """The extents of `op` with its contiguous mode stretched to its leading dimension."""
    (m, n), (s0, s1) = op.shape, op.strides
    return (m, max(n, s0)) if s1 == 1 and m > 0 else (max(m, s1), n) if s0 == 1 else (m, n)


def scratch_bytes(op: Operand) -> int:
    """Bytes of a scratch matrix shaped and strided as `op`, its last row's pad included."""
    span = 1 + sum((x - 1) * st for x, st in zip(padded(op), op.strides) if x > 0)
    return op.itemsize * max(span, 1)


ScaleArgs, SCALE_OFFSETS = arg_block("ScaleArgs", [   # kernels/util/scale2d.cu's parameters
    ("M", I), ("N", I), ("MS", I), ("NS", I), ("s", F),
    ("src", P), ("ss0", L), ("ss1", L), ("dst", P), ("ds0", L), ("ds1", L),
    ("Lin", I), ("z0", I), ("bs0", L), ("bs1", L), ("bd0", L), ("bd1", L)])


def batch_scratch(op: Operand, like: Operand | None = None) -> tuple[int, tuple[int, int]]:
    """(bytes, batch strides) of scratch shaped as `op` for each problem of its batch, each
    matrix on a 256-byte boundary; one matrix along a mode `like` (copied in) broadcasts."""
    one = -(-scratch_bytes(op) // 256) * 256
    (l0, l1), (s0, s1) = op.bcount, like.bstrides if like is not None else (1, 1)
    n0, n1 = l0 if s0 else 1, l1 if s1 else 1
    return one * n0 * n1, (n1 * one // op.itemsize if s0 else 0, one // op.itemsize if s1 else 0)


def stepping(src: Operand, dst: Operand) -> tuple[Operand, Operand]:
    """src and dst over only the batch modes src steps along (a broadcast matrix copied once)."""
    (l0, l1), (s0, s1) = src.bcount, src.bstrides
    count = (l0 if s0 else 1, l1 if s1 else 1)
    return replace(src, bcount=count), replace(dst, bcount=count)


class Scale2d:
    """dst = s * src for operands shaped and strided as `src` and `dst` (src None or s == 0:
    zeros; across types as UTIL_ENTRY converts). pad: also zero dst's pad up to its leading
    dimension. One launch per piece of the grid's limits; call with (s, src, dst, stream)."""
    __slots__ = ("parts", "strides", "local")

    def __init__(self, ordinal: int, src: Operand | None, dst: Operand, pad: bool = False):
        m, n = dst.shape
        self.parts: list = []
        self.strides = (src.strides if src is not None else (0, 0)) + tuple(dst.strides)
        self.local = threading.local()
        if m * n * dst.bcount[0] * dst.bcount[1] == 0:
            return
        # the batch (dst's problems; src's steps, 0 where it is one matrix for all)
        batch = (dst.bcount[1], *(src.bstrides if src is not None else (0, 0)), *dst.bstrides)
        wm, wn = padded(dst) if pad else (m, n)
        f = loaded(UTIL, ordinal).function(
            UTIL_ENTRY[src.dtype if src is not None else dst.dtype, dst.dtype])
        mc, nc, _ = UTIL.launch_extents(wm, wn, 1)
        (ss0, ss1), (ds0, ds1) = self.strides[:2], dst.strides
        for i0, r in pieces(wm, mc):
            for j0, c in pieces(wn, nc):
                # (rows, cols) launched, of which (in-range rows, cols) hold dst's elements
                dims = (r, c, max(0, min(r, m - i0)), max(0, min(c, n - j0)))
                src_off = None if src is None else src.itemsize * (i0 * ss0 + j0 * ss1)
                for z0, z in pieces(dst.bcount[0] * dst.bcount[1], Z_MAX):  # (along z)
                    gx, gy, _ = UTIL.grid(r, c, 1)
                    self.parts.append((launch.Site(f, (gx, gy, z), UTIL.block, 0, False, ScaleArgs.param_sizes),
                                       (dims, z0, batch), src_off,
                                       dst.itemsize * (i0 * ds0 + j0 * ds1)))

    def __call__(self, s: float, src: int | None, dst: int, stream: int) -> None:
        try:
            blocks = self.local.blocks
        except AttributeError:          # this thread's first call
            blocks = self.local.blocks = [
                packed(ScaleArgs(*dims, 0.0, None, *self.strides[:2], None, *self.strides[2:],
                                 batch[0], z0, *batch[1:]), SCALE_OFFSETS)
                for _, (dims, z0, batch), _, _ in self.parts]
        for (site, _, src_off, dst_off), blk in zip(self.parts, blocks):
            a = blk[0][0]                # the struct the pointer array points into
            a.s, a.dst = s, dst + dst_off
            a.src = None if src is None or src_off is None else src + src_off
            site(stream, blk)


class Relaid:
    """A launch of `variant` on copies (copy_target's layouts) of the operands in `copies`
    (roles as the entry sees them). Called as a Launcher: one stream-ordered scratch; A and
    B (with pads) and, where beta != 0, C copied in; the launch; the result copied back."""
    __slots__ = ("ordinal", "launcher", "temps", "nbytes", "back", "load_c")

    def __init__(self, k: registry.Kernel, ordinal: int, variant: registry.Variant,
                 copies: list[str], swap: bool, A: Operand, B: Operand, T: Operand,
                 pick: Pick = AS_PLANNED):
        m, kk = A.shape
        n = B.shape[1]
        self.ordinal = ordinal
        ops = oriented(swap, {"a": A, "b": B, "c": T})
        for r in copies:
            X = ops[r]
            W = Operand("tmp", None, True, 0, X.shape, copy_target(variant, r, X.shape)[1],
                        X.dtype, bcount=X.bcount)
            ops[r] = replace(W, bstrides=batch_scratch(W, X)[1])
        ops = oriented(swap, ops)                  # back in the caller's roles
        # per copied operand: (role, offset in the scratch, copy in), on 256-byte boundaries
        copied = {{"a": "b", "b": "a"}.get(x, x) if swap else x for x in copies}   # caller's roles
        self.temps, self.nbytes = [], 0
        for r, X in (("a", A), ("b", B), ("c", T)):
            if r not in copied:
                continue
            W = ops[r]
            self.temps.append((r, self.nbytes,
                               Scale2d(ordinal, *stepping(X, W), pad=True) if r != "c" else None))
            self.nbytes += batch_scratch(W, X)[0]
        W = ops["c"] if "c" in copies else T
        self.back = Scale2d(ordinal, W, T) if W is not T else None
        self.load_c = Scale2d(ordinal, T, W) if W is not T else None
        A2, B2 = ops["a"], ops["b"]
        self.launcher = resolve(k, ordinal, variant, copies, m, n, kk,
                                (A2.strides, B2.strides, W.strides), swap, pick,
                                batch=(W.bcount, (A2.bstrides, B2.bstrides, W.bstrides)))

    @property
    def plan(self):
        return self.launcher.plan

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int,
                 epi=None) -> None:
        ptrs = {"a": a, "b": b, "c": c}
        scratch = pool.alloc_async(self.nbytes, self.ordinal, stream)
        try:
            for r, offset, copy_in in self.temps:
                if copy_in is not None:
                    copy_in(1.0, ptrs[r], scratch + offset, stream)
                ptrs[r] = scratch + offset
            if self.load_c is not None and beta != 0.0:
                self.load_c(1.0, c, ptrs["c"], stream)     # the kernel updates its copy
            self.launcher(ptrs["a"], ptrs["b"], ptrs["c"], alpha, beta, stream, epi)
            if self.back is not None:
                self.back(1.0, ptrs["c"], c, stream)
        finally:
            pool.free_async(scratch, stream)


# ---- a launch of kernel k for operands shaped and strided as A, B and T ----------------------
def prepared(k: registry.Kernel, ordinal: int, A: Operand, B: Operand, T: Operand, swap,
             variant, copies, pick, smem: int | None = None):
    """A launch (resolve.entry_for's) ready to call with pointers: Relaid where it needs
    copies, else a resolved Launcher."""
    if copies:
        return Relaid(k, ordinal, variant, copies, swap, A, B, T, pick)
    return resolve(k, ordinal, variant, copies, A.shape[0], B.shape[1], A.shape[1],
                   (A.strides, B.strides, T.strides), swap, pick, smem,
                   (T.bcount, (A.bstrides, B.bstrides, T.bstrides)))

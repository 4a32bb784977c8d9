"""Copies around a launch, prepared once: `Copies` (dst = s * src by resolve.UTIL, several
copies a launch) for fixed shapes, strides and types, and `Relaid`, a launch on stream-ordered
copies of the operands its entry cannot take as they are. Both pack their blocks once per
thread, as a Launcher: per call only pointers and scales change."""
from __future__ import annotations

import threading
from dataclasses import replace

from .. import registry
from ..driver import launch, pool
from ..driver.arrays import Operand
from ..driver.kernel_args import F, I, L, P, arg_block, packed
from ..base.errors import ShapeLimitError
from ..registry.records import AS_PLANNED, EXTENT_MAX, Pick
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


# kernels/util/scale2d.cu's Copy2d and Copies2d, the one parameter of its entry points
Copy2d, _ = arg_block("Copy2d", [
    ("M", I), ("N", I), ("MS", I), ("NS", I), ("s", F), ("tiles_m", I), ("tiles_n", I),
    ("first", I), ("Lin", I), ("z0", I), ("wide", I), ("src", P), ("ss0", L), ("ss1", L), ("bs0", L),
    ("bs1", L), ("dst", P), ("ds0", L), ("ds1", L), ("bd0", L), ("bd1", L)])
MAX_COPIES = 4          # (scale2d.cu kCopies)
Copies2d, _ = arg_block("Copies2d", [("c", Copy2d * MAX_COPIES), ("count", I)])
CopyArgs, COPY_OFFSETS = arg_block("CopyArgs", [("copies", Copies2d)])   # (one parameter)
TILE, WIDE = 32, 256    # a block's square of dst; a wide tile's length along the unit mode
BLOCKS_MAX = (1 << 31) - 1


def batch_scratch(op: Operand, like: Operand | None = None) -> tuple[int, tuple[int, int]]:
    """(bytes, batch strides) of scratch shaped as `op` for each problem of its batch, each
    matrix on a 256-byte boundary; one matrix along a mode `like` (copied in) broadcasts."""
    one = -(-scratch_bytes(op) // 256) * 256
    (l0, l1), (s0, s1) = op.bcount, like.bstrides if like is not None else (1, 1)
    n0, n1 = l0 if s0 else 1, l1 if s1 else 1
    return one * n0 * n1, (n1 * one // op.itemsize if s0 else 0, one // op.itemsize if s1 else 0)


def wide_mode(src: Operand | None, dst: Operand, extents: tuple[int, int]) -> int:
    """scale2d.cu's Copy2d.wide: 2 (1) where both sides run along n (m) with unit stride, the
    longer such mode first: 32x256 tiles without shared memory; 0: a transposing copy."""
    for mode in ((2, 1) if extents[1] >= extents[0] else (1, 2)):
        if dst.strides[mode - 1] == 1 and (src is None or src.strides[mode - 1] == 1):
            return mode
    return 0


def stepping(src: Operand, dst: Operand) -> tuple[Operand, Operand]:
    """src and dst over only the batch modes src steps along (a broadcast matrix copied once)."""
    (l0, l1), (s0, s1) = src.bcount, src.bstrides
    count = (l0 if s0 else 1, l1 if s1 else 1)
    return replace(src, bcount=count), replace(dst, bcount=count)


class Copies:
    """dst_i = s_i * src_i for operands shaped and strided as each (src_i, dst_i, pad_i) of
    `copies` (src None or s == 0: zeros; across types as UTIL_ENTRY converts; pad: dst's pad up
    to its leading dimension zeroed too), in as few launches as their types allow: one per
    (source, destination) type pair and MAX_COPIES copies. Call with each copy's scale, source
    and destination pointers."""
    __slots__ = ("launches", "local")

    def __init__(self, ordinal: int, copies):
        groups: dict = {}   # entry -> [(copy's index, blocks, Copy2d's fields, offsets)]
        for i, (src, dst, pad) in enumerate(copies):
            m, n = dst.shape
            problems = dst.bcount[0] * dst.bcount[1]
            if m * n * problems == 0:
                continue
            wm, wn = padded(dst) if pad else (m, n)
            wide = wide_mode(src, dst, (wm, wn))
            bm, bn = (WIDE if wide == 1 else TILE), (WIDE if wide == 2 else TILE)
            ss, bs = (src.strides, src.bstrides) if src is not None else ((0, 0), (0, 0))
            entry = UTIL_ENTRY[src.dtype if src is not None else dst.dtype, dst.dtype]
            # pieces of at most EXTENT_MAX rows and columns (32-bit indices), and of a batch
            # along the problems a launch's blocks can hold
            for i0, r in pieces(wm, EXTENT_MAX):
                for j0, c in pieces(wn, EXTENT_MAX):
                    tm, tn = -(-r // bm), -(-c // bn)
                    if tm * tn > BLOCKS_MAX:
                        raise ShapeLimitError(f"a copy of {r}x{c} elements: more {bm}x{bn} "
                                              f"tiles than one launch's {BLOCKS_MAX} blocks")
                    ms, ns = ((max(0, min(r, m - i0)), max(0, min(c, n - j0)))
                              if src is not None else (0, 0))
                    offsets = (None if src is None else src.itemsize * (i0 * ss[0] + j0 * ss[1]),
                               dst.itemsize * (i0 * dst.strides[0] + j0 * dst.strides[1]))
                    for z0, z in pieces(problems, BLOCKS_MAX // (tm * tn)):
                        groups.setdefault(entry, []).append((i, z * tm * tn, dict(
                            M=r, N=c, MS=ms, NS=ns, tiles_m=tm, tiles_n=tn, Lin=dst.bcount[1],
                            z0=z0, wide=wide, ss0=ss[0], ss1=ss[1], bs0=bs[0], bs1=bs[1],
                            ds0=dst.strides[0], ds1=dst.strides[1], bd0=dst.bstrides[0],
                            bd1=dst.bstrides[1]), offsets))
        self.launches = []   # (Site, [(copy's index, source offset, destination offset)], fields)
        for entry, parts in groups.items():
            f = loaded(UTIL, ordinal).function(entry)
            held: list = []          # (copy's index, offsets, its blocks' end, fields)
            for i, blocks, fields, offsets in parts:
                if held and (len(held) == MAX_COPIES or held[-1][2] + blocks > BLOCKS_MAX):
                    self._add(f, held)
                    held = []
                first = held[-1][2] if held else 0
                held.append((i, offsets, first + blocks, {**fields, "first": first}))
            self._add(f, held)
        self.local = threading.local()

    def _add(self, f, held) -> None:
        site = launch.Site(f, (held[-1][2], 1, 1), UTIL.block, 0, False, CopyArgs.param_sizes)
        self.launches.append((site, [(i, *offsets) for i, offsets, _, _ in held],
                              [fields for _, _, _, fields in held]))

    def __call__(self, scales, srcs, dsts, stream: int) -> None:
        try:
            blocks = self.local.blocks
        except AttributeError:          # this thread's first call
            blocks = self.local.blocks = [self._block(fields) for _, _, fields in self.launches]
        for (site, which, _), (blk, slots) in zip(self.launches, blocks):
            for x, (i, src_off, dst_off) in zip(slots, which):
                src = srcs[i]
                x.s, x.dst = scales[i], dsts[i] + dst_off
                x.src = None if src is None or src_off is None else src + src_off
            site(stream, blk)

    @staticmethod
    def _block(fields):
        """(packed block, its Copy2d structs) of one launch: the structs the pointer array
        points into, each read out once (a ctypes field read makes a new object)."""
        blk = packed(CopyArgs(Copies2d((Copy2d * MAX_COPIES)(*[Copy2d(**x) for x in fields]),
                                       len(fields))), COPY_OFFSETS)
        c = blk[0][0].copies.c
        return blk, [c[slot] for slot in range(len(fields))]


class Relaid:
    """A launch of `variant` on copies (copy_target's layouts) of the operands in `copies`
    (roles as the entry sees them). Called as a Launcher: one stream-ordered scratch; A and
    B (with pads) and, where beta != 0, C copied in, in one launch where their types allow;
    the launch; the result copied back."""
    __slots__ = ("ordinal", "launcher", "roles", "offsets", "nbytes", "copy_in", "copy_in_c",
                 "back")

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
        # per copied operand (caller's roles): its offset in the scratch, on 256-byte boundaries
        copied = {{"a": "b", "b": "a"}.get(x, x) if swap else x for x in copies}
        self.roles = tuple(r for r in "abc" if r in copied)
        self.offsets, self.nbytes, ins = {}, 0, []
        for r in self.roles:
            X, W = {"a": A, "b": B, "c": T}[r], ops[r]
            self.offsets[r] = self.nbytes
            self.nbytes += batch_scratch(W, X)[0]
            if r != "c":
                ins.append((*stepping(X, W), True))
        W = ops["c"] if "c" in copies else T
        self.copy_in = Copies(ordinal, ins)
        self.copy_in_c = Copies(ordinal, ins + [(T, W, False)]) if W is not T else None
        self.back = Copies(ordinal, [(W, T, False)]) if W is not T else None
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
            temps = {r: scratch + self.offsets[r] for r in self.roles}
            # (C copied in only where beta != 0: the kernel updates its copy)
            copy_in = self.copy_in_c if self.copy_in_c is not None and beta != 0.0 else self.copy_in
            copy_in((1.0,) * 3, [ptrs[r] for r in self.roles], [temps[r] for r in self.roles],
                    stream)
            ptrs.update(temps)
            self.launcher(ptrs["a"], ptrs["b"], ptrs["c"], alpha, beta, stream, epi)
            if self.back is not None:
                self.back((1.0,), (ptrs["c"],), (c,), stream)
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

"""A composed kernel's call (Kernel.gemm_of; cute_3xtf32: kernels/cute/c7_3xtf32.cu) prepared
once per signature and called as a Launcher is: its passes, the GEMM on A' and B' between
them and their scratch layout are fixed, per call only pointers, alpha and beta are written.
Nothing is read back (rows the split cannot carry are refined on the device in float64), so
a call never waits on the host and a CUDA graph can capture it."""
from __future__ import annotations

import threading

from .. import registry
from ..driver import launch, pool
from ..driver.arrays import Operand
from ..driver.kernel_args import F, I, L, P, arg_block, packed
from ..registry.records import AS_PLANNED, PRECISION_DTYPE, Pick
from .relayout import pieces, prepared
from .resolve import entry_for, loaded


# c7's passes' parameters: each operand as an (R, K) source of strides (sr, sk)
RangeArgs, RANGE_OFFSETS = arg_block("RangeArgs", [
    ("R", I), ("K", I), ("src", P), ("sr", L), ("sk", L), ("rmax", P), ("flags", P)])
# c7's split pass: R rows of ld halves
SplitArgs, SPLIT_OFFSETS = arg_block("SplitArgs", [
    ("R", I), ("K", I), ("src", P), ("sr", L), ("sk", L), ("dst", P), ("ld", L),
    ("rmax", P), ("inexact", P), ("flags", P), ("norms", P), ("sums", P)])
# c7's norms: |B_k|^2 from B's tile sums
NormsArgs, NORMS_OFFSETS = arg_block("NormsArgs", [
    ("R", I), ("K", I), ("sums", P), ("norms", P)])
# c7's finish: T from W by rows
FinishArgs, FINISH_OFFSETS = arg_block("FinishArgs", [
    ("M", I), ("N", I), ("K", I), ("A", P), ("sam", L), ("sak", L), ("B", P),
    ("sbk", L), ("sbn", L), ("rmax", P), ("inexact", P), ("W", P), ("ldw", L), ("C", P),
    ("scm", L), ("scn", L), ("T", P), ("stm", L), ("stn", L), ("alpha", F),
    ("beta", F), ("flags", P), ("sums", P), ("ny", I), ("marked", P)])
# c7's fix: B's residuals by columns
FixArgs, FIX_OFFSETS = arg_block("FixArgs", [
    ("M", I), ("N", I), ("K", I), ("A", P), ("sam", L), ("sak", L), ("B", P),
    ("sbk", L), ("sbn", L), ("rmax", P), ("inexact", P), ("T", P), ("stm", L),
    ("stn", L), ("alpha", F), ("flags", P), ("marked", P)])
# c7's refine: marked rows in float64
RefineArgs, REFINE_OFFSETS = arg_block("RefineArgs", [
    ("M", I), ("N", I), ("K", I), ("A", P), ("sam", L), ("sak", L), ("B", P),
    ("sbk", L), ("sbn", L), ("C", P), ("scm", L), ("scn", L), ("T", P), ("stm", L),
    ("stn", L), ("alpha", F), ("beta", F), ("marked", P)])
# refine_rows.cuh's tile of T (rows, columns); CTAs across T's columns
REFINE_TILE_M, REFINE_TILE_N, REFINE_GRID_Y = 64, 128, 16
ALIGN = 256     # each piece of the scratch starts where an allocation of its own would


class _Pass:
    """One launch of a pass: its site ((function, grid, block)), its block's type and fixed
    values, and the fields written per call as (field, what, byte offset), what being "a",
    "b", "t", "c" (t where beta != 0, else null), "s" (the scratch), "alpha" or "beta"."""
    __slots__ = ("site", "cls", "offsets", "fixed", "patch")

    def __init__(self, site, cls, offsets, fixed: dict, patch: tuple):
        self.site = launch.Site(*site, 0, False, cls.param_sizes)
        self.cls, self.offsets, self.fixed, self.patch = cls, offsets, fixed, patch

    def pack(self):
        return packed(self.cls(**self.fixed), self.offsets)


class Composed:
    """T = alpha * A @ B + beta * T by composed kernel `k` for operands shaped and strided as
    A, B and T, its GEMM as `pick` asks. Call with (a, b, t, alpha, beta, stream): one
    stream-ordered scratch of `nbytes`, carved as `at` says (first `words` 32-bit words
    zeroed: row maxima, inexact counts, flags, marked rows; then float64 sums, A', B', W).
    prepass / product / finish queue the three stages (the tests run them one by one);
    `plan`: the GEMM's LaunchPlan."""
    __slots__ = ("ordinal", "nbytes", "words", "at", "pre", "post", "gemm", "local", "plan")

    def __init__(self, k: registry.Kernel, ordinal: int, A: Operand, B: Operand, T: Operand,
                 pick: Pick = AS_PLANNED):
        g = k.gemm_of
        m, kk = A.shape
        n = B.shape[1]
        kp = g.k_prime(kk)
        self.ordinal = ordinal
        tiles_b, ny = -(-n // k.grid.tile), k.grid.of(m, kk)[1]
        self.words = 2 * (m + n) + 1 + m + 1
        sizes = (("aux", 4 * self.words), ("sq", 8 * (tiles_b * kk + kk + m * ny)),
                 ("a2", 2 * m * kp), ("b2", 2 * n * kp), ("w", 4 * m * n))
        at, self.nbytes = {}, 0
        for name, size in sizes:
            at[name] = self.nbytes
            self.nbytes += -(-size // ALIGN) * ALIGN
        at.update(rmax=at["aux"], inexact=at["aux"] + 4 * (m + n), flags=at["aux"] + 8 * (m + n),
                  b_sums=at["sq"], norms=at["sq"] + 8 * tiles_b * kk)
        at.update(marked=at["flags"] + 4, a_sums=at["norms"] + 8 * kk)
        self.at = at
        lk = loaded(k, ordinal)
        fn = {v.entry[len(k.name) + 1:]: lk.function(v.entry, k.entries) for v in k.variants}

        def site(entry, grid, block=k.block):
            return fn[entry], grid, block
        # each operand as (rows, K) with (row stride, k stride): A as it is, B transposed
        (sam, sak), (sbk, sbn) = A.strides, B.strides
        pre = [_Pass(site(f"range_{r}", k.grid.of(rows, kk)), RangeArgs, RANGE_OFFSETS,
                     dict(R=rows, K=kk, sr=sr, sk=sk),
                     (("src", r, 0), ("rmax", "s", at["rmax"] + 4 * off),
                      ("flags", "s", at["flags"])))
               for r, rows, sr, sk, off in (("a", m, sam, sak, 0), ("b", n, sbn, sbk, m))]
        # B split first: A's split reads |B_k|^2
        pre.append(_Pass(site("split_b", k.grid.of(n, kk)), SplitArgs, SPLIT_OFFSETS,
                         dict(R=n, K=kk, sr=sbn, sk=sbk, ld=kp),
                         (("src", "b", 0), ("dst", "s", at["b2"]),
                          ("rmax", "s", at["rmax"] + 4 * m),
                          ("inexact", "s", at["inexact"] + 4 * m), ("flags", "s", at["flags"]),
                          ("sums", "s", at["b_sums"]))))
        pre.append(_Pass(site("norms_b", (min(-(-kk // k.threads), registry.GRID_X_MAX), 1, 1)),
                         NormsArgs, NORMS_OFFSETS, dict(R=n, K=kk),
                         (("sums", "s", at["b_sums"]), ("norms", "s", at["norms"]))))
        pre.append(_Pass(site("split_a", k.grid.of(m, kk)), SplitArgs, SPLIT_OFFSETS,
                         dict(R=m, K=kk, sr=sam, sk=sak, ld=kp),
                         (("src", "a", 0), ("dst", "s", at["a2"]), ("rmax", "s", at["rmax"]),
                          ("inexact", "s", at["inexact"]), ("flags", "s", at["flags"]),
                          ("norms", "s", at["norms"]), ("sums", "s", at["a_sums"]))))
        shape = dict(M=m, N=n, K=kk, sam=sam, sak=sak, sbk=sbk, sbn=sbn)
        ts = dict(stm=T.strides[0], stn=T.strides[1])
        cs = dict(scm=T.strides[0], scn=T.strides[1])        # C is T itself
        ops = (("A", "a", 0), ("B", "b", 0), ("T", "t", 0), ("alpha", "alpha", 0),
               ("marked", "s", at["marked"]))
        both = (("rmax", "s", at["rmax"]), ("inexact", "s", at["inexact"]),
                ("flags", "s", at["flags"]))
        refine_grid = (min(-(-m // REFINE_TILE_M), registry.GRID_X_MAX),
                       min(-(-n // REFINE_TILE_N), REFINE_GRID_Y), 1)
        self.post = (
            _Pass(site("finish", (m, 1, 1), (256, 1, 1)), FinishArgs, FINISH_OFFSETS,
                  dict(shape, ldw=n, ny=ny, **ts, **cs),
                  ops + both + (("W", "s", at["w"]), ("C", "c", 0), ("beta", "beta", 0),
                                ("sums", "s", at["a_sums"]))),
            _Pass(site("fix", (n, 1, 1), (256, 1, 1)), FixArgs, FIX_OFFSETS, dict(shape, **ts),
                  ops + both),
            _Pass(site("refine", refine_grid, (256, 1, 1)), RefineArgs, REFINE_OFFSETS,
                  dict(shape, **ts, **cs), ops + (("C", "c", 0), ("beta", "beta", 0))))
        self.pre = tuple(pre)
        self.gemm = self._gemm(g, ordinal, m, n, kp, pick)
        self.plan = self.gemm[0][0].plan
        self.local = threading.local()

    @staticmethod
    def _gemm(g, ordinal: int, m: int, n: int, kp: int, pick: Pick) -> tuple:
        """(launcher, byte offsets into A', B', W) of each launch of the GEMM on A' (M x K'
        row-major) and B' (K' x N column-major) into W (M x N row-major), as gemm_device
        resolves them."""
        gk = g.kernel
        lk = loaded(gk, ordinal)
        mc, nc, _ = gk.launch_extents(m, n, kp, pick.transposed)
        half, out = PRECISION_DTYPE[g.precision], []
        for i0, r in pieces(m, mc):
            for j0, c in pieces(n, nc):
                A2 = Operand("tmp", None, True, 0, (r, kp), (kp, 1), half)
                B2 = Operand("tmp", None, True, 0, (kp, c), (1, kp), half)
                W = Operand("tmp", None, True, 0, (r, c), (n, 1), "float32")
                swap, variant, copies = entry_for(gk, lk, A2, B2, W, g.precision, pick)
                f = prepared(gk, ordinal, A2, B2, W, swap, variant, copies, pick)
                out.append((f, 2 * i0 * kp, 2 * j0 * kp, 4 * (i0 * n + j0)))
        return tuple(out)

    def _blocks(self):
        try:
            return self.local.blocks
        except AttributeError:          # this thread's first call
            blocks = self.local.blocks = ([p.pack() for p in self.pre],
                                          [p.pack() for p in self.post])
            return blocks

    @staticmethod
    def _queue(passes, blocks, vals: dict, stream: int) -> None:
        for p, blk in zip(passes, blocks):
            s = blk[0][0]                # the struct the pointer array points into
            for field, what, off in p.patch:
                v = vals[what]
                setattr(s, field, v + off if off else v)
            p.site(stream, blk)

    def prepass(self, a: int, b: int, s: int, stream: int) -> None:
        """Zero the aux words, then range, split and norms: A' and B' into scratch s."""
        launch.memset_f32(s + self.at["aux"], 0, self.words, stream)
        self._queue(self.pre, self._blocks()[0], {"a": a, "b": b, "s": s}, stream)

    def product(self, s: int, stream: int) -> None:
        """W = the GEMM of A' and B' (scaled by the rows' and columns' powers of two)."""
        a2, b2, w = (s + self.at[x] for x in ("a2", "b2", "w"))
        for f, ao, bo, wo in self.gemm:
            f(a2 + ao, b2 + bo, w + wo, 1.0, 0.0, stream)

    def finish(self, a: int, b: int, t: int, alpha: float, beta: float, s: int,
               stream: int) -> None:
        """finish, fix and refine: T from W, the residuals, the marked rows in float64."""
        vals = {"a": a, "b": b, "t": t, "c": t if beta != 0.0 else None, "s": s,
                "alpha": alpha, "beta": beta}
        self._queue(self.post, self._blocks()[1], vals, stream)

    def __call__(self, a: int, b: int, t: int, alpha: float, beta: float, stream: int) -> None:
        s = pool.alloc_async(self.nbytes, self.ordinal, stream)
        try:
            self.prepass(a, b, s, stream)
            self.product(s, stream)
            self.finish(a, b, t, alpha, beta, s, stream)
        finally:
            pool.free_async(s, stream)

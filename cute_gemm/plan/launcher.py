"""Carrying out a resolved launch: `LaunchPlan`, what resolve.py decides once, `Launcher`,
its arguments packed once per thread, and `TensorMaps`, the TMA tensor maps of A and B it
encodes per pointer pair. Per call only the pointers, alpha and beta change."""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from . import streamk
from .. import registry
from ..driver import launch, pool, workspace
from ..base.errors import CuteGemmError
from ..driver.batching import Z_MAX
from ..driver.kernel_args import PACKERS, EpiValues


def pieces(extent: int, step: int):
    """(start, size) of the launches that cover `extent` in pieces of at most `step`."""
    return [(i, min(step, extent - i)) for i in range(0, extent, step)]

# the second launch of a split with a reduction launch (modes.SplitReduce)
REDUCE = registry.Kernel(
    name="split_reduce", family="util", source="util/split_reduce.cu",
    variants=(registry.Variant("split_reduce"),), block=(256, 1, 1),
    grid=registry.FlatGrid(1024), summary="C = alpha * (the sum of a split-K launch's "
    "slices, in order) + beta * C", seed="-")


@dataclass(frozen=True)
class LaunchPlan:
    """What run() launches for one kernel, device, shape, stride pattern and pointer
    alignment class, as its launch mode (modes.py) planned it."""
    kernel: str
    ordinal: int
    shape: tuple[int, int, int]          # (M, N, K)
    entry: str                           # the entry point launched last
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    copies: tuple[str, ...] = ()         # operands copied first into a layout the entry takes
    workspace_bytes: int = 0             # > 0: stream-K, a split or a cut walk (modes.py)
    head_entry: str = ""                 # stream-K: the data-parallel launch before the twin
    pdl: bool = False                    # ... whose successor starts by programmatic launch
    swap: bool = False                   # the entry computes C^T = B^T A^T (the Launcher turns
                                         # shape, strides and the pointers of A and B)
    precision: str = "fp32"              # records.PRECISIONS
    out_dtype: str = "float32"
    tma: bool = False                    # the entry takes TMA tensor maps of A and B
    tail_split: tuple[int, int] | None = None   # a walk's (dp, pieces); pieces > 1: its cut twin
    split_k: int = 0                     # CTAs per tile of a split (Pick)
    reduce_grid: tuple[int, int, int] = (0, 0, 0)   # > 0: REDUCE sums the split's shares after it
    reduce_pdl: bool = False             # ... starting by programmatic dependent launch
    # a batched kernel's (Kernel.batched): the (outer, inner) problems its plain entries walk
    # along the grid's z (CG_BATCH_PARAMS; (1, 1): one); None: no entry of it takes a batch
    batch: tuple[int, int] | None = None
    fused: bool = False                  # the entry takes a fused epilogue's EpiArgs last
    cluster: int = 1                     # > 1: a split's shares meet in clusters of this many
                                         # CTAs along x instead of a workspace (sm_90+)

    @property
    def stream_k(self) -> bool:
        """Tiles' K shared between CTAs (stream-K, split, cut): through a workspace, or in
        a cluster's shared memory."""
        return self.workspace_bytes > 0 or self.cluster > 1

    @property
    def split(self) -> bool:
        """A stream-K launch after a data-parallel head."""
        return bool(self.head_entry)

    @property
    def reduced(self) -> bool:
        """A split whose shares REDUCE sums after it."""
        return self.reduce_grid[0] > 0


def transposed_epilogue(epi: EpiValues | tuple) -> EpiValues:
    """A fused epilogue's run-time half (EpiValues or its fields' tuple) for the entry that
    computes C^T: the bias's strides and the row and column scales exchanged. Block scales
    cannot be turned (epilogue.cuh's Transposed)."""
    epi = EpiValues(*epi)
    if epi.blk_a or epi.blk_b:
        raise CuteGemmError("block scales on a launch that computes C^T (a kernel that "
                            "transposes cannot take them: Kernel.takes_block_scales)")
    return epi.but(bias_sm=epi.bias_sn, bias_sn=epi.bias_sm, srow=epi.scol,
                        srow_s=epi.scol_s, scol=epi.srow, scol_s=epi.srow_s)


class TensorMaps:
    """The TMA tensor maps of A and B for one launch shape and stride pattern, encoded per
    pointer pair: a repeat call on the same arrays reuses its maps."""
    __slots__ = ("a", "b", "precision", "swizzle", "memo")

    def __init__(self, variant: registry.Variant, m: int, n: int, kk: int, sa, sb,
                 batch: tuple | None = None):
        """batch: ((outer, inner) problems, A's and B's batch strides) of a batched twin's 4-D
        maps (extent 1 along a mode an operand is broadcast over)."""
        e = registry.ITEMSIZE[variant.dtype]
        modes = [()] * 2
        if batch is not None:
            count, *steps = batch
            modes = [tuple((c if s else 1, s * e) for c, s in zip(count, st)) for st in steps]
        # (dims (contiguous, other), leading stride in bytes, box, batch modes) per operand
        self.a = (((kk, m), sa[0] * e) if variant.a_major == "k" else ((m, kk), sa[1] * e)) \
            + (variant.tma.a, modes[0])
        self.b = (((kk, n), sb[1] * e) if variant.b_major == "k" else ((n, kk), sb[0] * e)) \
            + (variant.tma.b, modes[1])
        self.precision, self.swizzle, self.memo = variant.precision, variant.tma.swizzle, {}

    def __call__(self, pa: int, pb: int) -> tuple[bytes, bytes]:
        maps = self.memo.get((pa, pb))
        if maps is None:
            maps = tuple(launch.encode_tensor_map(p, self.precision, dims, ld, box, self.swizzle,
                                                  modes)
                         for p, (dims, ld, box, modes) in ((pa, self.a), (pb, self.b)))
            if len(self.memo) >= 64:         # (bounded: base/memo.py)
                self.memo.clear()
            self.memo[pa, pb] = maps
        return maps


class Reduction:
    """REDUCE summing a split's slices into C as the entry sees it (modes.SplitReduce),
    packed once per thread."""
    __slots__ = ("site", "pack", "local")

    def __init__(self, f: launch.Function, grid, m: int, n: int, split: int, sc, pdl: bool):
        self.site = launch.Site(f, grid, REDUCE.block, 0, pdl, launch.pack_reduce_args.sizes)
        self.pack = functools.partial(launch.pack_reduce_args, m, n, split, sc[0], sc[1])
        self.local = threading.local()

    def __call__(self, slices: int, c, alpha, beta, stream) -> None:
        try:
            packed = self.local.packed
        except AttributeError:
            packed = self.local.packed = self.pack()
        s = packed[0][0]
        s.ws, s.C, s.alpha, s.beta = slices, c, alpha, beta
        self.site(stream, packed)


class Launcher:
    """One resolved launch, its arguments packed once: per call only the pointers, alpha and
    beta change (and TMA entries' maps). Each thread writes and launches its own copy of the
    block (cuLaunchKernel runs without the GIL), so no lock is taken."""
    __slots__ = ("plan", "site", "pack", "local", "head", "maps", "plain", "tail", "zs", "swap")

    def __init__(self, plan: LaunchPlan, f: launch.Function, strides, extra: tuple = (),
                 head: "Launcher | None" = None, variant: registry.Variant | None = None,
                 reduce: launch.Function | None = None, bstrides=((0, 0),) * 3):
        """extra: what a mode's entry takes after the GEMM's arguments (the workspace, then
        tile0 and split_k, or dp and pieces); reduce: REDUCE's function, run after a split;
        bstrides: the batch strides of A, B and C."""
        self.plan, self.head = plan, head
        m, n, kk = plan.shape
        sa, sb, sc = strides
        ba, bb, bc = bstrides
        if plan.swap:
            m, n, sa, sb, sc, ba, bb = n, m, sb[::-1], sa[::-1], sc[::-1], bb, ba
        args = (m, n, kk, 0.0, 0, sa[0], sa[1], 0, sb[0], sb[1], 0.0, 0, sc[0], sc[1])
        # a batch, walked along z in pieces of at most Z_MAX problems (z0, grid z); by a
        # persistent (TMA) kernel's twin itself, A and B in 4-D maps
        batched = plan.batch is not None and not extra
        walked = batched and plan.tma
        along_z = batched and not walked
        self.zs = pieces(plan.batch[0] * plan.batch[1], Z_MAX) if along_z else [(0, 1)]
        if walked:
            args += (plan.batch[0] * plan.batch[1], plan.batch[1], *ba, *bb, *bc)
        elif along_z:
            args += (plan.batch[1], 0, *ba, *bb, *bc)
        self.maps = None
        if plan.tma:
            self.maps = TensorMaps(variant, m, n, kk, sa, sb, (plan.batch, ba, bb) if walked else None)
        # the GEMM's block, then what the batch or mode adds; a fused kernel's take EpiArgs last
        kind = ("tma_batch" if walked else "tma_ws" if plan.tma and extra else "tma" if plan.tma
                else "batch" if along_z else "ws" if extra else "")
        pack = PACKERS[kind, plan.fused]
        gx, gy, gz = plan.grid
        self.site = [launch.Site(f, (gx, gy, z if along_z else gz), plan.block, plan.smem, plan.pdl,
                                 pack.sizes, plan.cluster) for _, z in self.zs]
        self.site = self.site[0] if len(self.zs) == 1 else self.site
        self.pack = functools.partial(pack, *args, *extra)
        self.local = threading.local()
        self.local.packed = self.pack()     # (this thread's; another's packs at its first call)
        self.tail = None if reduce is None else Reduction(
            reduce, plan.reduce_grid, m, n, plan.split_k, sc, plan.reduce_pdl)
        # (most launches: one kernel, its arguments as they come or turned, TMA maps at most;
        # a cluster split's too, which needs no workspace)
        self.plain = not (plan.workspace_bytes or head or len(self.zs) > 1)
        self.swap = plan.swap            # (read per call: one attribute, not two)

    def __call__(self, a, b, c, alpha, beta, stream, epi=None):
        """epi: a fused epilogue's run-time half (EpiArgs' fields) for a Launcher of a kernel
        compiled with one (Kernel.with_epilogue), in the caller's rows and columns."""
        if self.plain:
            try:
                packed = self.local.packed
            except AttributeError:
                packed = self._packed()
            s = packed[0][0]             # the argument struct the pointer array points into
            if self.swap:                # the entry computes C^T = B^T A^T
                a, b = b, a
                if epi is not None:
                    epi = transposed_epilogue(epi)
            # (the block's maps are those of its A and B: written again only for new ones)
            if self.maps is not None and (s.A != a or s.B != b):
                launch.set_tensor_maps(s, *self.maps(a, b))
            s.A, s.B, s.C, s.alpha, s.beta = a, b, c, alpha, beta
            if epi is not None and epi != getattr(self.local, "epi", None):
                launch.set_epilogue(s, epi)         # (written again only when it changes)
                self.local.epi = epi
            (err,) = self.site.go(stream, packed[1], 0)     # (Site.__call__, inlined)
            if err:
                self.site.failed(err)
            return
        p = self.plan
        if not p.workspace_bytes:
            self._launch(a, b, c, alpha, beta, stream, 0, epi)
            return
        if launch.capturing(stream):
            # a graph owns its workspace: stream-ordered scratch, zeroed inside the graph,
            # before the head, so that nothing stands between the head and the twin that
            # starts by programmatic dependent launch
            ws = pool.alloc_async(p.workspace_bytes, p.ordinal, stream)
            try:
                launch.memset_f32(ws, 0, streamk.STREAM_K_COUNTERS, stream)
                self._launch(a, b, c, alpha, beta, stream, ws, epi)
            finally:
                pool.free_async(ws, stream)
        else:
            w = workspace.take(p.ordinal, p.workspace_bytes, stream, streamk.STREAM_K_COUNTERS)
            try:
                self._launch(a, b, c, alpha, beta, stream, w.ptr, epi)
            finally:
                workspace.give(w, stream)

    def _packed(self):
        try:
            return self.local.packed
        except AttributeError:           # this thread's first launch through this Launcher
            packed = self.local.packed = self.pack()
            return packed

    def _launch(self, a, b, c, alpha, beta, stream, ws, epi=None):
        if self.head is not None:       # (the same kernel's data-parallel entry: its epilogue too)
            self.head(a, b, c, alpha, beta, stream, epi)
        packed = self._packed()
        s = packed[0][0]
        if epi is not None:
            epi = transposed_epilogue(epi) if self.swap else epi
            if epi != getattr(self.local, "epi", None):     # (as in __call__)
                launch.set_epilogue(s, epi)
                self.local.epi = epi
        if self.swap:
            a, b = b, a
        if self.maps is not None and (s.A != a or s.B != b):     # (as in __call__)
            launch.set_tensor_maps(s, *self.maps(a, b))
        s.A, s.B, s.C, s.alpha, s.beta = a, b, c, alpha, beta
        if self.tail is not None:
            ws += streamk.SPLIT_SLICES_AT       # past the pool's stream-K counters
        if ws:
            s.ws = ws
        if len(self.zs) > 1:        # (z0 rewritten per piece: this thread's block only)
            for (z0, _), site in zip(self.zs, self.site):
                s.z0 = z0
                site(stream, packed)
            s.z0 = 0
        else:
            self.site(stream, packed)
        if self.tail is not None:
            self.tail(ws, c, alpha, beta, stream)

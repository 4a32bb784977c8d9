"""Launch modes, a class each: whether it may launch a variant (`may_launch`), the entry points
a launch compiles at once (`entries`), and its Launcher (`launcher`; None: not taken here).
resolve() asks MODES in order and keeps the first answer; Pricer prices a launch as the mode
that runs it. A new mode is one class (docs/howto/launch-mode.md); arithmetic: streamk.py."""
from __future__ import annotations

import os
from types import SimpleNamespace

from . import streamk
from .. import registry
from ..driver import launch
from ..registry.records import (ITEMSIZE, PRECISION_DTYPE, STREAM_K_COUNTERS, PersistentGrid,
                               tail_split_plan)
from .launcher import REDUCE, Launcher, LaunchPlan
from .streamk import (SPLIT_K_MIN_ITERS, STREAM_K_MIN_ITERS, split_k_ctas, stream_k_plan,
                      stream_k_workspace_bytes)

# the cost model (fitted: docs/design/tables.md#scaled-rows): a tile's fill and store cost
# TILE_OVERHEAD k-tiles; in a walk, filling smem with one 128-byte row of a k-tile costs
# about LOAD_ROW outputs' tensor-core work on it, and a cut item's fixup CUT_FIXUP k-tiles
TILE_OVERHEAD, LOAD_ROW, CUT_FIXUP = 2, 32, 6


def stream_k_on() -> bool:
    """CUTE_GEMM_STREAM_K=0 turns off every mode but the plain grid (and a walk's cut)."""
    return os.environ.get("CUTE_GEMM_STREAM_K") != "0"


def pdl(k: registry.Kernel, info) -> bool:
    """Whether k's second launch of a pair (a stream-K head's twin, a split's reduction)
    starts by programmatic dependent launch: k is built for it, sm_90+, CUTE_GEMM_PDL != 0."""
    return k.pdl and info.arch_int >= 90 and os.environ.get("CUTE_GEMM_PDL") != "0"


def cluster_split(k: registry.Kernel, info, split_k: int, smem: int) -> bool:
    """Whether a split of `split_k` shares a tile meets in a cluster (cluster_fixup.cuh)
    rather than through the workspace: sm_90+, 2 to 8 shares (the portable cluster size), the
    tile's fp32 partial within the twin's `smem` bytes of dynamic smem, CUTE_GEMM_CLUSTER_SPLIT
    != 0."""
    bm, bn, _ = k.tile
    return (info.arch_int >= 90 and 2 <= split_k <= 8 and smem >= 4 * bm * bn
            and os.environ.get("CUTE_GEMM_CLUSTER_SPLIT") != "0")


class At(SimpleNamespace):
    """A launch resolve() asks about: k, lk (its Loaded), load (loaded()), variant, m, n, kk,
    km x kn as the entry sees it, swap, split_k, reduce, strides, smem, group
    (launch_entries), stream_k, batched, bstrides, base (LaunchPlan fields of every mode)."""


class Plain:
    """The kernel's own grid (Kernel.grid) on its own entry point, and the protocol."""

    def may_launch(self, k: registry.Kernel, v: registry.Variant, reduce: bool,
                   stream_k: bool) -> bool:
        """Whether the mode may launch `v` at all (registry data, asked once per variant and
        request); reduce: the pick asks for a reduction launch; stream_k: stream_k_on()."""
        return True

    def entries(self, k: registry.Kernel, v: registry.Variant, reduce: bool,
                split: bool = True) -> tuple | None:
        """reduce, split: the pick asks for a reduction launch, a split (False: a twin that
        serves splits alone is left out)."""
        return (v.entry,)

    def launcher(self, at: At, entry: str = "", grid=None, extra: tuple = (),
                 **fields) -> Launcher | None:
        """entry, grid: a subclass's launch of its own entry on its own grid (Walk's), `extra`
        the arguments its entry takes after the GEMM's, `fields` its LaunchPlan's."""
        if grid is None:
            # a batch: the entry that takes one (its own, or its twin: Kernel.batch_entry)
            entry = at.k.batch_entry(at.variant) if at.batched else at.variant.entry
            walk = getattr(at.k.grid, "batch_walk", None)  # a persistent grid walks it itself
            if at.batched and walk is not None:
                outer, inner = at.base["batch"]        # (wm x wn: the tiles it walks)
                wm, wn = (at.kn, at.km) if at.variant.walks_transposed else (at.km, at.kn)
                grid = walk(wm, wn, outer * inner, at.lk.sm_count)
            else:
                grid = at.k.grid(at.km, at.kn, at.kk, at.lk.sm_count)
        v = at.variant
        plan = LaunchPlan(entry=entry, grid=grid, smem=at.smem, tma=v.tma is not None,
                          swap=at.swap, **fields, **at.base)
        return Launcher(plan, at.lk.function(entry, at.group), at.strides, extra, variant=v,
                        bstrides=at.bstrides)


class StreamK(Plain):
    """A persistent stream-K twin (Variant.stream_k) sharing the last, partly empty wave's
    k-tiles over its CTAs after a head launch of its data-parallel sibling runs the whole
    waves (stream_k_plan); or, for Pick.split_k, the twin alone with split_k CTAs a tile,
    meeting in clusters where cluster_split and the device take them."""

    def may_launch(self, k, v, reduce, stream_k):
        return bool(v.stream_k) and stream_k

    def entries(self, k, v, reduce, split=True):
        if not (v.stream_k and k.tile is not None) or not (split or v.stream_k_fill > 0):
            return None
        return tuple(dict.fromkeys((v.entry, streamk.stream_k_dp_entry(v), v.stream_k)))

    def launcher(self, at):
        v, k, lk = at.variant, at.k, at.lk
        if v.stream_k not in at.group:      # stream-K off, or a twin for splits alone
            return None
        info = launch.device_info(lk.ordinal)
        dp, sk_smem = streamk.stream_k_dp_entry(v), k.stream_k_smem_bytes(at.m, at.n, at.kk)
        f_dp, f = lk.function(dp, at.group), lk.function(v.stream_k, at.group)
        planned = self.plan(k, v, at.km, at.kn, at.kk,
                            info.sm_count * launch.occupancy(f_dp, k.threads, at.smem),
                            info.sm_count * launch.occupancy(f, k.threads, sk_smem), at.split_k)
        if planned is None:
            return None
        grid, ws_bytes, tile0, split_k = planned
        swap = at.swap != v.stream_k_swap          # the twin may turn the problem (back)
        if (split_k and cluster_split(k, info, split_k, sk_smem)
                and launch.active_clusters(f, grid, k.block, sk_smem, split_k)):
            plan = LaunchPlan(entry=v.stream_k, grid=grid, smem=sk_smem, swap=swap,
                              split_k=split_k, cluster=split_k, **at.base)
            return Launcher(plan, f, at.strides, (0, 0))
        head = Launcher(LaunchPlan(entry=dp, grid=(tile0, 1, 1), smem=at.smem, swap=swap,
                                   **at.base), f_dp, at.strides) if tile0 else None
        plan = LaunchPlan(entry=v.stream_k, grid=grid, smem=sk_smem, workspace_bytes=ws_bytes,
                          head_entry=dp if tile0 else "", pdl=tile0 > 0 and pdl(k, info),
                          swap=swap, split_k=split_k, **at.base)
        return Launcher(plan, f, at.strides, (0, tile0), head)

    @staticmethod
    def plan(k: registry.Kernel, variant: registry.Variant, m: int, n: int, kk: int,
             slots_dp: int, slots_sk: int, split_k: int = 0
             ) -> tuple[tuple[int, int, int], int, int, int] | None:
        """(grid, workspace bytes, tile0 (> 0: a head runs tiles [0, tile0)), split_k taken),
        or None: the plain grid. slots_dp / slots_sk: CTAs of sibling / twin resident at once."""
        if variant.stream_k_swap:     # the twin sees the transposed problem: N x M
            m, n = n, m
        bm, bn, bk = k.tile
        tiles, k_tiles = -(-m // bm) * -(-n // bn), -(-kk // bk)
        if tiles * k_tiles >= 2**31:        # the kernel counts iterations in 32 bits
            return None
        ctas = split_k_ctas(tiles, k_tiles, split_k, slots_sk)
        if ctas:
            return (ctas, 1, 1), stream_k_workspace_bytes(ctas, bm, bn), 0, split_k
        tile0, ctas = stream_k_plan(tiles, k_tiles, slots_dp, slots_sk, variant.stream_k_fill)
        return ((ctas, 1, 1), stream_k_workspace_bytes(ctas, bm, bn), tile0, 0) if ctas else None


class SplitReduce(Plain):
    """Split-K with a reduction launch (Pick.reduce): the split entry on tiles x split_k CTAs,
    each storing its share of K into a workspace slice, then REDUCE summing them into C."""

    def may_launch(self, k, v, reduce, stream_k):
        return bool(v.split) and reduce and stream_k

    def entries(self, k, v, reduce, split=True):
        return (v.split,) if reduce and v.split else None

    def launcher(self, at):
        v, k, lk = at.variant, at.k, at.lk
        f = lk.function(v.split, (v.split,))
        info = launch.device_info(lk.ordinal)
        planned = self.plan(k, v, at.km, at.kn, at.kk,
                            info.sm_count * launch.occupancy(f, k.threads, at.smem), at.split_k)
        if planned is None:
            return None
        km, kn, swap = (at.kn, at.km, not at.swap) if v.stream_k_swap else (at.km, at.kn, at.swap)
        plan = LaunchPlan(entry=v.split, grid=planned[0], smem=at.smem,
                          workspace_bytes=planned[1], swap=swap, split_k=at.split_k,
                          reduce_grid=REDUCE.grid(km, kn, 1), reduce_pdl=pdl(k, info), **at.base)
        return Launcher(plan, f, at.strides, (0, at.split_k),
                        reduce=at.load(REDUCE, lk.ordinal).function(REDUCE.entries[0]))

    @staticmethod
    def plan(k, variant, m, n, kk, slots, split_k):
        """(grid (tiles_m, tiles_n, split_k), workspace bytes) at M x N x K (N x M where
        stream_k_swap) where split_k_ctas takes the split on `slots` resident CTAs; else None."""
        if not variant.split:
            return None
        if variant.stream_k_swap:
            m, n = n, m
        bm, bn, bk = k.tile
        tiles, k_tiles = -(-m // bm) * -(-n // bn), -(-kk // bk)
        if k_tiles * split_k >= 2**31 or not split_k_ctas(tiles, k_tiles, split_k, slots):
            return None
        grid = (-(-m // bm), -(-n // bn), split_k)
        return grid, streamk.split_reduce_workspace_bytes(split_k, m, n)


class Walk(Plain):
    """A persistent kernel's walk whose last wave may be cut along K (sm90_tail_split.cuh):
    the cut twin (Variant.cut) where the plan cuts."""

    def may_launch(self, k, v, reduce, stream_k):
        return isinstance(k.grid, PersistentGrid) and bool(k.grid.tail_split)

    def entries(self, k, v, reduce, split=True):
        return (v.entry, v.cut) if v.cut else None

    def launcher(self, at):
        g, v = at.k.grid, at.variant
        wm, wn = (at.kn, at.km) if v.walks_transposed else (at.km, at.kn)   # the tiles it walks
        cut, grid = g.walk(wm, wn, at.kk, at.lk.sm_count, at.stream_k, ITEMSIZE[v.dtype])
        if cut[1] == 1:
            return super().launcher(at, v.entry, grid, tail_split=cut)
        ws = streamk.tail_split_workspace_bytes(g.units(wm, wn) - cut[0], g.cluster, cut[1],
                                                g.bm, g.bn, g.partials)
        return super().launcher(at, v.cut, grid, (0, *cut), tail_split=cut, workspace_bytes=ws)

    def cost(self, x, m, n, k, precision, sm_count, split_k=0, variant=None):
        """The busiest SM's rounds of items, a window costing the tile's area plus LOAD_ROW per
        row of A (twice where register_a) and of this CTA's B
        (docs/design/cute_wgmma_ws.md#narrow-tiles). `variant`: the entry, where known."""
        g = x.grid
        if not isinstance(g, PersistentGrid):
            return None
        itemsize = ITEMSIZE[PRECISION_DTYPE[precision]]
        wm, wn = (n, m) if variant is not None and variant.walks_transposed else (m, n)
        # (g.split, with its units, clusters and windows at hand)
        units = -(-(-(-wm // g.bm)) // g.cluster) * -(-wn // g.bn)
        clusters = max(1, (sm_count or 1) * g.ctas_per_sm // g.cluster)   # (g.clusters)
        windows = -(-k * itemsize // g.window_bytes)
        dp, pieces = (tail_split_plan(units, clusters, windows, g.tail_split, g.cut)
                      if g.tail_split else (units, 1))
        rounds = -(-dp // clusters) * (windows + g.cut.overhead)
        if pieces > 1:
            rounds += (-(-(units - dp) * pieces // clusters)
                       * (-(-windows // pieces) + g.cut.overhead) + CUT_FIXUP * (pieces - 1))
        rows_a = g.bm * (2 if variant is not None and variant.register_a else 1)
        return (g.bm * g.bn + LOAD_ROW * (rows_a + g.bn // g.cluster)) * rounds


PLAIN, WALK, STREAM_K, SPLIT_REDUCE = Plain(), Walk(), StreamK(), SplitReduce()
MODES = (SPLIT_REDUCE, STREAM_K, WALK, PLAIN)     # asked in order: the first answer is taken


class Pricer:
    """What a launch of each of `cands` ((kernel or None, transposed, split_k)) costs its
    busiest SM on `sm_count` SMs, as the mode that runs it: a walk (Walk.cost); a split
    where split_k_ctas takes it; a stream-K tail where stream_k_plan does; else whole waves
    of tiles, each its k-tiles + TILE_OVERHEAD. 1.0: no tile or kernel. A composed kernel:
    its GEMM's on K'. Constants are read once here; at() prices all in one loop."""

    def __init__(self, cands, precision: str, sm_count: int):
        self.precision, self.sm_count, self.specs = precision, sm_count, []
        for x, transposed, split_k in cands:
            if x is None:
                spec = ("one",)
            elif x.gemm_of is not None:
                g = x.gemm_of
                spec = ("of", transposed, Pricer(((g.kernel, False, 0),), g.precision, sm_count),
                        g.k_prime)
            elif isinstance(x.grid, PersistentGrid):
                spec = ("walk", transposed, x, split_k)
            elif x.tile and sm_count >= 1:     # (a split's CTAs: one wave, within the counters)
                v, slots = x.variants[0], sm_count * x.min_blocks
                spec = ("tile", transposed, *x.tile, slots, split_k if split_k >= 2 else 0,
                        min(slots, STREAM_K_COUNTERS // 2), v.stream_k_fill if v.stream_k else -1)
            else:
                spec = ("one",)
            self.specs.append(spec)

    def at(self, m: int, n: int, k: int) -> list[float]:
        """Each candidate's cost at M x N x K (the transposed problem where it says so)."""
        out, fix, most = [], TILE_OVERHEAD, STREAM_K_COUNTERS // 2
        for spec in self.specs:
            kind = spec[0]
            if kind == "tile":
                _, turned, bm, bn, bk, slots, split_k, cap, fill = spec
                tiles = -(-m // bm) * -(-n // bn) if not turned else -(-n // bm) * -(-m // bn)
                k_tiles = -(-k // bk)
                # split_k_ctas, inlined: every run SPLIT_K_MIN_ITERS k-tiles, one wave of CTAs
                if split_k and 0 < tiles * split_k <= cap and k_tiles >= SPLIT_K_MIN_ITERS * split_k:
                    out.append(-(-k_tiles // split_k) + 2 * fix)
                    continue
                # stream_k_plan with the sibling's and the twin's slots alike, inlined: the
                # last wave's `tail` tiles, below `fill`, over min(slots, its k-tiles /
                # STREAM_K_MIN_ITERS) CTAs (none whole: it is less than a wave)
                tail, ctas = tiles % slots, 0
                if tail and k_tiles >= 2 * STREAM_K_MIN_ITERS and tail / slots < fill:
                    ctas = min(slots, tail * k_tiles // STREAM_K_MIN_ITERS, most)
                    ctas = 0 if ctas < 2 or tail % ctas == 0 else ctas
                out.append((tiles - tail) // slots * (k_tiles + fix) + tail * k_tiles / ctas
                           + 2 * fix if ctas else -(-tiles // slots) * (k_tiles + fix))
            elif kind == "one":
                out.append(1.0)
            else:
                pm, pn = (n, m) if spec[1] else (m, n)
                out.append(spec[2].at(pm, pn, spec[3](k))[0] if kind == "of" else
                           WALK.cost(spec[2], pm, pn, k, self.precision, self.sm_count, spec[3]))
        return out


def offers(x: registry.Kernel, mode: Plain) -> bool:
    """Whether some variant of kernel x has entry points for `mode` (tune's candidates)."""
    return any(mode.entries(x, v, True) for v in x.variants)

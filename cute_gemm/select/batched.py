"""gemm()'s pick for a batch of problems that batching.plan could not fold into one 2-D
problem: the candidates that walk a batch along the grid's z (Kernel.batched), in the call's
precision, else in one keeping its contract. The tables price 2-D problems only, so it is a
rule and a model: a small K on the kernel tagged TINY, else the tiles of least `cost`."""
from __future__ import annotations

from dataclasses import replace

from . import autotable
from .. import registry
from ..base.errors import CuteGemmError, ShapeLimitError
from ..base.precisions import PRECISION
from ..driver import launch
from ..registry.records import cdiv
from .auto import TINY, TINY_K, TINY_K_SIMT, Choice, candidates, tile_area
from .contract import answering, runs_at


def choose(count: int, m: int, n: int, k: int, *, device, precision: str = "fp32",
           out_dtype: str = "float32", modes: int = 1, fused: bool = False) -> Choice:
    """What gemm() runs for `count` problems of M x N x K on `device`: the first of ranked()."""
    return ranked(count, m, n, k, device=device, precision=precision, out_dtype=out_dtype,
                  modes=modes, fused=fused)[0]


def ranked(count: int, m: int, n: int, k: int, *, device, precision: str = "fp32",
           out_dtype: str = "float32", modes: int = 1, fused: bool = False) -> list[Choice]:
    """The batched candidates for `count` problems in `modes` modes that do not merge
    (Kernel.batch_modes; fused: that take an epilogue), the pick first: the kernel tagged
    TINY for a small K, then the tiles by least cost (what firstuse.tuned_batch times)."""
    ks = [x for x in _batched(precision, out_dtype, modes, fused) if x.runs_on(device.arch_int)]
    if not ks:
        have = ", ".join(x.name for x in registry.kernels() if x.batched)
        raise CuteGemmError(f"gemm(): no kernel computes a batch of {precision} into {out_dtype} "
                            f"on {device.name} (sm_{device.arch_int}); kernels that batch: {have}")
    fit = [x for x in ks if x.dyn_smem(m, n, k) <= device.smem_optin]
    if not fit:
        raise ShapeLimitError(f"gemm(): every batched {precision} kernel needs more shared "
                              f"memory for M={m}, N={n}, K={k} than {device.name} allows")
    for p in answering(precision):          # the precision itself first, then its contract's
        own = [x for x in fit if runs_at(x, precision, out_dtype) == p]
        if own:
            break
    runs = None if p == precision else p
    tiny = [x for x in own if TINY in x.tags]
    limit = TINY_K if PRECISION[p].tensor_cores else TINY_K_SIMT
    wave = device.sm_count
    tiled = sorted([x for x in own if TINY not in x.tags and x.tile] or own,
                   key=lambda x: (cost(x, count, m, n, wave), -tile_area(x)))

    def why(x) -> str:
        if TINY in x.tags and k <= limit:
            return f"a batch of {count}; K = {k} <= {limit}: one pass"
        ctas = count * cdiv(m, x.tile[0]) * cdiv(n, x.tile[1]) if x.tile else 0
        return f"a batch of {count}: the tiles of least cost on {wave} SMs ({ctas} CTAs)"
    order = (tiny[:1] + tiled if tiny and k <= limit else tiled + tiny[:1])
    return [Choice(x.name, why=why(x), precision=runs) for x in dict.fromkeys(order)]


# a tile's loads per multiply-add, (BM + BN) / (BM * BN), weighed against its arithmetic:
# narrow tiles waste less of a small M or N but feed each FMA with more loads
LOAD_WEIGHT = 16


def cost(x: registry.Kernel, count: int, m: int, n: int, sm_count: int) -> float:
    """The busiest SM's work for `count` problems on kernel x, in tile-area units: its waves
    of CTAs, each computing its whole tile, dearer per output for narrow tiles."""
    if not x.tile:
        return float("inf")
    bm, bn, _ = x.tile
    slots = sm_count * x.min_blocks
    waves = cdiv(count * cdiv(m, bm) * cdiv(n, bn), slots)
    return waves * x.min_blocks * bm * bn * (1 + LOAD_WEIGHT * (bm + bn) / (bm * bn))


def _batched(precision: str, out_dtype: str, modes: int = 1, fused: bool = False) -> list:
    """The selector's candidates that walk a batch of `modes` modes and answer `precision`
    into `out_dtype` (fused: and take an epilogue); where those are only the kernel tagged
    TINY (a small K's), the ladder's stages that do as well (v9_warptile past a small K)."""
    ks = [x for x in registry.kernels() if x.batch_modes >= modes and x.family != "util"
          and (x.takes_epilogue or not fused) and runs_at(x, precision, out_dtype) is not None]
    auto = {x.name for x in candidates(precision, out_dtype)}
    mine = [x for x in ks if x.name in auto]
    if all(TINY in x.tags for x in mine):
        return mine + [x for x in ks if x.name not in auto]
    return mine


def kept(device, key: str, cands: list[Choice]) -> Choice | None:
    """The candidate of `cands` that the GPU's tables' batch row of `key` (batch_key) found
    fastest; None without a row, or where its winner is no longer a candidate."""
    row = next((b for t in autotable.tables_for(device.name) for b in t.batches if b.key == key),
               None)
    c = None if row is None else next((c for c in cands if c.kernel == row.winner), None)
    return None if c is None else replace(
        c, source="table", ms=row.times[c.kernel], why=f"timed on first use, kept: {c.kernel} "
        f"{row.times[c.kernel]:.4g} ms of {len(row.times)} batched candidates")


def pick(sig, precision: str, out_dtype: str, ordinal: int | None, fused: bool = False) -> Choice:
    """choose() for a validated batched call (signature.Signature); ordinal None: no products
    to compute, so any batched candidate answers."""
    if ordinal is None:
        x = next(iter(_batched(precision, out_dtype, sig.modes, fused)), None)
        if x is None:
            raise CuteGemmError(f"gemm(): no kernel computes a batch of {precision} into {out_dtype}")
        p = runs_at(x, precision, out_dtype)
        return Choice(x.name, why="no products to compute", precision=None if p == precision else p)
    return choose(sig.batch[0] * sig.batch[1], sig.m, sig.n, sig.k,
                  device=launch.device_info(ordinal), precision=precision, out_dtype=out_dtype,
                  modes=sig.modes, fused=fused)

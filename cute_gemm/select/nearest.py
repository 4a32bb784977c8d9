"""gemm()'s selector between the rows of its tune tables (auto.choose asks): the row of a
shape, else each candidate's times at the NEAREST_ROWS nearest measured shapes scaled to this
shape by a model of its busiest SM's work (plan/modes.py's Pricer), the least predicted time
(docs/design/tables.md#scaled-rows)."""
from __future__ import annotations

import math
import os

from .. import registry
from ..base import memo
from ..plan import modes
from ..plan.streamk import split_k_ctas
from .choice import Choice, split_key

# the rows whose times price a shape without a row, weighted 1 / (distance + NEAR_WEIGHT);
# chosen leave-one-out over the shipped tables (docs/design/tables.md#scaled-rows)
NEAREST_ROWS, NEAR_WEIGHT = 3, 0.5
BUCKET = 8          # shapes rounded up to a multiple of it price alike (so does every tile extent)


def distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Squared distance of two shapes in log2 space: what decides a GEMM's speed (tile and
    wave quantisation, being memory- or compute-bound) follows the ratios of sizes."""
    return sum((math.log2(max(x, 1)) - math.log2(max(y, 1))) ** 2 for x, y in zip(a, b))


class SearchedRows(list):
    """searched_rows' rows, with `exact`, (shape, aligned) -> the indices of its rows in table
    order, and `priced`, each row's _Priced per allowed candidates and SMs."""
    exact: dict
    priced: dict


def searched_rows(tables, layout: str, precision: str, aligned: bool) -> SearchedRows:
    """The rows of this precision and layout in `tables` (of the same alignment class where
    any is), each as (log2 of its shape, table index, table, row, its candidates that ran,
    fastest first, as (key, ms, split_key(key)))."""
    rows = [(i, t, r) for i, t in enumerate(tables) for r in t.rows
            if r.precision == precision and r.layout == layout]
    pool = [x for x in rows if x[2].aligned == aligned] or rows
    out = SearchedRows((tuple(math.log2(max(v, 1)) for v in r.shape), i, t, r,
                        tuple((c, ms, split_key(c)) for c, ms in r.ranked()))
                       for i, t, r in pool)
    out.exact, out.priced = {}, {}
    for j, x in enumerate(out):
        out.exact.setdefault((x[3].shape, x[3].aligned), []).append(j)
    return out


def from_tables(tables, m: int, n: int, k: int, layout: str, precision: str, aligned: bool,
                allowed: set[str], rows: list | None = None, sm_count: int = 0,
                scaled: dict | None = None) -> Choice | None:
    """The fastest allowed candidate of the first table's row of this shape; else the least
    predicted time of the allowed candidates of the nearest row that has any, priced from
    the NEAREST_ROWS nearest rows on `sm_count` SMs (0: that row's table's); None without a
    row. `rows`: searched_rows, kept by the caller with `scaled`, a memo per BUCKETed shape."""
    if rows is None:
        rows = searched_rows(tables, layout, precision, aligned)
    if not rows:
        return None
    for j in rows.exact.get(((m, n, k), aligned), ()):
        _, _, t, r, cands = rows[j]
        ranked = [c for c in cands if c[2][0] in allowed]
        if ranked:
            (key, ms, (kernel, transposed, split_k, reduce)), rest = ranked[0], ranked[1:]
            return Choice(kernel, transposed, "table", f"{_where(t, r, layout)}: {key} "
                          f"{ms:.4g} ms" + (f", then {rest[0][0]} {rest[0][1]:.4g} ms"
                                            if rest else ""), split_k, reduce, ms=ms)
    shape = tuple(-(-x // BUCKET) * BUCKET for x in (m, n, k))
    bkey = (shape, frozenset(allowed), sm_count)
    hit = scaled.get(bkey) if scaled is not None else None
    if hit is None:
        lm, ln, lk = (math.log2(x) for x in shape)
        # (distance() with the rows' logarithms taken once)
        near = sorted(((x[0][0] - lm) ** 2 + (x[0][1] - ln) ** 2 + (x[0][2] - lk) ** 2, x[1], j)
                      for j, x in enumerate(rows))
        hit = False
        for a, (_, _, j) in enumerate(near):
            sms = sm_count or rows[j][2].sm_count
            pkey = (j, bkey[1], sms)
            priced = rows.priced.get(pkey)
            if priced is None:
                ranked = [c for c in rows[j][4] if c[2][0] in allowed]
                if len(rows.priced) >= memo.ENTRIES:      # (bounded: base/memo.py)
                    rows.priced.clear()
                priced = rows.priced[pkey] = _Priced(
                    ranked, precision, sms, _where(rows[j][2], rows[j][3], layout))
            if priced.ranked:
                hit = _scaled(rows, near[a:a + NEAREST_ROWS], priced, shape)
                break
        if scaled is not None:
            if len(scaled) >= memo.ENTRIES:
                scaled.clear()
            scaled[bkey] = hit
    return hit or None


def _where(t, r, layout: str) -> str:
    return (f"{os.path.basename(t.source) or 'table'} row {r.m}x{r.n}x{r.k} {layout}"
            f"{'' if r.aligned else ' unaligned'}")


class _Priced:
    """A row's allowed candidates (`ranked`), their kernels' modes.Pricer on `sms` SMs, and
    `there`, row index -> each one's log(ms / its work) at that row (False: not timed)."""

    def __init__(self, ranked: list, precision: str, sms: int, where: str):
        self.ranked, self.there, self.where = ranked, {}, where
        self.kernels = [registry.lookup(c[2][0]) for c in ranked]   # (None: not a kernel)
        self.pricer = modes.Pricer([(x, c[2][1], c[2][2]) for x, c in zip(self.kernels, ranked)],
                                   precision, sms)


def _scaled(rows, near, priced: _Priced, shape) -> Choice:
    """Each of `priced`'s candidates' log(ms / work) over the `near` rows that timed it,
    weighted, plus its log(work) at `shape`: the least wins."""
    total = weight = [0.0] * len(priced.ranked)
    for (d, _, j) in near:
        there = priced.there.get(j)
        if there is None:
            r = rows[j][3]
            there = priced.there[j] = [
                False if r.times.get(c[0]) is None else math.log(r.times[c[0]] / work)
                for c, work in zip(priced.ranked, priced.pricer.at(*r.shape))]
        w = 1.0 / (d + NEAR_WEIGHT)
        total = [a if t is False else a + w * t for a, t in zip(total, there)]
        weight = [b if t is False else b + w for b, t in zip(weight, there)]
    scores = [a / b + math.log(work)
              for a, b, work in zip(total, weight, priced.pricer.at(*shape))]
    predicted = min(scores)
    i = scores.index(predicted)         # (the first of equals: the faster there)
    key, ms0, (kernel, transposed, split_k, reduce) = priced.ranked[i]
    x = priced.kernels[i]
    why = (f"{priced.where} and the {len(near) - 1} next: {key} {ms0:.4g} ms there, "
           f"{math.exp(predicted):.4g} ms here by its work on the SMs")
    if split_k and x is not None:
        # a split the shape rules out whatever the occupancy (too few k-tiles, too many tiles)
        (m, n, k), (bm, bn, bk) = shape, x.tile
        tiles = -(-m // bm) * -(-n // bn) if not transposed else -(-n // bm) * -(-m // bn)
        if not split_k_ctas(tiles, -(-k // bk), split_k, tiles * split_k):
            split_k, reduce = 0, False
            why += "; the split does not fit here: the kernel's own plan"
    return Choice(kernel, transposed, "nearest", why, split_k, reduce, ms=math.exp(predicted))


def busiest_work(x: registry.Kernel | None, m: int, n: int, k: int, precision: str, sm_count: int,
                 transposed: bool = False, split_k: int = 0) -> float:
    """What a launch of `x` on M x N x K (transposed: C^T) costs its busiest SM, by the launch
    mode that runs it (modes.Pricer): the scale of a time measured at a nearby shape."""
    return modes.Pricer(((x, transposed, split_k),), precision, sm_count).at(m, n, k)[0]

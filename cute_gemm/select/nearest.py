"""gemm()'s selector between the rows of its tune tables (select/auto.py asks): the row of a
shape, else the NEAREST_ROWS nearest measured shapes (log-space distance over M, N, K, the
same alignment class first), each candidate's times there scaled to this shape by a model of
its busiest SM's work (busiest_work: the launch modes' costs, plan/modes.py), the least
predicted time (docs/design/tables.md#scaled-rows)."""
from __future__ import annotations

import math
import os

from .. import registry
from ..base import memo
from ..plan import modes
from ..plan.streamk import split_k_ctas
from .choice import Choice, split_key

# from_tables, a shape without a row: the rows whose times are scaled to it, weighted by
# 1 / (distance + NEAR_WEIGHT); chosen leave-one-out over the shipped tables and on the
# held-out shapes' measured candidates (docs/design/tables.md#scaled-rows)
NEAREST_ROWS, NEAR_WEIGHT = 3, 0.5
BUCKET = 8          # (from_tables: shapes rounded up to a multiple of it price alike)


def distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """Squared distance of two shapes in log2 space. Logarithms, because what decides a
    GEMM's speed (tile and wave quantisation, being memory- or compute-bound) changes with
    the ratios of sizes: 64 rows against 128 is as far apart as 4096 against 8192."""
    return sum((math.log2(max(x, 1)) - math.log2(max(y, 1))) ** 2 for x, y in zip(a, b))


class SearchedRows(list):
    """searched_rows' answer: the rows; `exact`, (shape, aligned) -> the indices of the rows
    of that shape and class, in table order (from_tables' lookup of a shape's own row); and
    `priced`, _scaled's pricing of a row's allowed candidates on some SMs (_Priced)."""
    exact: dict
    priced: dict


def searched_rows(tables, layout: str, precision: str, aligned: bool) -> SearchedRows:
    """The rows from_tables searches: of this precision and layout in all `tables`, of the
    same alignment class where any is; each as (log2 of its shape, table index, table, row,
    its candidates that ran, fastest first, each as (key, ms, split_key(key)))."""
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
    """From the rows of this precision and layout in all `tables` (tuned, then shipped): the
    row of this shape (the first table's that has one) and its fastest allowed candidate.
    Else the NEAREST_ROWS nearest rows of them all (of the same alignment class where any
    is; at equal distance the earlier table's): each allowed candidate of the nearest one
    that has any is priced here as its time in each of those rows that has it, times
    busiest_work here over busiest_work there on `sm_count` SMs (0: the nearest row's
    table's), averaged in log space with weights 1 / (distance + NEAR_WEIGHT); the least
    wins. A tuned table of a few shapes thus adds to the shipped one rather than hiding it.
    None when no table has such a row. rows: searched_rows of these tables, where the
    caller keeps them. scaled: a memo of the answers for shapes without a row, kept with
    `rows`: those are priced at the shape rounded up to BUCKET in each extent (every tile
    extent is a multiple of it, so every candidate's tile counts are the shape's own)."""
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
        dist = [((x[0][0] - lm) ** 2 + (x[0][1] - ln) ** 2 + (x[0][2] - lk) ** 2, x[1], j)
                for j, x in enumerate(rows)]
        near = sorted(dist)
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
    """A row's allowed candidates (`ranked`, as searched_rows holds them), their kernels'
    modes.Pricer on `sms` SMs, `there`, row index -> each one's log(ms / its work) at that
    row's shape (False: not timed there), and `where`, the row (_where)."""

    def __init__(self, ranked: list, precision: str, sms: int, where: str):
        self.ranked, self.there, self.where = ranked, {}, where
        self.kernels = [registry.lookup(c[2][0]) for c in ranked]   # (None: not a kernel)
        self.pricer = modes.Pricer([(x, c[2][1], c[2][2]) for x, c in zip(self.kernels, ranked)],
                                   precision, sms)

    def at_row(self, rows, j: int) -> list:
        """`there` of row j, computed (and kept) now."""
        r = rows[j][3]
        there = self.there[j] = [
            False if r.times.get(c[0]) is None else math.log(r.times[c[0]] / w)
            for c, w in zip(self.ranked, self.pricer.at(*r.shape))]
        return there


def _scaled(rows, near, priced: _Priced, shape) -> Choice:
    """from_tables for a shape without a row: the nearest row's allowed candidates
    (`priced`), each priced from the `near` rows that measured it."""
    # each candidate's log(ms / work) there, weighted over the rows that timed it, plus
    # its log(work) here: summed row by row, all candidates at once
    total = weight = [0.0] * len(priced.ranked)
    for (d, _, j) in near:
        w, there = 1.0 / (d + NEAR_WEIGHT), priced.there.get(j) or priced.at_row(rows, j)
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
        # whether the shape rules out split_k CTAs per tile whatever the GPU's occupancy
        # (split_k_ctas with room for all: too few k-tiles, too many tiles)
        (m, n, k), (bm, bn, bk) = shape, x.tile
        tiles = -(-m // bm) * -(-n // bn) if not transposed else -(-n // bm) * -(-m // bn)
        if not split_k_ctas(tiles, -(-k // bk), split_k, tiles * split_k):
            split_k, reduce = 0, False
            why += "; the split does not fit here: the kernel's own plan"
    return Choice(kernel, transposed, "nearest", why, split_k, reduce, ms=math.exp(predicted))


def busiest_work(x: registry.Kernel | None, m: int, n: int, k: int, precision: str, sm_count: int,
                 transposed: bool = False, split_k: int = 0) -> float:
    """A model of what a launch of `x` on M x N x K (the transposed problem where
    `transposed`) costs its busiest SM, for scaling a time measured at a nearby shape: the
    cost of the launch mode that runs it (modes.Pricer)."""
    return modes.Pricer(((x, transposed, split_k),), precision, sm_count).at(m, n, k)[0]

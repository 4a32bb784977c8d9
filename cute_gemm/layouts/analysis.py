"""Analyses no library has: who owns which element of a partitioned tile, whether the
partitions cover it, and the shared-memory bank conflicts of a warp's stores.

`cute-gemm check` runs `check` for every CuTe kernel; tests/test_layouts.py asserts the same
properties and the bank-conflict counts the kernels' comments promise.
"""
from __future__ import annotations

from .algebra import Layout, View, cosize, fmt, make_layout, product_each, size, value


def owners(part, tile: tuple, nthreads: int) -> list[list[int]]:
    """For each element of a (rows, cols) tile (column-major index), the threads whose
    partition `part(view, t)` holds it."""
    rows, cols = tile
    src = View(make_layout((rows, cols)))
    own: list[list[int]] = [[] for _ in range(rows * cols)]
    for t in range(nthreads):
        p = part(src, t)
        for i in range(int(size(p.layout))):
            own[int(p.offset) + value(p.layout, i)].append(t)
    return own


def values_of(part, tile: tuple, t: int) -> dict[tuple[int, int], int]:
    """Thread t's partition of a (rows, cols) tile: (row, col) -> its value index."""
    rows, cols = tile
    p = part(View(make_layout((rows, cols))), t)
    out = {}
    for i in range(int(size(p.layout))):
        off = int(p.offset) + value(p.layout, i)
        out[(off % rows, off // rows)] = i
    return out


def tv_cells(tv: Layout, tile: tuple) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """A TV layout over a (rows, cols) tile: (row, col) -> the (thread, value) pairs there."""
    rows, _ = tile
    nt, nv = (int(x) for x in product_each(tv.shape)[:2])
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for t in range(nt):
        for v in range(nv):
            idx = value(tv, t, v)
            out.setdefault((idx % rows, idx // rows), []).append((t, v))
    return out


def bank_ways(tv: Layout, stage: Layout, rows: int, banks: int = 32) -> int:
    """Worst bank multiplicity of a warp's 4-byte stores: thread t's value v of a TiledCopy
    (TV layout -> index in its (rows, k) tile) stored at stage(m, k), one STS.32 per value
    index, `banks` banks of 4 bytes. 1 = conflict-free. stage: (m, k[, buffer 0])."""
    nthreads, nvals = (int(x) for x in product_each(tv.shape)[:2])
    buf = (0,) * (len(stage) - 2)
    worst = 0
    for w in range(nthreads // 32):
        for v in range(nvals):
            hit = [stage((idx % rows, idx // rows) + buf) % banks
                   for idx in (value(tv, t, v) for t in range(32 * w, 32 * w + 32))]
            worst = max(worst, max(hit.count(b) for b in hit))
    return worst


def check(rec) -> list[str]:
    """The problems of one recipe (empty: all good): partitions cover their tile (exactly
    once where exact) with equal shares, TV layouts cover theirs (a copy's exactly once),
    thread layouts are bijections, tiles and shared-memory tiles have the registry's sizes."""
    bM, bN, bK = rec.kernel.tile                  # the registry's tile
    bad = []
    for it in rec.items():
        leaf = it.name.rsplit("/", 1)[-1]
        if it.kind == "partition":
            rows, cols = it.tile
            own = it.owners()
            counts = {len(o) for o in own}
            if len(counts) != 1 or 0 in counts or (it.exact and counts != {1}):
                bad.append(f"{it.name}: tile elements owned {sorted(counts)} times")
                continue
            vals = it.values_of(it.thread)
            if len(vals) * it.nthreads != rows * cols * counts.pop():
                bad.append(f"{it.name}: threads hold unequal shares of the tile")
            if any(it.thread not in own[r + c * rows] for (r, c) in vals):
                bad.append(f"{it.name}: thread {it.thread}'s values disagree with the owner map")
        elif it.kind == "tv":
            rows, cols = it.tile
            cells = it.tv_cells()
            if set(cells) != {(i, j) for i in range(rows) for j in range(cols)}:
                bad.append(f"{it.name}: TV layout does not cover its {rows}x{cols} tile")
            elif "copy" in it.name and any(len(v) != 1 for v in cells.values()):
                bad.append(f"{it.name}: a copy touches some element more than once")
        elif it.kind == "thread":
            n = size(it.layout)
            if sorted(value(it.layout, i) for i in range(n)) != list(range(n)):
                bad.append(f"{it.name}: thread layout is not a bijection onto 0..{n - 1}")
        if leaf in ("sA", "sB"):
            ext = bM if leaf == "sA" else bN
            if product_each(it.layout.shape)[:2] != (ext, bK):
                bad.append(f"{it.name}: shape {fmt(it.layout)} is not ({ext}, {bK}) as registered")
            elif cosize(it.layout) < size(it.layout):
                bad.append(f"{it.name}: cosize below size (elements would overlap)")
        if leaf == "gC" and product_each(it.layout.shape) != (bM, bN):
            bad.append(f"{it.name}: tile {fmt(it.layout)} is not BLK_M x BLK_N as registered")
    return bad

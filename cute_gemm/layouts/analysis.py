"""The bank map of a swizzled layout, the TMA boxes that fill a stage, and `check`: the
self-check `cute-gemm check` runs per CuTe kernel."""
from __future__ import annotations

from .algebra import cosize, fmt, product_each, rank, size, value


def _grid0(layout):
    """The (rows, cols) of a layout's first two modes and the layout at stage 0."""
    g = layout(None, None, 0) if rank(layout) == 3 else layout
    return (*(int(e) for e in product_each(g.shape)[:2]), g)


def banks(layout, elem_bytes: int) -> list[list[int]]:
    """The 4-byte bank (of 32) of each element (row, col) of stage 0 of a shared-memory
    layout, elements `elem_bytes` wide, offset 0 at a 1024-byte boundary."""
    rows, cols, g = _grid0(layout)
    return [[value(g, r, c) * elem_bytes // 4 % 32 for c in range(cols)] for r in range(rows)]


def box_map(stage, box: tuple[int, int], kmajor: bool) -> list[list[int]]:
    """Which TMA box (contiguous extent first) brings element (row, col) of one (EXT, BLK_K)
    stage in, boxes stacked along EXT (sm90_operand.cuh); -1: none."""
    rows, cols, _ = _grid0(stage)
    br, bc = (box[1], box[0]) if kmajor else box
    return [[r // br if c < bc and r // br < -(-rows // br) else -1 for c in range(cols)] for r in range(rows)]


def box_problems(name: str, stage, box: tuple[int, int], kmajor: bool) -> list[str]:
    """A stage's boxes must tile it exactly, box i landing at offsets [i size, (i+1) size)
    of the layout before the swizzle (TMA writes a box at one address)."""
    rows, cols, g = _grid0(stage)
    br, bc = (box[1], box[0]) if kmajor else box
    if bc != cols or rows % br:
        return [f"{name}: box {box} does not tile the ({rows}, {cols}) stage"]
    inner = getattr(g, "layout", g)                     # before the swizzle
    return [f"{name}: box {i} does not land in one dense block of smem" for i in range(rows // br)
            if sorted(value(inner, r, c) for r in range(i * br, (i + 1) * br) for c in range(cols))
            != list(range(i * br * bc, (i + 1) * br * bc))]


def check(rec) -> list[str]:
    """The problems of one recipe (empty: all good): partitions cover their tile evenly, TV
    layouts theirs, thread layouts are bijections, tiles have the registry's sizes."""
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
            if len(vals) * -(-it.nthreads // it.owner_step) != rows * cols * counts.pop():
                bad.append(f"{it.name}: threads hold unequal shares of the tile")
            rep = it.thread - it.thread % it.owner_step     # owners: one thread per step
            if rep != it.thread and it.values_of(rep) != vals:
                bad.append(f"{it.name}: threads {rep} and {it.thread} of one owner group differ")
            if any(rep not in own[r + c * rows] for (r, c) in vals):
                bad.append(f"{it.name}: thread {it.thread}'s values disagree with the owner map")
        elif it.kind in ("tv", "ldsm"):
            rows, cols = it.tile
            cells = it.tv_cells()
            if set(cells) != {(i, j) for i in range(rows) for j in range(cols)}:
                bad.append(f"{it.name}: TV layout does not cover its {rows}x{cols} tile")
            elif ("copy" in it.name or it.kind == "ldsm") and any(len(v) != 1 for v in cells.values()):
                bad.append(f"{it.name}: a copy touches some element more than once")
        elif it.kind == "boxes":
            bad += box_problems(it.name, it.layout, it.box[:2], it.box[2])
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

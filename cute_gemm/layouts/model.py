"""A dump's vocabulary: named layouts (`Def`), tensors (`Global`, `Smem`), partitions (`Part`), the items,
sections and recipes built from them (tests/layout_cppcheck.py turns them into C++), and their analyses:
bank maps, TMA boxes and `check`, the self-check `cute-gemm check` runs per CuTe kernel."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable

from .algebra import (Dyn, Layout, Swizzled, View, composition, cosize, fmt, local_partition,
                      local_tile, make_layout, product_each, rank, size, value, values)

PROBLEM = (256, 256, 256)     # representative (M, N, K), all operands row-major
THREAD = 37                   # the thread whose partitions are shown (not 0: nonzero coords)


@dataclass(frozen=True)
class Def:
    """A layout, TiledCopy or TiledMMA the kernel defines: `cpp` the C++ naming it, `value` the same computed
    here; local: built in the kernel's function, `cpp` that expression verbatim (over Recipe.locals)."""
    cpp: str
    value: object
    local: bool = False

    @property
    def name(self) -> str:
        return self.cpp.removesuffix("{}")


# include/cute_gemm/cute_util.cuh: stride macro -> its major mode, the unit stride static; the _any
# macros keep both strides run-time (their dumps take the row-major ones, as with no macro)
STRIDE_MACROS = {"CG_DA_k": "k", "CG_DA_m": "m", "CG_DA_any": None,
                 "CG_DB_n": "n", "CG_DB_k": "k", "CG_DB_any": None}
STEPS = {"A": (1, None, 1), "B": (None, 1, 1), "C": (1, 1, None)}               # local_tile


@dataclass(frozen=True)
class Global:
    """gA / gB / gC: CTA (0,0)'s tile of the whole operand. `macro`: its strides as a
    cute_util.cuh macro; none: the two run-time strides of major `major` (default row-major).
    batch: the extents of its batch modes (CuTe's L modes, after the matrix's), the problems
    packed one after another; a mode in `broadcast` has stride 0 (one matrix for all)."""
    op: str
    macro: str = ""
    major: str = ""
    batch: tuple = ()
    broadcast: tuple = ()

    def strides(self, problem) -> tuple:
        M, N, K = (Dyn(x) for x in problem)
        if self.op == "C":
            return (N, Dyn(1))
        if self.macro and self.macro not in STRIDE_MACROS:
            raise ValueError(f"unknown stride macro {self.macro!r}; teach layouts.model.STRIDE_MACROS")
        static = STRIDE_MACROS.get(self.macro)
        unit = 1 if static else Dyn(1)
        return {"k": (K, unit), "m": (unit, M), "n": (unit, N)}[self.major or static or "kn"[self.op == "B"]]

    def view(self, tiler, problem) -> View:
        M, N, K = problem
        shape = {"A": (M, K), "B": (N, K), "C": (M, N)}[self.op]
        step, batch = shape[0] * shape[1], []           # the batch modes packed, the last one fastest
        for i in reversed(range(len(self.batch))):
            batch.insert(0, 0 if i in self.broadcast else step)
            step *= 1 if i in self.broadcast else self.batch[i]
        layout = Layout(tuple(map(Dyn, shape + self.batch)), self.strides(problem) + tuple(map(Dyn, batch)))
        return local_tile(View(layout), tiler, (0, 0, None), STEPS[self.op])


@dataclass(frozen=True)
class Smem:
    """A shared-memory tile of operand `op` with the kernel's layout `layout`."""
    op: str
    layout: Def

    def view(self, tiler=None, problem=None) -> View:
        lay = self.layout.value
        if isinstance(lay, Swizzled) and lay.ptr_bits:
            lay = lay.layout       # GMMA: the smem pointer applies the swizzle, the tensor has none
        return View(lay)


@dataclass(frozen=True)
class TV:
    """A TiledCopy's (which "S") or TiledMMA's ("A", "B", "C") thread-value layout."""
    by: Def
    which: str


@dataclass(frozen=True)
class Part:
    """Thread t's share of a tensor: local_partition(tensor, by, t[, step]) for a thread
    layout, by.get_slice(t).partition_<which>(tensor) for a TiledCopy / TiledMMA. order: a
    tiler the tensor is composed with first (composition(tensor, order): which elements lie
    next to each other in a thread's share)."""
    by: Def
    which: str = ""
    step: tuple | None = None
    order: Def | None = None

    def __call__(self, view: View, t: int) -> View:
        if self.order is not None:
            view = composition(view, self.order.value)
        if self.which:
            return self.by.value.partition(self.which, view, t)
        return local_partition(view, self.by.value, t, self.step)


@dataclass
class Item:
    """One dumped layout. kind: "layout" (coord -> offset), "thread" (coord -> thread), "tv" ((thread,
    value) -> index in a tile; "ldsm": from PTX), "partition" (what one thread holds), and two maps of
    a shared-memory layout computed here (`table`): "banks" and "boxes" (each element's TMA box)."""
    name: str
    title: str
    kind: str
    source: object                       # Def | Global | TV | Smem (partitions: the tensor split)
    layout: Layout
    part: Part | None = None
    offset: int | None = None
    tile: tuple | None = None            # tv, partition: (rows, cols) of the tile
    nthreads: int = 0
    exact: bool = True                   # partition: every element owned by exactly one thread
    thread: int = THREAD
    src_rank: int = 2                    # partition: rank of the tensor split (3: a k or stage mode)
    owner_step: int = 1                  # partition: owners among threads 0, step, ... (128: warpgroups)
    elem_bytes: int = 4                  # banks: bytes per element of the layout
    table: list | None = None            # banks, boxes: rows of ints
    box: tuple | None = None             # boxes: (contiguous extent, other extent, k-major)

    @cached_property
    def owners(self) -> list[list[int]]:
        """Per element of the tile (column-major), the threads (0, owner_step, ...) holding it."""
        out = [[] for _ in range(self.tile[0] * self.tile[1])]
        for t in range(0, self.nthreads, self.owner_step):
            for r, c in self.values_of(t):
                out[r + c * self.tile[0]].append(t)
        return out

    def values_of(self, t: int) -> dict[tuple[int, int], int]:
        """Thread t's partition of the tile: (row, col) -> its value index."""
        p, rows = self.part(View(make_layout(tuple(self.tile))), t), self.tile[0]
        return {divmod(int(p.offset) + v, rows)[::-1]: i for i, v in enumerate(values(p.layout))}

    def tv_cells(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """A TV layout over the tile: (row, col) -> the (thread, value) pairs there."""
        nt, nv = (int(x) for x in product_each(self.layout.shape)[:2])
        flat = values(self.layout)          # tv(t, v) at linear index t + nt * v (colexicographic)
        out: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for t, v in ((t, v) for t in range(nt) for v in range(nv)):
            out.setdefault(divmod(flat[t + nt * v], self.tile[0])[::-1], []).append((t, v))
        return out


@dataclass
class Section:
    title: str
    items: list[Item] = field(default_factory=list)


@dataclass
class Recipe:
    """One kernel's layouts, CTA (0,0) of `problem` and thread `thread`, with the tile and knobs of its
    typed config (what it is compiled with). Its recipe function (recipes.py) adds the sections and items;
    `locals`: the kernel function's declarations that local Defs use."""
    kernel: object                        # the registry Kernel
    problem: tuple = PROBLEM
    thread: int = THREAD
    sections: list[Section] = field(default_factory=list)
    locals: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.problem = tuple(self.problem)
        self.config, self.tiler, self.nthreads = self.kernel.config, self.kernel.config.tile, self.kernel.threads

    def items(self) -> Iterable[Item]:
        for s in self.sections:
            yield from s.items

    def section(self, title: str) -> None:
        self.sections.append(Section(title))

    def _item(self, name: str, *args, **kw) -> Item:
        self.sections[-1].items.append(it := Item(f"{self.kernel.name}/{name}", *args, **kw))
        return it

    def layout(self, name: str, title: str, d: Def, kind: str = "layout", tile: tuple | None = None) -> Item:
        """A Def's layout (kind "ldsm", a (lane, value) -> index layout from PTX: with its tile)."""
        return self._item(name, title, kind, d, d.value, tile=tile)

    def tile(self, name: str, g: Global, note: str = "") -> Item:
        """g's CTA tile: C's (BLK_M,BLK_N), A's or B's (BLK_M|N,BLK_K,k) strip."""
        M, N, K = self.problem
        ls = "".join(f",L{i}" for i in range(len(g.batch)))
        what = (f"the CTA's (BLK_M,BLK_N{ls}) tile of C" if g.op == "C" else
                f"the CTA's (BLK_{'MN'[g.op == 'B']},BLK_K,k{ls}) strip of {g.op}{note}")
        return self._item(name, f"{name.rsplit('/', 1)[-1]}: {what} after local_tile, (M,N,K) = "
                          f"({M},{N},{K}), CTA (0,0)", "layout", g, g.view(self.tiler, self.problem).layout)

    def tv(self, name: str, title: str, by: Def, which: str) -> Item:
        v = by.value                          # a TiledCopy (which "S") or TiledMMA ("A", "B", "C")
        return self._item(name, title, "tv", TV(by, which), v.layout_tv(which), tile=v.tile(which))

    def partition(self, name: str, src, by: Def, label: str, what: str, which: str = "", step=None,
                  order: Def | None = None, exact: bool = True, tile: tuple | None = None,
                  owner_step: int = 1, nthreads: int = 0) -> Item:
        """Thread t's share of src by `by` (the kernel's `label`), titled with the kernel's call:
        local_partition(src, label, t[, step]) by a thread layout, label.get_slice(t).partition_<which>(src)
        by a TiledCopy or TiledMMA; order: src composed with that tiler first. tile: the (rows, cols)
        split (default: the operand's CTA tile); owners: threads 0, owner_step, ... < nthreads (default:
        the kernel's)."""
        t, of = self.thread, f"{'s' if isinstance(src, Smem) else 'g'}{src.op}"
        of = f"composition({of}, {order.name})" if order is not None else of
        steps = f", Step<{', '.join('_1' if s else 'X' for s in step)}>" if step else ""
        call = (f"{label}.get_slice({t}).partition_{which}({of})" if which else
                f"local_partition({of}, {label}, {t}{steps})")
        part, view = Part(by, which, step, order), src.view(self.tiler, self.problem)
        p = part(view, t)
        bm, bn, bk = self.tiler
        default = (bm if src.op in "AC" else bn, bn if src.op == "C" else bk)
        return self._item(name, f"{name.rsplit('/', 1)[-1]} = {call}: {what}", "partition", src, p.layout,
                          part=part, offset=p.offset, tile=tile or default, nthreads=nthreads or self.nthreads,
                          exact=exact, thread=t, src_rank=rank(view.layout), owner_step=owner_step)

    def table(self, name: str, title: str, d: Def, elem_bytes: int = 0, box=None, kmajor=False) -> Item:
        """The bank map of shared-memory layout d (elem_bytes given: kind "banks"), or which TMA
        box (contiguous extent first) of one stage brings each element in (kind "boxes")."""
        table = banks(d.value, elem_bytes) if elem_bytes else box_map(d.value, box, kmajor)
        return self._item(name, title, "banks" if elem_bytes else "boxes", d, d.value,
                          tile=(len(table), len(table[0])), table=table, elem_bytes=elem_bytes or 4,
                          box=None if elem_bytes else (*box, kmajor))


# ---- analyses: bank maps, TMA boxes, the self-check ---------------------------------------------
def first(layout):
    """The rank-2 grid of a layout: index 0 of every mode past the second (a stage, a k-tile,
    a problem of a batch); CuTe's own text (draw.item_text) prints grids of rank 2 and 3 only."""
    r = rank(layout)
    return layout if r == 2 else layout(None, None, *(0,) * (r - 2))


def _grid0(layout, box=None, kmajor=False):
    """(rows, cols, grid) of a layout's first grid, and (rows, cols) of a TMA box (contiguous extent first)."""
    g = first(layout)
    return (*(int(e) for e in product_each(g.shape)), g, box and ((box[1], box[0]) if kmajor else box))


def banks(layout, elem_bytes: int) -> list[list[int]]:
    """The 4-byte bank (of 32) of each element (row, col) of stage 0 of a shared-memory
    layout, elements `elem_bytes` wide, offset 0 at a 1024-byte boundary."""
    rows, cols, g, _ = _grid0(layout)
    return [[value(g, r, c) * elem_bytes // 4 % 32 for c in range(cols)] for r in range(rows)]


def box_map(stage, box: tuple[int, int], kmajor: bool) -> list[list[int]]:
    """Which TMA box brings element (row, col) of one (EXT, BLK_K) stage in, boxes stacked along
    EXT (sm90_operand.cuh); -1: none."""
    rows, cols, _, (br, bc) = _grid0(stage, box, kmajor)
    return [[r // br if c < bc else -1 for c in range(cols)] for r in range(rows)]


def box_problems(name: str, stage, box: tuple[int, int], kmajor: bool) -> list[str]:
    """A stage's boxes must tile it exactly, box i landing at offsets [i size, (i+1) size)
    of the layout before the swizzle (TMA writes a box at one address)."""
    rows, cols, g, (br, bc) = _grid0(stage, box, kmajor)
    if bc != cols or rows % br:
        return [f"{name}: box {box} does not tile the ({rows}, {cols}) stage"]
    inner = getattr(g, "layout", g)                     # before the swizzle
    return [f"{name}: box {i} does not land in one dense block of smem" for i in range(rows // br)
            if sorted(value(inner, r, c) for r in range(i * br, (i + 1) * br) for c in range(cols))
            != list(range(i * br * bc, (i + 1) * br * bc))]


def check(rec: Recipe) -> list[str]:
    """The problems of one recipe (empty: all good): partitions cover their tile evenly, TV
    layouts theirs, thread layouts are bijections, tiles have the registry's sizes."""
    bM, bN, bK = rec.kernel.tile                  # the registry's tile
    bad = []
    for it in rec.items():
        leaf = it.name.rsplit("/", 1)[-1]
        if it.kind == "partition":
            rows, cols = it.tile
            own = it.owners
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
            if sorted(values(it.layout)) != list(range(n)):
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

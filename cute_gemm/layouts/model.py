"""What a layout dump is made of: the kernel's named layouts (`Def`), tensors (`Global`,
`Smem`), thread partitions (`Part`), and the items, sections and recipes built from them.

A recipe (recipes.py) describes a kernel's layouts once, in these terms. Two interpreters
read that one description: this module evaluates it in Python (algebra.py, on pycute) for
the dumps and pictures, and cppcheck.py turns it into C++ calls on the kernel's own
definitions (each `Def.cpp` is a name the kernel source or its headers define), compiled
with the kernel's source as NVRTC sees it (after its typed config's prelude) by nvcc,
whose output must equal the dump (tests/test_layouts.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from . import analysis
from .algebra import (Dyn, Layout, Swizzled, TiledCopy, TiledMMA, View, local_partition,
                      local_tile, rank)

PROBLEM = (256, 256, 256)     # representative (M, N, K), all operands row-major
THREAD = 37                   # the thread whose partitions are shown (not 0: nonzero coords)


@dataclass(frozen=True)
class Def:
    """A layout, thread layout, TiledCopy or TiledMMA the kernel source (or a project header
    it includes) defines by name: `cpp` is the C++ expression that gives it at namespace
    scope (`smem_layout_a()`, `VecMN<BLK_N>{}`, `cg::PipeGeometry<Config>::TiledMma{}`:
    template arguments spelled with its prelude's constexprs or its `Config` members), `value`
    the same thing computed here from the registry entry's config.
    local: the kernel builds it only inside its device function; `cpp` is then that
    expression verbatim, over the function's local names (Recipe.locals), so that nvcc
    still evaluates the kernel's own text (tests/test_layouts.py checks it is there)."""
    cpp: str
    value: object
    local: bool = False

    @property
    def name(self) -> str:
        return self.cpp.removesuffix("{}")


# include/cute_gemm/cute_util.cuh: stride macro -> (operand, major mode, unit stride static).
# The _any macros keep both strides run-time; their dumps take the row-major ones.
STRIDE_MACROS = {
    "CG_DA_k": ("A", "k", True), "CG_DA_m": ("A", "m", True), "CG_DA_any": ("A", "k", False),
    "CG_DB_n": ("B", "n", True), "CG_DB_k": ("B", "k", True), "CG_DB_any": ("B", "n", False),
}
STRIDE_VARS = {"A": ("sAm", "sAk"), "B": ("sBn", "sBk"), "C": ("sCm", "sCn")}   # CG_GEMM_PARAMS
_STEPS = {"A": (1, None, 1), "B": (None, 1, 1), "C": (1, 1, None)}               # local_tile


@dataclass(frozen=True)
class Global:
    """gA / gB / gC: CTA (0,0)'s tile of the whole operand, local_tile(m, cta_tiler, coord,
    Step). `macro`: the operand's strides as a cute_util.cuh macro; none: make_stride of the
    two run-time strides (c1's A and B, every kernel's C) of major `major` (default:
    row-major)."""
    op: str
    macro: str = ""
    major: str = ""

    def strides(self, problem) -> tuple:
        M, N, K = (Dyn(x) for x in problem)
        if self.op == "C":
            return (N, Dyn(1))
        op, major, static_unit = self.op, {"A": "k", "B": "n"}[self.op], False
        if self.macro:
            try:
                op, major, static_unit = STRIDE_MACROS[self.macro]
            except KeyError:
                raise ValueError(f"unknown stride macro {self.macro!r}; "
                                 "teach layouts.model.STRIDE_MACROS") from None
            assert op == self.op, (self.op, self.macro)
        unit = 1 if static_unit else Dyn(1)
        major = self.major or major
        if op == "A":
            return (K, unit) if major == "k" else (unit, M)
        return (unit, N) if major == "n" else (K, unit)

    @property
    def step(self) -> tuple:
        return _STEPS[self.op]

    def view(self, tiler, problem) -> View:
        M, N, K = (Dyn(x) for x in problem)
        shape = {"A": (M, K), "B": (N, K), "C": (M, N)}[self.op]
        return local_tile(View(Layout(shape, self.strides(problem))), tiler, (0, 0, None), self.step)


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

    def layout(self) -> Layout:
        v = self.by.value
        return v.layout_S_TV() if isinstance(v, TiledCopy) else v.layout_tv(self.which)

    def tile(self) -> tuple:
        v = self.by.value
        if isinstance(v, TiledCopy):
            return tuple(int(x) for x in v.tiler)
        a, b = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}[self.which]
        return (int(v.tile_size(a)), int(v.tile_size(b)))


@dataclass(frozen=True)
class Part:
    """How thread t takes its share of a tensor: local_partition(tensor, by, t[, Step]) for a
    thread layout (`step`: None for X), or by.get_slice(t).partition_<which>(tensor) for a
    TiledCopy (which "S" or "D") or TiledMMA ("A", "B", "C")."""
    by: Def
    which: str = ""
    step: tuple | None = None

    def __call__(self, view: View, t: int) -> View:
        v = self.by.value
        if isinstance(v, TiledCopy):
            return v.partition(view, t)
        if isinstance(v, TiledMMA):
            return v.partition(self.which, view, t)
        return local_partition(view, v, t, self.step)


@dataclass
class Item:
    """One dumped layout. kind: "layout" (coord -> offset), "thread" (coord -> thread),
    "tv" ((thread, value) -> index in a tile; "ldsm": one computed here from PTX's ldmatrix
    definition, not printed by CuTe), "partition" (the part of a tensor one thread
    holds: a layout and an offset); and two maps computed here, of a shared-memory layout
    (`table`, a grid of ints): "banks" (the 4-byte bank each element lands in) and "boxes"
    (the TMA box of a stage that brings each element in)."""
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
    owner_step: int = 1                  # partition: owners among threads 0, step, 2 step, ...
                                         # (128: one per warpgroup, whose threads all read the same)
    elem_bytes: int = 4                  # banks: bytes per element of the layout
    table: list | None = None            # banks, boxes: rows of ints
    box: tuple | None = None             # boxes: (contiguous extent, other extent, k-major)
    _owners: list | None = field(default=None, repr=False, compare=False)

    def grid_layout(self):
        """The rank-2 layout shown as a grid (index 0 of the third mode of a rank-3 one)."""
        r = rank(self.layout)
        if r == 2:
            return self.layout
        return self.layout(None, None, 0) if r == 3 else None

    def owners(self) -> list[list[int]]:
        if self._owners is None:
            self._owners = analysis.owners(self.part, self.tile, self.nthreads, self.owner_step)
        return self._owners

    def values_of(self, t: int) -> dict[tuple[int, int], int]:
        return analysis.values_of(self.part, self.tile, t)

    def tv_cells(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        return analysis.tv_cells(self.layout, self.tile)


@dataclass
class Section:
    title: str
    items: list[Item] = field(default_factory=list)


@dataclass
class Recipe:
    kernel: object                        # the registry Kernel
    sections: list[Section]
    problem: tuple = PROBLEM
    locals: tuple[str, ...] = ()          # the kernel function's declarations local Defs use

    @property
    def source(self) -> str:
        return self.kernel.source

    def items(self) -> Iterable[Item]:
        for s in self.sections:
            yield from s.items


class Builder:
    """Makes the items of one kernel's recipe: CTA (0,0) of `problem`, thread `thread`."""

    def __init__(self, kernel, problem=PROBLEM, thread: int = THREAD):
        # what the kernel is compiled with: its typed config (blk_m, ...; d: by the C++ name)
        self.kernel, self.config = kernel, kernel.config
        self.d = {f.upper(): v for f, v in vars(kernel.config).items()}
        # (BLK_M, BLK_N, BLK_K): c5's BLK_K is 128 bytes of 16-bit k; the tf32 entries' is
        # half of it, their recipe says so
        self.tiler = self.config.tile
        self.problem, self.thread, self.nthreads = tuple(problem), thread, kernel.threads
        self.sections: list[Section] = []
        self.locals: list[str] = []

    def section(self, title: str) -> Section:
        self.sections.append(Section(title))
        return self.sections[-1]

    def _name(self, name: str) -> str:
        return f"{self.kernel.name}/{name}"

    def layout(self, name: str, title: str, d: Def, kind: str = "layout") -> Item:
        return Item(self._name(name), title, kind, d, d.value)

    def tile(self, name: str, g: Global, what: str) -> Item:
        M, N, K = self.problem
        return Item(self._name(name), f"{name.rsplit('/', 1)[-1]}: {what} after local_tile, "
                    f"(M,N,K) = ({M},{N},{K}), CTA (0,0)", "layout", g,
                    g.view(self.tiler, self.problem).layout)

    def tv(self, name: str, title: str, by: Def, which: str) -> Item:
        tv = TV(by, which)
        return Item(self._name(name), title, "tv", tv, tv.layout(), tile=tv.tile())

    def ldsm(self, name: str, title: str, d: Def, tile: tuple[int, int]) -> Item:
        """A (lane, value) -> index-in-tile layout computed from PTX's ldmatrix definition."""
        return Item(self._name(name), title, "ldsm", d, d.value, tile=tile)

    def partition(self, name: str, title: str, src, part: Part, exact: bool = True,
                  tile: tuple | None = None, owner_step: int = 1, nthreads: int = 0) -> Item:
        """tile: the (rows, cols) split (default: the CTA tile of the operand); owners among
        threads 0, owner_step, ... < nthreads (default: the kernel's threads)."""
        view = src.view(self.tiler, self.problem)
        p = part(view, self.thread)
        rows = self.tiler[0] if src.op in "AC" else self.tiler[1]
        cols = self.tiler[1] if src.op == "C" else self.tiler[2]
        return Item(self._name(name), title, "partition", src, p.layout, part=part,
                    offset=p.offset, tile=tile or (rows, cols), nthreads=nthreads or self.nthreads,
                    exact=exact, thread=self.thread, src_rank=rank(view.layout),
                    owner_step=owner_step)

    def banks(self, name: str, title: str, d: Def, elem_bytes: int) -> Item:
        """The bank map of shared-memory layout d (its first two modes, stage 0)."""
        table = analysis.banks(d.value, elem_bytes)
        return Item(self._name(name), title, "banks", d, d.value, tile=(len(table), len(table[0])),
                    elem_bytes=elem_bytes, table=table)

    def boxes(self, name: str, title: str, stage: Def, box: tuple[int, int], kmajor: bool) -> Item:
        """Which TMA box (records.TmaBoxes: contiguous extent first) of one stage of `stage`
        brings each (EXT, BLK_K) element in; -1: none."""
        table = analysis.box_map(stage.value, box, kmajor)
        return Item(self._name(name), title, "boxes", stage, stage.value,
                    tile=(len(table), len(table[0])), table=table, box=(*box, kmajor))

    def recipe(self) -> Recipe:
        return Recipe(self.kernel, self.sections, self.problem, tuple(self.locals))

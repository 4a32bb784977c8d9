"""What the layout dumps need on top of pycute (the CuTe algebra in Python, nvidia-cutlass wheel).

pycute does the algebra: Layout, composition, complement, coalesce, logical/zipped divide,
logical product, right_inverse, crd2idx, slicing. This module adds only what it lacks:

* `Dyn`: a run-time integer. CuTe C++ prints compile-time integers `_8` and run-time ones
  `8`; pycute has plain ints only. A Dyn goes through pycute's arithmetic and stays a Dyn
  (except CuTe's static-zero short cuts), so the text of a layout says which is which.
* CuTe's print formats: `print(layout)` (`fmt`) and the `print_layout` grid.
* make_layout with CuTe's compact strides (a static 1 gets stride _0), raked_product.
* Tensors without data (`View`: layout + offset), local_tile and local_partition.
* TiledCopy and TiledMMA: their TV layouts and per-thread partitions (cute/atom/*.hpp),
  for one-thread atoms and warp / warpgroup-wide ones (atoms.py: SM80 mma.sync, SM90 GMMA).
* Swizzled layouts with a shape (`Swizzled`: CuTe's ComposedLayout of a Swizzle, an offset
  and a layout; pycute's ComposedLayout has no shape, slicing or print) and tile_to_shape.

tests/test_layouts.py compares the text of every dumped layout with CuTe C++'s own printers
(the kernels' sources compiled with nvcc), byte for byte.
"""
from __future__ import annotations

from dataclasses import dataclass

import pycute
from pycute import Layout

__all__ = ["Dyn", "Layout", "fmt", "print_layout", "make_layout", "size", "cosize", "value", "values",
           "rank", "get", "product_each", "View", "local_tile", "local_partition",
           "TiledCopy", "TiledMMA", "CopyAtom", "MMAAtom", "UNIVERSAL_FMA", "Swizzled",
           "tile_to_shape", "make_ordered_layout"]


# ---- run-time integers ------------------------------------------------------------------------

class Dyn(int):
    """A run-time integer (CuTe `int`); plain ints are compile-time (`Int<N>`, printed `_N`).
    Arithmetic with a Dyn gives a Dyn, except CuTe's static-zero short cuts
    (`_0 * x == _0`, `_0 / x == _0`, `x % _1 == _0`)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return f"Dyn({int(self)})"

    def __neg__(self):
        return Dyn(-int(self))


def _static(x) -> bool:
    return not isinstance(x, Dyn)


def _binop(name: str, zero: bool = False, one_mod: bool = False):
    op = getattr(int, name)
    reflected = name.startswith("__r") and name != "__rshift__"

    def f(self, other):
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)          # a op b, as written
        if zero and _static(a) and int(a) == 0:
            return 0
        if zero and name in ("__mul__", "__rmul__") and _static(b) and int(b) == 0:
            return 0
        if one_mod and _static(b) and abs(int(b)) == 1:
            return 0
        return Dyn(op(int(self), int(other)))
    return f


for _n in ("__add__", "__radd__", "__sub__", "__rsub__"):
    setattr(Dyn, _n, _binop(_n))
for _n in ("__mul__", "__rmul__", "__floordiv__", "__rfloordiv__"):
    setattr(Dyn, _n, _binop(_n, zero=True))
for _n in ("__mod__", "__rmod__"):
    setattr(Dyn, _n, _binop(_n, zero=True, one_mod=True))


# ---- int tuples and CuTe's print formats ----------------------------------------------------

is_tuple = pycute.is_tuple
flatten = pycute.flatten
product = pycute.product


def get(t, *idx):
    for i in idx:
        if is_tuple(t):
            t = t[i]
        else:
            assert i == 0, "get<i> of an integer needs i == 0"
    return t


def _is_layout(x) -> bool:
    return isinstance(x, (Layout, Swizzled))


def rank(x) -> int:
    s = x.shape if _is_layout(x) else x
    return len(s) if is_tuple(s) else 1


def product_each(t) -> tuple:
    return tuple(product(e) for e in (t if is_tuple(t) else (t,)))


def size(x) -> int:
    return product(x.shape if _is_layout(x) else x)


def cosize(layout: Layout) -> int:
    if isinstance(layout, Swizzled):         # a swizzle permutes within its own span
        return cosize(layout.layout)
    last = tuple(s - 1 for s in flatten(layout.shape))
    return sum(int(c) * int(d) for c, d in zip(last, flatten(layout.stride))) + 1


def value(layout: Layout, *crd) -> int:
    """layout(crd...) as a plain int."""
    return int(layout(crd[0] if len(crd) == 1 else tuple(crd)))


def values(layout) -> list[int]:
    """[layout(i) for i in range(size(layout))], for a plain Layout in one pass over its
    flattened modes (coordinate k of index i is i // (the extents before k) % extent k, as
    CuTe's colexicographic order has it); a Swizzled one element by element."""
    if isinstance(layout, Swizzled):
        return [value(layout, i) for i in range(int(size(layout)))]
    out = [0]
    for extent, stride in zip(flatten(layout.shape), flatten(layout.stride)):
        d = int(stride)
        out = [o + c * d for c in range(int(extent)) for o in out]
    return out


def fmt(x) -> str:
    """CuTe's print of an IntTuple or Layout: `(_4,(8,_2))`, `(_4,_8):(_1,_4)`."""
    if isinstance(x, Swizzled):
        return str(x)
    if isinstance(x, Layout):
        return f"{fmt(x.shape)}:{fmt(x.stride)}"
    if is_tuple(x):
        return "(" + ",".join(fmt(e) for e in x) + ")"
    return f"_{int(x)}" if _static(x) else f"{int(x)}"


def print_layout(layout: Layout) -> str:
    """The text of CuTe C++ `print_layout(layout)` (rank-2 layouts), byte for byte."""
    assert rank(layout) == 2, f"print_layout needs a rank-2 layout, got {fmt(layout)}"
    c = int(cosize(layout))
    w = (len(str(c)) if c >= 10 else 1) + 2
    seg = "+-----------------------"[:w + 1]
    rows, cols = int(size(get(layout.shape, 0))), int(size(get(layout.shape, 1)))
    out = [fmt(layout) + "\n", "    "] + [f"  {n:>{w - 2}} " for n in range(cols)] + ["\n"]
    for m in range(rows):
        out += ["    " + seg * cols + "+\n", f"{m:>2}  "]
        out += [f"| {value(layout, m, n):>{w - 2}} " for n in range(cols)] + ["|\n"]
    out.append("    " + seg * cols + "+\n")
    return "".join(out)


# ---- constructors and products pycute lacks ----------------------------------------------------

def _compact(shape, current, right: bool):
    if is_tuple(shape):
        out = []
        for s in (reversed(shape) if right else shape):
            d, current = _compact(s, current, right)
            out.append(d)
        return tuple(reversed(out) if right else out), current
    if _static(shape) and shape == 1:
        return 0, current                      # CuTe: a static _1 mode gets stride _0
    return current, current * shape


def make_layout(shape, stride=None) -> Layout:
    """CuTe's make_layout(shape[, stride]): column-major (LayoutLeft) by default,
    stride="row" for LayoutRight."""
    if stride is None or stride == "row":
        stride = _compact(shape, 1, stride == "row")[0]
    return Layout(shape, stride)


def _append(layout: Layout, n: int) -> Layout:
    modes = [layout[i] for i in range(len(layout))] + [Layout(1, 0)] * (n - len(layout))
    return pycute.make_layout(modes)


def _zip(t) -> tuple:
    """zip((a,b),(c,d)) -> ((a,c),(b,d)); an integer counts as a rank-1 tuple."""
    return tuple(zip(*(e if is_tuple(e) else (e,) for e in t)))


def raked_product(block: Layout, tiler: Layout) -> Layout:
    r = max(rank(block), rank(tiler))
    res = pycute.logical_product(_append(block, r), _append(tiler, r))
    return Layout(_zip((res[1].shape, res[0].shape)), _zip((res[1].stride, res[0].stride)))


def make_ordered_layout(shape, order) -> Layout:
    """make_ordered_layout(shape, Step<...>): compact, the mode of the lowest order fastest."""
    stride, cur = [0] * len(shape), 1
    for i in sorted(range(len(shape)), key=lambda i: order[i]):
        stride[i], cur = (0 if shape[i] == 1 else cur), cur * shape[i]
    return Layout(tuple(shape), tuple(stride))


def tile_to_shape(block, trg_shape, order=None):
    """tile_to_shape(block, shape[, Step<...>]): block repeated (blocked_product) to the
    target shape, the modes of the lowest order first: ((block, repeats), ...) per mode, as
    CuTe prints it (uncoalesced)."""
    if isinstance(block, Swizzled):
        return Swizzled(block.sw, tile_to_shape(block.layout, trg_shape, order), block.offset,
                        block.ptr_bits)
    r = len(trg_shape)
    blk = _append(block, r)
    bs = product_each(blk.shape)
    assert all(t % b == 0 for t, b in zip(trg_shape, bs)), f"{fmt(block)} does not tile {trg_shape}"
    tiler = make_ordered_layout(tuple(t // b for t, b in zip(trg_shape, bs)),
                                order or tuple(range(1, r + 1)))
    res = pycute.logical_product(blk, tiler)
    return Layout(_zip((res[0].shape, res[1].shape)), _zip((res[0].stride, res[1].stride)))


class Swizzled:
    """CuTe's ComposedLayout<Swizzle<B,M,S>, offset, layout>: coord -> sw(offset + layout(coord)).
    ptr_bits 0: the offset is a number and the swizzle acts on element offsets
    (`composition(Swizzle<3,3,3>{}, layout)`, c4). ptr_bits W: GMMA's atoms, whose offset is
    smem_ptr_flag_bits<W> (printed `smem_ptr[Wb](unset)`): the swizzle acts on byte addresses
    (the smem pointer applies it), so an element lands at sw(offset * W/8) / (W/8)."""

    def __init__(self, sw: pycute.Swizzle, layout: Layout, offset: int = 0, ptr_bits: int = 0):
        self.sw, self.layout, self.offset, self.ptr_bits = sw, layout, offset, ptr_bits

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    def __len__(self) -> int:
        return len(self.layout)

    def __call__(self, *args):
        crd = args[0] if len(args) == 1 else tuple(args)
        if pycute.has_none(crd):               # a slice keeps the swizzle, moves the offset
            lay, off = _slice(crd, self.layout)
            return Swizzled(self.sw, lay, self.offset + off, self.ptr_bits)
        off = self.offset + self.layout(crd)
        if not self.ptr_bits:
            return self.sw(off)
        nbytes = self.ptr_bits // 8
        return self.sw(off * nbytes) // nbytes

    def __str__(self) -> str:
        s = self.sw
        off = f"smem_ptr[{self.ptr_bits}b](unset)" if self.ptr_bits else fmt(self.offset)
        return f"Sw<{s.bits},{s.base},{s.shift}> o {off} o {fmt(self.layout)}"


def _coalesce(layout, profile=None):
    """pycute's coalesce, merging two modes only where CuTe can: both strides compile-time
    (a run-time stride's `shape * stride == next stride` is no static fact, so CuTe keeps
    the modes apart; pycute's composition coalesces its left side with this)."""
    if is_tuple(profile):
        return pycute.make_layout([_coalesce(layout[i], profile[i]) for i in range(len(profile))]
                                  + [layout[i] for i in range(len(profile), len(layout))])
    shp, std = [1], [0]
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if s == 1 and _static(s):
            continue
        if shp[-1] == 1 and _static(shp[-1]):
            shp[-1], std[-1] = s, d
        elif _static(std[-1]) and _static(d) and _static(shp[-1]) and shp[-1] * std[-1] == d:
            shp[-1] = shp[-1] * s
        else:
            shp.append(s)
            std.append(d)
    return Layout(shp[0], std[0]) if len(shp) == 1 else Layout(tuple(shp), tuple(std))


pycute.layout.coalesce = _coalesce      # composition() calls it by its module's name
pycute.coalesce = _coalesce


def _colex(crd, shape):
    """A hierarchical coordinate -> its colexicographic index within shape."""
    if is_tuple(shape):
        r, m = 0, 1
        for c, s in zip(crd, shape):
            r, m = r + _colex(c, s) * m, m * product(s)
        return r
    return crd


def _idx2crd(idx: int, shape, stride):
    """(idx / d) % s per mode, 0 where d is 0 (pycute's idx2crd divides by the 0)."""
    if is_tuple(shape):
        return tuple(_idx2crd(idx, s, d) for s, d in zip(shape, stride))
    return (idx // stride) % shape if stride != 0 else 0


def flat_coord(layout: Layout, idx: int):
    """Layout::get_flat_coord: idx -> one (colexicographic) coordinate per mode."""
    hier = _idx2crd(idx, layout.shape, layout.stride)
    if is_tuple(layout.shape):
        return tuple(_colex(c, s) for c, s in zip(hier, layout.shape))
    return _colex(hier, layout.shape)


def _slice(crd, layout: Layout) -> tuple[Layout, int]:
    """layout(crd) with underscores (None): the sliced layout and the offset it starts at."""
    if not pycute.has_none(crd):
        return Layout(1, 0), layout(crd)
    shape = pycute.slice_(crd, layout.shape)
    stride = pycute.slice_(crd, layout.stride)
    if crd is None:                            # the whole layout: unchanged, like CuTe
        shape, stride = layout.shape, layout.stride
    return Layout(shape, stride), pycute.crd2idx(crd, layout.shape, layout.stride)


# ---- tensors without data: local_tile, local_partition -----------------------------------------

@dataclass(frozen=True)
class View:
    """What a CuTe Tensor over a plain pointer is to the dumps: offset + layout(coord)."""
    layout: Layout
    offset: int = 0

    def __call__(self, *coord) -> "View":
        """Slice like Tensor::operator() with underscores (None)."""
        lay, off = _slice(coord[0] if len(coord) == 1 else tuple(coord), self.layout)
        return View(lay, self.offset + off)


def _pad(coord, n: int):
    return coord + (None,) * (n - len(coord)) if is_tuple(coord) else coord


def _all(n: int):
    return (None,) * n if n > 1 else None


def inner_partition(v: View, tiler, coord) -> View:
    t = pycute.zipped_divide(v.layout, tiler)
    return View(t, v.offset)(_all(rank(t[0])), _pad(coord, rank(t[1])))


def outer_partition(v: View, tiler, coord) -> View:
    t = pycute.zipped_divide(v.layout, tiler)
    return View(t, v.offset)(_pad(coord, rank(t[0])), _all(rank(t[1])))


def _dice(step, t):
    """cute::dice: keep the parts of t where the Step is not X (None)."""
    return tuple(x for s, x in zip(step, t) if s is not None)


def local_tile(v: View, tiler, coord, step=None) -> View:
    """local_tile(tensor, tiler, coord[, Step<...>]); X in a Step is None here."""
    if step is not None:
        tiler, coord = _dice(step, tiler), _dice(step, coord)
    return inner_partition(v, tiler, coord)


def local_partition(v: View, thr: Layout, index: int, step=None) -> View:
    """local_partition(tensor, thread_layout, thread_index[, Step<...>])."""
    if step is not None:
        thr = Layout(_dice(step, thr.shape), _dice(step, thr.stride))
    return outer_partition(v, product_each(thr.shape), flat_coord(thr, index))


# ---- atoms, TiledMMA, TiledCopy (cute/atom/mma_atom.hpp, copy_atom.hpp) -------------------------

@dataclass(frozen=True)
class MMAAtom:
    shape_mnk: tuple
    thr_id: Layout
    a_tv: Layout              # (thr,val) -> (m,k) column-major offset in the atom's M x K
    b_tv: Layout
    c_tv: Layout


# UniversalFMA: one thread, one value. C++ writes its TV layouts (_1,_1):(_0,_0); the same
# function written _1:_0 keeps pycute's results in CuTe's printed nesting (pycute's
# composition keeps a trivial (_1,_1) mode that CuTe's drops).
UNIVERSAL_FMA = MMAAtom((1, 1, 1), Layout(1, 0), Layout(1, 0), Layout(1, 0), Layout(1, 0))


@dataclass(frozen=True)
class CopyAtom:
    """A Copy_Atom over float moving `num_val` values per thread and instruction (every atom
    used here is one thread wide: UniversalCopy, SM80 cp.async)."""
    num_val: int

    @property
    def tv(self) -> Layout:
        return Layout((1, self.num_val), (0, 1))


def _compose_first(layout: Layout, tv: Layout) -> Layout:
    """composition(layout, (tv, _)): compose the first mode only."""
    return pycute.composition(layout, (tv, None))


class TiledMMA:
    """make_tiled_mma(atom, thr_layout[, permutations]): TV layouts and partitions."""

    def __init__(self, atom: MMAAtom, thr_layout: Layout, permutations=(None, None, None)):
        self.atom = atom
        self.perm = tuple(permutations) + (None,) * (3 - len(permutations))
        self.vmnk = pycute.tiled_product(atom.thr_id, _append(thr_layout, 3))
        self._frg: dict = {}

    def _perm(self, i: int):
        p = self.perm[i]       # none: the atoms side by side, as make_layout (a static 1: _1:_0)
        return make_layout(self.atom.shape_mnk[i] * size(self.vmnk[i + 1])) if p is None else p

    def tile_size(self, i: int) -> int:
        return size(self._perm(i))

    @property
    def size(self) -> int:
        return size(self.vmnk)

    def _thrfrg(self, layout: Layout, a: int, b: int, tv: Layout) -> Layout:
        t = pycute.logical_divide(layout, (self._perm(a), self._perm(b)))
        atile = (make_layout(self.atom.shape_mnk[a]), make_layout(self.atom.shape_mnk[b]))
        tvt = _compose_first(pycute.zipped_divide(t, atile), tv)
        thr = (make_layout(size(self.vmnk[a + 1])), make_layout(size(self.vmnk[b + 1])))
        if rank(tv) == 1:                      # one-thread atom (_1:_0): pycute's `_` split
            return pycute.zipped_divide(tvt, (None, thr))
        # a warp / warpgroup atom: CuTe's zipped_divide by (_, thr) splits the (ThrV,FrgV)
        # mode in two, where pycute's keeps it whole: ((ThrV,(ThrM,ThrN)),(FrgV,(RestM,RestN)))
        rest = pycute.zipped_divide(tvt[1], thr)
        return pycute.make_layout(pycute.make_layout(tvt[0][0], rest[0]),
                                  pycute.make_layout(tvt[0][1], rest[1]))

    def thrfrg(self, which: str, layout: Layout) -> Layout:
        key = (which, repr(layout))            # every thread's partition divides the same tensor
        if key not in self._frg:
            a, b = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}[which]
            self._frg[key] = self._thrfrg(layout, a, b, getattr(self.atom, f"{which.lower()}_tv"))
        return self._frg[key]

    def _thridx_2_thrid(self) -> Layout:
        v = self.vmnk
        inv = pycute.right_inverse(pycute.make_layout(v, pycute.complement(v)))
        return pycute.composition(Layout((size(v), 1), (1, 0)), inv)

    def layout_tv(self, which: str) -> Layout:
        """get_layoutA_TV / B / C: (thread, value) -> column-major index in the MMA tile."""
        a, b = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}[which]
        t = self.thrfrg(which, make_layout((self.tile_size(a), self.tile_size(b))))
        if which != "C":                    # broadcast over the threads along the other mode
            v = self.vmnk
            stride = (1, 0) if which == "A" else (0, 1)
            t = _compose_first(t, (None, (Layout((size(v[1]), size(v[2])), stride), None)))
        return _compose_first(t, self._thridx_2_thrid())

    def partition(self, which: str, view: View, t: int) -> View:
        """get_slice(t).partition_A / B / C(view)."""
        c = flat_coord(self.vmnk, t)
        a, b = {"A": (1, 3), "B": (2, 3), "C": (1, 2)}[which]
        thr = View(self.thrfrg(which, view.layout), view.offset)
        return thr((c[0], (c[a], c[b])), (None, _all(rank(get(thr.layout.shape, 1, 1)))))


class TiledCopy:
    """make_tiled_copy(atom, thr_layout, val_layout): TV layouts and partitions."""

    def __init__(self, atom: CopyAtom, thr_layout: Layout, val_layout: Layout | None = None):
        self.atom = atom
        val_layout = val_layout if val_layout is not None else Layout(1, 0)
        layout_mn = raked_product(thr_layout, val_layout)
        self.layout_tv = pycute.composition(pycute.right_inverse(layout_mn),
                                            make_layout((size(thr_layout), size(val_layout))))
        self.tiler = product_each(layout_mn.shape)
        self._frg: dict = {}

    @property
    def size(self) -> int:
        return size(self.layout_tv[0])

    def _tile2thrfrg(self, layout: Layout) -> Layout:
        atom_tv = pycute.zipped_divide(self.layout_tv, (1, self.atom.num_val))
        ref2trg = pycute.composition(pycute.right_inverse(self.atom.tv), self.atom.tv)
        trg = _compose_first(atom_tv, ref2trg)
        thrval2mn = pycute.coalesce(Layout(_zip(trg.shape), _zip(trg.stride)), (1, (1, 1)))
        tv = _compose_first(layout, thrval2mn)
        return _slice(((None, None), None), tv)[0]

    def layout_S_TV(self) -> Layout:
        """get_layoutS_TV (the same as D for every atom here)."""
        return _slice((None, None, 0), self._tile2thrfrg(make_layout((self.tiler, 1))))[0]

    def partition(self, view: View, t: int) -> View:
        """get_slice(t).partition_S(view) (partition_D is the same for these atoms)."""
        key = repr(view.layout)                # every thread's partition divides the same tensor
        if key not in self._frg:
            self._frg[key] = self._tile2thrfrg(pycute.zipped_divide(view.layout, self.tiler))
        return View(self._frg[key], view.offset)(t, None, _all(rank(view.layout)))

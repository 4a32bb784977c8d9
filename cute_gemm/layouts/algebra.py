"""What the dumps need on top of pycute: run-time integers (`Dyn` prints `8`, a static one `_8`), CuTe's
print formats, and the products, swizzles, tensors, atoms, TiledCopy and TiledMMA the kernels use."""
from __future__ import annotations

from dataclasses import dataclass

import pycute
from pycute import Layout, flatten, is_tuple, product


# ---- run-time integers ------------------------------------------------------------------------
class Dyn(int):
    """A run-time integer; arithmetic keeps it one, except CuTe's static-zero short cuts
    (`_0 * x == _0`, `_0 / x == _0`, `x % _1 == _0`)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return f"Dyn({int(self)})"


def _static(x) -> bool:
    return not isinstance(x, Dyn)


def _binop(name: str):
    op, zero = getattr(int, f"__{name}__"), name.strip("r") not in ("add", "sub")

    def f(self, other):
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if name.startswith("r") else (self, other)          # a op b, as written
        if zero and ((_static(a) and a == 0) or ("mul" in name and _static(b) and b == 0)
                     or ("mod" in name and _static(b) and abs(int(b)) == 1)):
            return 0
        return Dyn(op(int(self), int(other)))
    return f


for _n in ("add", "radd", "sub", "rsub", "mul", "rmul", "floordiv", "rfloordiv", "mod", "rmod"):
    setattr(Dyn, f"__{_n}__", _binop(_n))


# ---- int tuples and CuTe's print formats ----------------------------------------------------
def rank(x) -> int:
    return len(x) if isinstance(x, (Layout, Swizzled)) or is_tuple(x) else 1


def product_each(t) -> tuple:
    return tuple(product(e) for e in (t if is_tuple(t) else (t,)))


def size(x) -> int:
    return product(getattr(x, "shape", x))           # a layout's, or an IntTuple's


def cosize(layout) -> int:
    return pycute.cosize(getattr(layout, "layout", layout))      # a swizzle permutes within its span


def value(layout, *crd) -> int:
    """layout(crd...) as a plain int."""
    return int(layout(crd[0] if len(crd) == 1 else tuple(crd)))


def values(layout) -> list[int]:
    """[layout(i) for i in range(size(layout))], a plain Layout in one pass over its modes."""
    if isinstance(layout, Swizzled):
        return [value(layout, i) for i in range(int(size(layout)))]
    out = [0]
    for extent, stride in zip(flatten(layout.shape), flatten(layout.stride)):
        out = [o + c * int(stride) for c in range(int(extent)) for o in out]
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


def print_layout(layout) -> str:
    """The text of CuTe C++ `print_layout(layout)` (rank-2 layouts), byte for byte."""
    assert rank(layout) == 2, f"print_layout needs a rank-2 layout, got {fmt(layout)}"
    c = int(cosize(layout))
    w = (len(str(c)) if c >= 10 else 1) + 2
    seg = "+-----------------------"[:w + 1]
    rows, cols = (int(e) for e in product_each(layout.shape))
    out = [fmt(layout) + "\n", "    "] + [f"  {n:>{w - 2}} " for n in range(cols)] + ["\n"]
    for m in range(rows):
        out += ["    " + seg * cols + "+\n", f"{m:>2}  "]
        out += [f"| {value(layout, m, n):>{w - 2}} " for n in range(cols)] + ["|\n"]
    out.append("    " + seg * cols + "+\n")
    return "".join(out)


# ---- constructors and products pycute lacks ----------------------------------------------------
def make_layout(shape, stride=None) -> Layout:
    """CuTe's make_layout(shape[, stride]): LayoutLeft by default, stride="row": LayoutRight."""
    def compact(shape, current, right: bool):
        if not is_tuple(shape):                # CuTe: a static _1 mode gets stride _0
            return (0 if _static(shape) and shape == 1 else current), current * shape
        out = []
        for s in (reversed(shape) if right else shape):
            d, current = compact(s, current, right)
            out.append(d)
        return tuple(reversed(out) if right else out), current
    return Layout(shape, compact(shape, 1, stride == "row")[0] if stride in (None, "row") else stride)


def _append(layout: Layout, n: int) -> Layout:
    return pycute.make_layout([layout[i] for i in range(len(layout))] + [Layout(1, 0)] * (n - len(layout)))


def _zip(t) -> tuple:
    """zip((a,b),(c,d)) -> ((a,c),(b,d)); an integer counts as a rank-1 tuple."""
    return tuple(zip(*(e if is_tuple(e) else (e,) for e in t)))


def _product(block: Layout, tiler: Layout, first: int) -> Layout:
    """logical_product's ((block),(tiler)) regrouped per mode, block's part first (tile_to_shape's)
    or the tiler's (raked_product's)."""
    res = pycute.logical_product(block, tiler)
    a, b = res[first], res[1 - first]
    return Layout(_zip((a.shape, b.shape)), _zip((a.stride, b.stride)))


def tile_to_shape(block, trg_shape, order=None):
    """tile_to_shape(block, shape[, Step<...>]): ((block, repeats), ...) per mode, as CuTe
    prints it (uncoalesced); the repeats of the mode of the lowest order fastest."""
    if isinstance(block, Swizzled):
        return Swizzled(block.sw, tile_to_shape(block.layout, trg_shape, order), block.offset, block.ptr_bits)
    blk = _append(block, len(trg_shape))
    bs = product_each(blk.shape)
    assert all(t % b == 0 for t, b in zip(trg_shape, bs)), f"{fmt(block)} does not tile {trg_shape}"
    reps = [t // b for t, b in zip(trg_shape, bs)]
    stride, cur = [0] * len(reps), 1               # make_ordered_layout(reps, order)
    for i in sorted(range(len(reps)), key=lambda i: (order or range(len(reps)))[i]):
        stride[i], cur = (0 if reps[i] == 1 else cur), cur * reps[i]
    return _product(blk, Layout(tuple(reps), tuple(stride)), 0)


class Swizzled:
    """CuTe's ComposedLayout<Swizzle, offset, layout> with a shape: sw(offset + layout(coord)); with
    ptr_bits W (GMMA's atoms, `smem_ptr[Wb](unset)`) on byte addresses: sw(offset * W/8) / (W/8)."""

    def __init__(self, sw: pycute.Swizzle, layout: Layout, offset: int = 0, ptr_bits: int = 0):
        self.sw, self.layout, self.offset, self.ptr_bits = sw, layout, offset, ptr_bits
        self.shape, self.stride = layout.shape, layout.stride

    def __len__(self) -> int:
        return len(self.layout)

    def __call__(self, *args):
        crd = args[0] if len(args) == 1 else tuple(args)
        if pycute.has_none(crd):               # a slice keeps the swizzle, moves the offset
            lay, off = pycute.slice_and_offset(crd, self.layout)
            return Swizzled(self.sw, lay, self.offset + off, self.ptr_bits)
        nbytes = max(self.ptr_bits // 8, 1)
        return self.sw((self.offset + self.layout(crd)) * nbytes) // nbytes

    def __str__(self) -> str:
        s = self.sw
        off = f"smem_ptr[{self.ptr_bits}b](unset)" if self.ptr_bits else fmt(self.offset)
        return f"Sw<{s.bits},{s.base},{s.shift}> o {off} o {fmt(self.layout)}"


def _coalesce(layout, profile=None):
    """pycute's coalesce, merging two modes only where CuTe can: all compile-time (pycute's
    composition coalesces its left side with this)."""
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


pycute.layout.coalesce = pycute.coalesce = _coalesce      # composition() calls it by its module's name


def flat_coord(layout: Layout, idx: int):
    """Layout::get_flat_coord: idx -> one (colexicographic) coordinate per mode."""
    def idx2crd(shape, stride):                # pycute's would divide by a stride 0: coordinate 0
        if is_tuple(shape):
            return tuple(idx2crd(s, d) for s, d in zip(shape, stride))
        return (idx // stride) % shape if stride != 0 else 0
    hier = idx2crd(layout.shape, layout.stride)
    return tuple(pycute.crd2idx(c, s) for c, s in zip(hier, layout.shape)) if is_tuple(layout.shape) else hier


# ---- tensors without data: local_tile, local_partition -----------------------------------------
@dataclass(frozen=True)
class View:
    """What a CuTe Tensor over a plain pointer is to the dumps: offset + layout(coord)."""
    layout: Layout
    offset: int = 0

    def __call__(self, *coord) -> "View":
        """Slice like Tensor::operator() with underscores (None)."""
        lay, off = pycute.slice_and_offset(coord[0] if len(coord) == 1 else coord, self.layout)
        return View(lay, self.offset + off)


def _pad(coord, n: int):
    return coord + (None,) * (n - len(coord)) if is_tuple(coord) else coord


def _all(n: int):
    return (None,) * n if n > 1 else None


def _dice(step, t):
    """cute::dice: keep the parts of t where the Step is not X (None)."""
    return t if step is None else tuple(x for s, x in zip(step, t) if s is not None)


def local_tile(v: View, tiler, coord, step=None) -> View:
    """local_tile(tensor, tiler, coord[, Step<...>]); X in a Step is None here."""
    tiler, coord = _dice(step, tiler), _dice(step, coord)
    t = pycute.zipped_divide(v.layout, tiler)
    return View(t, v.offset)(_all(rank(t[0])), _pad(coord, rank(t[1])))


def composition(v: View, tiler) -> View:
    """composition(tensor, tiler): the same elements, its modes reordered by the tiler's layouts."""
    return View(pycute.composition(v.layout, tiler), v.offset)


def local_partition(v: View, thr: Layout, index: int, step=None) -> View:
    """local_partition(tensor, thread_layout, thread_index[, Step<...>])."""
    if step is not None:
        thr = Layout(_dice(step, thr.shape), _dice(step, thr.stride))
    t = pycute.zipped_divide(v.layout, product_each(thr.shape))
    return View(t, v.offset)(_pad(flat_coord(thr, index), rank(t[0])), _all(rank(t[1])))


# ---- atoms, TiledMMA, TiledCopy (cute/atom/mma_atom.hpp, copy_atom.hpp) -------------------------
@dataclass(frozen=True)
class MMAAtom:
    shape_mnk: tuple
    thr_id: Layout
    a_tv: Layout              # (thr,val) -> (m,k) column-major offset in the atom's M x K
    b_tv: Layout
    c_tv: Layout


# UniversalFMA: one thread, one value. C++ writes its TV layouts (_1,_1):(_0,_0); _1:_0 is the
# same function and keeps pycute's results in CuTe's printed nesting.
UNIVERSAL_FMA = MMAAtom((1, 1, 1), Layout(1, 0), Layout(1, 0), Layout(1, 0), Layout(1, 0))

# The tensor-core atoms as CuTe's MMA_Traits define them (mma_traits_sm80.hpp, mma_traits_sm90_gmma.hpp).
# SM80_16x8x16_F32{BF16BF16,F16F16}F32_TN; C (SM80_16x8_Row): lane 4 g + q: rows g, g + 8, cols 2q, 2q + 1
SM80_16x8x16 = MMAAtom((16, 8, 16), Layout(32),
                       Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
                       Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
                       Layout(((4, 8), (2, 2)), ((32, 1), (16, 8))))


def gmma_ss(n: int, k: int) -> MMAAtom:
    """SM90 GMMA 64xNxK, A and B from shared memory: descriptors, every thread of the
    warpgroup names the whole tile (thread stride 0); C is CLayout_64xN. K: 32 bytes."""
    assert n % 8 == 0 and 8 <= n <= 256, f"a GMMA's N is a multiple of 8 up to 256, not {n}"
    return MMAAtom((64, n, k), Layout(128), Layout((128, (64, k)), (0, (1, 64))),
                   Layout((128, (n, k)), (0, (1, n))),
                   Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512))))


def ldsm_x4_a(kmajor: bool) -> Layout:
    """ldmatrix.x4 of a 16x16 A atom (PTX: lanes 8j..8j+7 address matrix j, A's register j): (lane,
    value) -> m + 16 k of the row it addresses; rows along k (k-major, LDSM_N) or m (LDSM_T)."""
    return Layout(((8, 2, 2), 8), ((1, 8, 128), 16) if kmajor else ((16, 8, 128), 1))


def swizzle_atom(elem_bytes: int, kmajor: bool, row_bytes: int = 128, ptr: bool = True) -> Swizzled:
    """8 lines of `row_bytes` (along k if k-major), 16-byte chunk c of line r at c ^ (r % 8): GMMA's
    Layout_{K,MN}_SW*_Atom (ptr: on bytes), or c4's composition(Swizzle<3,log2 V,3>, layout)."""
    e = row_bytes // elem_bytes
    lay = Layout((8, e), (e, 1)) if kmajor else Layout((e, 8), (1, e))
    bits = (row_bytes // 16).bit_length() - 1
    if ptr:
        return Swizzled(pycute.Swizzle(bits, 4, 3), lay, 0, 8 * elem_bytes)
    return Swizzled(pycute.Swizzle(bits, (16 // elem_bytes).bit_length() - 1, 3), lay)


def _compose_first(layout: Layout, tv: Layout) -> Layout:
    """composition(layout, (tv, _)): compose the first mode only."""
    return pycute.composition(layout, (tv, None))


_MODES = {"A": (0, 2), "B": (1, 2), "C": (0, 1)}


class TiledMMA:
    """make_tiled_mma(atom, thr_layout[, permutations]): TV layouts and partitions."""

    def __init__(self, atom: MMAAtom, thr_layout: Layout, permutations=(None, None, None)):
        self.atom = atom
        self.perm = permutations
        self.vmnk = pycute.tiled_product(atom.thr_id, _append(thr_layout, 3))
        self._frg: dict = {}

    def _perm(self, i: int):
        p = self.perm[i]       # none: the atoms side by side, as make_layout (a static 1: _1:_0)
        return make_layout(self.atom.shape_mnk[i] * size(self.vmnk[i + 1])) if p is None else p

    def tile(self, which: str) -> tuple:
        """The (rows, cols) of operand `which`'s MMA tile."""
        return tuple(int(size(self._perm(i))) for i in _MODES[which])

    def thrfrg(self, which: str, layout: Layout) -> Layout:
        key = (which, repr(layout))            # every thread's partition divides the same tensor
        if key not in self._frg:
            a, b = _MODES[which]
            tv = getattr(self.atom, f"{which.lower()}_tv")
            t = pycute.logical_divide(layout, (self._perm(a), self._perm(b)))
            atile = (make_layout(self.atom.shape_mnk[a]), make_layout(self.atom.shape_mnk[b]))
            tvt = _compose_first(pycute.zipped_divide(t, atile), tv)
            thr = (make_layout(size(self.vmnk[a + 1])), make_layout(size(self.vmnk[b + 1])))
            if rank(tv) == 1:                  # one-thread atom (_1:_0): pycute's `_` split
                self._frg[key] = pycute.zipped_divide(tvt, (None, thr))
            else:   # CuTe splits a warp atom's (ThrV,FrgV) mode in two where pycute keeps it whole
                rest = pycute.zipped_divide(tvt[1], thr)
                self._frg[key] = pycute.make_layout(pycute.make_layout(tvt[0][0], rest[0]),
                                                    pycute.make_layout(tvt[0][1], rest[1]))
        return self._frg[key]

    def layout_tv(self, which: str) -> Layout:
        """get_layoutA_TV / B / C: (thread, value) -> column-major index in the MMA tile."""
        t = self.thrfrg(which, make_layout(self.tile(which)))
        v = self.vmnk
        if which != "C":                    # broadcast over the threads along the other mode
            stride = (1, 0) if which == "A" else (0, 1)
            t = _compose_first(t, (None, (Layout((size(v[1]), size(v[2])), stride), None)))
        inv = pycute.right_inverse(pycute.make_layout(v, pycute.complement(v)))
        return _compose_first(t, pycute.composition(Layout((size(v), 1), (1, 0)), inv))

    def partition(self, which: str, view: View, t: int) -> View:
        """get_slice(t).partition_A / B / C(view)."""
        c = flat_coord(self.vmnk, t)
        a, b = (i + 1 for i in _MODES[which])
        thr = View(self.thrfrg(which, view.layout), view.offset)
        return thr((c[0], (c[a], c[b])), (None, _all(len(thr.layout[1][1]))))


class TiledCopy:
    """make_tiled_copy(atom, thr_layout, val_layout) of a one-thread Copy_Atom over float moving
    `num_val` values per instruction: TV layouts and partitions."""

    def __init__(self, num_val: int, thr_layout: Layout, val_layout: Layout = Layout(1, 0)):
        self.num_val = num_val
        r = max(rank(thr_layout), rank(val_layout))                  # raked_product(thr, val)
        layout_mn = _product(_append(thr_layout, r), _append(val_layout, r), 1)
        self.tv = pycute.composition(pycute.right_inverse(layout_mn),
                                     make_layout((size(thr_layout), size(val_layout))))
        self.tiler = product_each(layout_mn.shape)
        self._frg: dict = {}

    def _tile2thrfrg(self, layout: Layout) -> Layout:
        atom = Layout((1, self.num_val), (0, 1))          # the atom's (thread, value) layout
        ref2trg = pycute.composition(pycute.right_inverse(atom), atom)
        trg = _compose_first(pycute.zipped_divide(self.tv, (1, self.num_val)), ref2trg)
        thrval2mn = pycute.coalesce(Layout(_zip(trg.shape), _zip(trg.stride)), (1, (1, 1)))
        return _compose_first(layout, thrval2mn)((None, None), None)

    def layout_tv(self, which: str = "S") -> Layout:
        """get_layoutS_TV (the same as D for every atom here)."""
        return self._tile2thrfrg(make_layout((self.tiler, 1)))(None, None, 0)

    def tile(self, which: str = "S") -> tuple:
        return tuple(int(x) for x in self.tiler)

    def partition(self, which: str, view: View, t: int) -> View:
        """get_slice(t).partition_S(view) (partition_D, `which` "D", is the same for these atoms)."""
        key = repr(view.layout)                # every thread's partition divides the same tensor
        if key not in self._frg:
            self._frg[key] = self._tile2thrfrg(pycute.zipped_divide(view.layout, self.tiler))
        return View(self._frg[key], view.offset)(t, None, _all(rank(view.layout)))

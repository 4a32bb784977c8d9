"""Layout dumps: every CuTe layout a registered CuTe kernel uses, from the registry's own tile sizes.

Three parts:

1. CuTe's layout algebra, on top of pycute (`pycute.Layout` is the container, its int_tuple
   helpers do coordinate math). pycute's own composition/complement/coalesce compute the same
   *functions* as CuTe C++, but not always the same *printed form*: C++ keeps static (`_8`) and
   run-time (`8`) integers apart and its control flow depends on that (a static `_1` mode is
   dropped, a run-time 1 is kept), and its results nest modes differently in places. The dumps
   promise CuTe's exact `print`/`print_layout` text, so the operations used here are ported
   line by line from the C++ headers (cute/layout.hpp, atom/mma_atom.hpp, atom/copy_atom.hpp of
   the nvidia-cutlass wheel pinned in pyproject.toml). Run-time integers are `Dyn`; plain Python
   ints are static. tests/test_layouts.py checks the text against CuTe C++ compiled with nvcc,
   and the functions against pycute.
2. Views (a layout plus an offset, i.e. a tensor without data) with local_tile, local_partition,
   TiledCopy and TiledMMA partitions.
3. Recipes: one per CuTe kernel source, describing its layouts once, built from the registry
   entry's `defines` or `config` (the same values the kernel is compiled with). Each item carries
   the C++ expression that builds the same layout, so the checker program is generated from the
   recipes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import pycute
from pycute import Layout
from pycute.int_tuple import crd2idx as _pc_crd2idx

# =====================================================================================
# 1. Integers: static (plain int) and run-time (Dyn)
# =====================================================================================


class Dyn(int):
    """A run-time integer (CuTe `int`); plain ints are compile-time (`Int<N>`, printed `_N`).

    Arithmetic with a Dyn gives a Dyn, except CuTe's static-zero short cuts
    (`_0 * x == _0`, `_0 / x == _0`, `x % _1 == _0`, `_0 % x == _0`).
    """
    __slots__ = ()

    def __repr__(self) -> str:
        return f"Dyn({int(self)})"

    def __neg__(self):
        return Dyn(-int(self))

    def __abs__(self):
        return Dyn(abs(int(self)))


def _static(x) -> bool:
    return not isinstance(x, Dyn)


def _binop(name: str, zero_left: bool = False, zero_right: bool = False, one_mod: bool = False):
    op = getattr(int, name)
    reflected = name.startswith("__r") and name != "__rshift__"

    def f(self, other):
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)   # a op b, as written
        # static-zero short cuts keep the result static
        if zero_left and _static(a) and int(a) == 0:
            return 0
        if zero_right and _static(b) and int(b) == 0:
            return 0
        if one_mod and _static(b) and abs(int(b)) == 1:
            return 0
        r = op(int(self), int(other))
        return Dyn(r)
    return f


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__lshift__", "__rshift__",
           "__or__", "__ror__", "__xor__", "__rxor__"):
    setattr(Dyn, _n, _binop(_n))
for _n in ("__mul__", "__rmul__"):
    setattr(Dyn, _n, _binop(_n, zero_left=True, zero_right=True))
for _n in ("__and__", "__rand__"):
    setattr(Dyn, _n, _binop(_n, zero_left=True, zero_right=True))
for _n in ("__floordiv__", "__rfloordiv__"):
    setattr(Dyn, _n, _binop(_n, zero_left=True))
for _n in ("__mod__", "__rmod__"):
    setattr(Dyn, _n, _binop(_n, zero_left=True, one_mod=True))


def is_tuple(x) -> bool:
    return isinstance(x, tuple)


def is_static(x) -> bool:
    if is_tuple(x):
        return all(is_static(e) for e in x)
    if isinstance(x, Layout):
        return is_static(x.shape) and is_static(x.stride)
    return _static(x)


def is_const(x, v: int) -> bool:
    """CuTe's is_constant<v, X>: a static integer equal to v."""
    return isinstance(x, int) and _static(x) and int(x) == v


def _dyn_if(v: int, *args) -> int:
    return v if all(is_static(a) for a in args) else Dyn(v)


def idiv(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero), static if both are."""
    if _static(a) and int(a) == 0:
        return 0
    q = abs(int(a)) // abs(int(b))
    q = q if (int(a) >= 0) == (int(b) >= 0) else -q
    return _dyn_if(q, a, b)


def imin(a: int, b: int) -> int:
    return _dyn_if(min(int(a), int(b)), a, b)


def signum(a: int) -> int:
    return _dyn_if((int(a) > 0) - (int(a) < 0), a)


def iabs(a: int) -> int:
    return abs(a)


def ceil_div(a, b):
    """cute::ceil_div for ints and IntTuples."""
    if is_tuple(a):
        if is_tuple(b):
            b = b + (1,) * (len(a) - len(b))
            return tuple(ceil_div(x, y) for x, y in zip(a, b))
        out = []
        for ai in a:
            out.append(ceil_div(ai, b))
            b = ceil_div(b, ai)
        return tuple(out)
    if is_tuple(b):
        return ceil_div(a, product(b))
    return idiv(a + b - 1, b)


def shape_div(a, b):
    if is_tuple(a):
        if is_tuple(b):
            return tuple(shape_div(x, y) for x, y in zip(a, b))
        out = []
        for ai in a:
            out.append(shape_div(ai, b))
            b = shape_div(b, ai)
        return tuple(out)
    if is_tuple(b):
        return shape_div(a, product(b))
    return idiv(a + b - 1, b)


# =====================================================================================
# Int tuples
# =====================================================================================

def flatten(t) -> tuple:
    if is_tuple(t):
        return tuple(x for e in t for x in flatten(e))
    return (t,)


def product(t) -> int:
    if is_tuple(t):
        r = 1
        for e in t:
            r = r * product(e)
        return r
    return t


def product_each(t) -> tuple:
    return tuple(product(e) for e in (t if is_tuple(t) else (t,)))


def wrap(t) -> tuple:
    return t if is_tuple(t) else (t,)


def unwrap(t):
    while is_tuple(t) and len(t) == 1:
        t = t[0]
    return t


def rank(x) -> int:
    s = x.shape if isinstance(x, Layout) else x
    return len(s) if is_tuple(s) else 1


def get(t, *idx):
    for i in idx:
        if is_tuple(t):
            t = t[i]
        else:
            assert i == 0, "get<i> of an integer needs i == 0"
    return t


def append_to(t, n: int, x):
    """append<N>(t, x): pad t (wrapped) with x up to rank n."""
    t = wrap(t)
    return t + (x,) * (n - len(t))


def zip_t(t):
    """zip((a,b),(c,d)) -> ((a,c),(b,d)); non-tuple elements are broadcast as rank 1."""
    rows = [wrap(e) for e in t]
    r = len(rows[0])
    return tuple(tuple(row[i] for row in rows) for i in range(r))


def zip2_by(t, guide):
    if is_tuple(guide):
        gr = len(guide)
        split = [zip2_by(t[i], guide[i]) for i in range(gr)]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[gr:]))
    assert is_tuple(t) and len(t) == 2, f"zip2_by: expected a rank-2 tuple, got {t}"
    return t


def slice_t(c, t):
    """cute::slice: keep the parts of t paired with an underscore (None) in c."""
    if is_tuple(c):
        assert len(c) == len(t), f"slice: mismatched ranks {c} vs {t}"
        return tuple(x for ci, ti in zip(c, t) for x in _lift_slice(ci, ti))
    return t if c is None else ()


def _lift_slice(c, t) -> tuple:
    if is_tuple(c):
        return tuple(x for ci, ti in zip(c, t) for x in _lift_slice(ci, ti))
    return (t,) if c is None else ()


def dice_t(c, t):
    """cute::dice: keep the parts of t paired with a non-underscore in c."""
    if is_tuple(c):
        assert len(c) == len(t), f"dice: mismatched ranks {c} vs {t}"
        return tuple(x for ci, ti in zip(c, t) for x in _lift_dice(ci, ti))
    return () if c is None else t


def _lift_dice(c, t) -> tuple:
    if is_tuple(c):
        return tuple(x for ci, ti in zip(c, t) for x in _lift_dice(ci, ti))
    return () if c is None else (t,)


def _zero_underscores(c):
    if is_tuple(c):
        return tuple(_zero_underscores(e) for e in c)
    return 0 if c is None else c


def crd2idx(crd, shape, stride):
    """Coordinate -> index; underscores (None) count as 0, as in CuTe's slice_and_offset."""
    if is_tuple(crd):
        if is_tuple(shape):
            assert len(crd) == len(shape)
            r = 0
            for c, s, d in zip(crd, shape, stride):
                r = r + crd2idx(c, s, d)
            return r
        raise ValueError(f"coordinate {crd} deeper than shape {shape}")
    crd = 0 if crd is None else crd
    if is_tuple(shape):        # an integer coordinate into a tuple mode: colexicographic split
        r = 0
        for s, d in zip(shape[:-1], stride[:-1]):
            r = r + crd2idx(crd % product(s), s, d)
            crd = crd // product(s)
        return r + crd2idx(crd, shape[-1], stride[-1])
    return crd * stride


def idx2crd(idx, shape, stride):
    """The hierarchical coordinate of idx (CuTe idx2crd with strides: (idx / d) % s)."""
    if is_tuple(shape):
        return tuple(idx2crd(idx, s, d) for s, d in zip(shape, stride))
    return (idx // stride) % shape if stride != 0 else 0


def _colex(crd, shape):
    """A hierarchical coordinate -> its 1-D colexicographic index within shape."""
    if is_tuple(shape):
        r, m = 0, 1
        for c, s in zip(crd, shape):
            r = r + _colex(c, s) * m
            m = m * product(s)
        return r
    return crd


# =====================================================================================
# Formatting: CuTe's print and print_layout
# =====================================================================================

def fmt(x) -> str:
    """CuTe's print of an IntTuple: `(_4,(8,_2))`; static ints get a leading underscore."""
    if isinstance(x, Layout):
        return f"{fmt(x.shape)}:{fmt(x.stride)}"
    if isinstance(x, ComposedLayout):
        return str(x)
    if is_tuple(x):
        return "(" + ",".join(fmt(e) for e in x) + ")"
    if x is None:
        return "_"
    return f"_{int(x)}" if _static(x) else f"{int(x)}"


def _num_digits(x: int) -> int:
    return len(str(x)) if x >= 10 else 1


def cosize(layout) -> int:
    if isinstance(layout, ComposedLayout):
        return layout.cosize()
    last = tuple(s - 1 for s in flatten(layout.shape))
    return _idx_flat(layout, last) + 1


def _idx_flat(layout: Layout, flat_crd) -> int:
    return sum(int(c) * int(d) for c, d in zip(flat_crd, flatten(layout.stride)))


def size(x) -> int:
    if isinstance(x, (Layout, ComposedLayout)):
        return product(x.shape)
    return product(x)


def value(layout, *crd) -> int:
    """layout(crd...) as a plain int."""
    if isinstance(layout, ComposedLayout):
        return layout(*crd)
    c = crd[0] if len(crd) == 1 else tuple(crd)
    return int(crd2idx(c, layout.shape, layout.stride))


def print_layout(layout) -> str:
    """The text of CuTe C++ `print_layout(layout)` (rank-2 layouts), byte for byte."""
    assert rank(layout) == 2, f"print_layout needs a rank-2 layout, got {fmt(layout)}"
    idx_width = _num_digits(int(cosize(layout))) + 2
    delim = "+-----------------------"
    seg = delim[:idx_width + 1]
    m_n, n_n = int(size(get(layout.shape, 0))), int(size(get(layout.shape, 1)))
    out = [fmt(layout) + "\n", "    "]
    out += [f"  {n:>{idx_width - 2}} " for n in range(n_n)]
    out.append("\n")
    for m in range(m_n):
        out.append("    " + seg * n_n + "+\n")
        out.append(f"{m:>2}  ")
        out += [f"| {value(layout, m, n):>{idx_width - 2}} " for n in range(n_n)]
        out.append("|\n")
    out.append("    " + seg * n_n + "+\n")
    return "".join(out)


# =====================================================================================
# Layout algebra (ported from cute/layout.hpp)
# =====================================================================================

def _compact_left(shape, current=1):
    if is_tuple(shape):
        out = []
        for s in shape:
            d, current = _compact_left(s, current)
            out.append(d)
        return tuple(out), current
    if is_const(shape, 1):
        return 0, current
    return current, current * shape


def compact_col_major(shape, current=1):
    return _compact_left(shape, current)[0]


def _compact_right(shape, current=1):
    if is_tuple(shape):
        out = []
        for s in reversed(shape):
            d, current = _compact_right(s, current)
            out.append(d)
        return tuple(reversed(out)), current
    if is_const(shape, 1):
        return 0, current
    return current, current * shape


def compact_row_major(shape, current=1):
    return _compact_right(shape, current)[0]


def make_layout(*args, stride=None) -> Layout:
    """make_layout(shape[, stride]) or make_layout(layout0, layout1, ...) (concatenation).

    `make_layout(shape)` is column-major (CuTe's LayoutLeft); pass `stride="row"` for LayoutRight.
    """
    if args and all(isinstance(a, Layout) for a in args):
        if len(args) == 1:
            return args[0]
        return Layout(tuple(a.shape for a in args), tuple(a.stride for a in args))
    assert len(args) in (1, 2)
    shape = args[0]
    st = args[1] if len(args) == 2 else stride
    if st is None:
        st = compact_col_major(shape)
    elif st == "row":
        st = compact_row_major(shape)
    return Layout(shape, st)


def sublayout(layout: Layout, *idx) -> Layout:
    return Layout(get(layout.shape, *idx), get(layout.stride, *idx))


def _modes(layout: Layout) -> list[Layout]:
    if is_tuple(layout.shape):
        return [Layout(s, d) for s, d in zip(layout.shape, layout.stride)]
    return [layout]


def append_layout(layout: Layout, n: int, x: Layout | None = None) -> Layout:
    x = x or Layout(1, 0)
    ms = _modes(layout)
    ms += [x] * (n - len(ms))
    return Layout(tuple(m.shape for m in ms), tuple(m.stride for m in ms))


def slice_layout(c, layout: Layout) -> Layout:
    return Layout(slice_t(c, layout.shape), slice_t(c, layout.stride))


def dice_layout(c, layout: Layout) -> Layout:
    return Layout(dice_t(c, layout.shape), dice_t(c, layout.stride))


def _bw_coalesce(old_shape, old_stride, new_shape, new_stride) -> Layout:
    for i in range(len(old_shape) - 2, -1, -1):
        s, d = old_shape[i], old_stride[i]
        if is_const(s, 1):
            continue
        if is_const(new_shape, 1):
            new_shape, new_stride = s, d
            continue
        f_shape = new_shape[0] if is_tuple(new_shape) else new_shape
        f_stride = new_stride[0] if is_tuple(new_stride) else new_stride
        sd = s * d
        if _static(f_shape) and _static(sd) and _static(f_stride) and sd == f_stride:
            merged = s * f_shape
            if is_tuple(new_shape):
                new_shape = (merged,) + new_shape[1:]
                new_stride = (d,) + new_stride[1:]
            else:
                new_shape, new_stride = merged, d
        else:
            new_shape = (s,) + wrap(new_shape)
            new_stride = (d,) + wrap(new_stride)
    if is_const(new_shape, 1):
        return Layout(1, 0)
    return Layout(new_shape, new_stride)


def coalesce(layout: Layout, profile=None) -> Layout:
    if is_tuple(profile):
        return _transform2(layout, profile, coalesce)
    fs, fd = flatten(layout.shape), flatten(layout.stride)
    return _bw_coalesce(fs, fd, fs[-1], fd[-1])


def coalesce_x(layout: Layout) -> Layout:
    fs, fd = flatten(layout.shape), flatten(layout.stride)
    if is_const(fs[-1], 1):
        return _bw_coalesce(fs, fd, 2, fd[-1])
    return _bw_coalesce(fs, fd, fs[-1], fd[-1])


def coalesce_shape(shape):
    """coalesce(Shape): multiply neighbours that are both static or both dynamic."""
    f = flatten(shape)
    out = [f[0]]
    for a in f[1:]:
        if _static(out[-1]) == _static(a):
            out[-1] = out[-1] * a
        else:
            out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def filter_zeros(layout: Layout) -> Layout:
    def fz(d, s):
        if is_tuple(d):
            return tuple(fz(di, si) for di, si in zip(d, s))
        return 1 if is_const(d, 0) else s
    return Layout(fz(layout.stride, layout.shape), layout.stride)


def filter_layout(layout: Layout) -> Layout:
    return coalesce(filter_zeros(layout))


def _transform2(layout: Layout, tiler: tuple, f, keep_rest: bool = True) -> Layout:
    """transform_layout(layout, tiler, f): by-mode on the common rank, the rest appended."""
    ms = _modes(layout)
    r = min(len(ms), len(tiler))
    out = [f(ms[i], tiler[i]) for i in range(r)]
    if keep_rest:
        out += ms[r:]
    return Layout(tuple(m.shape for m in out), tuple(m.stride for m in out))


def _composition_impl(ls, ld, rs, rd) -> Layout:
    if is_tuple(rs):
        parts = [_composition_impl(ls, ld, s, d) for s, d in zip(rs, rd)]
        return Layout(tuple(p.shape for p in parts), tuple(p.stride for p in parts))
    if is_const(rd, 0):
        return Layout(rs, rd)
    if not is_tuple(ls):
        return Layout(rs, rd * ld)
    result_shape, result_stride = [], []
    rest_shape, rest_stride = rs, rd
    for curr_shape, curr_stride in zip(ls[:-1], ld[:-1]):
        next_shape = ceil_div(curr_shape, iabs(rest_stride))
        next_stride = ceil_div(iabs(rest_stride), curr_shape) * signum(rest_stride)
        if is_const(next_shape, 1) or is_const(rest_shape, 1):
            rest_stride = next_stride
            continue
        new_shape = imin(next_shape, rest_shape)
        if _static(new_shape) and _static(rest_shape):
            assert rest_shape % new_shape == 0, "Shape Divisibility Condition"
        result_shape.append(new_shape)
        result_stride.append(rest_stride * curr_stride)
        rest_shape = idiv(rest_shape, new_shape)
        rest_stride = next_stride
    if not result_shape:
        return Layout(rest_shape, rest_stride * ld[-1])
    if is_const(rest_shape, 1):
        return Layout(unwrap(tuple(result_shape)), unwrap(tuple(result_stride)))
    return Layout(tuple(result_shape) + (rest_shape,),
                  tuple(result_stride) + (rest_stride * ld[-1],))


def composition(lhs, rhs):
    """lhs o rhs. rhs: a Layout, an int (a shape), None (underscore), or a tuple of those (a tiler)."""
    if isinstance(lhs, ComposedLayout):
        return ComposedLayout(lhs.swizzle, lhs.offset, composition(lhs.layout, rhs))
    if rhs is None:
        return lhs
    if isinstance(rhs, Layout):
        flat = coalesce_x(lhs)
        return _composition_impl(flat.shape, flat.stride, rhs.shape, rhs.stride)
    if is_tuple(rhs):
        return _transform2(lhs, rhs, composition, keep_rest=False)
    flat = coalesce_x(lhs)
    return _composition_impl(flat.shape, flat.stride, rhs, 1)


def with_shape(layout: Layout, shape) -> Layout:
    return composition(layout, make_layout(shape))


def _complement_impl(shape, stride, cotarget) -> Layout:
    if is_const(stride, 0):
        return make_layout(coalesce_shape(cotarget))
    shape, stride = list(wrap(shape)), list(wrap(stride))
    r = len(shape)
    assert r == 1 or is_static(tuple(stride)), "Dynamic-stride complement only for rank-1 layouts"
    result_shape, result_stride = [], [1]
    for i in range(r - 1):
        min_stride = min(stride)
        min_idx = stride.index(min_stride)
        new_shape = idiv(min_stride, result_stride[i])
        new_stride = min_stride * shape[min_idx]
        assert not is_const(new_shape, 0), "Non-injective Layout detected in complement."
        del shape[min_idx], stride[min_idx]
        result_shape.append(new_shape)
        result_stride.append(new_stride)
    new_shape = idiv(stride[0], result_stride[r - 1])
    assert not is_const(new_shape, 0), "Non-injective Layout detected in complement."
    result_shape.append(new_shape)
    new_stride = stride[0] * shape[0]
    rest_shape = coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_col_major(rest_shape, new_stride)
    return coalesce(Layout((tuple(result_shape), rest_shape), (tuple(result_stride), rest_stride)))


def complement(layout: Layout, cotarget=None) -> Layout:
    f = filter_layout(layout)
    if cotarget is None:
        cotarget = cosize(f)
    elif isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    return _complement_impl(f.shape, f.stride, cotarget)


def right_inverse(layout: Layout) -> Layout:
    c = coalesce(layout)
    lstride, lshape = wrap(c.stride), wrap(c.shape)
    preprod = [1]
    for s in lshape:
        preprod.append(s * preprod[-1])
    idx = sorted((i for i in range(len(lstride)) if _static(lstride[i])), key=lambda i: lstride[i])
    rs, rd, curr = [1], [0], 1
    for i in idx:
        if _static(curr) and lstride[i] == curr:
            rs.append(lshape[i])
            rd.append(preprod[i])
            curr = lshape[i] * lstride[i]
    return coalesce(Layout(tuple(rs), tuple(rd)))


def left_inverse(layout: Layout) -> Layout:
    c = coalesce(layout)
    lstride, lshape = wrap(c.stride), wrap(c.shape)
    preprod = [1]
    for s in lshape:
        preprod.append(s * preprod[-1])
    assert is_static(lstride), "Left inverse requires static strides."
    order = sorted(range(len(lstride)), key=lambda i: lstride[i])
    rs, rd = [], [0]
    for i in order:
        if is_const(lstride[i], 0):
            continue
        rs.append(idiv(lstride[i], size(tuple(rs))))
        rd.append(preprod[i])
    return coalesce(Layout(tuple(rs) + (lshape[order[-1]],), tuple(rd)))


def logical_divide(layout: Layout, tiler) -> Layout:
    if isinstance(tiler, Layout):
        return composition(layout, make_layout(tiler, complement(tiler, coalesce(layout).shape)))
    if tiler is None:
        return layout
    if is_tuple(tiler):
        return _transform2(layout, tiler, logical_divide)
    return logical_divide(layout, make_layout(tiler))


def zipped_divide(layout: Layout, tiler) -> Layout:
    ld = logical_divide(layout, tiler)
    return Layout(zip2_by(ld.shape, tiler), zip2_by(ld.stride, tiler))


def logical_product(block: Layout, tiler) -> Layout:
    if isinstance(tiler, Layout):
        return make_layout(block, composition(complement(block, size(block) * cosize(tiler)), tiler))
    if tiler is None:
        return block
    if is_tuple(tiler):
        return _transform2(block, tiler, logical_product)
    return logical_product(block, make_layout(tiler))


def zipped_product(block: Layout, tiler) -> Layout:
    lp = logical_product(block, tiler)
    return Layout(zip2_by(lp.shape, tiler), zip2_by(lp.stride, tiler))


def tiled_product(block: Layout, tiler) -> Layout:
    r = zipped_product(block, tiler)
    r1 = rank(get(r.shape, 1))
    return slice_layout((None, (None,) * r1), r) if r1 > 1 else r


def raked_product(block: Layout, tiler: Layout) -> Layout:
    r = max(rank(block), rank(tiler))
    res = logical_product(append_layout(block, r), append_layout(tiler, r))
    a, b = sublayout(res, 1), sublayout(res, 0)
    return Layout(zip_t((a.shape, b.shape)), zip_t((a.stride, b.stride)))


def blocked_product(block: Layout, tiler: Layout) -> Layout:
    r = max(rank(block), rank(tiler))
    res = logical_product(append_layout(block, r), append_layout(tiler, r))
    a, b = sublayout(res, 0), sublayout(res, 1)
    return Layout(zip_t((a.shape, b.shape)), zip_t((a.stride, b.stride)))


def get_flat_coord(layout: Layout, idx: int):
    """Layout::get_flat_coord: idx -> one (flattened per mode) coordinate per mode."""
    hier = idx2crd(idx, layout.shape, layout.stride)
    if is_tuple(layout.shape):
        return tuple(_colex(c, s) for c, s in zip(hier, layout.shape))
    return _colex(hier, layout.shape)


# ---- swizzled (composed) layouts ----------------------------------------------------

@dataclass(frozen=True)
class ComposedLayout:
    """Swizzle o offset o layout, as CuTe prints it: `Sw<3,4,3> o _0 o (_8,_64):(_64,_1)`."""
    swizzle: pycute.Swizzle
    offset: int
    layout: Layout

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        return self.layout.stride

    def __call__(self, *crd) -> int:
        return self.swizzle(self.offset + value(self.layout, *crd))

    def cosize(self) -> int:
        return max(self(i) for i in range(size(self.layout))) + 1

    def __str__(self) -> str:
        s = self.swizzle
        return f"Sw<{s.bits},{s.base},{s.shift}> o {fmt(self.offset)} o {fmt(self.layout)}"


def tile_to_shape(block, trg_shape, order=None):
    """tile_to_shape(block, shape) with the default (column-major) mode order."""
    if isinstance(block, ComposedLayout):
        return ComposedLayout(block.swizzle, block.offset, tile_to_shape(block.layout, trg_shape, order))
    r = rank(trg_shape)
    pb = append_layout(block, r)
    block_shape = product_each(pb.shape)
    target_shape = product_each(trg_shape)
    prod_shape = ceil_div(target_shape, block_shape)
    ordered = make_layout(prod_shape) if order is None else make_layout(prod_shape, order)
    return blocked_product(pb, ordered)


# =====================================================================================
# 2. Views: a layout plus an offset (a CuTe tensor without its data)
# =====================================================================================

@dataclass(frozen=True)
class View:
    """What a CuTe Tensor over a plain pointer is to these dumps: offset + layout(coord)."""
    layout: Layout
    offset: int = 0

    def __call__(self, *coord) -> "View":
        """Slice like Tensor::operator() with underscores (None)."""
        c = coord[0] if len(coord) == 1 else tuple(coord)
        off = crd2idx(_zero_underscores(c), self.layout.shape, self.layout.stride)
        return View(slice_layout(c, self.layout), self.offset + off)

    def compose(self, *tilers) -> "View":
        t = tilers[0] if len(tilers) == 1 else tuple(tilers)
        return View(composition(self.layout, t), self.offset)


def zipped_divide_view(v: View, tiler) -> View:
    return View(zipped_divide(v.layout, tiler), v.offset)


def inner_partition(v: View, tiler, coord) -> View:
    t = zipped_divide(v.layout, tiler)
    r0 = rank(get(t.shape, 0))
    first = (None,) * r0 if r0 > 1 else None
    if is_tuple(coord):
        r1 = rank(get(t.shape, 1))
        coord = append_to(coord, r1, None)
    return View(t, v.offset)(first, coord)


def outer_partition(v: View, tiler, coord) -> View:
    t = zipped_divide(v.layout, tiler)
    r1 = rank(get(t.shape, 1))
    second = (None,) * r1 if r1 > 1 else None
    if is_tuple(coord):
        r0 = rank(get(t.shape, 0))
        coord = append_to(coord, r0, None)
    return View(t, v.offset)(coord, second)


def local_tile(v: View, tiler, coord, proj=None) -> View:
    """local_tile(tensor, tiler, coord[, Step<...>]): X in a Step is None here."""
    if proj is not None:
        tiler, coord = dice_t(proj, tiler), dice_t(proj, coord)
    return inner_partition(v, tiler, coord)


def local_partition(v: View, tile: Layout, index: int, proj=None) -> View:
    """local_partition(tensor, thread_layout, thread_index[, Step<...>])."""
    if proj is not None:
        tile = dice_layout(proj, tile)
    return outer_partition(v, product_each(tile.shape), get_flat_coord(tile, index))


# ---- MMA and copy atoms (the traits this project uses; extend as kernels need) ------

@dataclass(frozen=True)
class MMAAtom:
    cpp: str                  # the C++ MMA operation, e.g. "UniversalFMA<float,float,float>"
    shape_mnk: tuple
    thr_id: Layout
    a_tv: Layout              # (thr,val) -> (m,k) column-major offset in the atom's M x K
    b_tv: Layout
    c_tv: Layout


UNIVERSAL_FMA = MMAAtom("UniversalFMA<float,float,float,float>", (1, 1, 1), Layout(1, 0),
                        Layout((1, 1), (0, 0)), Layout((1, 1), (0, 0)), Layout((1, 1), (0, 0)))

# SM80_16x8x8_F32TF32TF32F32_TN (cute/atom/mma_traits_sm80.hpp): a warp, TF32 tensor cores.
SM80_16x8x8_TF32 = MMAAtom(
    "SM80_16x8x8_F32TF32TF32F32_TN", (16, 8, 8), Layout(32),
    Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
    Layout(((4, 8), 2), ((8, 1), 32)),
    Layout(((4, 8), (2, 2)), ((32, 1), (16, 8))))


@dataclass(frozen=True)
class CopyAtom:
    cpp: str                  # the C++ Copy_Atom type, e.g. "Copy_Atom<UniversalCopy<uint128_t>, float>"
    num_val: int              # values (of the element type) one thread moves per instruction

    @property
    def src(self) -> Layout:  # (thr,val) -> offset; every atom here is one thread wide
        return Layout((1, self.num_val), (0, 1))

    dst = src
    ref = src
    num_thr = 1


def _copy_atom(op: str, bits: int, elem: str = "float", elem_bits: int = 32) -> CopyAtom:
    return CopyAtom(f"Copy_Atom<{op}, {elem}>", bits // elem_bits)


def copy_atom(op: str) -> CopyAtom:
    """A Copy_Atom over float from the C++ operation spelling used in the kernel."""
    bits = {"uint128_t": 128, "uint64_t": 64, "uint32_t": 32, "float": 32}
    for t, b in bits.items():
        if op.endswith(f"<{t}>"):
            return _copy_atom(op, b)
    raise ValueError(f"unknown copy operation {op!r}")


class TiledMMA:
    """make_tiled_mma(atom, thr_layout[, permutations]) and its TV layouts and partitions."""

    def __init__(self, atom: MMAAtom, thr_layout: Layout, permutations=None):
        self.atom = atom
        self.thr_layout = thr_layout
        thr_mnk = append_layout(thr_layout, 3, Layout(1, 0))
        self.perm = append_to(permutations if permutations is not None else (), 3, None)
        self.vmnk = tiled_product(atom.thr_id, thr_mnk)

    def permutation_mnk(self, i: int):
        p = self.perm[i]
        if p is None:
            return self.atom.shape_mnk[i] * size(sublayout(self.vmnk, i + 1))
        return p

    def tile_size_mnk(self, i: int) -> int:
        p = self.permutation_mnk(i)
        return size(p) if isinstance(p, Layout) else product(p)

    @property
    def size(self) -> int:
        return size(self.vmnk)

    def _thrfrg(self, layout: Layout, a: int, b: int, tv: Layout) -> Layout:
        t = logical_divide(layout, (self.permutation_mnk(a), self.permutation_mnk(b)))
        atile = (make_layout(self.atom.shape_mnk[a]), make_layout(self.atom.shape_mnk[b]))
        c = zipped_divide(t, atile)
        tvt = composition(c, (tv, None))
        thr_tile = (None, (make_layout(size(sublayout(self.vmnk, a + 1))),
                           make_layout(size(sublayout(self.vmnk, b + 1)))))
        return zipped_divide(tvt, thr_tile)

    def thrfrg_C(self, layout: Layout) -> Layout:
        return self._thrfrg(layout, 0, 1, self.atom.c_tv)

    def thrfrg_A(self, layout: Layout) -> Layout:
        return self._thrfrg(layout, 0, 2, self.atom.a_tv)

    def thrfrg_B(self, layout: Layout) -> Layout:
        return self._thrfrg(layout, 1, 2, self.atom.b_tv)

    def _thridx_2_thrid(self) -> Layout:
        v = self.vmnk
        return composition(Layout((size(v), 1), (1, 0)),
                           right_inverse(make_layout(v, complement(v))))

    def layout_C_TV(self) -> Layout:
        ref = make_layout((self.tile_size_mnk(0), self.tile_size_mnk(1)))
        return composition(self.thrfrg_C(ref), (self._thridx_2_thrid(), None))

    def layout_A_TV(self) -> Layout:
        ref = make_layout((self.tile_size_mnk(0), self.tile_size_mnk(2)))
        v = self.vmnk
        atile = (None, (Layout((size(sublayout(v, 1)), size(sublayout(v, 2))), (1, 0)), None))
        return composition(composition(self.thrfrg_A(ref), (atile, None)), (self._thridx_2_thrid(), None))

    def layout_B_TV(self) -> Layout:
        ref = make_layout((self.tile_size_mnk(1), self.tile_size_mnk(2)))
        v = self.vmnk
        btile = (None, (Layout((size(sublayout(v, 1)), size(sublayout(v, 2))), (0, 1)), None))
        return composition(composition(self.thrfrg_B(ref), (btile, None)), (self._thridx_2_thrid(), None))

    def _partition(self, view: View, which: str, t: int) -> View:
        vmnk = get_flat_coord(self.vmnk, t)
        a, b = {"A": (1, 3), "B": (2, 3), "C": (1, 2)}[which]
        thr = View(getattr(self, f"thrfrg_{which}")(view.layout), view.offset)
        r = rank(get(thr.layout.shape, 1, 1))
        rest = (None,) * r if r > 1 else None
        return thr((vmnk[0], (vmnk[a], vmnk[b])), (None, rest))

    def partition_A(self, view: View, t: int) -> View:
        return self._partition(view, "A", t)

    def partition_B(self, view: View, t: int) -> View:
        return self._partition(view, "B", t)

    def partition_C(self, view: View, t: int) -> View:
        return self._partition(view, "C", t)


class TiledCopy:
    """make_tiled_copy(atom, thr_layout, val_layout) and its TV layouts and partitions."""

    def __init__(self, atom: CopyAtom, thr_layout: Layout, val_layout: Layout | None = None):
        self.atom = atom
        self.thr_layout = thr_layout
        self.val_layout = val_layout if val_layout is not None else Layout(1, 0)
        layout_mn = raked_product(thr_layout, self.val_layout)
        self.layout_tv = with_shape(right_inverse(layout_mn),
                                    (size(thr_layout), size(self.val_layout)))
        self.tiler = product_each(layout_mn.shape)

    @property
    def size(self) -> int:
        return size(get(self.layout_tv.shape, 0))

    def _tile2thrfrg(self, layout: Layout, ref2trg: Layout) -> Layout:
        atom_tv = zipped_divide(self.layout_tv, (self.atom.num_thr, self.atom.num_val))
        trg_tv = composition(atom_tv, (ref2trg, None))
        thrval2mn = coalesce(Layout(zip_t(trg_tv.shape), zip_t(trg_tv.stride)), (1, (1, 1)))
        tv = composition(layout, (thrval2mn, None))
        return slice_layout(((None, None), None), tv)

    def _ref2(self, which: str) -> Layout:
        return composition(right_inverse(self.atom.ref), getattr(self.atom, which))

    def tidfrg_S(self, layout: Layout) -> Layout:
        return self._tile2thrfrg(zipped_divide(layout, self.tiler), self._ref2("src"))

    def tidfrg_D(self, layout: Layout) -> Layout:
        return self._tile2thrfrg(zipped_divide(layout, self.tiler), self._ref2("dst"))

    def layout_S_TV(self) -> Layout:
        ref = make_layout((self.tiler, 1))
        return slice_layout((None, None, 0), self._tile2thrfrg(ref, self._ref2("src")))

    def layout_D_TV(self) -> Layout:
        ref = make_layout((self.tiler, 1))
        return slice_layout((None, None, 0), self._tile2thrfrg(ref, self._ref2("dst")))

    def partition_S(self, view: View, t: int) -> View:
        thr = View(self.tidfrg_S(view.layout), view.offset)
        r = rank(view.layout)
        return thr(t, None, (None,) * r if r > 1 else None)

    def partition_D(self, view: View, t: int) -> View:
        thr = View(self.tidfrg_D(view.layout), view.offset)
        r = rank(view.layout)
        return thr(t, None, (None,) * r if r > 1 else None)


# =====================================================================================
# 3. Recipes: the layouts of each CuTe kernel, described once
# =====================================================================================

PROBLEM = (256, 256, 256)     # representative (M, N, K), all operands row-major
THREAD = 37                   # the thread whose partitions are shown (not 0: nonzero coords)


@dataclass
class Item:
    """One layout of one kernel, with the C++ expression that builds it for the nvcc check.

    kind: "layout" (a tile or shared-memory layout: coord -> offset),
          "thread" (a thread layout: coord -> thread index),
          "tv"     (a thread-value layout: (thread, value) -> coord index in the tile),
          "partition" (the part of a tile one thread owns: a view with an offset).
    """
    name: str
    title: str
    kind: str
    layout: object                       # Layout or ComposedLayout
    cpp: str                             # C++ expression: Layout, or Tensor for partitions (uses `t`)
    offset: int | None = None            # partitions: element offset from `base`
    base: str = ""                       # partitions: the C++ pointer offsets are taken from
    tile: tuple | None = None            # partitions: (rows, cols) of the tile being split; tv: tile
    part: Callable | None = None         # partitions: (View over the tile, thread) -> View
    cpp_part: str = ""                   # partitions: C++ template with {src}; thread variable `t`
    cpp_src: str = ""                    # partitions: the C++ tensor being partitioned
    src_rank: int = 2                    # partitions: its rank (3: (.., .., k); tile = k-tile 0)
    nthreads: int = 0
    exact: bool = True                   # partitions: every element owned by exactly one thread
    thread: int = THREAD
    _owners: list | None = field(default=None, repr=False, compare=False)

    # -- derived data used by the text and picture dumps --------------------------------
    def grid_layout(self):
        """The rank-2 layout shown as a grid (k-tile 0 of a rank-3 (.., .., k) layout)."""
        lay = self.layout
        r = rank(lay)
        if r == 2:
            return lay
        if r == 3 and isinstance(lay, Layout):
            return slice_layout((None, None, 0), lay)
        return None

    def owners(self) -> list[list[int]]:
        """For each element of the tile (column-major index), the threads whose partition holds it."""
        if self._owners is None:
            self._owners = self._compute_owners()
        return self._owners

    def _compute_owners(self) -> list[list[int]]:
        rows, cols = self.tile
        src = View(make_layout((rows, cols)))
        own: list[list[int]] = [[] for _ in range(rows * cols)]
        for t in range(self.nthreads):
            p = self.part(src, t)
            for i in range(int(size(p.layout))):
                own[int(p.offset) + value(p.layout, i)].append(t)
        return own

    def values_of(self, t: int) -> dict[tuple[int, int], int]:
        """Partition of thread t: tile (row, col) -> its value index in the partition."""
        rows, cols = self.tile
        p = self.part(View(make_layout((rows, cols))), t)
        out = {}
        for i in range(int(size(p.layout))):
            off = int(p.offset) + value(p.layout, i)
            out[(off % rows, off // rows)] = i
        return out

    def tv_cells(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        """TV layout: tile (row, col) -> the (thread, value) pairs that map to it."""
        rows, cols = self.tile
        nt, nv = int(size(get(self.layout.shape, 0))), int(size(get(self.layout.shape, 1)))
        out: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for t in range(nt):
            for v in range(nv):
                idx = value(self.layout, t, v)
                out.setdefault((idx % rows, idx // rows), []).append((t, v))
        return out


@dataclass
class Section:
    title: str
    cpp: str                              # C++ declarations the items of this section use
    items: list[Item] = field(default_factory=list)


@dataclass
class Recipe:
    kernel: str                           # registry name
    source: str
    sections: list[Section]
    cpp: str                              # C++ declarations shared by the sections

    def items(self) -> Iterable[Item]:
        for s in self.sections:
            yield from s.items


RECIPES: dict[str, Callable] = {}         # kernel source (registry `source`) -> recipe builder


def recipe(source: str):
    def deco(fn):
        RECIPES[source] = fn
        return fn
    return deco


def has_recipe(kernel) -> bool:
    return kernel.source in RECIPES


def build(kernel, problem=PROBLEM, thread: int = THREAD) -> Recipe:
    """The recipe of one registered CuTe kernel (raises KeyError naming it if there is none)."""
    try:
        fn = RECIPES[kernel.source]
    except KeyError:
        raise KeyError(f"no layout recipe for kernel {kernel.name!r} ({kernel.source}); "
                       f"add one to cute_gemm/layouts.py") from None
    return fn(kernel, problem, thread)


# ---- text -----------------------------------------------------------------------------

def item_text(it: Item) -> str:
    """The part of the dump CuTe C++ prints too: `print(layout)`, offset, `print_layout` grid."""
    out = [f"@@ {it.name}\n", fmt(it.layout), "\n"]
    if it.kind == "partition":
        out.append(f"offset {int(it.offset)}\n")
    g = it.grid_layout()
    if g is not None:
        out.append(print_layout(g))
    return "".join(out)


def owners_text(it: Item) -> str:
    return "owners " + " ".join("/".join(map(str, o)) for o in it.owners()) + "\n"


def _grid_labels(rows: int, cols: int, cell) -> str:
    w = max(len(cell(r, c)) for r in range(rows) for c in range(cols))
    head = "     " + "".join(f"{c:>{w + 1}}" for c in range(cols))
    lines = [head] + [f"{r:>4} " + "".join(f"{cell(r, c):>{w + 1}}" for c in range(cols))
                      for r in range(rows)]
    return "\n".join(lines) + "\n"


def describe(it: Item) -> str:
    """Human dump of one item: title, CuTe's text, and the thread/value maps CuTe has no text for."""
    out = [f"== {it.title}\n", item_text(it).split("\n", 1)[1]]
    if it.kind == "partition":
        rows, cols = it.tile
        vals = it.values_of(it.thread)
        out.append(f"thread {it.thread} owns (V# = its value index; . = another thread's):\n")
        out.append(_grid_labels(rows, cols, lambda r, c: f"V{vals[(r, c)]}" if (r, c) in vals else "."))
        if it.exact:
            own = it.owners()
            out.append("owner thread of every element of the tile:\n")
            out.append(_grid_labels(rows, cols, lambda r, c: f"T{own[r + c * rows][0]}"))
    elif it.kind == "tv":
        rows, cols = it.tile
        cells = it.tv_cells()
        out.append("tile (row, col) -> T#V# (first owner):\n")
        out.append(_grid_labels(rows, cols, lambda r, c: "T{}V{}".format(*cells[(r, c)][0])
                                if (r, c) in cells else "."))
    return "".join(out) + "\n"


def dump_text(rec: Recipe) -> str:
    out = [f"# {rec.kernel}  ({rec.source})\n\n"]
    for s in rec.sections:
        out.append(f"## {s.title}\n\n")
        out += [describe(it) for it in s.items]
    return "".join(out)


# ---- the C++ checker program --------------------------------------------------------------

CPP_HEADER = r"""// Generated by cute_gemm.layouts.cpp_program: prints every recipe layout with CuTe C++.
#include <cstdio>
#include <map>
#include <vector>
#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
using namespace cute;

static float pool_storage[1 << 22];
static float* const pool = pool_storage;   // offsets only: never read or written

template <class L> void grid(L const& l) {
  if constexpr (decltype(rank(l))::value == 2) print_layout(l);
  else if constexpr (decltype(rank(l))::value == 3) print_layout(l(_, _, 0));
}
template <class L> void emit(const char* name, L const& l) {
  printf("@@ %s\n", name); print(l); printf("\n"); grid(l);
}
template <class T> void emit_part(const char* name, T const& p, float const* base) {
  printf("@@ %s\n", name); print(p.layout()); printf("\noffset %d\n", int(&p(0) - base));
  grid(p.layout());
}
// For every element of `tile` (column-major), the threads whose partition holds it.
template <class F, class Tile> void owners(F&& part, Tile const& tile, int nthreads, float const* base) {
  std::map<long, int> where;
  for (int i = 0; i < size(tile); ++i) where[long(&tile(i) - base)] = i;
  std::vector<std::vector<int>> own(size(tile));
  for (int t = 0; t < nthreads; ++t) {
    auto p = part(t);
    for (int i = 0; i < size(p); ++i) {
      auto w = where.find(long(&p(i) - base));
      if (w != where.end()) own[w->second].push_back(t);
    }
  }
  printf("owners");
  for (auto& o : own) {
    printf(" ");
    for (size_t j = 0; j < o.size(); ++j) printf(j ? "/%d" : "%d", o[j]);
  }
  printf("\n");
}
"""


def _cpp_int(x) -> str:
    return f"Int<{int(x)}>{{}}" if _static(x) else str(int(x))


def cpp_shape(t) -> str:
    if is_tuple(t):
        return "make_shape(" + ", ".join(cpp_shape(e) for e in t) + ")"
    return _cpp_int(t)


def _cpp_item(it: Item) -> str:
    if it.kind != "partition":
        return f'  emit("{it.name}", {it.cpp});\n'
    # One lambda for both uses, so CuTe instantiates each partition once: thread THREAD's
    # layout and offset, then every thread's elements mapped back to the k-tile-0 tile.
    tile = it.cpp_src + ("(_, _, 0)" if it.src_rank == 3 else "")
    return (f"  {{ auto part = [&](int t) {{ return {it.cpp}; }};\n"
            f'    emit_part("{it.name}", part({it.thread}), {it.base});\n'
            f"    owners(part, {tile}, {it.nthreads}, {it.base}); }}\n")


def _cpp_ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def cpp_sources(recipes: Iterable[Recipe]) -> dict[str, str]:
    """The checker program as separate translation units (one per recipe, compiled in parallel).

    Host-only C++ (`.cpp`): nvcc hands it straight to the host compiler, which is 2-3x faster
    than a `.cu` through the CUDA front end, and CuTe's layout code is host code anyway.
    """
    files = {"layout_check.hpp": "#pragma once\n" + CPP_HEADER}
    main = ['#include "layout_check.hpp"\n']
    calls = []
    for rec in recipes:
        fn = "dump_" + _cpp_ident(rec.kernel)
        out = ['#include "layout_check.hpp"\n', f"void {fn}() {{\n{rec.cpp}\n"]
        for s in rec.sections:
            out.append(f"{{ // {s.title}\n{s.cpp}\n")
            out += [_cpp_item(it) for it in s.items]
            out.append("}\n")
        out.append("}\n")
        files[f"{fn}.cpp"] = "".join(out)
        main.append(f"void {fn}();\n")
        calls.append(f"  {fn}();\n")
    files["main.cpp"] = "".join(main) + "int main() {\n" + "".join(calls) + "  return 0;\n}\n"
    return files


def cpp_program(recipes: Iterable[Recipe]) -> str:
    """The checker as one C++ source (for reading; cpp_sources is what gets compiled)."""
    files = cpp_sources(list(recipes))
    body = [v.replace('#include "layout_check.hpp"\n', "") for k, v in files.items()
            if k != "layout_check.hpp"]
    return CPP_HEADER + "".join(body)


def find_nvcc() -> str | None:
    import os
    import shutil
    for cand in (os.environ.get("CUTE_GEMM_NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    return None


def cute_include_dir():
    """CuTe's headers, from the nvidia-cutlass wheel (the same ones NVRTC compiles the kernels with)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    inc = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    return inc if (inc / "cute" / "tensor.hpp").exists() else None


def build_checker(recipes: Iterable[Recipe], workdir, nvcc: str | None = None) -> "Path":
    """Compile the checker with nvcc into workdir (reused when the sources are unchanged)."""
    import hashlib
    import os
    import subprocess
    from pathlib import Path
    nvcc = nvcc or find_nvcc()
    inc = cute_include_dir()
    if nvcc is None or inc is None:
        raise RuntimeError("nvcc or the CuTe headers (nvidia-cutlass wheel) not found")
    files = cpp_sources(list(recipes))
    root = Path(workdir)
    h = lambda *parts: hashlib.sha256(repr(parts).encode()).hexdigest()[:16]  # noqa: E731
    salt = (files["layout_check.hpp"], nvcc, str(inc))
    exe = root / f"layout_check_{h(sorted(files.items()), salt)}"
    if exe.exists():
        return exe
    # One object per translation unit, cached by its content: a recipe that did not change
    # is not recompiled, whichever set of kernels the checker is built for.
    objdir = root / "obj"
    objdir.mkdir(parents=True, exist_ok=True)
    flags = ["-std=c++17", f"-I{inc}", "-w"]
    header = f"layout_check_{h(salt)}.hpp"        # by content: concurrent builds never clash
    if not (objdir / header).exists():
        tmp = objdir / f"{header}.{os.getpid()}"
        tmp.write_text(files["layout_check.hpp"])
        tmp.rename(objdir / header)
    procs, objs = [], []
    for name, text in files.items():
        if not name.endswith(".cpp"):
            continue
        stem = f"{name[:-4]}_{h(text, salt)}"
        obj = objdir / f"{stem}.o"
        objs.append(str(obj))
        if obj.exists():
            continue
        src = objdir / f"{stem}.cpp"
        src.write_text(text.replace('#include "layout_check.hpp"', f'#include "{header}"'))
        procs.append((name, obj, subprocess.Popen(
            [nvcc, *flags, "-c", str(src), "-o", f"{obj}.{os.getpid()}"], cwd=objdir,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for name, obj, p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"nvcc failed on {name}:\n{out[-4000:]}")
        Path(f"{obj}.{os.getpid()}").rename(obj)
    r = subprocess.run([nvcc, *objs, "-o", f"{exe}.{os.getpid()}"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc link failed:\n{r.stdout}{r.stderr}")
    Path(f"{exe}.{os.getpid()}").rename(exe)
    return exe


def split_dump(text: str) -> dict[str, str]:
    """Checker/expected output -> {item name: its text (including the owners line)}."""
    out: dict[str, str] = {}
    for chunk in text.split("@@ ")[1:]:
        name, _, rest = chunk.partition("\n")
        out[name] = rest
    return out


def expected_output(recipes: Iterable[Recipe]) -> str:
    """What cpp_program's binary must print, computed in Python."""
    out = []
    for rec in recipes:
        for it in rec.items():
            out.append(item_text(it))
            if it.kind == "partition":
                out.append(owners_text(it))
    return "".join(out)


# ---- shared pieces of the CuTe ladder -------------------------------------------------------

def _defines(kernel) -> dict[str, int]:
    return dict(kernel.defines)


# Operand strides for the representative problem, by major mode. A is (M,K), B is viewed
# (N,K) and C is (M,N), as in the kernels. "static" makes the unit stride a compile-time _1
# (include/cute_gemm/cute_util.cuh's CG_DA_k etc.); "dynamic" keeps every stride run-time.
def _strides(op: str, major: str, problem, static_unit: bool):
    M, N, K = problem
    unit = 1 if static_unit else Dyn(1)
    if op == "A":
        return (Dyn(K), unit) if major == "k" else (unit, Dyn(M))
    if op == "B":
        return (unit, Dyn(N)) if major == "n" else (Dyn(K), unit)
    return (Dyn(N), Dyn(1))                       # C: row-major, strides always run-time


_CPP_STRIDE_VARS = {"A": ("sAm", "sAk"), "B": ("sBn", "sBk"), "C": ("sCm", "sCn")}


def _cpp_strides(op: str, strides) -> str:
    names = _CPP_STRIDE_VARS[op]
    return "make_stride(" + ", ".join(n if not _static(s) else _cpp_int(s)
                                      for n, s in zip(names, strides)) + ")"


def _cpp_stride_decls(strides_by_op: dict) -> str:
    lines = []
    for op, st in strides_by_op.items():
        for n, s in zip(_CPP_STRIDE_VARS[op], st):
            lines.append(f"  long long {n} = {int(s)};")
    return "\n".join(lines)


def _entries(kernel, macro: str) -> dict[str, tuple[str, ...]]:
    """The arguments of each `MACRO(entry, ARG, ARG)` instantiation line of the kernel source."""
    import re
    from .paths import kernels_dir
    text = (kernels_dir() / kernel.source).read_text()
    out = {}
    for m in re.finditer(rf"^{macro}\((\w+),\s*([^)]*)\)", text, re.M):
        out[m.group(1)] = tuple(a.strip() for a in m.group(2).split(","))
    # stream-K twins (CG_PIPE_SK_ENTRY) share their plain entry point's layouts
    missing = [v.entry for v in kernel.variants if v.entry not in out]
    if missing:
        raise ValueError(f"{kernel.source}: no {macro}(...) line for entries {missing}; "
                         f"the layout recipe reads each entry's configuration from those lines")
    return out


def _cta_cpp(kernel, problem) -> str:
    bM, bN, bK = kernel.tile
    M, N, K = problem
    return (f"  auto bM = Int<{bM}>{{}}; auto bN = Int<{bN}>{{}}; "
            f"auto bK = Int<{bK}>{{}};\n"
            f"  auto cta_tiler = make_shape(bM, bN, bK);\n"
            f"  int M = {M}, N = {N}, K = {K};\n"
            f"  auto cta_coord = make_coord(0, 0, _);\n"
            f"  float* A = pool; float* B = pool; float* C = pool;\n")


class _Ladder:
    """Tiles and partitions every CuTe ladder kernel shares (CTA (0,0) of the problem)."""

    def __init__(self, kernel, problem, thread):
        self.k = kernel
        self.bM, self.bN, self.bK = kernel.tile          # the registry's tile (defines or config)
        self.tiler = (self.bM, self.bN, self.bK)
        self.problem = tuple(Dyn(x) for x in problem)
        self.thread = thread
        self.nthreads = kernel.threads

    def g(self, op: str, strides) -> View:
        """gA (BLK_M,BLK_K,k), gB (BLK_N,BLK_K,k) or gC (BLK_M,BLK_N) after local_tile."""
        M, N, K = self.problem
        shape = {"A": (M, K), "B": (N, K), "C": (M, N)}[op]
        proj = {"A": (1, None, 1), "B": (None, 1, 1), "C": (1, 1, None)}[op]
        return local_tile(View(Layout(shape, strides)), self.tiler, (0, 0, None), proj)

    def g_item(self, op: str, strides, name: str, what: str) -> Item:
        v = self.g(op, strides)
        shape = {"A": "M, K", "B": "N, K", "C": "M, N"}[op]
        step = {"A": "Step<_1, X, _1>", "B": "Step< X, _1, _1>", "C": "Step<_1, _1, X>"}[op]
        M, N, K = self.problem
        leaf = name.rsplit("/", 1)[-1]
        return Item(name, f"{leaf}: {what} after local_tile, (M,N,K) = ({int(M)},{int(N)},{int(K)}), "
                    f"CTA (0,0)",
                    "layout", v.layout,
                    f"local_tile(make_tensor({op}, make_shape({shape}), {_cpp_strides(op, strides)}), "
                    f"cta_tiler, cta_coord, {step}{{}}).layout()")

    def part_item(self, name: str, title: str, src: View, src_cpp: str, base: str,
                  part: Callable, cpp_part: str, tile: tuple, exact: bool = True) -> Item:
        p = part(src, self.thread)
        return Item(name, title, "partition", p.layout, cpp_part.replace("{src}", src_cpp),
                    offset=p.offset, base=base, tile=tile, part=part, cpp_part=cpp_part,
                    cpp_src=src_cpp, src_rank=rank(src.layout),
                    nthreads=self.nthreads, exact=exact, thread=self.thread)


def _thr_item(name: str, title: str, layout: Layout, cpp: str) -> Item:
    return Item(name, title, "thread", layout, cpp)


# ---- c0_gmem: local_tile / local_partition straight from global memory ---------------------

_GMEM_STRIDE_MACROS = {  # cute_util.cuh: macro -> (operand, major, static unit stride)
    "CG_DA_k": ("A", "k", True), "CG_DA_m": ("A", "m", True), "CG_DA_any": ("A", "k", False),
    "CG_DB_n": ("B", "n", True), "CG_DB_k": ("B", "k", True), "CG_DB_any": ("B", "n", False),
}


def _stride_macro(macro: str, problem):
    try:
        op, major, static_unit = _GMEM_STRIDE_MACROS[macro]
    except KeyError:
        raise ValueError(f"unknown stride macro {macro!r}; teach layouts._GMEM_STRIDE_MACROS") from None
    return _strides(op, major, problem, static_unit)


def _tC() -> tuple[Layout, str]:
    # kernels: auto tC = make_layout(make_shape(Int<16>{}, Int<16>{}));  (THR_M,THR_N) m-major
    return make_layout((16, 16)), "make_layout(make_shape(Int<16>{}, Int<16>{}))"


def _tC_nmajor() -> tuple[Layout, str]:
    # c0_gmem: auto tC = make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{});  n-major
    return (make_layout((16, 16), stride="row"),
            "make_layout(make_shape(Int<16>{}, Int<16>{}), LayoutRight{})")


@recipe("cute/c0_gmem.cu")
def _recipe_c0(kernel, problem, thread) -> Recipe:
    L = _Ladder(kernel, problem, thread)
    entries = _entries(kernel, "CG_GMEM_ENTRY")
    tC, tC_cpp = _tC_nmajor()
    strides_c = _strides("C", "n", problem, False)
    sections = []
    for op, idx, step, py_step in (("A", 0, "Step<_1, X>", (1, None)),
                                   ("B", 1, "Step< X, _1>", (None, 1))):
        macros = sorted({args[idx] for args in entries.values()})
        for macro in macros:
            st = _stride_macro(macro, problem)
            users = ", ".join(e for e, a in entries.items() if a[idx] == macro)
            g = L.g(op, st)
            rows = L.bM if op == "A" else L.bN
            sec = Section(f"{op} strides {macro} = {fmt(st)} ({users})",
                          f"  auto g{op} = local_tile(make_tensor({op}, make_shape("
                          f"{'M' if op == 'A' else 'N'}, K), {_cpp_strides(op, st)}), cta_tiler, "
                          f"cta_coord, {'Step<_1, X, _1>' if op == 'A' else 'Step< X, _1, _1>'}{{}});")
            sec.cpp = _cpp_stride_decls({op: st}) + "\n" + sec.cpp
            sec.items.append(L.g_item(op, st, f"{kernel.name}/{macro}/g{op}",
                                      f"the CTA's (BLK_{'M' if op == 'A' else 'N'},BLK_K,k) strip of {op}"))
            name = f"tCg{op}"
            sec.items.append(L.part_item(
                f"{kernel.name}/{macro}/{name}",
                f"{name} = local_partition(g{op}, tC, {thread}, {step}): the "
                f"{'rows of A' if op == 'A' else 'columns of B'} thread {thread} reads",
                g, f"g{op}", op, lambda v, t, s=py_step: local_partition(v, tC, t, s),
                f"local_partition({{src}}, tC, t, {step}{{}})", (rows, L.bK), exact=False))
            sections.append(sec)
    gC = L.g("C", strides_c)
    sec = Section("C and the thread layout (every entry)",
                  _cpp_stride_decls({"C": strides_c}) + "\n"
                  f"  auto gC = local_tile(make_tensor(C, make_shape(M, N), "
                  f"{_cpp_strides('C', strides_c)}), cta_tiler, cta_coord, Step<_1, _1, X>{{}});")
    sec.items.append(_thr_item(f"{kernel.name}/tC", "tC: (THR_M,THR_N) -> thread index", tC, "tC"))
    sec.items.append(L.g_item("C", strides_c, f"{kernel.name}/gC", "the CTA's (BLK_M,BLK_N) tile of C"))
    sec.items.append(L.part_item(
        f"{kernel.name}/tCgC", f"tCgC = local_partition(gC, tC, {thread}, Step<_1, _1>): "
        f"the outputs thread {thread} computes", gC, "gC", "C",
        lambda v, t: local_partition(v, tC, t, (1, 1)),
        "local_partition({src}, tC, t, Step<_1, _1>{})", (L.bM, L.bN)))
    sections.insert(0, sec)
    return Recipe(kernel.name, kernel.source, sections,
                  _cta_cpp(kernel, problem) + f"  auto tC = {tC_cpp};\n")


# ---- c1_smem: k-tiles staged through shared memory ------------------------------------------

_SMEM_THREAD_LAYOUTS = {  # c1_smem.cu: copy thread layouts (32,8), 32 threads along the contiguous mode
    "ThrMajor0": (make_layout((32, 8)), "Layout<Shape<_32, _8>>{}"),
    "ThrMajor1": (Layout((32, 8), (8, 1)), "Layout<Shape<_32, _8>, Stride<_8, _1>>{}"),
}


@recipe("cute/c1_smem.cu")
def _recipe_c1(kernel, problem, thread) -> Recipe:
    L = _Ladder(kernel, problem, thread)
    entries = _entries(kernel, "CG_SMEM_ENTRY")
    tC, tC_cpp = _tC()
    sA = View(make_layout((L.bM, L.bK)))          # (BLK_M,BLK_K) m-major: compute threads read along m
    sB = View(make_layout((L.bN, L.bK)))          # (BLK_N,BLK_K) n-major
    sections = []
    for op, idx, major_attr in (("A", 0, "a_major"), ("B", 1, "b_major")):
        for major in sorted({getattr(v, major_attr) for v in kernel.variants}):
            ents = [v.entry for v in kernel.variants if getattr(v, major_attr) == major]
            names = {entries[e][idx] for e in ents}
            if len(names) != 1 or next(iter(names)) not in _SMEM_THREAD_LAYOUTS:
                raise ValueError(f"{kernel.source}: entries {ents} use copy thread layouts {names}; "
                                 f"teach layouts._SMEM_THREAD_LAYOUTS")
            tname = next(iter(names))
            thr, thr_cpp = _SMEM_THREAD_LAYOUTS[tname]
            st = _strides(op, major, problem, False)
            g = L.g(op, st)
            s, s_cpp = (sA, "sA") if op == "A" else (sB, "sB")
            rows = L.bM if op == "A" else L.bN
            M_or_N = "M" if op == "A" else "N"
            sec = Section(
                f"{op} {major}-major: copy thread layout {tname} ({', '.join(ents)})",
                _cpp_stride_decls({op: st}) + "\n"
                f"  auto g{op} = local_tile(make_tensor({op}, make_shape({M_or_N}, K), "
                f"{_cpp_strides(op, st)}), cta_tiler, cta_coord, "
                f"{'Step<_1, X, _1>' if op == 'A' else 'Step< X, _1, _1>'}{{}});\n"
                f"  auto t{op} = {thr_cpp};")
            pre = f"{kernel.name}/{op}{major}"
            sec.items.append(L.g_item(op, st, f"{pre}/g{op}",
                                      f"the CTA's (BLK_{M_or_N},BLK_K,k) strip of {op}, {major}-major"))
            sec.items.append(_thr_item(f"{pre}/t{op}", f"t{op} ({tname}): (THR_{M_or_N},THR_K) -> "
                                       f"thread index, copy global -> shared", thr, f"t{op}"))
            sec.items.append(L.part_item(
                f"{pre}/t{op}g{op}", f"t{op}g{op} = local_partition(g{op}, t{op}, {thread}): "
                f"what thread {thread} loads from global", g, f"g{op}", op,
                lambda v, t, thr=thr: local_partition(v, thr, t),
                f"local_partition({{src}}, t{op}, t)", (rows, L.bK)))
            sec.items.append(L.part_item(
                f"{pre}/t{op}s{op}", f"t{op}s{op} = local_partition(s{op}, t{op}, {thread}): "
                f"where thread {thread} stores it in shared memory", s, s_cpp, f"smem{op}",
                lambda v, t, thr=thr: local_partition(v, thr, t),
                f"local_partition({{src}}, t{op}, t)", (rows, L.bK)))
            sections.append(sec)

    strides_c = _strides("C", "n", problem, False)
    gC = L.g("C", strides_c)
    sec = Section("shared memory and the compute partitions (every entry)",
                  _cpp_stride_decls({"C": strides_c}) + "\n"
                  f"  auto gC = local_tile(make_tensor(C, make_shape(M, N), "
                  f"{_cpp_strides('C', strides_c)}), cta_tiler, cta_coord, Step<_1, _1, X>{{}});")
    n = kernel.name
    sec.items += [
        Item(f"{n}/sA", "sA: (BLK_M,BLK_K) shared-memory tile of A, m-major", "layout",
             sA.layout, "make_layout(make_shape(bM, bK))"),
        Item(f"{n}/sB", "sB: (BLK_N,BLK_K) shared-memory tile of B, n-major", "layout",
             sB.layout, "make_layout(make_shape(bN, bK))"),
        _thr_item(f"{n}/tC", "tC: (THR_M,THR_N) -> thread index, compute", tC, "tC"),
        L.g_item("C", strides_c, f"{n}/gC", "the CTA's (BLK_M,BLK_N) tile of C"),
        L.part_item(f"{n}/tCsA", f"tCsA = local_partition(sA, tC, {thread}, Step<_1, X>): "
                    f"rows of sA thread {thread} reads", sA, "sA", "smemA",
                    lambda v, t: local_partition(v, tC, t, (1, None)),
                    "local_partition({src}, tC, t, Step<_1, X>{})", (L.bM, L.bK), exact=False),
        L.part_item(f"{n}/tCsB", f"tCsB = local_partition(sB, tC, {thread}, Step<X, _1>): "
                    f"columns of B (rows of sB) thread {thread} reads", sB, "sB", "smemB",
                    lambda v, t: local_partition(v, tC, t, (None, 1)),
                    "local_partition({src}, tC, t, Step< X, _1>{})", (L.bN, L.bK), exact=False),
        L.part_item(f"{n}/tCgC", f"tCgC = local_partition(gC, tC, {thread}, Step<_1, _1>): "
                    f"the outputs thread {thread} computes", gC, "gC", "C",
                    lambda v, t: local_partition(v, tC, t, (1, 1)),
                    "local_partition({src}, tC, t, Step<_1, _1>{})", (L.bM, L.bN)),
    ]
    sections.append(sec)
    return Recipe(kernel.name, kernel.source, sections,
                  _cta_cpp(kernel, problem) + f"  auto tC = {tC_cpp};\n"
                  "  float* smemA = pool; float* smemB = pool;\n"
                  "  auto sA = make_tensor(smemA, make_layout(make_shape(bM, bK)));\n"
                  "  auto sB = make_tensor(smemB, make_layout(make_shape(bN, bK)));\n")


# ---- c2_tiled: TiledCopy (128-bit loads) + TiledMMA, padded shared memory -------------------

def _c2_copies(d: dict, nthreads: int) -> dict[str, tuple[TiledCopy, str]]:
    """c2_tiled.cu's copy types (VecMN<EXT>, VecK, SclMN, SclK), from BLK_* and the thread count."""
    vec, scl = copy_atom("UniversalCopy<uint128_t>"), copy_atom("UniversalCopy<float>")
    vec_cpp = "Copy_Atom<UniversalCopy<uint128_t>, float>{}"
    scl_cpp = "Copy_Atom<UniversalCopy<float>, float>{}"
    bk, nt = d["BLK_K"], nthreads
    out = {}
    for ext_name in ("BLK_M", "BLK_N"):
        ext = d[ext_name]
        thr = make_layout((ext // 4, nt // (ext // 4)))
        out[f"VecMN<{ext_name}>"] = (
            TiledCopy(vec, thr, make_layout((4, 1))),
            f"make_tiled_copy({vec_cpp}, Layout<Shape<Int<{ext // 4}>, Int<{nt // (ext // 4)}>>>{{}}, "
            f"Layout<Shape<_4, _1>>{{}})")
    out["VecK"] = (
        TiledCopy(vec, Layout((nt // (bk // 4), bk // 4), (bk // 4, 1)), make_layout((1, 4))),
        f"make_tiled_copy({vec_cpp}, Layout<Shape<Int<{nt // (bk // 4)}>, Int<{bk // 4}>>, "
        f"Stride<Int<{bk // 4}>, _1>>{{}}, Layout<Shape<_1, _4>>{{}})")
    out["SclMN"] = (TiledCopy(scl, make_layout((32, nt // 32))),
                    f"make_tiled_copy({scl_cpp}, Layout<Shape<_32, Int<{nt // 32}>>>{{}})")
    out["SclK"] = (TiledCopy(scl, Layout((nt // 8, 8), (8, 1))),
                   f"make_tiled_copy({scl_cpp}, Layout<Shape<Int<{nt // 8}>, _8>, Stride<_8, _1>>{{}})")
    return out


def _c2_majors(macro: str) -> str:
    return _GMEM_STRIDE_MACROS[macro][1]


def _copy_mma_recipe(kernel, problem, thread, macro: str, copies: dict, sA: View, sB: View,
                     sA_cpp: str, sB_cpp: str, pad: int, mma: TiledMMA, mma_cpp: str,
                     smem_note: str, own_stage: dict | None = None) -> Recipe:
    """c2/c3 shape: per (stride macro, TiledCopy) operand sections, then smem + TiledMMA.
    own_stage: copy name -> {op: (View, C++ layout, note)}: the shared layout those entries
    store that operand into instead of sA/sB (shown in the operand's section)."""
    L = _Ladder(kernel, problem, thread)
    entries = _entries(kernel, macro)
    sections = []
    for op, di, ci in (("A", 0, 2), ("B", 1, 3)):
        combos = sorted({(args[di], args[ci]) for args in entries.values()})
        for smacro, cname in combos:
            if cname not in copies:
                raise ValueError(f"{kernel.source}: unknown copy type {cname!r}; teach the recipe")
            cp, cp_cpp = copies[cname]
            st = _stride_macro(smacro, problem)
            users = [e for e, a in entries.items() if (a[di], a[ci]) == (smacro, cname)]
            g = L.g(op, st)
            s, s_cpp = (sA, "sA") if op == "A" else (sB, "sB")
            own = (own_stage or {}).get(cname, {}).get(op)
            rows = L.bM if op == "A" else L.bN
            M_or_N = "M" if op == "A" else "N"
            pre = f"{kernel.name}/{op}_{smacro}_{cname}"
            sec = Section(
                f"{op}: strides {smacro} = {fmt(st)}, copy {cname} ({', '.join(users)})",
                _cpp_stride_decls({op: st}) + "\n"
                f"  auto g{op} = local_tile(make_tensor({op}, make_shape({M_or_N}, K), "
                f"{_cpp_strides(op, st)}), cta_tiler, cta_coord, "
                f"{'Step<_1, X, _1>' if op == 'A' else 'Step< X, _1, _1>'}{{}});\n"
                f"  auto copy_{op.lower()} = {cp_cpp};")
            sec.items.append(L.g_item(op, st, f"{pre}/g{op}",
                                      f"the CTA's (BLK_{M_or_N},BLK_K,k) strip of {op}"))
            if own is not None:          # these entries' own shared layout for the operand
                s, own_cpp, own_note = own
                s_cpp = f"make_tensor(smem{op}, {own_cpp})"
                sec.items.append(Item(f"{pre}/s{op}", f"s{op}: shared tile of {op} for these "
                                      f"entries, {own_note}", "layout", s.layout, own_cpp))
            sec.items.append(Item(
                f"{pre}/copy_TV", f"{cname}: TiledCopy (thread, value) -> ({M_or_N},K) coordinate "
                f"in its {fmt(cp.tiler)} tile (get_layoutS_TV; D is the same)", "tv",
                cp.layout_S_TV(), f"copy_{op.lower()}.get_layoutS_TV()", tile=cp.tiler))
            sec.items.append(L.part_item(
                f"{pre}/t{op}g{op}", f"t{op}g{op} = copy_{op.lower()}.get_slice({thread})"
                f".partition_S(g{op}): (CPY,CPY_{M_or_N},CPY_K,k), what thread {thread} loads",
                g, f"g{op}", op, lambda v, t, cp=cp: cp.partition_S(v, t),
                f"copy_{op.lower()}.get_slice(t).partition_S({{src}})", (rows, L.bK)))
            sec.items.append(L.part_item(
                f"{pre}/t{op}s{op}", f"t{op}s{op} = copy_{op.lower()}.get_slice({thread})"
                f".partition_D(s{op}): where thread {thread} stores it in shared memory",
                s, s_cpp, f"smem{op}", lambda v, t, cp=cp: cp.partition_D(v, t),
                f"copy_{op.lower()}.get_slice(t).partition_D({{src}})", (rows, L.bK)))
            if own is not None:          # and the compute side reads it from there
                part = "partition_A" if op == "A" else "partition_B"
                sec.items.append(L.part_item(
                    f"{pre}/tCs{op}", f"tCs{op} = mma.get_slice({thread}).{part}(s{op}): "
                    f"(MMA,MMA_{M_or_N},MMA_K,BUF), what thread {thread} reads of it", s, s_cpp,
                    f"smem{op}", lambda v, t, part=part: getattr(mma, part)(v, t),
                    f"mma.get_slice(t).{part}({{src}})", (rows, L.bK), exact=False))
            sections.append(sec)

    strides_c = _strides("C", "n", problem, False)
    gC = L.g("C", strides_c)
    n = kernel.name
    sec = Section("shared memory, TiledMMA and the compute partitions (every entry)",
                  _cpp_stride_decls({"C": strides_c}) + "\n"
                  f"  auto gC = local_tile(make_tensor(C, make_shape(M, N), "
                  f"{_cpp_strides('C', strides_c)}), cta_tiler, cta_coord, Step<_1, _1, X>{{}});")
    tsz = mma.tile_size_mnk
    sec.items += [
        Item(f"{n}/sA", f"sA: shared tile of A, m-major, {smem_note}", "layout", sA.layout, "sA.layout()"),
        Item(f"{n}/sB", f"sB: shared tile of B, n-major, {smem_note}", "layout", sB.layout, "sB.layout()"),
        Item(f"{n}/mma_A_TV", "TiledMMA A: (thread, value) -> (M,K) coordinate (get_layoutA_TV)",
             "tv", mma.layout_A_TV(), "mma.get_layoutA_TV()", tile=(tsz(0), tsz(2))),
        Item(f"{n}/mma_B_TV", "TiledMMA B: (thread, value) -> (N,K) coordinate (get_layoutB_TV)",
             "tv", mma.layout_B_TV(), "mma.get_layoutB_TV()", tile=(tsz(1), tsz(2))),
        Item(f"{n}/mma_C_TV", "TiledMMA C: (thread, value) -> (M,N) coordinate (get_layoutC_TV)",
             "tv", mma.layout_C_TV(), "mma.get_layoutC_TV()", tile=(tsz(0), tsz(1))),
        L.g_item("C", strides_c, f"{n}/gC", "the CTA's (BLK_M,BLK_N) tile of C"),
        L.part_item(f"{n}/tCsA", f"tCsA = mma.get_slice({thread}).partition_A(sA): "
                    f"(MMA,MMA_M,MMA_K[,PIPE]), what thread {thread} reads of sA", sA, "sA", "smemA",
                    lambda v, t: mma.partition_A(v, t), "mma.get_slice(t).partition_A({src})",
                    (L.bM, L.bK), exact=False),
        L.part_item(f"{n}/tCsB", f"tCsB = mma.get_slice({thread}).partition_B(sB): "
                    f"(MMA,MMA_N,MMA_K[,PIPE]), what thread {thread} reads of sB", sB, "sB", "smemB",
                    lambda v, t: mma.partition_B(v, t), "mma.get_slice(t).partition_B({src})",
                    (L.bN, L.bK), exact=False),
        L.part_item(f"{n}/tCgC", f"tCgC = mma.get_slice({thread}).partition_C(gC): "
                    f"(MMA,MMA_M,MMA_N), the outputs thread {thread} computes", gC, "gC", "C",
                    lambda v, t: mma.partition_C(v, t), "mma.get_slice(t).partition_C({src})",
                    (L.bM, L.bN)),
    ]
    sections.append(sec)
    return Recipe(kernel.name, kernel.source, sections,
                  _cta_cpp(kernel, problem) +
                  f"  auto mma = {mma_cpp};\n"
                  "  float* smemA = pool; float* smemB = pool;\n"
                  f"  auto sA = make_tensor(smemA, {sA_cpp});\n"
                  f"  auto sB = make_tensor(smemB, {sB_cpp});\n")


@recipe("cute/c2_tiled.cu")
def _recipe_c2(kernel, problem, thread) -> Recipe:
    d = _defines(kernel)
    bM, bN, bK = d["BLK_M"], d["BLK_N"], d["BLK_K"]
    pad = 4                                               # c2_tiled.cu: #define SMEM_PAD 4
    mma = TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1)))
    return _copy_mma_recipe(
        kernel, problem, thread, "CG_TILED_ENTRY", _c2_copies(d, kernel.threads),
        View(Layout((bM, bK), (1, bM + pad))), View(Layout((bN, bK), (1, bN + pad))),
        f"make_layout(make_shape(bM, bK), make_stride(_1{{}}, bM + Int<{pad}>{{}}))",
        f"make_layout(make_shape(bN, bK), make_stride(_1{{}}, bN + Int<{pad}>{{}}))",
        pad, mma, "make_tiled_mma(UniversalFMA<float, float, float, float>{}, "
                  "Layout<Shape<_16, _16, _1>>{})",
        f"(BLK,BLK_K):(1,BLK+{pad}), k columns padded by {pad} words")


# ---- c3_multistage: cp.async straight into a ring of smem stages ----------------------------

def _c3_multistage_copies(d: dict, nt: int) -> dict[str, tuple[TiledCopy, str]]:
    """c3_multistage.cu's copy types (CpVecMN<EXT>, CpSclMN, CpSclK), from BLK_* and the
    thread count."""
    vop, sop = "SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint128_t>", "SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>"
    vec, scl = copy_atom(vop), copy_atom(sop)
    out = {}
    for ext_name in ("BLK_M", "BLK_N"):
        e = d[ext_name] // 4
        out[f"CpVecMN<{ext_name}>"] = (
            TiledCopy(vec, make_layout((e, nt // e)), make_layout((4, 1))),
            f"make_tiled_copy(Copy_Atom<{vop}, float>{{}}, Layout<Shape<Int<{e}>, Int<{nt // e}>>>{{}}, "
            f"Layout<Shape<_4, _1>>{{}})")
    out["CpSclMN"] = (TiledCopy(scl, make_layout((32, nt // 32))),
                      f"make_tiled_copy(Copy_Atom<{sop}, float>{{}}, Layout<Shape<_32, Int<{nt // 32}>>>{{}})")
    out["CpSclK"] = (TiledCopy(scl, Layout((nt // 8, 8), (8, 1))),
                     f"make_tiled_copy(Copy_Atom<{sop}, float>{{}}, "
                     f"Layout<Shape<Int<{nt // 8}>, _8>, Stride<_8, _1>>{{}})")
    return out


@recipe("cute/c3_multistage.cu")
def _recipe_c3_multistage(kernel, problem, thread) -> Recipe:
    d = _defines(kernel)
    bM, bN, bK, P = d["BLK_M"], d["BLK_N"], d["BLK_K"], d["STAGES"]
    pad = 4                                               # c3_multistage.cu: #define SMEM_PAD 4
    mma = TiledMMA(UNIVERSAL_FMA, make_layout((16, 16, 1)))
    sA = View(Layout((bM, bK, P), (1, bM + pad, (bM + pad) * bK)))
    sB = View(Layout((bN, bK, P), (1, bN + pad, (bN + pad) * bK)))
    s_cpp = lambda b: (f"make_layout(make_shape({b}, bK, Int<{P}>{{}}), make_stride(_1{{}}, "  # noqa: E731
                       f"{b} + Int<{pad}>{{}}, ({b} + Int<{pad}>{{}}) * bK))")
    return _copy_mma_recipe(
        kernel, problem, thread, "CG_MULTISTAGE_ENTRY", _c3_multistage_copies(d, kernel.threads),
        sA, sB, s_cpp("bM"), s_cpp("bN"), pad, mma,
        "make_tiled_mma(UniversalFMA<float, float, float, float>{}, Layout<Shape<_16, _16, _1>>{})",
        f"(BLK,BLK_K,STAGES):(1,BLK+{pad},(BLK+{pad})*BLK_K), {P} stages of a ring (grid: stage 0)")


# ---- c3_pipelined: cp.async multistage pipeline, permuted TiledMMA --------------------------

def _c3_copies(cfg, nt: int) -> dict[str, tuple[TiledCopy, str]]:
    """c3_pipelined.cu's copy types (include/cute_gemm/pipelined_copies.cuh: CpVecM, CpVecN,
    CpSclMN, CpSclK, LdVecK, CpVecK), from its config and the thread count."""
    vop, sop = "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>", "SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>"
    vec, scl = copy_atom(vop), copy_atom(sop)
    out = {}
    for cname, ext in (("CpVecM", cfg.blk_m), ("CpVecN", cfg.blk_n)):
        e = min(ext // 4, nt)
        out[cname] = (
            TiledCopy(vec, make_layout((e, nt // e)), make_layout((4, 1))),
            f"make_tiled_copy(Copy_Atom<{vop}, float>{{}}, Layout<Shape<Int<{e}>, Int<{nt // e}>>>{{}}, "
            f"Layout<Shape<_4, _1>>{{}})")
    out["CpSclMN"] = (TiledCopy(scl, make_layout((32, nt // 32))),
                      f"make_tiled_copy(Copy_Atom<{sop}, float>{{}}, Layout<Shape<_32, Int<{nt // 32}>>>{{}})")
    out["CpSclK"] = (TiledCopy(scl, Layout((nt // 8, 8), (8, 1))),
                     f"make_tiled_copy(Copy_Atom<{sop}, float>{{}}, "
                     f"Layout<Shape<Int<{nt // 8}>, _8>, Stride<_8, _1>>{{}})")
    # register-staged k-major loads: kQuadsK = BLK_K/4 threads per row, 4 k per thread
    lop, q = "UniversalCopy<uint128_t>", cfg.blk_k // 4
    out["LdVecK"] = (TiledCopy(copy_atom(lop), Layout((nt // q, q), (q, 1)), make_layout((1, 4))),
                     f"make_tiled_copy(Copy_Atom<{lop}, float>{{}}, "
                     f"Layout<Shape<Int<{nt // q}>, Int<{q}>>, Stride<Int<{q}>, _1>>{{}}, "
                     f"Layout<Shape<_1, _4>>{{}})")
    # both operands k-major: the same thread layout as 16-byte cp.async into k-major raw
    # stages (BLK,BLK_K,STAGES):(BLK_K,1,BLK*BLK_K), transposed by the same thread into sA/sB
    out["CpVecK"] = (TiledCopy(vec, Layout((nt // q, q), (q, 1)), make_layout((1, 4))),
                     f"make_tiled_copy(Copy_Atom<{vop}, float>{{}}, "
                     f"Layout<Shape<Int<{nt // q}>, Int<{q}>>, Stride<Int<{q}>, _1>>{{}}, "
                     f"Layout<Shape<_1, _4>>{{}})")
    return out


@recipe("cute/c3_pipelined.cu")
def _recipe_c3(kernel, problem, thread) -> Recipe:
    from .ladder_cute import SMEM_PAD, WARP_M, kquad_stage
    cfg = kernel.config                                   # ladder_cute.PipelinedConfig
    bM, bN, bK, P = cfg.blk_m, cfg.blk_n, cfg.blk_k, cfg.stages
    tm, tn, wm, pad = cfg.thr_m, cfg.thr_n, WARP_M, SMEM_PAD
    wn = 32 // wm
    atom = Layout(((wm, tm // wm), (wn, tn // wn), 1), ((1, 32), (wm, 32 * (tm // wm)), 0))
    perm_m = Layout((tm, 4, bM // (4 * tm)), (4, 1, 4 * tm))
    perm_n = Layout((tn, 4, bN // (4 * tn)), (4, 1, 4 * tn))
    mma = TiledMMA(UNIVERSAL_FMA, atom, (perm_m, perm_n, None))
    I = lambda x: f"Int<{x}>"  # noqa: E731
    mma_cpp = (f"make_tiled_mma(UniversalFMA<float, float, float, float>{{}}, "
               f"Layout<Shape<Shape<{I(wm)}, {I(tm // wm)}>, Shape<{I(wn)}, {I(tn // wn)}>, _1>, "
               f"Stride<Stride<_1, _32>, Stride<{I(wm)}, {I(32 * (tm // wm))}>, _0>>{{}}, "
               f"Tile<Layout<Shape<{I(tm)}, _4, {I(bM // (4 * tm))}>, Stride<_4, _1, {I(4 * tm)}>>, "
               f"Layout<Shape<{I(tn)}, _4, {I(bN // (4 * tn))}>, Stride<_4, _1, {I(4 * tn)}>>, "
               f"Underscore>{{}})")
    sA = View(Layout((bM, bK, P), (1, bM + pad, (bM + pad) * bK)))
    sB = View(Layout((bN, bK, P), (1, bN + pad, (bN + pad) * bK)))
    s_cpp = lambda b: (f"make_layout(make_shape({b}, bK, Int<{P}>{{}}), make_stride(_1{{}}, "  # noqa: E731
                       f"{b} + Int<{pad}>{{}}, ({b} + Int<{pad}>{{}}) * bK))")
    # kq_layout (include/cute_gemm/kquad_stages.cuh, StageLayout): k-major operands' compute
    # stages in k-quads, (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+32/(BLK_K/4)),BLK_K*BLK+32) —
    # bit 0 the 2 buffers fed from raw stages (CpVecK), bit 1 the register-staged operand's
    # STAGES (LdVecK)
    kq, q = cfg.kq_layout, bK // 4

    def quad_stage(ext: int, buf: int) -> tuple[View, str, str]:
        gap, st = kquad_stage(ext, bK)
        return (View(Layout((ext, (4, q), buf), (1, (ext, gap), st))),
                f"Layout<Shape<{I(ext)}, Shape<_4, {I(q)}>, {I(buf)}>, "
                f"Stride<_1, Stride<{I(ext)}, {I(gap)}>, {I(st)}>>{{}}",
                f"k-quads (kq_layout): (BLK,(4,BLK_K/4),BUF):(1,(BLK,4*BLK+{32 // q}),BLK_K*BLK+32), "
                f"{buf} {'stages' if buf == P else 'buffers'} (grid: the first); a warp's "
                f"transposed k-major stores land in 32 banks")
    own = {}
    for bit, cname, buf in ((1, "CpVecK", 2), (2, "LdVecK", P)):
        if kq & bit:
            own[cname] = {"A": quad_stage(bM, buf), "B": quad_stage(bN, buf)}
    return _copy_mma_recipe(
        kernel, problem, thread, "CG_PIPE_ENTRY", _c3_copies(cfg, kernel.threads), sA, sB,
        s_cpp("bM"), s_cpp("bN"), pad, mma, mma_cpp,
        f"(BLK,BLK_K,STAGES):(1,BLK+{pad},(BLK+{pad})*BLK_K), {P} pipeline stages (grid: stage 0); "
        f"CpVecK operands: 2 such buffers, fed from k-major raw stages "
        f"(BLK,BLK_K,{P}):(BLK_K,1,BLK*BLK_K)" + (" (k-major operands: k-quad stages, "
                                                  "see their copy sections)" if kq else ""),
        own_stage=own)

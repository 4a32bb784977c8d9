"""relayout.Copies on the stub driver (no GPU): several copies a launch, their blocks the
copies' 32x32 tiles one after the other. Each recorded launch is read back block by block as
kernels/util/scale2d.cu's copy_tile reads it, and every element of every copy must be read
and written exactly once, at the operands' own addresses."""
from __future__ import annotations

import collections

import pytest

import stub_driver
from cute_gemm.base.errors import ShapeLimitError
from cute_gemm.driver.arrays import Operand
from cute_gemm.plan import relayout
from cute_gemm.plan.resolve import UTIL_ENTRY
from cute_gemm.registry.records import ITEMSIZE

TILE, WIDE = 32, 256        # (scale2d.cu: a wide tile is 256 long along both sides' unit mode)
TYPES = {entry: types for types, entry in UTIL_ENTRY.items()}   # entry -> (source, destination)


def op(ptr, shape, strides, dtype="float32", bcount=(1, 1), bstrides=(0, 0)):
    return Operand("tmp", None, True, ptr, shape, strides, dtype, bcount=bcount, bstrides=bstrides)


def model(event) -> list[tuple[int | None, int]]:
    """(source address or None, destination address) of every element the launch writes,
    each block taken as copy_tile takes it."""
    (gx, gy, gz), copies = event[2], stub_driver.copies_of(event[4])
    assert (gy, gz) == (1, 1) and 1 <= len(copies) <= relayout.MAX_COPIES
    ssz, dsz = (ITEMSIZE[t] for t in TYPES[event[1]])
    out = []
    for b in range(gx):
        i = max(j for j, c in enumerate(copies) if j == 0 or c.first <= b)
        c = copies[i]
        t = b - c.first
        rest, tm = divmod(t, c.tiles_m)
        p, tn = divmod(rest, c.tiles_n)
        assert p >= 0 and tm < c.tiles_m
        l0, l1 = divmod(c.z0 + p, c.Lin)
        bm, bn = (WIDE if c.wide == 1 else TILE), (WIDE if c.wide == 2 else TILE)
        for m in range(tm * bm, min((tm + 1) * bm, c.M)):
            for n in range(tn * bn, min((tn + 1) * bn, c.N)):
                dst = c.dst + dsz * (l0 * c.bd0 + l1 * c.bd1 + m * c.ds0 + n * c.ds1)
                read = c.src is not None and c.s != 0 and m < c.MS and n < c.NS
                src = c.src + ssz * (l0 * c.bs0 + l1 * c.bs1 + m * c.ss0 + n * c.ss1) if read else None
                out.append((src, dst))
    return out


def addresses(o: Operand):
    """Every element's address of `o`, its batch included (outer, inner, row, column order)."""
    return [o.ptr + o.itemsize * (l0 * o.bstrides[0] + l1 * o.bstrides[1] + m * o.strides[0]
                                  + n * o.strides[1])
            for l0 in range(o.bcount[0]) for l1 in range(o.bcount[1])
            for m in range(o.shape[0]) for n in range(o.shape[1])]


def run(monkeypatch, pairs):
    events = stub_driver.install(monkeypatch)
    relayout.Copies(0, [(s, d, False) for s, d in pairs])(
        (1.0,) * len(pairs), [s.ptr for s, _ in pairs], [d.ptr for _, d in pairs], 0)
    return stub_driver.launches(events, "scale2d")


def check(launches, pairs):
    written = collections.Counter()
    got = {}
    for e in launches:
        for src, dst in model(e):
            written[dst] += 1
            got[dst] = src
    want = {d: s for src, dst in pairs for s, d in zip(addresses(src), addresses(dst))}
    assert set(written) == set(want) and max(written.values()) == 1
    assert got == want


def test_three_copies_of_other_shapes_and_a_batch_are_one_launch(monkeypatch):
    """A batch copied from a broadcast source (stride 0), a transposing copy and a tall thin
    one: one launch, each element read from its own source address once."""
    pairs = [(op(0x10_0000, (70, 45), (45, 1), bcount=(2, 3), bstrides=(0, 0)),
              op(0x20_0000, (70, 45), (45, 1), bcount=(2, 3), bstrides=(3 * 3200, 3200))),
             (op(0x30_0000, (33, 65), (65, 1)), op(0x40_0000, (33, 65), (1, 40))),
             (op(0x50_0000, (300, 1), (1, 1)), op(0x60_0000, (300, 1), (1, 300)))]
    launches = run(monkeypatch, pairs)
    assert len(launches) == 1 and launches[0][1] == UTIL_ENTRY["float32", "float32"]
    check(launches, pairs)


def test_copies_past_a_launchs_blocks_or_its_copies_take_more_launches(monkeypatch):
    """Five copies (MAX_COPIES a launch) and a batch whose tiles pass the blocks a launch
    holds (BLOCKS_MAX, made small): pieces along the batch, each element still once."""
    monkeypatch.setattr(relayout, "BLOCKS_MAX", 20)
    pairs = [(op(0x100_0000 * (i + 1), (40, 40), (40, 1), bcount=(1, 7), bstrides=(0, 1600)),
              op(0x100_0000 * (i + 1) + 0x80_0000, (40, 40), (1, 40), bcount=(1, 7),
                 bstrides=(0, 1600))) for i in range(5)]
    launches = run(monkeypatch, pairs)
    assert len(launches) > 5 and all(e[2][0] <= 20 for e in launches)
    check(launches, pairs)


def test_rows_and_columns_past_32_bit_indices_take_pieces(monkeypatch):
    """A copy longer than EXTENT_MAX (made small) along each mode: pieces whose pointers are
    offset to their first element, each element once."""
    monkeypatch.setattr(relayout, "EXTENT_MAX", 64)
    pairs = [(op(0x100_0000, (150, 70), (70, 1)), op(0x200_0000, (150, 70), (1, 150)))]
    launches = run(monkeypatch, pairs)
    check(launches, pairs)
    assert {c.M for e in launches for c in stub_driver.copies_of(e[4])} == {64, 22}


def test_copies_of_other_types_launch_apart_and_a_source_of_none_writes_zeros(monkeypatch):
    """bf16 widened to float32 beside a float32 copy: two entry points, two launches; a
    copy without a source reads nothing."""
    events = stub_driver.install(monkeypatch)
    w = op(0x10_0000, (20, 30), (30, 1), "bfloat16")
    dw = op(0x20_0000, (20, 30), (30, 1))
    f = op(0x30_0000, (20, 30), (30, 1))
    df = op(0x40_0000, (20, 30), (30, 1))
    relayout.Copies(0, [(w, dw, False), (None, f, False), (f, df, False)])(
        (1.0, 0.0, 2.0), [w.ptr, None, f.ptr], [dw.ptr, f.ptr, df.ptr], 0)
    launches = stub_driver.launches(events, "scale2d")
    assert sorted(e[1] for e in launches) == sorted([UTIL_ENTRY["bfloat16", "float32"],
                                                     UTIL_ENTRY["float32", "float32"]])
    zeros = [c for e in launches for c in stub_driver.copies_of(e[4]) if c.src is None]
    assert len(zeros) == 1 and zeros[0].dst == f.ptr and (zeros[0].MS, zeros[0].NS) == (0, 0)
    scaled = [c for e in launches for c in stub_driver.copies_of(e[4]) if c.src == f.ptr]
    assert len(scaled) == 1 and scaled[0].s == 2.0


@pytest.mark.parametrize("src,dst,wide", [
    (((300, 70), (70, 1)), ((300, 70), (80, 1)), 2),      # rows into rows: lines are rows
    (((300, 70), (1, 300)), ((300, 70), (1, 304)), 1),    # columns into columns
    (((300, 70), (70, 1)), ((300, 70), (1, 300)), 0),     # a transpose: 32x32 tiles
    (((300, 1), (1, 1)), ((300, 1), (1, 300)), 1),        # a column: along its length
    (((1, 300), (1, 1)), ((1, 300), (300, 1)), 2)])
def test_copies_along_a_shared_unit_mode_take_wide_tiles(monkeypatch, src, dst, wide):
    """Sides that share a unit-stride mode: 32x256 tiles, long along it (no transpose through
    shared memory); each element still read and written once, a zero-filling copy too."""
    pairs = [(op(0x100_0000, *src), op(0x200_0000, *dst))]
    launches = run(monkeypatch, pairs)
    assert {c.wide for e in launches for c in stub_driver.copies_of(e[4])} == {wide}
    check(launches, pairs)
    assert relayout.wide_mode(None, op(0, *dst), dst[0]) == (wide or (1 if dst[1][0] == 1 else 2))


def test_a_copy_of_more_tiles_than_one_launchs_blocks_is_a_shape_limit_error(monkeypatch):
    stub_driver.install(monkeypatch)
    monkeypatch.setattr(relayout, "BLOCKS_MAX", 3)
    with pytest.raises(ShapeLimitError, match="32x32 tiles"):       # a transposing copy
        relayout.Copies(0, [(op(0x1000, (70, 70), (70, 1)), op(0x9000, (70, 70), (1, 70)), False)])
    with pytest.raises(ShapeLimitError, match="32x256 tiles"):      # rows into rows
        relayout.Copies(0, [(op(0x1000, (200, 70), (70, 1)), op(0x9000, (200, 70), (70, 1)), False)])

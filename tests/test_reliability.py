"""The runtime's guarantees that need no GPU: what run() plans and asks of the driver for
aliased outputs, huge shapes, producer streams and bad arguments (a stub driver records
it, tests/stub_driver.py), and the pure pieces (overlap tests, launch extents), checked
against brute force. The same guarantees on a GPU: test_reliability_gpu.py."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cute_gemm
import stub_driver
from cute_gemm import api, registry
from cute_gemm.plan import relayout, resolve
from cute_gemm.driver.arrays import DeviceArray, Operand, parse
from cute_gemm.base.errors import (AliasError, CuteGemmError, InputError, NotAnArrayError,
                                   StreamError)
from stub_driver import Dev, gemm_args, scale_args

U32 = 2**32


def _op(shape, strides, ptr=1 << 20):
    return Operand("x", None, True, ptr, shape, strides, "float32")


def _addresses(op):
    (r, c), (s0, s1) = op.shape, op.strides
    return [op.ptr + 4 * (i * s0 + j * s1) for i in range(r) for j in range(c)]


# ---- overlap tests against brute force ------------------------------------------------------
_dims = st.integers(1, 7)
_strides = st.integers(-9, 9)


@settings(max_examples=400, deadline=None)
@given(_dims, _dims, _strides, _strides)
def test_self_overlap_is_exact(r, c, s0, s1):
    op = _op((r, c), (s0, s1))
    addr = _addresses(op)
    assert op.self_overlapping() == (len(set(addr)) < len(addr))


@settings(max_examples=400, deadline=None)
@given(_dims, _dims, _strides, _strides, _dims, _dims, _strides, _strides, st.integers(-40, 40))
def test_span_overlap_never_misses_a_shared_address(r, c, s0, s1, r2, c2, t0, t1, shift):
    a, b = _op((r, c), (s0, s1)), _op((r2, c2), (t0, t1), ptr=(1 << 20) + 4 * shift)
    if set(_addresses(a)) & set(_addresses(b)):
        assert a.overlaps(b) and b.overlaps(a)
    lo, hi = a.span()
    assert min(_addresses(a)) == lo and max(_addresses(a)) + 4 == hi


def test_same_view_ignores_strides_of_unit_extents():
    assert _op((1, 5), (7, 1)).same_view(_op((1, 5), (99, 1)))
    assert not _op((2, 5), (7, 1)).same_view(_op((2, 5), (8, 1)))
    assert not _op((3, 3), (3, 1)).same_view(_op((3, 3), (1, 3)))       # c and c.T


# ---- launch extents: every registered kernel, any size -----------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(registry.kernels() + (resolve.UTIL,)),
       st.integers(1, 2**34), st.integers(1, 2**34), st.integers(1, 2**34), st.booleans())
def test_launch_extents_fit_the_grid_and_32_bit_indices(k, m, n, kk, transposed):
    mc, nc, kc = k.launch_extents(m, n, kk, transposed)
    assert 1 <= mc <= m and 1 <= nc <= n and 1 <= kc <= kk
    assert max(mc, nc, kc) <= registry.EXTENT_MAX
    swap = resolve.swapped(k, mc, nc, transposed)
    gx, gy, gz = k.grid(*((nc, mc) if swap else (mc, nc)), kc)   # the grid run() launches
    assert gx <= registry.GRID_X_MAX and gy <= registry.GRID_YZ_MAX and gz <= registry.GRID_YZ_MAX
    for x, c in ((m, mc), (n, nc), (kk, kc)):   # a cut keeps the pieces' alignment class
        assert c == x or c % 256 == 0
    m = min(m, 64 * mc + m % mc)      # up to 65 pieces: a 2^34 / 256 list would take seconds
    pieces = relayout.pieces(m, mc)
    assert pieces[0][0] == 0 and sum(p for _, p in pieces) == m
    assert all(a + p == b for (a, p), (b, _) in zip(pieces, pieces[1:]))


# ---- chunked launches (rows 7 and 8 of the reliability issue) --------------------------------
def test_k_beyond_32_bits_is_cut_and_accumulated(monkeypatch):
    """K = 2^32 + 3 with zero-stride operands (a few bytes of memory): launches of K <= 2^30
    that add up in place, never a wrapped K (which ran K = 3 before)."""
    events = stub_driver.install(monkeypatch)
    kk = U32 + 3
    a = Dev((2, kk), 0x10000, strides=(0, 0))
    b = Dev((kk, 3), 0x20000, strides=(0, 0))
    out = Dev((2, 3), 0x30000)
    api.run("cute_smem", a, b, out=out, alpha=0.5)
    ks = [gemm_args(e[4]) for e in stub_driver.launches(events, "gemm")]
    assert sum(s.K for s in ks) == kk and all(0 < s.K <= registry.EXTENT_MAX for s in ks)
    assert [s.beta for s in ks] == [0.0] + [1.0] * (len(ks) - 1)
    assert all((s.M, s.N, s.C, s.alpha) == (2, 3, 0x30000, 0.5) for s in ks)


@pytest.mark.parametrize("name", ["naive", "cute_smem", "cute_pipelined"])
def test_grid_limits_are_cut_into_launches(monkeypatch, name):
    """M past grid.y of naive (65535 x 16 rows) and N past grid.y of the CuTe kernels: every
    launch fits the grid limits, and the pieces tile C exactly once."""
    events = stub_driver.install(monkeypatch)
    k = registry.get(name)
    span_m, span_n = k.grid.span(1)
    m, n = (min(span_m, 2**22) + 5, 3) if span_m < 2**31 else (4, min(span_n, 2**24) + 7)
    a, b, out = Dev((m, 8), 0x1000_0000), Dev((8, n), 0x2000_0000), Dev((m, n), 0x4000_0000_0000)
    api.run(name, a, b, out=out)
    seen = set()
    for e in stub_driver.launches(events, "gemm"):
        s = gemm_args(e[4])
        gx, gy, gz = e[2]
        assert gy <= registry.GRID_YZ_MAX and gx <= registry.GRID_X_MAX
        assert (gx, gy, gz) == k.grid(s.M, s.N, s.K)
        i0, j0 = divmod((s.C - 0x4000_0000_0000) // 4, n)
        assert s.A == 0x1000_0000 + 4 * 8 * i0 and s.B == 0x2000_0000 + 4 * j0
        seen.add((i0, j0, s.M, s.N))
    assert len(seen) > 1 and sum(r * c for _, _, r, c in seen) == m * n


# ---- aliasing (row 4, 5) ----------------------------------------------------------------------
def _alias_case(monkeypatch, kind):
    events = stub_driver.install(monkeypatch)
    n = 64
    a, b = Dev((n, n), 0x100000), Dev((n, n), 0x200000)
    c = Dev((n, n), 0x300000)
    out = {"a": a, "b": b, "c_t": Dev((n, n), 0x300000, strides=(4, 4 * n)),
           "c_shift": Dev((n, n), 0x300004)}[kind]
    api.run("cute_smem", a, b, None if kind in ("a", "b") else c, out=out, beta=0.5)
    return events, out


@pytest.mark.parametrize("kind", ["a", "b", "c_t", "c_shift"])
def test_out_overlapping_an_input_is_computed_apart_then_copied(monkeypatch, kind):
    events, out = _alias_case(monkeypatch, kind)
    kinds = [e[0] for e in events]
    allocs = [e for e in events if e[0] == "alloc"]
    gemm = [gemm_args(e[4]) for e in stub_driver.launches(events) if e[1] != "scale2d"]
    copies = [scale_args(e[4]) for e in stub_driver.launches(events) if e[1] == "scale2d"]
    tmp = allocs[0][1]
    assert len(gemm) == 1 and gemm[0].C == tmp                    # the kernel writes apart
    last = copies[-1]                                             # then one copy into out
    assert (last.src, last.dst, last.s) == (tmp, out.ptr, 1.0)
    assert kinds.index("free") > max(i for i, e in enumerate(events) if e[0] == "launch")
    assert sorted(e[1] for e in events if e[0] == "free") == sorted(e[1] for e in allocs)


def test_in_place_c_is_not_copied(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, c = Dev((32, 16), 0x100000), Dev((16, 24), 0x200000), Dev((32, 24), 0x300000)
    api.run("cute_smem", a, b, c, out=c, beta=2.0)
    assert not [e for e in events if e[0] == "alloc"]
    assert [gemm_args(e[4]).C for e in stub_driver.launches(events)] == [0x300000]


def test_k_zero_into_the_transpose_of_c_goes_through_a_temporary(monkeypatch):
    events = stub_driver.install(monkeypatch)
    n = 48
    c = Dev((n, n), 0x300000)
    api.run("naive", Dev((n, 0), 0x100000), Dev((0, n), 0x200000), c,
            out=Dev((n, n), 0x300000, strides=(4, 4 * n)), beta=3.0)
    copies = [scale_args(e[4]) for e in stub_driver.launches(events)]
    tmp = [e for e in events if e[0] == "alloc"][0][1]
    assert [(x.src, x.dst) for x in copies] == [(0x300000, tmp), (tmp, 0x300000)]


@pytest.mark.parametrize("strides", [(0, 4), (4, 0), (0, 0), (8, 4)])
def test_self_overlapping_out_is_an_alias_error(monkeypatch, strides):
    stub_driver.install(monkeypatch)
    with pytest.raises(AliasError):
        api.run("naive", Dev((4, 3), 0x1000), Dev((3, 4), 0x2000),
                out=Dev((4, 4), 0x3000, strides=strides))


def test_hot_path_rechecks_overlap(monkeypatch):
    """The signature hot path skips validation, not the overlap test: the same shapes with
    out moved onto a take the apart-and-copy path."""
    events = stub_driver.install(monkeypatch)
    a, b, out = Dev((64, 64), 0x100000), Dev((64, 64), 0x200000), Dev((64, 64), 0x300000)
    api.run("cute_smem", a, b, out=out)
    api.run("cute_smem", a, b, out=out)
    assert len(resolve.CACHE.hot) == 1 and not [e for e in events if e[0] == "alloc"]
    api.run("cute_smem", a, b, out=Dev((64, 64), 0x100000))     # out is a
    assert [e for e in events if e[0] == "alloc"]


def test_the_padded_copy_zeroes_its_pad_and_allocates_it(monkeypatch):
    """A copy into rows padded to an entry's 16-byte alignment (A's leading dimension 14
    halves; test_dtypes: which operands are copied) writes its pad too, inside its
    allocation."""
    events = stub_driver.install(monkeypatch)
    a = Dev((37, 13), 0x10000, strides=(28, 2), typestr="<f2")
    b = Dev((13, 24), 0x20000, strides=(48, 2), typestr="<f2")
    out = Dev((37, 24), 0x30000)
    api.run("cute_mma_sm80", a, b, out=out)
    (alloc,) = [e for e in events if e[0] == "alloc"]
    assert alloc[2] >= 37 * 16 * 2
    (cp,) = [scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
    assert (cp.M, cp.N, cp.MS, cp.NS) == (37, 16, 37, 13)        # writes the pad, reads 13
    assert (cp.src, cp.dst, cp.ds0, cp.ds1) == (0x10000, alloc[1], 16, 1)
    (g,) = [gemm_args(e[4]) for e in stub_driver.launches(events, "gemm")]
    assert (g.A, g.B, g.K) == (alloc[1], 0x20000, 13)


def test_a_repeat_call_on_copies_reuses_its_launch_with_fresh_temporaries(monkeypatch):
    """A call that needs relayout copies resolves its launch once (relayout.Relaid, kept in
    resolve.CACHE.launches): the next call with the same key copies into new stream-ordered
    temporaries, launches on those, and frees them; another stride pattern, or
    clear_caches(), resolves again."""
    events = stub_driver.install(monkeypatch)
    seen = []
    real = relayout.resolve
    monkeypatch.setattr(relayout, "resolve", lambda *x, **kw: seen.append(1) or real(*x, **kw))
    b = Dev((13, 24), 0x20000, strides=(48, 2), typestr="<f2")
    out = Dev((37, 24), 0x30000)

    def call(a):
        del events[:]
        api.run("cute_mma_sm80", a, b, out=out)
        (alloc,) = [e for e in events if e[0] == "alloc"]
        (cp,) = [scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
        (g,) = [gemm_args(e[4]) for e in stub_driver.launches(events, "gemm")]
        assert cp.dst == g.A == alloc[1] and (cp.src, g.B, g.C) == (a.ptr, b.ptr, out.ptr)
        assert [e[1] for e in events if e[0] == "free"] == [alloc[1]]
        return alloc[1]
    a = Dev((37, 13), 0x10000, strides=(28, 2), typestr="<f2")       # ld 14: not 16-byte rows
    first = call(a)
    (relaid,) = resolve.CACHE.launches.values()
    assert len(seen) == 1 and isinstance(relaid, relayout.Relaid) and relaid.plan.copies == ("a",)
    assert call(a) != first and len(seen) == 1          # new temporaries, the same launch
    call(Dev((37, 13), 0x10000, strides=(60, 2), typestr="<f2"))
    assert len(seen) == 2 and len(resolve.CACHE.launches) == 2
    cute_gemm.clear_caches()
    assert not resolve.CACHE.launches
    call(a)
    assert len(seen) == 3


def test_two_copies_share_one_allocation_apart_and_aligned(monkeypatch):
    """A launch with A and B both copied (bf16 rows of 1025 and 8191 elements: not 16-byte
    aligned for TMA) takes one stream-ordered allocation and one copy launch: each copy
    starts on a 256-byte boundary, neither copy's span reaches into the other's, the launch's
    blocks are the two copies' tiles, one after the other, the GEMM reads both, and the
    allocation is freed after it."""
    events = stub_driver.install(monkeypatch)
    m, n, kk = 257, 8191, 1025
    a = Dev((m, kk), 0x1000_0000, strides=(2 * kk, 2), typestr="<f2")
    b = Dev((kk, n), 0x2000_0000, strides=(2 * n, 2), typestr="<f2")
    api.run("cute_wgmma_ws", a, b, out=Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2"))
    (alloc,) = [e for e in events if e[0] == "alloc"]
    (copy,) = stub_driver.launches(events, "scale2d")
    cps = stub_driver.copies_of(copy[4])
    assert [c.first for c in cps] == [0, cps[0].tiles_m * cps[0].tiles_n]
    assert copy[2] == (sum(c.tiles_m * c.tiles_n for c in cps), 1, 1)
    # (32x32 tiles where the copy transposes, 32x256 along the unit mode both sides share)
    assert all((c.tiles_m, c.tiles_n) == (-(-c.M // (256 if c.wide == 1 else 32)),
                                          -(-c.N // (256 if c.wide == 2 else 32))) for c in cps)
    (g,) = [gemm_args(e[4]) for e in stub_driver.launches(events, "gemm")]
    assert sorted(c.src for c in cps) == [a.ptr, b.ptr] and {c.dst for c in cps} == {g.A, g.B}
    spans = sorted((c.dst, c.dst + 2 * ((c.M - 1) * c.ds0 + (c.N - 1) * c.ds1 + 1)) for c in cps)
    assert all(lo % 256 == 0 for lo, _ in spans) and spans[0][1] <= spans[1][0]
    assert spans[0][0] == alloc[1] and spans[1][1] <= alloc[1] + alloc[2]
    assert events.index(alloc) < min(events.index(e) for e in events if e[0] == "launch")
    assert [e[1] for e in events if e[0] == "free"] == [alloc[1]]
    assert [e[0] for e in events].index("free") > max(i for i, e in enumerate(events)
                                                       if e[0] == "launch")


# ---- alpha == 0 and K == 0: A and B are not read (row 11) ----------------------------------
def test_alpha_zero_reads_neither_a_nor_b_on_the_host():
    rng = np.random.default_rng()
    a = np.full((5, 7), np.nan, dtype=np.float32)
    b = rng.standard_normal((7, 3), dtype=np.float32)
    c = rng.standard_normal((5, 3), dtype=np.float32)
    assert np.array_equal(cute_gemm.run("naive", a, b, c, alpha=0.0, beta=2.0), 2 * c)
    assert np.array_equal(cute_gemm.run("naive", a, b, alpha=0.0), np.zeros((5, 3), np.float32))


def test_alpha_zero_on_the_device_launches_only_the_scale(monkeypatch):
    events = stub_driver.install(monkeypatch)
    c = Dev((5, 3), 0x3000)
    api.run("cute_smem", Dev((5, 7), 0x1000), Dev((7, 3), 0x2000), c, out=c, alpha=0.0, beta=2.0)
    (e,) = stub_driver.launches(events)
    s = scale_args(e[4])
    assert e[1] == "scale2d" and (s.src, s.dst, s.s) == (0x3000, 0x3000, 2.0)


# ---- producer streams (row 6) -----------------------------------------------------------------
def test_cai_stream_of_another_stream_is_waited_for_by_event(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a = Dev((16, 8), 0x1000, stream=0xAAAA)
    b = Dev((8, 16), 0x2000, stream=0xBBBB)
    out = Dev((16, 16), 0x3000)
    api.run("cute_smem", a, b, out=out, stream=0x5555)
    waits = [(e[0], e[1] if e[0] == "wait" else e[2]) for e in events if e[0] in ("record", "wait")]
    assert sorted(waits) == sorted([("record", 0xAAAA), ("wait", 0x5555),
                                    ("record", 0xBBBB), ("wait", 0x5555)])
    first_launch = next(i for i, e in enumerate(events) if e[0] == "launch")
    assert all(i < first_launch for i, e in enumerate(events) if e[0] in ("record", "wait"))


def test_cai_stream_equal_to_ours_needs_no_wait_and_keeps_the_hot_path(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b = Dev((16, 8), 0x1000, stream=1), Dev((8, 16), 0x2000, stream=1)   # legacy default
    out = Dev((16, 16), 0x3000, stream=1)
    for _ in range(3):
        api.run("cute_smem", a, b, out=out)        # stream None: the legacy default stream
    assert not [e for e in events if e[0] in ("record", "wait")]
    assert len(resolve.CACHE.hot) == 1 and len(stub_driver.launches(events)) == 3
    a.stream = 0xAAAA                              # now produced elsewhere: waited for
    api.run("cute_smem", a, b, out=out)
    assert [e[0] for e in events if e[0] in ("record", "wait")] == ["record", "wait"]


# ---- named errors for what a user can pass (rows 9, 10, 13) ---------------------------------
def test_closed_device_array_is_an_input_error(monkeypatch):
    stub_driver.install(monkeypatch)
    with pytest.raises(InputError, match="null"):
        api.run("naive", Dev((4, 3), 0x1000), Dev((3, 4), 0x2000), out=Dev((4, 4), 0))
    with pytest.raises(InputError, match="null"):
        api.run("naive", Dev((4, 3), 0), Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000))


def test_cai_with_list_shape_and_strides(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, out = Dev([16, 8], 0x1000, strides=[32, 4]), Dev([8, 16], 0x2000), Dev([16, 16], 0x3000)
    for _ in range(2):     # (the hot path's signature cannot hold a list: the full path)
        assert api.run("cute_smem", a, b, out=out) is out
    assert len(stub_driver.launches(events)) == 2


class _Malformed:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


@pytest.mark.parametrize("cai", [{"shape": (2, 2)}, {"shape": (2, 2), "typestr": "<f4", "data": 5},
                                 {"shape": (2, 2), "typestr": "<f4", "data": (4096, False),
                                  "strides": ("x", 4)}])
def test_malformed_cai_is_not_an_array_error(cai):
    with pytest.raises(NotAnArrayError):
        parse("a", _Malformed(cai))


def test_masked_cai_is_an_input_error():
    with pytest.raises(InputError, match="mask"):
        parse("a", _Malformed({"shape": (2, 2), "typestr": "<f4", "data": (4096, False),
                               "mask": object()}))


class _Grad(Dev):
    """A tensor that requires grad: its CAI raises, as PyTorch's does; detach() shares memory."""
    requires_grad = True

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    def detach(self):
        return Dev(self.shape, self.ptr)


def test_tensor_that_requires_grad_is_read_as_its_data(monkeypatch):
    events = stub_driver.install(monkeypatch)
    api.run("cute_smem", _Grad((16, 8), 0x1000), _Grad((8, 16), 0x2000), out=Dev((16, 16), 0x3000))
    assert gemm_args(stub_driver.launches(events)[0][4]).A == 0x1000
    with pytest.raises(InputError, match="requires grad"):
        api.run("cute_smem", Dev((16, 8), 0x1000), Dev((8, 16), 0x2000), out=_Grad((16, 16), 0x3000))


class _Raises:
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("boom")


def test_cai_property_that_raises_is_a_named_error():
    with pytest.raises(NotAnArrayError, match="boom"):
        parse("a", _Raises())


@pytest.mark.parametrize("stream", [-1, "s", 1.5, object()])
def test_bad_stream_is_a_stream_error(monkeypatch, stream):
    stub_driver.install(monkeypatch)
    with pytest.raises(StreamError):
        api.run("naive", Dev((4, 3), 0x1000), Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000),
                stream=stream)


def test_every_error_is_a_cute_gemm_error_before_any_launch(monkeypatch):
    """Each bad call raises a CuteGemmError subclass and records no driver work."""
    events = stub_driver.install(monkeypatch)
    good = dict(a=Dev((4, 3), 0x1000), b=Dev((3, 4), 0x2000), out=Dev((4, 4), 0x3000))
    bad = [dict(good, a=Dev((4, 5), 0x1000)), dict(good, out=Dev((4, 4), 0x3000, readonly=True)),
           dict(good, a=Dev((4, 3), 0x1000, typestr="<f8")), dict(good, out=Dev((4, 4), 0)),
           dict(good, out=Dev((4, 4), 0x3000, strides=(0, 4))), dict(good, b=[[1.0]]),
           dict(good, a=Dev((4, 3), 0x1002)), dict(good, alpha=True), dict(good, stream="x")]
    for kw in bad:
        with pytest.raises(CuteGemmError):
            api.run("naive", **kw)
    assert not [e for e in events if e[0] in ("launch", "alloc", "memset")]
    with pytest.raises(CuteGemmError):
        api.run("no_such_kernel", **good)


def test_device_array_close_then_use():
    """A closed DeviceArray reports a null pointer; no driver is needed to refuse it."""
    d = DeviceArray.__new__(DeviceArray)
    d.shape, d.strides, d.ordinal, d.dtype_name = (3, 3), (3, 1), 0, "float32"
    d._buf = type("B", (), {"ptr": 0, "nbytes": 36})()
    with pytest.raises(InputError, match="null"):
        parse("out", d)


def test_named_error_classes():
    assert issubclass(AliasError, InputError) and issubclass(StreamError, InputError)
    assert issubclass(cute_gemm.base.errors.CaptureError, CuteGemmError)
    assert math.isfinite(registry.EXTENT_MAX) and list(itertools.islice(relayout.pieces(10, 4), 3)) == [
        (0, 4), (4, 4), (8, 2)]


@pytest.mark.parametrize("env,zero", [(None, 1), ("0", 1), ("1", 2)])
def test_default_stream_handle_follows_the_bindings_switch(monkeypatch, env, zero):
    from cute_gemm.driver import launch
    monkeypatch.setattr(launch, "_zero_is", [])
    if env is None:
        monkeypatch.delenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)
    else:
        monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", env)
    assert launch.canonical_stream(0) == zero and launch.canonical_stream(0x77) == 0x77


def test_every_guarantee_names_tests_that_exist():
    """docs/guarantees.md cites the tests that hold each promise: each must exist, and the
    README's Guarantees summary links the page."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parent
    page = (root.parent / "docs" / "guarantees.md").read_text()
    cited = set(re.findall(r"`(test_\w+)`", page))
    defined = {m for p in root.glob("test_*.py") for m in re.findall(r"^def (test_\w+)", p.read_text(), re.M)}
    assert len(cited) >= 15 and cited <= defined, sorted(cited - defined)
    readme = (root.parent / "README.md").read_text()
    assert "(docs/guarantees.md)" in readme.split("## Guarantees", 1)[1].split("\n## ", 1)[0]


def test_one_layout_vocabulary():
    """Users name operand layouts nn/tn/nt/tt everywhere (check, bench, CLI); kernels name
    majors; registry.layout_majors is the one translation, and anything else is refused."""
    assert [registry.layout_majors(x) for x in registry.LAYOUTS] == [
        ("k", "n"), ("m", "n"), ("k", "k"), ("m", "k")]
    for bad in ("n", "nnn", ("n", "n"), "xn"):
        with pytest.raises(InputError):
            registry.layout_majors(bad)
    with pytest.raises(InputError):
        cute_gemm.cross_check(kernels=["naive"], layout=("n", "t"))


def test_cross_check_result_types():
    """out_dtype: "same", or a type some precision writes (an 8-bit precision's bfloat16);
    a precision is checked where a kernel writes that type, and nothing else is taken."""
    with pytest.raises(CuteGemmError, match="out_dtype must be 'same' or one of float32"):
        cute_gemm.cross_check(kernels=["naive"], out_dtype="float64")
    assert cute_gemm.cross_check(kernels=["naive"], shapes=[(20, 30, 10)],
                                 out_dtype="bfloat16").shapes == []


# ---- kernels that compute C^T = B^T A^T where N is skinny (Kernel.transposes) ---------------
def _transposing_kernel():
    ks = [k for k in registry.kernels() if k.transpose_skinny]
    if not ks:
        pytest.skip("no kernel registered with transpose_skinny")
    return ks[0]


def test_transposes_only_where_it_saves_tile_area():
    k = _transposing_kernel()
    bm, bn, _ = k.tile
    assert bm < bn
    assert k.transposes(8192, bm) and k.transposes(8192, bm // 2) and k.transposes(203, 4)
    assert not k.transposes(bm, 8192) and not k.transposes(4096, 4096)
    assert not k.transposes(12345, 6789)          # a sliver less area: not worth another entry
    assert not k.transposes(4096, bn)             # the same tiles either way


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_transposed_launch_swaps_operands_roles_and_strides(monkeypatch, layout):
    """A 2000 x 40 product on a transposing kernel launches the entry of the transposed
    operands (nn: A^T k-major as B, B^T m-major as A) with M and N, A and B, and each
    operand's strides turned; the hot path launches the same."""
    events = stub_driver.install(monkeypatch)
    k = _transposing_kernel()
    m, n, kk = 2000, 40, 96
    a = Dev((m, kk), 0x1000_0000, strides=(4 * kk, 4) if layout[0] == "n" else (4, 4 * m))
    b = Dev((kk, n), 0x2000_0000, strides=(4 * n, 4) if layout[1] == "n" else (4, 4 * kk))
    out = Dev((m, n), 0x3000_0000)
    want = {"nn": "am_bk", "tn": "am_bn", "nt": "ak_bk", "tt": "ak_bn"}[layout]
    for _ in range(2):
        api.run(k.name, a, b, out=out, alpha=0.5)
    gemms = stub_driver.launches(events, "gemm")
    assert len(gemms) == 2 and not [e for e in events if e[0] == "alloc"]
    for e in gemms:
        g = gemm_args(e[4])
        assert e[1] == f"cute_pipelined_{want}" and e[2] == k.grid(n, m, kk)
        assert (g.M, g.N, g.K, g.alpha, g.A, g.B, g.C) == (n, m, kk, 0.5, b.ptr, a.ptr, out.ptr)
        assert (g.sAm, g.sAk) == tuple(s // 4 for s in b.strides[::-1])
        assert (g.sBk, g.sBn) == tuple(s // 4 for s in a.strides[::-1])
        assert (g.sCm, g.sCn) == (1, n)
    (plan,) = resolve.resolved_launches()
    assert plan.swap and plan.shape == (m, n, kk)


def test_transposed_launch_copies_an_operand_in_its_turned_role(monkeypatch):
    """An A with no unit stride is copied for the entry's B (A^T), then the launch reads
    the copy as its B."""
    events = stub_driver.install(monkeypatch)
    k = _transposing_kernel()
    m, n, kk = 2000, 40, 96
    a = Dev((m, kk), 0x1000_0000, strides=(8 * kk, 8))       # every other element
    b = Dev((kk, n), 0x2000_0000)
    out = Dev((m, n), 0x3000_0000)
    api.run(k.name, a, b, out=out)
    (alloc,) = [e for e in events if e[0] == "alloc"]
    (cp,) = [scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
    assert (cp.src, cp.dst) == (a.ptr, alloc[1])
    ((_, entry, *_, blob),) = stub_driver.launches(events, "gemm")
    g = gemm_args(blob)
    assert (g.M, g.N, g.A, g.B, g.C) == (n, m, b.ptr, alloc[1], out.ptr)
    # the first entry that takes B^T (m-major) as it is: am_bn, so A^T is copied n-major,
    # its rows (8000 bytes) padded to whole 128-byte lines
    assert entry == "cute_pipelined_am_bn" and (g.sBk, g.sBn) == (2016, 1)

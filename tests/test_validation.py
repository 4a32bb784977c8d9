"""Bad input raises a named exception before anything touches the GPU; operand parsing
and layout matching are pure Python and tested here without one."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import driver, registry
from cute_gemm.driver import launch
from cute_gemm.plan import resolve
from cute_gemm.driver.arrays import parse
from conftest import GPU_SKIP_REASON


class FakeCAI:
    """A device array as far as __cuda_array_interface__ goes (never dereferenced)."""

    def __init__(self, shape, strides=None, typestr="<f4", ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


@pytest.fixture(autouse=True)
def no_device_calls(monkeypatch):
    """Any attempt to reach the driver fails the test: validation must come first."""
    def boom(*a, **k):
        raise AssertionError("validation reached the CUDA driver")
    monkeypatch.setattr(driver, "ensure_context", boom)
    monkeypatch.setattr(launch, "DeviceBuffer", boom)
    monkeypatch.setattr(launch, "launch", boom)


def rnd(*shape):
    return np.random.default_rng().standard_normal(shape, dtype=np.float32)


@pytest.mark.parametrize("bad", [[[1.0, 2.0]], 3.0, "ab", None, {"shape": (2, 2)}])
def test_not_an_array(bad):
    with pytest.raises(cute_gemm.NotAnArrayError, match="not an array"):
        cute_gemm.run("naive", bad, rnd(2, 2))


def test_ndim():
    with pytest.raises(cute_gemm.ShapeError, match="2 or more dimensions"):
        cute_gemm.run("naive", rnd(2, 2), rnd(2))
    with pytest.raises(cute_gemm.ShapeError, match="computes one 2-D product"):
        cute_gemm.run("naive", rnd(2, 2, 2), rnd(2, 2, 2))


def test_inner_dimensions():
    with pytest.raises(cute_gemm.ShapeError, match="inner dimensions differ"):
        cute_gemm.run("cute_smem", rnd(3, 4), rnd(5, 6))


def test_c_and_out_shapes():
    with pytest.raises(cute_gemm.ShapeError, match=r"c must have shape \(3, 6\)"):
        cute_gemm.run("naive", rnd(3, 4), rnd(4, 6), rnd(6, 3), beta=1.0)
    with pytest.raises(cute_gemm.ShapeError, match=r"out must have shape \(3, 6\)"):
        cute_gemm.run("naive", rnd(3, 4), rnd(4, 6), out=rnd(3, 5))


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.complex64])
def test_unsupported_dtype_lists_supported(dtype):
    with pytest.raises(cute_gemm.DTypeError) as e:
        cute_gemm.run("naive", rnd(3, 4).astype(dtype), rnd(4, 5))
    assert "float32" in str(e.value) and str(np.dtype(dtype)) in str(e.value)
    with pytest.raises(cute_gemm.DTypeError):
        cute_gemm.run("naive", FakeCAI((3, 4), typestr="<f8"), FakeCAI((4, 5)))


def test_unknown_kernel_before_inputs():
    with pytest.raises(cute_gemm.UnknownKernelError, match="valid kernels: .*naive"):
        cute_gemm.run("nope", rnd(2, 2), rnd(2, 2))


def test_read_only_out_and_bad_scalars():
    out = rnd(2, 2)
    out.flags.writeable = False
    with pytest.raises(cute_gemm.InputError, match="read-only"):
        cute_gemm.run("naive", rnd(2, 2), rnd(2, 2), out=out)
    with pytest.raises(cute_gemm.InputError, match="alpha"):
        cute_gemm.run("naive", rnd(2, 2), rnd(2, 2), alpha="2")
    with pytest.raises(cute_gemm.InputError, match="beta"):
        cute_gemm.run("naive", rnd(2, 2), rnd(2, 2), beta=None)


def test_mixing_host_and_device():
    with pytest.raises(cute_gemm.InputError, match="mixing host and device"):
        cute_gemm.run("naive", rnd(2, 3), FakeCAI((3, 4)))


def test_exceptions_are_named_and_rooted():
    for exc in (cute_gemm.NotAnArrayError, cute_gemm.ShapeError, cute_gemm.DTypeError,
                cute_gemm.ShapeLimitError, cute_gemm.CompileError, cute_gemm.NoDeviceError,
                cute_gemm.UnknownKernelError, cute_gemm.CudaError):
        assert issubclass(exc, cute_gemm.CuteGemmError)


def test_parse_cai_strides_and_majorness():
    a = parse("a", FakeCAI((5, 7)))                       # C-contiguous, strides None
    assert a.strides == (7, 1) and a.major("k", "m") == "k"
    t = parse("a", FakeCAI((5, 7), strides=(4, 20)))      # a transposed view
    assert t.strides == (1, 5) and t.major("k", "m") == "m"
    g = parse("a", FakeCAI((5, 7), strides=(56, 8)))      # every other column
    assert g.strides == (14, 2) and g.major("k", "m") is None
    with pytest.raises(cute_gemm.ShapeError, match="multiple of 4"):
        parse("a", FakeCAI((5, 7), strides=(30, 2)))


def test_parse_numpy_views():
    x = rnd(6, 8)
    assert parse("a", x).strides == (8, 1)
    assert parse("a", x.T).strides == (1, 8)
    assert parse("a", x[:, ::2]).strides == (8, 2)
    assert parse("a", np.asfortranarray(x)).major("k", "m") == "m"


def _choose(name, a, b, c):
    k = registry.get(name)
    return resolve.choose(k, {"a": parse("a", a), "b": parse("b", b), "c": parse("c", c)})


def test_choose_takes_strides_without_copies_where_the_kernel_can():
    v, copies = _choose("naive", FakeCAI((64, 32)), FakeCAI((32, 16), strides=(4, 128)), FakeCAI((64, 16)))
    assert copies == []                                    # naive takes any strides
    v, copies = _choose("cute_smem", FakeCAI((64, 32), strides=(4, 256)), FakeCAI((32, 16)), FakeCAI((64, 16)))
    assert v.entry == "cute_smem_am_bn" and copies == []   # column-major A: its own entry
    v, copies = _choose("cute_smem", FakeCAI((64, 32)), FakeCAI((32, 16), strides=(4, 128)), FakeCAI((64, 16)))
    assert v.entry == "cute_smem_ak_bk" and copies == []


def test_choose_copies_only_what_needs_it():
    # a kernel that takes row-major only: a column-major B must be copied, A must not
    k = registry.Kernel(name="rowonly", family="handwritten", source="x.cu",
                        variants=(registry.Variant("vec", align=4), registry.Variant("scalar")),
                        block=(256, 1, 1), grid=registry.TileGrid(64, 64), summary="s", seed="s")
    ops = {"a": parse("a", FakeCAI((64, 32))), "b": parse("b", FakeCAI((32, 16), strides=(4, 128))),
           "c": parse("c", FakeCAI((64, 16)))}
    v, copies = resolve.choose(k, ops)
    assert v.entry == "vec" and copies == ["b"]
    # K = 30: leading dimension of A not a multiple of 4 -> the scalar entry, no copies
    ops = {"a": parse("a", FakeCAI((64, 30))), "b": parse("b", FakeCAI((30, 16))),
           "c": parse("c", FakeCAI((64, 16)))}
    v, copies = resolve.choose(k, ops)
    assert v.entry == "scalar" and copies == []
    # a pointer off by one float: not 16-byte aligned
    ops["a"] = parse("a", FakeCAI((64, 32), ptr=0x7F0000000004))
    ops["b"] = parse("b", FakeCAI((32, 16)))
    v, copies = resolve.choose(k, ops)
    assert v.entry == "scalar"


@pytest.mark.skipif(GPU_SKIP_REASON is None, reason="a GPU is present: the no-GPU path cannot be shown")
def test_no_gpu_error_says_compile_only_still_works(monkeypatch):
    monkeypatch.undo()          # let it reach the (absent) driver
    with pytest.raises(cute_gemm.NoDeviceError) as e:
        cute_gemm.run("naive", rnd(4, 4), rnd(4, 4))
    assert "compile" in str(e.value)
    assert cute_gemm.gpu_available() is False


def test_choose_sends_strided_operands_to_any_stride_entries():
    # every other column of A: no unit stride, so only an "any" entry takes it without a copy
    k = registry.get("naive")
    ops = {"a": parse("a", FakeCAI((64, 32), strides=(512, 8))), "b": parse("b", FakeCAI((32, 16))),
           "c": parse("c", FakeCAI((64, 16)))}
    v, copies = resolve.choose(k, ops)
    assert v.entry == "naive" and copies == []
    rowonly = registry.Kernel(name="rowonly", family="handwritten", source="x.cu",
                              variants=(registry.Variant("scalar"),), block=(256, 1, 1),
                              grid=registry.TileGrid(64, 64), summary="s", seed="s")
    v, copies = resolve.choose(rowonly, ops)
    assert copies == ["a"]


# extents on either side of every boundary choose reads of one: 1, the alignments, a row of
# 8 lines at each itemsize (256, 512, 1024 elements)
_EXTENTS = [1, 2, 3, 4, 8, 15, 16, 17, 31, 33, 64, 100, 127, 128, 129, 136, 255, 256, 257,
            264, 511, 512, 513, 520, 1000, 1023, 1024, 1025, 1032, 1040, 4096, 4100, 8191]


def _class_cases(per: int):
    """(kernel, precision, out_dtype, m, n, k, layout), `per` random ones for each registered
    kernel and each precision and result type it computes, in random order of classes."""
    rng = np.random.default_rng()
    for k in registry.kernels():
        for p, o in sorted({(v.precision, v.out_dtype) for v in k.variants}):
            for _ in range(per):
                m, n, kk = (int(rng.choice(_EXTENTS)) for _ in range(3))
                yield k, p, o, m, n, kk, str(rng.choice(["nn", "tn", "nt", "tt"])), rng


def test_choose_answers_as_choose_exactly_on_every_call_of_its_class():
    """choose keeps its answers per class of calls (each operand's major and alignment, an
    extent by its residue mod PAD between thresholds): operands contiguous or as views of
    wider ones, each answer, fresh or kept, is choose_exactly's."""
    for k, p, o, m, n, kk, layout, rng in _class_cases(160):
        ops = resolve.contiguous(m, n, kk, layout, p, o)
        for op in ops.values():     # some as views: pitch and pointer off by a few
            if rng.random() < 0.3:
                s0, s1 = op.strides
                pad = int(rng.integers(1, 9))
                op.strides = (s0 + pad, 1) if s1 == 1 else (1, s1 + pad)
                op.ptr += op.itemsize * int(rng.integers(0, 9))
        want = resolve.choose_exactly(k, ops, p, o)
        assert resolve.choose(k, ops, p, o) == (want[0], list(want[1])), (k.name, m, n, kk, p, o)


def test_choose_contiguous_answers_as_choose_exactly_on_every_shape_of_its_class():
    """choose_contiguous (the heuristic's question, fresh contiguous operands) keeps its
    answers per class of extents: each is choose_exactly's on the exact shape."""
    for k, p, o, m, n, kk, layout, _ in _class_cases(80):
        want = resolve.choose_exactly(k, resolve.contiguous(m, n, kk, layout, p, o), p, o)
        assert (resolve.choose_contiguous(k, m, n, kk, layout, p, o)
                == (want[0], list(want[1]))), (k.name, m, n, kk, layout, p, o)


def test_every_alignment_divides_pad():
    """What choose's shape classes rest on: an extent's residue mod PAD decides every
    alignment and extent_align test."""
    for k in registry.kernels():
        for v in k.variants:
            assert all(resolve.PAD % (v.align if r in v.align_roles else 1) == 0 for r in "abc"), (k.name, v.entry)
            assert resolve.PAD % v.extent_align == 0, (k.name, v.entry)

"""Operand types and precisions, without a GPU: which (type, precision, result type) a call
asks for, the named errors for what no kernel computes, the rounding helpers, and the
copies into the layout a tensor-core entry point wants."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cute_gemm
from cute_gemm import check, registry
from cute_gemm.plan import resolve
from cute_gemm.driver.arrays import narrow, parse, widen
from cute_gemm.registry.records import TmaBoxes, Variant
from test_validation import FakeCAI, no_device_calls  # noqa: F401  (autouse: no driver calls)


def rnd(*shape, dtype=np.float32):
    return np.random.default_rng().standard_normal(shape).astype(dtype)


def test_float16_operands_on_a_float32_kernel_name_what_it_computes():
    with pytest.raises(cute_gemm.DTypeError, match=r"'naive' computes fp32 \(float32 in"):
        cute_gemm.run("naive", rnd(3, 4, dtype=np.float16), rnd(4, 5, dtype=np.float16))
    with pytest.raises(cute_gemm.DTypeError, match="naive"):
        cute_gemm.run("naive", FakeCAI((3, 4), typestr="<f2"), FakeCAI((4, 5), typestr="<f2"),
                      out=FakeCAI((3, 5), typestr="<f2"))


def test_tf32_is_asked_for_by_name_only():
    a, b = rnd(3, 4), rnd(4, 5)
    with pytest.raises(cute_gemm.DTypeError, match="'naive' computes fp32.*not tf32"):
        cute_gemm.run("naive", a, b, precision="tf32")
    with pytest.raises(cute_gemm.InputError, match="precision must be one of"):
        cute_gemm.run("naive", a, b, precision="tf16")
    with pytest.raises(cute_gemm.DTypeError, match="'bf16' reads bfloat16 operands; a and b are float32"):
        cute_gemm.run("naive", a, b, precision="bf16")


def test_fp32_3xtf32_is_named_in_the_errors_and_reads_float32_only():
    a, b = rnd(3, 4), rnd(4, 5)
    with pytest.raises(cute_gemm.DTypeError, match=r"'naive' computes fp32 \(float32 in, float32 "
                                                   r"out\); not fp32_3xtf32 into float32; kernels "
                                                   r"that do: cute_3xtf32$"):
        cute_gemm.run("naive", a, b, precision="fp32_3xtf32")
    with pytest.raises(cute_gemm.DTypeError, match=r"'cute_3xtf32' computes fp32_3xtf32 \(float32 "
                                                   r"in, float32 out\); not tf32 into float32; "
                                                   r"kernels that do: .*cute_wgmma_ws"):
        cute_gemm.run("cute_3xtf32", a, b, precision="tf32")
    with pytest.raises(cute_gemm.DTypeError, match="'cute_3xtf32' computes fp32_3xtf32.*not fp16"):
        cute_gemm.run("cute_3xtf32", rnd(3, 4, dtype=np.float16), rnd(4, 5, dtype=np.float16))
    with pytest.raises(cute_gemm.DTypeError, match="'fp32_3xtf32' reads float32 operands; a and "
                                                   "b are float16"):
        cute_gemm.run("cute_3xtf32", rnd(3, 4, dtype=np.float16), rnd(4, 5, dtype=np.float16),
                      precision="fp32_3xtf32")
    with pytest.raises(cute_gemm.DTypeError, match="result of fp32_3xtf32 on float32 operands "
                                                   "is float32, not float16"):
        cute_gemm.run("cute_3xtf32", a, b, out=rnd(3, 5, dtype=np.float16))
    with pytest.raises(cute_gemm.InputError, match="precision must be one of fp32, tf32, bf16, "
                                                   "fp16, fp32_3xtf32, fp8_e4m3, fp8_e5m2, "
                                                   "fp8_e4m3_e5m2, fp8_e5m2_e4m3, got '3xtf32'"):
        cute_gemm.run("cute_3xtf32", a, b, precision="3xtf32")
    assert check.unit("fp32_3xtf32") == check.unit("fp32") == check.EPS


def test_mixed_operand_and_result_types_are_refused():
    with pytest.raises(cute_gemm.DTypeError, match="a is float16 and b is float32"):
        cute_gemm.run("naive", rnd(3, 4, dtype=np.float16), rnd(4, 5))
    with pytest.raises(cute_gemm.DTypeError, match="result of fp32 on float32 operands is "
                                                   "float32, not float16"):
        cute_gemm.run("naive", rnd(3, 4), rnd(4, 5), out=rnd(3, 5, dtype=np.float16))
    with pytest.raises(cute_gemm.DTypeError, match="c is float16 and out is float32"):
        cute_gemm.run("naive", rnd(3, 4, dtype=np.float16), rnd(4, 5, dtype=np.float16),
                      rnd(3, 5, dtype=np.float16), beta=1.0, out=rnd(3, 5))


def test_cai_strides_and_alignment_in_units_of_the_element():
    op = parse("a", FakeCAI((3, 4), strides=(16, 2), typestr="<f2"))
    assert (op.dtype, op.strides, op.itemsize) == ("float16", (8, 1), 2)
    assert op.span() == (op.ptr, op.ptr + 2 * (2 * 8 + 3 + 1))
    with pytest.raises(cute_gemm.ShapeError, match="multiple of 2"):
        parse("a", FakeCAI((3, 4), strides=(9, 2), typestr="<f2"))
    with pytest.raises(cute_gemm.InputError, match="not 2-byte aligned"):
        parse("a", FakeCAI((3, 4), typestr="<f2", ptr=0x7F0000000001))


def test_bfloat16_rounds_to_nearest_even_and_widens_exactly():
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-9, -2.5, 3.0e38, np.inf,
                  -np.inf, 2**-130], dtype=np.float32)
    got = widen(narrow(x, "bfloat16"), "bfloat16")
    # ties go to the even neighbour; 3e38 stays finite (bf16 has float32's exponent range)
    want = np.array([1.0, 1.0, 1.0 + 4 * 2**-8, 1.0, -2.5, 3.00405527e38, np.inf, -np.inf,
                     2**-130], dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-7)
    assert got[1] == 1.0 and got[2] == 1.0 + 4 * 2**-8
    assert np.isnan(widen(narrow(np.array([np.nan], np.float32), "bfloat16"), "bfloat16")[0])
    r = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
    err = np.abs(widen(narrow(r, "bfloat16"), "bfloat16") - r) / np.abs(r)
    assert err.max() <= 2.0**-8
    assert np.array_equal(widen(narrow(r, "float16"), "float16"), r.astype(np.float16).astype(np.float32))


def test_exact_mode_compares_with_the_reference_rounded_into_the_result_type():
    ref = np.array([[257.0, 3.0]])          # 257 is not a bfloat16: it rounds to 256
    c = np.array([[256.0, 3.0]], dtype=np.float32)
    assert check.judge("k", c, ref, np.abs(ref), True, check.unit("bf16", "bfloat16"),
                       "bfloat16").status == "pass"
    assert check.judge("k", c, ref, np.abs(ref), True).status == "FAIL"
    assert check.unit("tf32") == 2.0**-11 and check.unit("bf16") == 2.0**-8
    assert check.unit("fp32", "float32") == check.EPS


TC = registry.Kernel(
    name="tc_demo", family="cute", source="cute/c0_gmem.cu", block=(128, 1, 1),
    grid=registry.TileGridMN(64, 64), summary="-", seed="-", min_arch=90, arch_specific=True,
    variants=(Variant("tf32_kk", a_major="k", b_major="k", c_major="any", align=4,
                      align_roles="ab", precision="tf32", tma=TmaBoxes((32, 64), (32, 64))),
              Variant("bf16_kn", a_major="k", b_major="n", c_major="any", align=8,
                      align_roles="ab", precision="bf16", out_dtype="bfloat16")))


def test_a_copy_goes_into_the_major_the_entry_point_wants_padded_and_aligned():
    """TF32 takes only k-major B: a row-major B is copied column-major, its leading
    dimension padded to the entry's alignment (TMA wants 16-byte strides), no further."""
    ops = {"a": parse("a", FakeCAI((50, 37))), "b": parse("b", FakeCAI((37, 21))),
           "c": parse("c", FakeCAI((50, 21)))}
    v, copies = resolve.choose(TC, ops, "tf32", "float32")
    assert v.entry == "tf32_kk" and copies == ["a", "b"]     # A: ld 37 is not 4-aligned
    assert resolve.copy_strides("b", "k", (37, 21), 4) == (1, 40)
    assert resolve.copy_strides("a", "k", (50, 37), 4) == (40, 1)
    assert resolve.copy_strides("a", "m", (50, 37), 8) == (1, 56)
    assert resolve.copy_strides("b", "n", (2**30, 4), 4) == (4, 1)    # skinny: no inflation
    # rows of 8 lines (1 KiB) or more start on a 128-byte line: +1/8 at most
    assert resolve.copy_strides("a", "k", (257, 1025), 4, 4) == (1056, 1)
    assert resolve.copy_strides("a", "k", (257, 1025), 8, 2) == (1088, 1)
    assert resolve.copy_strides("b", "k", (300, 37), 4, 4) == (1, 320)
    assert resolve.copy_strides("b", "k", (250, 37), 4, 4) == (1, 252)    # 1000 bytes
    assert resolve.copy_target(v, "a", (8191, 1025)) == ("k", (1056, 1))
    ops["a"] = parse("a", FakeCAI((50, 40)))
    ops["b"] = parse("b", FakeCAI((40, 21), strides=(4, 160)))    # column-major, ld 40
    assert resolve.choose(TC, ops, "tf32", "float32") == (TC.variants[0], [])


def test_cute_mma_sm80_reads_row_ends_and_its_small_configuration_any_alignment():
    """cute_mma_sm80 reads a row end element by element: an operand whose leading dimension
    is 16-byte aligned is taken as it is whatever its extents; one that is not is copied
    first. cute_mma_sm80_64x64 also has entries for 4-byte alignment (_al2) and any (_al1),
    taken in that order where the 16-byte one is not: no operand of its majors is copied."""
    half = dict(typestr="<f2")

    def chosen(name, lda, k_, ptr=0):
        ops = {"a": parse("a", FakeCAI((37, k_), strides=(2 * lda, 2), ptr=0x7F0000000000 + ptr, **half)),
               "b": parse("b", FakeCAI((k_, 24), strides=(48, 2), **half)),
               "c": parse("c", FakeCAI((37, 24)))}
        v, copies = resolve.choose(registry.get(name), ops, "fp16", "float32")
        assert (v.a_major, v.b_major) == ("k", "n")
        return v.entry, copies
    assert chosen("cute_mma_sm80", 16, 13) == ("cute_mma_sm80_fp16_f32_ak_bn", [])  # K = 13, ld 16
    assert chosen("cute_mma_sm80", 14, 13) == ("cute_mma_sm80_fp16_f32_ak_bn", ["a"])
    small = "cute_mma_sm80_64x64"
    assert chosen(small, 16, 13) == ("cute_mma_sm80_fp16_f32_ak_bn", [])
    assert chosen(small, 14, 13) == ("cute_mma_sm80_fp16_f32_ak_bn_al2", [])         # ld 28 bytes
    assert chosen(small, 16, 13, ptr=4) == ("cute_mma_sm80_fp16_f32_ak_bn_al2", [])   # 4-byte pointer
    assert chosen(small, 13, 13) == ("cute_mma_sm80_fp16_f32_ak_bn_al1", [])          # odd ld
    assert chosen(small, 16, 13, ptr=2) == ("cute_mma_sm80_fp16_f32_ak_bn_al1", [])   # odd pointer
    # tf32 (k-major operands): 4-byte copies take any float pointer and leading dimension
    ops = {"a": parse("a", FakeCAI((37, 13))), "b": parse("b", FakeCAI((13, 24), strides=(4, 52))),
           "c": parse("c", FakeCAI((37, 24)))}
    v, copies = resolve.choose(registry.get(small), ops, "tf32", "float32")
    assert (v.entry, copies) == ("cute_mma_sm80_tf32_f32_ak_bk_al1", [])


def test_each_precision_and_result_type_has_its_own_entry_points():
    ops = {"a": parse("a", FakeCAI((64, 64), typestr="<f2")),
           "b": parse("b", FakeCAI((64, 64), typestr="<f2")),
           "c": parse("c", FakeCAI((64, 64), typestr="<f2"))}
    with pytest.raises(cute_gemm.DTypeError, match=r"'tc_demo' computes tf32 \(float32 in, "
                                                   r"float32 out\), bf16 \(bfloat16 in, bfloat16 out\)"):
        resolve.choose(TC, ops, "fp16", "float16")
    assert TC.precisions == ("tf32", "bf16") and TC.dtypes == ("float32", "bfloat16")
    assert TC.archs == ("sm_90a",) and TC.target(90) == "sm_90a"
    plain = dataclasses.replace(TC, arch_specific=False, min_arch=80)
    assert plain.archs == ("sm_80", "sm_90") and plain.target(90) == "sm_90"


def test_every_tensor_core_kernel_takes_any_operand_after_a_copy():
    """For each precision and result type a kernel offers, some entry point takes every
    operand once run() has copied it (the major it wants, padded, 256-byte aligned)."""
    for k in registry.kernels():
        for v in k.variants:
            for r in "abc":
                want = getattr(v, f"{r}_major")
                assert want in (("k", "m", "any") if r == "a" else ("n", "k", "any") if r == "b"
                                else ("n", "m", "any")), (k.name, v.entry)
                assert (v.align if r in v.align_roles else 1) <= resolve.PAD, (k.name, v.entry)
            if v.tma is not None:
                assert v.precision != "fp32" and v.a_major != "any" and v.b_major != "any"


def test_opaque_two_byte_void_is_bfloat16_only_when_the_array_says_so():
    """PyTorch 2.11 exports bfloat16 through __cuda_array_interface__ as "<V2"."""
    class TorchLike(FakeCAI):
        dtype = "torch.bfloat16"
    op = parse("a", TorchLike((3, 4), strides=(8, 2), typestr="<V2"))
    assert (op.dtype, op.strides) == ("bfloat16", (4, 1))
    with pytest.raises(cute_gemm.DTypeError, match="<V2"):
        parse("a", FakeCAI((3, 4), typestr="<V2"))

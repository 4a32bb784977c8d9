"""The precision table (cute_gemm/base/precisions.py), without a GPU: its rows agree with the
kernels that compute them (precisions and result types of every entry point, the C++ types
and entry-name suffixes in the sources, scale2d's instances), with numpy's own figures for
the types it has, and every view and rule the layers read is the table's."""
from __future__ import annotations

import re
import typing
from pathlib import Path

import numpy as np
import pytest

from cute_gemm import check, registry
from cute_gemm.base import precisions
from cute_gemm.build import paths
from cute_gemm.plan import resolve
from cute_gemm.registry import records
from cute_gemm.driver.arrays import SUPPORTED_DTYPES, host_dtype
from cute_gemm.perf.schema import CUBLAS_PEER
from cute_gemm.perf.stats import precision_peaks
from cute_gemm.base.precisions import ACCUMULATOR, DTYPE, PRECISION

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _source(path: str) -> str:
    return (paths.kernels_dir() / path).read_text()


def _cpp(name: str) -> str:
    return name.removeprefix("cute::")     # c4 names CuTe's types inside namespace cute


def test_literals_and_views_are_the_rows():
    assert typing.get_args(precisions.PrecisionName) == tuple(PRECISION) == records.PRECISIONS
    assert typing.get_args(precisions.DTypeName) == tuple(DTYPE) == SUPPORTED_DTYPES
    assert dict(records.PRECISION_DTYPE) == {n: p.dtype for n, p in PRECISION.items()}
    assert dict(records.UNIT) == {n: p.unit for n, p in PRECISION.items()}
    assert dict(registry.ITEMSIZE) == {"float32": 4, "float16": 2, "bfloat16": 2,
                                       "float8_e4m3fn": 1, "float8_e5m2": 1}
    e4, e5 = "float8_e4m3fn", "float8_e5m2"
    assert dict(precisions.DEFAULT_PRECISION) == {
        ("float32", "float32"): "fp32", ("float16", "float16"): "fp16",
        ("bfloat16", "bfloat16"): "bf16", (e4, e4): "fp8_e4m3", (e5, e5): "fp8_e5m2",
        (e4, e5): "fp8_e4m3_e5m2", (e5, e4): "fp8_e5m2_e4m3"}
    assert registry.FP32_ACCURATE == ("fp32_3xtf32",)
    assert precisions.as_accurate("fp32") == ("fp32", "fp32_3xtf32")    # never tf32 unasked
    assert precisions.as_accurate("bf16") == ("bf16",)
    assert CUBLAS_PEER == {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16",
                           "fp32_3xtf32": "fp32", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2",
                           "fp8_e4m3_e5m2": "fp8_e4m3_e5m2", "fp8_e5m2_e4m3": "fp8_e5m2_e4m3"}
    with pytest.raises(TypeError):
        PRECISION["fp32"] = PRECISION["tf32"]                           # read-only


def test_the_table_keeps_its_rules():
    """What a new row must satisfy: every type a DType row, outs starting with the accumulator
    and not repeating, a benchmark peer that is a precision, one implied precision per operand
    type, the Literals equal to the rows."""
    assert typing.get_args(precisions.PrecisionName) == precisions.PRECISIONS
    assert typing.get_args(precisions.DTypeName) == precisions.DTYPES
    for p in PRECISION.values():
        assert p.dtype in DTYPE and all(o in DTYPE for o in p.outs), p.name
        assert p.outs[0] == ACCUMULATOR and len(set(p.outs)) == len(p.outs), p.name
        assert p.peer in PRECISION, p.name
    for pair in {(p.dtype, p.b_dtype) for p in PRECISION.values()}:    # one implied per (A, B)
        assert sum(p.implied for p in PRECISION.values() if (p.dtype, p.b_dtype) == pair) == 1, pair


def test_every_entry_point_computes_a_row_into_one_of_its_results():
    for k in registry.compiled():
        for v in k.variants:
            p = PRECISION[v.precision]
            assert v.out_dtype in p.outs, (k.name, v.entry)
            assert v.dtype == p.dtype
            if v.tma is not None:           # TMA only where the table names how it loads
                assert p.tma in ("TFLOAT32", "BFLOAT16", "FLOAT16", "UINT8"), v.entry


def test_native_types_agree_with_numpy():
    for d in DTYPE.values():
        if d.numpy:
            fi = np.finfo(d.storage)
            assert (d.itemsize, d.unit) == (fi.bits // 8, fi.eps / 2), d.name
            assert host_dtype(np.dtype(d.storage)) == d.name
            assert d.typestr == np.dtype(d.storage).str
        assert np.dtype(d.storage).itemsize == d.itemsize
    assert DTYPE["float16"].tiny == np.finfo(np.float16).smallest_subnormal
    assert host_dtype(np.dtype(">f4")) is None and host_dtype(np.dtype(np.int32)) is None
    # a precision's unit covers rounding its operands into their type, except 8-bit operands,
    # taken as they are (nothing is rounded into them: the sum is what errs)
    assert all(p.unit >= DTYPE[p.dtype].unit for p in PRECISION.values() if p.itemsize > 1)


def test_fill_bits_of_every_type():
    nan = {n: d.bits(float("nan")) for n, d in DTYPE.items()}
    assert nan == {"float32": 0x7FC00000, "float16": 0x7E00, "bfloat16": 0x7FC0,
                   "float8_e4m3fn": 0x7F, "float8_e5m2": 0x7F}
    assert [d.bits(1.0) for d in DTYPE.values()] == [0x3F800000, 0x3C00, 0x3F80, 0x38, 0x3C]


def test_the_gauge_and_the_peaks_read_the_table():
    for name in PRECISION:
        for out in PRECISION[name].outs:
            old = max(records.UNIT[name], 2.0**-11 if out == "float16" else
                      2.0**-8 if out == "bfloat16" else 0.0)
            assert check.unit(name, out) == old
    assert precision_peaks(60.0, 90) == {"fp32": 60.0, "tf32": 480.0, "bf16": 960.0,
                                         "fp16": 960.0, "fp32_3xtf32": 320.0,
                                         "fp8_e4m3": 1920.0, "fp8_e5m2": 1920.0,
                                         "fp8_e4m3_e5m2": 1920.0, "fp8_e5m2_e4m3": 1920.0}
    assert precision_peaks(60.0, 75) == {"fp32": 60.0, "tf32": None, "bf16": None,
                                         "fp16": None, "fp32_3xtf32": None,
                                         "fp8_e4m3": None, "fp8_e5m2": None,
                                         "fp8_e4m3_e5m2": None, "fp8_e5m2_e4m3": None}
    assert [p.timed_out for p in PRECISION.values()] == ["float32", "float32", "bfloat16",
                                                     "float16", "float32", "float32", "float32",
                                                     "float32", "float32"]


def test_scale2d_instantiates_every_util_entry():
    src = _source("util/scale2d.cu")
    made = set(re.findall(r"^CG_SCALE2D\((\w+),", src, re.M))
    assert made == set(resolve.UTIL_ENTRY.values())
    assert resolve.UTIL_ENTRY[ACCUMULATOR, ACCUMULATOR] == "scale2d"
    assert resolve.UTIL_ENTRY["float16", "float32"] == "scale2d_fp16_f32"


def test_kernel_sources_use_the_tables_types_and_suffixes():
    """c4/c5/c6 instantiate (precision, A/B type, result suffix, C type) by the table's names:
    c4's 16-bit ones in each of its three alignment classes, its tf32 ones one by one."""
    by_suffix = {d.suffix: d for d in DTYPE.values()}
    seen = 0
    for path, macro in (("cute/c4_mma_sm80.cu", "CG_MMA_16BIT"), ("cute/c5_wgmma.cu", "CG_WGMMA_16BIT"),
                        ("cute/c6_wgmma_ws.cu", "CG_WGMMA_WS_16BIT")):
        for prec, tab, out, tc in re.findall(rf"^{macro}\((\w+), ([\w:]+), (\w+), ([\w:]+)[,)]",
                                             _source(path), re.M):
            assert _cpp(tab) == _cpp(DTYPE[PRECISION[prec].dtype].cpp), (path, prec)
            assert _cpp(tc) == _cpp(by_suffix[out].cpp) and by_suffix[out].name in PRECISION[prec].outs
            seen += 1
    for entry, tab, tc in re.findall(r"^CG_MMA_ENTRY\((\w+), ([\w:]+), ([\w:]+),",
                                     _source("cute/c4_mma_sm80.cu"), re.M):
        prec, out = re.fullmatch(r"cute_mma_sm80_(\w+?)_(\w+?)_ak_bk(?:_al1)?", entry).groups()
        assert _cpp(tab) == _cpp(DTYPE[PRECISION[prec].dtype].cpp), entry
        assert _cpp(tc) == _cpp(by_suffix[out].cpp) and by_suffix[out].name in PRECISION[prec].outs
        seen += 1
    assert seen == 12 + 8 + 2


def test_tma_data_types_exist_in_the_bindings():
    drv = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings not installed")
    for p in PRECISION.values():
        assert hasattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{p.tma}"), p.name


def test_the_guide_has_a_row_per_precision():
    text = (DOCS / "guide" / "precisions.md").read_text()
    for name in PRECISION:
        assert f"| `{name}` |" in text, name

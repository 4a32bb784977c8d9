"""The precisions (a call's arithmetic) and element types (what A, B or C hold): one table
each, one row each, that every layer reads; the names below the tables (PRECISIONS, UNIT, ...)
are views of one column. Entry points spell a precision by name and a result type by
DType.suffix (scale2d_fp16_f32). Adding one: docs/howto/precision.md."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Literal

import numpy as np


def _bf16_from_bits(raw: np.ndarray) -> np.ndarray:
    # a bfloat16 is the upper half of a float32: widening is exact
    return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def _bf16_to_bits(x: np.ndarray) -> np.ndarray:
    u = x.view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16        # round to nearest even
    r = np.where(np.isnan(x), (u >> 16) | 0x40, r)              # NaN stays NaN (quiet)
    return r.astype(np.uint16)


class _Fp8:
    """An 8-bit float's bits <-> float32 values (numpy has no such type), as PyTorch's
    `.to(torch.float8_*)` converts: round to nearest even; past the largest finite value
    e4m3fn (no infinities) saturates to ±448 (±Inf too), e5m2 rounds to ±Inf from 61440 (its
    largest finite plus half an ulp) on; NaN stays NaN."""

    def __init__(self, man: int, bias: int, finite: bool):
        bits = np.arange(256, dtype=np.uint32)
        e, m = (bits & 0x7F) >> man, bits & ((1 << man) - 1)
        mag = np.where(e == 0, m * 2.0 ** (1 - bias - man),
                       (1 + m / 2.0 ** man) * 2.0 ** (e.astype(np.int64) - bias))
        top = 0x7F >> man                                   # the largest exponent field
        if finite:                                          # e4m3fn: only S.1111.111 is NaN
            mag = np.where((bits & 0x7F) == 0x7F, np.nan, mag)
        else:                                               # e5m2: IEEE-like Inf and NaNs
            mag = np.where(e == top, np.where(m == 0, np.inf, np.nan), mag)
        self.values = np.where(bits & 0x80, -mag, mag).astype(np.float32)
        ok = np.isfinite(self.values[:128])
        self.finite = self.values[:128][ok]                 # the non-negative finite values, ascending
        self.codes = bits[:128][ok].astype(np.uint8)
        self.nan = np.uint8(0x7F)
        self.over = self.codes[-1] if finite else np.uint8(0x7C)   # past the range: 448, or Inf
        self.limit = self.finite[-1] + (self.finite[-1] - self.finite[-2]) / 2   # half an ulp past

    def from_bits(self, raw: np.ndarray) -> np.ndarray:
        return self.values[raw.view(np.uint8)]

    def to_bits(self, x: np.ndarray) -> np.ndarray:
        a = np.abs(x)
        i = np.clip(np.searchsorted(self.finite, a), 1, len(self.finite) - 1)
        lo, hi = self.finite[i - 1], self.finite[i]
        up = (a - lo > hi - a) | ((a - lo == hi - a) & (self.codes[i - 1] & 1 == 1))
        code = np.where(up, self.codes[i], self.codes[i - 1])
        code = np.where(a >= self.limit if self.over == 0x7C else a > self.finite[-1], self.over, code)
        code = np.where(np.isnan(x), self.nan, code)
        return (code | np.where(np.signbit(x), 0x80, 0).astype(np.uint8)).astype(np.uint8)


_E4M3, _E5M2 = _Fp8(3, 7, finite=True), _Fp8(2, 15, finite=False)


@dataclass(frozen=True)
class DType:
    """An element type of A, B or C: how the host, the array libraries and the kernels name
    and hold it, and what rounding into it costs."""
    name: str          # numpy's name (bfloat16: ml_dtypes'), as users and arrays.Operand say it
    itemsize: int      # bytes
    suffix: str        # how entry points spell it: scale2d_fp16_f32, cute_wgmma_bf16_f32_ak_bk
    cpp: str           # its C++ type in the kernels (include/cute_gemm/common.cuh: TAB, TC)
    unit: float        # unit roundoff of rounding a value into it (a result's, check.unit)
    tiny: float        # absolute rounding error below its normal range (0: float32's range)
    storage: type      # the numpy type holding it on the host: itself, or its bits as uints
    typestr: str       # its __cuda_array_interface__ typestr; "": none standard (an opaque "<V2")
    torch: str         # torch.<torch>
    cupy: bool         # CuPy has it (a result for CuPy operands is made by CuPy)
    # float32 values <-> storage bits, where numpy has no such type (None: numpy's astype)
    from_bits: Callable[[np.ndarray], np.ndarray] | None = None
    to_bits: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def numpy(self) -> bool:
        """numpy has the type itself (storage is it)."""
        return self.from_bits is None

    def widen(self, raw: np.ndarray) -> np.ndarray:
        """float32 values of raw elements held as storage (or as ml_dtypes' type)."""
        return raw.astype(np.float32) if self.numpy else self.from_bits(raw)

    def narrow(self, x) -> np.ndarray:
        """float32 values rounded to nearest even into this type, as storage."""
        x = np.asarray(x, dtype=np.float32)
        return x.astype(self.storage, copy=False) if self.numpy else self.to_bits(x)

    def bits(self, value: float) -> int:
        """The bits of `value` rounded into this type (a fill pattern for a memset)."""
        return int(self.narrow(np.array([value], np.float32)).view(f"u{self.itemsize}")[0])


DTypeName = Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
DTYPE = MappingProxyType({d.name: d for d in (
    #     name        size suffix  cpp                 unit      tiny      storage     typestr
    DType("float32",  4,   "f32",  "float",            2.0**-24, 0.0,      np.float32, "<f4",
          torch="float32", cupy=True),
    DType("float16",  2,   "fp16", "cute::half_t",     2.0**-11, 2.0**-24, np.float16, "<f2",
          torch="float16", cupy=True),
    DType("bfloat16", 2,   "bf16", "cute::bfloat16_t", 2.0**-8,  0.0,      np.uint16,  "",
          torch="bfloat16", cupy=False, from_bits=_bf16_from_bits, to_bits=_bf16_to_bits),
    # 8-bit floats: 3 and 2 mantissa bits; tiny, half the subnormal spacing (2^-9, 2^-16)
    DType("float8_e4m3fn", 1, "e4m3", "cute::float_e4m3_t", 2.0**-4, 2.0**-10, np.uint8, "",
          torch="float8_e4m3fn", cupy=False, from_bits=_E4M3.from_bits, to_bits=_E4M3.to_bits),
    DType("float8_e5m2",   1, "e5m2", "cute::float_e5m2_t", 2.0**-3, 2.0**-17, np.uint8, "",
          torch="float8_e5m2", cupy=False, from_bits=_E5M2.from_bits, to_bits=_E5M2.to_bits),
)})

# every precision sums in float32 and can write that: a call's result without out or c, and
# the scratch of a composed or stand-in launch
ACCUMULATOR = "float32"
EPS = 2.0**-23          # float32's machine epsilon: fp32's gauge unit (the reference BLAS's)


@dataclass(frozen=True)
class Precision:
    """The arithmetic of a call. Entry points name it by `name`."""
    name: str
    dtype: str               # the element type of A (DTYPE), and of B unless dtype_b says
    unit: float              # unit roundoff its results are judged with (check.unit, stand_in)
    outs: tuple[str, ...]    # result types its entries write: ACCUMULATOR, then those rounded into
    tma: str                 # how TMA loads its operands: CU_TENSOR_MAP_DATA_TYPE_<tma>
    implied: bool            # what a call on `dtype` operands that names no precision gets
    tensor_cores: bool       # multiplies on tensor cores (auto.heuristic's tensor-core rules)
    peer: str                # the cuBLAS GEMM its benchmark rows stand beside (perf)
    peak: tuple[tuple[int, float], ...]   # (from arch, dense peak over the FP32 peak)
    dtype_b: str = ""        # B's element type where it differs from A's (mixed 8-bit)

    @property
    def b_dtype(self) -> str:
        """The element type of B."""
        return self.dtype_b or self.dtype

    @property
    def itemsize(self) -> int:
        """Bytes per element of A and B."""
        return DTYPE[self.dtype].itemsize

    @property
    def timed_out(self) -> str:
        """The result type its tables and benchmarks time: its operands' type where it may
        write it (bf16, fp16, as cuBLAS's half-precision GEMMs do), else its accumulator's."""
        return self.dtype if self.dtype in self.outs else self.outs[0]

    def peak_over_fp32(self, arch_int: int) -> float | None:
        """Its dense peak over the FP32 peak on compute capability `arch_int` (x10); None
        where it has none there."""
        return next((r for a, r in reversed(self.peak) if arch_int >= a), None)


# tf32 only by name; fp32_3xtf32 (three tf32 products) is held to fp32's gauge, so it answers
# for fp32 where a kernel has nothing else. Each row's figures and why: docs/howto/precision.md
PrecisionName = Literal["fp32", "tf32", "bf16", "fp16", "fp32_3xtf32", "fp8_e4m3", "fp8_e5m2",
                        "fp8_e4m3_e5m2", "fp8_e5m2_e4m3"]
_F32 = ("float32",)
_OUT16 = ("float32", "bfloat16", "float16")
PRECISION = MappingProxyType({p.name: p for p in (
    #         name           dtype       unit      outs                     tma
    #         implied tensor_cores peer    peak
    Precision("fp32",        "float32",  EPS,      _F32,                    "FLOAT32",
              True,   False,       "fp32", ((0, 1.0),)),
    Precision("tf32",        "float32",  2.0**-11, _F32,                    "TFLOAT32",
              False,  True,        "tf32", ((80, 8.0),)),
    Precision("bf16",        "bfloat16", 2.0**-8,  ("float32", "bfloat16"), "BFLOAT16",
              True,   True,        "bf16", ((80, 16.0),)),
    Precision("fp16",        "float16",  2.0**-11, ("float32", "float16"),  "FLOAT16",
              True,   True,        "fp16", ((80, 16.0),)),
    Precision("fp32_3xtf32", "float32",  EPS,      _F32,                    "FLOAT32",
              False,  True,        "fp32", ((80, 16.0 / 3),)),
    # the products of 8-bit operands are exact; the tensor core's sum of a window of 128 k
    # keeps ~14 bits (DeepSeek-V3 §3.3.2), promoted into float32 at its end (WgmmaWsConfig.promote)
    Precision("fp8_e4m3",    "float8_e4m3fn", 2.0**-13, _OUT16, "UINT8",
              True,   True,        "fp8_e4m3", ((89, 32.0),)),
    Precision("fp8_e5m2",    "float8_e5m2",   2.0**-13, _OUT16, "UINT8",
              True,   True,        "fp8_e5m2", ((89, 32.0),)),
    # one operand of each (a training step's gradients in e5m2 against e4m3 weights or
    # activations), as torch._scaled_mm takes them
    Precision("fp8_e4m3_e5m2", "float8_e4m3fn", 2.0**-13, _OUT16, "UINT8",
              True,   True,        "fp8_e4m3_e5m2", ((89, 32.0),), dtype_b="float8_e5m2"),
    Precision("fp8_e5m2_e4m3", "float8_e5m2",   2.0**-13, _OUT16, "UINT8",
              True,   True,        "fp8_e5m2_e4m3", ((89, 32.0),), dtype_b="float8_e4m3fn"),
)})

PRECISIONS: tuple[str, ...] = tuple(PRECISION)
DTYPES: tuple[str, ...] = tuple(DTYPE)
PRECISION_DTYPE = MappingProxyType({p.name: p.dtype for p in PRECISION.values()})     # A's
PRECISION_DTYPE_B = MappingProxyType({p.name: p.b_dtype for p in PRECISION.values()})
UNIT = MappingProxyType({p.name: p.unit for p in PRECISION.values()})
ITEMSIZE = MappingProxyType({d.name: d.itemsize for d in DTYPE.values()})
# the precision a call that names none gets: the one its operands' types (A's, B's) imply
DEFAULT_PRECISION = MappingProxyType({(p.dtype, p.b_dtype): p.name for p in PRECISION.values()
                                      if p.implied})
# held to the fp32 gauge besides fp32: taken unnamed for float32 operands on a kernel without
# fp32 (tf32, at 2^-11, never is)
FP32_ACCURATE: tuple[str, ...] = tuple(p.name for p in PRECISION.values()
                                       if p.unit <= EPS and not p.implied and p.dtype == "float32")


def as_accurate(name: str) -> tuple[str, ...]:
    """`name` and the other precisions on its operand type held to no larger a unit (fp32:
    fp32_3xtf32, never tf32): what may answer unasked a call whose type implies `name`, on a
    kernel that does not compute `name` itself."""
    p = PRECISION[name]
    return (name,) + tuple(q.name for q in PRECISION.values()
                           if q.name != name and (q.dtype, q.b_dtype) == (p.dtype, p.b_dtype)
                           and q.unit <= p.unit)

"""Operands: what an array is, where it lives, its strides — and a minimal device array.

Accepted: numpy arrays (host), anything with __cuda_array_interface__ (CuPy, PyTorch,
Numba, our DeviceArray) and anything with __dlpack__ (JAX, PyTorch, CuPy...). Parsing
allocates nothing and touches no device; validation errors are raised from here,
before any launch.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np

from .errors import DTypeError, InputError, NotAnArrayError, ShapeError

SUPPORTED_DTYPES = ("float32",)
_TYPESTR = {"<f4": "float32", "<f8": "float64", "<f2": "float16", "<i4": "int32",
            "<i8": "int64", "|u1": "uint8", "|i1": "int8", "<u4": "uint32", "<c8": "complex64"}
_KDLCPU, _KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED = 1, 2, 3, 13


@dataclass
class Operand:
    name: str                      # "a", "b", "c", "out" (for messages)
    obj: object
    device: bool                   # False: host numpy array
    ptr: int                       # device pointer (0 for host operands)
    shape: tuple[int, int]
    strides: tuple[int, int]       # in elements
    dtype: str
    readonly: bool = False
    host: np.ndarray | None = None
    stream: int | None = None      # CUDA Array Interface v3: the producer's stream, if any

    def span(self) -> tuple[int, int]:
        """[first, last + 1) byte addresses the operand's elements occupy ((0, 0) if empty)."""
        (r, c), (sr, sc) = self.shape, self.strides
        if r == 0 or c == 0:
            return 0, 0
        lo = min(0, (r - 1) * sr) + min(0, (c - 1) * sc)
        hi = max(0, (r - 1) * sr) + max(0, (c - 1) * sc) + 1
        return self.ptr + 4 * lo, self.ptr + 4 * hi

    def overlaps(self, other: "Operand") -> bool:
        """True if the byte ranges of the two operands intersect (conservative: interleaved
        views that share no element count as overlapping)."""
        a0, a1 = self.span()
        b0, b1 = other.span()
        return a0 < b1 and b0 < a1

    def same_view(self, other: "Operand") -> bool:
        """Every element at the same address in both: an exact in-place alias."""
        return (self.ptr == other.ptr and self.shape == other.shape
                and (self.strides == other.strides or self.shape[0] * self.shape[1] <= 1
                     or all(s1 == s2 for n, s1, s2 in zip(self.shape, self.strides, other.strides) if n > 1)))

    def self_overlapping(self) -> bool:
        """True if two elements share an address: i*s0 + j*s1 == 0 has a solution with
        0 < |i| < rows or 0 < |j| < cols; its smallest is (s1/g, s0/g), g = gcd."""
        (r, c), (sr, sc) = self.shape, (abs(self.strides[0]), abs(self.strides[1]))
        if r > 1 and c > 1:
            if sr == 0 or sc == 0:
                return True
            g = gcd(sr, sc)
            return sc // g < r and sr // g < c
        return (r > 1 and sr == 0) or (c > 1 and sc == 0)

    def major(self, row: str, col: str) -> str | None:
        """row if the rows are contiguous, col if the columns are, None otherwise.
        Size-1 dimensions impose nothing (their stride is never used)."""
        (r, c), (sr, sc) = self.shape, self.strides
        if (sc == 1 or c <= 1) and (sr >= c or r <= 1) and sr > 0:
            return row
        if (sr == 1 or r <= 1) and (sc >= r or c <= 1) and sc > 0:
            return col
        return None


def _unsupported(name: str, dtype) -> DTypeError:
    return DTypeError(f"{name} has dtype {dtype}; supported dtypes: {', '.join(SUPPORTED_DTYPES)}")


def _check_2d(name: str, shape) -> tuple[int, int]:
    if len(shape) != 2:
        raise ShapeError(f"{name} must be 2-D (got ndim={len(shape)}, shape={tuple(shape)})")
    r, c = int(shape[0]), int(shape[1])
    if r < 0 or c < 0:
        raise ShapeError(f"{name} has a negative extent (shape={tuple(shape)})")
    return r, c


def parse(name: str, obj, stream: int | None = None) -> Operand:
    """Describe one operand; raise NotAnArrayError / ShapeError / DTypeError / InputError on
    bad input. stream: the consumer stream, handed to DLPack producers (__dlpack__(stream=))."""
    if isinstance(obj, np.ndarray):
        shape = _check_2d(name, obj.shape)
        if obj.dtype != np.float32:
            raise _unsupported(name, obj.dtype)
        isz = obj.itemsize
        if any(s % isz for s in obj.strides):
            raise ShapeError(f"{name} has strides {obj.strides} that are not a multiple of its itemsize")
        return Operand(name, obj, False, 0, shape, tuple(s // isz for s in obj.strides), "float32",
                       not obj.flags.writeable, obj)
    if getattr(obj, "requires_grad", False) and callable(getattr(obj, "detach", None)):
        # an autograd tensor is read as its data, as torch.mm reads it; writing into one
        # behind autograd's back is refused, as torch refuses out= that requires grad
        if name == "out":
            raise InputError("out requires grad: pass out.detach(), or no out")
        obj = obj.detach()
    try:
        cai = getattr(obj, "__cuda_array_interface__", None)
    except Exception as e:   # a property that raises: not an array we can read
        raise NotAnArrayError(f"{name}: reading its __cuda_array_interface__ failed: {e}") from None
    if cai is not None:
        try:
            return _parse_cai(name, obj, cai)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            if isinstance(e, InputError):
                raise
            raise NotAnArrayError(f"{name} has a malformed __cuda_array_interface__ ({type(e).__name__}: {e})") from None
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        if int(dev_type) == _KDLCPU:
            return parse(name, np.from_dlpack(obj))
        if int(dev_type) not in (_KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED):
            raise NotAnArrayError(f"{name} lives on DLPack device type {int(dev_type)}; "
                                  "only CPU and CUDA arrays are supported")
        from .launch import dlpack_view
        ptr, shp, strides, dtype, _, ro = dlpack_view(obj, stream)
        shape = _check_2d(name, shp)
        if dtype != "float32":
            raise _unsupported(name, dtype)
        return _nonnull(Operand(name, obj, True, ptr, shape, strides, dtype, ro))
    raise NotAnArrayError(
        f"{name} is a {type(obj).__name__}, not an array: pass a numpy array or a device array "
        "(DLPack or __cuda_array_interface__: CuPy, PyTorch, JAX)")


def _parse_cai(name: str, obj, cai: dict) -> Operand:
    # run()'s path for device arrays: plain comparisons, no generators
    shape = _check_2d(name, cai["shape"])
    typestr = cai["typestr"]
    if typestr != "<f4":
        dtype = _TYPESTR.get(typestr, typestr)
        if dtype != "float32":
            raise _unsupported(name, dtype)
    if cai.get("mask") is not None:
        raise InputError(f"{name} is a masked array (__cuda_array_interface__ mask): not supported")
    ptr, ro = cai["data"]
    st = cai.get("strides")
    if st is None:
        strides = (shape[1], 1)
    else:
        s0, s1 = int(st[0]), int(st[1])
        if s0 % 4 or s1 % 4 or (len(st) > 2 and any(s % 4 for s in st[2:])):
            raise ShapeError(f"{name} has strides {tuple(st)} (bytes) that are not a multiple of 4")
        strides = (s0 // 4, s1 // 4)
    sv = cai.get("stream")   # v3: 1 legacy default, 2 per-thread default, else a handle
    return _nonnull(Operand(name, obj, True, int(ptr or 0), shape, strides, "float32", bool(ro),
                            stream=None if sv is None else int(sv)))


def _nonnull(op: Operand) -> Operand:
    if op.shape[0] * op.shape[1] > 0:
        if op.ptr == 0:
            raise InputError(f"{op.name} has a null data pointer (a closed or freed array?)")
        if op.ptr % 4:   # a float32 load there faults and takes the CUDA context with it
            raise InputError(f"{op.name}'s data pointer 0x{op.ptr:x} is not 4-byte aligned")
    return op


def to_numpy(name: str, obj) -> np.ndarray:
    """A float32 host copy of any accepted operand (numpy arrays are returned as they are)."""
    op = parse(name, obj)
    if not op.device:
        return op.host
    from .launch import memcpy_dtoh, synchronize
    lo, hi = op.span()
    out = np.empty(op.shape, dtype=np.float32)
    if hi > lo:
        raw = np.empty((hi - lo) // 4, dtype=np.float32)
        synchronize(0)       # the producer's work, on any blocking stream, is done
        memcpy_dtoh(raw.ctypes.data, lo, hi - lo, 0)
        synchronize(0)
        first = (op.ptr - lo) // 4
        out[...] = np.lib.stride_tricks.as_strided(
            raw[first:], shape=op.shape, strides=(4 * op.strides[0], 4 * op.strides[1]))
    return out


class DeviceArray:
    """A minimal float32 2-D device array (row-major unless strides say otherwise) that
    speaks __cuda_array_interface__, for users and tests without CuPy or PyTorch."""

    def __init__(self, shape, *, strides=None, ordinal: int = 0, _buffer=None):
        from .launch import DeviceBuffer
        self.shape = tuple(int(s) for s in shape)
        if len(self.shape) != 2:
            raise ShapeError(f"DeviceArray must be 2-D (got shape {self.shape})")
        self.strides = tuple(strides) if strides is not None else (self.shape[1], 1)
        span = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides) if n > 0)
        self._buf = _buffer if _buffer is not None else DeviceBuffer(4 * span, ordinal)
        self.ordinal = ordinal
        self.dtype = np.dtype(np.float32)

    @property
    def ptr(self) -> int:
        return self._buf.ptr

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False),
                "strides": (4 * self.strides[0], 4 * self.strides[1]), "version": 3}

    @property
    def T(self) -> "DeviceArray":
        """A transposed view sharing memory."""
        return DeviceArray(self.shape[::-1], strides=self.strides[::-1], ordinal=self.ordinal,
                           _buffer=self._buf)

    def is_contiguous(self) -> bool:
        return self.strides == (self.shape[1], 1) or self.shape[0] * self.shape[1] <= 1

    @classmethod
    def from_host(cls, host: np.ndarray, ordinal: int = 0, stream: int = 0) -> "DeviceArray":
        from .launch import memcpy_htod, synchronize
        op = parse("array", host)
        h = np.ascontiguousarray(host)
        d = cls(op.shape, ordinal=ordinal)
        if h.size:
            memcpy_htod(d.ptr, h.ctypes.data, h.nbytes, stream)
            synchronize(stream)
        return d

    @classmethod
    def full(cls, shape, value: float, ordinal: int = 0, stream: int = 0) -> "DeviceArray":
        from .launch import memset_f32
        d = cls(shape, ordinal=ordinal)
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        memset_f32(d.ptr, bits, d._buf.nbytes // 4, stream)
        return d

    def to_host(self, stream: int = 0) -> np.ndarray:
        from .launch import memcpy_dtoh, synchronize
        if not self.is_contiguous():
            raise ShapeError("to_host() needs a contiguous DeviceArray (transpose on the host)")
        out = np.empty(self.shape, dtype=np.float32)
        if out.size:
            memcpy_dtoh(out.ctypes.data, self.ptr, out.nbytes, stream)
            synchronize(stream)
        return out

    def close(self) -> None:
        self._buf.close()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, strides={self.strides}, ptr=0x{self.ptr:x})"

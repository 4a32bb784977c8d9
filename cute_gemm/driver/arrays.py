"""Operands: what an array is, where it lives, its strides; and a minimal device array. numpy
arrays, __cuda_array_interface__ and __dlpack__ are read without allocating or touching a
device, so validation errors are raised here, before any launch."""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from math import gcd
from typing import Any

import numpy as np

from . import launch
from ..base import precisions
from ..base.errors import DTypeError, InputError, NotAnArrayError, ShapeError
from ..base.precisions import (DEFAULT_PRECISION, DTYPE, ITEMSIZE, PRECISION,
                               PRECISION_DTYPE, PRECISION_DTYPE_B, PRECISIONS, as_accurate)

DTypeName = precisions.DTypeName        # element types by numpy's names (bfloat16: ml_dtypes')
SUPPORTED_DTYPES: tuple[str, ...] = precisions.DTYPES
# a 2-D numpy or device array (CAI or DLPack) of a SUPPORTED_DTYPES type, any strides
ArrayLike = Any
# None (the operands' library's current stream), an int handle or a stream object (stream_handle)
StreamLike = Any
_TYPESTR = {"<f4": "float32", "<f8": "float64", "<f2": "float16", "<i4": "int32",
            "<i8": "int64", "|u1": "uint8", "|i1": "int8", "<u4": "uint32", "<c8": "complex64"}
_CAI_DTYPE = {d.typestr: d.name for d in DTYPE.values() if d.typestr}   # others: _opaque_as_named
_OPAQUE = tuple(d for d in DTYPE.values() if not d.typestr)
_KDLCPU, _KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED = 1, 2, 3, 13


@dataclass
class Operand:
    name: str                      # "a", "b", "c", "out" (for messages)
    obj: object
    device: bool                   # False: host numpy array
    ptr: int                       # device pointer (0 for host operands)
    shape: tuple[int, int]
    strides: tuple[int, int]       # in elements
    dtype: str                     # SUPPORTED_DTYPES
    readonly: bool = False
    host: np.ndarray | None = None
    stream: int | None = None      # CUDA Array Interface v3: the producer's stream, if any
    lead: tuple[int, ...] = ()     # an N-D operand's leading extents (batching.py) ...
    lead_strides: tuple[int, ...] = ()   # ... and their strides, in elements
    bcount: tuple[int, int] = (1, 1)     # one operand of a batch of (outer, inner) problems ...
    bstrides: tuple[int, int] = (0, 0)   # ... stepping by these strides (batching.flatten)

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def T(self) -> "Operand":
        """The transposed view of the same elements."""
        return replace(self, shape=self.shape[::-1], strides=self.strides[::-1],
                       host=None if self.host is None else np.swapaxes(self.host, -1, -2))

    def span(self) -> tuple[int, int]:
        """[first, last + 1) byte addresses of its elements, its whole batch ((0, 0): empty)."""
        lo, hi = extent(self.modes())
        if hi == 0:
            return 0, 0
        e = ITEMSIZE[self.dtype]
        return self.ptr + e * lo, self.ptr + e * hi

    def geometry(self) -> tuple:
        """What a prepared copy of it depends on: all but the pointer and the object."""
        return self.shape, self.strides, self.dtype, self.bcount, self.bstrides

    def modes(self) -> tuple[tuple[int, int], ...]:
        """(extent, stride) of each of its modes: the matrix's, then the batch's."""
        return tuple(zip(self.shape + self.bcount, self.strides + self.bstrides))

    def overlaps(self, other: "Operand") -> bool:
        """True if their byte ranges intersect (interleaved views sharing no element too)."""
        (a0, a1), (b0, b1) = self.span(), other.span()
        return a0 < b1 and b0 < a1

    def same_view(self, other: "Operand") -> bool:
        """Every element at the same address in both: an exact in-place alias."""
        return (self.ptr == other.ptr and self.shape == other.shape
                and self.bcount == other.bcount and (self.bstrides == other.bstrides
                                                     or self.bcount == (1, 1))
                and (self.strides == other.strides or self.shape[0] * self.shape[1] <= 1
                     or all(s1 == s2 for n, s1, s2 in zip(self.shape, self.strides, other.strides) if n > 1)))

    def self_overlapping(self) -> bool:
        """True if two elements share an address: i*s0 + j*s1 == 0 with 0 < |i| < rows or
        0 < |j| < cols, whose smallest solution is (s1/g, s0/g), g = gcd."""
        if self.bcount != (1, 1) and self.shape[0] * self.shape[1]:
            # a batch: distinct only where the modes nest (each stride past the smaller ones' span)
            ms = sorted((abs(s), x) for x, s in self.modes() if x > 1)
            reach = 0
            for s, x in ms:
                if s <= reach:
                    return True
                reach += (x - 1) * s
            return False
        (r, c), (sr, sc) = self.shape, (abs(self.strides[0]), abs(self.strides[1]))
        if r > 1 and c > 1:
            if sr == 0 or sc == 0:
                return True
            g = gcd(sr, sc)
            return sc // g < r and sr // g < c
        return (r > 1 and sr == 0) or (c > 1 and sc == 0)

    def major(self, row: str, col: str) -> str | None:
        """row if the rows are contiguous, col if the columns are, else None (fits())."""
        return {"k": row, "m": col}.get(fits({"a": self})["a"][0])


def extent(modes) -> tuple[int, int]:
    """[lowest, highest + 1) element offsets of (extent, stride) modes; (0, 0) if empty."""
    if any(x == 0 for x, _ in modes):
        return 0, 0
    return (sum(min(0, (x - 1) * s) for x, s in modes),
            sum(max(0, (x - 1) * s) for x, s in modes) + 1)


MAJORS = {"a": ("k", "m"), "b": ("n", "k"), "c": ("n", "m")}   # role -> (row-, column-major)


def fits(ops: dict) -> dict:
    """role -> (major, alignment) of each Operand of `ops` ("a", "b", "c"): its unit stride's mode
    (MAJORS; "strided": none) and the largest power of two <= 16 dividing its pointer, leading
    and batch strides, in elements (0: pointer unaligned)."""
    out = {}
    for role, op in ops.items():
        (r, c), (sr, sc), e = op.shape, op.strides, ITEMSIZE[op.dtype]
        row, col = MAJORS[role]
        if (sc == 1 or c <= 1) and (sr >= c or r <= 1) and sr > 0:
            major, ld = row, (sr if r > 1 else 0)  # (a single row/column: ld is never used)
        elif (sr == 1 or r <= 1) and (sc >= r or c <= 1) and sc > 0:
            major, ld = col, (sc if c > 1 else 0)
        else:       # no unit stride (e.g. every other column): only "any" entries take it
            major, ld = "strided", abs(sr) | abs(sc)
        # (a batch's pointers step by its strides; a negative one counts as unaligned: a TMA map
        # holds no negative stride)
        v = (op.ptr // e) | (ld if ld > 0 else 0) | abs(op.bstrides[0]) | abs(op.bstrides[1]) | 16
        if min(op.bstrides) < 0:
            v = 1
        out[role] = (major, 0 if op.ptr % e else v & -v)
    return out


def call_precision(A: Operand, B: Operand, C: Operand | None, O: Operand | None,
                   precision: str | None, kernel=None) -> tuple[str, str]:
    """(precision, result dtype): the precision asked for, else the operands' (on `kernel`, if
    named); the result in out's type, else C's, else the precision's. DTypeError for a mix no
    kernel computes."""
    pair = (A.dtype, B.dtype)
    if precision is None:
        precision = DEFAULT_PRECISION.get(pair)
        if precision is None:
            raise DTypeError(f"a is {A.dtype} and b is {B.dtype}: no precision reads that pair "
                             "(a and b of one type, or one 8-bit float of each kind)")
        if kernel is not None and precision not in kernel.precisions:
            # unasked, only one held to no larger a unit stands in (tf32 is taken by name only)
            precision = next((p for p in as_accurate(precision) if p in kernel.precisions),
                             precision)
    elif precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    want = (PRECISION_DTYPE[precision], PRECISION_DTYPE_B[precision])
    if want != pair:
        reads = f"{want[0]} operands" if want[0] == want[1] else f"a of {want[0]} and b of {want[1]}"
        are = f"a and b are {A.dtype}" if A.dtype == B.dtype else f"a is {A.dtype} and b is {B.dtype}"
        raise DTypeError(f"precision {precision!r} reads {reads}; {are}")
    outs = PRECISION[precision].outs
    out_dtype = O.dtype if O is not None else C.dtype if C is not None else outs[0]
    if C is not None and C.dtype != out_dtype:
        raise DTypeError(f"c is {C.dtype} and out is {out_dtype}: both must have one type")
    if out_dtype not in outs:
        raise DTypeError(f"the result of {precision} on {A.dtype} operands is "
                         f"{' or '.join(outs)}, not {out_dtype}")
    return precision, out_dtype


def _unsupported(name: str, dtype) -> DTypeError:
    return DTypeError(f"{name} has dtype {dtype}; supported dtypes: {', '.join(SUPPORTED_DTYPES)}")


def host_dtype(dt: np.dtype) -> str | None:
    """The SUPPORTED_DTYPES name of a numpy dtype (ml_dtypes' bfloat16 included), or None."""
    d = DTYPE.get(dt.name)
    return d.name if d is not None and dt.itemsize == d.itemsize and dt.isnative else None


def _row_major(shape) -> tuple[int, ...]:
    out, step = [], 1
    for x in reversed(tuple(shape)):
        out.append(step)
        step *= max(int(x), 1)
    return tuple(reversed(out))


def parse(name: str, obj, stream: int | None = None) -> Operand:
    """One operand described (the last two modes the matrix, those before its batch);
    NotAnArrayError / ShapeError / DTypeError / InputError on bad input. stream: the consumer
    stream, handed to DLPack producers."""
    device, host, readonly, sv, st = True, None, False, None, None    # st: strides in elements
    if isinstance(obj, np.ndarray):
        dtype = host_dtype(obj.dtype)
        if dtype is None:
            raise _unsupported(name, obj.dtype)
        isz = obj.itemsize
        if any(s % isz for s in obj.strides):
            raise ShapeError(f"{name} has strides {obj.strides} that are not a multiple of its itemsize")
        device, ptr, shape, st, readonly, host = (False, 0, obj.shape, tuple(s // isz for s in obj.strides),
                                                  not obj.flags.writeable, obj)
    elif isinstance(obj, DeviceArray):   # its bfloat16 has no __cuda_array_interface__
        ptr, shape, st, dtype = obj.ptr, obj.shape, obj.strides, obj.dtype_name
    else:
        if getattr(obj, "requires_grad", False) and callable(getattr(obj, "detach", None)):
            # an autograd tensor is read as its data, as torch.mm reads it; writing into one
            # behind autograd's back is refused, as torch refuses out= that requires grad
            if name == "out":
                raise InputError("out requires grad: pass out.detach(), or no out")
            obj = obj.detach()
        try:
            cai = getattr(obj, "__cuda_array_interface__", None)
        except Exception as e:   # a property that raises: PyTorch's for bfloat16 (no typestr), else
            if not hasattr(obj, "__dlpack__"):                            # not an array we can read
                raise NotAnArrayError(f"{name}: reading its __cuda_array_interface__ failed: {e}") from None
            cai = None
        if cai is not None:
            try:
                shape = tuple(map(int, cai["shape"]))
                typestr = cai["typestr"]
                dtype = _CAI_DTYPE.get(typestr) or _opaque_as_named(typestr, obj)
                if dtype not in SUPPORTED_DTYPES:
                    raise _unsupported(name, _TYPESTR.get(typestr, typestr))
                if cai.get("mask") is not None:
                    raise InputError(f"{name} is a masked array (__cuda_array_interface__ mask): not supported")
                ptr, readonly = cai["data"]
                st, e = cai.get("strides"), ITEMSIZE[dtype]
                if st is not None:
                    if len(st) != len(shape) or any(int(x) % e for x in st):
                        raise ShapeError(f"{name} has strides {tuple(st)} (bytes) that are not a multiple of {e}")
                    st = tuple(int(x) // e for x in st)
                sv = cai.get("stream")   # v3: 1 legacy default, 2 per-thread default, else a handle
                ptr, readonly, sv = int(ptr or 0), bool(readonly), None if sv is None else int(sv)
            except (KeyError, TypeError, ValueError, IndexError) as e:
                if isinstance(e, InputError):
                    raise
                raise NotAnArrayError(f"{name} has a malformed __cuda_array_interface__ ({type(e).__name__}: {e})") from None
        elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            dev_type, _ = obj.__dlpack_device__()
            torch_8_bit = str(getattr(obj, "dtype", "")).startswith("torch.float8")
            if int(dev_type) == _KDLCPU:
                return parse(name, _torch_8_bit_host(name, obj) if torch_8_bit else np.from_dlpack(obj))
            if int(dev_type) not in (_KDLCUDA, _KDLCUDAHOST, _KDLCUDAMANAGED):
                raise NotAnArrayError(f"{name} lives on DLPack device type {int(dev_type)}; "
                                      "only CPU and CUDA arrays are supported")
            sp = -1 if stream is None else launch.canonical_stream(stream)
            if torch_8_bit:
                # cuda.core 1.2's bridge to PyTorch rejects these types: the tensor's own
                # accessors, its producer's writes ordered as DLPack orders them (capsule unused)
                if sp != -1:
                    obj.__dlpack__(stream=sp)
                ptr, shape, st, dtype = int(obj.data_ptr()), tuple(obj.shape), obj.stride(), _opaque_as_named("V1", obj)
                dtype_name = str(obj.dtype)
            else:
                # cuda.core's view; the producer orders its pending writes before `stream`'s later work
                from cuda.core.utils import StridedMemoryView
                v = StridedMemoryView.from_dlpack(obj, stream_ptr=sp)
                ptr, shape, st, readonly = int(v.ptr), v.shape, v.strides, bool(v.readonly)
                dtype = dtype_name = _opaque_as_named(str(v.dtype), obj)
            if dtype not in SUPPORTED_DTYPES:
                raise _unsupported(name, dtype_name)
        else:
            raise NotAnArrayError(
                f"{name} is a {type(obj).__name__}, not an array: pass a numpy array or a device array "
                "(DLPack or __cuda_array_interface__: CuPy, PyTorch, JAX)")
    if len(shape) != 2 or shape[0] < 0 or shape[1] < 0:
        shape = tuple(int(x) for x in shape)
        if len(shape) < 2:
            raise ShapeError(f"{name} must have 2 or more dimensions, (..., rows, cols) (got ndim="
                             f"{len(shape)}, shape={shape}); a vector x is x[None, :] or x[:, None]")
        if min(shape) < 0:
            raise ShapeError(f"{name} has a negative extent (shape={shape})")
    if st is None:
        st = (max(int(shape[1]), 1), 1) if len(shape) == 2 else _row_major(shape)
    op = Operand(name, obj, device, ptr, (int(shape[-2]), int(shape[-1])), (int(st[-2]), int(st[-1])),
                 dtype, readonly, host, sv, tuple(int(x) for x in shape[:-2]), tuple(int(x) for x in st[:-2]))
    if device and (ptr == 0 or ptr % ITEMSIZE[dtype]) and 0 not in op.shape and 0 not in op.lead:
        if ptr == 0:
            raise InputError(f"{name} has a null data pointer (a closed or freed array?)")
        # a load there faults and takes the CUDA context with it
        raise InputError(f"{name}'s data pointer 0x{ptr:x} is not {ITEMSIZE[dtype]}-byte aligned ({dtype})")
    return op


_CURRENT: dict = {}      # array type -> reader of its library's current stream (None: 0)


def framework_stream(obj) -> int:
    """The stream of a call on `obj` that names none: PyTorch's or CuPy's current one for their
    arrays, else 0 (other producers' pending writes are ordered by their protocol)."""
    f = _CURRENT[type(obj)] if type(obj) in _CURRENT else stream_reader(type(obj))
    return 0 if f is None else f(obj)


def stream_reader(tp):
    """framework_stream of arrays of type `tp`, as a function of the array; None: always 0
    (kept per type: the hot path calls it)."""
    if tp in _CURRENT:
        return _CURRENT[tp]
    f, lib = None, sys.modules.get(tp.__module__.split(".")[0])
    name = getattr(lib, "__name__", "")
    if name == "cupy" and issubclass(tp, lib.ndarray):
        current = lib.cuda.get_current_stream
        f = lambda x: current(x.device.id).ptr          # noqa: E731
    elif name == "torch" and issubclass(tp, lib.Tensor):
        # torch's raw accessor, as Triton's launcher reads it: current_stream(d) builds a Stream
        # object, a fifth of a launch; get_device() is -1 for a CPU tensor (the host path)
        raw = (getattr(getattr(lib, "_C", None), "_cuda_getCurrentRawStream", None)
               or (lambda d: lib.cuda.current_stream(d).cuda_stream))
        f = lambda t: raw(d) if (d := t.get_device()) >= 0 else 0     # noqa: E731
    _CURRENT[tp] = f
    return f


def _torch_8_bit_host(name: str, obj) -> np.ndarray:
    """A CPU tensor of an 8-bit float type as numpy's of ml_dtypes' type (DLPack carries none)."""
    named = str(obj.dtype).rsplit(".", 1)[-1]
    ml = sys.modules.get("ml_dtypes")
    if ml is None:
        try:
            import ml_dtypes as ml        # (optional: numpy's names for the 8-bit floats)
        except ImportError:
            raise DTypeError(f"{name} is a CPU tensor of {named}: move it to the GPU, or install "
                             "ml_dtypes for numpy to hold it") from None
    if not hasattr(ml, named):
        raise _unsupported(name, named)
    return obj.view(sys.modules["torch"].uint8).numpy().view(getattr(ml, named))


def _opaque_as_named(dtype: str, obj) -> str:
    """bfloat16 or an 8-bit float (no standard typestr) for an opaque void of its size ("<V2") in
    an array whose dtype names it exactly (float8_e4m3fnuz is not float8_e4m3fn)."""
    named = str(getattr(obj, "dtype", "")).rsplit(".", 1)[-1]     # torch.float8_e4m3fn: exactly
    return next((d.name for d in _OPAQUE if dtype.lstrip("<|=") == f"V{d.itemsize}"
                 and d.name == named), dtype)


def widen(raw: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values of elements of `dtype` held as its storage (precisions.DType.widen)."""
    return DTYPE[dtype].widen(raw)


def narrow(x: np.ndarray, dtype: str) -> np.ndarray:
    """`x` rounded to nearest-even in `dtype`'s storage (precisions.DType.narrow)."""
    return DTYPE[dtype].narrow(x)


def to_numpy(name: str, obj, stream: int = 0) -> np.ndarray:
    """A float32 host copy of any accepted operand (a float32 numpy array as it is), on `stream`."""
    op = parse(name, obj)
    if not op.device:
        h = op.host
        return h if h.dtype == np.float32 else widen(h, op.dtype)
    shape, strides, e = op.lead + op.shape, op.lead_strides + op.strides, op.itemsize
    lo, hi = extent(tuple(zip(shape, strides)))
    out = np.empty(shape, dtype=np.float32)
    if hi > lo:
        raw = np.empty(hi - lo, dtype=DTYPE[op.dtype].storage)
        launch.synchronize(stream)      # (0: the producer's work, on any blocking stream, is done)
        launch.memcpy_dtoh(raw.ctypes.data, op.ptr + e * lo, e * (hi - lo), stream)
        launch.synchronize(stream)
        out[...] = widen(np.lib.stride_tricks.as_strided(
            raw[-lo:], shape=shape, strides=tuple(e * x for x in strides)), op.dtype)
    return out


class DeviceArray:
    """A minimal device array of 2 modes or more (row-major unless strides say otherwise) of a
    SUPPORTED_DTYPES type, for users and tests without CuPy or PyTorch."""

    def __init__(self, shape, *, strides=None, ordinal: int = 0, dtype: str = "float32",
                 _buffer=None):
        self.shape = tuple(int(s) for s in shape)
        if len(self.shape) < 2:
            raise ShapeError(f"DeviceArray has 2 modes or more (got shape {self.shape})")
        if dtype not in SUPPORTED_DTYPES:
            raise _unsupported("DeviceArray", dtype)
        self.dtype_name = dtype
        self.strides = tuple(strides) if strides is not None else _row_major(self.shape)
        span = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides) if n > 0)
        self._buf = _buffer if _buffer is not None else launch.DeviceBuffer(ITEMSIZE[dtype] * span, ordinal)
        self.ordinal = ordinal

    @property
    def dtype(self):
        """numpy's dtype for float32/float16; the name for a type numpy lacks ("bfloat16")."""
        d = DTYPE[self.dtype_name]
        return np.dtype(d.storage) if d.numpy else d.name

    @property
    def ptr(self) -> int:
        return self._buf.ptr

    @property
    def buffer_bytes(self) -> int:
        """Bytes of the device allocation behind it (its span, at least 4)."""
        return self._buf.nbytes

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def __cuda_array_interface__(self):
        d = DTYPE[self.dtype_name]
        if not d.typestr:
            raise TypeError(f"{d.name} has no __cuda_array_interface__ typestr")
        return {"shape": self.shape, "typestr": d.typestr, "data": (self.ptr, False),
                "strides": tuple(d.itemsize * x for x in self.strides), "version": 3}

    @property
    def T(self) -> "DeviceArray":
        """A view sharing memory with the last two modes swapped (each matrix transposed)."""
        return DeviceArray(self.shape[:-2] + self.shape[-2:][::-1],
                           strides=self.strides[:-2] + self.strides[-2:][::-1],
                           ordinal=self.ordinal, dtype=self.dtype_name, _buffer=self._buf)

    @classmethod
    def from_host(cls, host: np.ndarray, ordinal: int = 0, stream: int = 0,
                  dtype: str | None = None) -> "DeviceArray":
        """A copy of `host`, rounded to nearest even in `dtype` when one is given."""
        op = parse("array", host)
        dtype = dtype or op.dtype
        h = np.ascontiguousarray(host)
        if dtype != op.dtype:
            h = np.ascontiguousarray(narrow(widen(h, op.dtype), dtype))
        d = cls(op.lead + op.shape, ordinal=ordinal, dtype=dtype)
        if h.size:
            launch.memcpy_htod(d.ptr, h.ctypes.data, h.nbytes, stream)
            launch.synchronize(stream)
        return d

    @classmethod
    def full(cls, shape, value: float, ordinal: int = 0, stream: int = 0,
             dtype: str = "float32") -> "DeviceArray":
        d = cls(shape, ordinal=ordinal, dtype=dtype)
        e = ITEMSIZE[dtype]
        launch.memset(d.ptr, DTYPE[dtype].bits(value), d.buffer_bytes // e, e, stream)
        return d

    def to_host(self, stream: int = 0) -> np.ndarray:
        """A float32 host copy (16-bit elements widened exactly), copied on `stream`."""
        return to_numpy("array", self, stream)

    def close(self) -> None:
        self._buf.close()

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self.shape}, strides={self.strides}, dtype={self.dtype_name}, "
                f"ptr=0x{self.ptr:x})")

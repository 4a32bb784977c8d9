"""A fused epilogue as a call gives it (Epilogue, public) and what a launch takes of it: the
pieces to compile in (registry.EpilogueSpec) and the run-time half, EpiArgs' fields (the
vectors' pointers and element strides, the clamp's bounds)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..base.errors import DTypeError, InputError, ShapeError, ShapeLimitError
from ..base.precisions import DTYPE
from ..registry.epilogue import ACTIVATIONS, EpilogueSpec
from .arrays import ArrayLike, Operand, parse

ActivationName = Literal["relu", "gelu_erf", "gelu_tanh", "silu"]
# the activations' largest slope (GELU 1.13, SiLU 1.10, ReLU and the clamp 1): how much an
# error before the activation can grow through it (check.reference's gauge)
SLOPE = 1.13


@dataclass(frozen=True, eq=False)
class Epilogue:
    """What gemm() and run() do to each element of the product before it is stored, in the
    kernel's own epilogue (one pass over the result):

        D[i,j] = clamp(act(alpha * scale_rows[i] * scale_cols[j] * (A @ B)[i,j]
                           + beta * C[i,j] + bias), lo, hi)

    then rounded once into the result's type.

    Args:
        bias: A vector added to every row (bias_axis "col": one value per column, length N,
            as torch.nn.Linear's) or to every column ("row": length M). Default None.
        bias_axis: "col" or "row". Default "col".
        activation: "relu", "gelu_erf" (GELU, torch's default), "gelu_tanh" (GELU's tanh
            approximation) or "silu", as PyTorch defines them; None for none.
        scale_rows: A vector of length M multiplying row i of A @ B. Default None.
        scale_cols: A vector of length N multiplying column j of A @ B. Default None.
        clamp: (lo, hi): the result limited to [lo, hi] (a NaN stays NaN). Default None.
        out_dtype: The result's type where the call allocates it (no `out`, no `c`):
            "float32", or the operands' 16-bit type. Default None: as without an epilogue.

    The vectors are 1-D arrays (or (1, L) / (L, 1) ones) on the operands' device, any stride,
    float32 or the operands' 16-bit type, all of one type; a batch shares them.
    """
    bias: ArrayLike | None = None
    bias_axis: Literal["col", "row"] = "col"
    activation: ActivationName | None = None
    scale_rows: ArrayLike | None = None
    scale_cols: ArrayLike | None = None
    clamp: tuple[float, float] | None = None
    out_dtype: str | None = None

    def __post_init__(self):
        if self.bias_axis not in ("col", "row"):
            raise InputError(f"bias_axis is 'col' or 'row', got {self.bias_axis!r}")
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise InputError(f"activation is one of {', '.join(ACTIVATIONS)} or None, got "
                             f"{self.activation!r}")
        if self.clamp is not None:
            try:
                lo, hi = (float(x) for x in self.clamp)
            except (TypeError, ValueError):
                raise InputError(f"clamp is (lo, hi), two numbers, got {self.clamp!r}") from None
            if not lo <= hi:
                raise InputError(f"clamp's lo must be <= hi (neither NaN), got {self.clamp!r}")

    @property
    def rows(self) -> bool:
        """Whether a vector of it runs along the rows of the result (length M)."""
        return self.scale_rows is not None or (self.bias is not None and self.bias_axis == "row")


@dataclass(frozen=True)
class Prepared:
    """A call's epilogue, checked against its operands: the pieces to compile (spec), the
    run-time half (values: EpiArgs' fields, in the caller's rows and columns) and the
    vectors as operands (what the launch reads, for the alias checks)."""
    spec: EpilogueSpec
    values: tuple
    vectors: tuple[Operand, ...]

    def block(self, i0: int, j0: int) -> "Prepared":
        """The epilogue of the block of the result that starts at (i0, j0): its vectors'
        pointers moved there (a call past one launch runs on blocks of the result)."""
        e = DTYPE[self.spec.vector_dtype].itemsize
        bias, bsm, bsn, srow, sr, scol, sc, lo, hi = self.values
        return replace(self, values=(bias and bias + e * (i0 * bsm + j0 * bsn), bsm, bsn,
                                     srow and srow + e * i0 * sr, sr,
                                     scol and scol + e * j0 * sc, sc, lo, hi))


def vector(name: str, obj, length: int, stream: int | None) -> Operand:
    """One of the epilogue's vectors as a (1, L) Operand, stride in strides[1]; ShapeError
    unless it has `length` elements along one mode."""
    if len(getattr(obj, "shape", ())) == 1 and hasattr(obj, "__getitem__"):
        obj = obj[None]
    op = parse(name, obj, stream)
    if op.lead or length not in op.shape or op.shape[0] * op.shape[1] != length:
        raise ShapeError(f"{name} must be a vector of {length} elements, got shape "
                         f"{op.lead + op.shape}")
    return op.T if op.shape[0] != 1 else op


def prepare(ep: Epilogue, m: int, n: int, dtype: str, device: bool,
            stream: int | None) -> Prepared:
    """`ep` on an M x N result of a product of `dtype` operands (device: whether they live
    on the device): each vector's length, type and place checked (InputError and its
    subclasses), the spec and run-time half made."""
    if not isinstance(ep, Epilogue):
        raise InputError(f"epilogue must be a cute_gemm.Epilogue, got {type(ep).__name__}")
    named = [("bias", ep.bias, m if ep.bias_axis == "row" else n),
             ("scale_rows", ep.scale_rows, m), ("scale_cols", ep.scale_cols, n)]
    ops = {nm: vector(f"epilogue.{nm}", x, length, stream) for nm, x, length in named
           if x is not None}
    for nm, op in ops.items():       # (the kernels' element offsets are 32-bit)
        if abs(op.strides[1]) * (max(op.shape[1], 1) - 1) >= 2 ** 31:
            raise ShapeLimitError(f"epilogue.{nm} spans 2^31 elements or more (stride "
                                  f"{op.strides[1]})")
    kinds = {op.dtype for op in ops.values()}
    allowed = {"float32", dtype}
    if len(kinds) > 1 or not kinds <= allowed:
        raise DTypeError(f"the epilogue's vectors are all of one type, float32 or the operands' "
                         f"({dtype}), got {', '.join(sorted(kinds))}")
    if any(op.device != device for op in ops.values()):
        raise InputError("the epilogue's vectors must live where the operands do ("
                         f"{'device' if device else 'host'})")

    def at(nm):
        op = ops.get(nm)
        return (0, 0) if op is None else (op.ptr, op.strides[1])

    (bias, sb), (srow, sr), (scol, sc) = at("bias"), at("scale_rows"), at("scale_cols")
    lo, hi = (float(x) for x in ep.clamp) if ep.clamp is not None else (0.0, 0.0)
    values = (bias, sb if ep.bias_axis == "row" else 0, 0 if ep.bias_axis == "row" else sb,
              srow, sr, scol, sc, lo, hi)
    spec = EpilogueSpec(bias="bias" in ops, scale=bool({"scale_rows", "scale_cols"} & set(ops)),
                        activation=ep.activation, clamp=ep.clamp is not None,
                        vector_dtype=kinds.pop() if kinds else "float32")
    return Prepared(spec, values, tuple(ops.values()))


def reference(ep: Epilogue, t: np.ndarray) -> np.ndarray:
    """The epilogue's bias, activation and clamp applied in float64 to `t`, alpha'·A@B + β·C
    with the scales already in (reference_scale), as the kernels define them."""
    with np.errstate(invalid="ignore", over="ignore"):    # (inf * 0 is NaN, as in the kernels)
        return _reference(ep, np.asarray(t, np.float64))


def _reference(ep: Epilogue, t: np.ndarray) -> np.ndarray:
    if ep.bias is not None:
        b = host_vector(ep.bias)
        t = t + (b[..., :, None] if ep.bias_axis == "row" else b)
    if ep.activation == "relu":
        t = np.where(t < 0, 0.0, t)
    elif ep.activation == "gelu_erf":
        erf = np.vectorize(math.erf, otypes=[np.float64])     # (numpy has none)
        t = 0.5 * t * (1.0 + erf(t / np.sqrt(2.0)))
    elif ep.activation == "gelu_tanh":
        t = 0.5 * t * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (t + 0.044715 * t ** 3)))
    elif ep.activation == "silu":
        t = t / (1.0 + np.exp(-t))
    if ep.clamp is not None:
        lo, hi = ep.clamp
        t = np.where(t < lo, lo, np.where(t > hi, hi, t))
    return t


def reference_scale(ep: Epilogue, m: int, n: int) -> np.ndarray | float:
    """The (M, N) factor scale_rows[i] * scale_cols[j] of A @ B in float64 (1.0: none)."""
    s = 1.0
    if ep.scale_rows is not None:
        s = s * host_vector(ep.scale_rows)[:, None]
    if ep.scale_cols is not None:
        s = s * host_vector(ep.scale_cols)[None, :]
    return s


def host_vector(x) -> np.ndarray:
    """A vector's values in float64 on the host (numpy, or a device array with .get(),
    .cpu() or __array__)."""
    for attr in ("get", "cpu", "to_host"):
        f = getattr(x, attr, None)
        if callable(f) and not isinstance(x, np.ndarray):
            x = f()
            break
    if hasattr(x, "float") and not isinstance(x, np.ndarray):   # torch bfloat16
        x = x.float().numpy()
    return np.asarray(x, dtype=np.float64).reshape(-1)

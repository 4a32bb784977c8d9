"""A fused epilogue as a call gives it (Epilogue, public) and what a launch takes of it: the
pieces to compile in (registry.EpilogueSpec) and the run-time half (kernel_args.EpiValues)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ..base.errors import DTypeError, InputError, ShapeError, ShapeLimitError
from ..base.precisions import DTYPE
from ..registry.epilogue import ACTIVATIONS, EpilogueSpec
from .arrays import ArrayLike, Operand, parse
from .kernel_args import EpiValues

ActivationName = Literal["relu", "gelu_erf", "gelu_tanh", "silu"]
# the activations' largest slope (GELU's; SiLU 1.10, ReLU and the clamp 1): how much an error
# before the activation can grow through it (check.reference's gauge)
SLOPE = 1.13


@dataclass(frozen=True, eq=False)
class Epilogue:
    """What gemm() and run() do to each element of the product before it is stored, in the
    kernel's own epilogue (one pass over the result):

        D[i,j] = clamp(act(alpha * scale_rows[i] * scale_cols[j] * (A @ B)[i,j]
                           + beta * C[i,j] + bias), lo, hi)

    then rounded once into the result's type. With block scales (8-bit operands, as
    DeepSeek-V3 quantizes them), (A @ B)[i,j] is the sum over windows w of 128 k of
    blocks_a[i, w] * blocks_b[w, j // 128] * (the window's products).

    Args:
        bias: A vector added to every row (bias_axis "col": one value per column, length N,
            as torch.nn.Linear's) or to every column ("row": length M).
        bias_axis: "col" or "row".
        activation: "relu", "gelu_erf" (GELU, torch's default), "gelu_tanh" (GELU's tanh
            approximation) or "silu", as PyTorch defines them; None for none.
        scale_rows: A vector of length M multiplying row i of A @ B.
        scale_cols: A vector of length N multiplying column j of A @ B.
        clamp: (lo, hi): the result limited to [lo, hi] (a NaN stays NaN).
        out_dtype: The result's type where the call allocates it (no `out`, no `c`):
            "float32", or the operands' 16-bit type; None: as without an epilogue.
        blocks_a: A's block scales, (M, ceil(K / 128)) float32, any strides: one per row and
            128 k, for 8-bit operands (gemm(scale_a=, scale_b=) of these shapes sets them).
        blocks_b: B's, (ceil(K / 128), ceil(N / 128)): one per 128 x 128 block.

    The vectors are 1-D arrays (or (1, L) / (L, 1) ones) on the operands' device, any stride,
    float32 or the operands' 16-bit type, all of one type; a batch shares them. A vector of
    one element (or a 0-d array) broadcasts: one value for every row or column, read by the
    kernel (a per-tensor scale that lives on the device).
    """
    bias: ArrayLike | None = None
    bias_axis: Literal["col", "row"] = "col"
    activation: ActivationName | None = None
    scale_rows: ArrayLike | None = None
    scale_cols: ArrayLike | None = None
    clamp: tuple[float, float] | None = None
    out_dtype: str | None = None
    blocks_a: ArrayLike | None = None
    blocks_b: ArrayLike | None = None

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
    """A call's epilogue checked against its operands: the pieces to compile, the run-time half
    and the vectors as operands (for the alias checks)."""
    spec: EpilogueSpec
    values: EpiValues
    vectors: tuple[Operand, ...]

    def block(self, i0: int, j0: int) -> "Prepared":
        """The epilogue of the block of the result at (i0, j0), for a call past one launch."""
        e, v = DTYPE[self.spec.vector_dtype].itemsize, self.values
        if v.blk_b and j0 % 128:
            raise ShapeLimitError(f"block scales on a launch of columns {j0}..: B's blocks "
                                  "are 128 columns wide")
        return replace(self, values=v.but(
            bias=v.bias and v.bias + e * (i0 * v.bias_sm + j0 * v.bias_sn),
            srow=v.srow and v.srow + e * i0 * v.srow_s, scol=v.scol and v.scol + e * j0 * v.scol_s,
            blk_a=v.blk_a and v.blk_a + 4 * i0 * v.blk_a_sm,
            blk_b=v.blk_b and v.blk_b + 4 * (j0 // 128) * v.blk_b_sn))


def scaled(ep: Epilogue | None, scale_a, scale_b, a, b) -> Epilogue | None:
    """A call's epilogue with gemm()'s scale_a and scale_b in it, told apart by their shapes as
    torch._scaled_mm tells them: per tensor, row or column they are scale_rows and scale_cols;
    A's (M, ceil(K / 128)) and B's (ceil(K / 128), ceil(N / 128)) are blocks_a and blocks_b."""
    if scale_a is None and scale_b is None:
        return ep
    shape_a, shape_b = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
    if len(shape_a) < 2 or not shape_b:      # (not arrays: run() names what is wrong)
        shape_a, shape_b = (0, 0), (0,)
    (m, k), n = shape_a[-2:], shape_b[-1]
    kw, nw = -(-k // 128), -(-n // 128)
    block_a = scale_a is not None and tuple(getattr(scale_a, "shape", ())) == (m, kw) and kw > 1
    block_b = (scale_b is not None and tuple(getattr(scale_b, "shape", ())) == (kw, nw)
               and kw * nw > 1 and (kw, nw) != (1, n))
    scales = dict(scale_rows=None if block_a else scale_a, blocks_a=scale_a if block_a else None,
                  scale_cols=None if block_b else scale_b, blocks_b=scale_b if block_b else None)
    if ep is None:                  # (one construction: this runs on every scaled call)
        return Epilogue(**scales)
    if any(x is not None for x in (ep.scale_rows, ep.scale_cols, ep.blocks_a, ep.blocks_b)):
        raise InputError("scale_a and scale_b are the epilogue's scales: give them one way")
    return replace(ep, **scales)


def vector(name: str, obj, length: int, stream: int | None) -> Operand:
    """One of the epilogue's vectors as a (1, L) Operand (stride 0 for one element, which
    broadcasts); ShapeError unless it has `length` elements, or one, along one mode."""
    nd = len(getattr(obj, "shape", ()))
    if nd == 1 and hasattr(obj, "__getitem__"):
        obj = obj[None]               # (a view in every library; a reshape may copy)
    elif nd == 0:
        obj = obj.reshape(1, 1)
    op = parse(name, obj, stream)
    size = op.shape[0] * op.shape[1]
    if op.lead or size not in (1, length) or (size == length and length not in op.shape):
        raise ShapeError(f"{name} must be a vector of {length} elements (or of one), got "
                         f"shape {op.lead + op.shape}")
    op = op.T if op.shape[0] != 1 else op
    return replace(op, strides=(op.strides[0], 0)) if size == 1 else op


def blocks(name: str, obj, rows: int, cols: int, stream: int | None) -> Operand:
    """Block scales as an Operand: ShapeError unless (rows, cols), DTypeError unless float32."""
    op = parse(name, obj, stream)
    if op.lead or op.shape != (rows, cols):
        raise ShapeError(f"{name} must be ({rows}, {cols}), got {op.lead + op.shape}")
    if op.dtype != "float32":
        raise DTypeError(f"{name} must be float32, got {op.dtype}")
    if any(abs(st) * (x - 1) >= 2 ** 31 for x, st in zip(op.shape, op.strides)):
        raise ShapeLimitError(f"{name} spans 2^31 elements or more (strides {op.strides})")
    return op


def prepare(ep: Epilogue, m: int, n: int, k: int, dtype: str, device: bool,
            stream: int | None) -> Prepared:
    """`ep` on an M x N x K product of `dtype` operands (on the device or not): each vector's
    length, type and place checked (InputError and its subclasses), its two halves made."""
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
    allowed = {"float32", dtype} if DTYPE[dtype].itemsize == 2 else {"float32"}
    if len(kinds) > 1 or not kinds <= allowed:
        raise DTypeError(f"the epilogue's vectors are all of one type, float32 or the operands' "
                         f"16-bit one ({dtype} here), got {', '.join(sorted(kinds))}")
    if any(op.device != device for op in ops.values()):
        raise InputError("the epilogue's vectors must live where the operands do ("
                         f"{'device' if device else 'host'})")

    kw = -(-k // 128)
    blk = {nm: blocks(f"epilogue.{nm}", x, *extents, stream)
           for nm, x, extents in (("blocks_a", ep.blocks_a, (m, kw)),
                                  ("blocks_b", ep.blocks_b, (kw, -(-n // 128)))) if x is not None}
    if blk and DTYPE[dtype].itemsize != 1:
        raise DTypeError(f"block scales are for 8-bit operands, not {dtype}")
    if any(op.device != device for op in blk.values()):
        raise InputError("the block scales must live where the operands do")

    def at(nm):
        op = ops.get(nm)
        return (0, 0) if op is None else (op.ptr, op.strides[1])

    (bias, sb), (srow, sr), (scol, sc) = at("bias"), at("scale_rows"), at("scale_cols")
    lo, hi = (float(x) for x in ep.clamp) if ep.clamp is not None else (0.0, 0.0)
    values = EpiValues(bias, sb if ep.bias_axis == "row" else 0, 0 if ep.bias_axis == "row" else sb,
                       srow, scol, sr, sc, lo, hi)
    if (op := blk.get("blocks_a")) is not None:
        values = values.but(blk_a=op.ptr, blk_a_sm=op.strides[0], blk_a_sk=op.strides[1])
    if (op := blk.get("blocks_b")) is not None:
        values = values.but(blk_b=op.ptr, blk_b_sk=op.strides[0], blk_b_sn=op.strides[1])
    # scales of one value each (stride 0) are applied once a tile, compiled so
    scales = [op.strides[1] for nm, op in ops.items() if nm != "bias"]
    spec = EpilogueSpec(bias="bias" in ops, scale=any(scales), activation=ep.activation,
                        clamp=ep.clamp is not None,
                        vector_dtype=kinds.pop() if kinds else "float32", blocks=bool(blk),
                        tensor_scale=bool(scales) and not any(scales))
    return Prepared(spec, values, tuple(ops.values()) + tuple(blk.values()))


_erf = np.vectorize(math.erf, otypes=[np.float64])     # (numpy has none)
# the activations in float64, as PyTorch defines them
_ACTIVATION = {"relu": lambda t: np.where(t < 0, 0.0, t),
               "gelu_erf": lambda t: 0.5 * t * (1.0 + _erf(t / np.sqrt(2.0))),
               "gelu_tanh": lambda t: 0.5 * t * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (t + 0.044715 * t ** 3))),
               "silu": lambda t: t / (1.0 + np.exp(-t))}


def reference(ep: Epilogue, t: np.ndarray) -> np.ndarray:
    """The epilogue's bias, activation and clamp applied in float64 to `t` (alpha·A@B + β·C,
    scales in), as the kernels define them."""
    t = np.asarray(t, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):    # (inf * 0 is NaN, as in the kernels)
        if ep.bias is not None:
            b = host_vector(ep.bias)
            t = t + (b[..., :, None] if ep.bias_axis == "row" else b)
        if ep.activation is not None:
            t = _ACTIVATION[ep.activation](t)
        if ep.clamp is not None:
            lo, hi = ep.clamp
            t = np.where(t < lo, lo, np.where(t > hi, hi, t))
    return t


def reference_scale(ep: Epilogue, m: int, n: int) -> np.ndarray | float:
    """The (M, N) factor scale_rows[i] * scale_cols[j] of A @ B in float64 (1.0: none)."""
    rows = 1.0 if ep.scale_rows is None else host_vector(ep.scale_rows)[:, None]
    return rows * (1.0 if ep.scale_cols is None else host_vector(ep.scale_cols)[None, :])


def reference_blocks(ep: Epilogue, a64: np.ndarray, b64: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A and B (float64) with the block scales multiplied in: A[i, k] by blocks_a[i, k // 128],
    B[k, j] by blocks_b[k // 128, j // 128]."""
    k = a64.shape[-1]
    if ep.blocks_a is not None:
        a64 = a64 * np.repeat(host_array(ep.blocks_a), 128, axis=1)[:, :k]
    if ep.blocks_b is not None:
        sb = np.repeat(np.repeat(host_array(ep.blocks_b), 128, axis=0), 128, axis=1)
        b64 = b64 * sb[:k, :b64.shape[-1]]
    return a64, b64


def host_array(x) -> np.ndarray:
    """An array's values in float64 on the host (numpy, or an array with .get(), .cpu(),
    .to_host() or __array__)."""
    for attr in ("get", "cpu", "to_host"):
        f = getattr(x, attr, None)
        if callable(f) and not isinstance(x, np.ndarray):
            x = f()
            break
    if hasattr(x, "float") and not isinstance(x, np.ndarray):   # torch bfloat16
        x = x.float().numpy()
    return np.asarray(x, dtype=np.float64)


def host_vector(x) -> np.ndarray:
    """host_array, flat."""
    return host_array(x).reshape(-1)

"""Which arithmetic may answer a call of a precision.

A precision names an arithmetic ("fp32": float32 FMAs; "tf32", "bf16", "fp16": tensor-core
products of that input rounding), except where it names an accuracy contract:
"fp32_3xtf32" (precisions.FP32_ACCURATE) promises fp32's gauge on float32 operands, and any
kernel that keeps that promise may answer it. gemm() then takes the fastest of them: the
SIMT fp32 kernels on problems too small for 3xTF32's passes to pay (one launch against
twelve driver calls), cute_3xtf32 on large ones (auto.choose prices both)."""
from __future__ import annotations

from ..base.precisions import FP32_ACCURATE, as_accurate


def answering(precision: str) -> tuple[str, ...]:
    """The precisions whose kernels may answer a call of `precision`, its own first: for an
    accuracy contract every precision that reads the same operands and is judged by no
    larger unit roundoff (fp32_3xtf32: itself and fp32); otherwise the precision alone."""
    return as_accurate(precision) if precision in FP32_ACCURATE else (precision,)


def runs_at(kernel, precision: str, out_dtype: str | None = None) -> str | None:
    """The precision `kernel` (a registry.Kernel) runs a call of `precision` in (into
    `out_dtype`, when given): the first of answering(precision) it computes; None if none."""
    for p in answering(precision):
        if p in kernel.precisions and (out_dtype is None or kernel.computes(p, out_dtype)):
            return p
    return None

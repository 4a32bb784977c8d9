"""Which arithmetic may answer a call of a precision: its own, except for an accuracy
contract ("fp32_3xtf32", precisions.FP32_ACCURATE: fp32's gauge on float32 operands), which
any kernel keeping the promise may answer; gemm() then takes the fastest (SIMT fp32 on small
problems, cute_3xtf32 on large ones: auto.choose prices both)."""
from __future__ import annotations

from ..base.precisions import FP32_ACCURATE, as_accurate


def answering(precision: str) -> tuple[str, ...]:
    """The precisions whose kernels may answer a call of `precision`, its own first: for a
    contract, each on its operands held to no larger a unit (fp32_3xtf32: itself, fp32)."""
    return as_accurate(precision) if precision in FP32_ACCURATE else (precision,)


def runs_at(kernel, precision: str, out_dtype: str | None = None) -> str | None:
    """The precision `kernel` (a registry.Kernel) runs a call of `precision` in (into
    `out_dtype`, when given): the first of answering(precision) it computes; None if none."""
    return next((p for p in answering(precision) if p in kernel.precisions
                 and (out_dtype is None or kernel.computes(p, out_dtype))), None)

"""Which arithmetic may answer a call of a precision: its own, except for an accuracy contract
(fp32_3xtf32, precisions.FP32_ACCURATE: fp32's gauge on float32 operands), which any kernel
keeping it may answer; auto.choose prices each and takes the fastest."""
from __future__ import annotations

from ..base.precisions import FP32_ACCURATE, as_accurate


def answering(precision: str) -> tuple[str, ...]:
    """The precisions that may answer a call of `precision`, its own first (fp32_3xtf32:
    itself, fp32)."""
    return as_accurate(precision) if precision in FP32_ACCURATE else (precision,)


def runs_at(kernel, precision: str, out_dtype: str | None = None) -> str | None:
    """The first of answering(precision) that `kernel` computes (into `out_dtype`, where
    given); None if none."""
    return next((p for p in answering(precision) if p in kernel.precisions
                 and (out_dtype is None or kernel.computes(p, out_dtype))), None)

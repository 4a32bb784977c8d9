"""gemm()'s stand-in: what answers a call while its pick's entry points compile (seconds of NVRTC).

In "quick" mode (CUTE_GEMM_FIRST_CALL, the default) a kernel tagged "quick", compiled in about a
second, answers in a precision held to no larger a unit roundoff while the pick compiles in the
background; "wait" compiles the pick first (docs/design/first_call.md).
"""
from __future__ import annotations


from .. import registry
from ..base.setting import Setting
from ..registry.records import PRECISION_DTYPE, PRECISIONS, UNIT

QUICK = "quick"                    # Kernel.tags: the stand-in while a pick compiles
FIRST_CALL = "CUTE_GEMM_FIRST_CALL"
# first_call(): how gemm() meets a pick neither compiled nor cached: "quick" (the default)
# runs a stand-in meanwhile, "wait" compiles the pick first
first_call = Setting(FIRST_CALL, ("quick", "wait"))


def waiting():
    """gemm() calls in this block (this thread) compile their picks first: what checks and
    times the pick (cross_check, bench) must run the pick, never a stand-in."""
    return first_call.within("wait")


def stand_in(pick: registry.Kernel, precision: str, out_dtype: str,
             arch_int: int) -> tuple[registry.Kernel, str] | None:
    """(kernel, the precision it runs) that gemm() runs for `pick` while pick's entry points
    compile in the background (first_call() "quick"): the first kernel tagged "quick" that
    runs on `arch_int` and computes `precision` or one judged by no larger a unit roundoff
    (fp32 for tf32, bf16, fp16 and fp32_3xtf32), from operands of that precision's type or
    float32 (16-bit operands widened exactly), into `out_dtype` or float32 (then rounded
    once, as the pick rounds its sums). None in "wait" mode or where there is none."""
    if first_call() != "quick":
        return None
    ks = registry.KERNELS
    key = (pick.name, precision, out_dtype, arch_int)
    hit = _stand_ins.get(key)
    if hit is not None and hit[0] is ks and hit[1] is pick:   # (the same registry and pick)
        return hit[2]
    dtype, unit = PRECISION_DTYPE[precision], UNIT[precision]
    found = next(((x, p) for x in ks if QUICK in x.tags and x is not pick and x.runs_on(arch_int)
                  for p in (precision, *PRECISIONS)
                  if PRECISION_DTYPE[p] in (dtype, "float32") and UNIT[p] <= unit
                  and (x.computes(p, out_dtype) or x.computes(p, "float32"))), None)
    _stand_ins[key] = (ks, pick, found)
    return found


_stand_ins: dict = {}   # (pick, precision, out_dtype, arch) -> (registry.KERNELS, pick, stand_in)

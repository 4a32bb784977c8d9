"""gemm()'s stand-in while a pick compiles (seconds of NVRTC): in "quick" mode
(CUTE_GEMM_FIRST_CALL, the default) a kernel tagged "quick", compiled in about a second,
answers in a precision of no larger a unit roundoff; "wait" compiles the pick first
(docs/design/first_call.md)."""
from __future__ import annotations

from .. import registry
from ..base.setting import Setting
from ..registry.records import PRECISION_DTYPE, PRECISIONS, UNIT

QUICK = "quick"                    # Kernel.tags: the stand-in while a pick compiles
first_call = Setting("CUTE_GEMM_FIRST_CALL", ("quick", "wait"))


def waiting():
    """gemm() calls in this block (this thread) compile their picks first: what checks and
    times the pick (cross_check, bench) must run the pick, never a stand-in."""
    return first_call.within("wait")


def stand_in(pick: registry.Kernel, precision: str, out_dtype: str,
             arch_int: int) -> tuple[registry.Kernel, str] | None:
    """(kernel, precision it runs) answering for `pick` while it compiles: the first tagged
    QUICK on `arch_int` that computes `precision` or one of no larger a unit roundoff (fp32 for
    tf32, bf16, fp16, fp32_3xtf32) from operands of its type or float32, into `out_dtype` or
    float32 (rounded once after); None in "wait" mode or where there is none."""
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

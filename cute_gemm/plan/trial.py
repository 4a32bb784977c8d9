"""One call's candidate launches timed on its own operands: what gemm()'s tuning on first use
measures (select/firstuse.py). Each candidate runs as gemm() would run it (execute.gemm_device:
relayout copies, split reductions and composed passes included) into one scratch result, on
the call's stream, so it waits for the work that produces A and B; the time of a launch is
the mean of back-to-back repeats between two events (a fast candidate's repeats queue ahead
of the GPU: a launch costs the host ~5 µs)."""
from __future__ import annotations

import time

from .. import registry
from ..driver import launch, pool
from ..driver.arrays import Operand
from ..base.errors import CuteGemmError
from ..registry.records import Pick
from .execute import gemm_device
from .relayout import entry_for, scratch_bytes
from .resolve import UTIL, launch_entries, layout_launches, loaded

REPEATS = 5         # launches timed per candidate, at most (fewer where one is slow)
CUT = 1.5           # a candidate whose first timed launch is this much over the best stops there


def ready(k: registry.Kernel, A: Operand, B: Operand, T: Operand, precision: str, pick: Pick,
          ordinal: int, start: bool) -> bool:
    """Whether `k`'s launches of this call as `pick` run without compiling (their entry
    points held, or cached in memory or on disk); with `start`, those that are not begin
    compiling in the background (resolve.Loaded.ready). False where it cannot run it."""
    try:
        if k.gemm_of is not None:      # a composed kernel: its passes' and its GEMM's launches
            named = {x.name: x for x in (k, k.gemm_of.kernel, UTIL)}
            launches = [(named[n], g) for n, groups in layout_launches(k, "nn").items()
                        for g in groups]
        else:
            lk = loaded(k, ordinal)
            _, variant, _ = entry_for(k, lk, A, B, T, precision, pick)
            launches = [(k, launch_entries(k, variant, reduce=pick.reduce and pick.split_k > 0))]
        return all([loaded(x, ordinal).ready(g, start=start) for x, g in launches])
    except CuteGemmError:
        return False


def time_launches(candidates, A: Operand, B: Operand, out_dtype: str, ordinal: int,
                  stream: int, budget_s: float, clock=time.monotonic) -> tuple[dict, dict]:
    """({index: ms per launch}, {index: why it did not run}) of `candidates`, a sequence of
    (kernel, precision, pick), each run on A and B into a scratch (M, N) result of
    `out_dtype`, in order until `budget_s` seconds of host time have passed (the first
    always; the rest stay out of both). The scratch is freed in stream order."""
    m, n = A.shape[0], B.shape[1]
    T = Operand("tmp", None, True, 0, (m, n), (n, 1), out_dtype)
    T.ptr = pool.alloc_async(scratch_bytes(T), ordinal, stream)
    times: dict[int, float] = {}
    failed: dict[int, str] = {}
    end = clock() + budget_s
    e0, e1 = launch.Event(), launch.Event()
    try:
        for i, (k, precision, pick) in enumerate(candidates):
            if i and clock() > end:
                break
            try:
                # the first launch resolves and prepares it (and is not timed)
                fast = gemm_device(k, A, B, None, T, 1.0, 0.0, stream, ordinal, precision, pick)

                def once(fast=fast, k=k, precision=precision, pick=pick):
                    if fast is None:        # (cut into pieces, or computed apart: as gemm() does)
                        gemm_device(k, A, B, None, T, 1.0, 0.0, stream, ordinal, precision, pick)
                    else:
                        fast[1](A.ptr, B.ptr, T.ptr, 1.0, 0.0, stream)
                best = min(times.values(), default=None)
                e0.record(stream)
                once()
                e1.record(stream)
                ms = e1.elapsed_ms(e0)
                reps = 1 if best is not None and ms > CUT * best else REPEATS
                if reps > 1:
                    e0.record(stream)
                    for _ in range(reps):
                        once()
                    e1.record(stream)
                    ms = min(ms, e1.elapsed_ms(e0) / reps)
                times[i] = ms
            except CuteGemmError as e:
                failed[i] = str(e).splitlines()[0]
    finally:
        pool.free_async(T.ptr, stream)
    return times, failed

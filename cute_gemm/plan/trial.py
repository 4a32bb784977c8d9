"""One call's candidate launches timed on its own operands (gemm()'s tuning on first use,
select/firstuse.py), and the spin that holds the GPU while a timing is enqueued. Each
candidate runs as gemm() would (execute.gemm_device) into one scratch result on the call's
stream. Its cost is what a caller waits for: its launches' GPU time on a cold L2, measured
behind a spin, plus the host's time to enqueue them."""
from __future__ import annotations

import ctypes
import time

from .. import registry
from ..driver import kernel_args, launch, pool
from ..driver.arrays import Operand
from ..base.errors import CuteGemmError
from ..registry.records import Pick
from .execute import at_hand, gemm_device
from .relayout import scratch_bytes
from .resolve import loaded

SPIN = registry.Kernel(
    name="spin", family="util", source="util/spin.cu", variants=(registry.Variant("spin"),),
    block=(128, 1, 1), grid=lambda m, n, k, sms=1: (2 * sms, 1, 1),
    summary="every thread waits a number of SM cycles (the hold behind a timing)", seed="-")
HOLD_US = 150.0     # the spin before a candidate's first timing: longer than one call's enqueue
REPEATS = 5         # launches per timing, at most (about a millisecond of GPU time)
CUT = 1.5           # a candidate whose first timing is this much over the best stops there


class Spin:
    """A launch in which every thread of 2 CTAs an SM waits `us` µs at the highest SM clock."""

    def __init__(self, ordinal: int, us: float):
        info = launch.device_info(ordinal)
        self.fn = loaded(SPIN, ordinal).function("spin")
        self.grid = (2 * info.sm_count, 1, 1)
        self.args = kernel_args.packed(ctypes.c_longlong(int(us * info.clock_khz / 1e3)), (0,))

    def __call__(self, stream: int = 0) -> None:
        launch.launch(self.fn, self.grid, SPIN.block, 0, stream, self.args)


def ready(k: registry.Kernel, A: Operand, B: Operand, T: Operand, precision: str, pick: Pick,
          ordinal: int, start: bool) -> bool:
    """execute.at_hand, False where the call cannot run on `k` at all (its named error)."""
    try:
        return at_hand(k, A, B, T, precision, pick, ordinal, start)
    except CuteGemmError:
        return False


def result_operand(A: Operand, B: Operand, out_dtype: str, batch: tuple[int, int] = (1, 1)
                   ) -> Operand:
    """The row-major (M, N) result (a batch's one after another) the candidates write, not
    yet allocated."""
    m, n = A.shape[0], B.shape[1]
    return Operand("tmp", None, True, 0, (m, n), (n, 1), out_dtype, bcount=batch,
                   bstrides=(batch[1] * m * n, m * n))


def time_launches(candidates, A: Operand, B: Operand, out_dtype: str, ordinal: int,
                  stream: int, budget_s: float, clock=time.monotonic,
                  batch: tuple[int, int] = (1, 1), epi=None) -> tuple[dict, dict]:
    """({index: ms a call costs}, {index: why it did not run}) of `candidates` ((kernel,
    precision, pick)), each run on A and B into a scratch result of `out_dtype`, in order
    until `budget_s` seconds have passed (the first always); epi: the fused epilogue they
    apply (driver.epilogue.Prepared). Where the scratch or the spin cannot be had, nothing
    is timed."""
    T = result_operand(A, B, out_dtype, batch)
    l2 = launch.device_info(ordinal).l2_bytes
    owned: list[int] = []
    times: dict[int, float] = {}
    failed: dict[int, str] = {}

    def held(once, reps: int, hold_us: float) -> tuple[float, float]:
        """(GPU ms, host ms) of the fastest of `reps` calls, each on an emptied L2 and
        enqueued behind a spin."""
        us = int(-(-hold_us // 50)) * 50      # (a spin per 50 µs step: few to build)
        spin = spins.get(us) or spins.setdefault(us, Spin(ordinal, us))
        host = []
        for e0, e1 in events[:reps]:
            launch.memset_f32(evict, 0, l2 // 4, stream)
            spin(stream)
            e0.record(stream)
            t = time.perf_counter()
            once()
            host.append(time.perf_counter() - t)
            e1.record(stream)
        return min(e1.elapsed_ms(e0) for e0, e1 in events[:reps]), min(host) * 1e3

    try:
        try:
            T.ptr = pool.alloc_async(scratch_bytes(T) * batch[0] * batch[1], ordinal, stream)
            owned.append(T.ptr)
            evict = pool.alloc_async(l2, ordinal, stream)
            owned.append(evict)
            spins = {int(HOLD_US): Spin(ordinal, HOLD_US)}    # (compiled, if need be, before the clock)
        except CuteGemmError:   # no room for the scratch, no spin: nothing timed, the call goes on
            return {}, {}
        events = [(launch.Event(), launch.Event()) for _ in range(REPEATS)]
        epi_values = () if epi is None else (epi.values,)
        end = clock() + budget_s
        for i, (k, precision, pick) in enumerate(candidates):
            if i and clock() > end:
                break
            try:
                # the first launch resolves and prepares it (and is not timed)
                fast = gemm_device(k, A, B, None, T, 1.0, 0.0, stream, ordinal, precision, pick,
                                   epi=epi)

                def once(fast=fast, k=k, precision=precision, pick=pick):
                    if fast is None:        # (cut into pieces, or computed apart: as gemm() does)
                        gemm_device(k, A, B, None, T, 1.0, 0.0, stream, ordinal, precision, pick,
                                    epi=epi)
                    else:
                        fast[1](A.ptr, B.ptr, T.ptr, 1.0, 0.0, stream, *epi_values)
                best = min(times.values(), default=None)
                gpu, host = held(once, 1, HOLD_US)
                ms = gpu + host
                if best is None or ms <= CUT * best:    # a contender: timed again
                    reps = max(1, min(REPEATS, int(1.0 / max(gpu, 1e-3))))
                    gpu2, host2 = held(once, reps, 50.0 + 3e3 * host)
                    ms = min(ms, min(gpu, gpu2) + min(host, host2))
                times[i] = ms
            except CuteGemmError as e:
                failed[i] = str(e).splitlines()[0]
    finally:
        for ptr in owned:
            pool.free_async(ptr, stream)
    return times, failed

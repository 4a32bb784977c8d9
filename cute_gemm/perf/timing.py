"""The timing loops every figure perf reports comes from, one per kind of time, with Flush (L2
evicted, the GPU held) and warm_up. Why: docs/design/tables.md#host-time-in-event-times."""
from __future__ import annotations

import contextlib
import math
import signal
import time
import warnings
from typing import Callable

from .. import driver
from ..driver import launch
from ..plan.trial import Spin
from .schema import BURST

HOLD_US = 150.0     # Flush's spin: longer than the host takes to enqueue a timed call
WARM_UP_S = 0.5     # GPU work before the first timing of a run (warm_up)
def rotation_sets(bytes_per_set: int, l2_bytes: int, free_bytes: int | None = None, *,
                  max_sets: int = 256) -> int:
    """A/B/C sets to cycle through: together over twice the L2, within half the free memory."""
    per = max(bytes_per_set, 1)
    n = min(max(2, math.ceil(2 * l2_bytes / per)), max_sets)
    return max(1, n if free_bytes is None else min(n, free_bytes // 2 // per))


class Flush:
    """Before each timed launch: a memset over twice the L2 (evicts the previous launch's
    A/B/C), then a spin of HOLD_US on every SM that keeps the GPU busy while Python enqueues
    the start event and the launch, so host time is not counted as the kernel's."""

    def __init__(self, l2_bytes: int):
        self.nbytes, self.hold_us = int(min(max(2 * l2_bytes, 8 << 20), 512 << 20)), HOLD_US
        self.buf = launch.DeviceBuffer(self.nbytes)
        self.spin = Spin(driver.current_ordinal(), self.hold_us)

    def __call__(self) -> None:
        self.evict()
        self.spin()

    def evict(self) -> None:      # the memset alone: call_times counts the host's time
        launch.memset_f32(self.buf.ptr, 0, self.nbytes // 4)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.buf.close()


def warm_up(flush: Callable[[], None], seconds: float = WARM_UP_S) -> None:
    """Back-to-back flushes for `seconds` before a run's first timing: an idle GPU sits at its
    lowest clock and its first millisecond of work runs slow."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(16):
            flush()
        launch.synchronize()


def event_times(fn: Callable[[int], None], n_sets: int, flush: Callable[[], None], *,
                repeats: int, warmup: int, min_repeats: int = 1,
                max_seconds: float | None = None) -> list[float]:
    """Per-launch ms of fn(i) (i cycling over n_sets) between CUDA events, each after flush();
    with max_seconds, warm-up and repeats fit that budget at a first launch's time. Warns when
    over a tenth of the calls kept the host busy past the flush's hold."""
    e0, e1 = launch.Event(), launch.Event()
    flush()
    e0.record()
    fn(0)
    e1.record()
    n_warm, n, est = warmup, repeats, max(e1.elapsed_ms(e0), 1e-3)    # the first: an estimate
    if max_seconds is not None:
        fit = max_seconds * 1e3 / est       # launches that fit the budget
        n_warm, n = min(warmup, max(1, int(0.2 * fit))), min(repeats, int(fit))
    for i in range(n_warm):
        fn((i + 1) % n_sets)
    n = max(min_repeats, n)
    events = [(launch.Event(), launch.Event()) for _ in range(n)]
    hold_us, late = getattr(flush, "hold_us", None), 0
    for j, (s, e) in enumerate(events):
        flush()
        t = time.perf_counter()
        s.record()
        fn(j % n_sets)
        e.record()
        late += hold_us is not None and (time.perf_counter() - t) * 1e6 > hold_us
    if late > n // 10:
        warnings.warn(f"{late} of {n} timed calls kept the host busier than the flush holds the "
                      f"GPU ({hold_us:g} µs): their times may include host time", RuntimeWarning)
    return [e.elapsed_ms(s) for s, e in events]


def call_times(fn: Callable[[int], None], n_sets: int, flush: Flush, *,
               repeats: int) -> list[float]:
    """Per-call ms of fn(i) as a caller waits: L2 flushed (no hold) and the GPU drained before
    each call, so the host's time before the launch is inside the events."""
    return burst_times(fn, n_sets, lambda: (flush.evict(), launch.synchronize()), repeats=repeats,
                       calls=1)


def burst_times(fn: Callable[[int], None], n_sets: int, flush: Callable[[], None], *,
                repeats: int, calls: int = BURST) -> list[float]:
    """ms per call of `calls` calls queued back to back (input sets rotated), a sample per
    burst, each after flush() with its hold: a loop's steady rate."""
    e0, e1 = launch.Event(), launch.Event()
    out = []
    for r in range(repeats):
        flush()
        e0.record()
        for j in range(calls):
            fn((r * calls + j) % n_sets)
        e1.record()
        out.append(e1.elapsed_ms(e0) / calls)
    return out


def wall_us(fn: Callable[[], object], calls: int = 1, repeats: int = 1) -> list[float]:
    """`repeats` samples of µs per call: wall time of `calls` back-to-back calls and one final
    synchronize, from an idle device (the GPU's rate where it is the slower side)."""
    out = []
    for _ in range(repeats):
        launch.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        launch.synchronize()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return out


def host_us(fn: Callable[[], object], calls: int = 1, burst: int = 128) -> float:
    """The host's own µs per call: bursts shorter than the driver's launch queue, each begun
    on an idle device and timed without waiting for the GPU."""
    total = 0.0
    for start in range(0, calls, burst):
        launch.synchronize()
        t0 = time.perf_counter()
        for _ in range(min(burst, calls - start)):
            fn()
        total += time.perf_counter() - t0
    launch.synchronize()
    return total / max(calls, 1) * 1e6


@contextlib.contextmanager
def interruptible():
    """SIGTERM (a `timeout`, a job scheduler) raises KeyboardInterrupt in this block, as Ctrl-C
    does, so that a long run can keep what it measured; outside the main thread, nothing."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    try:
        before = signal.signal(signal.SIGTERM, stop)
    except ValueError:          # (not the main thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)

"""Stream-K workspaces, recycled without a memset or a host wait: their counters are zeroed
once and every stream-K launch leaves them zero (streamk.cuh); a use ends with an event the
next user's stream waits for. Captures use pool.py."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from .. import driver


@dataclass
class Workspace:
    ordinal: int
    ptr: int
    nbytes: int
    event: object
    stream: int = -1          # the handle of its last use (-1: none yet)


_free: list[Workspace] = []
_lock = threading.Lock()


def _done(drv, w: Workspace) -> bool:
    return drv.cuEventQuery(w.event)[0] == drv.CUresult.CUDA_SUCCESS


def take(ordinal: int, nbytes: int, stream: int, counters: int) -> Workspace:
    """A workspace of at least nbytes whose first `counters` int32 are zero for work queued on
    `stream` from now on (one last used there, else one whose event completed, else a new one);
    give() it back once that work is queued."""
    drv, w = driver.bindings(), None
    with _lock:         # the common case, one last used on this stream: no event query
        for i, x in enumerate(_free):
            if x.stream == stream and x.ordinal == ordinal and x.nbytes >= nbytes:
                w = _free.pop(i)
                break
    if w is None:
        # event queries and an allocation, which must not end another thread's global capture
        with driver.relaxed():
            with _lock:
                w = next((x for x in _free if x.ordinal == ordinal and x.nbytes >= nbytes
                          and _done(drv, x)), None)
                if w is not None:
                    _free.remove(w)
            if w is None:
                return _new(drv, ordinal, nbytes, stream, counters)   # zeroed on `stream`
    # waited for on its own last stream too: that handle may name a new stream by now, the
    # old one destroyed with this workspace's work still queued
    try:
        driver.check(drv.cuStreamWaitEvent(stream, w.event, 0), "cuStreamWaitEvent")
    except BaseException:
        with _lock:     # not used: its event still marks its last use
            _free.append(w)
        raise
    return w


def _new(drv, ordinal: int, nbytes: int, stream: int, counters: int) -> Workspace:
    driver.ensure_context(ordinal)
    ptr, ev = int(driver.check(drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})")), None
    try:
        ev = driver.check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        driver.check(drv.cuMemsetD32Async(ptr, 0, counters, stream), "cuMemsetD32Async")
    except BaseException:
        if ev is not None:
            drv.cuEventDestroy(ev)
        drv.cuMemFree(ptr)
        raise
    return Workspace(ordinal, ptr, nbytes, ev)


def give(w: Workspace, stream: int) -> None:
    """Mark the end of the use queued on `stream` and make the workspace available."""
    drv = driver.bindings()
    try:
        driver.check(drv.cuEventRecord(w.event, stream), "cuEventRecord")
    except BaseException:
        drv.cuStreamSynchronize(stream)     # nothing marks its end: only a finished stream does
        raise
    finally:
        w.stream = stream
        with _lock:
            _free.append(w)


def trim() -> int:
    """Free the workspaces no queued work uses; safe at any time, from any thread. Returns how
    many were freed."""
    drv = driver.bindings()
    with driver.relaxed():
        with _lock:
            done = [w for w in _free if _done(drv, w)]
            for w in done:
                _free.remove(w)
        for w in done:
            driver.ensure_context(w.ordinal)
            drv.cuEventDestroy(w.event)
            drv.cuMemFree(w.ptr)
    return len(done)

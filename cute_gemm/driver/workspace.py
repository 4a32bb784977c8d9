"""Stream-K workspaces, recycled without a memset or a host wait.

A workspace's arrival counters are zeroed once, when it is made, and every stream-K launch
leaves them zero again (include/cute_gemm/streamk.cuh), so a workspace can serve launch
after launch. Each use ends with an event recorded on the stream that used it, and the
next user's stream waits for that event (cuStreamWaitEvent: an ordering on the device, no
host wait) before it launches: correct on any stream and in any thread, whatever the
stream handles (the per-thread default stream has one handle in every thread). Which
free workspace a launch takes only decides how much it waits: one last used on the same
handle, or whose event has completed, else a new one, so launches on busy streams do not
queue behind each other. In a CUDA graph capture the runtime uses stream-ordered scratch
instead (the graph must own its memory; launcher.Launcher).
"""
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


def take(ordinal: int, nbytes: int, stream: int, counters: int) -> Workspace:
    """A workspace of at least nbytes whose first `counters` int32 are zero for work queued
    on `stream` from now on; hand it back with give() once that work is queued."""
    drv = driver.bindings()
    with _lock:         # the common case, one last used on this stream: no driver call
        w = next((x for x in _free if x.ordinal == ordinal and x.nbytes >= nbytes
                  and x.stream == stream), None)
        if w is not None:
            _free.remove(w)
    if w is None:
        # event queries and an allocation, which must not end another thread's global capture
        with driver.relaxed():
            w = _another(drv, ordinal, nbytes, stream, counters)
            if w.stream == -1:
                return w            # new: its counters zeroed on `stream`
    try:
        driver.check(drv.cuStreamWaitEvent(stream, w.event, 0), "cuStreamWaitEvent")
    except BaseException:
        give_back_unused(w)
        raise
    return w


def _another(drv, ordinal: int, nbytes: int, stream: int, counters: int) -> Workspace:
    """A free workspace whose last use has completed, else a new one."""
    with _lock:
        for i, w in enumerate(_free):
            if (w.ordinal == ordinal and w.nbytes >= nbytes
                    and drv.cuEventQuery(w.event)[0] == drv.CUresult.CUDA_SUCCESS):
                return _free.pop(i)
    driver.ensure_context(ordinal)
    ptr = int(driver.check(drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes})"))
    try:
        ev = driver.check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING),
                           "cuEventCreate")
    except BaseException:
        drv.cuMemFree(ptr)
        raise
    w = Workspace(ordinal, ptr, nbytes, ev)
    try:
        driver.check(drv.cuMemsetD32Async(ptr, 0, counters, stream), "cuMemsetD32Async")
    except BaseException:
        _release(w)
        raise
    return w


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


def give_back_unused(w: Workspace) -> None:
    """A workspace taken but not used: its event still marks its last use."""
    with _lock:
        _free.append(w)


def _release(w: Workspace) -> None:
    drv = driver.bindings()
    drv.cuEventDestroy(w.event)
    drv.cuMemFree(w.ptr)


def trim() -> int:
    """Free the workspaces no queued work uses any more; safe at any time, from any thread
    (a capture elsewhere included). Returns how many were freed."""
    drv = driver.bindings()
    with driver.relaxed():
        with _lock:
            done = [w for w in _free if drv.cuEventQuery(w.event)[0] == drv.CUresult.CUDA_SUCCESS]
            for w in done:
                _free.remove(w)
        for w in done:
            driver.ensure_context(w.ordinal)
            _release(w)
    return len(done)

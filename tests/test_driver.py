"""The driver layer's own state with a fake cuda.bindings: stream-K workspaces handed on by
event and zeroed once (driver/workspace.py), and a function's opt-in to more dynamic shared
memory (driver/launch.py). No GPU."""
from __future__ import annotations

import types

import pytest

from cute_gemm import driver
from cute_gemm.base.errors import CudaError
from cute_gemm.driver import launch, workspace


def test_workspaces_are_zeroed_once_and_handed_on_by_event(monkeypatch):
    log, done = [], set()

    class Drv:
        CUresult = types.SimpleNamespace(CUDA_SUCCESS=0, CUDA_ERROR_NOT_READY=600)
        CUevent_flags = types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2)

        def __init__(self):
            self.n = 0

        def cuMemAlloc(self, nbytes):
            self.n += 1
            log.append(("alloc", self.n))
            return (0, self.n << 20)

        def cuEventCreate(self, flags):
            return (0, f"ev{self.n}")

        def cuMemsetD32Async(self, ptr, v, count, stream):
            log.append(("zero", ptr >> 20, count, stream))
            return (0,)

        def cuStreamWaitEvent(self, stream, ev, flags):
            log.append(("wait", stream, ev))
            return (0,)

        def cuEventRecord(self, ev, stream):
            done.discard(ev)
            return (0,)

        def cuEventQuery(self, ev):
            return (0,) if ev in done else (600,)

        def cuEventDestroy(self, ev):
            return (0,)

        def cuMemFree(self, ptr):
            log.append(("free", ptr >> 20))
            return (0,)

        CUstreamCaptureMode = types.SimpleNamespace(CU_STREAM_CAPTURE_MODE_RELAXED=2)

        def cuThreadExchangeStreamCaptureMode(self, mode):
            return (0, mode)
    drv = Drv()
    monkeypatch.setattr(driver, "bindings", lambda: drv)
    monkeypatch.setattr(driver, "ensure_context", lambda ordinal: None)
    monkeypatch.setattr(workspace, "_free", [])
    w1 = workspace.take(0, 1000, 7, 64)                 # new: counters zeroed on its stream
    assert log == [("alloc", 1), ("zero", 1, 64, 7)]
    workspace.give(w1, 7)
    w = workspace.take(0, 1000, 7, 64)                  # same stream: the same one, still waited for
    # by event: the handle may name a new stream, the old one destroyed with its work queued
    assert w is w1 and log[-1] == ("wait", 7, "ev1")
    workspace.give(w, 7)
    w2 = workspace.take(0, 1000, 9, 64)                 # busy elsewhere: a new one, no waiting
    assert w2 is not w1 and log[-2:] == [("alloc", 2), ("zero", 2, 64, 9)]
    workspace.give(w2, 9)
    done.add("ev1")                                     # stream 7's launch has finished
    w = workspace.take(0, 1000, 5, 64)                  # another stream takes it, after its event
    assert w is w1 and log[-1] == ("wait", 5, "ev1")
    assert workspace.take(0, 5000, 5, 64).ptr == 3 << 20   # too small ones are not taken
    workspace.give(w, 5)
    done.update({"ev1", "ev2"})
    assert workspace.trim() == 2 and ("free", 1) in log and ("free", 2) in log


def test_a_failed_wait_or_record_names_the_call_and_keeps_the_workspace(monkeypatch):
    """A failed wait in take() or record in give() raises CudaError naming the call, and the
    workspace stays in the free list (a failed record after the stream is synchronized,
    nothing else marking its end)."""
    fail, log = set(), []

    class Drv:
        CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)

        def cuStreamWaitEvent(self, stream, ev, flags):
            return (700 if "wait" in fail else 0,)

        def cuEventRecord(self, ev, stream):
            return (700 if "record" in fail else 0,)

        def cuStreamSynchronize(self, stream):
            log.append(("sync", stream))
            return (0,)

        def cuGetErrorString(self, err):
            return (0, b"an illegal address")

        def cuGetErrorName(self, err):
            return (0, b"CUDA_ERROR_ILLEGAL_ADDRESS")
    monkeypatch.setattr(driver, "bindings", lambda: Drv())
    w = workspace.Workspace(0, 1 << 20, 4096, "ev", stream=7)
    monkeypatch.setattr(workspace, "_free", [w])
    fail.add("wait")
    with pytest.raises(CudaError, match="cuStreamWaitEvent"):
        workspace.take(0, 1000, 7, 64)
    assert workspace._free == [w]
    fail.clear()
    assert workspace.take(0, 1000, 7, 64) is w and workspace._free == []
    fail.add("record")
    with pytest.raises(CudaError, match="cuEventRecord"):
        workspace.give(w, 9)
    assert workspace._free == [w] and w.stream == 9 and log == [("sync", 9)]


def test_a_function_opts_into_dynamic_smem_where_static_and_dynamic_pass_48_kb(monkeypatch):
    """The opt-in follows the sum: 48 KB of dynamic smem beside 128 static bytes (the
    64x64 tensor-core twins) opts in, once; 48 KB alone, or less beside static smem, does not."""
    raised = []

    class Drv:
        CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)
        CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)

        def cuFuncSetAttribute(self, h, attr, value):
            raised.append((h, value))
            return (0,)

        def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, h, threads, smem):
            return (0, 2)
    monkeypatch.setattr(driver, "bindings", lambda: Drv())
    twin = launch.Function("k", "k_sk", "twin", static_smem=128)
    plain = launch.Function("k", "k", "plain")
    for f in (twin, twin, plain):
        assert launch.occupancy(f, 128, 48 * 1024) == 2
    launch.occupancy(launch.Function("k", "k2", "small", static_smem=1024), 128, 40 * 1024)
    assert raised == [("twin", 48 * 1024)]

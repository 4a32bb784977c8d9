"""A stand-in for cuda.bindings.driver that records what run() asks of the GPU, so the
launch planning (hot paths, aliasing, chunked launches, stream ordering) is tested on a
machine without one. Pointers are plain integers; nothing is read or written."""
from __future__ import annotations

import ctypes
import dataclasses
import itertools
import threading
import time
import types

from cuda.bindings import driver as real_driver

from cute_gemm import api, driver, registry
from cute_gemm.driver import kernel_args, launch, pool, workspace
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.plan import composed, execute, relayout, resolve, trial

# the entry points that take a fused epilogue's EpiArgs (recorded with the whole block)
FUSED_ENTRIES = frozenset(e for k in registry.compiled() if k.fused for e in k.entries)
FUSED_TMA_ENTRIES = frozenset(v.entry for k in registry.compiled() if k.fused for v in k.variants
                              if v.tma) | frozenset(v.cut for k in registry.compiled() if k.fused
                                                    for v in k.variants if v.tma and v.cut)
# the batched twins of persistent TMA kernels (c6's NAME_b): the walk's batch after the maps
WALK_TWINS = frozenset(v.batch for k in registry.compiled() for v in k.variants if v.batch and v.tma)
# the batched twins of kernels whose own entries take no batch (Variant.batch)
BATCH_TWINS = frozenset(v.batch for k in registry.compiled() for v in k.variants if v.batch)


def _blocks() -> dict:
    """The argument block (struct, offsets) each GEMM entry's launches pack: launcher.Launcher's
    kind of launch, with EpiArgs last where the kernel is fused."""
    ka = kernel_args
    by_kind = {("", False): (ka.GemmArgs, ka.GEMM_OFFSETS), ("", True): (ka.GemmArgsEpi, ka.GEMM_EPI_OFFSETS),
               ("batch", False): (ka.GemmArgsBatch, ka.GEMM_BATCH_OFFSETS),
               ("batch", True): (ka.GemmArgsBatchEpi, ka.GEMM_BATCH_EPI_OFFSETS),
               ("ws", False): (ka.GemmArgsWs, ka.GEMM_WS_OFFSETS),
               ("ws", True): (ka.GemmArgsWsEpi, ka.GEMM_WS_EPI_OFFSETS),
               ("tma", False): (ka.GemmArgsTma, ka.GEMM_TMA_OFFSETS),
               ("tma", True): (ka.GemmArgsTmaEpi, ka.GEMM_TMA_EPI_OFFSETS),
               ("tma_ws", False): (ka.GemmArgsTmaWs, ka.GEMM_TMA_WS_OFFSETS),
               ("tma_ws", True): (ka.GemmArgsTmaWsEpi, ka.GEMM_TMA_WS_EPI_OFFSETS),
               ("tma_batch", False): (ka.GemmArgsTmaBatch, ka.GEMM_TMA_BATCH_OFFSETS),
               ("tma_batch", True): (ka.GemmArgsTmaBatchEpi, ka.GEMM_TMA_BATCH_EPI_OFFSETS)}
    out = {}
    for k in registry.compiled():
        for v in k.variants:
            kinds = {v.entry: "tma" if v.tma else "batch" if k.plain_takes_batch else "",
                     v.batch: "tma_batch" if v.tma else "batch", v.cut: "tma_ws",
                     v.stream_k: "ws", v.split: "ws"}
            out.update({e: by_kind[kind, k.fused] for e, kind in kinds.items() if e})
    return out


# what each GEMM entry's launch packs (record_launch records the whole block)
BLOCKS = _blocks()

# the device the stub stands for, where a test needs its limits (tables, selector, smem)
H100 = launch.DeviceInfo(0, "NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000, 232448, 233472,
                         50 << 20, 13000)


class Dev:
    """A __cuda_array_interface__ operand at a made-up address (strides in bytes)."""

    def __init__(self, shape, ptr, strides=None, typestr="<f4", readonly=False, stream=None):
        self.shape, self.ptr, self.typestr, self.readonly = shape, ptr, typestr, readonly
        self.strides = strides if strides is not None else (4 * shape[1], 4)
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        d = {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, self.readonly),
             "strides": self.strides, "version": 3}
        if self.stream is not None:
            d["stream"] = self.stream
        return d


def gemm_args(blob: bytes):
    return kernel_args.GemmArgs.from_buffer_copy(blob[:ctypes.sizeof(kernel_args.GemmArgs)])


def copies_of(blob: bytes) -> list:
    """The copies (relayout.Copy2d) of a recorded scale2d launch."""
    c = relayout.CopyArgs.from_buffer_copy(blob).copies
    return list(c.c[:c.count])


def scale_args(blob: bytes):
    """The one copy of a recorded scale2d launch."""
    (copy,) = copies_of(blob)
    return copy


def split_args(blob: bytes):
    return composed.SplitArgs.from_buffer_copy(blob)


# a composed kernel's passes (cute_3xtf32: kernels/cute/c7_3xtf32.cu) by entry suffix
PASSES = {"range": (composed.RangeArgs, composed.RANGE_OFFSETS),
          "split": (composed.SplitArgs, composed.SPLIT_OFFSETS),
          "finish": (composed.FinishArgs, composed.FINISH_OFFSETS),
          "fix": (composed.FixArgs, composed.FIX_OFFSETS),
          "norms": (composed.NormsArgs, composed.NORMS_OFFSETS),
          "refine": (composed.RefineArgs, composed.REFINE_OFFSETS)}


def pass_of(entry: str) -> str | None:
    """The pass a composed kernel's entry runs (cute_3xtf32_split_a -> "split"), or None."""
    if not entry.startswith("cute_3xtf32_"):
        return None
    return entry[len("cute_3xtf32_"):].split("_")[0]


def pass_args(e):
    """The argument struct of a recorded pass launch."""
    return PASSES[pass_of(e[1])][0].from_buffer_copy(e[4])


class Events(list):
    """The recorded events; `launch_result` what a launch returns (a CUresult);
    `yield_in_launch`: a launch lets other threads run before it reads its arguments, as
    the driver does (it runs without the GIL); `compiling`: kernels whose launches are not
    compiled yet (Loaded.ready says False and records ("behind", kernel, entries) where it
    would begin their compile); `capturing`: every stream records a CUDA graph; `cost`:
    entry point -> ms, what cuEventElapsedTime says the launches between two events took."""
    launch_result = 0
    yield_in_launch = False
    compiling: frozenset = frozenset()
    capturing = False               # every stream captures a graph
    clusters = 16                   # what cuOccupancyMaxActiveClusters says
    cost = staticmethod(lambda entry: 1.0)

    def host_waits(self) -> list:
        """The events where the host waits for the device or copies from it."""
        return [e for e in self if e[0] in ("sync", "event_sync", "dtoh")]


def install(monkeypatch):
    """Replace the driver; returns the list of recorded events: ("launch", entry, grid,
    stream, argument bytes), ("alloc", ptr, nbytes, stream), ("free", ptr, stream),
    ("memset", ptr, count, stream), ("record", event, stream), ("wait", stream, event),
    ("dtoh", src, nbytes, stream), ("sync", stream), ("event_sync", event),
    ("tmap", ptr, dims, ld_bytes, box[, batch modes]), ("set_context", ctx); a launch through
    cuLaunchKernelEx is preceded by ("launch_ex", entry, {"cluster": CTAs, "pdl": bool})."""
    events = Events()
    addrs = itertools.count(0x7000_0000_0000, 1 << 36)

    def record_launch(entry, gx, gy, gz, stream, addr):
        if events.yield_in_launch:
            time.sleep(0)
        util = entry.startswith("scale2d")      # one per element type: scale2d, scale2d_fp16, ...
        p = pass_of(entry)                      # a composed kernel's pass
        struct, offsets = ((relayout.CopyArgs, relayout.COPY_OFFSETS) if util else PASSES[p] if p
                           else (ctypes.c_longlong, (0,)) if entry == "spin"   # perf.timing.Spin
                           else BLOCKS.get(entry, (kernel_args.GemmArgs, kernel_args.GEMM_OFFSETS)))
        ptrs = (ctypes.c_void_p * len(offsets)).from_address(addr)
        size = ctypes.sizeof(struct)
        events.append(("launch", entry, (gx, gy, gz), stream, ctypes.string_at(ptrs[0], size)))
        return events.launch_result

    class Result(int):
        CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 0, 1, 906

    class Drv:
        CUresult = Result
        CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)
        CUevent_flags = types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2)
        CUstreamCaptureStatus = types.SimpleNamespace(CU_STREAM_CAPTURE_STATUS_NONE=0)
        # (the real launch configuration's classes: launch.launch_config builds them)
        CUlaunchConfig, CUlaunchAttribute = real_driver.CUlaunchConfig, real_driver.CUlaunchAttribute
        CUlaunchAttributeID = real_driver.CUlaunchAttributeID
        CUstreamCaptureMode = types.SimpleNamespace(CU_STREAM_CAPTURE_MODE_GLOBAL=0,
                                                    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL=1,
                                                    CU_STREAM_CAPTURE_MODE_RELAXED=2)

        def __init__(self):
            self.current = 1

        def cuGetErrorName(self, err):
            return (0, f"CUDA_ERROR_{int(err)}".encode())

        def cuGetErrorString(self, err):
            return (0, b"stub error")

        def cuFuncSetAttribute(self, h, attr, value):
            return (0,)

        def cuCtxGetCurrent(self):
            return (0, self.current)

        def cuCtxSetCurrent(self, ctx):
            events.append(("set_context", int(ctx)))
            self.current = int(ctx)
            return (0,)

        def cuThreadExchangeStreamCaptureMode(self, mode):
            events.append(("capture_mode", int(mode)))
            return (0, 0)

        def cuStreamIsCapturing(self, h):
            return (0, int(events.capturing))

        def cuEventCreate(self, flags):
            return (0, object())

        def cuEventRecord(self, ev, stream):
            events.append(("record", ev, stream))
            return (0,)

        def cuStreamWaitEvent(self, stream, ev, flags):
            events.append(("wait", stream, ev))
            return (0,)

        def cuMemAlloc(self, nbytes):              # a stream-K workspace (workspace.take)
            ptr = next(addrs)
            events.append(("alloc_ws", ptr, nbytes))
            return (0, ptr)

        def cuMemFree(self, ptr):
            events.append(("free_ws", ptr))
            return (0,)

        def cuEventSynchronize(self, ev):
            events.append(("event_sync", ev))
            return (0,)

        def cuEventElapsedTime(self, start, end):
            at = {e[1]: i for i, e in enumerate(events) if e[0] == "record"}   # the last records
            return (0, sum(events.cost(e[1]) for e in events[at[start]:at[end]] if e[0] == "launch"))

        def cuEventQuery(self, ev):
            return (0,)

        def cuEventDestroy(self, ev):
            return (0,)

        def cuMemsetD32Async(self, ptr, value, count, stream):
            events.append(("memset", ptr, count, stream))
            return (0,)

        def cuMemcpyDtoHAsync(self, host, src, nbytes, stream):
            events.append(("dtoh", src, nbytes, stream))
            return (0,)

        def cuStreamSynchronize(self, stream):
            events.append(("sync", stream))
            return (0,)

        def cuLaunchKernel(self, h, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
            return (Result(record_launch(h, gx, gy, gz, stream, addr)),)

        def cuLaunchKernelEx(self, cfg, h, addr, extra):
            ids = real_driver.CUlaunchAttributeID
            how = {"cluster": 1, "pdl": False}
            for a in cfg.attrs[:cfg.numAttrs]:
                if a.id == ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
                    how["cluster"] = a.value.clusterDim.x * a.value.clusterDim.y * a.value.clusterDim.z
                elif a.id == ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
                    how["pdl"] = bool(a.value.programmaticStreamSerializationAllowed)
            events.append(("launch_ex", h, how))
            return (Result(record_launch(h, cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ,
                                         int(cfg.hStream), addr)),)

        def cuOccupancyMaxActiveClusters(self, h, cfg):
            return (0, events.clusters)

    def alloc_async(nbytes, ordinal, stream):
        ptr = next(addrs)
        events.append(("alloc", ptr, nbytes, stream))
        return ptr

    def free_async(ptr, stream):
        events.append(("free", ptr, stream))

    def encode_tensor_map(ptr, precision, dims, ld_bytes, box, swizzle=128, batch=()):
        events.append(("tmap", ptr, tuple(dims), ld_bytes, tuple(box)) + ((tuple(batch),) if batch else ()))
        return ptr.to_bytes(8, "little") * (launch.TMA_MAP_BYTES // 8)    # (a map names its pointer)

    drv = Drv()
    monkeypatch.setattr(driver, "bindings", lambda: drv)
    monkeypatch.setattr(driver, "_init_done", True)
    monkeypatch.setattr(pool, "alloc_async", alloc_async)
    monkeypatch.setattr(pool, "free_async", free_async)
    monkeypatch.setattr(launch, "encode_tensor_map", encode_tensor_map)
    monkeypatch.setattr(launch, "_events", threading.local())
    monkeypatch.setattr(launch, "_zero_is", [])
    monkeypatch.setitem(driver._contexts, 0, (1, 1))
    monkeypatch.setattr(api, "_count", [1])
    for part in dataclasses.fields(resolve.CACHE):      # every cache the resolver keeps
        monkeypatch.setattr(resolve.CACHE, part.name, {})
    # stub workspaces must not outlive the test: a real launch on the same stream would take them
    monkeypatch.setattr(workspace, "_free", [])
    monkeypatch.setenv("CUTE_GEMM_STREAM_K", "0")    # (occupancy needs a real driver)
    fns: dict = {}
    modes: dict = {}        # kernel name -> Loaded.modes (kept, as a real Loaded keeps it)

    class Plan:
        smem_limit, sm_count, ordinal = 232448, 132, 0

        def __init__(self, k):
            self.k, self.modes = k, modes.setdefault(k.name, {})

        def function(self, entry, group=()):
            return fns.setdefault((self.k.name, entry), launch.Function(self.k.name, entry, entry))

        @property
        def functions(self):
            return {e: f for (name, e), f in fns.items() if name == self.k.name}

        def ready(self, group, start=True):
            if self.k.name not in events.compiling:
                return True
            if start:
                events.append(("behind", self.k.name, tuple(group)))
            return False
    for mod in (resolve, execute, relayout, composed, trial):
        monkeypatch.setattr(mod, "loaded", lambda k, ordinal: Plan(k))
    return events


def launches(events, kind=None):
    """The recorded launches: all, or only the GEMM kernels' (kind "gemm"), the scale/copy
    utility's (kind "scale2d") or a composed kernel's passes (kind "range", "split", "norms",
    "finish", "fix", "refine")."""
    def kind_of(entry):
        return "scale2d" if entry.startswith("scale2d") else pass_of(entry) or "gemm"
    return [e for e in events if e[0] == "launch" and (kind is None or kind_of(e[1]) == kind)]


def gemm_launches(events):
    """The argument blocks (gemm_args) of the GEMM launches recorded, in order."""
    return [gemm_args(e[4]) for e in launches(events, "gemm")]


class Buffer:
    """A DeviceArray's memory at a made-up address: nothing is allocated or freed."""

    def __init__(self, ptr):
        self.ptr = ptr


def device_array(shape, ptr, dtype="float32", strides=None) -> DeviceArray:
    """A DeviceArray (bfloat16 too: it has no CAI) at a made-up address."""
    return DeviceArray(shape, strides=strides, dtype=dtype, _buffer=Buffer(ptr))

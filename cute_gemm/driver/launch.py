"""Device info, modules, launches, streams, memory, events and TMA maps through
driver.bindings(), every call checked; argument blocks packed once with ctypes (kernel_args),
the cheapest launch path."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from dataclasses import dataclass, field

from .. import driver
from . import check, lock, relaxed
from ..base.errors import CaptureError, CudaError, StreamError
from ..base.precisions import PRECISION
from ..build.compile import param_sizes_from_cubin
# the argument blocks and the scratch pools' user calls, reachable here too
from .kernel_args import (TMA_MAP_BYTES, pack_gemm_args, pack_gemm_args_batch,  # noqa: F401
                          pack_gemm_args_batch_epi, pack_gemm_args_tma, pack_gemm_args_tma_batch,
                          pack_gemm_args_tma_batch_epi, pack_gemm_args_tma_epi, pack_gemm_args_tma_ws,
                          pack_gemm_args_tma_ws_epi, pack_gemm_args_ws, pack_gemm_args_ws_epi,
                          pack_reduce_args, set_epilogue, set_tensor_maps)
from .pool import free_workspaces, trim_pools  # noqa: F401

# dynamic smem a block may opt in to per compute capability (CUDA C Programming Guide), for
# a GPU described by name (autotable.described_device)
SMEM_OPTIN = {(8, 0): 163 << 10, (8, 6): 99 << 10, (8, 7): 163 << 10, (8, 9): 99 << 10,
              (9, 0): 227 << 10}


@dataclass(frozen=True)
class DeviceInfo:
    ordinal: int
    name: str
    cc: tuple[int, int]
    sm_count: int
    clock_khz: int
    smem_optin: int            # max dynamic shared memory per block after opt-in
    smem_per_sm: int
    l2_bytes: int
    driver_version: int
    # the compute capability x 10 (90 for sm_90), derived once: every pick reads it
    arch_int: int = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "arch_int", self.cc[0] * 10 + self.cc[1])

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def fp32_lanes_per_sm(self) -> int:
        """FP32 FMA lanes per SM (CUDA C Programming Guide, arithmetic throughput)."""
        return 128 if self.cc >= (8, 6) else 64

    @property
    def fp32_peak_tflops(self) -> float:
        """peak_tflops at the reported max clock."""
        return peak_tflops(self.sm_count, self.fp32_lanes_per_sm, self.clock_khz)


def peak_tflops(sm_count: int, lanes_per_sm: int, clock_khz: float) -> float:
    """FP32 peak: SMs x FP32 lanes per SM x 2 flop per FMA x clock."""
    return sm_count * lanes_per_sm * 2 * clock_khz * 1e3 / 1e12


def _device(ordinal: int):
    driver.init()
    return check(driver.bindings().cuDeviceGet(ordinal), "cuDeviceGet")


@functools.lru_cache(maxsize=None)
def device_info(ordinal: int | None = None) -> DeviceInfo:
    """The device's properties (that of the current context when ordinal is None), read once."""
    ordinal = driver.current_ordinal() if ordinal is None else ordinal
    drv, dev = driver.bindings(), _device(ordinal)

    def attr(name):
        return int(check(drv.cuDeviceGetAttribute(
            getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}"), dev), f"cuDeviceGetAttribute({name})"))

    name = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return DeviceInfo(
        ordinal, name.split(b"\0", 1)[0].decode(),
        (attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR")),
        attr("MULTIPROCESSOR_COUNT"), attr("CLOCK_RATE"), attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"), attr("L2_CACHE_SIZE"),
        int(check(drv.cuDriverGetVersion(), "cuDriverGetVersion")))


def pci_bus_id(ordinal: int) -> str:
    """The device's PCI bus id ("0000:19:00.0"): NVML's indices need not follow CUDA's."""
    raw = check(driver.bindings().cuDeviceGetPCIBusId(64, _device(ordinal)), "cuDeviceGetPCIBusId")
    return (raw if isinstance(raw, str) else raw.split(b"\0", 1)[0].decode()).strip("\0")


@dataclass
class Function:
    name: str           # registry kernel name, for errors
    entry: str
    handle: object      # CUfunction
    smem_set: int = 0   # dynamic smem limit already raised to this many bytes
    params: tuple[int, ...] | None = None   # its parameters' sizes, from the cubin's ELF
    static_smem: int = 0    # bytes of its __shared__ variables


_modules: dict[tuple[int, str], object] = {}
_functions: dict[tuple[int, str, str], Function] = {}


def get_function(ordinal: int, kernel_name: str, key: str, cubin: bytes, entry: str) -> Function:
    """Entry point `entry` of `cubin` (cache key `key`) on device `ordinal`, loaded once."""
    f = _functions.get((ordinal, key, entry))
    if f is not None:
        return f
    drv = driver.bindings()
    with lock:
        driver.ensure_context(ordinal)
        mod = _modules.get((ordinal, key))
        if mod is None:
            with relaxed():     # a module load allocates: refused in a global capture
                mod = check(drv.cuModuleLoadData(cubin), "cuModuleLoadData", kernel_name)
            _modules[(ordinal, key)] = mod
        h = check(drv.cuModuleGetFunction(mod, entry.encode()), f"cuModuleGetFunction({entry})",
                  kernel_name)
        static = check(drv.cuFuncGetAttribute(
            drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, h),
            "cuFuncGetAttribute(SHARED_SIZE_BYTES)", kernel_name)
        f = _functions[(ordinal, key, entry)] = Function(
            kernel_name, entry, h, params=param_sizes_from_cubin(cubin, entry), static_smem=int(static))
        return f


def _raise_smem_limit(f: Function, nbytes: int) -> None:
    """Opt in past 48 KB of static and dynamic smem (else no launch and no occupancy)."""
    if nbytes > f.smem_set and nbytes + f.static_smem > 48 * 1024:
        drv = driver.bindings()
        check(drv.cuFuncSetAttribute(
            f.handle, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", f.name)
        f.smem_set = nbytes


def occupancy(f: Function, threads: int, smem: int) -> int:
    """CTAs of `f` resident per SM at `threads` threads and `smem` bytes of dynamic smem."""
    if smem:
        _raise_smem_limit(f, smem)
    return int(check(driver.bindings().cuOccupancyMaxActiveBlocksPerMultiprocessor(f.handle, threads, smem),
                     "cuOccupancyMaxActiveBlocksPerMultiprocessor", f.name))


def encode_tensor_map(ptr: int, precision: str, dims: tuple[int, int], ld_bytes: int,
                      box: tuple[int, int], swizzle: int = 128,
                      batch: tuple[tuple[int, int], ...] = ()) -> bytes:
    """The 128-byte CUtensorMap (sm_90+) of a 2-D tensor of `precision`'s operands at `ptr`:
    dims (contiguous, other) in elements, ld_bytes the other's stride (a multiple of 16, made
    valid where unused), box one load's extents (records.TmaBoxes), zero-filled past the edge.
    batch: (extent, stride in bytes) of each batch mode after them (a 4-D map, box extent 1)."""
    p, drv = PRECISION[precision], driver.bindings()
    driver.init()
    ld = int(ld_bytes)
    if int(dims[1]) == 1:
        ld = -(-max(ld, int(dims[0]) * p.itemsize) // 16) * 16
    strides = [ld]
    for extent, stride in batch:
        strides.append(int(stride) if int(extent) > 1 else strides[-1])
    extents = [int(dims[0]), int(dims[1]), *(int(e) for e, _ in batch)]
    boxes = [int(box[0]), int(box[1]), *(1 for _ in batch)]
    sw = f"{swizzle}B" if swizzle else "NONE"
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    tmap = check(drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{p.tma}"), len(extents),
        int(ptr), [u64(e) for e in extents], [u64(x) for x in strides],
        [u32(b) for b in boxes], [u32(1)] * len(extents),
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{sw}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"cuTensorMapEncodeTiled(dims={tuple(extents)}, strides={tuple(strides)} B, box={tuple(box)})")
    return ctypes.string_at(tmap.getPtr(), TMA_MAP_BYTES)


def launch(f: Function, grid, block, smem: int, stream: int, packed) -> None:
    """Launch f once with a packed argument block, binding nothing (perf.overhead's floor)."""
    if smem:
        _raise_smem_limit(f, smem)
    (err,) = driver.bindings().cuLaunchKernel(f.handle, *grid, *block, smem, stream, packed[1], 0)
    if err:                             # (CUresult is an int: CUDA_SUCCESS is 0)
        Site(f, grid, block, smem).failed(err)


class Site:
    """One launch configuration bound once; calling it launches a packed argument block on a
    stream. go(stream, args, 0) -> (CUresult,), for callers that inline it (failed(err)
    raises): cuLaunchKernel, or cuLaunchKernelEx for a programmatic dependent launch (pdl) or
    clusters of `cluster` CTAs along x (sm_90+)."""
    __slots__ = ("f", "grid", "block", "smem", "pdl", "cluster", "go", "local")

    def __init__(self, f: Function, grid, block, smem: int, pdl: bool = False, params=None,
                 cluster: int = 1):
        """params: the sizes of the argument block its launches pack, refused unless they are
        f's own (a launch reading past it crashes the process); checked once, never per call."""
        if params is not None and f.params is not None and f.params != params:
            raise CudaError(f"internal error: {f.entry} ({f.name}) takes parameters of "
                            f"{list(f.params)} bytes, the launch would pass {list(params)}")
        self.f, self.grid, self.block, self.smem = f, tuple(grid), tuple(block), smem
        self.pdl, self.cluster = pdl, cluster
        if smem > 48 * 1024 and smem > f.smem_set:      # (below 48 KB: no opt-in)
            _raise_smem_limit(f, smem)
        self.go = (self._go_ex if pdl or cluster > 1 else
                   functools.partial(driver.bindings().cuLaunchKernel, f.handle, *self.grid,
                                     *self.block, smem))
        self.local = threading.local()      # a cuLaunchKernelEx config, one per thread

    def _go_ex(self, stream: int, args, extra):
        cfg = getattr(self.local, "cfg", None)
        if cfg is None:     # built once per thread: building one costs more than the launch
            cfg = self.local.cfg = launch_config(driver.bindings(), self.grid, self.block,
                                                 self.smem, self.pdl, self.cluster)
        cfg.hStream = stream
        return driver.bindings().cuLaunchKernelEx(cfg, self.f.handle, args, extra)

    def __call__(self, stream: int, packed) -> None:
        (err,) = self.go(stream, packed[1], 0)
        if err:
            self.failed(err)

    def failed(self, err) -> None:
        how = ", ".join(w for w, on in (("programmatic stream serialization", self.pdl),
                                        (f"clusters of {self.cluster}", self.cluster > 1)) if on)
        what = f"cuLaunchKernelEx({how}, " if how else "cuLaunchKernel("
        check((err,), f"{what}grid={self.grid}, block={self.block}, smem={self.smem})", self.f.name)


def launch_config(drv, grid, block, smem: int, pdl: bool = False, cluster: int = 1):
    """The CUlaunchConfig of a programmatic dependent launch and/or one in clusters of
    `cluster` CTAs along x; the stream is the caller's."""
    attrs = []
    if pdl:
        a = drv.CUlaunchAttribute()
        a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = 1
        attrs.append(a)
    if cluster > 1:
        a = drv.CUlaunchAttribute()
        a.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster, 1, 1
        attrs.append(a)
    cfg = drv.CUlaunchConfig()
    cfg.attrs, cfg.numAttrs = attrs, len(attrs)
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    return cfg


def active_clusters(f: Function, grid, block, smem: int, cluster: int) -> int:
    """Clusters of `cluster` CTAs of `f` (along x) the device holds at once, 0 where none fits
    (cuOccupancyMaxActiveClusters)."""
    if smem:
        _raise_smem_limit(f, smem)
    drv = driver.bindings()
    err, n = drv.cuOccupancyMaxActiveClusters(f.handle, launch_config(drv, grid, block, smem,
                                                                      cluster=cluster))
    if err:     # (a configuration the device cannot launch at all: no cluster fits)
        return 0
    return int(n)


def stream_handle(stream) -> int:
    """The handle of None (0), an int, or a stream object (__cuda_stream__, cuda_stream, ptr or
    handle: cuda.core, CuPy, PyTorch)."""
    if stream is None:
        return 0
    if type(stream) is int:
        if stream < 0:
            raise StreamError(f"stream handle {stream} is negative")
        return stream
    try:
        proto = getattr(stream, "__cuda_stream__", None)
        if proto is not None:
            return int(proto()[1])
        for attr in ("cuda_stream", "ptr", "handle"):
            v = getattr(stream, attr, None)
            if v is not None:
                return int(v)
    except (TypeError, ValueError, IndexError) as e:
        raise StreamError(f"cannot read a CUDA stream handle from {type(stream).__name__}: {e}") from None
    raise StreamError(f"stream must be None, an int handle or a CUDA stream object "
                      f"(CuPy, PyTorch, cuda.core, __cuda_stream__), got {type(stream).__name__}")


_zero_is: list[int] = []


def canonical_stream(h: int) -> int:
    """`h` as a handle that compares equal with its stream's others (CuPy's CAI names the
    default stream 1): 0 becomes 1 (legacy), or 2 (per-thread) under the bindings' switch."""
    if h != 0:
        return h
    if not _zero_is:
        v = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip()
        _zero_is.append(1 if v in ("", "0") else 2)
    return _zero_is[0]


_events = threading.local()


def wait_stream(consumer: int, producer: int, ordinal: int) -> None:
    """Make work queued on `consumer` from now on wait for what `producer` has queued (by
    event, no host wait): the consumer side of CAI v3's `stream`."""
    drv = driver.bindings()
    evs = vars(_events).setdefault("by_device", {})     # (this thread's)
    ev = evs.get(ordinal)
    if ev is None:   # one per thread and device: recording it races with no other thread
        ev = evs[ordinal] = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING),
                                  "cuEventCreate")
    check(drv.cuEventRecord(ev, producer), f"cuEventRecord(producer stream {producer:#x})")
    check(drv.cuStreamWaitEvent(consumer, ev, 0), "cuStreamWaitEvent")


def capturing(stream: int) -> bool:
    """True while `stream` records into a CUDA graph; CaptureError for the legacy default
    stream while another stream captures (the driver refuses that)."""
    drv = driver.bindings()
    err, status = drv.cuStreamIsCapturing(stream)
    if err:
        if err == drv.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
            raise CaptureError("the legacy default stream cannot be used while another stream "
                               "captures a CUDA graph: pass the capturing stream as `stream`")
        check((err,), "cuStreamIsCapturing")
    return status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def synchronize(stream: int = 0) -> None:
    check(driver.bindings().cuStreamSynchronize(stream), "cuStreamSynchronize")


def check_last(kernel: str, stream: int = 0) -> None:
    """synchronize, an asynchronous error (illegal address...) naming `kernel`."""
    check(driver.bindings().cuStreamSynchronize(stream), "kernel execution (cuStreamSynchronize)", kernel)


class DeviceBuffer:
    """An owned device allocation (at least 4 bytes), freed by close() or garbage collection."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        driver.ensure_context(ordinal)
        self.nbytes = max(int(nbytes), 4)
        self.ptr = int(check(driver.bindings().cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})"))

    def close(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            check(driver.bindings().cuMemFree(ptr), "cuMemFree")

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()


def _async(call: str):
    def run(x: int, y: int, n: int, stream: int = 0) -> None:
        check(getattr(driver.bindings(), call)(x, y, n, stream), call)
    run.__name__ = run.__qualname__ = call
    return run


# stream-ordered copies (dst, src, nbytes, stream=0), host sides as addresses
memcpy_htod, memcpy_dtoh, memcpy_dtod = map(_async, ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
                                                     "cuMemcpyDtoDAsync"))


def memset_f32(ptr: int, value_bits: int, count: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemsetD32Async(ptr, value_bits, count, stream), "cuMemsetD32Async")


def memset(ptr: int, value_bits: int, count: int, itemsize: int, stream: int = 0) -> None:
    """`count` elements of `itemsize` bytes set to `value_bits` (precisions.DType.bits)."""
    # (memset_f32 read here per call: a simulated device replaces it)
    f = memset_f32 if itemsize == 4 else _async(f"cuMemsetD{8 * itemsize}Async")
    f(ptr, value_bits, count, stream)


def mem_get_info(ordinal: int = 0) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    driver.ensure_context(ordinal)
    return tuple(int(x) for x in check(driver.bindings().cuMemGetInfo(), "cuMemGetInfo"))


def pointer_device(ptr: int) -> int:
    drv = driver.bindings()
    return int(check(drv.cuPointerGetAttribute(
        drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
        "cuPointerGetAttribute(DEVICE_ORDINAL)"))


class Event:
    """A timing event: record(stream), then elapsed_ms(start) waits for it."""

    def __init__(self):
        self.h = check(driver.bindings().cuEventCreate(0), "cuEventCreate")

    def record(self, stream: int = 0) -> None:
        check(driver.bindings().cuEventRecord(self.h, stream), "cuEventRecord")

    def elapsed_ms(self, start: "Event") -> float:
        check(driver.bindings().cuEventSynchronize(self.h), "cuEventSynchronize")
        return float(check(driver.bindings().cuEventElapsedTime(start.h, self.h), "cuEventElapsedTime"))

    def __del__(self):
        with contextlib.suppress(Exception):
            driver.bindings().cuEventDestroy(self.h)

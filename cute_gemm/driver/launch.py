"""The CUDA driver side: device, modules, memory, launches, streams, array interop.

It calls the driver through driver.py (cuda.bindings.driver: the 1:1 C API, stable across
cuda-python releases; every call checked) with argument blocks packed once per call
through ctypes — the cheapest launch path measured on the H200 machine — and reads
DLPack-only arrays through cuda.core's StridedMemoryView. The scratch pools' names
(pool.py) and the context helpers (driver.py) are reachable here too, as the docs name them.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
from dataclasses import dataclass

from .. import driver
from . import check, ensure_context, lock, relaxed  # noqa: F401 (launch.ensure_context: the docs)
from ..base.errors import CaptureError, StreamError
# the scratch pools' public names, reachable as launch.X too (the README and docs name them there)
from .pool import POOL_KEEP_BYTES, alloc_async, free_async, free_workspaces, trim_pools  # noqa: F401
from ..base.precisions import PRECISION

# ---- device and context ---------------------------------------------------------------
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

    @property
    def arch(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def arch_int(self) -> int:
        return self.cc[0] * 10 + self.cc[1]

    @property
    def fp32_lanes_per_sm(self) -> int:
        return fp32_lanes_per_sm(self.cc)

    @property
    def fp32_peak_tflops(self) -> float:
        """SMs x FP32 lanes per SM x 2 flop per FMA x clock (the reported max clock)."""
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.clock_khz * 1e3 / 1e12


# Dynamic shared memory a block may opt in to, per compute capability (CUDA C Programming
# Guide, technical specifications): what a GPU described by name rather than present
# (autotable.described_device) is taken to allow; a present one reports its own.
SMEM_OPTIN = {(8, 0): 163 << 10, (8, 6): 99 << 10, (8, 7): 163 << 10, (8, 9): 99 << 10,
              (9, 0): 227 << 10}


def fp32_lanes_per_sm(cc: tuple[int, int]) -> int:
    """FP32 FMA lanes per SM (CUDA C Programming Guide, arithmetic instruction throughput):
    64 on sm_60/70/75/80 (V100, T4, A100), 128 on sm_86/87/89/90 and later (GA10x, Ada, Hopper)."""
    major, minor = cc
    if major >= 9 or (major == 8 and minor >= 6):
        return 128
    return 64


@functools.lru_cache(maxsize=None)
def device_info(ordinal: int | None = None) -> DeviceInfo:
    drv = driver.bindings()
    driver.init()
    if ordinal is None:
        ordinal = driver.current_ordinal()
    dev = check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
    A = drv.CUdevice_attribute

    def attr(a):
        return int(check(drv.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))

    name = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return DeviceInfo(
        ordinal=ordinal,
        name=name.split(b"\0", 1)[0].decode(),
        cc=(attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
        sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        clock_khz=attr(A.CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        smem_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        smem_per_sm=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        l2_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        driver_version=int(check(drv.cuDriverGetVersion(), "cuDriverGetVersion")),
    )


def pci_bus_id(ordinal: int) -> str:
    """The device's PCI bus id ("0000:19:00.0"), by which NVML finds the same GPU (its own
    indices need not follow CUDA's ordinals)."""
    drv = driver.bindings()
    driver.init()
    dev = check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
    raw = check(drv.cuDeviceGetPCIBusId(64, dev), "cuDeviceGetPCIBusId")
    return (raw if isinstance(raw, str) else raw.split(b"\0", 1)[0].decode()).strip("\0")


# ---- modules and functions ------------------------------------------------------------
@dataclass
class Function:
    name: str           # registry kernel name, for errors
    entry: str
    handle: object      # CUfunction
    smem_set: int = 0   # dynamic smem limit already raised to this many bytes
    registers: int = 0
    static_smem: int = 0
    local_bytes: int = 0


_modules: dict[tuple[int, str], object] = {}
_functions: dict[tuple[int, str, str], Function] = {}


def get_function(ordinal: int, kernel_name: str, key: str, cubin: bytes, entry: str) -> Function:
    fkey = (ordinal, key, entry)
    f = _functions.get(fkey)
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
        A = drv.CUfunction_attribute

        def fattr(a):
            return int(check(drv.cuFuncGetAttribute(a, h), "cuFuncGetAttribute", kernel_name))

        f = Function(kernel_name, entry, h,
                     registers=fattr(A.CU_FUNC_ATTRIBUTE_NUM_REGS),
                     static_smem=fattr(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                     local_bytes=fattr(A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES))
        _functions[fkey] = f
        return f


def _raise_smem_limit(f: Function, nbytes: int) -> None:
    """Kernels that need > 48 KB of dynamic smem must opt in per function."""
    if nbytes <= f.smem_set or nbytes <= 48 * 1024:
        return
    drv = driver.bindings()
    check(drv.cuFuncSetAttribute(
        f.handle, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", f.name)
    f.smem_set = nbytes


# ---- launches -------------------------------------------------------------------------
# the argument blocks are kernel_args.py's; callers pack them through launch
from . import kernel_args  # noqa: E402
from .kernel_args import TMA_MAP_BYTES  # noqa: E402
pack_gemm_args, pack_gemm_args_ws, pack_gemm_args_tma, pack_gemm_args_tma_ws, set_tensor_maps = (
    kernel_args.pack_gemm_args, kernel_args.pack_gemm_args_ws, kernel_args.pack_gemm_args_tma,
    kernel_args.pack_gemm_args_tma_ws, kernel_args.set_tensor_maps)
pack_reduce_args = kernel_args.pack_reduce_args


# ---- TMA tensor maps (sm_90+) -----------------------------------------------------------


def encode_tensor_map(ptr: int, precision: str, dims: tuple[int, int], ld_bytes: int,
                      box: tuple[int, int], swizzle: int = 128) -> bytes:
    """The 128-byte CUtensorMap of a 2-D tensor at `ptr` of `precision`'s operands (its
    element type as the precision table's `tma` says: tf32's float32 as TFLOAT32, rounded to
    nearest on the way to shared memory): `dims` = (contiguous extent, other
    extent) in elements, `ld_bytes` the byte stride between consecutive "rows" (along the
    other extent), `box` what one TMA load brings in (records.TmaBoxes, same order). Boxes
    past the extent are zero-filled (OOB fill NONE). ptr and ld_bytes must be multiples of
    16; dims[1] == 1 is fine (the stride is then unused but must still be valid)."""
    p = PRECISION[precision]
    drv = driver.bindings()
    driver.init()
    sw = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle]
    ld = int(ld_bytes)
    if int(dims[1]) == 1:   # one row: its stride is never used, but must be a valid one
        ld = max(ld, int(dims[0]) * p.itemsize)
        ld = -(-ld // 16) * 16
    tmap = check(drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{p.tma}"), 2, int(ptr),
        [drv.cuuint64_t(int(dims[0])), drv.cuuint64_t(int(dims[1]))],
        [drv.cuuint64_t(ld)],
        [drv.cuuint32_t(int(box[0])), drv.cuuint32_t(int(box[1]))],
        [drv.cuuint32_t(1), drv.cuuint32_t(1)],
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{sw}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"cuTensorMapEncodeTiled(dims={tuple(dims)}, ld={ld_bytes} B, box={tuple(box)})")
    return ctypes.string_at(tmap.getPtr(), TMA_MAP_BYTES)


def occupancy(f: Function, threads: int, smem: int) -> int:
    """CTAs of `f` resident per SM at `threads` threads and `smem` bytes of dynamic smem."""
    if smem:
        _raise_smem_limit(f, smem)
    return int(check(driver.bindings().cuOccupancyMaxActiveBlocksPerMultiprocessor(f.handle, threads, smem),
                      "cuOccupancyMaxActiveBlocksPerMultiprocessor", f.name))


def launch(f: Function, grid, block, smem: int, stream: int, packed, pdl: bool = False) -> None:
    """Launch f. pdl: programmatic dependent launch (sm_90+): the kernel may start while
    the previous kernel in the stream still runs, once every CTA of that one has executed
    griddepcontrol.launch_dependents (or exited); it must then not read what that kernel
    writes, and waits for it (griddepcontrol.wait) before it ends."""
    keep, addr = packed
    if smem:
        _raise_smem_limit(f, smem)
    drv = driver.bindings()
    if pdl:
        cfg = _pdl_config(drv)
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes, cfg.hStream = smem, stream
        (err,) = drv.cuLaunchKernelEx(cfg, f.handle, addr, 0)
    else:
        (err,) = drv.cuLaunchKernel(f.handle, grid[0], grid[1], grid[2], block[0], block[1],
                                    block[2], smem, stream, addr, 0)
    if err != drv.CUresult.CUDA_SUCCESS:
        _launch_failed(err, f, grid, block, smem, pdl)
    del keep


def _launch_failed(err, f: Function, grid, block, smem: int, pdl: bool = False):
    what = "cuLaunchKernelEx(programmatic stream serialization, " if pdl else "cuLaunchKernel("
    check((err,), f"{what}grid={tuple(grid)}, block={tuple(block)}, smem={smem})", f.name)


class Site:
    """One launch configuration (function, grid, block, dynamic smem, PDL) made ready once:
    calling it launches with a stream and a packed argument block (pack_gemm_args...), the
    driver call's fixed arguments bound beforehand. Errors raise CudaError, as launch()'s."""
    __slots__ = ("f", "grid", "block", "smem", "pdl", "go", "local")

    def __init__(self, f: Function, grid, block, smem: int, pdl: bool = False):
        self.f, self.grid, self.block, self.smem, self.pdl = f, tuple(grid), tuple(block), smem, pdl
        if smem:
            _raise_smem_limit(f, smem)
        self.go = None if pdl else functools.partial(driver.bindings().cuLaunchKernel, f.handle, *self.grid,
                                                     *self.block, smem)
        self.local = threading.local()      # a PDL launch's config, one per thread

    def __call__(self, stream: int, packed) -> None:
        if self.go is None:
            self._launch_pdl(stream, packed)
            return
        (err,) = self.go(stream, packed[1], 0)
        if err:                          # (CUresult is an int: CUDA_SUCCESS is 0)
            self.failed(err)

    def _launch_pdl(self, stream: int, packed) -> None:
        # the config built once per thread (building one costs more than the launch)
        drv = driver.bindings()
        cfg = getattr(self.local, "cfg", None)
        if cfg is None:
            cfg = self.local.cfg = _pdl_config(drv)
            cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = self.grid
            cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self.block
            cfg.sharedMemBytes = self.smem
        cfg.hStream = stream
        (err,) = drv.cuLaunchKernelEx(cfg, self.f.handle, packed[1], 0)
        if err != drv.CUresult.CUDA_SUCCESS:
            _launch_failed(err, self.f, self.grid, self.block, self.smem, True)

    def failed(self, err) -> None:
        """Raise the CudaError of a launch through `go` (stream, packed[1], 0) -> (CUresult,)."""
        _launch_failed(err, self.f, self.grid, self.block, self.smem)


def _pdl_config(drv):
    """A CUlaunchConfig with the one attribute of a programmatic dependent launch; the
    caller fills in grid, block, smem and stream (a Site keeps one per thread: no state
    shared between threads)."""
    attr = drv.CUlaunchAttribute()
    attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attr.value.programmaticStreamSerializationAllowed = 1
    cfg = drv.CUlaunchConfig()
    cfg.attrs = [attr]
    cfg.numAttrs = 1
    return cfg


def stream_handle(stream) -> int:
    """Accept None (the default stream), an int handle, or stream objects of
    cuda.core / CuPy / PyTorch / anything with __cuda_stream__."""
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


def _per_thread_default() -> bool:
    """cuda.bindings makes handle 0 the per-thread default stream when this is set (its
    documented switch, read once: the bindings read it when they load)."""
    v = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip()
    return v not in ("", "0")


_zero_is: list[int] = []


def canonical_stream(h: int) -> int:
    """The handle that names the same stream as `h` in this process: 0 (the default stream)
    becomes CU_STREAM_LEGACY (1) or CU_STREAM_PER_THREAD (2), whichever the bindings make
    it, so the handles of one stream compare equal (CuPy's CAI names its default stream 1)."""
    if h != 0:
        return h
    if not _zero_is:
        _zero_is.append(2 if _per_thread_default() else 1)
    return _zero_is[0]


_events = threading.local()


def wait_stream(consumer: int, producer: int, ordinal: int) -> None:
    """Make work queued on `consumer` from now on wait for what `producer` has queued so
    far (an event, no host synchronization): the consumer side of the CUDA Array
    Interface v3 `stream` key."""
    drv = driver.bindings()
    evs = getattr(_events, "by_device", None)
    if evs is None:
        evs = _events.by_device = {}
    ev = evs.get(ordinal)
    if ev is None:   # one per thread and device: recording it races with no other thread
        ev = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        evs[ordinal] = ev
    check(drv.cuEventRecord(ev, producer), f"cuEventRecord(producer stream {producer:#x})")
    check(drv.cuStreamWaitEvent(consumer, ev, 0), "cuStreamWaitEvent")


def capturing(stream: int) -> bool:
    """True while `stream` records into a CUDA graph. Raises CaptureError when the legacy
    default stream is used while another stream captures (the driver refuses that)."""
    drv = driver.bindings()
    err, status = drv.cuStreamIsCapturing(stream)
    if err == drv.CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
        raise CaptureError("the legacy default stream cannot be used while another stream "
                           "captures a CUDA graph: pass the capturing stream as `stream`")
    check((err,), "cuStreamIsCapturing")
    return status != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def synchronize(stream: int = 0) -> None:
    check(driver.bindings().cuStreamSynchronize(stream), "cuStreamSynchronize")


def check_last(kernel: str, stream: int = 0) -> None:
    """Synchronize and surface asynchronous launch errors (illegal address etc.)."""
    check(driver.bindings().cuStreamSynchronize(stream), "kernel execution (cuStreamSynchronize)", kernel)


# ---- memory ---------------------------------------------------------------------------
class DeviceBuffer:
    """Owned device allocation; freed on close() / context exit / garbage collection."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        driver.ensure_context(ordinal)
        self.nbytes = max(int(nbytes), 4)
        self.ptr = int(check(driver.bindings().cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})"))

    def close(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            check(driver.bindings().cuMemFree(ptr), "cuMemFree")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def memcpy_htod(dst: int, host_ptr: int, nbytes: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemcpyHtoDAsync(dst, host_ptr, nbytes, stream), "cuMemcpyHtoDAsync")


def memcpy_dtoh(host_ptr: int, src: int, nbytes: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemcpyDtoHAsync(host_ptr, src, nbytes, stream), "cuMemcpyDtoHAsync")


def memcpy_dtod(dst: int, src: int, nbytes: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemcpyDtoDAsync(dst, src, nbytes, stream), "cuMemcpyDtoDAsync")


def memset_f32(ptr: int, value_bits: int, count: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemsetD32Async(ptr, value_bits, count, stream), "cuMemsetD32Async")


def memset_d16(ptr: int, value_bits: int, count: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemsetD16Async(ptr, value_bits, count, stream), "cuMemsetD16Async")


def memset_d8(ptr: int, value_bits: int, count: int, stream: int = 0) -> None:
    check(driver.bindings().cuMemsetD8Async(ptr, value_bits, count, stream), "cuMemsetD8Async")


def memset(ptr: int, value_bits: int, count: int, itemsize: int, stream: int = 0) -> None:
    """`count` elements of `itemsize` bytes set to `value_bits` (precisions.DType.bits): the
    driver's memset of that width."""
    {4: memset_f32, 2: memset_d16, 1: memset_d8}[itemsize](ptr, value_bits, count, stream)


def mem_get_info(ordinal: int = 0) -> tuple[int, int]:
    driver.ensure_context(ordinal)
    return tuple(int(x) for x in check(driver.bindings().cuMemGetInfo(), "cuMemGetInfo"))


def pointer_device(ptr: int) -> int:
    drv = driver.bindings()
    return int(check(drv.cuPointerGetAttribute(
        drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
        "cuPointerGetAttribute(DEVICE_ORDINAL)"))


# ---- events (timing) ------------------------------------------------------------------
class Event:
    def __init__(self):
        self.h = check(driver.bindings().cuEventCreate(0), "cuEventCreate")

    def record(self, stream: int = 0) -> None:
        check(driver.bindings().cuEventRecord(self.h, stream), "cuEventRecord")

    def elapsed_ms(self, start: "Event") -> float:
        check(driver.bindings().cuEventSynchronize(self.h), "cuEventSynchronize")
        return float(check(driver.bindings().cuEventElapsedTime(start.h, self.h), "cuEventElapsedTime"))

    def __del__(self):
        try:
            driver.bindings().cuEventDestroy(self.h)
        except Exception:
            pass


# ---- DLPack-only arrays ---------------------------------------------------------------
def dlpack_view(obj, consumer: int | None = None):
    """(ptr, shape, strides in elements, dtype str, device ordinal or None, readonly) of a
    DLPack array, through cuda.core's StridedMemoryView. consumer: the stream that will
    use it; the producer then orders its pending writes before that stream's later work
    (DLPack's `__dlpack__(stream=...)`; None: no ordering asked)."""
    from cuda.core.utils import StridedMemoryView
    v = StridedMemoryView.from_dlpack(obj, stream_ptr=-1 if consumer is None else canonical_stream(consumer))
    shape = tuple(int(s) for s in v.shape)
    strides = v.strides
    if strides is None:  # C-contiguous
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    dev = v.device_id if v.is_device_accessible else None
    return int(v.ptr), shape, tuple(int(s) for s in strides), str(v.dtype), dev, bool(v.readonly)

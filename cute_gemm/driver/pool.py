"""Stream-ordered scratch memory, one pool per device: relayout temporaries, and stream-K
workspaces in a graph capture (the graph owns them). A pool keeps the freed memory of its
busiest moment (POOL_KEEP_BYTES to 1 / POOL_KEEP_SHARE of the device), so a large call's
scratch is not unmapped at each synchronize; trim_pools gives it back."""
from __future__ import annotations

from . import workspace
from .. import driver

POOL_KEEP_BYTES = 256 << 20
POOL_KEEP_SHARE = 4
_pools: dict[int, object] = {}
_pool_keep: dict[int, int] = {}          # ordinal -> the pool's release threshold now
_pool_cap: dict[int, int] = {}           # ordinal -> the most it may keep


def _attr(pool, name: str, value: int | None = None) -> int | None:
    """Read the pool's attribute CU_MEMPOOL_ATTR_<name>, or set it to `value`."""
    drv = driver.bindings()
    a = getattr(drv.CUmemPool_attribute, f"CU_MEMPOOL_ATTR_{name}")
    if value is None:
        return int(driver.check(drv.cuMemPoolGetAttribute(pool, a), f"cuMemPoolGetAttribute({name})"))
    driver.check(drv.cuMemPoolSetAttribute(pool, a, drv.cuuint64_t(value)), f"cuMemPoolSetAttribute({name})")
    return None


def _pool(ordinal: int):
    pool = _pools.get(ordinal)
    if pool is not None:
        return pool
    drv = driver.bindings()
    with driver.lock, driver.relaxed():     # (a first call may come inside a capture)
        if ordinal not in _pools:
            props = drv.CUmemPoolProps()
            props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
            props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = ordinal
            pool = driver.check(drv.cuMemPoolCreate(props), "cuMemPoolCreate")
            _attr(pool, "RELEASE_THRESHOLD", POOL_KEEP_BYTES)
            _pools[ordinal] = pool
        return _pools[ordinal]


def alloc_async(nbytes: int, ordinal: int, stream: int) -> int:
    """Device memory usable by work queued on `stream` after this call; free_async it on
    the same stream once that work is queued."""
    pool = _pool(ordinal)
    # (relaxed: growing the pool would end another thread's global capture; on a capturing
    # stream it is recorded all the same)
    with driver.relaxed():
        ptr = int(driver.check(driver.bindings().cuMemAllocFromPoolAsync(max(int(nbytes), 4), pool, stream),
                               f"cuMemAllocFromPoolAsync({nbytes})"))
    if nbytes < POOL_KEEP_BYTES // 4:        # (small ones cannot move the high-water mark far)
        return ptr
    drv = driver.bindings()
    if drv.cuStreamIsCapturing(stream)[1] != drv.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE:
        return ptr                           # a graph's allocation node: the graph owns its memory
    # keep what the pool has had in use at once (capped) at its next synchronize (relaxed: the
    # attributes would end another thread's global capture)
    with driver.relaxed():
        high = _attr(pool, "USED_MEM_HIGH")
        with driver.lock:
            if ordinal not in _pool_cap:
                dev = driver.check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
                _pool_cap[ordinal] = int(driver.check(drv.cuDeviceTotalMem(dev), "cuDeviceTotalMem")) // POOL_KEEP_SHARE
            keep = min(high, _pool_cap[ordinal])
            if keep > _pool_keep.get(ordinal, POOL_KEEP_BYTES):
                _pool_keep[ordinal] = keep
                _attr(pool, "RELEASE_THRESHOLD", keep)
    return ptr


def free_async(ptr: int, stream: int) -> None:
    with driver.relaxed():
        driver.check(driver.bindings().cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")


def trim_pools() -> int:
    """Give the memory the pools keep for reuse back to the device; safe at any time, from any
    thread. Returns how many pools there are."""
    with driver.relaxed(), driver.lock:
        for ordinal, pool in _pools.items():
            _attr(pool, "RELEASE_THRESHOLD", POOL_KEEP_BYTES)
            _attr(pool, "USED_MEM_HIGH", 0)
            _pool_keep.pop(ordinal, None)
            driver.check(driver.bindings().cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
        return len(_pools)


def free_workspaces() -> int:
    """Free the idle stream-K workspaces and trim the scratch pools. Returns how many
    workspaces were freed."""
    n = workspace.trim()
    trim_pools()
    return n

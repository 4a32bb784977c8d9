"""Stream-ordered scratch memory: one pool per device.

Stream-K workspaces and relayout temporaries are allocated and freed in stream order
(cuMemAllocFromPoolAsync / cuMemFreeAsync) from one pool per device: no buffer is ever
shared between streams or threads, so no handle identity (the per-thread default
stream has one handle in every thread) and no host synchronization is involved; the
driver orders reuse across streams, a destroyed stream leaves nothing behind, and
under CUDA graph capture the allocation becomes a node owned by the graph.
A pool keeps the freed memory of its busiest moment so far (at least POOL_KEEP_BYTES, at
most 1 / POOL_KEEP_SHARE of the device): a call whose scratch is larger (cute_3xtf32's A'
and B': 268 MB at 4096^3) would otherwise hand it back at every synchronize and map it
again on the next call. trim_pools gives it all back and starts over.
"""
from __future__ import annotations

from . import workspace
from .. import driver

POOL_KEEP_BYTES = 256 << 20
POOL_KEEP_SHARE = 4
_pools: dict[int, object] = {}
_pool_keep: dict[int, int] = {}          # ordinal -> the pool's release threshold now
_pool_cap: dict[int, int] = {}           # ordinal -> the most it may keep


def _pool(ordinal: int):
    pool = _pools.get(ordinal)
    if pool is None:
        drv = driver.bindings()
        with driver.lock:
            pool = _pools.get(ordinal)
            if pool is None:
                props = drv.CUmemPoolProps()
                props.allocType = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
                props.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
                props.location.id = ordinal
                with driver.relaxed():      # (a first call may come inside a capture)
                    pool = driver.check(drv.cuMemPoolCreate(props), "cuMemPoolCreate")
                    _set_release_threshold(pool, POOL_KEEP_BYTES)
                _pools[ordinal] = pool
    return pool


def alloc_async(nbytes: int, ordinal: int, stream: int) -> int:
    """Device memory usable by work queued on `stream` after this call; free_async it on
    the same stream once that work is queued."""
    pool = _pool(ordinal)
    ptr = int(driver.check(driver.bindings().cuMemAllocFromPoolAsync(max(int(nbytes), 4), pool,
                                                                  stream),
                            f"cuMemAllocFromPoolAsync({nbytes})"))
    if nbytes >= POOL_KEEP_BYTES // 4:       # (small ones cannot move the high-water mark far)
        _keep_high_water(ordinal, pool)
    return ptr


def _keep_high_water(ordinal: int, pool) -> None:
    """Raise the pool's release threshold to the most it has had in use at once (capped)."""
    drv = driver.bindings()
    attr = drv.CUmemPool_attribute
    high = int(driver.check(drv.cuMemPoolGetAttribute(pool, attr.CU_MEMPOOL_ATTR_USED_MEM_HIGH),
                             "cuMemPoolGetAttribute(USED_MEM_HIGH)"))
    with driver.lock:
        if ordinal not in _pool_cap:
            _pool_cap[ordinal] = _device_bytes(ordinal) // POOL_KEEP_SHARE
        keep = min(high, _pool_cap[ordinal])
        if keep <= _pool_keep.get(ordinal, POOL_KEEP_BYTES):
            return
        _pool_keep[ordinal] = keep
        _set_release_threshold(pool, keep)


def _set_release_threshold(pool, nbytes: int) -> None:
    """Freed memory `pool` keeps for reuse at a synchronize (the rest goes back to the device)."""
    drv = driver.bindings()
    attr = drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    driver.check(drv.cuMemPoolSetAttribute(pool, attr, drv.cuuint64_t(nbytes)),
                  "cuMemPoolSetAttribute(RELEASE_THRESHOLD)")


def _device_bytes(ordinal: int) -> int:
    drv = driver.bindings()
    dev = driver.check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
    return int(driver.check(drv.cuDeviceTotalMem(dev), "cuDeviceTotalMem"))


def free_async(ptr: int, stream: int) -> None:
    driver.check(driver.bindings().cuMemFreeAsync(ptr, stream), "cuMemFreeAsync")


def pool_bytes(ordinal: int | None = None) -> int:
    """Device memory the scratch pool of a device holds now: in use by queued work, or kept
    for reuse (see POOL_KEEP_BYTES); 0 before its first allocation."""
    ordinal = driver.current_ordinal() if ordinal is None else ordinal
    pool = _pools.get(ordinal)
    if pool is None:
        return 0
    drv = driver.bindings()
    return int(driver.check(drv.cuMemPoolGetAttribute(
        pool, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT),
        "cuMemPoolGetAttribute(RESERVED_MEM_CURRENT)"))


def trim_pools() -> int:
    """Give the memory the scratch pools keep for reuse back to the device (memory still
    in use by queued work stays); safe at any time, from any thread. Returns the number
    of pools trimmed."""
    drv = driver.bindings()
    attr = drv.CUmemPool_attribute
    with driver.relaxed(), driver.lock:
        for ordinal, pool in _pools.items():
            _set_release_threshold(pool, POOL_KEEP_BYTES)
            driver.check(drv.cuMemPoolSetAttribute(pool, attr.CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                                                    drv.cuuint64_t(0)),
                          "cuMemPoolSetAttribute(USED_MEM_HIGH)")
            _pool_keep.pop(ordinal, None)
            driver.check(drv.cuMemPoolTrimTo(pool, 0), "cuMemPoolTrimTo")
        return len(_pools)


def free_workspaces() -> int:
    """Free the stream-K workspaces no queued work uses and trim the scratch pools; safe
    at any time, from any thread. Returns the number of workspaces freed."""
    n = workspace.trim()
    trim_pools()
    return n

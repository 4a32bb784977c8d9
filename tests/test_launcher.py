"""The Launcher (plan/launcher.py) with a stub driver: per-thread argument blocks under racing
threads (no thread sees another's pointers), a failed launch's error, and the context a launch
makes current. run()'s hot path: test_hotpath.py."""
from __future__ import annotations

import ctypes
import sys
import threading

import pytest

import stub_driver
from cute_gemm import api, driver
from cute_gemm.base.errors import CudaError
from cute_gemm.plan import hotpath, resolve
from stub_driver import device_array, gemm_launches


def _race(events, calls: int, call) -> None:
    """8 threads, thread t making `calls` calls call(p, float(t)) with pointers p = (t << 32)
    + (i << 20), switching threads as often as the interpreter can, and inside launches."""
    events.yield_in_launch = True
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        def work(t):
            for i in range(calls):
                call((t << 32) + (i << 20), float(t))
        threads = [threading.Thread(target=work, args=(t,)) for t in range(1, 9)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)


def test_threads_racing_on_one_launcher_each_launch_their_own_pointers(monkeypatch):
    """Threads share the remembered Launcher; each writes its own argument block, so no
    launch mixes one thread's pointers with another's (the driver copies them at launch)."""
    events = stub_driver.install(monkeypatch)
    base = [device_array((32, 32), 0x100000), device_array((32, 32), 0x200000), device_array((32, 32), 0x300000)]
    api.run("naive", *base[:2], out=base[2])
    _race(events, 200, lambda p, alpha: api.run(
        "naive", device_array((32, 32), p), device_array((32, 32), p + 0x10000), out=device_array((32, 32), p + 0x20000),
        alpha=alpha))
    got = gemm_launches(events)[1:]
    assert sorted(g.A for g in got) == sorted((t << 32) + (i << 20) for t in range(1, 9)
                                              for i in range(200))      # each call once
    for g in got:
        assert (g.B - g.A, g.C - g.A, g.alpha) == (0x10000, 0x20000, float(g.A >> 32)), hex(g.A)


def test_a_tma_launch_carries_the_maps_of_its_own_operands(monkeypatch):
    """A TMA entry's argument block keeps its tensor maps while A and B stay and takes those
    of new ones (Launcher writes them only when the block's pointers change): calls that
    alternate two pairs of operands, then threads racing with their own, each launch's
    block holds the maps of its own A and B (the stub's map names its pointer)."""
    from cute_gemm.driver import kernel_args
    events = stub_driver.install(monkeypatch)
    m = n = k = 128

    def call(p, alpha=1.0):
        api.run("cute_wgmma_ws", device_array((m, k), p, strides=(k, 1)),
                device_array((k, n), p + 0x10000, strides=(n, 1)),
                out=device_array((m, n), p + 0x20000), precision="tf32", alpha=alpha)
    for p in (1 << 24, 1 << 24, 2 << 24, 1 << 24, 2 << 24, 2 << 24):
        call(p)
    _race(events, 50, call)
    got = [e[4] for e in events if e[0] == "launch" and e[1].startswith("cute_wgmma_ws")]
    assert len(got) == 6 + 8 * 50
    for blob in got:
        s = kernel_args.GemmArgsTmaEpi.from_buffer_copy(blob[:ctypes.sizeof(kernel_args.GemmArgsTmaEpi)])
        maps = [int.from_bytes(bytes(x)[:8], "little") for x in (s.tma_a, s.tma_b)]
        assert sorted(maps) == sorted((s.A, s.B)), (hex(s.A), hex(s.B), [hex(x) for x in maps])
    tmaps = [e for e in events if e[0] == "tmap"]
    assert len(tmaps) <= 2 * (2 + 8 * 50), "maps are encoded once per pointer pair and thread"


def test_threads_racing_with_fused_epilogues_each_launch_their_own_vectors(monkeypatch):
    """A fused call's block keeps its epilogue while the vectors stay, per thread: threads
    racing through one remembered signature, each with its own bias, each launch holds the
    bias of its own call (the Launcher's per-thread record of what its block holds)."""
    from cute_gemm import Epilogue, gemm
    from cute_gemm.driver import launch
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    monkeypatch.setattr(api, "_count", [1])            # one GPU: the hot path's condition
    m = n = k = 64

    def call(p, alpha=1.0):
        gemm(device_array((m, k), p), device_array((k, n), p + 0x10000),
             out=device_array((m, n), p + 0x20000), alpha=alpha,
             epilogue=Epilogue(bias=device_array((1, n), p + 0x30000), activation="relu"))
    call((1 << 32) + (1 << 28), 1.0)
    _race(events, 100, call)
    got = [stub_driver.BLOCKS[e[1]][0].from_buffer_copy(e[4]) for e in events
           if e[0] == "launch" and e[1] in stub_driver.FUSED_ENTRIES]
    assert len(got) == 1 + 8 * 100
    for g in got:
        assert (g.epi.bias - g.A, g.alpha) == (0x30000, float(g.A >> 32)), hex(g.A)


def test_threads_racing_on_one_launch_on_copies_each_copy_and_launch_their_own(monkeypatch):
    """Threads share one remembered launch on copies (relayout.Relaid): each call's copy
    reads that call's A into that call's own scratch, and the GEMM reads that scratch with
    that call's B and out (the copies' argument blocks are per thread, as the Launcher's)."""
    events = stub_driver.install(monkeypatch)

    def call(p, alpha=1.0):
        api.run("cute_mma_sm80", device_array((37, 13), p, "bfloat16", strides=(13, 1)),
                device_array((13, 24), p + 0x10000, "bfloat16"), out=device_array((37, 24), p + 0x20000),
                alpha=alpha)
    call(0x100000)
    _race(events, 100, call)
    src_of = {}                       # scratch -> the A copied into it
    for e in stub_driver.launches(events, "scale2d")[1:]:
        cp = stub_driver.scale_args(e[4])
        assert cp.dst not in src_of
        src_of[cp.dst] = cp.src
    got = gemm_launches(events)[1:]
    assert len(got) == len(src_of) == 800
    for g in got:
        p = src_of[g.A]
        assert (g.B - p, g.C - p, g.alpha) == (0x10000, 0x20000, float(p >> 32)), hex(p)
    assert sorted(src_of.values()) == sorted((t << 32) + (i << 20) for t in range(1, 9)
                                             for i in range(100))


def test_a_launch_error_on_the_path_is_a_cuda_error(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, out = device_array((16, 16), 0x1000), device_array((16, 16), 0x2000), device_array((16, 16), 0x3000)
    api.run("naive", a, b, out=out)
    events.launch_result = 700           # e.g. a sticky illegal address from earlier work
    with pytest.raises(CudaError, match="kernel 'naive'.*CUDA_ERROR_700"):
        api.run("naive", a, b, out=out)


def test_a_failing_launch_on_copies_raises_and_frees_its_scratch(monkeypatch):
    """A repeat call on copies whose copy or GEMM launch fails raises the CudaError and
    frees the scratch it took, in stream order; the next call takes new scratch."""
    events = stub_driver.install(monkeypatch)
    a = device_array((37, 13), 0x100000, "bfloat16", strides=(13, 1))
    b, out = device_array((13, 24), 0x200000, "bfloat16"), device_array((37, 24), 0x300000)
    api.run("cute_mma_sm80", a, b, out=out)
    (relaid,) = resolve.CACHE.launches.values()

    def gemm_fails(*args):
        raise CudaError("cuLaunchKernel (kernel 'cute_mma_sm80') failed: CUDA_ERROR_700")
    real = relaid.launcher
    for fail in ("copy", "gemm", None):
        del events[:]
        events.launch_result = 700 if fail == "copy" else 0
        relaid.launcher = gemm_fails if fail == "gemm" else real
        if fail:
            with pytest.raises(CudaError, match="CUDA_ERROR_700"):
                api.run("cute_mma_sm80", a, b, out=out)
        else:
            api.run("cute_mma_sm80", a, b, out=out)
            assert len(gemm_launches(events)) == 1
        allocs, frees = ([e[1] for e in events if e[0] == kind] for kind in ("alloc", "free"))
        assert len(allocs) == 1 and frees == allocs, (fail, events)


def test_the_path_makes_our_context_current_in_a_thread_with_another(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, out = device_array((16, 16), 0x1000), device_array((16, 16), 0x2000), device_array((16, 16), 0x3000)
    api.run("naive", a, b, out=out)
    driver.bindings().current = 0x999        # a library made its own context current
    api.run("naive", a, b, out=out)
    i = events.index(("set_context", 1))
    assert stub_driver.launches(events)[-1] is events[-1] and i < len(events) - 1
    api.run("naive", a, b, out=out)
    assert events.count(("set_context", 1)) == 1


def test_remembered_signatures_are_bounded(monkeypatch):
    stub_driver.install(monkeypatch)
    monkeypatch.setattr(hotpath, "HOT_ENTRIES", 4)
    for i in range(1, 7):
        api.run("naive", device_array((i, 8), 0x1000), device_array((8, 8), 0x2000), out=device_array((i, 8), 0x3000))
    assert 1 <= len(resolve.CACHE.hot) <= 4


def test_tiny_k_launches_as_many_ctas_as_fill_the_gpu_twice_each_walking_its_row(monkeypatch):
    """cute_tiny_k's grid (records.TileWalkN): a CTA for each row of 64x64 tiles of C, and along
    N as many as make 2 waves of 2 CTAs an SM, each walking its row's tiles gridDim.y apart;
    a grid of tiles where they are fewer."""
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(driver.launch, "device_info", lambda ordinal=None: stub_driver.H100)
    sms = stub_driver.H100.sm_count
    for (m, n, k), grid in (((70, 40000, 17), (2, -(-4 * sms // 2), 1)), ((300, 300, 12), (5, 5, 1))):
        del events[:]
        api.run("cute_tiny_k", device_array((m, k), 0x1000), device_array((k, n), 0x100000),
                out=device_array((m, n), 0x10000000))
        (g,) = [e for e in events if e[0] == "launch"]
        assert g[2] == grid, (m, n, k, g[2])

"""The runtime's guarantees on a GPU, one test per way a demanding user broke it: threads,
streams (per-thread default, destroyed, producer streams), aliasing, huge and degenerate
sizes, freed arrays, autograd tensors, alpha == 0, CUDA graph capture, leaks; plus a
hypothesis fuzz of shapes, strides, offsets and aliasing against float64. Skipped
without a GPU (CuPy/PyTorch parts without those)."""
from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cute_gemm
from cute_gemm import check, registry
from cute_gemm.driver import launch
from cute_gemm.check import judge, reference
from cute_gemm.base.errors import AliasError, CaptureError, InputError

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
SK_SHAPE = (1000, 1300, 700)       # cute_pipelined takes stream-K here (fewer tiles than a wave)
# the kernels these float32 operands reach (the 8-bit ones: their rows in test_fp8_gpu.py)
KERNELS = [k.name for k in registry.kernels() if "float32" in k.dtypes]


def _host(x):
    return cp.asnumpy(x) if isinstance(x, cp.ndarray) else np.asarray(x)


def _prec(name):
    """float32 operands: fp32 where the kernel computes it, else fp32_3xtf32 (cute_3xtf32),
    else tf32 (the tensor-core kernels), judged with that precision's unit roundoff."""
    ps = registry.get(name).precisions
    return next(p for p in ("fp32", "fp32_3xtf32", "tf32") if p in ps)


def _check(name, got, a, b, c=None, alpha=1.0, beta=0.0):
    ref, gauge = reference(_host(a), _host(b), None if c is None else _host(c), alpha, beta)
    r = judge(name, _host(got), ref, gauge, False, check.unit(_prec(name)))
    assert r.status == "pass", r


def _rand(*shape):
    return cp.random.standard_normal(shape, dtype=cp.float32)


def _alive():
    """The CUDA context still works: a fresh product is right."""
    a, b = _rand(33, 17), _rand(17, 9)
    got = cute_gemm.run("cute_smem", a, b)
    cp.cuda.runtime.deviceSynchronize()
    _check("cute_smem", got, a, b)


# ---- rows 1-3: threads, per-thread default streams, free_workspaces, dying streams -----------
def _worker(results, it, stream_of, free=False):
    """`it` stream-K products on the streams stream_of(i) gives (CuPy streams, or raw
    handles: then the operands come from CuPy's stream and run() orders after it)."""
    try:
        m, n, k = SK_SHAPE
        for i in range(it):
            s = stream_of(i)
            raw = isinstance(s, int)
            with contextlib.nullcontext() if raw else s:
                a, b = _rand(m, k), _rand(k, n)
                out = cp.full((m, n), cp.nan, dtype=cp.float32)
                want = a.astype(cp.float64) @ b.astype(cp.float64)
            cute_gemm.run("cute_pipelined", a, b, out=out, stream=s)
            if free:
                launch.free_workspaces()
            launch.synchronize(s) if raw else s.synchronize()
            err = float(cp.abs(out - want).max() / cp.abs(want).max())
            results.append(err < 1e-5)
    except Exception as e:     # noqa: BLE001 — reported by the test thread
        results.append(e)


def _threads(n, target):
    ts = [threading.Thread(target=target) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in ts)


def test_threads_on_the_per_thread_default_stream_stream_k():
    """Row 1: 8 threads, CU_STREAM_PER_THREAD (one handle, 8 streams), stream-K shapes."""
    results: list = []
    _threads(8, lambda: _worker(results, 8, lambda i: 2))
    assert len(results) == 64 and all(r is True for r in results), results
    assert registry.get("cute_pipelined") and _sk_taken()


def _sk_taken():
    return any(p.kernel == "cute_pipelined" and p.shape == SK_SHAPE and p.stream_k
               for p in cute_gemm.resolved_launches())


def test_free_workspaces_while_other_threads_run():
    """Row 2: freeing pooled memory at any time from any thread is safe."""
    results: list = []
    stop = threading.Event()

    def freer():
        while not stop.is_set():
            launch.free_workspaces()

    f = threading.Thread(target=freer)
    f.start()
    try:
        _threads(4, lambda: _worker(results, 10, lambda i: cp.cuda.Stream(non_blocking=True)))
    finally:
        stop.set()
        f.join()
    assert len(results) == 40 and all(r is True for r in results), results
    _alive()


@pytest.mark.whole_device
def test_streams_created_used_and_destroyed_in_a_loop():
    """Row 3: nothing is kept per stream, so dead stream handles are never touched and
    device memory does not grow with the number of streams."""
    results: list = []
    pool = cp.get_default_memory_pool()     # (CuPy keeps blocks per stream: not ours)
    _worker(results, 20, lambda i: cp.cuda.Stream(non_blocking=True))
    launch.free_workspaces()
    pool.free_all_blocks()
    free0 = launch.mem_get_info()[0]
    _worker(results, 40, lambda i: cp.cuda.Stream(non_blocking=True), free=True)
    launch.free_workspaces()
    pool.free_all_blocks()
    assert launch.mem_get_info()[0] >= free0 - (64 << 20)
    assert len(results) == 60 and all(r is True for r in results), results
    _alive()


def test_concurrency_stress_threads_streams_free_and_destroy():
    """Bounded stress: 6 threads x 6 calls, each on a fresh stream, on the per-thread
    default stream or the legacy one, while a seventh frees pools; every result checked."""
    results: list = []
    stop = threading.Event()
    f = threading.Thread(target=lambda: [launch.free_workspaces() for _ in iter(stop.is_set, True)])
    f.start()
    try:
        kinds = [lambda i: cp.cuda.Stream(non_blocking=True), lambda i: 2, lambda i: 0] * 2
        _threads(6, lambda: _worker(results, 6, kinds.pop()))
    finally:
        stop.set()
        f.join()
    assert len(results) == 36 and all(r is True for r in results), results
    _alive()


# ---- rows 4, 5: aliasing ----------------------------------------------------------------------
@pytest.mark.parametrize("name", KERNELS)
def test_out_aliasing_a_b_or_c(name):
    n = 96
    for case in ("a", "b", "c_t", "c_shift"):
        a, b, c = _rand(n, n), _rand(n, n), _rand(n + 1, n)
        a0, b0, c0 = a.copy(), b.copy(), c[:n].copy()
        if case == "a":
            out = cute_gemm.run(name, a, b, out=a, precision=_prec(name))
            _check(name, out, a0, b0)
        elif case == "b":
            out = cute_gemm.run(name, a, b, out=b, alpha=-0.5, precision=_prec(name))
            _check(name, out, a0, b0, alpha=-0.5)
        else:
            cv = c[:n]
            out = c[:n].T if case == "c_t" else c.ravel()[1:1 + n * n].reshape(n, n)
            cute_gemm.run(name, a, b, cv, out=out, alpha=0.5, beta=2.0, precision=_prec(name))
            _check(name, out, a0, b0, c0, 0.5, 2.0)
    with pytest.raises(AliasError):
        cute_gemm.run(name, a, b, out=cp.lib.stride_tricks.as_strided(c, (n, n), (0, 4)),
                      precision=_prec(name))
    cp.cuda.runtime.deviceSynchronize()


def test_k_zero_into_the_transposed_view_of_c():
    n = 2048
    c = _rand(n, n)
    c0 = c.copy()
    cute_gemm.run("cute_pipelined", _rand(n, 0), _rand(0, n), c, out=c.T, beta=-1.5)
    cp.cuda.runtime.deviceSynchronize()
    assert cp.array_equal(c.T, -1.5 * c0)


# ---- row 6: the producer's stream ------------------------------------------------------------
def test_cai_producer_stream_is_waited_for():
    """A is written on stream X behind a long kernel; run() goes on stream Y. CuPy's CAI
    names X (the current stream) and run() orders Y after it."""
    x, y = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    m = 512
    b = _rand(m, m)
    a = cp.zeros((m, m), dtype=cp.float32)
    out = cp.empty((m, m), dtype=cp.float32)
    y.synchronize()
    for _ in range(3):
        with x:
            big = _rand(6144, 6144)
            for _ in range(4):
                big = big @ big * 1e-3          # keeps X busy for milliseconds
            a[...] = 1.0 + big[:m, :m] * 0.0
            cute_gemm.run("cute_smem", a, b, out=out, stream=y)   # a's CAI stream: X
        y.synchronize()
        x.synchronize()
        _check("cute_smem", out, a, b)


# ---- rows 7, 8: sizes past 32 bits and past the grid -----------------------------------------
def test_k_past_32_bits_zero_stride():
    """K = 2^31 + 3 from zero-stride operands: launches of K <= 2^30 adding up (was 0, or
    the K = 3 product). 4 x 4 takes cute_pipelined's stream-K entry (dense copies of the
    operands, then each launch's K cut over its CTAs), so no one fp32 accumulator sums
    more than 2^24 equal terms (one that did would stall at 16)."""
    kk = 2**31 + 3
    one = cp.ones(1, dtype=cp.float32)
    a = cp.lib.stride_tricks.as_strided(one, (4, kk), (0, 0))
    b = cp.lib.stride_tricks.as_strided(one, (kk, 4), (0, 0))
    out = cute_gemm.run("cute_pipelined", a, b, out=cp.empty((4, 4), dtype=cp.float32),
                        alpha=2**-20)
    cp.cuda.runtime.deviceSynchronize()
    got = cp.asnumpy(out)
    assert np.allclose(got, kk * 2**-20, rtol=1e-4), got   # (one accumulator per K piece: 32)


def test_m_past_the_grid_naive():
    m = 1_048_577                               # naive: grid.y = M / 16 > 65535
    a, b = _rand(m, 3), _rand(3, 2)
    out = cute_gemm.run("naive", a, b)
    cp.cuda.runtime.deviceSynchronize()
    _check("naive", out, a, b)


@pytest.mark.parametrize("name", [k for k in KERNELS if registry.get(k).family == "cute"])
def test_n_past_the_grid_cute(name):
    n = 8_388_609                               # CuTe kernels: grid.y = N / 128 > 65535
    a, b = _rand(2, 4), _rand(4, n)
    out = cute_gemm.run(name, a, b, precision=_prec(name))
    cp.cuda.runtime.deviceSynchronize()
    _check(name, out, a, b)


def test_m_past_2_31_rows():
    """M = 2^31 + 5 (8.6 GB of C, operands zero-stride): every row written."""
    m = 2**31 + 5
    free = launch.mem_get_info()[0]
    if free < 12 * 2**30:
        pytest.skip(f"needs ~9 GB free on the device, {free >> 30} GB free")
    v = cp.full(1, 0.5, dtype=cp.float32)
    a = cp.lib.stride_tricks.as_strided(v, (m, 1), (0, 0))
    out = cp.full((m, 1), cp.nan, dtype=cp.float32)
    cute_gemm.run("cute_smem", a, cp.full((1, 1), 3.0, dtype=cp.float32), out=out)
    cp.cuda.runtime.deviceSynchronize()
    assert bool((out == 1.5).all())
    del out


# ---- rows 9-11, 13: named errors and BLAS semantics -------------------------------------------
def test_closed_device_array_as_out_is_a_named_error_and_context_survives():
    a, b = cute_gemm.DeviceArray.from_host(np.ones((4, 3), np.float32)), \
        cute_gemm.DeviceArray.from_host(np.ones((3, 4), np.float32))
    out = cute_gemm.DeviceArray((4, 4))
    out.close()
    with pytest.raises(InputError, match="null"):
        cute_gemm.run("cute_smem", a, b, out=out)
    _alive()


def test_torch_tensor_that_requires_grad():
    """In grad mode the result carries the graph (cute_gemm.torch's op) and backward gives
    dA = dC Bᵀ; out= beside it is refused; outside grad mode the data is read, no graph."""
    torch = pytest.importorskip("torch")
    a = torch.randn(65, 33, device="cuda", requires_grad=True)
    b = torch.randn(33, 17, device="cuda")
    c = cute_gemm.run("cute_smem", a, b)
    assert c.grad_fn is not None
    c.backward(torch.ones_like(c))
    _check("cute_smem", c.detach().cpu().numpy(), a.detach().cpu().numpy(), b.cpu().numpy())
    ones = np.ones((65, 17), np.float32)
    _check("cute_smem", a.grad.cpu().numpy(), ones, b.cpu().numpy().T)
    with pytest.raises(InputError, match="automatic differentiation"):
        cute_gemm.run("cute_smem", a, b, out=torch.empty(65, 17, device="cuda"))
    with torch.no_grad():
        d = cute_gemm.run("cute_smem", a, b)
    assert d.grad_fn is None and not d.requires_grad
    with pytest.raises(InputError, match="requires grad"):
        cute_gemm.run("cute_smem", b.T, b, out=torch.zeros(17, 17, device="cuda", requires_grad=True))


@pytest.mark.parametrize("name", KERNELS)
def test_alpha_zero_does_not_read_a_or_b(name):
    a = cp.full((37, 29), cp.nan, dtype=cp.float32)
    b = cp.full((29, 45), cp.inf, dtype=cp.float32)
    c = _rand(37, 45)
    out = cute_gemm.run(name, a, b, c, alpha=0.0, beta=-2.0, precision=_prec(name))
    cp.cuda.runtime.deviceSynchronize()
    assert cp.array_equal(out, -2.0 * c)


def test_cross_check_takes_device_arrays_and_list_shapes():
    a, b = _rand(70, 50), _rand(50, 30)
    rep = cute_gemm.cross_check(a, b, kernels=["naive", "cute_smem"])
    assert rep.ok, rep.table()

    class ListCAI:
        def __init__(self, x):
            d = dict(x.__cuda_array_interface__)
            d["shape"], d["strides"] = list(d["shape"]), None
            self.__cuda_array_interface__ = d
    out = cp.empty((70, 30), dtype=cp.float32)
    for _ in range(2):
        cute_gemm.run("cute_smem", ListCAI(a), ListCAI(b), out=ListCAI(out))
    cp.cuda.runtime.deviceSynchronize()
    _check("cute_smem", out, a, b)


# ---- CUDA graph capture -----------------------------------------------------------------------
def test_torch_graph_capture_and_replay():
    torch = pytest.importorskip("torch")
    m, n, k = SK_SHAPE
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    out = torch.empty(m, n, device="cuda")
    sq = torch.randn(256, 256, device="cuda")
    bT = torch.randn(n, k, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):      # warm up: compile, load, resolve outside the capture
        cute_gemm.run("cute_pipelined", a, b, out=out, stream=s)
        cute_gemm.run("cute_pipelined", sq, sq, out=sq, stream=s)
        cute_gemm.run("cute_smem", a, bT.T, out=out, stream=s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    out2 = torch.empty(m, n, device="cuda")
    ha, hb = a.cpu().numpy(), b.cpu().numpy()
    with torch.cuda.graph(g, stream=s):
        st = torch.cuda.current_stream()
        cute_gemm.run("cute_pipelined", a, b, out=out, stream=st)       # stream-K workspace
        cute_gemm.run("cute_pipelined", sq, sq, out=sq, stream=st)      # aliasing: a temporary
        cute_gemm.run("naive", a, bT.T, out=out2, stream=st)
        with pytest.raises(CaptureError):
            cute_gemm.run("naive", ha, hb, stream=st)
    for _ in range(2):
        a.copy_(torch.randn(m, k, device="cuda"))
        sq0 = sq.clone()
        g.replay()
        torch.cuda.synchronize()
        _check("cute_pipelined", out.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy())
        _check("cute_pipelined", sq.cpu().numpy(), sq0.cpu().numpy(), sq0.cpu().numpy())
        _check("naive", out2.cpu().numpy(), a.cpu().numpy(), bT.T.cpu().numpy())
    del g
    _alive()


def test_cupy_stream_capture():
    m, n, k = SK_SHAPE
    a, b = _rand(m, k), _rand(k, n)
    out = cp.empty((m, n), dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    cute_gemm.run("cute_pipelined", a, b, out=out, stream=s)
    s.synchronize()
    s.begin_capture()
    try:     # a, b, out name CuPy's current stream, outside the capture: not waited for
        cute_gemm.run("cute_pipelined", a, b, out=out, stream=s)
    finally:
        g = s.end_capture()
    with s:     # fresh inputs on the replay's stream: on CuPy's default one they would race it
        out[...] = cp.nan
        a[...] = _rand(m, k)
    g.launch(s)
    s.synchronize()
    _check("cute_pipelined", out, a, b)


# ---- leaks -------------------------------------------------------------------------------------
@pytest.mark.whole_device
def test_ten_thousand_calls_leave_device_memory_flat():
    """10,000 calls over the hot path, the stream-K workspace, the aliasing temporary and
    errors: free device memory (cuMemGetInfo) back where it was once the pools are trimmed."""
    m, n, k = SK_SHAPE
    a, b = _rand(m, k), _rand(k, n)
    out = cp.empty((m, n), dtype=cp.float32)
    sq = _rand(64, 64)
    small_a, small_b, small_o = _rand(16, 16), _rand(16, 16), cp.empty((16, 16), dtype=cp.float32)

    def calls(i):
        if i % 10 == 0:
            cute_gemm.run("cute_pipelined", a, b, out=out)
        elif i % 10 == 1:
            cute_gemm.run("cute_tiled", sq, sq, out=sq, alpha=0.5)
        elif i % 10 == 2:
            with pytest.raises(InputError):
                cute_gemm.run("cute_smem", small_a, small_b, out=small_o[:, :15])
        else:
            cute_gemm.run("cute_pipelined", small_a, small_b, out=small_o)
    for i in range(200):
        calls(i)
    cp.cuda.runtime.deviceSynchronize()
    launch.free_workspaces()
    free0 = launch.mem_get_info()[0]
    for i in range(10_000):
        calls(i)
    cp.cuda.runtime.deviceSynchronize()
    launch.free_workspaces()
    free1 = launch.mem_get_info()[0]
    assert free1 >= free0 - (2 << 20), (free0 - free1)


# ---- the fuzz ----------------------------------------------------------------------------------
_FUZZ_KERNELS = ["naive", "v9_warptile", "cute_gmem", "cute_tiled", "cute_multistage", "cute_pipelined"]


def _view(buf, shape, order, offset, neg):
    """A (rows, cols) view of the flat buffer: row- or column-major, padded leading
    dimension, an element offset, and optionally reversed rows (negative stride)."""
    r, c = shape
    if r == 0 or c == 0:
        return cp.empty(shape, dtype=cp.float32)
    ld = (c if order == "r" else r) + offset % 3
    base = buf[offset:offset + ld * (r if order == "r" else c)]
    v = base.reshape(-1, ld)[:, :c] if order == "r" else base.reshape(-1, ld)[:, :r].T
    return v[::-1] if neg and r > 1 else v


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(_FUZZ_KERNELS),
       m=st.integers(1, 300), n=st.integers(1, 300), k=st.integers(0, 300),
       orders=st.tuples(*[st.sampled_from("rc")] * 3),
       offsets=st.tuples(*[st.integers(0, 9)] * 3),
       neg=st.tuples(st.booleans(), st.booleans()),
       alpha=st.sampled_from([1.0, -0.5, 0.0, 3.0]), beta=st.sampled_from([0.0, 1.0, -2.0]),
       alias=st.sampled_from(["none", "c", "a"]))
def test_fuzz_against_float64(name, m, n, k, orders, offsets, neg, alpha, beta, alias):
    size = 320 * 320 + 16
    bufs = [_rand(size) for _ in range(3)]
    a = _view(bufs[0], (m, k), orders[0], offsets[0], neg[0])
    b = _view(bufs[1], (k, n), orders[1], offsets[1], neg[1])
    c = _view(bufs[2], (m, n), orders[2], offsets[2], False)
    a0, b0, c0 = _host(a).copy(), _host(b).copy(), _host(c).copy()
    if alias == "a" and (m, k) == (m, n):
        out = a
    elif alias == "c":
        out = c
    else:
        out = cp.full((m, n), cp.nan, dtype=cp.float32)
    cute_gemm.run(name, a, b, c, alpha=alpha, beta=beta, out=out)
    cp.cuda.runtime.deviceSynchronize()
    ref, gauge = reference(a0, b0, c0, alpha, beta)
    r = judge(name, _host(out), ref, gauge, False)
    assert r.status == "pass", (r, m, n, k, orders, offsets, neg, alias)

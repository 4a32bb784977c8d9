"""cute_3xtf32 on a GPU (sm_90): the fp16 split bit for bit against a numpy model of it, the
fp32 gauge on odd shapes, all four layouts and wide exponent ranges, the residual fix, exact
integers equal to cute_pipelined's, NaN/Inf where float64 puts them, inputs the split cannot
carry (±Inf, subnormals, magnitudes far below their row's largest) computed in float64 on the
device (device and host operands), rows whose sum cancels recomputed with float64 sums (which
rows, every layout, C as it was), a CUDA graph capture replayed on new inputs, CuPy/PyTorch
views. The same kernel also runs in test_tensor_cores_gpu.py's loops (every precision each
kernel offers). Skipped without a GPU, or on one that is not sm_90."""
from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
from cuda.bindings import driver as drv

import cute_gemm
from cute_gemm import registry
from cute_gemm.driver import launch, pool
from cute_gemm.plan import composed
from cute_gemm.driver.arrays import DeviceArray, Operand, parse
from cute_gemm.check import cross_check, judge, reference, supported_kernels

pytestmark = pytest.mark.gpu
NAME = "cute_3xtf32"
GEMM = registry.get(NAME).gemm_of.kernel.name   # the GEMM it runs (not registered)


@pytest.fixture(autouse=True)
def _hopper():
    if NAME not in [k.name for k in supported_kernels()]:
        pytest.skip(f"{NAME} needs sm_90a; this GPU is {launch.device_info().arch}")


def split_model(x: np.ndarray):
    """(small, big, inexact, lost) of each row of x (fp16, as uint16 bits) as
    kernels/cute/c7_3xtf32.cu computes them: the row scaled by 2^p, its largest finite
    magnitude into [2^14, 2^15); big = fp16(y), small = fp16(y - big), both round to nearest
    even; NaN as 0x7fff in both."""
    x = np.asarray(x, np.float32)
    fin = np.isfinite(x)
    mx = np.where(fin, np.abs(x), 0).max(axis=1)
    e = np.frexp(mx)[1]
    p = np.where(mx > 0, 15 - e, 0)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.ldexp(x, p).astype(np.float32)
        big = y.astype(np.float16)
        d = (y - big.astype(np.float32)).astype(np.float32)
        small = d.astype(np.float16)
        r = (d - small.astype(np.float32)).astype(np.float32)
    inexact = fin & (np.abs(r) > 2.0**-22 * np.abs(y))
    lost = fin & (x != 0) & ((np.abs(y) < 2.0**-24) | (np.abs(x) < 2.0**-126))
    nan = np.isnan(x)
    bits = lambda v: np.where(nan, np.uint16(0x7FFF), v.view(np.uint16))   # noqa: E731
    return bits(small), bits(big), inexact, lost


def _composed(dA, dB, dT=None) -> composed.Composed:
    """cute_3xtf32's passes for these operands (T row-major where not given)."""
    A, B = parse("a", dA), parse("b", dB)
    m, n = A.shape[0], B.shape[1]
    T = parse("out", dT) if dT is not None else Operand("out", None, True, 0, (m, n), (n, 1),
                                                         "float32")
    return composed.Composed(registry.get(NAME), 0, A, B, T)


def _split_on_gpu(a: np.ndarray, b: np.ndarray):
    """A' (M x K' halves), B' (N x K': B' column-major) and the range flags, from the
    pre-pass run alone on a scratch of its own."""
    dA, dB = DeviceArray.from_host(a), DeviceArray.from_host(b)
    c = _composed(dA, dB)
    kp = registry.get(NAME).gemm_of.k_prime(a.shape[1])
    s = pool.alloc_async(c.nbytes, 0, 0)
    try:
        c.prepass(dA.ptr, dB.ptr, s, 0)
        word = np.zeros(1, np.uint32)
        launch.memcpy_dtoh(word.ctypes.data, s + c.at["flags"], 4, 0)
        out = []
        for at, rows in (("a2", a.shape[0]), ("b2", b.shape[1])):
            h = np.empty((rows, kp), np.uint16)
            launch.memcpy_dtoh(h.ctypes.data, s + c.at[at], h.nbytes, 0)
            out.append(h)
        launch.synchronize(0)
    finally:
        pool.free_async(s, 0)
        dA.close()
        dB.close()
    return out[0], out[1], int(word[0])


def test_split_is_bit_exact_against_a_numpy_model():
    rng = np.random.default_rng()
    m, n, k = 67, 45, 100                        # 2 chunks of 64: K' 256, 28 pad columns
    # each row at its own scale (2^-60..2^60), within a row 2^-2..2^2: nothing lost
    a = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-60, 60, (m, 1))
         * 2.0 ** rng.integers(-2, 2, (m, k))).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 2.0 ** rng.integers(-60, 60, (1, n))).astype(np.float32)
    a[:2] = rng.standard_normal((2, k)) * 2.0 ** rng.integers(-2, 2, (2, k))   # at 2^0: 1 + 2^-11
    a[0, :4] = [np.nan, 0.0, -0.0, 1.0 + 2**-11]                            # is no outlier there
    a[1, :] = 1.0 + 2.0**-20
    a[1, 3] = 2.0**-20 + 2.0**-35 + 2.0**-40     # scaled: 2^-6 + 2^-21 + 2^-26, small below
                                                 # fp16's normal range: 2^-26 lost, fixed
    A2, B2, word = _split_on_gpu(a, b)
    assert word == 0 and A2.shape[1] == B2.shape[1] == 256
    part = lambda x, q: x.reshape(x.shape[0], -1, 2, 64)[:, :, q, :].reshape(x.shape[0], -1)  # noqa: E731
    for x, src in ((A2, a), (B2, b.T)):
        small, big, inexact, lost = split_model(src)
        assert not lost.any()
        for q, want in enumerate((small, big)):
            assert np.array_equal(part(x, q)[:, :k], want)
            assert not part(x, q)[:, k:].any()                    # the last chunk's pad
    assert split_model(a)[2][1, 3]                                # counted for the fix
    # the split's error where it is not counted: |x - (big + small) 2^-p| <= 2^-22 |x|
    small, big, inexact, _ = split_model(a)
    fin = np.isfinite(a) & ~inexact
    p = 15 - np.frexp(np.abs(np.nan_to_num(a)).max(axis=1))[1]
    got = np.ldexp(big.view(np.float16).astype(np.float64) + small.view(np.float16), -p[:, None])
    assert (np.abs(a.astype(np.float64) - got)[fin] <= 2.0**-22 * np.abs(a[fin])).all()


def test_range_flags_name_the_operand_whose_split_cannot_carry_it_or_holds_inf():
    a, b = np.ones((8, 64), np.float32), np.ones((64, 6), np.float32)
    a[2, 3] = 2.0**-30                          # fp16-exact after scaling: nothing lost
    b[1, 1] = 2.0**-20 + 2.0**-35 + 2.0**-40    # small part below fp16's normal range: fixed
    assert _split_on_gpu(a, b)[2] == 0
    a[2, 3] = 2.0**-40                          # below 2^-24 after scaling: lost
    assert _split_on_gpu(a, b)[2] == 1
    b[4, 5] = 1e-40                             # a subnormal input
    assert _split_on_gpu(a, b)[2] == 3
    a[2, 3], b[4, 5] = 1.0, 1.0
    b[:8, 2] = 2.0**-20 + 2.0**-35 + 2.0**-40   # more than 4 to fix in 32 of a column
    assert _split_on_gpu(a, b)[2] == 2
    b[0, 2] = -np.inf                           # ±Inf: bit 2 (A) or 3 (B)
    assert _split_on_gpu(a, b)[2] == 2 | 8
    a[7, 0] = np.inf
    assert _split_on_gpu(a, b)[2] == 2 | 4 | 8


def test_the_fix_adds_the_residuals_of_small_parts_below_fp16s_range():
    """Rows whose weight sits on elements 2^-24 of their largest (their small parts below
    fp16's normal range, 2 in 32: under the flag's 4), B zero wherever A is not that small:
    without the fix the gauge ratio is ~16 (docs/design/cute_3xtf32.md); with it, that of
    ordinary inputs."""
    rng = np.random.default_rng()
    m, n, k = 96, 80, 512
    a = np.ones((m, k), np.float32)
    a[:, ::16] = 2.0**-24 * (1 + rng.random((m, k // 16)))
    b = np.zeros((k, n), np.float32)
    b[::16] = rng.standard_normal((k // 16, n))
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        r3 = judge(NAME, cute_gemm.run(NAME, a, b), ref, gauge, False)
    assert r3.status == "pass" and r3.gauge_ratio < 2, r3


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_the_fp32_gauge_on_odd_shapes_and_every_layout(layout):
    rep = cross_check(kernels=[NAME], shapes=[(1, 1, 1), (7, 9, 3), (65, 129, 17), (257, 383, 129),
                                              (1000, 1300, 700), (130, 259, 4099)],
                      layout=layout, alpha=1.5, beta=-0.5, seed=11)
    assert rep.ok and [s.precision for s in rep.shapes] == ["fp32_3xtf32"] * 6, rep.table()


@pytest.mark.parametrize("wide", [False, True], ids=["normal", "2^-50..2^50"])
def test_long_k_meets_the_fp32_gauge_far_below_tf32(wide):
    """K = 8192, N(0,1) or magnitudes spread over 2^-50..2^50: the fp32 gauge holds and the
    relative Frobenius error is 1/100 of 1xTF32's or less; on N(0,1) also no more than the
    SIMT fp32 kernel's (SGEMM's too: scripts/accuracy_3xtf32.py)."""
    rng = np.random.default_rng()
    m, n, k = 96, 80, 8192
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if wide:
        a, b = a * 2.0 ** rng.uniform(-50, 50, (m, k)), b * 2.0 ** rng.uniform(-50, 50, (k, n))
    a, b = a.astype(np.float32), b.astype(np.float32)
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    r3 = judge(NAME, cute_gemm.run(NAME, a, b), ref, gauge, False)
    rp = judge("cute_pipelined", cute_gemm.run("cute_pipelined", a, b), ref, gauge, False)
    rt = judge("tf32", cute_gemm.run("cute_wgmma_ws", a, b, precision="tf32"), ref, gauge, False)
    assert r3.status == "pass", r3
    assert r3.rel_frobenius < rt.rel_frobenius / 100, (r3, rt)
    if not wide:
        assert r3.rel_frobenius <= rp.rel_frobenius, (r3, rp)


def test_the_error_does_not_grow_with_k():
    """N(0,1), K = 256 and 16384: promoted after every chunk into a compensated sum, the
    error stays that of one chunk (~1.3e-7 on the H100); fp32's own sum, and a tensor-core
    sum promoted less often, grow with K (SIMT fp32: 2.1e-7 -> 3.2e-7; the K-concatenated
    split promoted every 4 k-tiles: 3.4e-7 -> 4.0e-7, past 2e-7 at both)."""
    rng = np.random.default_rng()
    errs = []
    for k in (256, 16384):
        a = rng.standard_normal((128, k)).astype(np.float32)
        b = rng.standard_normal((k, 128)).astype(np.float32)
        ref, gauge = reference(a, b, None, 1.0, 0.0)
        r3 = judge(NAME, cute_gemm.run(NAME, a, b), ref, gauge, False)
        rp = judge("cute_pipelined", cute_gemm.run("cute_pipelined", a, b), ref, gauge, False)
        assert r3.status == "pass" and r3.rel_frobenius <= 2e-7, (k, r3)
        errs.append((r3.rel_frobenius, rp.rel_frobenius))
    (e_short, _), (e_long, p_long) = errs
    assert e_long <= 1.25 * e_short and e_long < p_long, errs


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_exact_integers_equal_cute_pipelined_bit_for_bit(beta):
    rep = cross_check(kernels=[NAME, "cute_pipelined"], shapes=[(97, 131, 257), (256, 128, 2048)],
                      exact=True, beta=beta)
    assert rep.ok, rep.table()
    rng = np.random.default_rng()
    a = rng.integers(-8, 9, (200, 3000)).astype(np.float32)
    b = rng.integers(-8, 9, (3000, 150)).astype(np.float32)
    c = rng.integers(-8, 9, (200, 150)).astype(np.float32)
    got = cute_gemm.run(NAME, a, b, c, beta=beta)
    assert np.array_equal(got, cute_gemm.run("cute_pipelined", a, b, c, beta=beta))


def _ieee(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return (a64[:, :, None] * b64[None, :, :]).sum(axis=1)    # elementwise IEEE, no BLAS


def test_nan_lands_where_fp32_puts_it():
    """K = 300: ten chunks, so the NaN passes through promoted sums (no flag: NaN needs none)."""
    rng = np.random.default_rng()
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 30)).astype(np.float32)
    a[9, 3], b[250, 17] = np.nan, np.nan
    want = _ieee(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = cute_gemm.run(NAME, a, b)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(want).sum() == 30 + 40 - 1
    fin = np.isfinite(want)
    assert np.abs(got[fin] - want[fin]).max() <= 16 * 2.0**-23 * (np.abs(a) @ np.abs(b))[fin].max()


def _rounded_once(got, want) -> bool:
    """got is float64's want rounded once to float32 (half an ulp, and the float64 sum's own
    error): NaN where want is NaN, ±Inf where it is, and where it overflows float32."""
    with np.errstate(over="ignore"):
        w32 = want.astype(np.float32)
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return False
    inf = np.isinf(w32)
    fin = np.isfinite(w32)
    return bool(np.array_equal(got[inf], w32[inf]) and
                (np.abs(got[fin] - want[fin]) <= 2.0**-24 * (1 + 2.0**-10) * np.abs(want[fin])).all())


@pytest.mark.parametrize("k", [20, 300])
def test_inf_lands_where_float64_puts_it(k):
    """An Inf does not survive the GEMM's compensated sum (Inf - Inf in its error term): the
    pre-pass flags it and every row is computed in float64 on the device, no warning. NaN
    and Inf·0 give NaN, signs follow float64, finite elements are rounded once. The Infs sit
    in the first and the last chunk (k = 300: ten)."""
    rng = np.random.default_rng()
    a = (rng.integers(1, 9, (40, k)) * rng.choice([-1, 1], (40, k))).astype(np.float32)
    b = (rng.standard_normal((k, 30)) * 3).astype(np.float32)
    a[:, 0] = rng.integers(1, 9, 40) * 1.0 + 2**-15            # non-zero small parts too
    b[0, 4], b[5, 7], b[k - 1, 7] = np.inf, np.inf, -np.inf      # column 7: +Inf - Inf = NaN
    a[9, 3] = np.nan
    a[11, 2] = -np.inf
    b[2, 12] = 0.0                                               # row 11, column 12: -Inf·0
    want = _ieee(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = cute_gemm.run(NAME, a, b)
    assert np.isinf(want)[:, 4].sum() > 30 and _rounded_once(got, want)


def _flagged(kind: str, rng):
    """(a, b, c) whose split the pre-pass flags: ±Inf in B, a subnormal in B (the rest of B
    at 2^-100), or magnitudes in A's rows far below their row's largest (2^-40 of it)."""
    a = rng.standard_normal((70, 90)).astype(np.float32)
    b = rng.standard_normal((90, 50)).astype(np.float32)
    c = rng.standard_normal((70, 50)).astype(np.float32)
    if kind == "inf":
        b[5, 7], b[40, 3] = np.inf, -np.inf
    elif kind == "subnormal":
        b = (b * 2.0**-100).astype(np.float32)
        b[5, 7] = 1e-40
    else:
        a[:, 1::2] *= np.float32(2.0**-40)
    return a, b, c


@pytest.mark.parametrize("kind", ["inf", "subnormal", "far-below"])
@pytest.mark.parametrize("host", [True, False], ids=["numpy", "device"])
def test_inputs_the_split_cannot_carry_are_computed_in_float64(host, kind):
    """The split cannot carry these (the flags say so on the device, test above): finish
    marks every row and refine computes T = alpha A B + beta C with float64 sums, C read as
    it was (in place too), so T is float64's result rounded once, with no warning and no
    host wait."""
    rng = np.random.default_rng()
    a, b, c = _flagged(kind, rng)
    assert _split_on_gpu(a, b)[2] != 0
    want = 1.5 * _ieee(a, b) + 0.5 * c.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        if host:
            got = cute_gemm.run(NAME, a, b, c, alpha=1.5, beta=0.5)
        else:
            dA, dB, dC = (DeviceArray.from_host(x) for x in (a, b, c))
            try:
                cute_gemm.run(NAME, dA, dB, dC, out=dC, alpha=1.5, beta=0.5)   # C in place
                got = dC.to_host()
            finally:
                for d in (dA, dB, dC):
                    d.close()
    assert _rounded_once(got, want)
    if kind != "inf":
        ref, gauge = reference(a, b, c, 1.5, 0.5)
        assert judge(NAME, got, ref, gauge, False).status == "pass"


def test_a_cuda_graph_captures_a_call_and_replays_it_on_new_inputs():
    """A call captured on a new stream in global mode (cuStreamBeginCapture: any host wait
    or unsafe call during the capture would end it in an error), then the graph replayed
    after new values are written into A, B and C: ordinary inputs, then inputs the split
    cannot carry (decided again on the device at each replay). Each replay gives float64's
    result within the fp32 gauge, C updated in place."""
    def ok(r):
        assert r[0] == drv.CUresult.CUDA_SUCCESS, r
        return r[1] if len(r) == 2 else r[1:]
    rng = np.random.default_rng()
    m, n, k = 70, 50, 90
    dA, dB, dC = (DeviceArray.from_host(np.zeros(s, np.float32)) for s in ((m, k), (k, n), (m, n)))
    stream = ok(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING.value))
    s = int(stream)
    graph = exe = None
    try:
        cute_gemm.run(NAME, dA, dB, dC, out=dC, beta=0.5, stream=s)     # loads and resolves
        ok(drv.cuStreamSynchronize(stream))
        ok(drv.cuStreamBeginCapture(stream, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
        try:
            cute_gemm.run(NAME, dA, dB, dC, out=dC, beta=0.5, stream=s)
        finally:
            graph = ok(drv.cuStreamEndCapture(stream))
        exe = ok(drv.cuGraphInstantiate(graph, 0))
        plain = (rng.standard_normal((m, k)).astype(np.float32),
                 rng.standard_normal((k, n)).astype(np.float32),
                 rng.standard_normal((m, n)).astype(np.float32))
        for a, b, c in (plain, _flagged("far-below", rng)):
            for d, x in ((dA, a), (dB, b), (dC, c)):
                launch.memcpy_htod(d.ptr, x.ctypes.data, x.nbytes, s)
            ok(drv.cuGraphLaunch(exe, stream))
            ok(drv.cuStreamSynchronize(stream))
            got = dC.to_host()
            ref, gauge = reference(a, b, c, 1.0, 0.5)
            assert judge(NAME, got, ref, gauge, False).status == "pass"
    finally:
        if exe is not None:
            drv.cuGraphExecDestroy(exe)
        if graph is not None:
            drv.cuGraphDestroy(graph)
        drv.cuStreamDestroy(stream)
        for d in (dA, dB, dC):
            d.close()


def test_cupy_views_with_offsets_and_negative_strides():
    cp = pytest.importorskip("cupy")
    big_a = cp.random.standard_normal((131, 301), dtype=cp.float32)
    big_b = cp.random.standard_normal((300, 97), dtype=cp.float32)
    a, b = big_a[1:, 1:][::-1], big_b[:, 3:].T.T[::2]       # odd offsets, reversed rows, every other row
    b = b[:, :90]
    a = a[:, :b.shape[0]]
    got = cute_gemm.run(NAME, a, b)
    ha, hb = cp.asnumpy(a), cp.asnumpy(b)
    ref, gauge = reference(ha, hb, None, 1.0, 0.0)
    assert judge(NAME, cp.asnumpy(got), ref, gauge, False).status == "pass"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_pytorch_tensors_and_transposed_views():
    import torch
    a = torch.randn(300, 200, device="cuda")
    b = torch.randn(150, 200, device="cuda").T                # column-major B
    out = torch.full((300, 150), float("nan"), device="cuda")
    cute_gemm.run(NAME, a, b, out=out)
    torch.cuda.synchronize()
    ref, gauge = reference(a.cpu().numpy(), b.cpu().numpy(), None, 1.0, 0.0)
    assert judge(NAME, out.cpu().numpy(), ref, gauge, False).status == "pass"
    got = cute_gemm.run(NAME, a.T.contiguous().T, b)          # m-major A
    torch.cuda.synchronize()
    assert judge(NAME, got.cpu().numpy(), ref, gauge, False).status == "pass"


def test_a_cut_last_wave_is_deterministic_and_as_accurate_as_the_whole_walk(monkeypatch):
    """Six units more than the GPU has clusters: those six are cut along K (the last round,
    sm90_tail_split.cuh), their pieces' partials added by the last to finish. Two runs agree
    bit for bit, beta * C lands once, and the fp32 gauge holds as with nothing cut
    (CUTE_GEMM_STREAM_K=0), at about the same error."""
    from cute_gemm.plan import resolve
    clusters = launch.device_info().sm_count // 2
    m, n, k = 256 * -(-(clusters + 6) // 6) - 37, 192 * 6 - 5, 1000
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
    ref, gauge = reference(a, b, c, 1.0, 0.5)
    cute_gemm.clear_caches()
    got = [cute_gemm.run(NAME, a, b, c, beta=0.5) for _ in range(2)]
    (plan,) = [p for p in resolve.resolved_launches() if p.kernel == GEMM]
    dp, pieces = plan.tail_split
    assert dp > 0 and pieces > 1 and plan.workspace_bytes > 0, plan
    assert np.array_equal(got[0], got[1])
    monkeypatch.setenv("CUTE_GEMM_STREAM_K", "0")
    cute_gemm.clear_caches()
    whole = cute_gemm.run(NAME, a, b, c, beta=0.5)
    (plan,) = [p for p in resolve.resolved_launches() if p.kernel == GEMM]
    assert plan.tail_split[1] == 1, plan
    r_cut, r_whole = (judge(NAME, x, ref, gauge, False) for x in (got[0], whole))
    assert r_cut.status == r_whole.status == "pass", (r_cut, r_whole)
    assert r_cut.rel_frobenius <= 1.1 * r_whole.rel_frobenius, (r_cut, r_whole)
    cute_gemm.clear_caches()


def test_threads_on_their_own_streams_each_cut_their_last_wave():
    """Four threads, a CuPy stream each, four calls each on a shape whose every unit is cut
    along K (600 x 500 x 2048: 9 units on more clusters): a workspace per busy stream, one
    scratch pool, the range flags read per call. Every result is the bits one call alone
    gives (the cut's sum order does not depend on who finishes last)."""
    import threading
    cp = pytest.importorskip("cupy")
    from cute_gemm.plan import resolve
    m, n, k = 600, 500, 2048
    rng = np.random.default_rng()
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
    want = cute_gemm.run(NAME, a, b)
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    assert judge(NAME, want, ref, gauge, False).status == "pass"
    assert any(p.kernel == GEMM and p.tail_split and p.tail_split[1] > 1
               for p in resolve.resolved_launches())
    da, db = cp.asarray(a), cp.asarray(b)
    cp.cuda.Device().synchronize()
    results: list = []

    def work():
        try:
            s = cp.cuda.Stream(non_blocking=True)
            for _ in range(4):
                with s:
                    out = cp.full((m, n), cp.nan, dtype=cp.float32)
                cute_gemm.run(NAME, da, db, out=out, stream=s)
                s.synchronize()
                results.append(np.array_equal(cp.asnumpy(out), want))
        except Exception as e:     # noqa: BLE001 — reported below
            results.append(e)
    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert len(results) == 16 and all(r is True for r in results), results


def _cancelling(m, n, k, rng):
    """The accuracy study's cancellation family: columns of A in pairs, the second the first
    times (1 + ~2^-12), the matching rows of B opposite: each pair of products cancels to
    ~2^-12, so T is ~2^-12 sqrt(2/K) of sqrt(S) per row."""
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    a[:, 1::2] = a[:, 0::2] * (1 + 2.0**-12 * rng.standard_normal((m, k // 2)))
    b[1::2] = -b[0::2]
    return a.astype(np.float32), b.astype(np.float32)


def _laid(x: np.ndarray, major: str) -> np.ndarray:
    return np.asfortranarray(x) if major == "t" else x


@pytest.mark.parametrize("shape", [(150, 70, 1000), (70, 2100, 36)])   # the second: more column
@pytest.mark.parametrize("layout", registry.LAYOUTS)                    # tiles than refine's grid
def test_rows_whose_sum_cancels_are_recomputed_correctly_rounded(layout, shape):
    """Where the products cancel (T ~2^-12 of its gauge), the split's representation error
    (~2^-24 of each product) does not shrink with T: 3xTF32 alone is 3.5x SGEMM's relative
    error there (3.5e-4 against 1.0e-4, docs/design/cute_3xtf32.md). finish marks such rows
    and refine recomputes them with float64 sums: each element is then the exact result
    rounded once (error <= half an ulp of fp32), deterministically, in every layout."""
    rng = np.random.default_rng()
    a, b = _cancelling(*shape, rng)
    want = _ieee(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = [cute_gemm.run(NAME, _laid(a, layout[0]), _laid(b, layout[1])) for _ in range(2)]
    assert np.array_equal(got[0], got[1])
    assert (np.abs(got[0] - want) <= 2.0**-24 * (1 + 2.0**-10) * np.abs(want)).all()
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    rp = judge("cute_pipelined", cute_gemm.run("cute_pipelined", a, b), ref, gauge, False)
    r3 = judge(NAME, got[0], ref, gauge, False)
    assert r3.rel_frobenius <= rp.rel_frobenius / 8, (r3, rp)


def _marked_rows(a, b, c=None, beta=0.0):
    """The rows finish leaves to refine (c7's marked words and their count), from the
    stages run one by one on a scratch of their own (C in place in T)."""
    m, n = a.shape[0], b.shape[1]
    dA, dB = (DeviceArray.from_host(x) for x in (a, b))
    dT = DeviceArray.from_host(c if c is not None else np.full((m, n), np.nan, np.float32))
    cp = _composed(dA, dB, dT)
    s = pool.alloc_async(cp.nbytes, 0, 0)
    try:
        cp.prepass(dA.ptr, dB.ptr, s, 0)
        cp.product(s, 0)
        cp.finish(dA.ptr, dB.ptr, dT.ptr, 1.0, beta, s, 0)
        marked = np.empty(m + 1, np.int32)
        launch.memcpy_dtoh(marked.ctypes.data, s + cp.at["marked"], marked.nbytes, 0)
        launch.synchronize(0)
    finally:
        pool.free_async(s, 0)
        for d in (dA, dB, dT):
            d.close()
    return marked


def test_only_the_rows_that_cancel_are_marked():
    """Rows 5..9 and 60 cancel, the others are N(0,1): finish marks exactly those (and counts
    them); a beta * C as large as the products keeps them from cancelling, so nothing is
    marked; N(0,1) alone marks nothing; one element the split cannot carry marks them all."""
    rng = np.random.default_rng()
    m, n, k = 96, 256, 512                     # plain rows: |T_m|^2 / S_m ~ chi2(256) / 256
    a, b = _cancelling(m, n, k, rng)
    plain = rng.standard_normal((m, k)).astype(np.float32)
    rows = [5, 6, 7, 8, 9, 60]
    a2 = plain.copy()
    a2[rows] = a[rows]
    marked = _marked_rows(a2, b)
    assert np.flatnonzero(marked[:m]).tolist() == rows and marked[m] == len(rows)
    c = (rng.standard_normal((m, n)) * np.sqrt(k)).astype(np.float32)
    assert not _marked_rows(a2, b, c, beta=1.0).any()
    assert not _marked_rows(plain, rng.standard_normal((k, n)).astype(np.float32)).any()
    # inputs the split cannot carry: every row, whatever it sums to
    far = plain.copy()
    far[3, 1] = 2.0**-40
    marked = _marked_rows(far, rng.standard_normal((k, n)).astype(np.float32))
    assert marked[:m].all() and marked[m] == m


@pytest.mark.parametrize("in_place", [False, True], ids=["apart", "in-place"])
def test_refined_rows_read_c_as_it_was(in_place):
    """beta * C as small as the cancelled products: the rows are marked, finish leaves T's
    row (and C's, in place) untouched, and refine adds beta * C from C as it was."""
    rng = np.random.default_rng()
    m, n, k = 80, 96, 768
    a, b = _cancelling(m, n, k, rng)
    c = (rng.standard_normal((m, n)) * 2.0**-12).astype(np.float32)
    want = _ieee(a, b) + 0.75 * c.astype(np.float64)
    dA, dB, dC = (DeviceArray.from_host(x) for x in (a, b, c))
    dT = dC if in_place else DeviceArray.from_host(np.full((m, n), np.nan, np.float32))
    try:
        cute_gemm.run(NAME, dA, dB, dC, out=dT, beta=0.75)
        got = dT.to_host()
    finally:
        for d in {id(x): x for x in (dA, dB, dC, dT)}.values():
            d.close()
    assert (np.abs(got - want) <= 2.0**-24 * (1 + 2.0**-10) * np.abs(want)).all()

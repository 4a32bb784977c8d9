"""GPU tests: every registered kernel against float64 on many shapes, layouts, alpha/beta,
exact-integer agreement, device arrays in/out, and no leaks. Skipped without a GPU."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.check import cross_check, reference, judge

pytestmark = pytest.mark.gpu
# the kernels that take float32 operands in fp32 (the tensor-core ones: test_tensor_cores_gpu.py)
FP32 = [k.name for k in registry.kernels() if "fp32" in k.precisions]

# 1, primes, non-multiples of every tile (8, 16, 32, 64, 128, 256), skinny and fat shapes
SHAPES = [(1, 1, 1), (1, 7, 3), (2, 3, 5), (7, 1, 13), (17, 31, 19), (31, 17, 64), (33, 65, 7),
          (64, 64, 64), (97, 101, 103), (127, 129, 131), (128, 128, 8), (128, 128, 1),
          (129, 127, 9), (200, 1, 300), (1, 200, 300), (255, 257, 33), (256, 128, 64),
          (300, 500, 17), (513, 257, 129), (1000, 1300, 700), (1023, 1025, 511), (4, 4, 2049)]


def _assert_ok(rep):
    assert rep.ok, "\n" + rep.table()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_kernel_matches_float64(shape):
    rep = cross_check(shapes=[shape])
    _assert_ok(rep)
    ran = [r for r in rep.shapes[0].results if r.status == "pass"]
    assert len(ran) >= 2


@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
def test_transposed_operands(layout):
    """All four transpose combinations ("nn" above) on every shape: CuTe kernels take the
    strides into their layouts, the others get copies only where they need them."""
    _assert_ok(cross_check(shapes=SHAPES + [(130, 259, 1024)], layout=layout))


@pytest.mark.parametrize("alpha,beta", [(2.5, 0.0), (-1.0, 1.0), (0.5, -2.0), (0.0, 3.0)])
def test_alpha_beta(alpha, beta):
    _assert_ok(cross_check(shapes=[(129, 67, 33), (256, 256, 128)], alpha=alpha, beta=beta))


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
@pytest.mark.parametrize("beta", [0.0, 1.0, -3.0])
def test_exact_integer_mode_bitwise_agreement(beta, layout):
    """Small integers: every correct fp32 kernel agrees bit for bit — cute_pipelined's
    stream-K launches (the last two shapes cut tiles along K) included."""
    rep = cross_check(shapes=[(97, 131, 257), (256, 128, 64), (1, 33, 1000), (4, 4, 2048),
                              (1000, 1300, 700)], exact=True, beta=beta, layout=layout,
                      precision="fp32")
    _assert_ok(rep)
    for s in rep.shapes:
        assert np.nan_to_num(s.pairwise, nan=0.0).max() == 0.0


@pytest.mark.parametrize("layout", registry.LAYOUTS)
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_interior_tiles_of_a_k_with_a_residue(layout, beta):
    """K % BLK_K != 0 with 16-byte operands: cute_pipelined's interior tiles walk K residue
    first (the partial k-tile loaded checked in the prologue, k-tile 0 starting before
    column 0); residues 4, 8 and 12, one k-tile alone (K = 8), whole grids of interior tiles
    and edge tiles beside them. Small integers: bit-equal to float64 and to each other."""
    pipelined = [k.name for k in registry.kernels() if k.name.startswith("cute_pipelined")]
    rep = cross_check(kernels=pipelined, shapes=[(256, 384, 36), (384, 256, 520), (512, 512, 8),
                                                 (300, 260, 300)],
                      exact=True, beta=beta, layout=layout)
    _assert_ok(rep)
    for s in rep.shapes:
        assert len([r for r in s.results if r.status == "pass"]) == len(pipelined)
        assert np.nan_to_num(s.pairwise, nan=0.0).max() == 0.0


def test_cross_check_detects_a_wrong_result():
    """The judge must fail a result with one wrong element, and name where."""
    rng = np.random.default_rng()
    a = rng.standard_normal((50, 40), dtype=np.float32)
    b = rng.standard_normal((40, 30), dtype=np.float32)
    c = cute_gemm.run("naive", a, b)
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    assert judge("naive", c, ref, gauge, False).status == "pass"
    c[17, 23] += 1e-3 * abs(c[17, 23]) + 1e-3
    r = judge("naive", c, ref, gauge, False)
    assert r.status == "FAIL" and r.first_fail == (17, 23)
    c[3, 4] = np.nan
    assert judge("naive", c, ref, gauge, False).first_fail == (3, 4)


def test_user_example_and_numpy_views():
    rng = np.random.default_rng()
    a = rng.standard_normal((1000, 700), dtype=np.float32)
    b = rng.standard_normal((700, 1300), dtype=np.float32)
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    for name in ("naive", "cute_smem"):
        c = cute_gemm.run(name, a, b)
        assert isinstance(c, np.ndarray) and c.shape == (1000, 1300) and c.dtype == np.float32
        assert judge(name, c, ref, gauge, False).status == "pass"
    # non-contiguous views and a non-contiguous out
    big = rng.standard_normal((300, 500), dtype=np.float32)
    av = big[::2, 1:200:3]                                          # (150, 67), strided both ways
    bv = np.asfortranarray(rng.standard_normal((67, 90), dtype=np.float32))   # column-major
    out = np.full((150, 180), np.nan, dtype=np.float32)[:, ::2]    # (150, 90), non-contiguous
    r = cute_gemm.run("cute_smem", av, bv, out=out)
    assert r is out
    ref, gauge = reference(av, bv, None, 1.0, 0.0)
    assert judge("cute_smem", out, ref, gauge, False).status == "pass"


def test_k_zero_and_empty_shapes():
    rng = np.random.default_rng()
    c = rng.standard_normal((5, 6), dtype=np.float32)
    for name in FP32:
        got = cute_gemm.run(name, np.empty((5, 0), np.float32), np.empty((0, 6), np.float32), c, beta=2.0)
        np.testing.assert_array_equal(got, 2.0 * c)
        z = cute_gemm.run(name, np.empty((5, 0), np.float32), np.empty((0, 6), np.float32))
        np.testing.assert_array_equal(z, np.zeros((5, 6), np.float32))
        assert cute_gemm.run(name, np.empty((0, 4), np.float32), rng.standard_normal((4, 3), dtype=np.float32)).shape == (0, 3)
    d = cute_gemm.DeviceArray.from_host(c)
    try:
        e = cute_gemm.DeviceArray((5, 0))
        f = cute_gemm.DeviceArray((0, 6))
        out = cute_gemm.run("cute_smem", e, f, d, beta=-1.0, out=d)   # in place, K = 0
        np.testing.assert_array_equal(out.to_host(), -c)
    finally:
        d.close()


def test_in_place_update_and_out():
    rng = np.random.default_rng()
    a = rng.standard_normal((70, 50), dtype=np.float32)
    b = rng.standard_normal((50, 90), dtype=np.float32)
    c0 = rng.standard_normal((70, 90), dtype=np.float32)
    ref, gauge = reference(a, b, c0, 0.75, -1.5)
    for name in FP32:
        c = c0.copy()
        r = cute_gemm.run(name, a, b, c, alpha=0.75, beta=-1.5, out=c)
        assert r is c
        assert judge(name, c, ref, gauge, False).status == "pass", name


def test_device_arrays_stay_on_device():
    rng = np.random.default_rng()
    a = rng.standard_normal((65, 33), dtype=np.float32)
    b = rng.standard_normal((33, 129), dtype=np.float32)
    dA, dB = cute_gemm.DeviceArray.from_host(a), cute_gemm.DeviceArray.from_host(b)
    try:
        for name in FP32:
            r = cute_gemm.run(name, dA, dB.T.T)
            assert isinstance(r, cute_gemm.DeviceArray)
            ref, gauge = reference(a, b, None, 1.0, 0.0)
            assert judge(name, r.to_host(), ref, gauge, False).status == "pass", name
            r.close()
    finally:
        dA.close()
        dB.close()


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed")
def test_cupy_round_trip_and_stream():
    import cupy as cp
    a = cp.random.standard_normal((300, 200), dtype=cp.float32)
    b = cp.random.standard_normal((200, 100), dtype=cp.float32)
    ref, gauge = reference(cp.asnumpy(a), cp.asnumpy(b), None, 1.0, 0.0)
    s = cp.cuda.Stream(non_blocking=True)
    for name in FP32:
        c = cute_gemm.run(name, a, b.T.copy().T, stream=s)     # b as a transposed view
        s.synchronize()
        assert isinstance(c, cp.ndarray)
        assert judge(name, cp.asnumpy(c), ref, gauge, False).status == "pass", name


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_torch_round_trip():
    import torch
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA")
    a = torch.randn(257, 129, device="cuda")
    b = torch.randn(129, 65, device="cuda")
    ref, gauge = reference(a.cpu().numpy(), b.cpu().numpy(), None, 1.0, 0.0)
    for name in FP32:
        c = cute_gemm.run(name, a, b)
        torch.cuda.synchronize()
        assert isinstance(c, torch.Tensor) and c.is_cuda
        assert judge(name, c.cpu().numpy(), ref, gauge, False).status == "pass", name
    # DLPack-only path (a capsule-speaking wrapper): through cuda.core's StridedMemoryView
    class OnlyDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()
    out = torch.empty(257, 65, device="cuda")
    cute_gemm.run("cute_smem", OnlyDLPack(a), OnlyDLPack(b), out=out)
    torch.cuda.synchronize()
    assert judge("dlpack", out.cpu().numpy(), ref, gauge, False).status == "pass"


@pytest.mark.whole_device
def test_no_device_memory_leaks_on_success_or_error():
    from cute_gemm.driver import launch
    rng = np.random.default_rng()
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 100), dtype=np.float32)
    cute_gemm.run("cute_smem", a, b)           # warm: module loads, context
    cute_gemm.run("naive", a, b)
    strip = [k for k in registry.kernels() if hasattr(k.dyn_smem, "max_k")]  # whole-K strips
    launch.synchronize()
    free0, _ = launch.mem_get_info()
    for _ in range(20):
        cute_gemm.run("cute_smem", a, b)
        cute_gemm.run("cute_smem", np.asfortranarray(a), b[:, ::1].T.copy().T)
        with pytest.raises(cute_gemm.ShapeError):
            cute_gemm.run("cute_smem", a, b.T)
        for k in strip:
            big_k = 200_000
            with pytest.raises(cute_gemm.ShapeLimitError):
                cute_gemm.run(k.name, rng.standard_normal((2, big_k), dtype=np.float32),
                              rng.standard_normal((big_k, 2), dtype=np.float32))
    launch.synchronize()
    free1, _ = launch.mem_get_info()
    assert free0 - free1 < 2 * 1024 * 1024, f"{(free0 - free1) / 2**20:.1f} MiB lost"


def test_shape_limit_error_names_device_limit():
    from cute_gemm.driver import launch
    limit = launch.device_info().smem_optin
    strip = [k for k in registry.kernels() if hasattr(k.dyn_smem, "max_k")]  # whole-K strips
    if not strip:
        pytest.skip("no whole-K shared-memory kernel registered")
    for k in strip:
        with pytest.raises(cute_gemm.ShapeLimitError) as e:
            cute_gemm.run(k.name, np.ones((4, 100_000), np.float32), np.ones((100_000, 4), np.float32))
        assert str(limit) in str(e.value) and k.name in str(e.value)


def test_cli_check_passes(capsys):
    from cute_gemm.cli import main
    assert main(["check", "--shape", "129x67x33", "--shape", "256x384x200"]) == 0
    out = capsys.readouterr().out
    assert "cross_check: PASS" in out and "cute_smem" in out


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_jax_dlpack_input():
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # leave memory to the others
    import jax
    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend here: {e}")
    if not gpus:
        pytest.skip("JAX sees no GPU")
    rng = np.random.default_rng()
    a = rng.standard_normal((129, 67), dtype=np.float32)
    b = rng.standard_normal((67, 33), dtype=np.float32)
    ja, jb = jax.device_put(a, gpus[0]), jax.device_put(b, gpus[0])
    jax.block_until_ready((ja, jb))
    ref, gauge = reference(a, b, None, 1.0, 0.0)
    for name in ("naive", "cute_smem"):
        c = cute_gemm.run(name, ja, jb)            # DLPack in; JAX arrays are immutable, so the
        assert isinstance(c, cute_gemm.DeviceArray)  # result comes back as a DeviceArray
        assert judge(name, c.to_host(), ref, gauge, False).status == "pass"
        c.close()


# ---- stream-K (cute_pipelined's persistent launch for partly empty waves) ---------------
# extents multiples of 4 (the vector entries, which have the stream-K twins); fewer tiles
# than resident CTAs, so every twin is taken (streamk.stream_k_ctas); K residues, edge
# tiles, up to 16 contributors to one tile (4x4x2048: one tile, 128 k-tiles)
SK_SHAPES = [(4, 4, 2048), (1000, 1300, 700), (1024, 1028, 516), (1500, 1900, 1036),
             (200, 4, 300), (132, 260, 1024), (2172, 2180, 1000), (132, 200, 8192)]
# 2172 x 2180: 17 x 18 = 306 tiles, more than one wave on GPUs of up to 152 SMs: a split
# launch (the data-parallel entry for the whole waves, the twin for the last one); M, N
# and K multiples of 4, so every layout takes a vector entry (those have the twins)
SPLIT_SHAPE = (2172, 2180, 1000)


def _sk_launched(m, n, k, split=False, pdl=False):
    return any(p.kernel == "cute_pipelined" and p.shape == (m, n, k) and p.stream_k
               and (p.split or not split) and (p.pdl or not pdl)
               for p in cute_gemm.resolved_launches())


def _split_operands(layout, rng):
    """Random A (M,K), B (K,N), C (M,N) of SPLIT_SHAPE on the host; A and B are transposed
    views of their storage where `layout` says "t"."""
    m, n, k = SPLIT_SHAPE
    a = rng.standard_normal((m, k) if layout[0] == "n" else (k, m), dtype=np.float32)
    b = rng.standard_normal((k, n) if layout[1] == "n" else (n, k), dtype=np.float32)
    return (a if layout[0] == "n" else a.T, b if layout[1] == "n" else b.T,
            rng.standard_normal((m, n), dtype=np.float32))


def _pdl_device() -> bool:
    """sm_90+: split launches start their twin by programmatic dependent launch."""
    from cute_gemm.driver import launch
    return launch.device_info().arch_int >= 90


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_stream_k_matches_float64_and_data_parallel(layout, monkeypatch):
    """Within the float64 bound, and the shapes really went through stream-K (tt: the
    nn twin on the transposed problem)."""
    cute_gemm.clear_caches()
    rep = cross_check(kernels=["cute_pipelined", "cute_smem"], shapes=SK_SHAPES, layout=layout)
    _assert_ok(rep)
    for (m, n, k) in SK_SHAPES:
        assert _sk_launched(m, n, k), f"{m}x{n}x{k} {layout}"
    assert _sk_launched(*SPLIT_SHAPE, split=True), f"no split launch {layout}"
    if _pdl_device():
        assert _sk_launched(*SPLIT_SHAPE, split=True, pdl=True), f"split launch without PDL {layout}"
    monkeypatch.setenv("CUTE_GEMM_STREAM_K", "0")     # the data-parallel grid, same bound
    cute_gemm.clear_caches()
    _assert_ok(cross_check(kernels=["cute_pipelined"], shapes=SK_SHAPES[:2], layout=layout))
    assert not _sk_launched(*SK_SHAPES[1])


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_split_stream_k_exact_integers(layout):
    """The split launch (data-parallel whole waves, then the twin on the last one) adds up
    exactly like every other kernel on small integers, beta C included."""
    rep = cross_check(kernels=["cute_pipelined", "cute_smem", "naive"], shapes=[SPLIT_SHAPE],
                      exact=True, beta=-3.0, layout=layout)
    _assert_ok(rep)
    assert np.nan_to_num(rep.shapes[0].pairwise, nan=0.0).max() == 0.0


@pytest.mark.parametrize("layout", ["nn", "nt"])
def test_split_stream_k_with_and_without_pdl(layout, monkeypatch):
    """The programmatic dependent launch of a split launch's twin changes when its CTAs
    start, not what they add: the same bits as the plain split launch, and the stream's
    next operation (here the copy back) sees the data-parallel head's tiles too."""
    if not _pdl_device():
        pytest.skip("programmatic dependent launch needs sm_90+; this GPU splits without it")
    m, n, k = SPLIT_SHAPE
    a, b, c = _split_operands(layout, np.random.default_rng())
    out = {}
    try:
        for pdl in ("1", "0"):
            monkeypatch.setenv("CUTE_GEMM_PDL", pdl)
            cute_gemm.clear_caches()     # resolved launches keep what the variable said then
            out[pdl] = cute_gemm.run("cute_pipelined", a, b, c, alpha=0.5, beta=-2.0)
            assert _sk_launched(m, n, k, split=True, pdl=pdl == "1") and (
                pdl == "1" or not _sk_launched(m, n, k, split=True, pdl=True))
    finally:
        cute_gemm.clear_caches()         # no launch resolved without PDL outlives the test
    assert np.array_equal(out["1"], out["0"])
    ref, gauge = reference(a, b, c, 0.5, -2.0)
    res = judge("cute_pipelined", out["1"], ref, gauge, False)
    assert res.status == "pass", res


@pytest.mark.parametrize("m,k,n", [(1000, 700, 1300), (64, 16384, 60)],
                         ids=["few-contributors", "one-tile-128-contributors"])
def test_stream_k_is_deterministic_and_alpha_beta(m, k, n):
    """The same bits on every run whatever order the CTAs finish in (streamk_fixup adds the
    partials in a fixed order), also with one tile cut between ~128 CTAs; within the fp32
    bound."""
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = rng.standard_normal((m, n), dtype=np.float32)
    runs = [cute_gemm.run("cute_pipelined", a, b, c, alpha=-0.75, beta=1.5) for _ in range(3)]
    assert _sk_launched(m, n, k)
    assert all(np.array_equal(r, runs[0]) for r in runs[1:]), \
        "stream-K partial sums must add up in a fixed order"
    ref, gauge = reference(a, b, c, -0.75, 1.5)
    res = judge("cute_pipelined", runs[0], ref, gauge, False)
    assert res.status == "pass", res


# split_k picks (records.Pick, what `cute-gemm tune` times and gemm() runs from a table):
# tiles x S CTAs, every tile cut along K into S runs; shapes small enough that every S here
# fits one wave on any sm_80+ GPU, with K residues, edge tiles and skinny ones (C^T)
SPLIT_K_CASES = [("cute_pipelined", (500, 600, 700)), ("cute_pipelined", (64, 60, 4100)),
                 ("cute_pipelined_32x64x16_sk", (512, 512, 512)),
                 ("cute_pipelined_64x32x16_sk", (1000, 32, 1028)),
                 ("cute_pipelined_128x64x16_sk", (256, 252, 3000))]


@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("name,shape", SPLIT_K_CASES)
def test_split_k_picks_add_up_exactly(name, shape, layout):
    """Small integers: a split_k launch (as given and on the transposed problem) gives the
    exact product, beta C included, the same bits for every S; and it really split."""
    from cute_gemm import api
    from cute_gemm.driver import launch
    from cute_gemm.select import auto
    if not registry.get(name).runs_on(launch.device_info().arch_int):
        pytest.skip(f"{name} does not run on this GPU")
    m, n, k = shape
    rng = np.random.default_rng()
    a = rng.integers(-4, 5, (m, k) if layout[0] == "n" else (k, m)).astype(np.float32)
    b = rng.integers(-4, 5, (k, n) if layout[1] == "n" else (n, k)).astype(np.float32)
    a, b = (a if layout[0] == "n" else a.T), (b if layout[1] == "n" else b.T)
    c = rng.integers(-4, 5, (m, n)).astype(np.float32)
    want = 2.0 * (a.astype(np.float64) @ b.astype(np.float64)) - 3.0 * c
    for transposed in (False, True):
        for s in (2, 3, 4):
            for reduce in (False, True):
                cute_gemm.clear_caches()
                got = api.run_choice(auto.Choice(name, transposed, split_k=s, reduce=reduce), a,
                                     b, c, alpha=2.0, beta=-3.0)
                assert np.array_equal(got, want), (name, shape, layout, transposed, s, reduce)
                plans = [p for p in cute_gemm.resolved_launches() if p.kernel == name]
                assert plans and all(p.split_k == s and p.stream_k for p in plans), plans
                assert all(p.reduced == reduce for p in plans), plans


@pytest.mark.parametrize("name,shape", SPLIT_K_CASES + [("cute_pipelined", (300, 200, 1024))])
def test_split_k_reduced_by_a_launch(name, shape):
    """Random floats: a split whose shares a reduction launch sums (/splitrS) gives the same
    bits on every run, within the fp32 bound, beta C included, and with beta 0 a NaN-poisoned
    C left unread; where K is a multiple of the tile's k it is the twin's fixup's bits
    (/splitkS: the same shares, added in the same order)."""
    from cute_gemm import api
    from cute_gemm.driver import launch
    from cute_gemm.select import auto
    if not registry.get(name).runs_on(launch.device_info().arch_int):
        pytest.skip(f"{name} does not run on this GPU")
    m, n, k = shape
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = rng.standard_normal((m, n), dtype=np.float32)
    nan = np.full((m, n), np.nan, dtype=np.float32)
    ref, gauge = reference(a, b, c, 0.5, 1.5)
    for transposed in (False, True):
        for s in (2, 3):
            r = auto.Choice(name, transposed, split_k=s, reduce=True)
            runs = [api.run_choice(r, a, b, c, alpha=0.5, beta=1.5) for _ in range(2)]
            assert np.array_equal(runs[0].view(np.uint32), runs[1].view(np.uint32))
            res = judge(name, runs[0], ref, gauge, False)
            assert res.status == "pass", (transposed, s, res)
            plain = api.run_choice(r, a, b, nan, alpha=1.0, beta=0.0)
            assert np.all(np.isfinite(plain))
            if k % registry.get(name).tile[2] == 0:
                twin = auto.Choice(name, transposed, split_k=s)
                assert np.array_equal(api.run_choice(twin, a, b, c, alpha=0.5, beta=1.5).view(np.uint32),
                                      runs[0].view(np.uint32)), (transposed, s)
                assert np.array_equal(api.run_choice(twin, a, b, nan, alpha=1.0, beta=0.0).view(np.uint32),
                                      plain.view(np.uint32)), (transposed, s)


@pytest.mark.whole_device
def test_stream_k_on_two_streams_at_once_and_pools_trimmed():
    """Two streams with stream-K launches in flight at once take a workspace each (neither
    waits for the other's), get right answers, and free_workspaces() gives the memory back."""
    from cute_gemm.driver import launch
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    a = cp.asarray(rng.standard_normal((1000, 700), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((700, 1300), dtype=np.float32))
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(2)]
    outs = [cp.empty((1000, 1300), dtype=cp.float32) for _ in streams]
    big = cp.ones((4096, 4096), dtype=cp.float32)
    big_out = cp.empty_like(big)
    with streams[0]:            # (cuBLAS's own workspace, allocated by its first call)
        cp.matmul(big, big, out=big_out)
    cute_gemm.run("cute_pipelined", a, b, out=outs[0], stream=streams[0])   # (its modules, loaded)
    streams[0].synchronize()
    launch.free_workspaces()
    free0 = launch.mem_get_info()[0]
    with streams[0]:            # stream 0 stays busy: its workspace cannot be free for stream 1
        for _ in range(4):
            cp.matmul(big, big, out=big_out)
    for _ in range(3):
        for s, o in zip(streams, outs):
            cute_gemm.run("cute_pipelined", a, b, out=o, stream=s)
    for s in streams:
        s.synchronize()
    assert _sk_launched(1000, 1300, 700)
    want = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b).astype(np.float64)
    for o in outs:
        assert np.abs(cp.asnumpy(o) - want).max() < 1e-3 * np.abs(want).max()
    assert launch.free_workspaces() == 2     # one workspace per busy stream, now idle
    assert launch.mem_get_info()[0] >= free0 - (4 << 20)


def test_the_scratch_pool_keeps_its_busiest_moment_until_trimmed():
    """Scratch larger than POOL_KEEP_BYTES (cute_3xtf32's A' and B': 268 MB at 4096^3), freed
    and synchronized: the pool keeps it for the next call instead of mapping it again each
    time; trim_pools() gives it back and the threshold starts over."""
    from cute_gemm import driver
    from cute_gemm.driver import launch, pool

    def pool_bytes(ordinal):      # what the device's pool holds now, in use or kept for reuse
        p, drv = pool._pools.get(ordinal), driver.bindings()
        return 0 if p is None else int(driver.check(drv.cuMemPoolGetAttribute(
            p, drv.CUmemPool_attribute.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), "cuMemPoolGetAttribute"))
    pool.trim_pools()
    ordinal, n = driver.current_ordinal(), 3 * pool.POOL_KEEP_BYTES // 2
    for _ in range(2):
        ptrs = [pool.alloc_async(n // 2, ordinal, 0) for _ in range(2)]   # at once: n in use
        for p in ptrs:
            pool.free_async(p, 0)
        launch.synchronize(0)
        assert pool_bytes(ordinal) >= n
    pool.trim_pools()
    assert pool_bytes(ordinal) == 0
    p = pool.alloc_async(pool.POOL_KEEP_BYTES // 8, ordinal, 0)         # small: kept as before
    pool.free_async(p, 0)
    launch.synchronize(0)
    assert pool_bytes(ordinal) <= pool.POOL_KEEP_BYTES


# ---- the interior epilogue through smem (include/cute_gemm/smem_epilogue.cuh) --------------
# Row-major C with a 16-byte aligned base and leading dimension % 4 == 0 goes through smem
# (in the entries whose Config::epi_* says so): as 16-byte stores (smem16), or on sm_90 by
# bulk copies when beta is 0 (bulk, else scalar); any other C takes the scalar stores. Each kind
# below, on the split shape (data-parallel entry, then the stream-K twin) in every
# layout (entries with and without it), with beta != 0 (C read back as 16-byte loads
# too) and beta == 0 (C poisoned with NaN: never read, every element written).
_C_KINDS = ("row", "row_ld_plus4", "row_ld_plus1", "row_offset1", "col")


@pytest.mark.parametrize("beta", [1.25, 0.0], ids=["beta", "beta0"])
@pytest.mark.parametrize("kind", _C_KINDS)
@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_interior_epilogue_c_strides(kind, layout, beta):
    cp = pytest.importorskip("cupy")
    from cute_gemm import registry as reg
    k = reg.get("cute_pipelined")
    assert any(e != "scalar" for e in (k.config.epi_ak_bk, k.config.epi_ak_bn)), \
        "no entry stores C through smem: this test checks nothing"
    m, n, kk = SPLIT_SHAPE
    a, b, c0 = _split_operands(layout, np.random.default_rng())
    da = cp.asarray(a) if layout[0] == "n" else cp.asarray(a.T).T
    db = cp.asarray(b) if layout[1] == "n" else cp.asarray(b.T).T
    pad = {"row": 0, "row_ld_plus4": 4, "row_ld_plus1": 1, "row_offset1": 1}
    if kind == "col":
        dc = cp.asfortranarray(cp.asarray(c0))
    else:
        base = cp.full((m, n + pad[kind]), cp.nan, dtype=cp.float32)
        dc = base[:, 1:] if kind == "row_offset1" else base[:, :n]
        dc[...] = cp.asarray(c0)
    if beta == 0.0:
        dc[...] = cp.nan
    out = cute_gemm.run("cute_pipelined", da, db, dc, alpha=-0.5, beta=beta, out=dc)
    cp.cuda.runtime.deviceSynchronize()
    assert _sk_launched(m, n, kk, split=True)
    ref, gauge = reference(a, b, c0, -0.5, beta)
    res = judge("cute_pipelined", cp.asnumpy(dc), ref, gauge, False)
    assert res.status == "pass", (kind, res)
    if kind != "col" and pad[kind]:   # the padding around the view is untouched
        rest = cp.asnumpy(base[:, n:] if kind != "row_offset1" else base[:, :1])
        assert np.isnan(rest).all(), kind
    del out



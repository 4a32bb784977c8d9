"""GPU tests of cute_pipelined's configurations for the shapes it loses (skinny, small,
long-K; docs/design/cute_pipelined.md#skinny) through their stream-K twins: within the float64
bound in every layout, transposed where the tile says so, split where there is more than a
wave, the same bits as cute_smem on small integers and twice over. Skipped without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.check import cross_check

pytestmark = pytest.mark.gpu


def _assert_ok(rep):
    assert rep.ok, "\n" + rep.table()


# Every stream-K configuration but cute_pipelined (test_gpu.py): skinny products that
# they compute transposed (Kernel.transposes: am_bk's own twin for nn), extents that are
# not multiples of 4 (the 4-byte entries' twins), small and long-K products, split launches
# (more tiles than a wave) of both kinds, K residues and edge tiles.
SK_CONFIGS = [k.name for k in registry.kernels()
              if getattr(k.config, "stream_k", False) and k.name != "cute_pipelined"]
SKINNY_SHAPES = [(2000, 64, 1000), (4000, 36, 520), (64, 3000, 1024), (33, 2001, 1500),
                 (1001, 1003, 1005), (256, 256, 256), (128, 128, 2052), (203, 4, 300)]


def _plans(name, shape):
    return [p for p in cute_gemm.resolved_launches() if p.kernel == name and p.shape == shape]


def _split_shapes(name, layout):
    """An even and an odd shape, from 2172 x 2180 x 1000 on, whose launch in `layout` splits
    on this GPU (whole waves data-parallel, then the stream-K twin). How many CTAs an SM holds,
    and so how full a shape's last wave is, differs between configurations, their entry
    points and GPUs: the shapes are found by launching, M one tile row more each try."""
    import cupy as cp
    bm = registry.get(name).tile[0]
    found = []
    for odd in (0, 1):
        for i in range(16):
            m, n, kk = 2172 + i * bm - odd, 2180 - odd, 1000 - odd
            a = cp.empty((m, kk) if layout[0] == "n" else (kk, m), cp.float32)
            b = cp.empty((kk, n) if layout[1] == "n" else (n, kk), cp.float32)
            cute_gemm.run(name, a if layout[0] == "n" else a.T, b if layout[1] == "n" else b.T)
            if any(p.split for p in _plans(name, (m, n, kk))):
                found.append((m, n, kk))
                break
    cp.cuda.runtime.deviceSynchronize()
    assert len(found) == 2, (name, layout, found)
    return found


@pytest.mark.parametrize("layout", registry.LAYOUTS)
@pytest.mark.parametrize("name", SK_CONFIGS)
def test_skinny_configurations_match_float64(name, layout):
    """Within the float64 bound in every layout, through the stream-K twins (every one of
    these shapes leaves a partial last wave): transposed where the tile says so, by the
    4-byte entries' twins where an extent is odd, split where there is more than a wave."""
    cute_gemm.clear_caches()
    split = _split_shapes(name, layout)
    _assert_ok(cross_check(kernels=[name], shapes=SKINNY_SHAPES + split, layout=layout))
    k = registry.get(name)
    for m, n, kk in SKINNY_SHAPES + split:
        plans = [p for p in _plans(name, (m, n, kk)) if p.stream_k]
        assert plans, (name, (m, n, kk), layout)
        if k.transposes(m, n):     # the entry saw C^T: the short tile side along N
            assert k.config.twin_am_bk and all(p.swap for p in plans), (m, n, layout)
        if k.config.twins_scalar and (m * n * kk) % 2:
            assert all(p.entry.endswith("_s_sk") for p in plans), (m, n, kk, layout)
    for s in split:
        assert any(p.split for p in _plans(name, s)), (name, s, layout)
    if k.transpose_skinny:
        assert k.transposes(2000, 64) and not k.transposes(64, 2000)


@pytest.mark.parametrize("layout", ["nn", "tt", "nt"])
@pytest.mark.parametrize("name", SK_CONFIGS)
def test_skinny_configurations_exact_and_deterministic(name, layout):
    """Small integers: the same bits as cute_smem, with beta C, on skinny (transposed),
    residue and split shapes; and the same bits twice (a fixed order of partial sums)."""
    shapes = [(2000, 64, 1000), (1001, 1003, 1005), (128, 128, 2052), _split_shapes(name, layout)[0]]
    rep = cross_check(kernels=[name, "cute_smem"], shapes=shapes, exact=True, beta=-3.0,
                      layout=layout)
    _assert_ok(rep)
    for s in rep.shapes:
        assert np.nan_to_num(s.pairwise, nan=0.0).max() == 0.0
    rng = np.random.default_rng()
    a = rng.standard_normal((3000, 700), dtype=np.float32)
    b = rng.standard_normal((700, 60), dtype=np.float32)
    r1, r2 = (cute_gemm.run(name, a, b) for _ in range(2))
    assert np.array_equal(r1, r2), "stream-K partial sums must add up in a fixed order"


# cute_tiny_k's CTAs walk their row's tiles of C where the tiles outnumber what fills the GPU
# twice (records.TileWalkN): few rows of tiles and many columns, K of one k-tile (B's next
# strip loaded under the current tile) and of several (each tile's strips staged per k-tile)
WALK_SHAPES = [(70, 40000, 17), (1, 70001, 3), (129, 20000, 32), (65, 30000, 70), (300, 9000, 9)]


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_tiny_k_walks_match_float64_and_small_integers_exactly(layout):
    """Every precision within its float64 bound, with beta C, where the grid walks (checked:
    fewer CTAs along N than tiles); small integers to the same bits as cute_smem."""
    from cute_gemm.driver import launch
    grid = registry.get("cute_tiny_k").grid
    sms = launch.device_info().sm_count
    assert all(grid(m, n, k, sms)[1] < -(-n // 64) for m, n, k in WALK_SHAPES)
    _assert_ok(cross_check(kernels=["cute_tiny_k"], shapes=WALK_SHAPES, layout=layout, beta=0.5))
    _assert_ok(cross_check(kernels=["cute_tiny_k"], shapes=WALK_SHAPES[:2], layout=layout,
                           out_dtype="same", precision="bf16"))
    rep = cross_check(kernels=["cute_tiny_k", "cute_smem"], shapes=WALK_SHAPES[:1] + WALK_SHAPES[3:4],
                      exact=True, beta=-3.0, layout=layout, precision="fp32")
    _assert_ok(rep)
    for s in rep.shapes:
        assert np.nan_to_num(s.pairwise, nan=0.0).max() == 0.0


def test_tiny_k_walks_a_batch():
    """A batch of walking problems, B broadcast: each problem's C from its own A."""
    rng = np.random.default_rng()
    a = rng.standard_normal((3, 40, 13), dtype=np.float32)
    b = rng.standard_normal((13, 50000), dtype=np.float32)
    got = cute_gemm.run("cute_tiny_k", a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = 13 * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert got.shape == (3, 40, 50000) and (np.abs(got - want) <= bound).all()

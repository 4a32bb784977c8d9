"""run("auto") and gemm() through a stub driver (tests/stub_driver.py): the launches the pick
makes (its hot path, transposed and split picks, a split's reduction launch), read from tune
tables written here. No NVRTC compile. The selector itself: test_auto.py."""
from __future__ import annotations

from pathlib import Path

import pytest

import cute_gemm
import stub_driver
from cute_gemm import api, registry
from cute_gemm.driver import launch
from cute_gemm.plan import modes, resolve, streamk
from cute_gemm.select import auto, autotable, nearest
from cute_gemm.select.choice import split_key
from test_auto import A100, H100, fake_candidates, row, table

pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


# ---- run("auto") through a stub driver ---------------------------------------------------------------
def _stub(monkeypatch, info=H100):
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: info)
    return events


def test_auto_launches_the_pick_and_takes_the_hot_path(monkeypatch):
    events = _stub(monkeypatch)
    m, n, k = 300, 260, 96
    a, b, c = (stub_driver.Dev((m, k), 0x1000000), stub_driver.Dev((k, n), 0x2000000),
               stub_driver.Dev((m, n), 0x3000000))
    choice = cute_gemm.gemm_choice(m, n, k)
    assert choice.kernel == "cute_pipelined" and choice.source == "heuristic"
    cute_gemm.gemm(a, b, out=c, alpha=1.5)
    (first,) = stub_driver.launches(events, "gemm")
    assert first[1] in registry.get("cute_pipelined").entries
    validated = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: validated.append(1) or real(*x))
    cute_gemm.run("auto", a, b, out=c, alpha=2.0)              # seen before: the hot path
    assert not validated
    second = stub_driver.launches(events, "gemm")[1]
    assert second[:4] == first[:4]
    s = stub_driver.gemm_args(second[4])
    assert (s.M, s.N, s.K, s.alpha, s.A, s.B, s.C) == (m, n, k, 2.0, 0x1000000, 0x2000000, 0x3000000)
    assert any(sig[0] == "auto" for sig in resolve.CACHE.hot)


def test_a_transposed_pick_launches_the_transposed_problem(monkeypatch):
    events = _stub(monkeypatch)
    m, n, k = 8192, 64, 4096
    autotable.write(table([row(m, n, k, {"cute_pipelined": 0.3, "cute_pipelined.T": 0.2})]),
                    autotable.tuned_path(H100.name))
    assert cute_gemm.gemm_choice(m, n, k).key == "cute_pipelined.T"
    a, b, c = (stub_driver.Dev((m, k), 0x10000000), stub_driver.Dev((k, n), 0x20000000),
               stub_driver.Dev((m, n), 0x30000000))
    cute_gemm.gemm(a, b, out=c, alpha=1.0)
    validated = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: validated.append(1) or real(*x))
    cute_gemm.gemm(a, b, out=c, alpha=3.0)      # the hot path: the plan turns a, b and out
    assert not validated and any(sig[0] == "auto" for sig in resolve.CACHE.hot)
    g = stub_driver.launches(events, "gemm")
    assert len(g) == 2 and g[0][:4] == g[1][:4]                 # resolved once, launched twice
    s = stub_driver.gemm_args(g[1][4])
    # C^T (n x m, column-major: strides (1, n)) = B^T (n x k, strides (1, n)) A^T (k x m, (1, k))
    assert (s.M, s.N, s.K, s.alpha) == (n, m, k, 3.0)
    assert (s.A, s.B, s.C) == (0x20000000, 0x10000000, 0x30000000)
    assert (s.sAm, s.sAk, s.sBk, s.sBn, s.sCm, s.sCn) == (1, n, 1, k, 1, n)
    (plan,) = resolve.resolved_launches()       # the caller's problem, marked swapped
    assert plan.swap and plan.shape == (m, n, k)


def test_a_tuned_table_of_a_few_shapes_adds_to_the_shipped_one(monkeypatch):
    """`cute-gemm tune --size MxNxK` on one shape: its row wins at that shape (over the
    shipped row of the same shape), and every other shape still finds the nearest row of
    both tables, not the tuned table's one far row."""
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x8",
                    "cute_pipelined_64x128x16_sk")
    tuned = table([row(128, 4096, 4096, {"cute_pipelined_64x128x8": 0.1, "cute_pipelined": 0.2})])
    shipped = table([row(128, 4096, 4096, {"cute_pipelined": 0.1, "cute_pipelined_64x128x8": 0.2}),
                     row(4096, 4096, 4096, {"cute_pipelined": 2.6, "cute_pipelined_64x128x8": 3.0}),
                     row(512, 512, 512, {"cute_pipelined_64x128x16_sk": 0.02, "cute_pipelined": 0.03})])

    def pick(m, n, k):
        return auto.choose(m, n, k, device=H100, tables=[tuned, shipped])
    assert (pick(128, 4096, 4096).kernel, pick(128, 4096, 4096).source) == (
        "cute_pipelined_64x128x8", "table")                    # the tuned row, not the shipped
    assert (pick(4096, 4096, 4096).kernel, pick(4096, 4096, 4096).source) == (
        "cute_pipelined", "table")                             # a shipped row of its own shape
    c = pick(600, 600, 600)
    assert (c.kernel, c.source) == ("cute_pipelined_64x128x16_sk", "nearest") and "512x512x512" in c.why


def test_shapes_without_a_row_are_priced_per_bucket_with_their_own_tile_counts():
    """from_tables keeps its answer for a shape without a row per BUCKET-rounded shape: every
    candidate's tile extents are multiples of BUCKET, so the shape's tile and k-tile counts
    (all busiest_work reads of it) are the rounded shape's. The memo gives what a fresh
    search gives; a shape with its own row is never rounded onto another's."""
    import random
    for x in registry.KERNELS:
        if "auto" in x.tags and x.tile:
            assert all(t % nearest.BUCKET == 0 for t in x.tile), x.name
    t = autotable.read(Path(cute_gemm.__file__).parent / "tables" / "nvidia-h200.json")
    allowed = {split_key(c)[0] for r in t.rows for c in r.times}
    rows = nearest.searched_rows([t], "nn", "fp32", True)
    memo: dict = {}
    rng = random.Random(5)
    for _ in range(300):
        m, n, k = (rng.choice((rng.randint(1, 64), rng.randint(1, 20000))) for _ in range(3))
        for m2 in (m, (m + 7) // 8 * 8):
            kept = nearest.from_tables([t], m2, n, k, "nn", "fp32", True, allowed, rows, 132, memo)
            fresh = nearest.from_tables([t], m2, n, k, "nn", "fp32", True, allowed, rows, 132)
            assert kept == fresh
    assert any(v for v in memo.values())
    assert nearest.from_tables([t], 4096, 4096, 4096, "nn", "fp32", True, allowed, rows, 132,
                            memo).source == "table"
    assert nearest.from_tables([t], 4095, 4096, 4096, "nn", "fp32", True, allowed, rows, 132,
                            memo).source == "nearest"


def test_a_nearest_rows_split_count_is_priced_where_it_fits(monkeypatch):
    """A split count is a candidate like the others at a shape without a row: priced as one
    wave of split runs per tile where the launch takes it (streamk.split_k_ctas), and given
    up for the kernel's own plan where it does not fit (too few k-tiles for 6 runs)."""
    key = "cute_pipelined_64x128x16_sk.T/splitk6"
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x16_sk")
    tabs = [table([row(128, 4096, 4096, {key: 0.100, "cute_pipelined_64x128x16_sk.T": 0.110,
                                         "cute_pipelined": 0.12})])]
    c = auto.choose(128, 4096, 4096, device=H100, tables=tabs)
    assert (c.key, c.source) == (key, "table")
    c = auto.choose(128, 4096, 8192, device=H100, tables=tabs)
    assert (c.key, c.split_k, c.source) == (key, 6, "nearest")
    c = auto.choose(128, 4096, 64, device=H100, tables=tabs)       # 4 k-tiles
    assert (c.kernel, c.transposed, c.split_k) == ("cute_pipelined_64x128x16_sk", True, 0)
    assert "own plan" in c.why and key in c.why


def _split_pick_table(monkeypatch, key: str):
    """The stub driver with 660 CTA slots (5 an SM), stream-K on, PDL off, and a tuned table whose pick at 512^3 and 2048^2 x 512 is `key`:
    the stub's launch events."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_STREAM_K")
    monkeypatch.setenv("CUTE_GEMM_PDL", "0")
    monkeypatch.setattr(launch, "occupancy", lambda f, threads, smem: 5)
    autotable.write(table([row(512, 512, 512, {"cute_pipelined": 0.03, key: 0.02}),
                           row(2048, 2048, 512, {"cute_pipelined": 0.5, key: 0.4})]),
                    autotable.tuned_path(H100.name))
    return events


def test_a_split_k_pick_launches_that_many_ctas_per_tile(monkeypatch):
    """A table's KERNEL/splitkS: the stream-K twin alone, S CTAs per tile; where that many
    CTAs are not resident at once, the kernel's own stream-K plan instead."""
    key = "cute_pipelined_32x64x16_sk/splitk3"
    events = _split_pick_table(monkeypatch, key)
    for m, grid, split in ((512, 128 * 3, 3), (2048, 660, 0)):   # 2048^2: 2048 tiles
        a, b, c = (stub_driver.Dev((m, 512), 0x10000000), stub_driver.Dev((512, m), 0x20000000),
                   stub_driver.Dev((m, m), 0x30000000))
        assert cute_gemm.gemm_choice(m, m, 512).key == key
        cute_gemm.gemm(a, b, out=c)
        entry, g = stub_driver.launches(events, "gemm")[-1][1:3]
        (plan,) = [p for p in resolve.resolved_launches() if p.shape == (m, m, 512)]
        assert entry.endswith("_sk") and plan.split_k == split and g[0] <= grid
        assert (g == (grid, 1, 1) and not plan.head_entry) if split else plan.head_entry


@pytest.mark.parametrize("split,clusters,env,cluster", [
    (4, 16, None, 4), (8, 16, None, 8),                   # a cluster a tile, no workspace
    (16, 16, None, 1),                                    # past the portable cluster size
    (4, 0, None, 1),                                      # no such cluster fits the device
    (4, 16, "0", 1)])                                     # CUTE_GEMM_CLUSTER_SPLIT=0
def test_a_split_of_at_most_8_shares_meets_in_a_cluster_on_sm90(monkeypatch, split, clusters,
                                                                  env, cluster):
    """A split pick of 2 to 8 shares a tile on sm_90 launches its twin in clusters of that
    many CTAs (cuLaunchKernelEx) and takes no workspace, no event and no memset, in a graph
    capture too: the shares meet in shared memory (cluster_fixup.cuh). Else the workspace,
    as before (in a capture, stream-ordered scratch the graph owns)."""
    key = f"cute_pipelined_32x64x16_sk/splitk{split}"
    events = _split_pick_table(monkeypatch, key)
    events.clusters = clusters
    if env is not None:
        monkeypatch.setenv("CUTE_GEMM_CLUSTER_SPLIT", env)
    m = 256                                               # 32 tiles of 32 k-tiles
    a, b, c = (stub_driver.Dev((m, 512), 0x10000000), stub_driver.Dev((512, m), 0x20000000),
               stub_driver.Dev((m, m), 0x30000000))
    ch = cute_gemm.gemm_choice(m, m, 512)
    assert ch.key == key, ch.why
    for capturing in (False, False, True):                # the first call, the hot path, a capture
        events.capturing = capturing
        before = len(events)
        cute_gemm.gemm(a, b, out=c, stream=7)
        (plan,) = [p for p in resolve.resolved_launches() if p.shape == (m, m, 512)]
        assert plan.split_k == split and plan.cluster == cluster and plan.stream_k
        (launched,) = stub_driver.launches(events[before:], "gemm")
        assert launched[2] == (32 * split, 1, 1)
        ex = [e[2] for e in events[before:] if e[0] == "launch_ex"]
        if cluster > 1:
            assert ex == [{"cluster": split, "pdl": False}] and plan.workspace_bytes == 0
            assert not [e for e in events[before:] if e[0] in ("record", "wait", "memset", "alloc")]
        else:
            assert not ex and plan.workspace_bytes > 0
            assert not capturing or [e for e in events[before:] if e[0] == "alloc"]


def test_cluster_split_rule(monkeypatch):
    """modes.cluster_split: sm_90+, 2 to 8 shares, the tile's fp32 partial in the twin's smem."""
    k = registry.get("cute_pipelined_32x64x16_sk")
    room = 4 * 32 * 64
    assert all(modes.cluster_split(k, H100, s, room) for s in range(2, 9))
    assert not modes.cluster_split(k, H100, 9, room) and not modes.cluster_split(k, H100, 1, room)
    assert not modes.cluster_split(k, H100, 4, room - 4)
    assert not modes.cluster_split(k, A100, 4, room)
    monkeypatch.setenv("CUTE_GEMM_CLUSTER_SPLIT", "0")
    assert not modes.cluster_split(k, H100, 4, room)


def test_a_split_r_pick_launches_its_shares_then_the_reduction(monkeypatch):
    """A table's KERNEL/splitrS: the split entry on (tiles_m, tiles_n, S), then split_reduce
    on the same stream with the slices past the pool's counters; where that many CTAs are not
    resident at once, the kernel's own stream-K plan instead."""
    key = "cute_pipelined_32x64x16_sk/splitr3"
    events = _split_pick_table(monkeypatch, key)
    for m in (512, 2048):                                 # 2048^2: 2048 tiles, no split
        a, b, c = (stub_driver.Dev((m, 512), 0x10000000), stub_driver.Dev((512, m), 0x20000000),
                   stub_driver.Dev((m, m), 0x30000000))
        assert cute_gemm.gemm_choice(m, m, 512).key == key
        before = len(stub_driver.launches(events))
        cute_gemm.gemm(a, b, out=c)
        new = [e[1:3] for e in stub_driver.launches(events)[before:]]
        (plan,) = [p for p in resolve.resolved_launches() if p.shape == (m, m, 512)]
        if m == 512:
            assert [e for e, _ in new] == ["cute_pipelined_ak_bn_part", "split_reduce"]
            assert new[0][1] == (512 // 32, 512 // 64, 3) and plan.split_k == 3
            assert plan.workspace_bytes == streamk.split_reduce_workspace_bytes(3, 512, 512)
        else:
            assert new[-1][0].endswith("_sk") and not plan.split_k and plan.reduce_grid == (0, 0, 0)

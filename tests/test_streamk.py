"""Stream-K scheduling (CPU): the launch policy and the split the kernel computes
(streamk_model.stream_k_schedule models include/cute_gemm/streamk.cuh)."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from cute_gemm import registry
from cute_gemm.plan import modes, streamk
from cute_gemm.registry.records import cdiv

from streamk_model import stream_k_begins, stream_k_schedule, tail_split_schedule


def test_policy_picks_stream_k_only_for_partial_waves():
    # 4096^3 in 128x128x16 tiles on 132 SMs x 2: 1024 tiles = 3.88 waves -> stream-K
    assert streamk.stream_k_ctas(1024, 256, 264) == 264
    assert streamk.stream_k_ctas(1056, 256, 264) == 0       # whole waves: data-parallel
    assert streamk.stream_k_ctas(1024, 8, 264) == 0         # K too short to cut
    assert streamk.stream_k_ctas(1, 16, 264) == 2           # one tile: split K in 2
    assert streamk.stream_k_ctas(1, 129, 264) == 16         # >= 8 k-tiles per CTA
    assert streamk.stream_k_ctas(0, 100, 264) == 0
    # (the last wave's fill rule lives in stream_k_plan, tested below)


def test_plan_splits_off_the_last_partial_wave():
    # 4096^3: 1024 tiles on 264 slots = 3 whole waves data-parallel + a 232-tile tail
    # cut along K by the twin; 8192^3: 15 waves + 136 tiles
    assert streamk.stream_k_plan(1024, 256, 264, 264) == (792, 264)
    assert streamk.stream_k_plan(4096, 512, 264, 264) == (3960, 264)
    assert streamk.stream_k_plan(1056, 256, 264, 264) == (0, 0)      # whole waves
    assert streamk.stream_k_plan(1024, 256, 264, 264, max_fill=0.85) == (0, 0)  # 0.88 full
    assert streamk.stream_k_plan(4096, 512, 264, 264, max_fill=0.85) == (3960, 264)
    assert streamk.stream_k_plan(1024, 8, 264, 264) == (0, 0)         # K too short to cut
    # the twin may be resident fewer times than its sibling: the split is by the sibling
    assert streamk.stream_k_plan(300, 64, 264, 132) == (264, streamk.stream_k_ctas(36, 64, 132))
    # less than one wave: all of it stream-K (tile0 0), under the same fill rule
    assert streamk.stream_k_plan(88, 44, 264, 264, max_fill=0.85) == (0, 264)
    assert streamk.stream_k_plan(260, 44, 264, 264, max_fill=0.85) == (0, 0)
    assert streamk.stream_k_plan(260, 44, 264, 264) == (0, 264)
    # the tail launch's own schedule: all of it stream-K, every CTA busy
    tile0, ctas = streamk.stream_k_plan(1024, 256, 264, 264)
    dp, runs = stream_k_schedule(1024 - tile0, 256, ctas)
    assert dp == 0 and all(e > b for b, e in runs)


def test_split_k_cuts_every_tile_into_even_runs_within_a_wave():
    # 512^3 in 32x64x16 tiles: 128 tiles x 3 = 384 CTAs on 660 slots, 32 k-tiles
    assert streamk.split_k_ctas(128, 32, 3, 660) == 384
    assert streamk.split_k_ctas(128, 32, 6, 660) == 0                # more than a wave
    assert streamk.split_k_ctas(128, 5, 3, 660) == 0                 # runs under 2 k-tiles
    assert streamk.split_k_ctas(128, 32, 1, 660) == 0                # no cut
    assert streamk.split_k_ctas(1, 10**6, 5000, 10**6) == 0          # beyond the counters
    # each tile's k-tiles go to split_k consecutive CTAs: no whole tiles, every CTA busy,
    # runs that differ by at most one k-tile
    for tiles, k_tiles, s in ((128, 32, 3), (16, 64, 8), (4, 4096, 32), (7, 9, 4)):
        ctas = streamk.split_k_ctas(tiles, k_tiles, s, 10**6)
        dp, runs = stream_k_schedule(tiles, k_tiles, ctas)
        sizes = [e - b for b, e in runs]
        assert dp == 0 and min(sizes) >= 2 and max(sizes) - min(sizes) <= 1
        for u in range(tiles):            # contributors of tile u: split_k or split_k + 1
            owners = {c for c, (b, e) in enumerate(runs)
                      if b < (u + 1) * k_tiles and e > u * k_tiles}
            assert s <= len(owners) <= s + 1


def test_plan_takes_split_k_only_where_it_fits():
    k = registry.get("cute_pipelined_32x64x16_sk")
    v = next(v for v in k.variants if v.stream_k and not v.stream_k_swap)
    # 512^3: 128 tiles of 32x64; 660 slots: 3 per tile fit, 8 do not (the own plan then)
    assert modes.StreamK.plan(k, v, 512, 512, 512, 660, 660, split_k=3) == (
        (384, 1, 1), streamk.stream_k_workspace_bytes(384, 32, 64), 0, 3)
    own = modes.StreamK.plan(k, v, 512, 512, 512, 660, 660)
    assert own[3] == 0 and modes.StreamK.plan(k, v, 512, 512, 512, 660, 660, split_k=8) == own


def test_stream_k_twins_have_data_parallel_siblings():
    for k in registry.kernels():
        for v in k.variants:
            if v.stream_k:
                assert streamk.stream_k_dp_entry(v) in k.entries, v.entry
    with pytest.raises(ValueError):
        streamk.stream_k_dp_entry(registry.Variant("x", a_major="m", b_major="n", stream_k="y"))


@pytest.mark.parametrize("tiles,k_tiles,slots", [
    (1024, 256, 264), (4096, 512, 264), (88, 44, 264), (1, 129, 264), (2, 19, 264),
    (265, 16, 264), (527, 33, 264), (300, 17, 132), (7, 1000, 96), (64, 32, 264)])
def test_schedule_covers_every_iteration_once(tiles, k_tiles, slots):
    ctas = streamk.stream_k_ctas(tiles, k_tiles, slots)
    assert 0 < ctas <= slots
    dp, runs = stream_k_schedule(tiles, k_tiles, ctas)
    assert dp % ctas == 0 and dp < tiles
    sk_tiles = tiles - dp
    assert sk_tiles <= 2 * ctas                       # the workspace holds 2 * ctas counters
    assert runs[0][0] == 0 and runs[-1][1] == sk_tiles * k_tiles
    lengths = [e - b for b, e in runs]
    assert min(lengths) >= 8 and max(lengths) - min(lengths) <= 1   # balanced, never slivers
    for (b0, e0), (b1, e1) in itertools.pairwise(runs):
        assert e0 == b1                               # contiguous, no overlap, no gap
    # each tile's contributors are consecutive CTAs; a CTA holds at most 2 cut tiles (its
    # first and last run: the 2 workspace slots), and no slot is used twice
    slots_used = set()
    for u in range(sk_tiles):
        lo, hi = u * k_tiles, (u + 1) * k_tiles
        contrib = [c for c, (b, e) in enumerate(runs) if b < hi and e > lo]
        assert contrib == list(range(contrib[0], contrib[-1] + 1))
        if len(contrib) > 1:
            for c in contrib:
                slot = 0 if runs[c][0] // k_tiles == u else 1
                assert (c, slot) not in slots_used
                slots_used.add((c, slot))


def _cta_of(x: int, begins: list[int], ulps: int) -> tuple[int, int]:
    """StreamK::cta_of (include/cute_gemm/streamk.cuh) in numpy float32 over the runs'
    begin(c) (c = 0..ctas): (estimate, result), with ctas / sk_iters `ulps` units in the
    last place off (__fdividef: at most 2)."""
    f32 = np.float32
    s, g = begins[-1], len(begins) - 1
    inv = f32(f32(g) / f32(s))
    for _ in range(abs(ulps)):
        inv = np.nextafter(inv, f32(np.inf) if ulps > 0 else f32(0))
    c = min(int(f32(f32(x + 1) * inv)), g - 1)
    if begins[c] > x:
        return c, c - 1
    return c, c + 1 if c + 1 < g and begins[c + 1] <= x else c


@pytest.mark.parametrize("s,g", [(4096, 384), (2**31 - 1, 4096), (2**31 - 1, 8192), (2**31 - 7, 3),
                                 (1000003, 4093), (264 * 256 - 1, 264), (8, 8), (2**30 + 1, 4095)])
def test_contributor_search_in_float_is_exact(s, g):
    # every CTA boundary (begin(c) - 1, begin(c)) and random iterations: the float estimate
    # is off by at most one either way, and begin() corrects it to the exact owner
    rng = np.random.default_rng(s ^ g)
    begins = stream_k_begins(s, g)
    xs = {b + d for b in begins for d in (-1, 0) if 0 <= b + d < s}
    xs |= {int(x) for x in rng.integers(0, s, 2000)}
    for x in sorted(xs):
        owner = ((x + 1) * g - 1) // s                # the largest c with begin(c) <= x
        assert begins[owner] <= x < begins[owner + 1]
        for ulps in (-2, 0, 2):
            est, got = _cta_of(x, begins, ulps)
            assert abs(est - owner) <= 1 and got == owner, (x, ulps, est, owner)


def test_workspace_size_and_counter_capacity():
    # (the header reads the count from the registry: test_registry.py,
    # test_device_constants_have_one_home_in_python)
    assert (streamk.stream_k_workspace_bytes(264, 128, 128)
            == streamk.STREAM_K_COUNTERS * 4 + 264 * 2 * 128 * 128 * 4)
    # the counters (<= 2 per CTA) always fit, however many CTAs a GPU could hold
    assert 2 * streamk.stream_k_ctas(10**6, 10**3, 10**5) <= streamk.STREAM_K_COUNTERS


def test_stream_k_entries_registered():
    k = registry.get("cute_pipelined")
    sk = {(v.a_major, v.b_major): v for v in k.variants if v.stream_k}
    assert set(sk) == {("m", "n"), ("k", "k"), ("k", "n"), ("m", "k")}   # every vector entry
    assert all(v.stream_k in k.entries for v in sk.values())
    # 8 + 3 twins + 3 split entries (am_bk borrows ak_bn's of each) + 8 batched twins
    assert len(k.entries) == len(set(k.entries)) == 22
    assert sum(e.endswith("_b") for e in k.entries) == 8
    # A m-major x B k-major is A k-major x B n-major for C^T = B^T A^T
    assert sk["m", "k"].stream_k == sk["k", "n"].stream_k and sk["m", "k"].stream_k_swap
    assert sk["m", "k"].split == sk["k", "n"].split == "cute_pipelined_ak_bn_part"
    assert all(v.split == v.stream_k[:-3] + "_part" for v in sk.values() if v.a_major == "k")
    assert not any(v.split for v in k.variants if v.entry.endswith("_s"))  # 4-byte: twins only
    assert k.config.stream_k


def test_split_reduce_plan():
    """A split-K launch with a reduction launch: a (tiles_m, tiles_n, split) grid where
    split_k_ctas takes the split (one wave, 2 k-tiles a share), the slices after the pool's
    counters; on the transposed problem where the variant's twin is."""
    k = registry.get("cute_pipelined_64x128x16_sk")
    v = {(x.a_major, x.b_major): x for x in k.variants if not x.entry.endswith("_s")}
    grid, ws = modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 4096, 396, 6)
    assert grid == (2, 32, 6)
    assert ws == streamk.SPLIT_SLICES_AT + 4 * 6 * 128 * 4096 == streamk.split_reduce_workspace_bytes(6, 128, 4096)
    assert streamk.SPLIT_SLICES_AT == 4 * streamk.STREAM_K_COUNTERS     # counters left alone
    assert streamk.split_reduce_workspace_bytes(2, 3, 5) == streamk.SPLIT_SLICES_AT + 4 * 2 * 3 * 8
    assert modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 4096, 383, 6) is None   # 384 CTAs
    assert modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 176, 396, 6) is None    # 11 k-tiles
    assert modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 192, 396, 6) is not None
    assert modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 4096, 396, 1) is None
    assert modes.SplitReduce.plan(k, v["k", "n"], 128, 4096, 2**31, 10**9, 16) is None  # 32 bits
    if v["m", "k"].stream_k_swap:        # the split entry sees C^T = B^T A^T, N x M
        assert modes.SplitReduce.plan(k, v["m", "k"], 128, 4096, 4096, 396, 6)[0] == (64, 2, 6)
    assert modes.SplitReduce.plan(k, next(x for x in k.variants if not x.split), 128, 4096,
                                  4096, 396, 6) is None


def test_pdl_and_cluster_launch_config():
    """Only kernels with stream-K twins start anything by programmatic dependent launch
    (that the compiled twins wait for it: test_compile.py); the launch configuration carries
    an attribute for PDL and one for clusters along x (built without a GPU)."""
    for kk in registry.KERNELS:
        assert not kk.pdl or any(v.stream_k for v in kk.variants), kk.name
    from cute_gemm import driver
    from cute_gemm.driver import launch
    drv = driver.bindings()
    ids = drv.CUlaunchAttributeID
    cfg = launch.launch_config(drv, (3, 2, 1), (128, 1, 1), 1024, pdl=True)
    assert cfg.numAttrs == 1 and (cfg.gridDimX, cfg.gridDimY, cfg.blockDimX, cfg.sharedMemBytes) == (3, 2, 128, 1024)
    attr = cfg.attrs[0]
    assert attr.id == ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert attr.value.programmaticStreamSerializationAllowed == 1
    cfg = launch.launch_config(drv, (12, 1, 1), (128, 1, 1), 0, cluster=4)
    (attr,) = cfg.attrs[:cfg.numAttrs]
    assert attr.id == ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z) == (4, 1, 1)
    cfg = launch.launch_config(drv, (12, 1, 1), (128, 1, 1), 0, pdl=True, cluster=2)
    assert cfg.numAttrs == 2
    assert launch.launch_config(drv, (1, 1, 1), (32, 1, 1), 0).numAttrs == 0


def test_configuration_twins_registered():
    """twin_am_bk: am_bk's own twin (not ak_bn's on C^T); twins_scalar: every 4-byte entry
    has its twin, named after it; each twin's data-parallel sibling is registered."""
    from cute_gemm.registry import ladder_cute
    base = registry.get("cute_pipelined").config
    for name, flags in (("twins", dict(twin_am_bk=True, twins_scalar=True)), ("none", {})):
        cfg = dataclasses.replace(base, **flags)
        k = ladder_cute._pipe(name, cfg)
        by = {v.entry: v for v in k.variants}
        am_bk = by["cute_pipelined_am_bk"]
        assert (am_bk.stream_k == "cute_pipelined_am_bk_sk" and not am_bk.stream_k_swap) == bool(flags)
        scalar = [v for v in k.variants if v.entry.endswith("_s")]
        assert len(scalar) == 4 and all(v.stream_k == (v.entry + "_sk" if flags else "") for v in scalar)
        assert all(streamk.stream_k_dp_entry(v) in k.entries for v in k.variants if v.stream_k)
        assert am_bk.split == ("cute_pipelined_am_bk_part" if flags else "cute_pipelined_ak_bn_part")
        # + split entries + 8 batched twins
        assert len(k.entries) == (16 if flags else 11) + (4 if flags else 3) + 8
        assert k.config.sk_smem + ladder_cute.TWIN_STATIC_SMEM <= k.config.dyn_smem


# ---- the K-split of a persistent walk's last wave (cute_wgmma_ws_promote) --------------------
def test_tail_split_cuts_a_partial_last_round_only():
    # 4096^3 in 128x192 tiles, clusters of 2 on 132 SMs: 352 units on 66 clusters, 5.33
    # rounds: the last 22 units cut in 3 (66 items), K / 32 = 128 windows each
    assert streamk.tail_split_plan(352, 66, 128, 8) == (330, 3)
    assert streamk.tail_split_plan(330, 66, 128, 8) == (330, 1)       # whole rounds
    assert streamk.tail_split_plan(352, 66, 15, 8) == (352, 1)        # too few windows to cut
    assert streamk.tail_split_plan(352, 66, 128, 1) == (352, 1)       # cutting off
    # 8192^3: 1376 units, a tail of 56: no cut pays at two pieces a cluster at most
    assert streamk.tail_split_plan(1376, 66, 256, 8) == (1376, 1)
    # fewer units than clusters: all of them cut, up to max_pieces
    assert streamk.tail_split_plan(6, 66, 512, 8) == (0, 8)
    assert streamk.tail_split_plan(4, 66, 32, 8) == (0, 4)            # 8 windows a piece


@pytest.mark.parametrize("units,clusters,windows", [
    (352, 66, 128), (6, 66, 512), (1, 66, 16), (100, 66, 128), (690, 66, 1000), (67, 66, 17),
    (3, 60, 9999), (13, 7, 64)])
def test_tail_split_schedule_covers_every_window_once(units, clusters, windows):
    dp, pieces = streamk.tail_split_plan(units, clusters, windows, 8)
    items = tail_split_schedule(units, dp, pieces, windows)
    assert len(items) == dp + (units - dp) * pieces
    assert all(e > b for _, b, e in items)                           # no empty piece
    covered = sorted((u, w) for u, b, e in items for w in range(b, e))
    assert covered == [(u, w) for u in range(units) for w in range(windows)]
    if pieces > 1:                                                   # the last round: <= 2 a cluster
        assert (units - dp) * pieces <= 2 * clusters
        assert cdiv(windows, pieces) >= registry.CutModel().min_windows


def test_tail_split_workspace_and_counters_fit_the_header():
    g = registry.get("cute_wgmma_ws_promote").grid
    assert g.tail_split and g.window_bytes == 384                    # 3 k-tiles of 32 tf32
    dp, pieces = g.split(4096, 4096, 3 * 4096, 132)
    assert (dp, pieces) == (330, 3) and g(4096, 4096, 3 * 4096, 132) == (132, 1, 1)
    assert g.split(4096, 4096, 3 * 4096, 132, cut=False) == (352, 1)
    cut_tiles = (g.units(4096, 4096) - dp) * g.cluster
    assert cut_tiles <= streamk.STREAM_K_COUNTERS
    assert streamk.tail_split_workspace_bytes(22, 2, 3, 128, 192) == \
        4 * streamk.STREAM_K_COUNTERS + 2 * 4 * 44 * 3 * 128 * 192   # a sum and an error a piece
    # fewer units than clusters: the grid is the items, not the units
    assert g(300, 300, 3 * 1024, 132) == (2 * 4 * 4, 1, 1)           # 4 units x 4 pieces


def test_wgmma_ws_cuts_fewer_units_than_clusters_along_k():
    """cute_wgmma_ws's plain walk (docs/design/cute_wgmma_ws.md#split-k): a skinny or long-K
    product has fewer units than clusters, and every unit is cut (a split-K); the windows
    are k-tiles of the call's element size."""
    g = registry.get("cute_wgmma_ws").grid
    model = g.cut
    assert g.window_bytes == 128 and g.partials == 1 and model.fixup > 0
    # 128 x 4096 x 4096, 16-bit: 16 units (128 x 256 tiles, clusters of 2), 64 k-tiles: 4 pieces
    assert g.walk(128, 4096, 4096, 132, itemsize=2) == ((0, 4), (128, 1, 1))
    # 256 x 256 x 65536: one unit of 1024 k-tiles, cut until the fixup's reads cost more
    dp, pieces = g.split(256, 256, 65536, 132, itemsize=2)
    assert dp == 0 and 12 <= pieces <= 24
    # 1024^3: 16 k-tiles of 16-bit operands are too few to cut; tf32's 32 are cut in two
    assert g.split(1024, 1024, 1024, 132, itemsize=2) == (16, 1)
    assert g.split(1024, 1024, 1024, 132, itemsize=4) == (0, 2)
    assert g.split(4096, 4096, 4096, 132, itemsize=2) == (256, 1)    # big products: no cut
    assert streamk.tail_split_workspace_bytes(16, 2, 4, 128, 256, partials=1) == \
        4 * streamk.STREAM_K_COUNTERS + 4 * 32 * 4 * 128 * 256      # one partial tile a piece
    # the tf32 entry that swaps inside (C^T = B^T A^T) is planned on the tiles it walks
    k = registry.get("cute_wgmma_ws")
    assert [v.entry for v in k.variants if v.walks_transposed] == ["cute_wgmma_ws_tf32_f32_ak_bn"]


def test_a_skinny_tensor_core_call_launches_its_cut_with_a_workspace(monkeypatch):
    """run("cute_wgmma_ws") at 128 x 4096 x 4096 fp16: one launch of 128 CTAs on the cut
    twin, (dp, pieces) = (0, 4) in its arguments, one partial tile a piece in its workspace;
    1024^3 cuts nothing and runs the entry without the cut's code."""
    import stub_driver
    from cute_gemm import api
    from cute_gemm.driver import workspace
    from cute_gemm.plan import resolve
    for m, cut in ((128, (0, 4)), (1024, (16, 1))):
        events = stub_driver.install(monkeypatch)
        monkeypatch.delenv("CUTE_GEMM_STREAM_K")
        monkeypatch.setattr(workspace, "_free", [])
        n = kk = 4096 if m == 128 else 1024

        def dev(rows, cols, ptr):
            return stub_driver.Dev((rows, cols), ptr, strides=(2 * cols, 2), typestr="<f2")
        api.run("cute_wgmma_ws", dev(m, kk, 0x1000_0000), dev(kk, n, 0x2000_0000),
                out=dev(m, n, 0x3000_0000), precision="fp16")
        (plan,) = [p for p in resolve.resolved_launches() if p.kernel == "cute_wgmma_ws"]
        assert plan.tail_split == cut, plan
        if cut[1] > 1:
            assert plan.grid == (128, 1, 1)
            assert plan.workspace_bytes == 4 * streamk.STREAM_K_COUNTERS + 4 * 32 * 4 * 128 * 256
        else:
            assert plan.workspace_bytes == 0
        entry = "cute_wgmma_ws_fp16_fp16_ak_bn" + ("_cut" if cut[1] > 1 else "")
        assert plan.entry == entry and [e[1] for e in stub_driver.launches(events)] == [entry]


def test_pricer_prices_splits_and_stream_k_as_their_plans():
    """modes.Pricer inlines split_k_ctas and stream_k_plan (the sibling's and the twin's slots
    alike): its costs are those the plans give, over tiles, K, SM counts and splits."""
    tiled = [x for x in registry.kernels() if x.tile and x.gemm_of is None
             and not isinstance(x.grid, registry.PersistentGrid)]
    twins = [x for x in tiled if x.variants[0].stream_k][:3] + [x for x in tiled
                                                              if not x.variants[0].stream_k][:1]
    assert len(twins) == 4
    seen, overhead = set(), modes.TILE_OVERHEAD
    for x in twins:
        bm, bn, bk = x.tile
        v = x.variants[0]
        for sms in (1, 7, 108, 132):
            for split_k in (0, 2, 3, 8):
                pricer = modes.Pricer([(x, False, split_k), (x, True, split_k)], "fp32", sms)
                for m, n, k in ((1, 1, 1), (128, 256, 4096), (1000, 1300, 700), (64, 8192, 33),
                                (4096, 4096, 16384), (520, 136, 2048), (7, 9000, 300)):
                    for (pm, pn), got in zip(((m, n), (n, m)), pricer.at(m, n, k)):
                        tiles, k_tiles = -(-pm // bm) * -(-pn // bn), -(-k // bk)
                        slots = sms * x.min_blocks
                        if split_k and streamk.split_k_ctas(tiles, k_tiles, split_k, slots):
                            want, ctas = -(-k_tiles // split_k) + 2 * overhead, -1
                        else:
                            tile0, ctas = (streamk.stream_k_plan(tiles, k_tiles, slots, slots,
                                                                 v.stream_k_fill)
                                           if v.stream_k else (0, 0))
                            want = (tile0 // slots * (k_tiles + overhead)
                                    + (tiles - tile0) * k_tiles / ctas + 2 * overhead
                                    if ctas else -(-tiles // slots) * (k_tiles + overhead))
                        seen.add(min(ctas, 1))      # -1 split, 0 plain grid, 1 stream-K
                        assert got == want, (x.name, sms, split_k, pm, pn, k)
    assert seen == {-1, 0, 1}


def test_a_16bit_split_pick_runs_the_twin_alone_and_a_plain_pick_never(monkeypatch):
    """cute_mma_sm80_64x64's stream-K twins serve split picks only (stream_k_fill 0): split S
    launches the twin alone on tiles x S CTAs, whatever the operands' alignment class; the
    plain pick its own entry on the 2-D grid, with stream-K on."""
    import stub_driver
    from cute_gemm import api
    from cute_gemm.driver import launch
    from cute_gemm.select.choice import Choice
    events = stub_driver.install(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_STREAM_K")
    monkeypatch.setenv("CUTE_GEMM_PDL", "0")
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    monkeypatch.setattr(launch, "occupancy", lambda f, threads, smem: 2)
    for (m, n, k), suffix in (((64, 64, 4096), ""), ((38, 42, 926), "_al2"), ((22, 174, 595), "_al1")):
        a, b, o = (stub_driver.device_array(s, p, "bfloat16")
                   for s, p in (((m, k), 0x1000_0000), ((k, n), 0x2000_0000), ((m, n), 0x3000_0000)))
        bm, bn, _ = registry.get("cute_mma_sm80_64x64").tile
        tiles = cdiv(m, bm) * cdiv(n, bn)
        for split in (0, 2, 4):
            api.run_choice(Choice("cute_mma_sm80_64x64", split_k=split), a, b, out=o)
            entry, grid = stub_driver.launches(events, "gemm")[-1][1:3]
            plain = f"cute_mma_sm80_bf16_bf16_ak_bn{suffix}"
            assert (entry, grid) == ((plain + "_sk", (tiles * split, 1, 1)) if split else
                                     (plain, (cdiv(m, bm), cdiv(n, bn), 1))), (m, n, k, split, entry, grid)

"""gemm()'s selector on the CPU: tune tables (keying, atomic writes, damaged ones ignored,
read once), the nearest-shape lookup, the heuristic's rules, never a kernel the device
cannot run, run("auto") raising exactly what run() raises, the sweep. No NVRTC compile. The
launches run("auto") makes through a stub driver: test_auto_stub.py; tune and the tools
covering gemm(): test_auto_tools.py."""
from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import driver, registry
from cute_gemm.driver import launch
from cute_gemm.plan import modes, resolve
from cute_gemm.select import auto, autotable, contract, nearest
from cute_gemm.select.autotable import Measured, Table
from cute_gemm.base.errors import AutoTableWarning
from cute_gemm.perf import sweep
from cute_gemm.perf.tune import format_table

H100 = stub_driver.H100
A100 = launch.DeviceInfo(0, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 1_410_000, 166912, 167936,
                         40 << 20, 13000)


pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


def rnd(*shape):
    return np.random.default_rng().standard_normal(shape, dtype=np.float32)


def row(m, n, k, times, layout="nn", precision="fp32", aligned=True, notes=None):
    return Measured(m, n, k, layout, aligned, precision, dict(times), dict(notes or {}))


def table(rows, gpu=H100.name, version=None, source="t.json"):
    return Table(gpu, "sm_90", version or autotable.tune_version(), "2026-11-25", 132, {}, list(rows),
                 source)


# ---- tables ---------------------------------------------------------------------------------------
def test_table_round_trip_and_keying(tmp_path):
    t = table([row(64, 8192, 8192, {"cute_pipelined": 1.5, "cute_pipelined.T": 1.2}),
               row(4097, 4097, 4097, {"cute_pipelined": None}, aligned=False,
                   notes={"cute_pipelined": "FAIL: at (0, 0)"})])
    p = autotable.write(t, tmp_path / "x" / "t.json")
    d = json.loads(p.read_text())
    assert d["gpu"] == H100.name and d["cute_gemm"] == autotable.tune_version()
    assert [r["winner"] for r in d["rows"]] == ["cute_pipelined.T", None]
    back = autotable.read(p)
    assert back.rows == t.rows and back.source == str(p) and not back.batches
    assert "batches" not in d                   # (a table without them reads as before)
    key = autotable.batch_key((1, 6), 1, 96, 160, 64, "nn", True, "bf16", "bfloat16")
    t.batches.append(autotable.Batched(key, "", {"cute_wgmma_ws": 0.5, "cute_tiny_k": 0.25}))
    back = autotable.read(autotable.write(t, p))
    assert back.batches == t.batches and back.batches[0].winner == "cute_tiny_k"
    assert "batches timed on first use" in format_table(back) and key in format_table(back)
    d = json.loads(p.read_text())
    d["batches"][0]["times"]["cute_tiny_k"] = -1.0
    p.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="batch row"):
        autotable.read(p)
    assert autotable.slug(H100.name) == "nvidia-h100-80gb-hbm3"
    tuned = autotable.tuned_path(H100.name)
    assert tuned.parent == tmp_path / "cache" / "tune"
    assert tuned.name == f"nvidia-h100-80gb-hbm3-{autotable.tune_version()}.json"
    assert autotable.tune_version().startswith(f"{cute_gemm.__version__}+")
    assert autotable.tuned_path(H100.name, "9.9") != tuned
    assert autotable.shipped_path("NVIDIA H200").name == "nvidia-h200.json"


def test_write_is_atomic(tmp_path, monkeypatch):
    p = autotable.write(table([row(128, 128, 128, {"cute_pipelined": 0.01})]), tmp_path / "t.json")
    before = p.read_text()

    def torn(obj, f, **kw):
        f.write('{"schema": 1, "rows": [')           # a part, then the writer dies
        raise OSError("disk full")
    monkeypatch.setattr(autotable.json, "dump", torn)
    with pytest.raises(OSError):
        autotable.write(table([]), p)
    assert p.read_text() == before                    # the old table, whole
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.json"]     # no temporary left


@pytest.mark.parametrize("text", ["{not json", '{"schema": 1}', '{"schema": 7, "rows": []}',
                                  '[1, 2]', '{"schema": 1, "gpu": "x", "arch": "sm_90", '
                                  '"cute_gemm": "0", "rows": [{"m": 0}]}'])
def test_damaged_table_is_ignored_with_a_warning(text):
    p = autotable.tuned_path(H100.name)
    p.parent.mkdir(parents=True)
    p.write_text(text)
    with pytest.warns(AutoTableWarning, match="ignoring tune table"):
        assert autotable.tables_for(H100.name) == ()
    c = auto.choose(4096, 4096, 4096, device=H100)
    assert c.source == "heuristic" and c.kernel == "cute_pipelined"


def test_tables_of_another_gpu_or_version_are_ignored():
    autotable.write(table([row(8, 8, 8, {"cute_pipelined": 1.0})], gpu="NVIDIA H200"),
                    autotable.tuned_path(H100.name))
    with pytest.warns(AutoTableWarning, match="measured on 'NVIDIA H200'"):
        assert autotable.tables_for(H100.name) == ()
    autotable.reset()
    autotable.write(table([row(8, 8, 8, {"cute_pipelined": 1.0})], version="0.0.1"),
                    autotable.tuned_path(H100.name))
    with pytest.warns(AutoTableWarning, match="made by cute_gemm 0.0.1"):
        assert autotable.tables_for(H100.name) == ()
    autotable.reset()
    autotable.tuned_path(H100.name).unlink()
    # a shipped table travels with the package: any version of it is taken
    autotable.write(table([row(8, 8, 8, {"cute_pipelined": 1.0})], version="0.0.1"),
                    autotable.shipped_path(H100.name))
    (t,) = autotable.tables_for(H100.name)
    assert t.cute_gemm == "0.0.1"


def test_a_candidate_changed_under_its_name_retires_the_tuned_table(monkeypatch):
    """The tuned table's times are of the kernels as they were: a gemm() candidate configured
    otherwise (or a source edited) within one package version gives another tune_version, so
    the table made before is not read."""
    from dataclasses import replace
    before = autotable.tune_version()
    autotable.write(table([row(8, 8, 8, {"cute_pipelined": 1.0})]), autotable.tuned_path(H100.name))
    assert len(autotable.tables_for(H100.name)) == 1
    k = registry.get("cute_pipelined")
    changed = replace(k, config=replace(k.config, stages=k.config.stages + 1))
    monkeypatch.setattr(registry, "KERNELS", tuple(changed if x is k else x for x in registry.KERNELS))
    autotable.tune_version.cache_clear()
    autotable.reset()
    try:
        assert autotable.tune_version() != before
        assert autotable.tables_for(H100.name) == ()          # (another file name: not found)
    finally:
        autotable.tune_version.cache_clear()


def test_tables_are_read_once_per_process_until_reset():
    tuned = autotable.tuned_path(H100.name)
    autotable.write(table([row(4096, 4096, 4096, {"cute_pipelined": 1.0})]), tuned)
    autotable.write(table([row(128, 128, 128, {"cute_pipelined": 1.0})]),
                    autotable.shipped_path(H100.name))
    first = autotable.tables_for(H100.name)
    assert [t.rows[0].m for t in first] == [4096, 128]      # tuned, then shipped
    tuned.unlink()
    assert autotable.tables_for(H100.name) is first
    cute_gemm.clear_caches()                                  # the public reset
    assert [t.rows[0].m for t in autotable.tables_for(H100.name)] == [128]


# ---- lookup ---------------------------------------------------------------------------------------
def fake_candidates(monkeypatch, *names):
    """Make exactly these registered kernels gemm()'s candidates."""
    ks = tuple(dataclass_replace(registry.get(n), tags=("auto",)) for n in names)
    others = tuple(k for k in registry.KERNELS if k.name not in names)
    strip = tuple(dataclass_replace(k, tags=tuple(t for t in k.tags if t != "auto")) for k in others)
    monkeypatch.setattr(registry, "KERNELS", ks + strip)


def dataclass_replace(k, **kw):
    import dataclasses
    return dataclasses.replace(k, **kw)


def test_nearest_measured_shape_in_log_space(monkeypatch):
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x8")
    rows = [row(128, 128, 128, {"cute_pipelined_64x128x8": 0.010, "cute_pipelined": 0.012}),
            row(4096, 4096, 4096, {"cute_pipelined": 2.6, "cute_pipelined_64x128x8": 3.0}),
            row(8192, 64, 4096, {"cute_pipelined": 0.2, "cute_pipelined.T": 0.15})]
    tabs = [table(rows)]

    def pick(m, n, k, **kw):
        return auto.choose(m, n, k, device=H100, tables=tabs, **kw)
    c = pick(4096, 4096, 4096)
    assert (c.kernel, c.transposed, c.source) == ("cute_pipelined", False, "table")
    assert "row 4096x4096x4096" in c.why and "then cute_pipelined_64x128x8" in c.why
    # 256^3 is 3 doublings from 128^3 and 12 from 4096^3 per dimension: log space says 128^3
    c = pick(256, 256, 256)
    assert c.source == "nearest" and "row 128x128x128" in c.why
    assert "row 4096x4096x4096" in pick(2048, 2048, 2048).why
    c = pick(16384, 64, 4096)
    assert (c.kernel, c.transposed, c.key) == ("cute_pipelined", True, "cute_pipelined.T")
    # another layout or precision has no rows: the heuristic
    assert pick(4096, 4096, 4096, layout="tn").source == "heuristic"
    assert nearest.distance((128, 128, 128), (256, 256, 256)) == pytest.approx(3.0)


def test_a_nearest_rows_times_are_scaled_by_the_waves_each_candidate_runs(monkeypatch):
    """At 4096^3 on 132 SMs the 128x128 tiles (2 CTAs an SM: 264 slots) run 1024 tiles in 4
    waves and the 64x128 ones (3 an SM) 2048 in 6: the wider tile is faster there. At
    1024 x 1024 x 4096 both run one wave, the wider tile's 64 CTAs leaving most SMs idle:
    scaled by their waves, 2.6 ms x 1/4 against 3.0 ms x 1/6, the narrower tile wins. The
    nearest rule alone would have kept the wider one."""
    fake_candidates(monkeypatch, "cute_pipelined_128x128x8", "cute_pipelined_64x128x8")
    wide, narrow = (registry.get(n) for n in ("cute_pipelined_128x128x8", "cute_pipelined_64x128x8"))
    assert not wide.variants[0].stream_k and not narrow.variants[0].stream_k
    assert (wide.tile[:2], wide.min_blocks, narrow.tile[:2], narrow.min_blocks) == (
        (128, 128), 2, (64, 128), 3)
    tabs = [table([row(4096, 4096, 4096, {"cute_pipelined_128x128x8": 2.6,
                                          "cute_pipelined_64x128x8": 3.0})])]
    kt = 4096 // 8 + modes.TILE_OVERHEAD
    assert nearest.busiest_work(wide, 4096, 4096, 4096, "fp32", 132) == 4 * kt
    assert nearest.busiest_work(narrow, 4096, 4096, 4096, "fp32", 132) == 6 * kt
    c = auto.choose(1024, 1024, 4096, device=H100, tables=tabs)
    assert (c.kernel, c.source) == ("cute_pipelined_64x128x8", "nearest")
    assert "0.5 ms here" in c.why and "row 4096x4096x4096" in c.why
    # half the K, the same waves: the row's order stands
    assert auto.choose(4096, 4096, 2048, device=H100, tables=tabs).kernel == "cute_pipelined_128x128x8"
    # the transposed problem is walked as the kernel sees it
    assert nearest.busiest_work(narrow, 128, 4096, 64, "fp32", 132, transposed=True) == (
        nearest.busiest_work(narrow, 4096, 128, 64, "fp32", 132))


def test_lookup_prefers_the_same_alignment_class(monkeypatch):
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x8")
    tabs = [table([row(4096, 4096, 4096, {"cute_pipelined": 1.0, "cute_pipelined_64x128x8": 2.0}),
                   row(4097, 4097, 4097, {"cute_pipelined": 2.0, "cute_pipelined_64x128x8": 1.0},
                       aligned=False)])]
    assert auto.choose(4096, 4096, 4096, device=H100, tables=tabs, aligned=False).kernel \
        == "cute_pipelined_64x128x8"
    assert auto.choose(4097, 4097, 4097, device=H100, tables=tabs, aligned=True).kernel \
        == "cute_pipelined"
    assert auto.contiguous_aligned(4096, 4096, 4096) and not auto.contiguous_aligned(4097, 4096, 4097)
    assert not auto.contiguous_aligned(4096, 4097, 4096)       # B's and C's rows
    assert auto.contiguous_aligned(4097, 4096, 4096, "nn") and not auto.contiguous_aligned(
        4097, 4096, 4096, "tn")                                  # an m-major A: its column length


def test_failed_or_vanished_candidates_are_never_picked(monkeypatch):
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x8")
    tabs = [table([row(512, 512, 512, {"no_such_kernel": 0.001, "cute_pipelined_64x128x8": None,
                                       "cute_pipelined": 0.05},
                       notes={"cute_pipelined_64x128x8": "FAIL: at (3, 4)"})])]
    c = auto.choose(512, 512, 512, device=H100, tables=tabs)
    assert c.kernel == "cute_pipelined" and c.source == "table"
    # a row whose every candidate is gone: the next nearest row
    tabs[0].rows.insert(0, row(500, 500, 500, {"gone": 0.001}))
    assert auto.choose(500, 500, 500, device=H100, tables=tabs).source == "nearest"


def test_never_a_kernel_the_device_cannot_run():
    """The tensor-core rows of an H100 table name cute_wgmma_ws (sm_90a only): an A100 by the
    same name (a tuned table copied across) still never gets it."""
    a100 = dataclass_replace(A100, name=H100.name)
    tabs = [table([row(4096, 4096, 4096, {"cute_wgmma_ws": 0.2, "cute_mma_sm80": 0.4},
                       precision="bf16")])]
    assert auto.choose(4096, 4096, 4096, device=H100, precision="bf16", tables=tabs).kernel \
        == "cute_wgmma_ws"
    c = auto.choose(4096, 4096, 4096, device=a100, precision="bf16", tables=tabs)
    assert c.kernel == "cute_mma_sm80" and c.source == "table"
    for prec in ("fp32", "tf32", "bf16", "fp16"):
        for dev in (H100, A100):
            c = auto.choose(300, 200, 100, device=dev, precision=prec, tables=[])
            assert registry.get(c.kernel).runs_on(dev.arch_int)
    # fp32_3xtf32 is a contract an A100 keeps in SIMT fp32 (cute_3xtf32 needs sm_90a)
    c = auto.choose(4096, 4096, 4096, device=A100, precision="fp32_3xtf32", tables=[])
    assert c.precision == "fp32" and registry.get(c.kernel).runs_on(80)
    with pytest.raises(cute_gemm.CuteGemmError, match="no kernel computes fp32_3xtf32 on "
                                                      "NVIDIA A100.*cute_3xtf32 needs sm_90"):
        auto.choose(64, 64, 64, device=A100, precision="fp32_3xtf32", tables=[], exactly=True)
    # a GPU with 8 KB of smem to opt into: only cute_tiny_k (static smem, which every GPU has
    # 48 KB of) fits; without it, a ShapeLimitError
    small = types.SimpleNamespace(name="tiny", arch_int=90, smem_optin=8 << 10, sm_count=1)
    assert auto.choose(64, 64, 64, device=small, precision="fp32", tables=[]).kernel == "cute_tiny_k"
    bounds = tuple((x, None) for x in auto.candidates("fp32") if auto.TINY not in x.tags)
    with pytest.raises(cute_gemm.ShapeLimitError, match="shared memory"):
        auto.fitting(bounds, "fp32", small, 64, 64, 64)


# ---- the heuristic --------------------------------------------------------------------------------
def test_heuristic_rules_on_the_registered_candidates():
    names = {k.name for p in registry.PRECISIONS for k in auto.candidates(p)}
    assert names == {k.name for k in registry.kernels() if "auto" in k.tags}
    assert names >= {"cute_pipelined", "cute_mma_sm80", "cute_wgmma_ws", "cute_3xtf32"}
    for p in registry.PRECISIONS:
        assert auto.offers(p), f"no candidate computes {p}"

    def h(dev, prec, m=4096, n=4096, k=4096):
        return auto.choose(m, n, k, device=dev, precision=prec, tables=[])
    assert h(H100, "fp32").kernel == h(A100, "fp32").kernel == "cute_pipelined"
    for prec in ("bf16", "fp16", "tf32"):
        assert h(H100, prec).kernel == "cute_wgmma_ws"
        assert h(A100, prec).kernel == "cute_mma_sm80"
        assert "sm_90a" in h(H100, prec).why
    assert h(H100, "fp32_3xtf32").kernel == "cute_3xtf32"
    assert h(H100, "fp32_3xtf32").precision is None
    assert all(h(H100, p).source == "heuristic" and not h(H100, p).transposed
               for p in registry.PRECISIONS)


def test_a_small_k_runs_on_the_tiny_k_kernel_where_it_measured_faster():
    """SIMT fp32 (and fp32_3xtf32 by it): K <= 24, ahead of rows measured at other shapes,
    though a row of this very shape (tune times cute_tiny_k too) wins. Tensor cores: K <= 32
    where every TMA kernel would copy an operand first and C has at most 2^24 elements."""
    tabs = [table([row(4096, 4096, 64, {"cute_pipelined": 0.1}), row(512, 512, 16, {"cute_pipelined": 0.1})])]

    def h(m, n, k, prec, layout="nn"):
        return auto.choose(m, n, k, device=H100, precision=prec, layout=layout, tables=tabs)
    for m, n, k in ((8192, 8192, 17), (4096, 4096, 16), (7, 3, 1), (4096, 4096, 24)):
        c = h(m, n, k, "fp32")
        assert c.kernel == "cute_tiny_k" and f"K = {k} <= 24" in c.why, (m, n, k, c)
        assert h(m, n, k, "fp32_3xtf32").kernel == "cute_tiny_k"
    assert h(4096, 4096, 25, "fp32").kernel != "cute_tiny_k"
    assert (h(512, 512, 16, "fp32").kernel, h(512, 512, 16, "fp32").source) == ("cute_pipelined", "table")
    for prec in ("tf32", "bf16", "fp16"):
        assert h(2987, 2817, 11, prec).kernel == h(1058, 16, 13, prec).kernel == "cute_tiny_k"
        assert h(5170, 618, 16, prec, "tt").kernel == "cute_tiny_k"
        assert h(4096, 4096, 32, prec).kernel != "cute_tiny_k"          # aligned: no copies
        assert h(8192, 8192, 17, prec).kernel != "cute_tiny_k"          # 2^26 elements of C
        assert h(2987, 2817, 33, prec).kernel != "cute_tiny_k"


def test_heuristic_small_problems_with_unaligned_operands_take_the_small_kernel():
    """A problem of at most twelve k-tiles within two waves of 64x64 tiles, whose operands
    every TMA kernel would copy first (a leading dimension not 16-byte aligned), runs on the
    kernel tagged small (cute_mma_sm80_64x64), which reads them as they are in one launch;
    aligned operands, a longer K or more tiles keep the walk."""
    def h(m, n, k, prec="bf16", layout="nn"):
        return auto.choose(m, n, k, device=H100, precision=prec, layout=layout, tables=[]).kernel
    small = "cute_mma_sm80_64x64"
    assert auto.SMALL in registry.get(small).tags
    for prec in ("bf16", "fp16"):
        assert h(12, 1989, 40, prec) == h(623, 9, 66, prec) == h(1058, 16, 45, prec, "tn") == small
        assert h(16, 1992, 16, prec) != small          # aligned: the TMA kernels take them
        assert h(181, 1010, 333, prec) == h(65, 13, 621, prec, "tn") == small    # 6, 10 k-tiles
        assert h(342, 440, 1507, prec) != small        # 24 k-tiles
        assert h(8191, 8191, 13, prec) != small        # 16,384 tiles
    assert h(623, 9, 66, "tf32") != small              # tf32 mma.sync would copy an n-major B too
    assert h(1058, 16, 45, "tf32", "nt") == small
    assert "one launch" in auto.choose(12, 1989, 40, device=H100, precision="bf16", tables=[]).why


def test_heuristic_splits_the_small_kernels_k_where_it_is_long():
    """From 8 of its k-tiles the small kernel's pick splits K, the most shares (up to 8, a
    cluster's) with every tile's shares in one wave; past 12 k-tiles, up to 40, it takes a
    problem whose tiles' 8 shares fit one wave; more tiles keep the walk."""
    def c(m, n, k, layout="nn"):
        ch = auto.choose(m, n, k, device=H100, precision="bf16", layout=layout, tables=[])
        return ch.kernel, ch.split_k
    small = "cute_mma_sm80_64x64"
    assert c(65, 13, 621, "tn") == (small, 4)            # 10 k-tiles: shares of 2 at least
    assert c(189, 131, 690) == (small, 4)                 # 11 k-tiles, 9 tiles
    assert c(16, 160, 789) == (small, 6)                  # 13 k-tiles, 3 tiles
    assert c(181, 1010, 333) == (small, 0)                # 6 k-tiles: one pass
    assert c(12, 1989, 40) == (small, 0)
    assert c(30, 26, 1066) == c(438, 35, 1083) == (small, 8)      # 17 k-tiles, 1 and 7 tiles
    assert c(23, 14, 1469, "tt") == (small, 8)
    assert c(177, 349, 1137)[0] != small                  # 18 tiles: 8 shares each fill no wave
    assert c(68, 303, 2689)[0] != small                   # 43 k-tiles
    assert c(674, 386, 971)[0] != small                   # 16 k-tiles on 77 tiles
    why = auto.choose(30, 26, 1066, device=H100, precision="bf16", tables=[]).why
    assert "K split in 8" in why


def test_heuristic_tensor_cores_take_the_walk_of_least_cost():
    """Among cute_wgmma_ws's tile widths (128x256 in clusters of 2, 128x128, 128x64) and the
    problem or its transpose, the H200 measurements' winners (docs/design/cute_wgmma_ws.md,
    narrow tiles): wide tiles where they fill the SMs, narrow ones where they would not; a
    skinny M on the transposed problem, where it lands on the wgmma's N."""
    def h(m, n, k, prec="bf16", layout="nn"):
        c = auto.choose(m, n, k, device=H100, precision=prec, layout=layout, tables=[])
        assert c.source == "heuristic" and "least cost on 132 SMs" in c.why
        return c.kernel, c.transposed
    wide, n128, n64 = "cute_wgmma_ws", "cute_wgmma_ws_128x128", "cute_wgmma_ws_128x64"
    for prec in ("bf16", "fp16", "tf32"):
        assert h(4096, 4096, 4096, prec) == h(2048, 2048, 2048, prec) == (wide, False)
        assert h(8192, 8192, 128, prec) == h(4096, 4096, 64, prec) == (wide, False)
        assert h(1024, 1024, 1024, prec) == h(128, 128, 128, prec) == (n64, False)
        assert h(256, 256, 65536, prec) == (n64, False)
    assert h(16, 4096, 4096) == h(64, 8192, 8192) == (n64, True)
    assert h(8192, 32, 4096) == h(128, 4096, 4096) == (n64, False)
    assert h(8192, 32, 4096, "tf32") == (n128, False)   # C^T walked: the skinny side is M
    assert h(257, 8191, 1025, "tf32") == h(257, 8191, 1025) == (wide, False)
    for layout in ("tn", "nt", "tt"):                     # every 16-bit layout is an entry
        assert h(16, 4096, 4096, layout=layout) == (n64, True)
    # tf32 takes A m-major only with B k-major: a tn problem (no such entry) as given
    assert h(16, 4096, 4096, "tf32", "tn")[1] is False
    # a square is never transposed; without an SM count, the first of the newest kernels
    assert not h(300, 300, 5000)[1]
    # the majors fit turned (nt: A k-major, B^T k-major), but N = 8191 and K = 1025 leave no
    # row 16-byte aligned either way: both copy, so the problem is costed as given
    assert h(257, 8191, 1025, "tf32", "nt")[1] is False
    for prec in ("bf16", "tf32"):
        for m, n, k in ((16, 4096, 4096), (257, 8191, 1025), (8191, 257, 1025), (1000, 24, 2999)):
            for layout in registry.LAYOUTS:
                name, turned = h(m, n, k, prec, layout)
                if turned:   # a transposed pick is one an entry takes without copies
                    ops = resolve.contiguous(n, m, k, auto.transposed_layout(layout), prec)
                    assert not resolve.choose(registry.get(name), ops, prec)[1]
    c = auto.heuristic([registry.get(n) for n in (wide, n64)], 64, 64, 64, "bf16", "nn", 0)
    assert c.kernel == wide and not c.transposed


def test_heuristic_small_tiles_for_tiny_problems_else_large_stream_k_tiles(monkeypatch):
    fake_candidates(monkeypatch, "cute_pipelined_64x128x8", "cute_pipelined_128x128x8",
                    "cute_pipelined")

    def h(m, n, k):
        return auto.choose(m, n, k, device=H100, tables=[])
    # 128^3: one 128x128 tile -> 64x128 tiles; 256x256: four tiles, still tiny
    assert h(128, 128, 128).kernel == "cute_pipelined_64x128x8"
    assert "1 tile of cute_pipelined" in h(128, 128, 128).why
    assert h(256, 256, 4096).kernel == "cute_pipelined_64x128x8"
    # five tiles and up: the largest tiles, and of the two 128x128 ones, the stream-K one
    c = h(257, 256, 256)
    assert c.kernel == "cute_pipelined" and "stream-K" in c.why
    assert h(4096, 4096, 4096).kernel == "cute_pipelined"
    assert h(8192, 64, 4096).kernel == "cute_pipelined"


# ---- run("auto") and gemm(): validation exactly as run()'s ------------------------------------------
class FakeCAI:
    def __init__(self, shape, strides=None, typestr="<f4", ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def _bad_calls():
    ro = rnd(2, 2)
    ro.flags.writeable = False
    return [((rnd(2, 2, 2), rnd(3, 2, 2)), {}), ((rnd(3, 4), rnd(5, 6)), {}),
            ((rnd(3, 4), rnd(4, 6), rnd(6, 3)), {"beta": 1.0}), ((rnd(3, 4), rnd(4, 6)), {"out": rnd(3, 5)}),
            ((rnd(3, 4).astype(np.float64), rnd(4, 5)), {}), ((FakeCAI((3, 4), typestr="<f8"), FakeCAI((4, 5))), {}),
            (([[1.0]], rnd(1, 1)), {}), ((rnd(2, 2), rnd(2, 2)), {"out": ro}),
            ((rnd(2, 2), rnd(2, 2)), {"alpha": "x"}), ((rnd(2, 2), rnd(2, 2)), {"beta": True}),
            ((rnd(2, 2), FakeCAI((2, 2))), {}), ((rnd(2, 2), rnd(2, 2)), {"precision": "fp64"}),
            ((rnd(2, 2), rnd(2, 2)), {"precision": "bf16"}),
            ((rnd(2, 2), rnd(2, 2)), {"out": rnd(2, 2).astype(np.float16)}),
            ((rnd(2, 2), rnd(2, 2)), {"stream": -1}), ((rnd(2, 2), rnd(2, 2)), {"stream": "s"}),
            ((rnd(4, 4), rnd(4, 4)), {"out": np.lib.stride_tricks.as_strided(rnd(4, 4), (4, 4), (0, 4))})]


@pytest.mark.parametrize("i", range(len(_bad_calls())))
def test_auto_raises_what_run_raises_before_any_device_call(monkeypatch, i):
    def boom(*a, **k):
        raise AssertionError("validation reached the CUDA driver")
    for fn in ("DeviceBuffer", "launch", "device_info"):
        monkeypatch.setattr(launch, fn, boom)
    for fn in ("ensure_context", "current_ordinal"):
        monkeypatch.setattr(driver, fn, boom)
    args, kw = _bad_calls()[i]
    with pytest.raises(cute_gemm.CuteGemmError) as named:
        cute_gemm.run("cute_pipelined", *args, **kw)
    for call in (lambda: cute_gemm.run("auto", *args, **kw), lambda: cute_gemm.gemm(*args, **kw)):
        with pytest.raises(cute_gemm.CuteGemmError) as got:
            call()
        assert type(got.value) is type(named.value) and str(got.value) == str(named.value)


def test_no_products_need_no_device(monkeypatch):
    """An empty C, K = 0 or alpha = 0 on host arrays: BLAS semantics, no GPU asked."""
    def boom(*a, **k):
        raise AssertionError("reached the device")
    monkeypatch.setattr(launch, "device_info", boom)
    monkeypatch.setattr(driver, "current_ordinal", boom)
    assert cute_gemm.gemm(rnd(0, 3), rnd(3, 4)).shape == (0, 4)
    c = rnd(3, 4)
    out = cute_gemm.gemm(rnd(3, 0), rnd(0, 4), c, beta=2.0)
    assert np.array_equal(out, np.float32(2.0) * c)
    assert np.array_equal(cute_gemm.gemm(rnd(3, 5), rnd(5, 4), alpha=0.0), np.zeros((3, 4), np.float32))
    # in every precision whose operands are float32, contracts too (answered by another's kernel)
    for p in ("fp32", "tf32", "fp32_3xtf32"):
        got = cute_gemm.gemm(rnd(3, 5), rnd(5, 4), c, alpha=0.0, beta=3.0, precision=p)
        assert np.array_equal(got, np.float32(3.0) * c), p


def test_unknown_names_mention_auto_and_gemm_choice_checks_its_arguments():
    with pytest.raises(cute_gemm.UnknownKernelError, match="'auto'"):
        cute_gemm.run("nope", rnd(2, 2), rnd(2, 2))
    assert registry.check_name("auto") == "auto" and "auto" not in registry.names()
    with pytest.raises(cute_gemm.InputError, match="precision"):
        cute_gemm.gemm_choice(8, 8, 8, precision="fp64")
    with pytest.raises(cute_gemm.InputError, match=">= 0"):
        cute_gemm.gemm_choice(8, -1, 8)
    with pytest.raises(cute_gemm.InputError, match="layout"):
        auto.choose(8, 8, 8, device=H100, layout="xy", tables=[])


# ---- the sweep and the bench's summary ------------------------------------------------------------
def test_the_sweep_covers_every_class():
    shapes = [s for _, s in sweep.SWEEP]
    assert len(set(shapes)) == len(shapes) >= 24
    squares = sorted(m for (m, n, k) in shapes if m == n == k)
    assert squares[0] == 128 and squares[-1] == 16384 and len(squares) >= 6
    classes = {c.split(":")[0] for c, _ in sweep.SWEEP}
    assert classes >= {"square", "odd", "skinny M", "skinny N", "long K", "short K", "model"}
    assert {(1000, 1000, 1000), (4097, 4097, 4097), (12345, 6789, 1000), (64, 8192, 8192),
            (8192, 64, 4096), (512, 512, 16384), (8192, 8192, 128), (2048, 11008, 4096),
            (16, 4096, 4096)} <= set(shapes)
    for c, (m, n, k) in sweep.SWEEP:
        if c.startswith("skinny"):
            assert dict(sweep.GROUPS)["skinny"](m, n, k)
    from cute_gemm.perf.shapes import parse_sizes
    assert parse_sizes("sweep") == shapes


def test_held_out_shapes_are_in_no_shipped_table():
    """`--size held-out` measures gemm() between its rows: a held-out shape with a row of its
    own (tuned into a shipped table) would measure the table instead."""
    from cute_gemm.perf import sweep
    from cute_gemm.perf.shapes import parse_sizes
    held = [s for _, s in sweep.HELD_OUT]
    assert parse_sizes("held-out") == held and len(held) >= 24
    assert parse_sizes("grid") == list(sweep.GRID)
    assert not set(held) & ({s for _, s in sweep.SWEEP} | set(sweep.GRID))
    assert not set(sweep.GRID) & {s for _, s in sweep.SWEEP}
    assert {sweep.sweep_class(*s) for s in held} >= {"small", "large", "skinny M", "skinny N",
                                                     "long K", "short K"}
    tables = sorted((Path(cute_gemm.__file__).parent / "tables").glob("*.json"))
    assert tables
    for path in tables:
        rows = json.loads(path.read_text())["rows"]
        assert not [r for r in rows if (r["m"], r["n"], r["k"]) in set(held)], path.name


def test_ratio_summary_geometric_mean_minimum_and_groups():
    from cute_gemm.perf.schema import Row
    from cute_gemm.perf.stats import ratio_summary
    rows = [Row("auto", "auto", m, n, k, vs_cublas=v) for (m, n, k), v in
            (((1024, 1024, 1024), 0.5), ((64, 8192, 8192), 2.0), ((512, 512, 512), 1.0))]
    rows.append(Row("cuBLAS", "reference", 8, 8, 8, vs_cublas=1.0))
    (s,) = ratio_summary(rows, sweep.GROUPS)
    assert s["shapes"] == 3 and s["geomean"] == pytest.approx(1.0)
    assert s["min"] == 0.5 and s["min_shape"] == (1024, 1024, 1024)
    assert s["groups"] == {"every dim >= 1024": 0.5, "skinny": 2.0, "256³–1024³": 0.5}


# ---- accuracy contracts ---------------------------------------------------------------------------
def test_a_contract_is_answered_by_every_arithmetic_that_keeps_it():
    """fp32_3xtf32 promises fp32's gauge: SIMT fp32 kernels answer it too (in fp32), tf32
    never (2^-11); the precisions that name an arithmetic are answered by it alone."""
    assert contract.answering("fp32_3xtf32") == ("fp32_3xtf32", "fp32")
    for p in ("fp32", "tf32", "bf16", "fp16"):
        assert contract.answering(p) == (p,)
    own = auto.candidates("fp32_3xtf32", "float32", 90, exactly=True)
    every = auto.candidates("fp32_3xtf32", "float32", 90)
    assert [x.name for x in own] == ["cute_3xtf32"]
    assert set(every) == set(own) | set(auto.candidates("fp32", "float32", 90))
    assert contract.runs_at(registry.get("cute_pipelined"), "fp32_3xtf32") == "fp32"
    assert contract.runs_at(registry.get("cute_3xtf32"), "fp32_3xtf32") == "fp32_3xtf32"
    assert contract.runs_at(registry.get("cute_wgmma_ws"), "fp32_3xtf32") is None
    assert not auto.candidates("fp32_3xtf32", "bfloat16")


def test_a_contract_takes_the_faster_answer_with_its_host_time():
    """Where the tables price both answers, the least time wins, each at least its host
    floor (a composed call's twelve driver calls against one launch); where they do not,
    the contract's own kernels from 2^CONTRACT_LOG2_FLOP flop up."""
    fp32 = {"cute_pipelined": 0.004}
    own = {"cute_3xtf32": 0.003}            # faster on the GPU, but twelve host calls
    tabs = [table([row(256, 256, 256, fp32), row(256, 256, 256, own, precision="fp32_3xtf32")])]
    c = auto.choose(256, 256, 256, device=H100, precision="fp32_3xtf32", tables=tabs)
    assert (c.kernel, c.precision, c.source) == ("cute_pipelined", "fp32", "table")
    assert "cute_3xtf32" in c.why and f"{auto.host_floor(registry.get('cute_3xtf32'), c):.4g}" in c.why
    tabs = [table([row(4096, 4096, 4096, {"cute_pipelined": 2.7}),
                   row(4096, 4096, 4096, {"cute_3xtf32": 1.25}, precision="fp32_3xtf32")])]
    c = auto.choose(4096, 4096, 4096, device=H100, precision="fp32_3xtf32", tables=tabs)
    assert (c.kernel, c.precision) == ("cute_3xtf32", None)
    # a shape between rows: both scaled from them, and the work model grows cute_3xtf32's
    # time with its GEMM's (the 2048^3 row's 8x fewer flop than 4096^3)
    c = auto.choose(3000, 3000, 3000, device=H100, precision="fp32_3xtf32", tables=tabs)
    assert c.source == "nearest" and c.kernel == "cute_3xtf32" and 0.4 < c.ms < 1.25
    # only fp32 rows (a GPU tuned before the contract): the rule, by the problem's flop
    tabs = [table([row(4096, 4096, 4096, {"cute_pipelined": 2.7})])]
    big = auto.choose(4096, 4096, 4096, device=H100, precision="fp32_3xtf32", tables=tabs)
    small = auto.choose(512, 512, 512, device=H100, precision="fp32_3xtf32", tables=tabs)
    assert big.kernel == "cute_3xtf32" and f"2^{auto.CONTRACT_LOG2_FLOP} flop" in big.why
    assert small.precision == "fp32" and small.kernel == "cute_pipelined"
    assert "cute_pipelined in fp32" in str(small)

"""gemm() in the tools, on the CPU: tune's plan and loop with a fake timer and end to end on
a simulated device, and cross_check, bench and the README section covering gemm() like
any kernel. Split from test_auto.py, whose helpers it uses."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.driver import launch
from cute_gemm.registry import records
from cute_gemm.select import auto, autotable
from cute_gemm.select.choice import split_key
from cute_gemm.perf import runner, sweep, tune
from test_auto import A100, H100, fake_candidates, row, table

pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


# ---- tune's loop with a fake timer ---------------------------------------------------------------
def test_tune_plan_and_loop_with_a_fake_timer(monkeypatch):
    fake_candidates(monkeypatch, "cute_pipelined", "cute_pipelined_64x128x8")
    shapes = [(256, 256, 256), (8192, 64, 4096), (4097, 4097, 4097)]
    problems = tune.plan(shapes, ("nn",), ("fp32", "fp32_3xtf32"), 80, A100.smem_optin)
    assert [p.label for p in problems] == ["256x256x256 nn fp32", "8192x64x4096 nn fp32",
                                           "4097x4097x4097 nn fp32"]    # no 3xTF32 on sm_80
    assert problems[0].candidates == ("cute_pipelined", "cute_pipelined_64x128x8")
    assert problems[1].candidates[2:] == ("cute_pipelined.T", "cute_pipelined_64x128x8.T")
    assert problems[0].aligned and not problems[2].aligned
    now = [0.0]
    asked = []

    def measure(p, seconds):
        asked.append((p.label, seconds))
        now[0] += 10.0                       # each problem takes 10 s of the clock
        times = {c: (1.0 + i) * p.m for i, c in enumerate(p.candidates)}
        if p.m == 8192:                      # the fastest fails its check, another errors
            times = {"cute_pipelined": None, "cute_pipelined.T": 0.5, "cute_pipelined_64x128x8": 3.0}
            return times, {"cute_pipelined": "FAIL: at (1, 2)", "cute_pipelined_64x128x8.T": "CudaError: x"}
        return times, {}
    old = row(256, 256, 256, {"cute_pipelined": 9.0})
    t = table([old, row(1, 1, 1, {"cute_pipelined": 1.0}, precision="bf16")])
    seen = []
    left = tune.run_plan(problems, measure, t, budget_s=15.0, clock=lambda: now[0],
                         on_row=lambda i, p, r, el: seen.append((i, r.winner, el)))
    assert [p.label for p in left] == ["4097x4097x4097 nn fp32"]      # past the budget
    assert seen == [(0, "cute_pipelined", 10.0), (1, "cute_pipelined.T", 20.0)]
    # the share: half the time left over the candidates still to time, at most MAX_TIMING_S
    assert asked[0][1] == min(tune.MAX_TIMING_S, 0.5 * 15.0 / 8)
    assert asked[1][1] == min(tune.MAX_TIMING_S, 0.5 * 5.0 / 6)
    by = {(r.m, r.precision): r for r in t.rows}
    assert len(t.rows) == 3 and by[(1, "bf16")] is t.rows[0]          # other rows kept
    assert by[(256, "fp32")].times == {"cute_pipelined": 256.0, "cute_pipelined_64x128x8": 512.0}
    r = by[(8192, "fp32")]
    assert r.winner == "cute_pipelined.T" and r.times["cute_pipelined_64x128x8.T"] is None
    assert r.notes == {"cute_pipelined": "FAIL: at (1, 2)", "cute_pipelined_64x128x8.T": "CudaError: x"}
    c = auto.choose(8192, 64, 4096, device=H100, tables=[t])
    assert c.key == "cute_pipelined.T"
    text = tune.format_table(t)
    assert "cute_pipelined.T 0.5 ms" in text and "failed: cute_pipelined (FAIL" in text


def test_cli_tune_show_without_a_gpu(monkeypatch, capsys):
    from cute_gemm import cli
    monkeypatch.setenv("CUTE_GEMM_FORCE_NO_GPU", "1")
    assert cli.main(["tune", "--show"]) == 0
    assert "no table: gemm() follows its heuristic" in capsys.readouterr().out
    autotable.write(table([row(128, 128, 128, {"cute_pipelined": 0.01})]),
                    autotable.shipped_path(H100.name))
    assert cli.main(["tune", "--show"]) == 0
    out = capsys.readouterr().out
    assert "nvidia-h100-80gb-hbm3.json" in out and "128x128x128" in out
    assert cli.main(["tune"]) == 2
    assert "tune times kernels on a CUDA GPU" in capsys.readouterr().err
    assert cli.main(["run", "nope"]) == 2 and "'auto'" in capsys.readouterr().err


# ---- cross_check, bench and the README section cover gemm() like a kernel ---------------------------
def test_cross_check_and_bench_cover_auto_on_a_simulated_device(monkeypatch, tmp_path):
    from test_bench_simulated import _HostBuffer, _simulated_device
    blas = _simulated_device(monkeypatch)
    monkeypatch.setattr(runner, "find_cublas", lambda prefer, **kw: (blas, "cuBLAS via fakeblas"))
    rep = cute_gemm.cross_check(kernels=["naive", "auto"], shapes=[(20, 30, 10)], precision="fp32")
    assert rep.ok and rep.shapes[0].names == ["naive", "auto"]
    rep = cute_gemm.cross_check(shapes=[(20, 30, 10)], precision="fp32")   # by default, too
    assert rep.shapes[0].names[-1] == "auto"
    rep = cute_gemm.cross_check(kernels=["naive"], shapes=[(20, 30, 10)], precision="fp32")
    assert "auto" not in rep.shapes[0].names
    _HostBuffer.live = 0
    res = cute_gemm.bench(["auto", "naive"], [(40, 30, 20), (64, 64, 64)], repeats=3, warmup=1,
                          min_repeats=2, max_seconds=1.0, out_dir=tmp_path, progress=False)
    assert _HostBuffer.live == 0
    rows = [r for r in res.rows if r.kernel == "auto"]
    assert len(rows) == 2 and all(r.family == "auto" and r.status == "pass" for r in rows)
    assert rows[0].message.startswith("picked cute_tiny_k") and "(heuristic" in rows[0].message
    assert "picked cute_pipelined" in format_table_text(res)
    md = (tmp_path / "bench_readme.md").read_text()
    assert "#### Over 2 shapes" in md and "| `auto` | fp32 | nn | 2 |" in md
    assert "`cute_pipelined" in md and "(heuristic)" in md
    assert (tmp_path / "ratios_nn.png").exists() is False     # a ratio chart needs 3 shapes


def format_table_text(res):
    from cute_gemm.perf.report import format_table
    return format_table(res)


def test_readme_script_sweep_summary_and_details(tmp_path, script):
    from cute_gemm.perf.schema import BenchResult, Row, write_json
    from cute_gemm.perf.stats import fill_ratios, tflops
    mod = script("readme_bench")
    meta = {"device": {"name": "Sim"}, "date": "2026-11-25T00:00:00+00:00", "versions": {},
            "cublas": {"library": "cupy", "available": True}}
    res = BenchResult(dict(meta))
    for i, (_, (m, n, k)) in enumerate(sweep.SWEEP[:5]):
        for name, f in (("cuBLAS", 1.0), ("auto", 0.8 + 0.1 * i), ("cute_pipelined", 0.9)):
            ms = 2 * m * n * k / 50e12 * 1e3 / f
            r = Row(name, "auto" if name == "auto" else "cute", m, n, k, median_ms=ms, q1_ms=ms,
                    q3_ms=ms, iqr_ms=0.0, min_ms=ms, max_ms=ms, repeats=3,
                    message="picked cute_pipelined (table: t.json row ...)" if name == "auto" else "")
            r.tflops = tflops(m, n, k, ms)
            res.rows.append(r)
    fill_ratios(res.rows, 60.0)
    main = BenchResult(dict(meta), [Row("naive", "handwritten", 64, 64, 64, median_ms=1.0, q1_ms=1.0,
                                        q3_ms=1.0, iqr_ms=0.0, tflops=1.0)])
    j, sj = write_json(main, tmp_path / "nn.json"), write_json(res, tmp_path / "sweep.json")
    (tmp_path / "docs" / "bench").mkdir(parents=True)
    readme, page = tmp_path / "README.md", tmp_path / "docs" / "bench" / "README.md"
    readme.write_text("# t\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n")
    assert mod.main([str(j), "--sweep", str(sj), "--sweep-plot", "docs/ratios_nn.png", "--update",
                     str(readme), "--details", str(page)]) == 0
    section, full = readme.read_text(), page.read_text()
    for text in (section, full):
        assert "#### Over 5 shapes" in text and "| `auto` | fp32 | nn | 5 |" in text
        assert "0.800× (128×128×128)" in text
    assert "](docs/ratios_nn.png)" in section and "](../ratios_nn.png)" in full
    assert "| 128×128×128 | square | " not in section and "| 128×128×128 | square | " in full
    assert "`cute_pipelined` (table)" in full


def test_tune_warms_the_gpu_up_before_its_first_timing(monkeypatch, tmp_path):
    """The first problems of a tune are not timed at an idle GPU's clock: warm_up keeps
    it busy for WARM_UP_S first, and tune() calls it before measuring anything."""
    import time as _time
    from cute_gemm.perf import timing
    calls, syncs = [], []
    monkeypatch.setattr(launch, "synchronize", lambda stream=0: syncs.append(1))
    t0 = _time.perf_counter()
    timing.warm_up(lambda: calls.append(_time.perf_counter()), seconds=0.05)
    assert _time.perf_counter() - t0 >= 0.05 and calls and syncs
    order = []
    monkeypatch.setattr(tune, "warm_up", lambda flush: order.append("warm"))
    monkeypatch.setattr(tune, "run_plan", lambda *a, **k: order.append("measure") or [])
    from test_bench_simulated import _simulated_device
    _simulated_device(monkeypatch)
    from cute_gemm.build import cache
    monkeypatch.setattr(runner, "compile_ahead", lambda kernels, arch: cache.Prefetch([]))
    tune.tune([(40, 30, 20)], out=tmp_path, max_seconds=5, progress=False)
    assert order == ["warm", "measure"]


def test_split_k_candidates_keys_and_picks():
    # a key names kernel, transposed problem, CTAs per tile and how their shares are
    # reduced; split_key is its inverse
    for c in (auto.Choice("cute_pipelined"), auto.Choice("cute_pipelined", True),
              auto.Choice("cute_pipelined_32x64x16_sk", False, split_k=3),
              auto.Choice("cute_pipelined_32x64x16_sk", True, split_k=12),
              auto.Choice("cute_pipelined_32x64x16_sk", True, split_k=6, reduce=True)):
        assert split_key(c.key) == (c.kernel, c.transposed, c.split_k, c.reduce)
        assert c.pick == records.Pick(c.transposed, c.split_k, c.reduce)
    assert auto.Choice("x", True, split_k=4).key == "x.T/splitk4"
    assert auto.Choice("x", True, split_k=4, reduce=True).key == "x.T/splitr4"
    assert auto.Choice("x", reduce=True).pick == records.Pick()     # no split: nothing to reduce
    # tune offers split_k where tiles x S CTAs fit twice the launch bounds' CTAs an SM and
    # every run keeps 2 k-tiles: small and skinny shapes, not large ones
    sk = registry.get("cute_pipelined_32x64x16_sk")        # min_blocks 5
    assert auto.split_ks(sk, 512, 512, 512, 132) == [2, 3, 4, 6, 8]     # 128 tiles, 1320 CTAs
    assert auto.split_ks(sk, 256, 256, 16, 132) == []       # one k-tile
    assert auto.split_ks(sk, 4096, 4096, 4096, 132) == []
    assert auto.split_ks(sk, 512, 512, 512, 0) == []        # no SM count: none
    assert auto.split_ks(registry.get("cute_pipelined_64x128x8"), 512, 512, 512, 132) == []
    problems = tune.plan([(512, 512, 512), (8192, 64, 4096)], ("nn",), ("fp32",), 90,
                         H100.smem_optin, 132)
    keys = problems[0].candidates
    assert "cute_pipelined_32x64x16_sk/splitk3" in keys and "cute_pipelined/splitk2" in keys
    # ... each split in both kinds where the kernel has split entries (Variant.split)
    assert "cute_pipelined_32x64x16_sk/splitr3" in keys and "cute_pipelined/splitr2" in keys
    assert not any(".T" in c for c in keys)                     # M == N
    assert "cute_pipelined_64x32x16_sk.T/splitk4" in problems[1].candidates
    # a table's split pick comes back as a Choice that launches so
    t = table([row(512, 512, 512, {"cute_pipelined": 0.03,
                                   "cute_pipelined_32x64x16_sk/splitk3": 0.02})])
    c = auto.choose(512, 512, 512, device=H100, tables=[t])
    assert (c.kernel, c.transposed, c.split_k, c.source) == (
        "cute_pipelined_32x64x16_sk", False, 3, "table")
    t = table([row(512, 512, 512, {"cute_pipelined_32x64x16_sk/splitk3": 0.03,
                                   "cute_pipelined_32x64x16_sk/splitr4": 0.02})])
    c = auto.choose(512, 512, 512, device=H100, tables=[t])
    assert c.pick == records.Pick(False, 4, True) and c.source == "table"


def test_tune_end_to_end_on_a_simulated_device(monkeypatch, tmp_path, capsys):
    """tune() and `cute-gemm tune` through the bench's machinery on the simulated device of
    test_bench (run() is a numpy product there): every candidate checked, then timed; the
    table written where asked, merged, and read back by the selector."""
    from test_bench_simulated import _HostBuffer, _simulated_device
    from cute_gemm import cli
    from cute_gemm.build import cache
    _simulated_device(monkeypatch)
    monkeypatch.setattr(runner, "compile_ahead", lambda kernels, arch: cache.Prefetch([]))
    _HostBuffer.live = 0
    out = tmp_path / "tables"
    out.mkdir()
    t, path, left = tune.tune([(40, 30, 20), (64, 64, 64)], out=out, max_seconds=60, progress=False)
    assert _HostBuffer.live == 0 and not left
    assert path == out / "simulated-gpu.json" and autotable.read(path).rows == t.rows
    by = {r.shape: r for r in t.rows}
    fp32 = {k.name for k in auto.candidates("fp32", arch_int=launch.device_info().arch_int)}
    assert "cute_pipelined" in fp32
    assert set(by[(40, 30, 20)].times) == fp32 | {f"{x}.T" for x in fp32}
    assert set(by[(64, 64, 64)].times) == fp32            # M == N: no transpose
    assert all(ms is not None and ms > 0 for r in t.rows for ms in r.times.values())
    assert t.gpu == "Simulated GPU" and t.settings["sizes"] == [[40, 30, 20], [64, 64, 64]]
    # a second run of another shape merges into the same file
    monkeypatch.setattr(cli.base, "gpu_unavailable", lambda: None)
    assert cli.main(["tune", "--size", "16x8x4", "--out", str(path), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "3 problems" in printed
    merged = autotable.read(path)
    assert {r.shape for r in merged.rows} == {(40, 30, 20), (64, 64, 64), (16, 8, 4)}
    # settings are the last run's; the runs merged before it stay on record
    assert merged.settings["sizes"] == [[16, 8, 4]]
    assert [r["sizes"] for r in merged.settings["earlier_runs"]] == [[[40, 30, 20], [64, 64, 64]]]
    assert merged.settings["earlier_runs"][0]["date"] == t.date
    # the default place: this GPU's tuned table, which gemm() then reads
    tune.tune([(40, 30, 20)], max_seconds=60, progress=False)
    assert autotable.tuned_path("Simulated GPU").exists()
    assert cute_gemm.gemm_choice(40, 30, 20).source == "table"


def test_cli_run_auto_says_what_it_picked(monkeypatch, capsys):
    from test_bench_simulated import _simulated_device
    from cute_gemm import cli
    _simulated_device(monkeypatch)
    monkeypatch.setattr(cli.base, "gpu_unavailable", lambda: None)
    assert cli.main(["run", "auto", "--m", "40", "--n", "30", "--k", "20", "--repeats", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("auto: M=40 N=30 K=20  median") and "picked cute_tiny_k" in out and "(heuristic" in out


def test_table_loo_scores_the_lookup_on_rows_left_out(script):
    """scripts/table_loo.py: each row left out gets the pick of the rest (gemm()'s own
    lookup), scored by its own times: here 512^3 takes 256^3's kernel (1.5x its fastest),
    256^3 takes 512^3's (2x), and 4096^3 takes 512^3's, which it never timed (no score)."""
    mod = script("table_loo")
    t = table([row(256, 256, 256, {"a": 2.0, "b": 1.0}),
               row(512, 512, 512, {"a": 2.0, "b": 3.0}),
               row(4096, 4096, 4096, {"b": 1.0})])
    got = {shape: (key, ratio) for shape, _, key, ratio in mod.loss(t)}
    assert got == {(256, 256, 256): ("a", 2.0), (512, 512, 512): ("b", 1.5)}


def test_cross_check_takes_batches_on_a_simulated_device(monkeypatch):
    """A batch of fresh inputs (batch=) or N-D arrays broadcasting as numpy.matmul's: each
    kernel that walks such a batch is run and judged element by element against float64,
    a wrong element named by its batch index first; the kernels that do not batch are left
    out, as are those walking fewer modes than the batch has."""
    from test_bench_simulated import _simulated_device
    from cute_gemm import api
    _simulated_device(monkeypatch)

    def view(x):
        cai = x.__cuda_array_interface__
        shape, strides = cai["shape"], cai["strides"]
        span = 1 + sum((n - 1) * s // 4 for n, s in zip(shape, strides))
        base = np.frombuffer((ctypes.c_float * span).from_address(cai["data"][0]), np.float32)
        return np.lib.stride_tricks.as_strided(base, shape, strides)
    calls = []

    def run(name, a, b, c=None, *, out=None, alpha=1.0, beta=0.0, stream=None, precision=None,
            epilogue=None):
        calls.append((name, a.shape, b.shape))
        o = view(out)
        o[...] = alpha * (view(a).astype(np.float64) @ view(b)) + (beta * view(c) if beta else 0.0)
        if name == "v9_warptile":
            o[(1,) * (o.ndim - 2) + (2, 3)] += 1.0      # one wrong element, in problem 1
        return out
    monkeypatch.setattr(api, "run", run)
    rep = cute_gemm.cross_check(kernels=["cute_pipelined", "v9_warptile", "naive"], shapes=[(20, 30, 10)],
                                batch=(3,), precision="fp32", beta=0.5, seed=1)
    (s,) = rep.shapes
    assert s.batch == (3,) and s.names == ["cute_pipelined", "v9_warptile"]      # naive: 2-D only
    res = {r.name: r for r in s.results}
    assert res["cute_pipelined"].status == "pass" and res["v9_warptile"].status == "FAIL"
    assert res["v9_warptile"].first_fail == (1, 2, 3) and "batch (3,) of M=20" in rep.table()
    assert {sa for _, sa, _ in calls} == {(3, 20, 10)}
    rng = np.random.default_rng(2)     # two modes that do not merge: cute_pipelined walks one
    a, b = rng.standard_normal((2, 1, 20, 10), dtype=np.float32), rng.standard_normal((3, 10, 30), dtype=np.float32)
    rep = cute_gemm.cross_check(a, b, kernels=["v9_warptile", "cute_pipelined"], precision="fp32")
    (s,) = rep.shapes
    assert s.batch == (2, 3) and s.names == ["v9_warptile"]
    assert s.results[0].first_fail == (1, 1, 2, 3)
    rep = cute_gemm.cross_check(a[0, 0], b[0], kernels=["naive", "cute_pipelined"], precision="fp32")
    assert rep.ok and rep.shapes[0].batch == () and rep.shapes[0].names == ["naive", "cute_pipelined"]

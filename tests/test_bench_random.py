"""`cute-gemm bench --size random[:N]`: the draw (deterministic per seed, inside the flop band
and the dimension bounds, terminating on extreme bands), its command-line errors, the summary
statistics, the JSON, the text and the plot of a random run; the whole loop on the simulated
device of test_bench_simulated.py, and a tiny run on a GPU where there is one."""
from __future__ import annotations

import json
import math

import pytest

import cute_gemm
from cute_gemm import cli
from cute_gemm.perf import shapes as R
from cute_gemm.perf import runner
from cute_gemm.perf import report
from cute_gemm.perf.report import format_table, write_outputs
from cute_gemm.perf.schema import CUBLAS, TIMINGS, BenchResult, Row, load_json
from cute_gemm.perf.shapes import plan
from cute_gemm.perf.stats import fill_ratios, random_summary, ratio_stats

from test_bench_simulated import _HostBuffer, _simulated_device


def _log_flops(m, n, k):
    return math.log2(2 * m * n * k)


# ---- the draw -----------------------------------------------------------------------------
def test_the_draw_is_a_function_of_the_seed():
    spec = R.RandomShapes(40)
    first = R.draw(spec, 1234)
    assert first == R.draw(spec, 1234) and len(first) == 40
    assert first != R.draw(spec, 1235)
    assert len(set(first)) == 40                                   # distinct (shape, layout)
    assert {lay for *_, lay in first} == {"nn", "tn", "nt", "tt"}   # mixed by default
    assert first[:5] == R.draw(R.RandomShapes(5), 1234)             # more shapes extend the list


@pytest.mark.parametrize("band", [(18, 36), (18, 19), (10, 11), (26, 26.5), (35, 41.75)])
def test_every_shape_is_in_the_band_and_the_bounds(band):
    for m, n, k, lay in R.draw(R.RandomShapes(40, band), 7):
        assert band[0] <= _log_flops(m, n, k) <= band[1]
        assert all(R.DIM_MIN <= d <= R.DIM_MAX for d in (m, n, k))
        assert lay in ("nn", "tn", "nt", "tt")


def test_the_flop_count_is_spread_over_the_band_and_the_dims_alike():
    shapes = R.draw(R.RandomShapes(3000), 3)
    t = [_log_flops(*s[:3]) for s in shapes]
    for lo in range(18, 36, 3):                 # six equal parts of 18:36, a sixth each
        share = sum(lo <= x < lo + 3 for x in t) / len(t)
        assert abs(share - 1 / 6) < 0.03, (lo, share)
    means = [sum(math.log2(s[i]) for s in shapes) / len(shapes) for i in range(3)]
    assert max(means) - min(means) < 0.25                      # M, N, K drawn alike


def test_layouts_given_are_the_only_ones_drawn():
    assert {lay for *_, lay in R.draw(R.RandomShapes(20), 5, ("nn",))} == {"nn"}
    assert {lay for *_, lay in R.draw(R.RandomShapes(40), 5, ("tn", "tt"))} == {"tn", "tt"}


def test_extreme_bands_are_clipped_or_refused_and_the_draw_ends():
    hi = R.reachable()[1]                                         # 1 + 3 log2(12288)
    assert R.RandomShapes(5, (40, 44)).band() == (40, hi)
    for m, n, k, _ in R.draw(R.RandomShapes(40, (40, 44)), 0):
        assert 40 <= _log_flops(m, n, k) <= hi
    assert "clipped" in R.describe(R.RandomShapes(5, (40, 44)), 0)
    with pytest.raises(ValueError, match="out of reach"):
        R.parse_flops("44:48")
    with pytest.raises(ValueError, match="LO must be below HI"):
        R.parse_flops("18:18")
    with pytest.raises(ValueError, match="LO must be below HI"):
        R.parse_flops("30:20")
    with pytest.raises(ValueError, match="LO:HI"):
        R.parse_flops("18")
    with pytest.raises(ValueError, match="widen --flops"):       # too few integer shapes there
        R.draw(R.RandomShapes(500, (10, 10.5)), 0)
    # a band narrower than the rounding: shapes that fit, or the same clear error, never a hang
    try:
        shapes = R.draw(R.RandomShapes(10, (18, 18.0001)), 0)
    except ValueError as e:
        assert "widen --flops" in str(e)
    else:
        assert all(18 <= _log_flops(*s[:3]) <= 18.0001 for s in shapes)


def test_random_count_of_a_size_spec():
    assert R.count_of("random") == R.DEFAULT_COUNT
    assert R.count_of("random:7") == 7
    assert R.count_of("4096") is None and R.count_of(64) is None
    for bad, why in (("random:0", "N >= 1"), ("random:x", "whole number"), ("random:-3", "N >= 1")):
        with pytest.raises(ValueError, match=why):
            R.count_of(bad)


def test_plan_joins_fixed_and_random_sizes_with_one_seed():
    p = plan(["64", "random:6"], seed=11)
    assert p.seed == 11 and p.random.count == 6 and len(p.cases) == 7
    assert p.cases[0] == ((64, 64, 64), ("nn",))                   # fixed sizes: --layouts, nn
    assert all(len(lays) == 1 for _, lays in p.cases[1:])         # random: one layout each
    assert [(*s, lays[0]) for s, lays in p.cases[1:]] == list(p.drawn) == R.draw(R.RandomShapes(6), 11)
    assert plan(["64"]).seed == 0 and plan(["64"]).random is None
    fresh = plan("random:3")
    assert isinstance(fresh.seed, int) and fresh.record()["seed"] == fresh.seed
    assert plan("random:3", flops=(20, 22)).record()["flops_log2"] == [20, 22]
    with pytest.raises(ValueError, match="--flops"):
        plan(["64"], flops=(20, 30))
    with pytest.raises(ValueError, match="once"):
        plan(["random:3", "random:4"])


# ---- command line --------------------------------------------------------------------------
@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setenv("CUTE_GEMM_FORCE_NO_GPU", "1")


@pytest.mark.parametrize("argv,needle", [
    (["--size", "random:0"], "N >= 1"),
    (["--size", "random:x"], "whole number"),
    (["--size", "random", "--flops", "30:20"], "LO must be below HI"),
    (["--size", "random", "--flops", "44:48"], "out of reach"),
    (["--size", "random", "--flops", "abc"], "LO:HI"),
    (["--size", "64", "--flops", "20:30"], "--size random"),
    (["--size", "random:3", "--size", "random:4"], "once"),
])
def test_bad_random_arguments_are_one_line_errors(capsys, no_gpu, argv, needle):
    rc = cli.main(["bench", *argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "error:" in err and needle in err


def test_help_explains_random_sizes_and_the_seed(capsys):
    rc = cli.main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert rc == 0 and "random[:N]" in out and "--flops LO:HI" in out and "fresh seed" in out


def test_the_cli_passes_the_drawn_seed_and_prints_it(capsys, monkeypatch):
    from cute_gemm.cli import bench as bench_cli, base as cli_base
    seen = {}

    def fake_bench(*a, **kw):
        seen.update(kw)
        return BenchResult({}, [], None, None)
    monkeypatch.setattr(cli_base, "gpu_unavailable", lambda: None)
    monkeypatch.setattr(bench_cli, "bench", fake_bench)
    monkeypatch.setattr(bench_cli, "format_table", lambda res: "table")
    monkeypatch.setattr(R.secrets, "randbelow", lambda n: 987654)
    rc = cli.main(["bench", "auto", "--size", "random:5", "--flops", "20:30"])
    err = capsys.readouterr().err
    assert rc == 0 and seen["seed"] == 987654 and seen["flops"] == (20.0, 30.0)
    assert "seed 987654" in err and "--seed 987654" in err
    cli.main(["bench", "--size", "random:5", "--seed", "42"])
    assert seen["seed"] == 42 and "seed 42 " in capsys.readouterr().err


# ---- summary, JSON, text, plot -------------------------------------------------------------
def test_ratio_stats_on_hand_made_ratios():
    s = ratio_stats([2.0, 0.5, 1.0, 0.8, 1.25])
    assert s["count"] == 5 and s["min"] == 0.5
    assert s["geomean"] == pytest.approx(1.0)                      # 2 * 0.5 * 1 * 0.8 * 1.25 = 1
    assert s["below_0_9"] == pytest.approx(0.4)                    # 0.5 and 0.8
    assert ratio_stats([0.9, 0.9])["below_0_9"] == 0.0              # 0.9 itself is not below
    assert ratio_stats([]) == {"count": 0, "geomean": None, "min": None, "below_0_9": None}
    with pytest.raises(ValueError):
        ratio_stats([1.0, 0.0])


def _timed(kernel, shape, lay, prec, ms, call, burst):
    m, n, k = shape
    return Row(kernel, "reference" if kernel == CUBLAS else "auto", m, n, k, lay, "pass", "full",
               0.5, repeats=10, median_ms=ms, min_ms=ms, max_ms=ms, q1_ms=ms, q3_ms=ms, iqr_ms=0.0,
               tflops=2 * m * n * k / (ms * 1e-3) / 1e12, precision=prec, call_ms=call,
               burst_ms=burst, message="cupy 14" if kernel == CUBLAS else "picked x (table)")


def fake_random_result(seed=424242) -> BenchResult:
    """gemm() (auto) and cuBLAS on four random shapes in two precisions: auto's kernel time
    is cuBLAS's / 1.25, 0.8, 1.0, 2.0 (fp32), its call time cuBLAS's / 0.5 everywhere."""
    p = plan("random:4", seed=seed)
    rows = []
    for prec in ("fp32", "bf16"):
        for (shape, (lay,)), r in zip(p.cases, (1.25, 0.8, 1.0, 2.0)):
            rows.append(_timed(CUBLAS, shape, lay, prec, 1.0, 0.05, 1.0))
            rows.append(_timed("auto", shape, lay, prec, 1.0 / r, 0.1, 1.0))
    meta = {"date": "2026-12-03T00:00:00+00:00", "device": {"name": "Fake GPU", "arch": "sm_90"},
            "settings": {"seed": seed}, "random": p.record()}
    res = BenchResult(meta, rows)
    fill_ratios(res.rows, None)
    meta["random"]["summary"] = random_summary(res.rows)
    return res


def test_random_summary_per_precision_and_timing():
    summ = {(x["precision"], x["timing"]): x for x in random_summary(fake_random_result().rows)}
    assert set(summ) == {(p, t) for p in ("fp32", "bf16") for t in TIMINGS}
    k = summ[("fp32", "kernel")]
    assert k["count"] == 4 and k["geomean"] == pytest.approx(2 ** 0.25)     # 1.25 * 0.8 * 2
    assert k["min"] == pytest.approx(0.8) and k["below_0_9"] == 0.25
    assert k["min_shape"][3] in ("nn", "tn", "nt", "tt")
    assert summ[("bf16", "call")]["geomean"] == pytest.approx(0.5)
    assert summ[("bf16", "call")]["below_0_9"] == 1.0
    assert summ[("fp32", "burst")]["min"] == 1.0


def test_the_summary_is_of_the_drawn_shapes_alone():
    res = fake_random_result()
    res.rows += [_timed(CUBLAS, (64, 64, 64), "nn", "fp32", 1.0, 1.0, 1.0),
                 _timed("auto", (64, 64, 64), "nn", "fp32", 4.0, 4.0, 4.0)]    # a fixed size
    fill_ratios(res.rows, None)
    assert len(res.random_rows()) == len(res.rows) - 2
    assert random_summary(res.random_rows()) == res.meta["random"]["summary"]
    assert all(x["count"] == 4 for x in res.meta["random"]["summary"])


def test_json_text_and_readme_carry_the_seed(tmp_path):
    res = fake_random_result(seed=31337)
    write_outputs(res, tmp_path, plots=False)
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["meta"]["random"]["seed"] == 31337 and doc["meta"]["settings"]["seed"] == 31337
    assert len(doc["meta"]["random"]["shapes"]) == 4 and doc["meta"]["random"]["summary"]
    assert load_json(tmp_path / "bench.json").rows == res.rows       # call_ms, burst_ms kept
    text = format_table(res)
    assert "seed 31337" in text and "--seed 31337" in text and "< 0.9×" in text
    assert "burst" in text and "25 %" in text
    md = (tmp_path / "bench_readme.md").read_text()
    assert "Random shapes" in md and "seed 31337" in md


def test_random_plot_is_written_from_fake_results(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (the `plot` extra)")
    from cute_gemm.perf import plots
    files = write_outputs(fake_random_result(), tmp_path)
    assert [p.name for p in files["plots"]] == [plots.RANDOM_PNG]
    png = tmp_path / plots.RANDOM_PNG
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"]({plots.RANDOM_PNG})" in (tmp_path / "bench_readme.md").read_text()


# ---- the loop ------------------------------------------------------------------------------
def test_call_and_burst_timings_take_their_steps_in_order(monkeypatch):
    """call_times: flush without the hold, drain, then events around one call; burst_times:
    the flush with its hold, then events around `calls` calls, input sets rotated."""
    from cute_gemm.driver import launch
    from cute_gemm.perf import timing
    log = []

    class Event:
        def record(self, stream=0):
            log.append("event")

        def elapsed_ms(self, start):
            return 2.0

    class Flush:
        def evict(self):
            log.append("evict")

        def __call__(self):
            log.append("flush")
    monkeypatch.setattr(launch, "Event", Event)
    monkeypatch.setattr(launch, "synchronize", lambda: log.append("sync"))
    assert timing.call_times(log.append, 2, Flush(), repeats=3) == [2.0] * 3
    assert log == [x for i in (0, 1, 0) for x in ("evict", "sync", "event", i, "event")]
    log.clear()
    assert timing.burst_times(log.append, 3, Flush(), repeats=2, calls=4) == [0.5, 0.5]
    assert log == ["flush", "event", 0, 1, 2, 0, "event", "flush", "event", 1, 2, 0, 1, "event"]



def test_random_bench_on_a_simulated_device(monkeypatch, tmp_path):
    blas = _simulated_device(monkeypatch)
    monkeypatch.setattr(runner, "find_cublas", lambda prefer, **kw: (blas, "cuBLAS via fakeblas 1.0"))
    _HostBuffer.live = 0
    res = cute_gemm.bench(None, "random:3", seed=5, flops=(12, 16), repeats=4, warmup=1,
                          min_repeats=2, max_seconds=1.0, out_dir=tmp_path, plots=False,
                          progress=False)
    assert _HostBuffer.live == 0
    drawn = R.draw(R.RandomShapes(3, (12, 16)), 5)
    assert [(r.m, r.n, r.k, r.layout) for r in res.rows if r.kernel == CUBLAS] == drawn
    assert {r.kernel for r in res.rows} == {CUBLAS, "auto"}       # random runs default to auto
    for r in res.rows:
        assert r.status == "pass", (r.kernel, r.message)
        assert r.call_ms > 0 and r.burst_ms > 0 and r.median_ms > 0
        assert r.first_ms > 0       # the check's call: the problem's first (gemm() tunes there)
    assert "gemm()'s first call of each problem" in report.format_random(res)
    rnd = res.meta["random"]
    assert rnd["seed"] == res.meta["settings"]["seed"] == 5 and rnd["shapes"] == [list(s) for s in drawn]
    assert [x["timing"] for x in rnd["summary"]] == list(TIMINGS)
    assert all(x["count"] == 3 for x in rnd["summary"])
    assert load_json(tmp_path / "bench.json").meta["random"]["seed"] == 5


# ---- GPU -----------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not cute_gemm.gpu_available(), reason="no usable CUDA GPU (cute_gemm.gpu_available() is False)")
def test_gpu_tiny_random_bench(tmp_path):
    res = cute_gemm.bench("auto", "random:2", seed=1, flops=(18, 22), repeats=5, warmup=1,
                          min_repeats=3, max_seconds=0.2, out_dir=tmp_path, plots=False,
                          progress=False)
    rows = [r for r in res.rows if r.kernel == "auto"]
    assert len(rows) == 2 and all(r.status == "pass" for r in rows), [r.message for r in rows]
    assert all(r.call_ms > 0 and r.burst_ms > 0 for r in rows)
    if res.meta["cublas"]["available"]:
        assert {x["timing"] for x in res.meta["random"]["summary"]} == set(TIMINGS)
    assert load_json(tmp_path / "bench.json").meta["random"]["seed"] == 1

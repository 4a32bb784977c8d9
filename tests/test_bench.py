"""cute_gemm.perf (bench, plots, report, ...) / bench_cli.py / scripts/readme_bench.py.

CPU tests (always run): statistics, TFLOP/s and peak arithmetic, ratios, input rotation,
sampled reference, CSV/JSON round trips, the no-cuBLAS path, plots from synthetic results,
run()'s cached hot path against its first (resolving) call with a stub driver. GPU tests
(marked gpu): a tiny real bench and the overhead measurement. Elsewhere: the bench loop on a
simulated device (test_bench_simulated.py), README markdown (test_bench_readme.py), the clock
log (test_clocks.py), gemm()'s first call in fresh processes (test_first_call.py).
"""
from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import cute_gemm
import stub_driver
from bench_csv import read_csv
from cute_gemm import registry
from cute_gemm.driver import kernel_args
from cute_gemm.plan import resolve
from cute_gemm.perf import overhead, runner, shapes, timing
from cute_gemm.perf.cublas import find_cublas
from cute_gemm.perf.report import format_table, write_outputs
from cute_gemm.perf.runner import Reference, measure_row
from cute_gemm.perf.schema import CUBLAS, SCHEMA, BenchResult, Row, load_json, write_csv, write_json
from cute_gemm.perf.shapes import native_layout, parse_layouts, parse_sizes
from cute_gemm.perf.stats import (fill_ratios, peak_formula, peak_tflops, sample_indices, summarize,
                                  tflops)
from cute_gemm.perf.timing import rotation_sets

REPO = Path(__file__).resolve().parents[1]
PEAK = peak_tflops(132, 128, 1_980_000)


# ---- synthetic results -------------------------------------------------------------------
def bench_row(kernel, family, s, tf, layout="nn", status="pass", iqr_frac=0.04):
    if status != "pass":
        return Row(kernel, family, s, s, s, layout, status, "full", None, message="got nan, want 1")
    ms = 2 * s ** 3 / (tf * 1e12) * 1e3
    return Row(kernel, family, s, s, s, layout, "pass", "full", 0.4, 0.5, "disk", 30, ms, 0.97 * ms,
               1.2 * ms, ms * (1 - iqr_frac / 2), ms * (1 + iqr_frac / 2), ms * iqr_frac,
               tflops(s, s, s, ms), message=("cupy 13.6.0" if kernel == CUBLAS else ""))


def synthetic(cublas=True) -> BenchResult:
    meta = {"date": "2026-11-22T10:00:00+00:00", "driver": "13.0",
            "device": {"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132,
                       "fp32_lanes_per_sm": 128, "clock_khz": 1_980_000, "fp32_peak_tflops": PEAK,
                       "peak_formula": peak_formula(132, 128, 1_980_000)},
            "versions": {"cute_gemm": "0.1.0", "cuda-bindings": "13.3.0", "nvrtc": "13.0",
                         "nvidia-cutlass": "4.2.0.0", "cupy": "13.6.0"},
            "cublas": {"available": cublas, "library": "cupy" if cublas else None,
                       "note": "cuBLAS fp32 via cupy 13.6.0 (TF32 off)" if cublas
                       else "cuBLAS NOT MEASURED: cupy: ModuleNotFoundError"},
            "method": {"check": "gauge <= 16", "timing": "events"},
            "compile": {"naive": {"nvrtc_seconds": 0.4, "origin": "disk", "error": None}}}
    rows = []
    for s in (1024, 2048, 4096):
        if cublas:
            rows.append(bench_row(CUBLAS, "reference", s, 50.0))
        rows.append(bench_row("naive", "handwritten", s, 1.0))
        rows.append(bench_row("v2_tiled", "handwritten", s, 10.0, status="FAIL" if s == 4096 else "pass"))
        rows.append(bench_row("cute_smem", "cute", s, 25.0))
    r = BenchResult(meta, rows)
    fill_ratios(r.rows, PEAK)
    return r


# ---- arithmetic -----------------------------------------------------------------------------
def test_summarize_median_quartiles_iqr():
    s = summarize([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
    assert s == {"median": 5.5, "min": 1.0, "max": 10.0, "q1": 3.25, "q3": 7.75, "iqr": 4.5, "n": 10}
    s = summarize([3.0, 1.0, 2.0])
    assert (s["median"], s["q1"], s["q3"], s["iqr"]) == (2.0, 1.5, 2.5, 1.0)
    assert summarize([0.5])["iqr"] == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_tflops_and_peak_arithmetic():
    assert tflops(1000, 1000, 1000, 1.0) == pytest.approx(2.0)          # 2e9 flop in 1 ms
    assert tflops(4096, 4096, 4096, 2.6949) == pytest.approx(51.0, rel=1e-4)
    assert tflops(8, 8, 8, 0.0) is None and tflops(8, 8, 8, None) is None
    # H200: 132 SMs x 128 lanes x 2 x 1.98 GHz
    assert PEAK == pytest.approx(66.90816)
    f = peak_formula(132, 128, 1_980_000)
    assert f == "FP32 peak = 132 SMs x 128 FP32 lanes/SM x 2 flop/FMA x 1.980 GHz = 66.9 TFLOP/s"
    from cute_gemm.driver.launch import DeviceInfo
    info = DeviceInfo(0, "H200", (9, 0), 132, 1_980_000, 232448, 233472, 60 << 20, 13000)
    assert info.fp32_peak_tflops == pytest.approx(PEAK)
    assert runner.device_meta(info)["fp32_peak_tflops"] == pytest.approx(PEAK)
    assert peak_tflops(108, 64, 1_410_000) == pytest.approx(19.49184)   # A100: 19.5 TFLOP/s
    assert runner.driver_text(13000) == "13.0" and runner.driver_text(12080) == "12.8"


def test_ratios_against_cublas_and_peak():
    r = synthetic()
    by = {(x.kernel, x.m): x for x in r.rows}
    assert by[("cute_smem", 2048)].vs_cublas == pytest.approx(0.5)
    assert by[("naive", 1024)].vs_cublas == pytest.approx(0.02)
    assert by[("cute_smem", 2048)].frac_peak == pytest.approx(25.0 / PEAK)
    assert by[(CUBLAS, 4096)].vs_cublas == pytest.approx(1.0)
    failed = by[("v2_tiled", 4096)]
    assert failed.status == "FAIL" and failed.tflops is None and failed.vs_cublas is None
    # no cuBLAS row for the shape/layout: no ratio, but still a fraction of peak
    nc = synthetic(cublas=False)
    row = next(x for x in nc.rows if x.kernel == "cute_smem")
    assert row.vs_cublas is None and row.frac_peak == pytest.approx(25.0 / PEAK)


def test_rotation_sets_exceed_l2_within_memory():
    l2 = 60 << 20
    per = 3 * 256 * 256 * 4                                   # 256^3: A, B, C
    assert rotation_sets(per, l2) == math.ceil(2 * l2 / per) == 160
    assert rotation_sets(3 * 8192 * 8192 * 4, l2) == 2        # each set alone exceeds L2
    assert rotation_sets(per, l2, max_sets=64) == 64
    assert rotation_sets(per, l2, free_bytes=10 * per) == 5   # half the free memory
    assert rotation_sets(10 ** 12, l2, free_bytes=10 ** 9) == 1


def test_flush_holds_the_gpu_after_its_memset(monkeypatch):
    """A timed launch's start event follows the memset and then a spin on every SM that lasts
    HOLD_US at the device's highest clock: the GPU is still busy while Python enqueues the
    launch, so the host's time per call is not counted as the kernel's."""
    from cute_gemm import driver
    from cute_gemm.driver import launch
    events = stub_driver.install(monkeypatch)
    info = launch.DeviceInfo(0, "Simulated GPU", (9, 0), 132, 1_980_000, 232448, 233472, 50 << 20, 13000)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: info)
    monkeypatch.setattr(driver, "current_ordinal", lambda: 0)
    monkeypatch.setattr(launch, "DeviceBuffer", lambda n: types.SimpleNamespace(ptr=0x1000, close=lambda: None))
    with timing.Flush(info.l2_bytes) as flush:
        flush()
    assert [e[0] for e in events] == ["memset", "launch"]
    assert events[0][2] * 4 == flush.nbytes == 2 * info.l2_bytes
    _, entry, grid, stream, blob = events[1]
    assert (entry, grid, stream) == ("spin", (2 * 132, 1, 1), 0)
    assert int.from_bytes(blob[:8], "little") == int(timing.HOLD_US * 1980) > 0


def test_event_times_warns_when_the_host_outlasts_the_hold(monkeypatch):
    """A timed call that keeps the host busier than the flush holds the GPU may have its
    host time in its event time: event_times says so rather than report it silently."""
    import time as _time
    import warnings
    from cute_gemm.driver import launch

    class Event:
        def record(self, stream=0):
            self.t = _time.perf_counter()

        def elapsed_ms(self, start):
            return (self.t - start.t) * 1e3
    monkeypatch.setattr(launch, "Event", Event)

    class Flush:
        hold_us = 1000.0

        def __call__(self):
            pass

    def slow(i):
        _time.sleep(0.003)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timing.event_times(lambda i: None, 2, Flush(), repeats=10, warmup=1)   # within the hold
        timing.event_times(slow, 2, lambda: None, repeats=3, warmup=0)        # no hold to check
    with pytest.warns(RuntimeWarning, match="10 of 10 timed calls"):
        timing.event_times(slow, 2, Flush(), repeats=10, warmup=0)


def test_sample_indices_include_edges():
    rng = np.random.default_rng(0)
    idx = sample_indices(10_000, 64, rng)
    assert idx[0] == 0 and idx[-1] == 9999 and len(idx) == 66
    assert np.all(np.diff(idx) > 0)
    assert list(sample_indices(50, 64, rng)) == list(range(50))


def test_parse_sizes_and_layouts():
    assert parse_sizes(["4096", "8192"]) == [(4096,) * 3, (8192,) * 3]
    assert parse_sizes("1000x2000x300") == [(1000, 2000, 300)]
    assert parse_sizes([(1, 2, 3), 5, "5"]) == [(1, 2, 3), (5, 5, 5)]
    sq = parse_sizes("squares")
    assert sq[0] == (256,) * 3 and sq[-1] == (8192,) * 3
    assert len(parse_sizes(None)) == len(shapes.DEFAULT_SQUARES) + len(shapes.ODD_SHAPES)
    assert any(m != n for m, n, _ in parse_sizes("odd"))
    for bad in ("abc", "1x2", "0"):
        with pytest.raises(ValueError):
            parse_sizes(bad)
    assert parse_layouts("nn,tn") == ("nn", "tn")
    assert parse_layouts("all") == ("nn", "tn", "nt", "tt")
    with pytest.raises(ValueError):
        parse_layouts("nx")


def test_native_layouts_follow_the_registry_variants():
    for k in registry.kernels():
        for p in k.precisions:   # each precision takes some layout without a copy; the SIMT
            # ladder row-major (cute_mma_sm80's tf32 takes A and B k-major: "nt")
            native = [lay for lay in registry.LAYOUTS if native_layout(k, 256, 256, 256, lay, p)]
            assert native and (p != "fp32" or "nn" in native), (k.name, p)
    any_k = registry.Kernel(name="t_any", family="test", source="x.cu",
                            variants=(registry.Variant("e", "any", "any", "any"),), block=(1, 1, 1),
                            grid=registry.RowGrid(), summary="", seed="")
    row_only = registry.Kernel(name="t_row", family="test", source="x.cu",
                               variants=(registry.Variant("e"),), block=(1, 1, 1),
                               grid=registry.RowGrid(), summary="", seed="")
    for lay in ("tn", "nt", "tt"):
        assert native_layout(any_k, 64, 48, 32, lay)
        assert not native_layout(row_only, 64, 48, 32, lay)


# ---- checking and the check-before-timing rule ------------------------------------------------
def test_reference_sampled_catches_wrong_and_unwritten_elements():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 250), dtype=np.float32)
    c = a @ b
    ref = Reference(a, b, rng, full_max=0, sample=16)
    assert ref.mode == "sampled 18x18"
    assert ref.judge("k", c).status == "pass"
    bad = c.copy()
    i, j = int(ref.rows[5]), int(ref.cols[7])
    bad[i, j] += 1.0
    r = ref.judge("k", bad)
    assert r.status == "FAIL" and r.first_fail == (i, j)
    unwritten = c.copy()
    miss = next(x for x in range(300) if x not in set(ref.rows.tolist()))
    unwritten[miss, :] = np.nan
    r = ref.judge("k", unwritten)
    assert r.status == "FAIL" and "250 non-finite" in r.message
    full = Reference(a, b, rng)
    assert full.mode == "full" and full.judge("k", c).status == "pass"
    assert full.judge("k", bad).status == "FAIL"


def test_failing_kernel_gets_no_speed_figure():
    from cute_gemm.check import KernelResult
    called = []
    row = measure_row(Row("k", "handwritten", 64, 64, 64),
                      lambda: KernelResult("k", "FAIL", 1e6, 1.0, (3, 4), "got 1, want 2"),
                      lambda: called.append(1) or [1.0])
    assert row.status == "FAIL" and not called
    assert row.median_ms is None and row.tflops is None and row.gauge_ratio == 1e6
    assert row.message == "at (3, 4): got 1, want 2"
    row = measure_row(Row("k", "handwritten", 1000, 1000, 1000),
                      lambda: KernelResult("k", "pass", 0.25, 1e-7),
                      lambda: [1.0, 2.0, 3.0, 4.0])
    assert (row.status, row.repeats, row.median_ms, row.iqr_ms) == ("pass", 4, 2.5, 1.5)
    assert row.tflops == pytest.approx(0.8)                           # 2e9 flop / 2.5 ms

    def boom():
        raise RuntimeError("illegal address\nmore")
    row = measure_row(Row("k", "x", 1, 1, 1), boom, lambda: [1.0])
    assert row.status == "error" and row.message == "RuntimeError: illegal address"
    row = measure_row(Row("k", "x", 1, 1, 1), lambda: KernelResult("k", "FAIL", math.inf), boom)
    assert row.gauge_ratio is None          # JSON has no inf


# ---- formats -----------------------------------------------------------------------------------
def test_csv_round_trip(tmp_path):
    r = synthetic()
    p = write_csv(r, tmp_path / "b.csv")
    header = p.read_text().splitlines()[0].split(",")
    assert header[:8] == ["kernel", "family", "m", "n", "k", "layout", "status", "check"]
    back = read_csv(p)
    assert back == r.rows
    failed = next(x for x in back if x.status == "FAIL")
    assert failed.median_ms is None and failed.repeats == 0


def test_json_round_trip_and_schema(tmp_path):
    r = synthetic()
    r.overhead = {"run_us": 9.5, "raw_launch_us": 4.7, "meets_target": True}
    p = write_json(r, tmp_path / "b.json")
    d = json.loads(p.read_text())
    assert d["schema"] == SCHEMA and d["meta"]["device"]["name"] == "NVIDIA H200"
    back = load_json(p)
    assert back.rows == r.rows and back.meta == r.meta and back.overhead == r.overhead
    d["schema"] = 99
    (tmp_path / "old.json").write_text(json.dumps(d))
    with pytest.raises(ValueError, match="schema"):
        load_json(tmp_path / "old.json")


def test_table_shows_formula_cublas_and_failures():
    t = format_table(synthetic())
    assert "FP32 peak = 132 SMs x 128 FP32 lanes/SM x 2 flop/FMA x 1.980 GHz = 66.9 TFLOP/s" in t
    assert "cuBLAS fp32 via cupy" in t
    fail_line = next(x for x in t.splitlines() if "v2_tiled" in x and "4096x4096x4096" in x)
    assert "FAIL" in fail_line and "got nan" in fail_line and "TFLOP" not in fail_line
    ok_line = next(x for x in t.splitlines() if "cute_smem" in x and "2048x2048x2048" in x)
    assert "25.00" in ok_line and "50.0 %" in ok_line
    t = format_table(synthetic(cublas=False))
    assert "cuBLAS NOT MEASURED" in t


# ---- cuBLAS discovery ----------------------------------------------------------------------------
def test_no_cublas_library_is_reported_plainly(monkeypatch):
    for mod in ("cupy", "torch", "nvmath"):
        monkeypatch.setitem(sys.modules, mod, None)      # import raises ImportError
    backend, note = find_cublas("auto")
    assert backend is None
    assert note.startswith("cuBLAS NOT MEASURED")
    assert "cupy: ModuleNotFoundError" in note or "cupy: ImportError" in note
    assert "torch:" in note and "pip install cupy-cuda13x" in note
    backend, note = find_cublas("none")
    assert backend is None and "disabled" in note
    with pytest.raises(ValueError):
        find_cublas("mkl")


def test_cupy_route_turns_tf32_off(monkeypatch):
    """fp32 peer: CUBLAS_COMPUTE_32F; the TF32 peer switches TF32 on for its own call only."""
    monkeypatch.setenv("CUPY_TF32", "1")
    calls = []
    linalg = types.SimpleNamespace(COMPUTE_TYPE_DEFAULT=1, COMPUTE_TYPE_TF32=7,
                                   set_compute_type=lambda dt, ct: calls.append((dt, ct)))
    cupy = types.SimpleNamespace(__version__="13.6.0", asarray=lambda x: ("wrapped", x),
                                 matmul=lambda a, b, out: calls.append(("mm", a, b, out)),
                                 cuda=types.SimpleNamespace(
                                     runtime=types.SimpleNamespace(getDeviceCount=lambda: 1)))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy._core._routines_linalg", linalg)
    backend, note = find_cublas("auto")
    assert backend.library == "cupy" and note.startswith("cuBLAS via cupy 13.6.0")
    import os
    assert os.environ["CUPY_TF32"] == "0"
    assert calls == [(np.float32, 1)] and "CUBLAS_COMPUTE_32F" in note
    assert backend.wrap("x") == ("wrapped", "x")
    backend.matmul("a", "b", "c", "tf32")
    assert calls[1:] == [(np.float32, 7), ("mm", "a", "b", "c"), (np.float32, 1)]
    assert "bf16" not in backend.precisions


def test_torch_route_turns_tf32_off(monkeypatch):
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    monkeypatch.setitem(sys.modules, "cupy", None)
    mm = types.SimpleNamespace(fp32_precision="tf32", allow_tf32=True)
    torch = types.SimpleNamespace(__version__="2.11.0", cuda=types.SimpleNamespace(is_available=lambda: True),
                                  backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=mm)))
    monkeypatch.setitem(sys.modules, "torch", torch)
    backend, note = find_cublas("auto")
    assert backend.library == "torch" and mm.fp32_precision == "ieee"
    assert "fp32_precision='ieee'" in note
    seen = []
    torch.matmul = lambda a, b, out: seen.append(mm.fp32_precision)
    backend.matmul("a", "b", "c", "tf32")
    backend.matmul("a", "b", "c")
    assert seen == ["tf32", "ieee"] and mm.fp32_precision == "ieee"
    del mm.fp32_precision                               # torch < 2.9: the legacy switch
    backend, note = find_cublas("torch")
    assert mm.allow_tf32 is False and "allow_tf32=False" in note
    torch.cuda.is_available = lambda: False
    backend, note = find_cublas("torch")
    assert backend is None and "is_available() is False" in note


# ---- plots ------------------------------------------------------------------------------------
def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@pytest.mark.parametrize("cublas", [True, False])
def test_plots_written_from_synthetic_results(tmp_path, cublas):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (the `plot` extra)")
    files = write_outputs(synthetic(cublas), tmp_path, plots=True)
    names = sorted(p.name for p in files["plots"])
    # with cuBLAS: the ratio to it on each of the three sizes too
    assert names == ["ladder_4096.png"] + ["ratios_nn.png"] * cublas + ["tflops_vs_size_nn.png"]
    w, h = _png_size(tmp_path / "ladder_4096.png")
    assert (w, h) == (1200, int(4.0 * 120))               # 3 kernels: the minimum height
    w, h = _png_size(tmp_path / "tflops_vs_size_nn.png")
    assert (w, h) == (int((10.0 + 2.2) * 120), int(5.8 * 120))   # one legend column
    assert (tmp_path / "bench.json").exists() and (tmp_path / "bench.csv").exists()
    assert "ladder_4096.png" in (tmp_path / "bench_readme.md").read_text()


def test_plots_need_timed_squares(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib not installed (the `plot` extra)")
    from cute_gemm.perf import plots
    r = BenchResult(synthetic().meta, [bench_row("naive", "handwritten", 64, 1.0, status="FAIL")])
    with pytest.raises(ValueError):
        plots.ladder_chart(r, tmp_path / "x.png")
    assert plots.write_all(r, tmp_path) == []


def test_write_outputs_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    files = write_outputs(synthetic(), tmp_path, plots=True)
    assert files["plots"] == [] and "matplotlib is not installed" in files["plots_skipped"]
    assert "![" not in (tmp_path / "bench_readme.md").read_text()


# ---- run()'s cached hot path with a stub driver -------------------------------------------------
def _stub_driver(monkeypatch):
    """The launches (function, grid, block, smem, stream, argument bytes) run() makes."""
    events = stub_driver.install(monkeypatch)

    class Launches(list):
        def __len__(self):
            return len(self._all())

        def __getitem__(self, i):
            return self._all()[i]

        def _all(self):
            return [(e[1], e[2], None, None, e[3], e[4]) for e in stub_driver.launches(events)]
    return Launches()


_Dev = stub_driver.Dev


# float32 operands at unaligned leading dimensions: the kernels with fp32 arithmetic (the
# tensor-core kernels read their own dtypes, 16-byte aligned after the runtime's padded copies)
@pytest.mark.parametrize("name", [k.name for k in registry.kernels() if "fp32" in k.precisions])
def test_cached_hot_path_launches_exactly_what_the_first_call_resolved(monkeypatch, name):
    from cute_gemm import api
    launches = _stub_driver(monkeypatch)
    m, n, k = 37, 45, 29
    a, b, c = _Dev((m, k), 0x10000), _Dev((k, n), 0x20000), _Dev((m, n), 0x30000)
    api.run(name, a, b, out=c, alpha=1.5)
    assert len(resolve.CACHE.launches) == 1
    api.run(name, a, b, out=c, alpha=1.5)                     # cached path
    assert len(launches) == 2 and launches[0] == launches[1]
    s = kernel_args.GemmArgs.from_buffer_copy(launches[1][5])
    assert (s.M, s.N, s.K, s.alpha, s.A, s.B, s.C) == (m, n, k, 1.5, 0x10000, 0x20000, 0x30000)
    assert (s.sAm, s.sAk, s.sBk, s.sBn, s.sCm, s.sCn) == (k, 1, n, 1, n, 1)
    # new pointers with the same alignment: same entry, fresh pointers and scalars
    a2, b2, c2 = _Dev((m, k), 0x50000), _Dev((k, n), 0x60000), _Dev((m, n), 0x70000)
    api.run(name, a2, b2, c2, out=c2, alpha=-2.0, beta=0.5)   # in place: C is out
    s = kernel_args.GemmArgs.from_buffer_copy(launches[2][5])
    assert (s.A, s.B, s.C, s.alpha, s.beta) == (0x50000, 0x60000, 0x70000, -2.0, 0.5)
    assert launches[2][:5] == launches[0][:5] and len(resolve.CACHE.launches) == 1
    # a different shape resolves a new entry
    api.run(name, _Dev((m + 1, k), 0x10000), b, out=_Dev((m + 1, n), 0x30000))
    assert len(resolve.CACHE.launches) == 2
    s = kernel_args.GemmArgs.from_buffer_copy(launches[3][5])
    assert s.M == m + 1 and launches[3][1] == registry.get(name).grid(m + 1, n, k)


def test_signature_hot_path_skips_validation_only_for_a_call_seen_before(monkeypatch):
    """run(name, a, b, out=c) on __cuda_array_interface__ operands: a call whose kernel,
    shapes, strides, dtypes, read-only flags and pointer alignment classes were seen before
    launches without parse/validate, with its own pointers and alpha; any change in those
    goes through validation again (the named errors), and clearing _fast ends the shortcut."""
    from cute_gemm import api
    from cute_gemm.base.errors import DTypeError, InputError
    launches = _stub_driver(monkeypatch)
    m, n, k = 40, 24, 16
    a, b, c = _Dev((m, k), 0x10000), _Dev((k, n), 0x20000), _Dev((m, n), 0x30000)
    assert api.run("cute_smem", a, b, out=c) is c
    assert len(resolve.CACHE.hot) == 1
    validated = []
    real_validate = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: validated.append(1) or real_validate(*x))
    a.ptr, c.ptr = 0x40000, 0x50000                     # same alignment class (& 255)
    assert api.run("cute_smem", a, b, out=c, alpha=3) is c
    assert not validated and len(launches) == 2 and launches[1][:5] == launches[0][:5]
    s = kernel_args.GemmArgs.from_buffer_copy(launches[1][5])
    assert (s.A, s.B, s.C, s.alpha, s.beta) == (0x40000, 0x20000, 0x50000, 3.0, 0.0)
    # a changed dtype, read-only out or alignment class on the same objects: validated again
    a.typestr = "<f8"
    with pytest.raises(DTypeError):
        api.run("cute_smem", a, b, out=c)
    a.typestr, c.readonly = "<f4", True
    with pytest.raises(InputError):
        api.run("cute_smem", a, b, out=c)
    c.readonly, a.ptr = False, 0x40004
    api.run("cute_smem", a, b, out=c)
    assert len(validated) == 3 and len(launches) == 3
    s = kernel_args.GemmArgs.from_buffer_copy(launches[2][5])
    assert s.A == 0x40004
    # alpha of another type (bool, numpy scalar) or a C operand other than out: the full
    # path; C as out (an update in place): the path
    api.run("cute_smem", a, b, out=c, alpha=np.float32(2.0))
    api.run("cute_smem", a, b, _Dev((m, n), c.ptr), out=c, beta=1.0)
    api.run("cute_smem", a, b, c, out=c, beta=1.0)
    assert len(validated) == 5
    with pytest.raises(InputError):
        api.run("cute_smem", a, b, out=c, alpha=True)
    cute_gemm.clear_caches()                            # resolved launches forgotten
    api.run("cute_smem", a, b, out=c)
    assert len(validated) == 7 and len(resolve.CACHE.launches) == 1


# ---- GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not cute_gemm.gpu_available(), reason="no usable CUDA GPU (cute_gemm.gpu_available() is False)")
def test_gpu_tiny_bench(tmp_path):
    names = list(registry.names())[:2]
    res = cute_gemm.bench(names, [(96, 80, 72), "128"], layouts="nn,tn", repeats=5, warmup=1,
                          min_repeats=3, max_seconds=0.2, out_dir=tmp_path, plots=False,
                          progress=False)
    kernel_rows = [r for r in res.rows if r.kernel != CUBLAS]
    assert len(kernel_rows) == 2 * 2 * len(names)
    for r in kernel_rows:
        assert r.status in ("pass", "skip"), (r.kernel, r.status, r.message)
        if r.status == "pass":
            assert r.repeats >= 3 and r.median_ms > 0 and r.min_ms <= r.median_ms <= r.max_ms
            assert r.tflops > 0 and r.check == "full" and r.gauge_ratio <= 16
            assert r.frac_peak > 0
    cub = [r for r in res.rows if r.kernel == CUBLAS]
    if res.meta["cublas"]["available"]:
        assert all(r.status == "pass" for r in cub), [(r.status, r.message) for r in cub]
        assert all(r.vs_cublas is not None for r in kernel_rows if r.timed)
    else:
        assert not cub and "NOT MEASURED" in res.meta["cublas"]["note"]
    back = load_json(tmp_path / "bench.json")
    assert back.rows == res.rows and back.meta["device"]["name"]
    assert read_csv(tmp_path / "bench.csv") == res.rows


@pytest.mark.gpu
@pytest.mark.skipif(not cute_gemm.gpu_available(), reason="no usable CUDA GPU (cute_gemm.gpu_available() is False)")
def test_gpu_overhead_measurement():
    backend, _ = find_cublas("auto")
    o = overhead.measure_overhead(calls=500, rounds=2, backend=backend)
    assert o["raw_launch_us"] > 0 and o["run_us"] > 0
    assert o["run_minus_raw_us"] == pytest.approx(o["run_us"] - o["raw_launch_us"])
    assert ("cublas_us" in o) == (backend is not None)
    assert o["meets_target"] == (o["run_minus_raw_us"] <= overhead.OVERHEAD_TARGET_US)
    for lib, mine, peer in (("torch", "run_torch", "torch_mm"), ("cupy", "run_cupy", "cupy_matmul")):
        measured = not o["libraries"][lib].startswith("not measured")
        assert (f"{mine}_over_{peer}" in o) == measured
        assert not measured or o[f"{mine}_us"] > 0 < o[f"{peer}_us"]



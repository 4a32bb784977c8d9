"""The whole bench loop on a simulated device: host memory behind the driver calls, a BLAS
in numpy, so that bench(), time_kernel(), the overhead measurement and `cute-gemm run` are
checked end to end (a wrong kernel caught, figures computed from what was timed) without a
GPU. Split from test_bench.py."""
from __future__ import annotations

import ctypes
import math
import types

import numpy as np
import pytest

import cute_gemm
from bench_csv import read_csv
from cute_gemm import registry
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.perf import overhead, runner, timing
from cute_gemm.perf.schema import CUBLAS, load_json
from cute_gemm.perf.stats import peak_tflops, tflops

# ---- the whole bench loop on a simulated device (host memory behind the driver calls) ------------
class _HostBuffer:
    """DeviceBuffer stand-in: host memory whose address plays the device pointer."""

    def __init__(self, nbytes, ordinal=0):
        self.nbytes = max(int(nbytes), 4)
        self._mem = np.zeros(self.nbytes // 4 + 1, np.float32)
        self.ptr = self._mem.ctypes.data
        _HostBuffer.live += 1

    live = 0

    def close(self):
        if self.ptr:
            self.ptr = 0
            _HostBuffer.live -= 1

    def __del__(self):
        pass


def _host_view(obj) -> np.ndarray:
    cai = obj.__cuda_array_interface__
    (r, c), (s0, s1), ptr = cai["shape"], cai["strides"], cai["data"][0]
    span = 1 + (r - 1) * s0 // 4 + (c - 1) * s1 // 4
    base = np.frombuffer((ctypes.c_float * span).from_address(ptr), np.float32)
    return np.lib.stride_tricks.as_strided(base, (r, c), (s0, s1))


def _simulated_device(monkeypatch, wrong: str | None = None):
    from cute_gemm import api, driver
    from cute_gemm.build import cache
    from cute_gemm.driver import launch
    info = launch.DeviceInfo(0, "Simulated GPU", (9, 0), 4, 1_000_000, 232448, 233472, 1 << 20, 13000)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: info)
    for fn in ("synchronize", "check_last"):
        monkeypatch.setattr(launch, fn, lambda *a, **k: None)
    monkeypatch.setattr(driver, "ensure_context", lambda *a, **k: None)
    monkeypatch.setattr(driver, "current_ordinal", lambda: 0)
    monkeypatch.setattr(launch, "mem_get_info", lambda ordinal=0: (1 << 30, 1 << 31))
    monkeypatch.setattr(launch, "DeviceBuffer", _HostBuffer)
    copy = lambda dst, src, nbytes, stream=0: ctypes.memmove(dst, src, nbytes)  # noqa: E731
    for fn in ("memcpy_htod", "memcpy_dtoh", "memcpy_dtod"):
        monkeypatch.setattr(launch, fn, copy)

    def memset(ptr, bits, count, stream=0):
        np.frombuffer((ctypes.c_uint32 * count).from_address(ptr), np.uint32)[:] = bits
    monkeypatch.setattr(launch, "memset_f32", memset)
    monkeypatch.setattr(timing, "Spin", lambda ordinal, us: lambda: None)   # Flush's hold ...
    monkeypatch.setattr(timing, "HOLD_US", 1e9)     # ... which the host-side "kernels" outlast

    class Event:
        def record(self, stream=0):
            self.t = __import__("time").perf_counter()

        def elapsed_ms(self, start):
            return max((self.t - start.t) * 1e3, 1e-6)
    monkeypatch.setattr(launch, "Event", Event)
    monkeypatch.setattr(cache, "get", lambda k, arch: types.SimpleNamespace(compile_seconds=0.25,
                                                                            origin="disk"))
    monkeypatch.setattr(runner, "compile_ahead", lambda kernels, arch: cache.Prefetch([]))

    def gemm(name, a, b, c=None, *, out=None, alpha=1.0, beta=0.0, stream=None, precision=None,
             epilogue=None):
        if out is None:
            out = DeviceArray((a.shape[0], b.shape[1]))
        o = _host_view(out)
        o[...] = (_host_view(a).astype(np.float64) @ _host_view(b)).astype(np.float32)
        if name == wrong:
            o[-1, -1] += 1.0
        return out
    monkeypatch.setattr(api, "run", gemm)
    monkeypatch.setattr(api, "run_choice", lambda choice, a, b, c=None, **kw:
                        gemm(choice.kernel, a, b, c, **kw))

    class FakeBLAS:
        library, version, tf32, cublas_version = "fakeblas", "1.0", "off", ""

        def wrap(self, x):
            return x

        def matmul(self, a, b, out):
            gemm(CUBLAS, a, b, out=out)
    return FakeBLAS()


def test_bench_loop_on_a_simulated_device(monkeypatch, tmp_path):
    names = list(registry.names())[:3]
    blas = _simulated_device(monkeypatch, wrong=names[1])
    monkeypatch.setattr(runner, "find_cublas", lambda prefer, **kw: (blas, "cuBLAS via fakeblas 1.0 (TF32 off)"))
    monkeypatch.setattr(runner, "FULL_CHECK_MAX", 40 * 30 * 20)      # the second shape is sampled
    _HostBuffer.live = 0
    lines = []
    monkeypatch.setattr(runner.Progress, "step", lambda self, label: lines.append(label))
    res = cute_gemm.bench(names, [(40, 30, 20), (70, 90, 50)], layouts="nn,tn", repeats=7,
                          warmup=2, min_repeats=3, max_seconds=5.0, out_dir=tmp_path, plots=False)
    assert _HostBuffer.live == 0                               # every buffer freed
    assert len(lines) == 2 * 2 * (len(names) + 1)
    assert len(res.rows) == 2 * 2 * (len(names) + 1)
    by = {(r.kernel, r.m, r.layout): r for r in res.rows}
    for (m, lay) in ((40, "nn"), (40, "tn"), (70, "nn"), (70, "tn")):
        cub = by[(CUBLAS, m, lay)]
        assert cub.status == "pass" and cub.repeats == 7 and cub.vs_cublas == 1.0
        assert cub.check == ("full" if m == 40 else "sampled 66x66")
        bad = by[(names[1], m, lay)]
        if bad.status != "skip":
            assert bad.status == "FAIL" and bad.median_ms is None and bad.tflops is None
            assert "(%d, %d)" % (m - 1, {40: 30, 70: 90}[m] - 1) in bad.message
        good = by[(names[0], m, lay)]
        assert good.status in ("pass", "skip")
        if good.status == "pass":
            assert good.repeats == 7 and good.compile_s == 0.25 and good.compile_origin == "disk"
            assert good.vs_cublas == pytest.approx(good.tflops / cub.tflops)
            assert good.frac_peak == pytest.approx(good.tflops / peak_tflops(4, 128, 1_000_000))
    assert not res.ok                                          # a FAIL makes the run fail
    assert res.meta["device"]["name"] == "Simulated GPU" and res.meta["driver"] == "13.0"
    assert res.meta["settings"]["rotation"]["40x30x20"] == math.ceil(2 * (1 << 20) / (4 * (800 + 600 + 1200)))
    assert set(res.meta["versions"]) >= {"cute_gemm", "cuda-bindings", "nvrtc", "nvidia-cutlass", "fakeblas"}
    assert load_json(tmp_path / "bench.json").rows == res.rows
    assert read_csv(tmp_path / "bench.csv") == res.rows
    assert "SGEMM ladder" not in (tmp_path / "bench_readme.md").read_text()   # no squares timed


def test_an_interrupted_bench_keeps_and_writes_the_shapes_it_finished(monkeypatch, tmp_path):
    """SIGTERM (a `timeout`) during the second shape: the first shape's rows are kept, summed up
    and written, the second's partial ones dropped, and the run says where it stopped."""
    import os
    import signal
    names = list(registry.names())[:1]
    blas = _simulated_device(monkeypatch)
    monkeypatch.setattr(runner, "find_cublas", lambda prefer, **kw: (blas, "cuBLAS via fakeblas 1.0 (TF32 off)"))
    shape_of = runner._bench_shape
    seen = []

    def once_then_term(result, *args, **kw):
        shape_of(result, *args, **kw)
        seen.append(result.rows[-1].m)
        if result.rows[-1].m == 70:
            os.kill(os.getpid(), signal.SIGTERM)
    monkeypatch.setattr(runner, "_bench_shape", once_then_term)
    before = signal.getsignal(signal.SIGTERM)
    res = cute_gemm.bench(names, [(40, 30, 20), (70, 90, 50), (20, 20, 20)], layouts="nn,tn",
                          repeats=3, warmup=1, min_repeats=3, max_seconds=5.0, out_dir=tmp_path,
                          plots=False, progress=False)
    assert signal.getsignal(signal.SIGTERM) is before          # the handler put back
    assert seen == [40, 40, 70]                                # stopped in the second shape
    assert res.meta["interrupted"] == "after 1 of 3 shapes"
    assert {r.m for r in res.rows} == {40} and len(res.rows) == 2 * 2
    assert load_json(tmp_path / "bench.json").meta["interrupted"] == "after 1 of 3 shapes"
    assert "interrupted after 1 of 3 shapes" in cute_gemm.perf.report.format_header(res)


def test_time_kernel_checks_then_times_on_a_simulated_device(monkeypatch):
    """`cute-gemm run`'s loop: one checked launch, then timing.event_times (one estimate,
    the warm-up, exactly `repeats` timed launches); a wrong kernel is not timed."""
    from cute_gemm import api
    names = list(registry.names())[:2]
    _simulated_device(monkeypatch, wrong=names[1])
    real_run, calls = api.run, []
    monkeypatch.setattr(api, "run", lambda *a, **k: calls.append(a[0]) or real_run(*a, **k))
    _HostBuffer.live = 0
    r = runner.time_kernel(names[0], 40, 30, 20, repeats=4, warmup=2, seed=0)
    assert r["status"] == "pass" and r["check"] == "full" and r["gauge_ratio"] <= 16
    assert r["min_ms"] <= r["ms"] <= r["max_ms"] and r["tflops"] == pytest.approx(tflops(40, 30, 20, r["ms"]))
    assert len(calls) == 1 + 1 + 2 + 4
    calls.clear()
    bad = runner.time_kernel(names[1], 40, 30, 20, repeats=4, seed=0)
    assert bad["status"] == "FAIL" and bad["ms"] is None and bad["tflops"] is None
    assert "(39, 29)" in bad["message"] and len(calls) == 1
    assert _HostBuffer.live == 0                               # inputs and flush buffer freed
    from cute_gemm.base.errors import ShapeLimitError

    def too_big(*a, **k):
        raise ShapeLimitError("needs more shared memory")
    monkeypatch.setattr(api, "run", too_big)                   # the CLI names errors itself
    with pytest.raises(ShapeLimitError):
        runner.time_kernel(names[0], 40, 30, 20)
    assert _HostBuffer.live == 0


def test_overhead_measurement_on_a_simulated_device(monkeypatch):
    """measure_overhead's rounds through timing.wall_us: 200 warm-up calls per method, then
    `calls` per method and round; the raw launch is the function the runtime resolved."""
    from cute_gemm.driver import launch
    _simulated_device(monkeypatch)
    raw = []
    monkeypatch.setattr(launch, "launch", lambda f, *a: raw.append(f))
    monkeypatch.setattr(overhead, "resolve",
                        lambda k, ops, ordinal=None: (registry.Variant("e"), [], "resolved"))
    o = overhead.measure_overhead("naive", calls=10, rounds=3, libraries=())
    assert raw == ["resolved"] * (200 + 3 * 10 * 2)          # (wall_us and host_us per round)
    assert o["entry"] == "e" and o["relayout_copies"] == [] and o["rounds"] == 3
    assert o["run_minus_raw_us"] == pytest.approx(o["run_us"] - o["raw_launch_us"])
    assert "cublas_us" not in o and o["cublas_library"] is None and o["libraries"] == {}
    assert o["meets_target"] == (o["run_minus_raw_us"] <= overhead.OVERHEAD_TARGET_US)


def test_overhead_beside_the_array_libraries_on_a_simulated_device(monkeypatch):
    """With PyTorch and CuPy importable, run() on their arrays is timed beside torch.mm and
    cupy.matmul on the same arrays (interleaved rounds), with the ratios; a library that
    cannot be imported is named with the reason, and its rows are left out."""
    from cute_gemm.driver import launch
    from cute_gemm.perf.report import format_overhead
    _simulated_device(monkeypatch)
    monkeypatch.setattr(launch, "launch", lambda f, *a: None)
    monkeypatch.setattr(overhead, "resolve",
                        lambda k, ops, ordinal=None: (registry.Variant("e"), [], "resolved"))
    rng = np.random.default_rng()
    arrays, calls = [], []

    def array(shape, *a, **k):
        d = DeviceArray.from_host(rng.standard_normal(shape, dtype=np.float32))
        arrays.append(d)
        return d
    torch = types.SimpleNamespace(__version__="2.99", cuda=types.SimpleNamespace(is_available=lambda: True),
                                  randn=array, mm=lambda a, b, out=None: calls.append(("mm", a, b, out)),
                                  addmm=lambda c, a, b, out: calls.append(("addmm", a, b, out)))
    cupy = types.SimpleNamespace(__version__="99.0", float32=np.float32, empty=array,
                                 random=types.SimpleNamespace(standard_normal=array),
                                 matmul=lambda a, b, out: calls.append(("matmul", a, b, out)))
    monkeypatch.setattr(overhead, "_import", lambda name: {"torch": torch, "cupy": cupy}[name])
    o = overhead.measure_overhead("naive", calls=10, rounds=2)
    assert o["libraries"] == {"torch": "2.99", "cupy": "99.0"}
    for key in ("run_torch", "torch_mm", "run_cupy", "cupy_matmul"):
        assert o[f"{key}_us"] > 0 and o[f"{key}_us_min"] <= o[f"{key}_us"]
    assert o["run_torch_over_torch_mm"] == pytest.approx(o["run_torch_us"] / o["torch_mm_us"])
    assert o["run_torch_over_torch_mm_host"] == pytest.approx(o["run_torch_host_us"] / o["torch_mm_host_us"])
    assert o["run_cupy_over_cupy_matmul"] == pytest.approx(o["run_cupy_us"] / o["cupy_matmul_us"])
    assert o["run_over_torch_mm"] == pytest.approx(o["run_us"] / o["torch_mm_us"])
    assert o["run_torch_new_over_torch_mm_new"] == pytest.approx(o["run_torch_new_us"] / o["torch_mm_new_us"])
    assert o["run_torch_inplace_over_torch_addmm_inplace"] == pytest.approx(
        o["run_torch_inplace_us"] / o["torch_addmm_inplace_us"])
    n = 200 + 2 * 10 * 2            # warm-up, then rounds x calls, per method
    by = {kind: [c[1:] for c in calls if c[0] == kind and (kind != "mm" or c[3] is not None)]
          for kind in ("mm", "addmm", "matmul")}
    assert by["mm"] == by["addmm"] == [tuple(arrays[:3])] * n
    assert by["matmul"] == [tuple(arrays[3:6])] * n
    assert [c[1:] for c in calls if c[0] == "mm" and c[3] is None] == [tuple(arrays[:2]) + (None,)] * n
    text = format_overhead(o)
    assert "torch.mm(a, b, out=o)" in text and "on PyTorch tensors" in text and "x cupy.matmul" in text
    assert "torch.mm(a, b) " in text and "torch.addmm(o, a, b, out=o)" in text

    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}")
    monkeypatch.setattr(overhead, "_import", missing)
    o = overhead.measure_overhead("naive", calls=10, rounds=2)
    assert "run_torch_us" not in o and "run_cupy_us" not in o and "run_over_torch_mm" not in o
    assert o["libraries"]["torch"].startswith("not measured (ModuleNotFoundError")
    assert "PyTorch tensors" in format_overhead(o) and "not measured" in format_overhead(o)
    assert format_overhead(o).count("not measured") == 2        # once a library


def test_cli_run_on_a_simulated_device(monkeypatch, capsys):
    from cute_gemm import cli
    names = list(registry.names())[:2]
    _simulated_device(monkeypatch, wrong=names[1])
    monkeypatch.setattr(cli.base, "gpu_unavailable", lambda: None)
    assert cli.main(["run", names[0], "--m", "40", "--n", "30", "--k", "20", "--repeats", "3"]) == 0
    out = capsys.readouterr().out
    assert "M=40 N=30 K=20  median" in out and "TFLOP/s" in out and "(pass)" in out
    assert cli.main(["run", names[1], "--m", "40", "--n", "30", "--k", "20"]) == 1
    out = capsys.readouterr().out
    assert "FAIL: at (39, 29)" in out and "(not timed)" in out and "TFLOP/s" not in out


def test_a_problem_that_raises_is_a_failed_row_and_the_bench_goes_on():
    """perf.peers.case: an error in one problem of a bench against PyTorch is recorded in its
    row (and logged), once, and the next problem still runs; main() then fails the command."""
    from cute_gemm.perf import peers
    rows, lines = [], []
    with peers.case(rows, {"m": 1}, lines.append):
        raise cute_gemm.CuteGemmError("no kernel")
    with peers.case(rows, {"m": 2}, lines.append) as row:
        rows.append(row)                       # (Session.add appended it, then the log line failed)
        raise KeyError("call_vs_peer")
    with peers.case(rows, {"m": 3}, lines.append) as row:
        rows.append(dict(row, ok=True))
    assert [(r["m"], r["ok"]) for r in rows] == [(1, False), (2, False), (3, True)]
    assert rows[0]["error"] == "CuteGemmError: no kernel" and rows[0]["gauge_ratio"] == float("inf")
    assert len(lines) == 2 and "m=2" in lines[1] and "KeyError" in lines[1]


def test_an_interrupted_peer_bench_keeps_its_rows(tmp_path):
    """The PyTorch benches (batched, linear, fp8): Ctrl-C or SIGTERM ends the Session's block
    quietly (its __exit__ swallows it), and finish() sums up and writes the rows measured,
    saying where it stopped; another exception still propagates."""
    import contextlib
    import json
    import types
    from cute_gemm.perf import peers
    s = peers.Session.__new__(peers.Session)
    contextlib.ExitStack.__init__(s)
    logged = []
    s.rows = [{"precision": "fp32", "ok": True, "call": 1.5, "burst": 1.25}]
    s.interrupted, s.ratios, s.log, s.clocks = "", {"": ("a", "b")}, logged.append, {}
    s.tool, s.seed, s.count = "cute-gemm bench --size batched", 7, 3
    s.info, s.torch = types.SimpleNamespace(name="Simulated GPU"), types.SimpleNamespace(__version__="0")
    assert s.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None) is True   # (no device: no __enter__)
    assert s.interrupted == "after 1 rows"
    res = s.finish(("fp32",), lambda x: f"{x['call']['geomean']:.2f}", "doc", str(tmp_path), "b.json")
    assert res["interrupted"] == "after 1 rows" and res["summary"]["fp32"]["call"]["geomean"] == 1.5
    assert json.loads((tmp_path / "b.json").read_text())["interrupted"] == "after 1 rows"
    assert any("interrupted" in line for line in logged)
    assert not s.__exit__(ValueError, ValueError("a bug"), None)       # anything else propagates

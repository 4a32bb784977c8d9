"""gemm()'s first call measured in fresh processes (perf/first_call.py): its figures reach the
bench JSON, the table and the sweep summary; the children say why without a GPU and compile
on empty driver caches."""
from __future__ import annotations

import subprocess

import pytest

import cute_gemm
from cute_gemm.perf.report import format_table
from cute_gemm.perf.schema import CUBLAS, BenchResult, Row, load_json, write_json


# ---- gemm()'s first call in fresh processes -------------------------------------------------------
FIRST = {"shape": [4096, 4096, 4096],
         "quick": {"import_s": 0.21, "first_s": 1.31, "first_kernels": ["v9_warptile"],
                   "pick": "cute_pipelined", "pick_s": 9.4, "calls": 2000},
         "wait": {"import_s": 0.2, "first_s": 9.9, "first_kernels": ["cute_pipelined"],
                  "pick": "cute_pipelined", "pick_s": 0.0, "calls": 1},
         "warm": {"error": "NoDeviceError: no GPU"}}


def test_first_call_figures_reach_the_json_the_table_and_the_sweep_summary(tmp_path):
    from cute_gemm.perf.report import format_first_call, sweep_markdown
    text = format_first_call(FIRST)
    assert "answered in 1.31 by v9_warptile; the pick (cute_pipelined) ran from 9.4" in text
    assert "answered in 9.90 by cute_pipelined" in text and "warm   not measured (NoDeviceError" in text
    rows = [Row(name, "cute", m, m, m, median_ms=1.0, tflops=10.0, vs_cublas=v, status="pass")
            for m in (256, 512) for name, v in ((CUBLAS, 1.0), ("auto", 0.9))]
    res = BenchResult({"device": {"name": "GPU"}}, rows, first_call=FIRST)
    write_json(res, tmp_path / "b.json")
    back = load_json(tmp_path / "b.json")
    assert back.first_call == FIRST
    assert text in format_table(back)
    assert text in "\n".join(sweep_markdown(back))


def test_first_call_children_report_why_without_a_gpu(monkeypatch, tmp_path):
    """On this machine each fresh process fails to find a GPU: every case says why, in one
    line, and the empty caches made for them are gone."""
    from cute_gemm.perf import first_call
    monkeypatch.setattr(first_call.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "fc"))
    if cute_gemm.gpu_available():
        pytest.skip("a GPU is usable here: the children would measure")
    fc = first_call.measure_first_call((8, 8, 8), timeout=60)
    assert fc["shape"] == [8, 8, 8] and set(fc) == {"shape", *first_call.MODES}
    assert all("error" in fc[m] and "\n" not in fc[m]["error"] for m in first_call.MODES)
    assert not (tmp_path / "fc").exists()


def test_first_call_children_compile_on_empty_driver_caches(monkeypatch, tmp_path):
    """NVRTC 13 keeps its optimizer's and ptxas's output in the driver's compute cache: a
    cold case that shared the machine's would time half a compile. Each cold case gets an
    empty one of its own (warm: wait's, as a second process of that user would)."""
    from cute_gemm.perf import first_call
    monkeypatch.setattr(first_call.tempfile, "mkdtemp", lambda prefix: str(tmp_path / "fc"))
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "user_cache"))
    seen = {}

    def run(argv, env, **kw):
        mode = "quick" if "CUTE_GEMM_FIRST_CALL" not in env else (
            "warm" if "wait" in seen else "wait")
        seen[mode] = (env["CUDA_CACHE_PATH"], env["CUTE_GEMM_CACHE_DIR"])
        return subprocess.CompletedProcess(argv, 0, stdout='{"first_s": 1.0}\n', stderr="")

    monkeypatch.setattr(first_call.subprocess, "run", run)
    fc = first_call.measure_first_call((8, 8, 8), timeout=60)
    assert all(fc[m] == {"first_s": 1.0} for m in first_call.MODES)
    nv = {m: seen[m][0] for m in seen}
    assert set(seen) == {"quick", "wait", "warm"} and nv["quick"] != nv["wait"] == nv["warm"]
    assert all(p.startswith(str(tmp_path / "fc")) and p.startswith(seen[m][1]) for m, p in nv.items())

"""The command line a newcomer meets: one-line errors with exit status 2 (never a traceback),
`check` that does what it can without a GPU, truthful compile tables, progress on stderr,
and layout pictures with a gallery.

Every test takes the no-GPU paths (CUTE_GEMM_FORCE_NO_GPU), so they run the same on a GPU
host; compiles are limited to the smallest kernels, in a private cache where the result of
a compile matters.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cute_gemm
from cute_gemm import cli, registry
from cute_gemm.build import cache
from cute_gemm.cli import base as cli_base
from cute_gemm.build import compile as comp
from cute_gemm.base.errors import CompileError, CudaError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setenv("CUTE_GEMM_FORCE_NO_GPU", "1")


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# ---- bad arguments: one line on stderr, exit 2 -------------------------------------------------

BAD = {
    "arch": (["compile", "naive", "--arch", "hopper"], "hopper"),
    "negative M": (["run", "naive", "--m", "-5"], "--m"),
    "zero repeats": (["run", "naive", "--repeats", "0"], "--repeats"),
    "layouts shape": (["layouts", "cute_gmem", "--shape", "axbxc"], "MxNxK"),
    "check shape": (["check", "--shape", "1x2"], "MxNxK"),
    "unknown kernel run": (["run", "nope"], "unknown kernel 'nope'"),
    "unknown kernel check": (["check", "nope"], "unknown kernel 'nope'"),
    "unknown command": (["frob"], "frob"),
    "family": (["list", "--family", "x"], "--family"),
    "bench size": (["bench", "--size", "foo"], "bad size"),
    "bench layouts": (["bench", "--layouts", "xy"], "layout"),
    "bench overhead without GPU": (["bench", "--overhead-only"], "GPU"),
    "run without GPU": (["run", "naive"], "GPU"),
    "not a CuTe kernel": (["layouts", "naive"], "not a CuTe kernel"),
    "thread out of range": (["layouts", "cute_gmem", "--thread", "999"], "--thread 999"),
}


@pytest.mark.parametrize("argv,needle", BAD.values(), ids=BAD.keys())
def test_bad_arguments_give_one_line_and_status_2(capsys, argv, needle):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("cute-gemm") and "error:" in lines[0]
    assert needle in lines[0]


def test_unknown_kernel_is_reported_before_the_missing_gpu(capsys):
    rc, _, err = _run(capsys, "run", "nope")
    assert rc == 2 and "unknown kernel" in err and "GPU" not in err


def test_arch_nvrtc_cannot_build_is_one_line(capsys):
    rc, out, err = _run(capsys, "compile", "naive", "--arch", "sm_99")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "cannot compile for sm_99" in err


def test_bench_readme_of_a_missing_file(capsys, tmp_path):
    rc, _, err = _run(capsys, "bench", "--readme", str(tmp_path / "none.json"))
    assert rc == 2 and len(err.splitlines()) == 1 and "none.json" in err


def test_png_without_matplotlib_writes_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib -> ImportError
    out_dir = tmp_path / "pics"
    rc, _, err = _run(capsys, "layouts", "cute_gmem", "--format", "png", "--out", str(out_dir))
    assert rc == 2 and len(err.splitlines()) == 1 and "matplotlib" in err
    assert not out_dir.exists()


# ---- errors raised inside a command ------------------------------------------------------------

def test_cute_gemm_error_escaping_a_command_is_one_line(capsys, monkeypatch):
    def boom():
        raise CudaError("cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY\nsecond line")
    monkeypatch.setattr(cache, "info", boom)
    rc, _, err = _run(capsys, "cache")
    assert rc == 2
    assert err == "cute-gemm: error: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY\n"


def test_compile_error_escaping_a_command_points_at_the_log(capsys, monkeypatch):
    def boom():
        raise CompileError("naive", ["-arch=sm_90"], "line 1: error: boom\n" * 50, "NVRTC_ERROR_COMPILATION")
    monkeypatch.setattr(cache, "info", boom)
    rc, _, err = _run(capsys, "cache")
    assert rc == 2 and len(err.splitlines()) == 1
    log = Path(err.rsplit("full log: ", 1)[1].strip())
    assert "error: boom" in log.read_text()


@pytest.fixture
def missing_cutlass(monkeypatch, tmp_path):
    from cute_gemm.build import paths
    monkeypatch.setenv("CUTE_GEMM_CUTLASS_INCLUDE", str(tmp_path / "no-such-folder"))
    paths.header_dirs.cache_clear()
    yield
    paths.header_dirs.cache_clear()     # read again at the next call, the variable restored


def test_missing_headers_are_a_named_error_not_a_bug(capsys, missing_cutlass):
    # a header wheel that is not installed (or an override that is no folder) is the user's
    # set-up, named with the variable, before any compile: not "internal error ... a bug"
    with pytest.raises(cute_gemm.CuteGemmError, match="CUTE_GEMM_CUTLASS_INCLUDE"):
        cute_gemm.compile_kernel("cute_smem", arch="sm_90")
    rc, _, err = _run(capsys, "compile", "cute_smem", "--arch", "sm_90", "--no-progress")
    assert rc != 0 and len(err.splitlines()) == 1, err
    assert "CUTE_GEMM_CUTLASS_INCLUDE=" in err and "is not a directory" in err
    assert "internal error" not in err


@pytest.fixture
def nvrtc_missing(monkeypatch):
    from cuda.bindings import nvrtc

    def unloadable():   # what the bindings raise where libnvrtc is not installed
        raise RuntimeError('Failure finding "libnvrtc.so.13": No such file: libnvrtc.so.13')
    monkeypatch.setattr(nvrtc, "nvrtcVersion", unloadable)
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    comp._nvrtc.cache_clear()
    yield
    comp._nvrtc.cache_clear()


def test_missing_nvrtc_is_a_named_error_not_a_bug(capsys, nvrtc_missing):
    with pytest.raises(cute_gemm.NvrtcNotFound, match="nvidia-cuda-nvrtc"):
        comp.run_nvrtc(registry.get("naive"), comp.read_source(registry.get("naive")),
                       comp.options(registry.get("naive"), "sm_90"), want_ptx=False)
    rc, _, err = _run(capsys, "compile", "naive", "--arch", "sm_90", "--no-progress")
    assert rc != 0 and len(err.splitlines()) == 1, err
    assert "NVRTC cannot be loaded" in err and "internal error" not in err


def test_a_bug_is_one_line_unless_debugging(capsys, monkeypatch):
    monkeypatch.setattr(cache, "info", lambda: {}["missing"])
    rc, _, err = _run(capsys, "cache")
    assert rc == 1 and len(err.splitlines()) == 1 and "internal error: KeyError" in err
    monkeypatch.setenv("CUTE_GEMM_DEBUG", "1")
    with pytest.raises(KeyError):
        cli.main(["cache"])


def _subprocess(*argv, env_extra=None):
    env = {**os.environ, "CUTE_GEMM_FORCE_NO_GPU": "1", **(env_extra or {})}
    # the child imports the cute_gemm this process tests (a checkout or the installed wheel)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(cute_gemm.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "cute_gemm", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT.parent, timeout=120)


def test_python_m_cute_gemm_exit_status_and_no_traceback():
    r = _subprocess("run", "naive", "--m", "-5")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("cute-gemm run: error: argument --m") and r.stderr.count("\n") == 1
    r = _subprocess("bench", "--overhead-only")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    r = _subprocess("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"cute-gemm {cute_gemm.__version__}"


# ---- conventions -----------------------------------------------------------------------------------

def test_version_and_help(capsys):
    rc, out, _ = _run(capsys, "--version")
    assert rc == 0 and out.strip() == f"cute-gemm {cute_gemm.__version__}"
    rc, out, _ = _run(capsys)
    assert rc == 0 and "COMMAND" in out


def test_every_option_has_help():
    import argparse
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {a.option_strings or a.dest}" for name, p in sub.choices.items()
               for a in p._actions
               if not isinstance(a, argparse._HelpAction) and not a.help]
    assert not missing, missing


def test_list_json_is_the_registry(capsys):
    rc, out, _ = _run(capsys, "list", "--json")
    assert rc == 0
    recs = json.loads(out)
    assert [r["name"] for r in recs] == list(registry.names())
    smem = next(r for r in recs if r["name"] == "cute_smem")
    assert smem["tile"] == list(registry.get("cute_smem").tile) and smem["entries"]


def test_kernel_and_variant_repr_are_one_short_line():
    text = repr(cute_gemm.kernels())
    assert "\n" not in text
    k = registry.get("cute_pipelined")
    assert repr(k).startswith("<Kernel cute_pipelined (cute, cute/c3_pipelined.cu)")
    assert len(repr(k)) < 120 and all(len(repr(v)) < 160 for v in k.variants)


def test_typed_package_and_license():
    assert (Path(cute_gemm.__file__).parent / "py.typed").is_file()
    assert "Redistribution and use in source and binary forms" in (ROOT / "LICENSE").read_text()


# ---- check without a GPU ---------------------------------------------------------------------------

def test_check_without_gpu_compiles_and_says_what_was_not_run(capsys):
    rc, out, _ = _run(capsys, "check", "naive", "--no-progress")
    assert rc == 0
    assert "naive" in out and "sm_90" in out
    assert "NOT RUN: the GPU cross-check" in out
    assert "PASS" in out.splitlines()[-1]


def test_check_without_gpu_json_and_layout_self_checks(capsys):
    rc, out, _ = _run(capsys, "check", "--kernels", "naive", "--arch", "sm_80", "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["gpu"] is False and rep["ok"] is True and rep["arch"] == "sm_80"
    assert [r["entry"] for r in rep["compile"]] == ["naive"]
    assert rep["compile"][0]["registers"] > 0 and rep["compile"][0]["problem"] is None
    assert any("cross-check" in s for s in rep["not_run"])


def test_a_check_on_a_gpu_plans_every_launch_to_compile_first(monkeypatch):
    """`cute-gemm check` on a GPU compiles what its checks launch side by side first: each
    kernel's entry points for fresh operands, in each precision it computes into float32, one
    job per entry point (the unit a launch compiles), the target the device runs; a shape a
    kernel cannot take plans nothing (the check reports it)."""
    import stub_driver
    from cute_gemm import check
    from cute_gemm.driver import launch
    stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    jobs = check.launch_jobs(None, check.DEFAULT_SHAPES + ((0, 5, 7), (0, 5, 0), (3, 0, 2)), "tn")
    assert len(jobs) > 50 and len(set(jobs)) == len(jobs)
    for name, arch, ptx, (entry,) in jobs:
        k = registry.get(name)
        assert entry in k.entries and arch == k.target(90) and not ptx
    names = {j[0] for j in jobs}
    assert {"cute_pipelined", "cute_mma_sm80", "cute_wgmma_ws", "cute_wgmma_ws_fp8"} <= names
    one = check.launch_jobs(["cute_mma_sm80", "auto"], [(129, 67, 33)], "nn")
    assert {j[0] for j in one} == {"cute_mma_sm80"}
    assert {p for p in ("tf32", "bf16", "fp16")
            if any(f"_{p}_" in j[3][0] for j in one)} == {"tf32", "bf16", "fp16"}


def test_layout_self_checks_pass_and_can_fail():
    import dataclasses
    from cute_gemm.cli.layouts import self_check
    n, problems = self_check(registry.get("cute_gmem"))
    assert n > 0 and problems == []
    fake = dataclasses.replace(registry.get("cute_gmem"), name="cute_none", source="cute/none.cu")
    assert "no layout recipe" in self_check(fake)[1][0]


def test_check_without_gpu_fails_on_a_compile_error(capsys, tmp_cache, monkeypatch):
    def broken(kernel, source, opts, want_ptx):
        raise CompileError(kernel.name, opts, "kernel.cu(3): error: this_is_not_cpp", "NVRTC_ERROR_COMPILATION")
    monkeypatch.setattr(comp, "run_nvrtc", broken)
    monkeypatch.setattr("cute_gemm.cli.compile.unsupported_arch", lambda arch: None)
    rc, out, err = _run(capsys, "check", "naive", "--no-progress")
    assert rc == 1
    assert "FAIL" in out.splitlines()[-1]
    assert "naive (sm_90): NVRTC failed" in err and "full log:" in err


def test_check_json_with_a_gpu_is_strict_json(capsys, monkeypatch):
    import numpy as np
    from cute_gemm import check
    rep = check.CheckReport([check.ShapeReport(
        (3, 2, 1), 1.0, 0.0, False,
        [check.KernelResult("naive", "pass", 0.25, 1e-8), check.KernelResult("cute_gmem", "error",
                                                                            message="CUDA_ERROR_X")],
        ["naive", "cute_gmem"], np.array([[0.0, np.nan], [np.nan, np.nan]]))])
    seen = {}

    def fake_cross_check(**kw):
        seen.update(kw)
        return rep
    from cute_gemm.build import cache
    ahead = []

    class Prefetch:                    # what the check compiles first, and that it closes it
        def __init__(self, jobs):
            ahead.append(jobs)

        def close(self):
            ahead.append("closed")
    monkeypatch.setattr(cli_base, "gpu_unavailable", lambda: None)
    monkeypatch.setattr(check, "cross_check", fake_cross_check)
    monkeypatch.setattr(check, "launch_jobs", lambda names, shapes, layout: [(names, shapes, layout)])
    monkeypatch.setattr(cache, "Prefetch", Prefetch)
    rc, out, _ = _run(capsys, "check", "naive", "cute_gmem", "--shape", "3x2x1", "--json")
    assert rc == 1                                         # an error result fails the check
    assert seen["kernels"] == ["naive", "cute_gmem"] and seen["shapes"] == [(3, 2, 1)]
    assert ahead == [[(["naive", "cute_gmem"], [(3, 2, 1)], "nn")], "closed"]
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    res = doc["shapes"][0]["results"]
    assert doc["gpu"] is True and res[1]["status"] == "error" and res[1]["gauge_ratio"] is None
    assert doc["shapes"][0]["pairwise_max_abs"]["matrix"] == [[0.0, None], [None, None]]


# ---- compile: truthful columns, progress ----------------------------------------------------------

def test_compile_table_says_cached_and_not_the_original_seconds(capsys, tmp_cache, monkeypatch):
    real = comp.run_nvrtc

    def recorded_slow(kernel, source, opts, want_ptx):   # the cache records 100 s for this build
        cubin, ptx, log, secs = real(kernel, source, opts, want_ptx)
        return cubin, ptx, log, secs + 100.0
    monkeypatch.setattr(comp, "run_nvrtc", recorded_slow)
    rc, out, _ = _run(capsys, "compile", "naive", "--arch", "sm_90", "--jobs", "1", "--json")
    first = json.loads(out)
    assert rc == 0 and first[0]["origin"] == "compiled"
    cache.clear_memory()                                 # the next run reads the disk entry
    rc, out, _ = _run(capsys, "compile", "naive", "--arch", "sm_90", "--jobs", "1")
    row = out.splitlines()[1].split()
    assert rc == 0 and row[:3] == ["naive", "sm_90", "cached"]
    assert float(row[3]) < 50.0                          # the lookup, not the recorded 100 s


def test_compile_progress_on_stderr_only_when_asked(capsys):
    rc, out, err = _run(capsys, "compile", "naive", "--arch", "sm_90", "--jobs", "1", "--progress")
    assert rc == 0 and out.splitlines()[0].startswith("kernel")
    assert "[1/1]" in err and "naive" in err
    rc, out, err = _run(capsys, "compile", "naive", "--arch", "sm_90", "--no-progress")
    assert rc == 0 and err == ""          # capsys is no terminal: no progress unless asked


def test_compile_in_parallel_processes_reports_each_job(capsys):
    rc, out, err = _run(capsys, "compile", "naive", "flat1d", "--arch", "sm_90", "--jobs", "2",
                        "--progress")
    assert rc == 0
    assert "[1/2]" in err and "[2/2]" in err
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["naive", "flat1d"]


def test_compile_spreads_a_kernel_that_would_bound_the_run(monkeypatch):
    """A whole kernel holding more entry points than a worker's share runs as one job per
    entry point (the cubins a launch compiles alone), unless it is cached whole; with every
    kernel and 2 workers none does."""
    from cute_gemm.cli import compile as cc
    every = [(k.name, "sm_90", None) for k in registry.compiled()]
    assert all(got == [j] for j, got in cc.spread(every, 2).items())
    big = ("cute_mma_sm80_64x64", "sm_90", None)
    monkeypatch.setattr(cc.cache, "lookup", lambda k, arch: None)
    got = cc.spread([big, ("naive", "sm_90", None)], 16)
    assert got[big] == [(big[0], "sm_90", (e,)) for e in registry.get(big[0]).entries]
    assert got[("naive", "sm_90", None)] == [("naive", "sm_90", None)]
    monkeypatch.setattr(cc.cache, "lookup", lambda k, arch: object())     # cached whole
    assert cc.spread([big], 16)[big] == [big]


# ---- layouts --------------------------------------------------------------------------------------

def test_layouts_text_is_a_short_summary_and_full_has_no_repeated_lines(capsys):
    rc, out, _ = _run(capsys, "layouts")
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) < 12 * len(registry.kernels("cute")) and max(map(len, lines)) < 200
    rc, full, _ = _run(capsys, "layouts", "cute_gmem", "--full")
    assert rc == 0 and "thread 37 owns" in full
    flines = full.splitlines()
    repeated = [a for a, b in zip(flines, flines[1:]) if a == b and a.startswith("(")]
    assert not repeated


def test_layouts_gallery_links_every_picture(capsys, tmp_path):
    import re
    rc, out, _ = _run(capsys, "layouts", "cute_gmem", "cute_smem", "--format", "svg",
                      "--out", str(tmp_path))
    assert rc == 0 and "index.html" in out
    html = (tmp_path / "index.html").read_text()
    pictures = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.svg")}
    linked = set(re.findall(r'<img src="([^"]+)"', html))
    assert pictures and linked == pictures                 # relative links, every picture once
    assert html.count("<figcaption>") == len(pictures)
    assert html.index('id="cute_gmem"') < html.index('id="cute_smem"')


# ---- check: quick by default, everything with --all ----------------------------------------------

@pytest.fixture
def fake_compiles(monkeypatch, tmp_cache):
    """NVRTC replaced in this process (so --jobs 1): records the entry points of each
    compile and reports 32 registers for each; the layout self-checks recorded, not run."""
    runs: list[tuple[str, tuple[str, ...]]] = []

    def run_nvrtc(kernel, source, opts, want_ptx):
        wanted = tuple(re.findall(r"^#define CG_WANT_(\w+) 1$", source.split("#line 1")[0], re.M))
        runs.append((kernel.name, wanted))
        log = "".join(f"ptxas info    : Compiling entry function '{e}' for 'sm_90'\n"
                      "ptxas info    : Used 32 registers\n" for e in wanted or kernel.entries)
        return b"CUBIN " + " ".join(opts).encode(), None, log, 0.0
    monkeypatch.setattr(comp, "run_nvrtc", run_nvrtc)
    monkeypatch.setattr("cute_gemm.cli.compile.unsupported_arch", lambda arch: None)
    checked: list[str] = []

    def self_check_all(names):
        checked.extend(names)
        return [{"kernel": n, "layouts": 1, "problems": []} for n in names]
    monkeypatch.setattr("cute_gemm.cli.check.self_check_all", self_check_all)
    return runs, checked


def test_check_compiles_one_entry_point_per_kernel_source(capsys, fake_compiles):
    runs, checked = fake_compiles
    rc, out, _ = _run(capsys, "check", "--jobs", "1", "--json")
    doc = json.loads(out)
    sources = {k.source for k in registry.compiled()}
    assert rc == 0 and doc["ok"] and doc["all"] is False
    assert len(runs) == len(sources) and all(len(w) <= 1 for _, w in runs)
    assert len({registry.find(n).source for n, _ in runs}) == len(sources)
    assert doc["entries"]["compiled"] == len(sources) < doc["entries"]["all"]
    # the layouts of one CuTe kernel per source
    cute_sources = {k.source for k in registry.kernels("cute") if k.gemm_of is None}
    assert len(checked) == len(cute_sources)
    # the same count as `cute-gemm list`, the composed kernels' GEMM apart
    assert doc["kernels"]["registered"] == list(registry.names())
    assert doc["kernels"]["internal"] == ["cute_3xtf32_gemm"]
    assert any("check --all` adds" in s for s in doc["not_run"])


def test_check_text_says_what_it_counts_and_what_all_adds(capsys, fake_compiles):
    rc, out, _ = _run(capsys, "check", "--jobs", "1", "--no-progress")
    assert rc == 0
    assert f"kernels: {len(registry.names())} registered kernels (`cute-gemm list`)" in out
    assert "one entry point per kernel source" in out
    assert "NOT RUN: `cute-gemm check --all` adds" in out


def test_check_all_compiles_every_entry_point_with_progress(capsys, fake_compiles):
    runs, checked = fake_compiles
    rc, out, err = _run(capsys, "check", "naive", "v4_float4", "cute_gmem", "--all", "--jobs", "1")
    assert rc == 0
    # each the whole kernel: its own entry points
    assert sorted(runs) == sorted((n, registry.get(n).entries) for n in ("naive", "v4_float4", "cute_gmem"))
    assert checked == ["cute_gmem"] and "NOT RUN: `cute-gemm check --all`" not in out
    assert "[3/3]" in err          # --all: progress even when stderr is no terminal


def test_list_fits_the_terminal_and_agrees_with_check(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    rc, out, _ = _run(capsys, "list")
    lines = out.splitlines()
    assert rc == 0 and max(map(len, lines)) < 80
    assert f"{len(registry.names())} registered kernels" in out and "cute_3xtf32_gemm" in out
    rc, out, _ = _run(capsys, "list", "--wide")
    longest = max(len(k.summary) for k in registry.kernels())
    assert rc == 0 and max(map(len, out.splitlines())) > longest


# ---- papercuts a new user met ------------------------------------------------------------------------

def test_help_names_every_command_and_bench_compares_at_the_same_precision(capsys):
    rc, out, _ = _run(capsys, "--help")
    assert rc == 0
    assert "tune" in out.split("\n", 3)[2]                  # the docstring's list of commands
    assert all(f"    {c}" in out for c in ("list", "run", "check", "compile", "cache", "bench",
                                            "layouts", "tune"))
    assert "cuBLAS fp32" not in out and "cuBLAS at the same precision" in out
    rc, out, _ = _run(capsys, "bench", "--help")
    assert rc == 0 and "same precision" in out and "--json" in out


def test_tune_show_is_one_short_line_per_problem(capsys):
    from cute_gemm.perf.tune import format_table
    from cute_gemm.select import autotable
    t = autotable.read(next(autotable.SHIPPED_DIR.glob("*.json")))
    text = format_table(t)
    lines = text.splitlines()
    assert max(map(len, lines)) < 240 and len(lines) == len(t.rows) + 4
    r = sorted(t.rows, key=lambda r: (r.precision, r.layout, r.m * r.n * r.k))[0]
    assert f"{r.winner} " in lines[1] and f"of {len(r.times)} candidates ran" in lines[1]
    rc, out, _ = _run(capsys, "tune", "--show", "--json")
    rows = json.loads(out)["tables"][0]["rows"]
    assert rc == 0 and rows and rows[0]["times"]              # every candidate's time


def test_bench_json_prints_the_results(capsys, monkeypatch):
    from cute_gemm.cli import bench as bench_cli
    from cute_gemm.perf.schema import SCHEMA, BenchResult
    res = BenchResult({"device": "simulated"}, [], None, None)
    monkeypatch.setattr(cli_base, "gpu_unavailable", lambda: None)
    monkeypatch.setattr(bench_cli, "bench", lambda *a, **kw: res)
    rc, out, _ = _run(capsys, "bench", "naive", "--size", "64", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["schema"] == SCHEMA and doc["meta"] == {"device": "simulated"}


def test_layouts_json_and_svg_by_default_with_out(capsys, tmp_path):
    rc, out, _ = _run(capsys, "layouts", "cute_gmem", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["kernels"][0]["kernel"] == "cute_gmem"
    items = [it for s in doc["kernels"][0]["sections"] for it in s["items"]]
    assert items and all(it["layout"] for it in items)
    rc, out, _ = _run(capsys, "layouts", "cute_gmem", "--out", str(tmp_path), "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["format"] == "svg" and (tmp_path / "index.html").exists()
    assert doc["kernels"][0]["files"] and all(f.endswith(".svg") for f in doc["kernels"][0]["files"])
    rc, out, _ = _run(capsys, "layouts", "--help")
    assert "slow" in out


def test_compile_with_every_row_skipped_exits_2(capsys, monkeypatch):
    monkeypatch.setattr("cute_gemm.cli.compile.unsupported_arch", lambda arch: None)
    rc, out, err = _run(capsys, "compile", "cute_wgmma", "--arch", "sm_80", "--no-progress")
    assert rc == 2 and "skipped" in out
    assert err.count("\n") == 1 and "nothing was compiled" in err and "needs sm_90a" in err


def test_zero_sized_problems_are_accepted(capsys, monkeypatch):
    rc, out, err = _run(capsys, "run", "naive", "--m", "0", "--k", "7")
    assert rc == 0 and "empty problem" in out and err == ""
    seen = {}
    monkeypatch.setattr(cli_base, "gpu_unavailable", lambda: None)
    monkeypatch.setattr("cute_gemm.check.cross_check",
                        lambda **kw: seen.update(kw) or __import__("cute_gemm.check").check.CheckReport())
    monkeypatch.setattr("cute_gemm.check.launch_jobs", lambda *a: [])      # (no device to plan on)
    rc, _, _ = _run(capsys, "check", "naive", "--shape", "0x5x0")
    assert rc == 0 and seen["shapes"] == [(0, 5, 0)]


def test_unwritable_cache_is_one_clean_warning_line(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    r = _subprocess("compile", "naive", "flat1d", "--arch", "sm_90", "--jobs", "2", "--no-progress",
                    env_extra={"CUTE_GEMM_CACHE_DIR": str(not_a_dir)})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr                     # once, from two worker processes
    assert lines[0].startswith("cute-gemm: warning: cannot write the cubin cache")
    assert "CacheWarning" not in r.stderr and "warnings.warn" not in r.stderr

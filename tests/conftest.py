"""Shared fixtures. GPU tests are marked `gpu` and skipped with a reason when no CUDA
driver/device is usable; CPU tests (compile, cache, registry, validation) always run.

The run gets its own cubin cache (a temporary dir, removed at the end) unless
CUTE_GEMM_CACHE_DIR is set: tests must not fill the user's ~/.cache, and every test of
the run shares it, so no (kernel, arch) is compiled twice. Tests marked
`compiles(name, arch[, entries=...])` have that kernel (or those of its entry points) compiled ahead, by a pool of processes started
when collection ends (CUTE_GEMM_TEST_JOBS sets its size, 0 turns it off); they run last,
so the rest of the suite overlaps the pool.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

import cute_gemm

@pytest.fixture
def script():
    """load(name): the module scripts/<name>.py, loaded from its file; skips where scripts/
    is not there (the installed package ships none)."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
        if not path.exists():
            pytest.skip("scripts/ is not shipped with the installed package")
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return load


_TMP_CACHE = pytest.StashKey[str]()
_PREFETCH = pytest.StashKey[object]()


def _gpu_state() -> tuple[str | None, str]:
    """(why the GPU tests skip, None with a GPU; the driver's words for it, said once in the
    report's header rather than on every skipped line)."""
    if os.environ.get("CUTE_GEMM_FORCE_NO_GPU"):
        return "CUTE_GEMM_FORCE_NO_GPU is set", ""
    try:
        from cute_gemm import driver
        driver.init()
    except cute_gemm.NoDeviceError as e:
        return "no CUDA GPU on this machine", str(e).splitlines()[0]
    return None, ""


GPU_SKIP_REASON, _NO_GPU_WHY = _gpu_state()


def pytest_configure(config):
    # gemm()'s tuning on first use times every candidate of each new problem: the tests
    # check the kernels and the model's picks; tests/test_firstuse*.py turn it on
    os.environ.setdefault("CUTE_GEMM_TUNE", "off")
    if not os.environ.get("CUTE_GEMM_CACHE_DIR"):
        tmp = tempfile.mkdtemp(prefix="cute_gemm_tests_")
        config.stash[_TMP_CACHE] = tmp
        os.environ["CUTE_GEMM_CACHE_DIR"] = os.path.join(tmp, "cubins")


def pytest_report_header(config):
    where = "temporary, removed after the run" if _TMP_CACHE in config.stash else "from CUTE_GEMM_CACHE_DIR"
    lines = [f"cute_gemm cubin cache: {os.environ.get('CUTE_GEMM_CACHE_DIR')} ({where})"]
    if GPU_SKIP_REASON:
        lines.append(f"GPU tests skip: {GPU_SKIP_REASON}" + (f" ({_NO_GPU_WHY})" if _NO_GPU_WHY else ""))
    return lines


def pytest_collection_modifyitems(config, items):
    # tests that wait on the compile pool go last (stable sort): the others run meanwhile
    items.sort(key=lambda item: item.get_closest_marker("compiles") is not None)
    if hasattr(config, "workerinput"):      # an xdist worker (its env var comes later)
        # free memory is the device's: the other workers' allocations move it by 100s of MiB
        alone = pytest.mark.skip(reason="measures the whole GPU's free memory: run without -n")
        for item in items:
            if "whole_device" in item.keywords:
                item.add_marker(alone)
    if GPU_SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session):
    config = session.config
    n = os.environ.get("CUTE_GEMM_TEST_JOBS", "").strip()
    # an xdist worker collects every test: one pool per worker would oversubscribe the CPUs
    if config.option.collectonly or n == "0" or hasattr(config, "workerinput"):
        return
    # (not for a test that will be skipped: its compile would only hold the pool at the end)
    jobs = [(m.args[0], m.args[1], m.kwargs.get("ptx", False), m.kwargs.get("entries"))
            for item in session.items if not _skipped(item) for m in item.iter_markers("compiles")]
    if len(jobs) >= 2:      # for a single compile, spawning a worker costs more than it saves
        from cute_gemm.build import cache
        config.stash[_PREFETCH] = cache.Prefetch(jobs, int(n) if n else None)


def _skipped(item) -> bool:
    """Whether a skip or a true skipif condition (a bool) marks the test."""
    return (item.get_closest_marker("skip") is not None
            or any(m.args and m.args[0] is True for m in item.iter_markers("skipif")))


def pytest_sessionfinish(session):
    pf = session.config.stash.get(_PREFETCH, None)
    if pf is not None:
        pf.close()


def pytest_unconfigure(config):
    tmp = config.stash.get(_TMP_CACHE, None)
    if tmp is not None:
        os.environ.pop("CUTE_GEMM_CACHE_DIR", None)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(autouse=True)
def _compiled_ahead(request):
    """A `compiles(name, arch)` test starts once the pool has that kernel on disk."""
    pf = request.config.stash.get(_PREFETCH, None)
    if pf is not None:
        for m in request.node.iter_markers("compiles"):
            pf.wait(m.args[0], m.args[1], m.kwargs.get("entries"))


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """An empty, private disk cache (and an empty memory cache) for one test."""
    from cute_gemm.build import cache
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTE_GEMM_DISABLE_CACHE", raising=False)
    cache.clear_memory()
    yield tmp_path / "cache"
    cache.clear_memory()


@pytest.fixture
def private_tables(tmp_path, monkeypatch):
    """gemm()'s tables in a private cache folder and shipped folder; none read before the
    test (tests/test_auto.py, tests/test_swap.py use it for every test)."""
    from cute_gemm.select import autotable
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(autotable, "SHIPPED_DIR", tmp_path / "shipped")
    autotable.reset()
    yield
    autotable.reset()

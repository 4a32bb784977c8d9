"""Shared fixtures. GPU tests are marked `gpu` and skipped with a reason when no CUDA
driver/device is usable; CPU tests (compile, cache, registry, validation) always run."""
from __future__ import annotations

import os

import pytest

import cute_gemm


def _gpu_reason() -> str | None:
    if os.environ.get("CUTE_GEMM_FORCE_NO_GPU"):
        return "CUTE_GEMM_FORCE_NO_GPU is set"
    try:
        from cute_gemm import launch
        launch._init()
    except cute_gemm.NoDeviceError as e:
        return f"no CUDA GPU on this machine ({str(e).splitlines()[0]})"
    return None


GPU_SKIP_REASON = _gpu_reason()


def pytest_collection_modifyitems(config, items):
    if GPU_SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """An empty, private disk cache (and an empty memory cache) for one test."""
    from cute_gemm import cache
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTE_GEMM_DISABLE_CACHE", raising=False)
    cache.clear_memory()
    yield tmp_path / "cache"
    cache.clear_memory()

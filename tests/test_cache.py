"""The cubin cache: hits, misses, invalidation, corruption, concurrency, the CLI."""
from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import subprocess
import sys

import pytest

from cute_gemm import cache, registry
from cute_gemm.cli import main as cli_main

NAIVE = registry.get("naive")   # compiles in ~0.1 s: cheap to recompile on purpose


def test_miss_then_memory_then_disk(tmp_cache):
    first = cache.get(NAIVE, "sm_90")
    assert first.origin == "compiled" and first.compile_seconds > 0
    files = list(tmp_cache.glob("*.cubin"))
    assert len(files) == 1 and files[0].stem == first.key
    again = cache.get(NAIVE, "sm_90")
    assert again.origin == "memory" and again.cubin == first.cubin
    cache.clear_memory()
    disk = cache.get(NAIVE, "sm_90")
    assert disk.origin == "disk" and disk.cubin == first.cubin and disk.log == first.log


def test_key_changes_with_options_arch_and_source(tmp_cache):
    base = cache.get(NAIVE, "sm_90")
    other_arch = cache.get(NAIVE, "sm_80")
    assert other_arch.key != base.key and other_arch.origin == "compiled"
    tweaked = dataclasses.replace(NAIVE, defines=(("BLOCK_X", 32), ("BLOCK_Y", 8)))
    t = cache.get(tweaked, "sm_90")
    assert t.key != base.key and t.origin == "compiled"
    extra = cache.get(NAIVE, "sm_90", extra_options=("-DCG_UNUSED=1",))
    assert extra.key != base.key and extra.origin == "compiled"
    assert len(list(tmp_cache.glob("*.cubin"))) == 4


def test_key_covers_headers_and_nvrtc_version(tmp_cache, monkeypatch):
    from cute_gemm import compile as comp, paths
    src = comp.read_source(NAIVE)
    opts = comp.options(NAIVE, "sm_90")
    k0 = cache.cache_key(NAIVE, "sm_90", src, opts)
    assert k0 == cache.cache_key(NAIVE, "sm_90", src, opts)        # deterministic
    assert k0 != cache.cache_key(NAIVE, "sm_90", src + "\n", opts)  # source
    real = paths.header_dirs()
    bumped = tuple(dataclasses.replace(h, fingerprint=h.fingerprint + ".post1") if h.role == "cccl" else h
                   for h in real)
    monkeypatch.setattr(paths, "header_dirs", lambda: bumped)
    assert cache.cache_key(NAIVE, "sm_90", src, opts) != k0         # header version
    monkeypatch.setattr(paths, "header_dirs", lambda: real)
    monkeypatch.setattr(comp, "nvrtc_version", lambda: (99, 9))
    assert cache.cache_key(NAIVE, "sm_90", src, opts) != k0         # NVRTC version
    monkeypatch.setattr(cache, "_include_digest", lambda: "different")
    assert cache.cache_key(NAIVE, "sm_90", src, opts) != k0         # our include/


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_corrupt_entry_is_recompiled_not_loaded(tmp_cache, damage):
    good = cache.get(NAIVE, "sm_90")
    path = cache.entry_path(good.key)
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":
        b = bytearray(blob)
        b[-100] ^= 0xFF
        path.write_bytes(bytes(b))
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(os.urandom(len(blob)))
    cache.clear_memory()
    again = cache.get(NAIVE, "sm_90")
    assert again.origin == "compiled", "a damaged entry must never be loaded"
    assert again.cubin[:4] == b"\x7fELF"
    cache.clear_memory()
    assert cache.get(NAIVE, "sm_90").origin == "disk"          # rewritten intact
    assert path.read_bytes() != b""


def test_disable_env_writes_nothing(tmp_cache, monkeypatch):
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    c = cache.get(NAIVE, "sm_80")
    assert c.origin == "compiled"
    assert not tmp_cache.exists() or not list(tmp_cache.glob("*.cubin"))
    assert cache.get(NAIVE, "sm_80").origin == "memory"
    assert cache.info()["disk_enabled"] is False


def test_unwritable_cache_dir_still_compiles(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(ro / "sub"))
    cache.clear_memory()
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        with pytest.raises(OSError):
            cache.get(NAIVE, "sm_90")   # lock dir cannot be created: loud, not silent
    finally:
        ro.chmod(0o700)
        cache.clear_memory()


def _worker(cache_dir, q):
    os.environ["CUTE_GEMM_CACHE_DIR"] = cache_dir
    from cute_gemm import cache as c, registry as r
    got = c.get(r.get("naive"), "sm_86")
    q.put((got.origin, got.cubin))


def test_concurrent_processes_compile_once(tmp_cache):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(str(tmp_cache), q)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    origins = sorted(o for o, _ in results)
    assert origins.count("compiled") == 1, origins      # the per-key lock: one compile
    assert origins.count("disk") == 3
    assert len({c for _, c in results}) == 1            # everyone got the same bytes
    assert len(list(tmp_cache.glob("*.cubin"))) == 1
    assert not list(tmp_cache.glob(".*.tmp"))           # no temp files left behind


def test_cli_cache_info_and_clear(tmp_cache, capsys):
    cache.get(NAIVE, "sm_90")
    assert cli_main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_cache) in out and "entries         1" in out
    assert cli_main(["cache", "clear"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert not list(tmp_cache.glob("*.cubin"))


def test_cli_compile_without_gpu_reports_resources(tmp_cache):
    r = subprocess.run([sys.executable, "-m", "cute_gemm.cli", "compile", "naive", "--arch", "sm_80"],
                       capture_output=True, text=True, env={**os.environ, "CUTE_GEMM_CACHE_DIR": str(tmp_cache)})
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("naive")][0]
    assert "?" not in line, r.stdout + "\n--- log ---\n" + cache.get(NAIVE, "sm_80").log
    assert "sm_80" in line and "compiled" in line
    assert int(line.split()[5]) > 0      # registers, from the cubin's ptxas report


def test_key_covers_a_typed_config():
    """A kernel configured by a typed struct (Kernel.config) compiles it in front of its source:
    the key changes with any field, without compiling anything."""
    from cute_gemm import compile as comp, registry
    k = registry.get("cute_pipelined")
    opts = comp.options(k, "sm_90")
    src = comp.read_source(k)
    assert "struct Config" in src and src.endswith(comp.paths.kernels_dir().joinpath(k.source).read_text())
    other = dataclasses.replace(k, config=dataclasses.replace(k.config, fma_order=2))
    assert cache.cache_key(k, "sm_90", src, opts) != cache.cache_key(other, "sm_90", comp.read_source(other),
                                                                      comp.options(other, "sm_90"))

"""The cubin cache: hits, misses, invalidation, corruption, concurrency, the CLI. Compiles
behind a call, in children or a thread: test_compile_behind.py."""
from __future__ import annotations

import builtins
import dataclasses
import errno
import multiprocessing as mp
import os
import pathlib
import stat
import subprocess
import sys
import warnings

import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.build import cache, compile as comp
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
    # the key hashes the text NVRTC compiles, the configuration's prelude with it
    assert base.key == cache.cache_key(NAIVE, "sm_90", comp.read_source(NAIVE),
                                       comp.options(NAIVE, "sm_90"))
    tweaked = dataclasses.replace(NAIVE, config=dataclasses.replace(NAIVE.config, block=(32, 8, 1)),
                                  block=(32, 8, 1))
    t = cache.get(tweaked, "sm_90")
    assert t.key != base.key and t.origin == "compiled"
    extra = cache.get(NAIVE, "sm_90", extra_options=("-DCG_UNUSED=1",))
    assert extra.key != base.key and extra.origin == "compiled"
    assert len(list(tmp_cache.glob("*.cubin"))) == 4


def test_source_lines_are_asked_for_and_keyed(tmp_cache, monkeypatch):
    # CUTE_GEMM_LINEINFO=1 (ncu, compute-sanitizer): -lineinfo, a key and a cubin of their own
    monkeypatch.delenv("CUTE_GEMM_LINEINFO", raising=False)
    plain = cache.get(NAIVE, "sm_90")
    assert "-lineinfo" not in comp.options(NAIVE, "sm_90")
    monkeypatch.setenv("CUTE_GEMM_LINEINFO", "1")
    assert "-lineinfo" in comp.options(NAIVE, "sm_90")
    lines = cache.get(NAIVE, "sm_90")
    assert lines.key != plain.key and lines.origin == "compiled"
    assert len(lines.cubin) > len(plain.cubin)
    monkeypatch.setenv("CUTE_GEMM_LINEINFO", "yes")
    with pytest.raises(cute_gemm.InputError, match="CUTE_GEMM_LINEINFO must be one of 0, 1"):
        comp.options(NAIVE, "sm_90")


def test_key_covers_headers_and_nvrtc_version(tmp_cache, monkeypatch):
    from cute_gemm.build import compile as comp, paths
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
    monkeypatch.setattr(comp, "nvrtc_key_version", lambda: (99, 9))
    assert cache.cache_key(NAIVE, "sm_90", src, opts) != k0         # NVRTC version
    monkeypatch.setattr(cache, "_include_digest", lambda source: "different")
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


@pytest.fixture
def deny_writes(monkeypatch):
    """deny_writes(dir): every attempt to create or write a file or folder under dir fails
    with PermissionError, as on a read-only mount or another user's folder. Simulated,
    because root (containers, CI) ignores chmod."""
    roots: list[str] = []
    real_open, real_os_open, real_mkdir = builtins.open, os.open, pathlib.Path.mkdir

    def blocked(path) -> bool:
        p = os.path.abspath(os.fsdecode(path))
        return any(p == r or p.startswith(r + os.sep) for r in roots)

    def denied(path):
        return PermissionError(errno.EACCES, "Permission denied (simulated)", os.fsdecode(path))

    def fake_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and set(mode) & set("wax+") and blocked(file):
            raise denied(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, mode=0o777, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and blocked(path):
            raise denied(path)
        return real_os_open(path, flags, mode, *args, **kwargs)

    def fake_mkdir(self, mode=0o777, parents=False, exist_ok=False):
        if blocked(self) and not self.is_dir():
            raise denied(self)
        return real_mkdir(self, mode, parents, exist_ok)

    monkeypatch.setattr(cache, "open", fake_open, raising=False)   # shadows the builtin there
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(pathlib.Path, "mkdir", fake_mkdir)
    return lambda d: roots.append(os.path.abspath(d))


def _cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, cache.CacheWarning)]


def test_read_only_cache_dir_still_compiles_and_reads(tmp_cache, deny_writes):
    written = cache.get(NAIVE, "sm_90")                 # filled while writable
    deny_writes(tmp_cache)
    cache.clear_memory()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert cache.get(NAIVE, "sm_90").origin == "disk"  # a foreign, readable cache is read
        assert not _cache_warnings(rec)
        fresh = cache.get(NAIVE, "sm_80")
        other = cache.get(registry.get("flat1d"), "sm_80")
    assert fresh.origin == other.origin == "compiled"
    assert fresh.cubin[:4] == other.cubin[:4] == b"\x7fELF" and fresh.key != written.key
    msgs = _cache_warnings(rec)
    assert len(msgs) == 1, msgs                         # once per dir, not once per compile
    assert str(tmp_cache) in msgs[0] and "CUTE_GEMM_CACHE_DIR" in msgs[0]
    assert cache.get(NAIVE, "sm_80").origin == "memory"
    assert sorted(p.stem for p in tmp_cache.glob("*.cubin")) == [written.key]


def test_unwritable_parent_still_compiles(tmp_path, monkeypatch, deny_writes):
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_path / "ro" / "cubins"))
    deny_writes(tmp_path / "ro")
    cache.clear_memory()
    with pytest.warns(cache.CacheWarning, match="cannot write the cubin cache"):
        c = cache.get(NAIVE, "sm_90")
    assert c.origin == "compiled" and c.cubin[:4] == b"\x7fELF"
    assert not (tmp_path / "ro").exists()
    cache.clear_memory()


def test_cache_dir_that_is_a_file_still_compiles(tmp_path, monkeypatch):
    f = tmp_path / "not_a_dir"
    f.write_text("x")
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(f))
    cache.clear_memory()
    with pytest.warns(cache.CacheWarning, match=str(f)):
        c = cache.get(NAIVE, "sm_90")
    assert c.origin == "compiled" and c.cubin[:4] == b"\x7fELF"
    assert f.read_text() == "x"
    cache.clear_memory()


def test_real_read_only_dir_when_not_root(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        try:
            (ro / "probe").write_text("")
            pytest.skip("chmod does not stop this user (root): test_read_only_cache_dir_* simulate it")
        except PermissionError:
            pass
        monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(ro))
        cache.clear_memory()
        with pytest.warns(cache.CacheWarning):
            assert cache.get(NAIVE, "sm_90").origin == "compiled"
    finally:
        ro.chmod(0o700)
        cache.clear_memory()


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077], ids=lambda m: f"{m:03o}")
def test_entries_take_the_umask_permissions(tmp_cache, umask):
    old = os.umask(umask)
    try:
        c = cache.get(NAIVE, "sm_90")
    finally:
        os.umask(old)
    assert stat.S_IMODE(cache.entry_path(c.key).stat().st_mode) == 0o666 & ~umask


def test_ptx_is_cached_with_the_cubin_when_asked_for(tmp_cache):
    from cute_gemm.build import compile as comp
    plain = cache.get(NAIVE, "sm_90")
    assert plain.ptx is None
    withptx = cache.get(NAIVE, "sm_90", ptx=True)       # the entry had none: compiled again
    assert withptx.origin == "compiled" and withptx.key == plain.key
    # the PTX of a fresh, uncached NVRTC run of the same source and options
    _, ptx, _, _ = comp.run_nvrtc(NAIVE, comp.read_source(NAIVE), comp.options(NAIVE, "sm_90"),
                                  want_ptx=True)
    assert withptx.ptx == ptx.rstrip(b"\0").decode() and ".entry naive" in withptx.ptx
    assert withptx.cubin == plain.cubin
    cache.clear_memory()
    assert cache.get(NAIVE, "sm_90").origin == "disk"
    again = cache.get(NAIVE, "sm_90", ptx=True)
    assert again.origin == "memory" and again.ptx == withptx.ptx
    cache.clear_memory()
    disk = cache.get(NAIVE, "sm_90", ptx=True)
    assert disk.origin == "disk" and disk.ptx == withptx.ptx


# ---- the key sees headers behind symlinked folders --------------------------------------------

@pytest.fixture
def linked_include(tmp_path):
    """include/ with a plain header and a symlinked subfolder (whose header the test edits)
    that also holds a link back to include/ (a loop the walk must survive)."""
    real = tmp_path / "elsewhere" / "sub"
    real.mkdir(parents=True)
    (real / "x.cuh").write_text("#define X 1\n")
    inc = tmp_path / "include"
    (inc / "cute_gemm").mkdir(parents=True)
    (inc / "cute_gemm" / "common.cuh").write_text("#include <linked/x.cuh>\n")
    (inc / "linked").symlink_to(real, target_is_directory=True)
    (real / "loop").symlink_to(inc, target_is_directory=True)
    return inc, real / "x.cuh"


def test_key_covers_headers_in_symlinked_folders(linked_include, monkeypatch):
    from cute_gemm.build import compile as comp, paths
    inc, header = linked_include
    rels = [rel for rel, _ in paths.walk_files(inc)]
    assert os.path.join("linked", "x.cuh") in rels and os.path.join("linked", "loop") in rels
    monkeypatch.setattr(paths, "project_include_dir", lambda: inc)
    src = comp.read_source(NAIVE)
    opts = comp.options(NAIVE, "sm_90")
    k0 = cache.cache_key(NAIVE, "sm_90", src, opts)
    assert cache.cache_key(NAIVE, "sm_90", src, opts) == k0
    header.write_text("#define X 2\n")                  # same size: content, not stat, is keyed
    assert cache.cache_key(NAIVE, "sm_90", src, opts) != k0


def test_key_covers_the_headers_a_source_includes_and_no_other(tmp_path, monkeypatch):
    """A header's edit recompiles the kernels that may include it (through another header, or
    inside an #if: counted all the same), not every kernel."""
    from cute_gemm.build import compile as comp, paths
    inc = tmp_path / "include"
    (inc / "cute_gemm" / "deep").mkdir(parents=True)
    files = {"common.cuh": '#include <cute_gemm/inner.cuh>\n#if 0\n#include "deep/cond.cuh"\n#endif\n',
             "inner.cuh": "#define INNER 1\n", "deep/cond.cuh": "#define COND 1\n",
             "other.cuh": "#define OTHER 1\n"}
    for rel, text in files.items():
        (inc / "cute_gemm" / rel).write_text(text)
    monkeypatch.setattr(paths, "project_include_dir", lambda: inc)
    src = comp.read_source(NAIVE)
    assert "#include <cute_gemm/common.cuh>" in src
    opts = comp.options(NAIVE, "sm_90")
    key = lambda: cache.cache_key(NAIVE, "sm_90", src, opts)  # noqa: E731
    k0 = key()
    (inc / "cute_gemm" / "other.cuh").write_text("#define OTHER 2\n")
    assert key() == k0, "a header the source does not include changed its key"
    for rel in ("inner.cuh", "deep/cond.cuh"):
        (inc / "cute_gemm" / rel).write_text("#define CHANGED 1\n")
        assert key() != k0, f"{rel}: an included header's edit kept the key"
        k0 = key()


def test_header_override_fingerprint_covers_symlinked_folders(linked_include, monkeypatch):
    from cute_gemm.build import paths
    inc, header = linked_include
    monkeypatch.setenv("CUTE_GEMM_CUTLASS_INCLUDE", str(inc))
    paths.header_dirs.cache_clear()
    try:
        f0 = {h.role: h for h in paths.header_dirs()}["cutlass"].fingerprint
        header.write_text("#define X 22\n")
        paths.header_dirs.cache_clear()
        f1 = {h.role: h for h in paths.header_dirs()}["cutlass"].fingerprint
    finally:
        monkeypatch.delenv("CUTE_GEMM_CUTLASS_INCLUDE")
        paths.header_dirs.cache_clear()
    assert f0.startswith("dir:") and f1 != f0


def _worker(cache_dir, q):
    os.environ["CUTE_GEMM_CACHE_DIR"] = cache_dir
    from cute_gemm import registry as r
    from cute_gemm.build import cache as c
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


def test_prefetch_fills_the_disk_cache_in_other_processes(tmp_cache, monkeypatch):
    jobs = [("naive", "sm_80", False), ("flat1d", 80, False), ("naive", "sm_80", True),
            ("v4_float4", "sm_80", False, ("v4_float4",))]       # a selection of entry points
    pf = cache.Prefetch(jobs, workers=1)
    try:
        assert sorted(pf.futures) == [("flat1d", "sm_80", None), ("naive", "sm_80", None),
                                      ("v4_float4", "sm_80", ("v4_float4",))]   # merged, normalised
        monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_cache.parent / "elsewhere"))
        for name, arch, sel in pf.futures:
            pf.wait(name, arch, sel)
            assert pf.futures[(name, arch, sel)].result()[0] == "compiled"
    finally:
        pf.close()
    monkeypatch.setenv("CUTE_GEMM_CACHE_DIR", str(tmp_cache))   # the dir taken at the start
    got = cache.get(NAIVE, "sm_80", ptx=True)
    assert got.origin == "disk" and ".entry naive" in got.ptx
    one = cache.get(registry.get("v4_float4"), "sm_80", entries=("v4_float4",))
    assert one.origin == "disk" and set(one.resources) == {"v4_float4"}
    assert cache.Prefetch(jobs).futures == {}                   # all on disk: nothing to do
    pf = cache.Prefetch([("naive", "sm_90", True)], workers=1)
    pf.close()                                                  # kills the unneeded compile
    assert list(pf.futures) == [("naive", "sm_90", None)]


def _entries(d, sizes, t0=1_000_000):
    """Fake entries of `sizes` bytes, used at t0, t0 + 1, ... (mtime), named e0, e1, ..."""
    for i, n in enumerate(sizes):
        p = d / f"e{i}.cubin"
        p.write_bytes(b"x" * n)
        os.utime(p, (t0 + i, t0 + i))


def test_eviction_keeps_the_entries_used_last_within_the_bound(tmp_cache, monkeypatch):
    """Past CUTE_GEMM_CACHE_MAX_MB the entries used longest ago go, down to KEEP_SHARE of the
    bound; a read marks an entry used; lock and temp files stay; 0 is no bound."""
    tmp_cache.mkdir(parents=True)
    _entries(tmp_cache, [300_000] * 10)                  # 3 MB, e0 used first
    (tmp_cache / "e0.lock").write_bytes(b"")
    assert cache.evict(0) == 0 and len(list(tmp_cache.glob("*.cubin"))) == 10
    os.utime(tmp_cache / "e1.cubin")                     # used now
    monkeypatch.setenv("CUTE_GEMM_CACHE_MAX_MB", str(2_000_000 / (1 << 20)))
    assert cache.max_bytes() == 2_000_000
    assert cache.evict() == 4                            # 3.0 MB -> 1.8 MB, the bound's 90 %
    left = sorted(p.stem for p in tmp_cache.glob("*.cubin"))
    assert left == ["e1", "e5", "e6", "e7", "e8", "e9"] and (tmp_cache / "e0.lock").exists()
    assert cache.info()["max_bytes"] == 2_000_000
    monkeypatch.setenv("CUTE_GEMM_CACHE_MAX_MB", "lots")
    with pytest.raises(cute_gemm.InputError, match="CUTE_GEMM_CACHE_MAX_MB"):
        cache.max_bytes()


def test_a_write_past_the_bound_evicts_and_a_read_marks_use(tmp_cache, monkeypatch):
    """A compile that writes past the bound evicts what was used longest ago, never the
    entry a read just used; the next compile of an evicted key compiles again."""
    first = cache.get(NAIVE, "sm_90")                     # the real entry, then older fakes
    size = cache.entry_path(first.key).stat().st_size
    _entries(tmp_cache, [size] * 3)
    os.utime(cache.entry_path(first.key), (999_999, 999_999))   # used before every fake ...
    cache.clear_memory()
    assert cache.get(NAIVE, "sm_90").origin == "disk"             # ... and now read: used last
    monkeypatch.setenv("CUTE_GEMM_CACHE_MAX_MB", str(2.5 * size / (1 << 20)))
    cache.evict()
    left = {p.stem for p in tmp_cache.glob("*.cubin")}
    assert left == {first.key, "e2"}, left
    other = cache.get(NAIVE, "sm_80")                      # a write: the bound holds after it
    assert {p.stem for p in tmp_cache.glob("*.cubin")} <= {first.key, "e2", other.key}
    assert sum(p.stat().st_size for p in tmp_cache.glob("*.cubin")) <= 2.5 * size * 1.01


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


def test_a_test_run_leaves_the_user_cache_alone(tmp_path):
    """Without CUTE_GEMM_CACHE_DIR, a pytest run compiles into a temporary dir that it
    removes at the end; ~/.cache/cute_gemm is never created."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CUTE_GEMM_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), TMPDIR=str(tmp_path))
    root = pathlib.Path(__file__).resolve().parent
    r = subprocess.run([sys.executable, "-m", "pytest", str(root / "test_compile.py"), "-p", "no:cacheprovider",
                        "-k", "test_every_kernel_compiles and naive-sm_90", "--rootdir", str(root.parent)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("cute_gemm cubin cache:"))
    used = pathlib.Path(line.split(":", 1)[1].split(" (")[0].strip())
    assert "temporary" in line and tmp_path in used.parents
    assert not used.exists() and not list(tmp_path.glob("cute_gemm_tests_*"))
    assert not (home / ".cache").exists()


def test_key_covers_a_typed_config():
    """A kernel configured by a typed struct (Kernel.config) compiles it in front of its source:
    the key changes with any field, without compiling anything."""
    from cute_gemm import registry
    from cute_gemm.build import compile as comp
    k = registry.get("cute_pipelined")
    opts = comp.options(k, "sm_90")
    src = comp.read_source(k)
    assert "struct Config" in src and src.endswith(comp.paths.kernels_dir().joinpath(k.source).read_text())
    other = dataclasses.replace(k, config=dataclasses.replace(k.config, fma_order=2))
    assert cache.cache_key(k, "sm_90", src, opts) != cache.cache_key(other, "sm_90", comp.read_source(other),
                                                                      comp.options(other, "sm_90"))


def test_the_key_names_nvrtcs_own_version_without_loading_it(monkeypatch, tmp_path):
    """A cache key's NVRTC version is NVRTC's own answer; read from pip's wheel (no NVRTC
    load, no cuda.pathfinder import) only where no other NVRTC can be the one loaded."""
    from cute_gemm.build import paths
    code = ("import sys; from cute_gemm.build import compile as c; v = c.nvrtc_key_version(); "
            "print(v, 'cuda.bindings.nvrtc' in sys.modules, v == c.nvrtc_version())")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[-2:] == ["False", "True"]        # the wheel's answer, NVRTC not loaded, equal
    site = tmp_path / "site"
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").write_bytes(b"")
    for name in ("cuda_bindings-13.3.1", "nvidia_cuda_nvrtc-13.0.88"):
        (site / f"{name}.dist-info").mkdir()
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(paths, "_maps_libnvrtc", lambda: False)
    assert paths.nvrtc_wheel_version() == (13, 0)
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "." / "site"), str(site)])
    assert paths.nvrtc_wheel_version() == (13, 0)                 # one folder named thrice
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(paths, "_maps_libnvrtc", lambda: True)    # another NVRTC is loaded
    assert paths.nvrtc_wheel_version() is None
    monkeypatch.setattr(paths, "_maps_libnvrtc", lambda: None)    # cannot tell
    assert paths.nvrtc_wheel_version() is None
    monkeypatch.setattr(paths, "_maps_libnvrtc", lambda: False)
    other = tmp_path / "other"
    (other / "nvidia_cuda_nvrtc-13.1.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(site), str(other)])      # two: not certain
    assert paths.nvrtc_wheel_version() is None
    monkeypatch.setattr(sys, "path", [str(site)])
    (site / "nvidia" / "cu13" / "lib" / "libnvrtc.so.13").unlink()  # no library beside it
    assert paths.nvrtc_wheel_version() is None

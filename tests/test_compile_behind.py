"""Compiles behind a call (build/cache.py compile_apart, plan/resolve.py Loaded.ready): each
entry point alone in fresh interpreters into the disk cache, one set of children for racing
threads, a thread where there is no disk level or no Python executable, a failure raised in
the foreground, children that finish after their caller exits. The cache itself:
test_cache.py."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from cute_gemm import registry
from cute_gemm.build import cache


def test_compile_apart_fills_the_disk_from_fresh_interpreters(tmp_cache, monkeypatch):
    """Each entry point alone, compiled by a child interpreter into this process's cache dir
    (the env of the parent's tests moved it): the parent then reads each from disk, the
    bytes an in-process compile of that entry point alone gives. With one worker, or the
    disk level off, nothing is started."""
    k = registry.get("v4_float4")
    entries = tuple(k.entries)
    assert len(entries) == 2
    monkeypatch.setattr(cache, "default_workers", lambda: 1)
    cache.compile_apart(k, "sm_80", entries)
    assert not tmp_cache.exists() or not list(tmp_cache.glob("*.cubin"))
    monkeypatch.setattr(cache, "default_workers", lambda: 2)
    cache.compile_apart(k, "sm_80", entries)
    got = [cache.lookup(k, "sm_80", entries=(e,)) for e in entries]
    assert [g.origin for g in got] == ["disk", "disk"] and [g.entries for g in got] == [(e,) for e in entries]
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    cache.clear_memory()
    here = [cache.get(k, "sm_80", entries=(e,)) for e in entries]
    assert [h.origin for h in here] == ["compiled", "compiled"]
    assert [h.cubin for h in here] == [g.cubin for g in got]
    cache.compile_apart(k, "sm_90", entries)                  # no disk level: nothing started
    assert len(list(tmp_cache.glob("*.cubin"))) == 2


def test_compile_apart_starts_one_set_of_children_for_threads_that_race(tmp_cache, monkeypatch):
    """Threads whose first calls need the same entry points at once: the first starts a
    child per entry point, the others wait for those and find them on disk (a child per
    entry point per thread would put threads x entries NVRTC processes on the machine)."""
    k = registry.get("v4_float4")
    entries = tuple(k.entries)
    monkeypatch.setattr(cache, "default_workers", lambda: 2)
    started = []

    class Child:                                   # compiles its entry in-process, slowly
        def __init__(self, args, **kw):
            name, arch, _, entry = args[3:]
            started.append(entry)
            time.sleep(0.2)
            cache.get(registry.get(name), arch, entries=(entry,))

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Child)
    barrier = threading.Barrier(4)

    def first_call():
        barrier.wait()
        cache.compile_apart(k, "sm_80", entries)
    threads = [threading.Thread(target=first_call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(started) == sorted(entries)
    assert all(cache.lookup(k, "sm_80", entries=(e,)) is not None for e in entries)


def test_compile_apart_starts_nothing_without_a_python_executable(tmp_cache, monkeypatch):
    """Embedded in a host whose binary is not Python (sys.executable names uwsgi, or is
    empty): no child is started; the caller compiles in-process."""
    k = registry.get("v4_float4")
    monkeypatch.setattr(cache, "default_workers", lambda: 2)
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: started.append(a))
    for exe in ("/usr/bin/uwsgi", ""):
        monkeypatch.setattr(cache.sys, "executable", exe)
        cache.compile_apart(k, "sm_80", tuple(k.entries))
    assert started == [] and not list(tmp_cache.glob("*.cubin"))


def _counted_nvrtc(monkeypatch, fail: bool = False) -> list:
    """This process's NVRTC compiles, counted (and, with fail, each a CompileError)."""
    from cute_gemm import CompileError
    here: list = []
    real = cache._compile.run_nvrtc

    def run_nvrtc(kernel, source, opts, want_ptx):
        here.append(threading.current_thread().name)
        if fail:
            raise CompileError(kernel.name, opts, "made to fail", "NVRTC_ERROR_COMPILATION")
        return real(kernel, source, opts, want_ptx)
    monkeypatch.setattr(cache._compile, "run_nvrtc", run_nvrtc)
    return here


def test_a_launch_not_compiled_yet_compiles_behind_in_children(tmp_cache, monkeypatch):
    """Loaded.ready: a launch whose entry points are not cached is compiled in the
    background by child processes (even one entry point: this process's NVRTC stays free),
    begun once: each entry point alone, but a launch of every entry point as one program, the
    whole kernel's cubin that the foreground and `cute-gemm compile` build too; then it is
    ready, and the foreground reads it from disk."""
    from cute_gemm.plan import resolve
    k = registry.get("v4_float4")
    here = _counted_nvrtc(monkeypatch)
    for group in ((k.entries[1],), tuple(k.entries)):
        lk = resolve.Loaded(k, 0, "sm_80", 0)
        assert not lk.ready(group, start=False) and not any(
            key[2] == group for key in resolve._behind)
        assert not lk.ready(group)                                # begins it
        lk.ready(group)                                           # begins nothing more
        assert sum(key[2] == group for key in resolve._behind) <= 1
        assert resolve.wait_for_compiles(300)
        assert lk.ready(group)
        got = [lk.cubin_of(e, group) for e in group]
        apart = [(e,) for e in group] if len(group) < len(k.entries) else [k.entries] * len(group)
        assert all(g.origin != "compiled" for g in got) and [g.entries for g in got] == apart
    assert here == []


def test_without_the_disk_level_it_compiles_behind_in_a_thread(tmp_cache, monkeypatch):
    """No disk level, so no child can hand a cubin back: the background thread compiles
    in-process, once; the foreground then takes that cubin from memory."""
    from cute_gemm.plan import resolve
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    k = registry.get("v4_float4")
    here = _counted_nvrtc(monkeypatch)
    lk = resolve.Loaded(k, 0, "sm_80", 0)
    group = (k.entries[0],)
    assert not lk.ready(group)
    assert resolve.wait_for_compiles(300) and lk.ready(group)
    c = lk.cubin_of(group[0], group)
    assert c.cubin and len(here) == 1 and here[0].startswith("cute_gemm compile v4_float4")


def test_a_background_compile_that_fails_raises_in_the_foreground(tmp_cache, monkeypatch):
    """The background swallows its error; the launch is then 'ready' (nothing left to wait
    for) and the foreground's compile raises the CompileError where the call sees it."""
    from cute_gemm import CompileError
    from cute_gemm.plan import resolve
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    k = registry.get("v4_float4")
    here = _counted_nvrtc(monkeypatch, fail=True)
    lk = resolve.Loaded(k, 0, "sm_80", 0)
    group = (k.entries[0],)
    assert not lk.ready(group)
    assert resolve.wait_for_compiles(60) and lk.ready(group)
    for _ in range(2):                  # every call after it, as without the background
        assert lk.ready(group)
        with pytest.raises(CompileError, match="made to fail"):
            lk.cubin_of(group[0], group)
    assert len(here) == 3
    import cute_gemm
    cute_gemm.clear_caches()            # forgets it: the next call begins a compile again
    assert not any(key[0] == k.name for key in resolve._behind)


def test_background_children_finish_into_the_disk_after_the_caller_exits(tmp_cache):
    """A script whose last call began a background compile and then exits at once: the
    children were started in the calling thread, so they still leave the cubins on disk
    for the next process."""
    k = registry.get("v4_float4")
    group = (k.entries[0],)
    code = ("from cute_gemm import registry\nfrom cute_gemm.plan import resolve\n"
            "k = registry.get('v4_float4')\n"
            f"assert not resolve.Loaded(k, 0, 'sm_80', 0).ready({group!r})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    deadline = time.monotonic() + 120
    while cache.lookup(k, "sm_80", entries=group) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cache.lookup(k, "sm_80", entries=group) is not None


def test_threads_racing_on_a_cold_launch_begin_one_background_compile(tmp_cache, monkeypatch):
    """Eight threads whose first calls find the same launch uncompiled at once: one set of
    children and one background thread for it; every thread is told to use the stand-in
    meanwhile, and all find it ready after."""
    from cute_gemm.plan import resolve
    k = registry.get("v4_float4")
    group = (k.entries[0],)
    spawned = []
    real = cache.spawn_apart
    monkeypatch.setattr(cache, "spawn_apart", lambda *a: spawned.append(a) or real(*a))
    loaded = [resolve.Loaded(k, 0, "sm_80", 0) for _ in range(8)]      # (two devices' worth)
    barrier = threading.Barrier(8)
    said = []

    def call(lk):
        barrier.wait()
        said.append(lk.ready(group))
    threads = [threading.Thread(target=call, args=(lk,)) for lk in loaded]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert said == [False] * 8 and len(spawned) == 1
    assert resolve.wait_for_compiles(300) and all(lk.ready(group) for lk in loaded)
    assert len(spawned) == 1

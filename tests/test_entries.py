"""Compiling only the entry points a call needs: the selection in the sources
(include/cute_gemm/entries.cuh), in the compile options and the cache key, the cache lookup
that never compiles, the resolver that prefers a cached whole-kernel cubin and otherwise
compiles one launch's entry points once, and `cute-gemm compile --layout`.

Real NVRTC runs are limited to two small kernels; the rest runs on a stand-in for NVRTC
that records what it was asked to compile."""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

import matrix
from cute_gemm import cli, registry
from cute_gemm.build import cache
from cute_gemm.plan import resolve
from cute_gemm.build import compile as comp
from cute_gemm.driver.arrays import Operand
from cute_gemm.base.errors import UnknownEntryError

ROOT = Path(__file__).resolve().parents[1]
V4 = registry.get("v4_float4")          # two entry points, ~0.2 s to compile
PIPE = registry.get("cute_pipelined")


# ---- the sources ---------------------------------------------------------------------------------

def test_every_entry_point_in_the_sources_can_be_selected():
    """An extern "C" outside CG_ENTRY would be compiled into every selection: each one in
    kernels/ sits right under `#if CG_ENTRY_ON(<its name>)`."""
    for path in sorted((ROOT / "kernels").rglob("*.cu")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if 'extern "C"' not in line:
                continue
            name = re.search(r"(\w+)\s*\(CG_GEMM_PARAMS", line + lines[i + 1]).group(1)
            assert lines[i - 1].startswith(f"#if CG_ENTRY_ON({name})"), f"{path.name}:{i + 1}"


def _symbols(c: cache.Compiled) -> set[str]:
    return set(comp.resources_from_cubin(c.cubin))


def test_a_selection_compiles_only_its_entry_points(tmp_cache):
    whole = cache.get(V4, "sm_90")
    one = cache.get(V4, "sm_90", entries=("v4_float4_a1",))
    assert _symbols(whole) == set(V4.entries) and whole.whole and whole.entries == V4.entries
    assert _symbols(one) == {"v4_float4_a1"} == set(one.resources)      # ELF and ptxas agree
    assert one.entries == ("v4_float4_a1",) and not one.whole and one.key != whole.key
    # the one selected function is the whole kernel's, instruction for instruction
    assert _text(one, "v4_float4_a1") == _text(whole, "v4_float4_a1")
    # naming every entry point is the whole kernel: its key, no second compile
    again = cache.get(V4, "sm_90", entries=tuple(reversed(V4.entries)))
    assert again.key == whole.key and again.origin == "memory" and again.whole


def _text(c: cache.Compiled, entry: str) -> bytes:
    """The bytes of an entry point's .text section in a CUBIN."""
    import struct
    b = c.cubin
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    names = secs[shstrndx][4]
    for s in secs:
        if b[names + s[0]:b.index(b"\0", names + s[0])] == f".text.{entry}".encode():
            return b[s[4]:s[4] + s[5]]
    raise AssertionError(f"no .text.{entry}")


@pytest.mark.skipif(not matrix.FULL, reason=f"a CuTe compile per source: {matrix.WHY}")
@pytest.mark.parametrize("k", [
    pytest.param(k, id=k.name, marks=pytest.mark.compiles(k.name, k.archs[-1], entries=k.entries[-1:]))
    for k in registry.kernels() if matrix.first_of_source(k) and len(k.entries) > 1])
def test_every_source_compiles_one_entry_point_alone(k):
    entry = k.entries[-1]
    c = cache.get(k, k.archs[-1], entries=(entry,))       # (the compile pool's, built alone)
    assert _symbols(c) == {entry}


# ---- options, key, errors (a stand-in for NVRTC) ----------------------------------------------------

@pytest.fixture
def fake_nvrtc(monkeypatch):
    """NVRTC replaced: records the entry selection of each compile (the CG_WANT_ macros of its
    prelude: all of the kernel's for the whole kernel), and writes a ptxas-like log for the
    entry points it was asked for."""
    runs: list[tuple[str, tuple[str, ...]]] = []
    lock = threading.Lock()

    def run_nvrtc(kernel, source, opts, want_ptx):
        wanted = tuple(re.findall(r"^#define CG_WANT_(\w+) 1$", source.split("#line 1")[0], re.M))
        time.sleep(0.05)                    # long enough for racing threads to meet
        with lock:
            runs.append((kernel.name, wanted))
        log = "".join(f"ptxas info    : Compiling entry function '{e}' for 'sm_90'\n"
                      f"ptxas info    : Used 32 registers\n" for e in wanted)
        return b"CUBIN " + " ".join(opts).encode(), None, log, 0.05
    monkeypatch.setattr(comp, "run_nvrtc", run_nvrtc)

    def compile_apart(kernel, arch, entries):   # each alone, as the child processes would
        for e in entries:
            cache.get(kernel, arch, entries=(e,))
    monkeypatch.setattr(cache, "compile_apart", compile_apart)
    return runs


def test_the_prelude_selects_entry_points_in_the_kernels_order():
    whole = comp.read_source(PIPE)
    sel = comp.read_source(PIPE, comp.select_entries(
        PIPE, ["cute_pipelined_ak_bn_sk", "cute_pipelined_ak_bn"]))
    cfg = PIPE.config.cpp(PIPE.name)
    body = whole.split("#line 1", 1)[1]
    assert whole.startswith(cfg) and sel.startswith(cfg)
    # the whole kernel: its own entry points (c3 also defines its split configurations')
    assert whole[len(cfg):] == ("#define CG_ENTRIES\n" + "".join(
        f"#define CG_WANT_{e} 1\n" for e in PIPE.entries) + "#line 1" + body)
    assert sel[len(cfg):] == ("#define CG_ENTRIES\n#define CG_WANT_cute_pipelined_ak_bn 1\n"
                              "#define CG_WANT_cute_pipelined_ak_bn_sk 1\n#line 1" + body)
    assert comp.select_entries(PIPE, None) is None
    assert comp.select_entries(PIPE, PIPE.entries) is None          # all of them: the whole kernel


@pytest.mark.parametrize("entries", [("cute_pipelined_ak_bn", "nope"), ("naive",), ()])
def test_a_name_that_is_not_an_entry_point_is_an_error_before_nvrtc(entries, fake_nvrtc, tmp_cache):
    with pytest.raises(UnknownEntryError) as e:
        cache.get(PIPE, "sm_90", entries=entries)
    assert "its entry points: cute_pipelined_am_bn," in str(e.value)
    assert all(f"'{x}'" in str(e.value) for x in entries if x not in PIPE.entries)
    assert fake_nvrtc == []


def test_lookup_never_compiles(fake_nvrtc, tmp_cache, monkeypatch):
    sel = ("cute_pipelined_ak_bn",)
    assert cache.lookup(PIPE, "sm_90", entries=sel) is None
    c = cache.get(PIPE, "sm_90", entries=sel)
    assert c.origin == "compiled" and fake_nvrtc == [("cute_pipelined", sel)]
    assert cache.lookup(PIPE, "sm_90", entries=sel).origin == "memory"
    cache.clear_memory()
    hit = cache.lookup(PIPE, "sm_90", entries=sel)
    assert hit.origin == "disk" and hit.cubin == c.cubin and hit.entries == sel and not hit.whole
    assert cache.lookup(PIPE, "sm_90") is None                       # the whole kernel: not cached
    cache.clear_memory()
    monkeypatch.setenv("CUTE_GEMM_DISABLE_CACHE", "1")
    assert cache.lookup(PIPE, "sm_90", entries=sel) is None
    assert len(fake_nvrtc) == 1


# ---- the resolver ----------------------------------------------------------------------------------

@pytest.fixture
def loaded_pipe(monkeypatch):
    """cute_pipelined "loaded" on a made-up sm_90 device: a function is (cubin key, entry)."""
    monkeypatch.setattr(resolve.launch, "get_function",
                        lambda ordinal, name, key, cubin, entry: (key, entry))
    return resolve.Loaded(PIPE, 0, "sm_90", 232448, 132)


def test_the_resolver_compiles_what_one_launch_needs_once(fake_nvrtc, tmp_cache, loaded_pipe):
    v = next(v for v in PIPE.variants if v.entry == "cute_pipelined_am_bk")
    group = resolve.launch_entries(PIPE, v, stream_k=True)
    assert group == ("cute_pipelined_am_bk", "cute_pipelined_ak_bn", "cute_pipelined_ak_bn_sk")
    fs = [loaded_pipe.function(e, group) for e in group[::-1]]
    # the launch's entry points, each alone (side by side in processes), each once
    assert sorted(fake_nvrtc) == sorted(("cute_pipelined", (e,)) for e in group)
    assert len({key for key, _ in fs}) == 3 and [e for _, e in fs] == list(group[::-1])
    loaded_pipe.function("cute_pipelined_ak_bk")                     # another launch: its own cubin
    assert fake_nvrtc[3:] == [("cute_pipelined", ("cute_pipelined_ak_bk",))]
    assert loaded_pipe.cubins["cute_pipelined_ak_bk"].entries == ("cute_pipelined_ak_bk",)
    # a launch whose entry points this Loaded partly holds compiles only the others
    w = next(v for v in PIPE.variants if v.entry == "cute_pipelined_ak_bn")
    loaded_pipe.function(w.entry, resolve.launch_entries(PIPE, w, stream_k=True))
    assert len(fake_nvrtc) == 4
    # a fresh process finds each alone on disk, compiling nothing
    cache.clear_memory()
    fresh = resolve.Loaded(PIPE, 0, "sm_90", 232448, 132)
    assert fresh.cubin_of(v.entry, group).origin != "compiled" and len(fake_nvrtc) == 4
    assert {fresh.cubins[e].entries for e in group} == {(e,) for e in group}


def test_without_processes_a_launch_is_compiled_as_one_program(fake_nvrtc, tmp_cache, loaded_pipe,
                                                              monkeypatch):
    """Where nothing can be compiled apart (one CPU, no disk level: compile_apart starts
    nothing), the entry points one launch needs are one NVRTC program."""
    monkeypatch.setattr(cache, "compile_apart", lambda *a: None)
    v = next(v for v in PIPE.variants if v.entry == "cute_pipelined_am_bk")
    group = resolve.launch_entries(PIPE, v, stream_k=True)
    fs = [loaded_pipe.function(e, group) for e in group[::-1]]
    assert fake_nvrtc == [("cute_pipelined", tuple(e for e in PIPE.entries if e in group))]
    assert len({key for key, _ in fs}) == 1


def test_a_fresh_process_finds_the_launch_cubin_on_disk(fake_nvrtc, tmp_cache, loaded_pipe):
    """The unit on disk is one launch's set of entry points, whoever compiled it (run() or
    `cute-gemm compile --layout`): a new Loaded finds it without compiling."""
    v = next(v for v in PIPE.variants if v.entry == "cute_pipelined_ak_bn")
    group = resolve.launch_entries(PIPE, v, stream_k=True)
    cache.get(PIPE, "sm_90", entries=group)
    cache.clear_memory()
    fresh = resolve.Loaded(PIPE, 0, "sm_90", 232448, 132)
    assert fresh.cubin_of(v.stream_k, group).origin == "disk" and len(fake_nvrtc) == 1


def test_a_launch_of_every_entry_point_compiles_the_whole_kernel(fake_nvrtc, tmp_cache, monkeypatch):
    monkeypatch.setattr(resolve.launch, "get_function", lambda *a: a[-1])
    k = registry.get("cute_3xtf32")                  # its pre-pass launches both its entries
    lk = resolve.Loaded(k, 0, "sm_90a", 232448, 132)
    assert [lk.function(e, k.entries) for e in k.entries] == list(k.entries)
    assert fake_nvrtc == [("cute_3xtf32", k.entries)] and lk.cubins[k.entries[1]].whole


def test_the_resolver_takes_a_cached_whole_kernel(fake_nvrtc, tmp_cache, loaded_pipe):
    whole = cache.get(PIPE, "sm_90")                # e.g. `cute-gemm compile` in another process
    cache.clear_memory()
    key, entry = loaded_pipe.function("cute_pipelined_am_bn", ("cute_pipelined_am_bn_sk",))
    assert key == whole.key and entry == "cute_pipelined_am_bn"
    loaded_pipe.function("cute_pipelined_ak_bk_s")
    assert fake_nvrtc == [("cute_pipelined", PIPE.entries)]          # only the whole compile
    assert {c.key for c in loaded_pipe.cubins.values()} == {whole.key}


def test_a_whole_kernel_with_calls_left_in_it_is_not_launched(fake_nvrtc, tmp_cache, loaded_pipe,
                                                             monkeypatch):
    """A whole kernel's module where NVVM left calls (ptxas reports functions apart from the
    entry points: cute_mma_sm80's 16-bit entries, 2.7x slower than compiled alone) is passed
    over: the launch's own entry points are compiled, as a call without it would."""
    run = comp.run_nvrtc

    def with_calls(kernel, source, opts, want_ptx):
        cubin, ptx, log, secs = run(kernel, source, opts, want_ptx)
        whole = source.split("#line 1")[0].count("CG_WANT_") == len(kernel.entries)
        extra = ("ptxas info    : Function properties for _Z24__cvta_generic_to_sharedPKv\n"
                 "ptxas info    : Function properties for min\n") if whole else ""
        return cubin, ptx, log + extra, secs
    monkeypatch.setattr(comp, "run_nvrtc", with_calls)
    whole = cache.get(PIPE, "sm_90")
    assert whole.calls == ("_Z24__cvta_generic_to_sharedPKv", "min")
    cache.clear_memory()
    key, entry = loaded_pipe.function("cute_pipelined_am_bn", ("cute_pipelined_am_bn_sk",))
    assert key != whole.key and entry == "cute_pipelined_am_bn"
    assert ("cute_pipelined", ("cute_pipelined_am_bn",)) in fake_nvrtc
    # without calls, the whole kernel is taken (test_the_resolver_takes_a_cached_whole_kernel)
    assert comp.called_functions("ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
                                 "ptxas info    : Function properties for a\n") == ()


def test_racing_threads_compile_an_entry_point_once(fake_nvrtc, tmp_cache, loaded_pipe):
    got, start = [], threading.Barrier(8)

    def call():
        start.wait()
        got.append(loaded_pipe.function("cute_pipelined_ak_bn"))
    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and fake_nvrtc == [("cute_pipelined", ("cute_pipelined_ak_bn",))]


def test_launch_entries_follow_the_stream_k_switch(monkeypatch):
    v = next(v for v in PIPE.variants if v.entry == "cute_pipelined_ak_bn")
    assert resolve.launch_entries(PIPE, v) == ("cute_pipelined_ak_bn", "cute_pipelined_ak_bn_sk")
    monkeypatch.setenv("CUTE_GEMM_STREAM_K", "0")
    assert resolve.launch_entries(PIPE, v) == ("cute_pipelined_ak_bn",)
    scalar = next(v for v in PIPE.variants if v.entry == "cute_pipelined_ak_bn_s")
    assert resolve.launch_entries(PIPE, scalar, stream_k=True) == ("cute_pipelined_ak_bn_s",)


# ---- which entry points a layout needs ---------------------------------------------------------------

def test_layout_launches_of_the_tuned_kernels():
    ll = resolve.layout_launches
    assert ll(PIPE, "nn") == {"cute_pipelined": (("cute_pipelined_ak_bn", "cute_pipelined_ak_bn_sk"),)}
    assert ll(PIPE, "tt") == {"cute_pipelined": (("cute_pipelined_am_bk", "cute_pipelined_ak_bn",
                                                  "cute_pipelined_ak_bn_sk"),)}
    ws = registry.get("cute_wgmma_ws")
    # each entry with its cut twin (a walk whose last wave is cut along K)
    assert ll(ws, "tn", ("bf16",)) == {"cute_wgmma_ws": (
        ("cute_wgmma_ws_bf16_f32_am_bn", "cute_wgmma_ws_bf16_f32_am_bn_cut"),
        ("cute_wgmma_ws_bf16_bf16_am_bn", "cute_wgmma_ws_bf16_bf16_am_bn_cut"))}
    # tf32 reads k-major smem only: an nn call has its row-major B as the register operand,
    # a tn call (neither operand k-major) copies one of them (scale2d)
    assert ll(ws, "nn", ("tf32",)) == {"cute_wgmma_ws": (
        ("cute_wgmma_ws_tf32_f32_ak_bn", "cute_wgmma_ws_tf32_f32_ak_bn_cut"),)}
    assert ll(ws, "tn", ("tf32",))["scale2d"] == (("scale2d",),)
    assert ll(registry.get("cute_3xtf32"), "tn") == {
        "cute_3xtf32": (tuple(f"cute_3xtf32_{p}" for p in ("range_a", "range_b", "split_a",
                                                          "split_b", "norms_b", "finish", "fix",
                                                          "refine")),),
        "cute_3xtf32_gemm": (("cute_wgmma_ws_fp16_f32_ak_bk", "cute_wgmma_ws_fp16_f32_ak_bk_cut"),)}
    assert ll(PIPE, "nn", ("bf16",)) == {}


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_layout_launches_are_what_run_compiles(layout):
    """For every kernel and precision, run()'s own choice on contiguous aligned operands of
    another shape gives a launch whose set of entry points (what Loaded compiles and looks
    up) is one that --layout compiles, and a copy where --layout compiles the copy kernel."""
    m, n, kk = 384, 640, 256

    def op(name, rows, cols, t, dtype):
        return Operand(name, None, True, 1 << 24, (rows, cols), (1, rows) if t else (cols, 1), dtype)
    for k in registry.kernels():
        if k.gemm_of is not None:
            continue
        got = resolve.layout_launches(k, layout)
        for v0 in k.variants:
            dt = registry.PRECISION_DTYPE[v0.precision]
            v, copies = resolve.choose(k, {"a": op("a", m, kk, layout[0] == "t", dt),
                                           "b": op("b", kk, n, layout[1] == "t", dt),
                                           "c": op("c", m, n, False, v0.out_dtype)},
                                       v0.precision, v0.out_dtype)
            launch = comp.select_entries(k, resolve.launch_entries(k, v, stream_k=True))
            assert launch in [comp.select_entries(k, s) for s in got[k.name]], k.name
            assert not copies or "scale2d" in got, k.name


def test_cli_compile_layout_compiles_what_run_looks_for(capsys, fake_nvrtc, tmp_cache, monkeypatch):
    import json
    monkeypatch.setenv("CUTE_GEMM_FORCE_NO_GPU", "1")
    monkeypatch.setattr("cute_gemm.cli.compile.unsupported_arch", lambda arch: None)
    rc = cli.main(["compile", "cute_pipelined", "v4_float4", "--layout", "tt", "--arch", "sm_90",
                   "--jobs", "1", "--json"])
    out, _ = capsys.readouterr()
    assert rc == 0
    pipe = ("cute_pipelined_am_bk", "cute_pipelined_ak_bn", "cute_pipelined_ak_bn_sk")
    # v4_float4 takes row-major operands only: a tt call copies both (scale2d)
    want = {"cute_pipelined": pipe, "v4_float4": ("v4_float4",), "scale2d": ("scale2d",)}
    rows = [(r["kernel"], r["entry"]) for r in json.loads(out)]
    assert rows == [(k, e) for k, es in want.items() for e in es]
    assert sorted(fake_nvrtc) == sorted(want.items())
    # the launch run() makes finds that cubin
    cache.clear_memory()
    monkeypatch.setattr(resolve.launch, "get_function", lambda *a: a[-1])
    lk = resolve.Loaded(PIPE, 0, "sm_90", 232448, 132)
    assert lk.cubin_of(pipe[0], pipe).origin == "disk" and len(fake_nvrtc) == 3
    # --layout all: one cubin per launch: nn's, tn's and nt's (tt's is on disk already)
    fake_nvrtc.clear()
    assert cli.main(["compile", "cute_pipelined", "--layout", "all", "--arch", "sm_90", "--jobs", "1"]) == 0
    capsys.readouterr()
    assert sorted(fake_nvrtc) == sorted(("cute_pipelined", (f"cute_pipelined_{m}", f"cute_pipelined_{m}_sk"))
                                        for m in ("am_bn", "ak_bn", "ak_bk"))


# ---- the warm path --------------------------------------------------------------------------------

def test_header_wheel_versions_read_without_importlib_metadata():
    """The cache key's wheel versions come from dist-info folder names (cheap in a fresh
    process); they must be what importlib.metadata says, or every key would change."""
    import importlib.metadata
    from cute_gemm.build import paths
    for h in paths.header_dirs():
        if h.fingerprint.startswith("pkg:"):
            dist, version = h.fingerprint[4:].split("==")
            assert version == importlib.metadata.version(dist), h


def test_import_leaves_the_heavy_modules_for_later():
    import subprocess
    import sys
    code = ("import sys, cute_gemm; print(sorted(m for m in ('cute_gemm.check', 'cute_gemm.perf.runner', "
            "'importlib.metadata', 'cuda.bindings.nvrtc', 'concurrent.futures') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""Every registered kernel compiles with NVRTC for each of its targets (Kernel.archs: sm_80
and sm_90, or sm_90a for the arch-specific ones) — no GPU needed. By default one
configuration per kernel source for its newest target; CUTE_GEMM_TEST_FULL=1 (CI) all of
them (tests/matrix.py)."""
from __future__ import annotations

import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.build import cache, compile as comp

import matrix

KERNELS = registry.compiled()   # the GEMMs composed kernels run, registered or not


@pytest.mark.parametrize("k, arch", [
    pytest.param(k, arch, id=f"{k.name}-{arch}",
                 marks=pytest.mark.compiles(k.name, arch, entries=matrix.entries(k, arch))
                 if arch in matrix.targets(k)
                 else pytest.mark.skip(reason=f"one configuration per source, its newest target: "
                                              f"{matrix.WHY}"))
    for arch in registry.ARCHS + ("sm_90a",) for k in KERNELS if arch in k.archs])
def test_every_kernel_compiles(k, arch):
    want = matrix.entries(k, arch)
    c = cache.get(k, arch, entries=want)
    assert c.cubin[:4] == b"\x7fELF", "NVRTC must hand back a CUBIN (ELF), not PTX"
    res = c.resources
    # min_blocks CTAs per SM must stay resident for every entry, also for those built
    # without ptxas's register cap (cute_pipelined's am_bn: min_blocks_mn = 1)
    min_blocks = k.min_blocks
    reg_cap = min(255, 65536 // (k.threads * min_blocks))
    for entry in want or k.entries:
        assert entry in res, f"ptxas reported nothing for entry {entry}"
        r = res[entry]
        assert 0 < r.registers <= reg_cap, f"{entry}: {r.registers} registers on {arch}, " \
            f"more than {reg_cap} ({min_blocks} CTAs of {k.threads} threads per SM)"
        if r.spill_stores < 0:   # report read from the ELF: no local memory at all => no spills
            assert r.stack_bytes == 0, f"{entry} uses local memory on {arch}: {r}"
        else:
            assert r.spill_stores == 0 and r.spill_loads == 0, f"{entry} spills on {arch}: {r}"
        # every wgmma kernel here is built to keep a batch in flight
        assert not r.wgmma_serialized, f"{entry}: ptxas serialized its wgmmas on {arch}"
    # a stream-K twin's static + dynamic smem stays within a data-parallel entry's, so the
    # twin's CTAs fit the smem carveout the data-parallel CTAs left on an SM (split
    # launches overlap the two by programmatic dependent launch, where the kernel does)
    twins = {v.stream_k for v in k.variants if v.stream_k and k.pdl} & set(res)
    for entry in twins:
        if res[entry].smem_bytes >= 0:
            sk = res[entry].smem_bytes + k.stream_k_smem_bytes(4096, 4096, 4096)
            assert sk <= k.dyn_smem(4096, 4096, 4096), \
                f"{entry}: {sk} bytes of smem on {arch}, more than the data-parallel entries' dynamic smem"


@pytest.mark.parametrize("arch", registry.ARCHS)
def test_utility_kernels_compile(arch):
    """The runtime's own kernels compile for every target without spills: scale2d
    (relayouts and beta * C), split_reduce (a split-K launch's reduction) and spin (the hold
    after a benchmark's L2 flush)."""
    from cute_gemm.plan import modes, resolve, trial
    for k in (resolve.UTIL, modes.REDUCE, trial.SPIN):
        c = cache.get(k, arch)
        assert c.cubin[:4] == b"\x7fELF", k.name
        for entry in k.entries:
            r = c.resources[entry]
            assert r.registers > 0 and r.spill_stores <= 0 and r.spill_loads <= 0, (entry, r)


def test_arch_normalisation():
    assert comp.normalize_arch("sm_90") == "sm_90"
    assert comp.normalize_arch(90) == "sm_90"
    assert comp.normalize_arch("compute_80") == "sm_80"
    assert comp.normalize_arch((8, 6)) == "sm_86"
    assert comp.normalize_arch("sm_90a") == "sm_90a"    # arch-specific target (wgmma)
    assert comp.normalize_arch(" SM_90 ") == "sm_90"
    for bad in ("hopper", "sm90", "sm_9", (9,), 9.0, None, True):
        with pytest.raises(cute_gemm.InputError) as e:   # a CuteGemmError and a ValueError
            comp.normalize_arch(bad)
        assert isinstance(e.value, ValueError) and isinstance(e.value, cute_gemm.CuteGemmError)
        assert repr(bad) in str(e.value) and "'sm_90a'" in str(e.value) and "(9, 0)" in str(e.value)
    with pytest.raises(cute_gemm.InputError, match="did you mean 'sm_90'"):
        cute_gemm.compile_kernel("naive", arch="sm90")


def test_kernel_options_reach_nvrtc():
    import dataclasses
    k = dataclasses.replace(registry.get("naive"), options=("--ptxas-options=--register-usage-level=7",))
    opts = comp.options(k, "sm_90")
    assert opts[-1] == "--ptxas-options=--register-usage-level=7"
    assert "--ptxas-options=--register-usage-level=7" not in comp.options(registry.get("naive"), "sm_90")


def test_compile_error_carries_kernel_options_and_log(tmp_cache):
    k = registry.get("naive")
    opts = comp.options(k, "sm_90")
    bad = '#include <cute_gemm/common.cuh>\nextern "C" __global__ void naive(CG_GEMM_PARAMS) { this_is_not_cpp; }\n'
    with pytest.raises(cute_gemm.CompileError) as e:
        comp.run_nvrtc(k, bad, opts, want_ptx=False)
    err = e.value
    assert err.kernel == "naive"
    assert "-arch=sm_90" in err.options and "--std=c++17" in err.options
    assert "this_is_not_cpp" in err.log and "undefined" in err.log
    assert "naive" in str(err) and "-arch=sm_90" in str(err) and "this_is_not_cpp" in str(err)


def test_cute_header_tuple_elements_are_cutes_own():
    """include/cute_gemm/cute.cuh's direct tuple_element of short cute::tuples names the type
    CuTe's own does (and cute::get returns) for every index of tuples of 1 to 4 elements,
    whatever the element kinds (static integers, references' targets, nested tuples), and
    longer tuples keep CuTe's. Compiled by NVRTC, checked by static_assert."""
    k = registry.get("cute_smem")
    src = r"""
#include <cute_gemm/cute.cuh>
using namespace cute;
using I3 = Int<3>;
using N2 = tuple<int, I3>;
template <class T, int I, class E>
constexpr bool at = cuda::std::is_same_v<tuple_element_t<I, T>, E> &&
                    cuda::std::is_same_v<cuda::std::tuple_element_t<I, T>, E> &&
                    cuda::std::is_same_v<remove_cvref_t<decltype(get<I>(declval<T>()))>, E>;
static_assert(at<tuple<I3>, 0, I3>);
static_assert(at<tuple<float, N2>, 0, float> && at<tuple<float, N2>, 1, N2>);
static_assert(at<tuple<I3, int, N2>, 0, I3> && at<tuple<I3, int, N2>, 2, N2>);
using T4 = tuple<int, I3, float, N2>;
static_assert(at<T4, 0, int> && at<T4, 1, I3> && at<T4, 2, float> && at<T4, 3, N2>);
static_assert(cuda::std::is_same_v<tuple_element_t<0, tuple<const int, I3>>, const int>);
using T5 = tuple<int, I3, float, N2, double>;
static_assert(at<T5, 3, N2> && at<T5, 4, double>);
static_assert(cuda::std::is_same_v<tuple_element_t<1, const T4>, const I3>);
static_assert(size(make_layout(make_shape(I3{}, 4), LayoutRight{})) == 12);
extern "C" __global__ void probe(int* p) { *p = get<1>(T4{}); }
"""
    comp.run_nvrtc(k, src, comp.options(k, "sm_90"), want_ptx=False)


def test_the_config_reaches_nvrtc_in_the_prelude_only():
    k = registry.get("cute_smem")
    opts = comp.options(k, "sm_80")
    assert "-default-device" in opts and "-arch=sm_80" in opts
    assert not any(o.startswith("-D") for o in opts)
    assert comp.read_source(k).startswith(
        "// cute_smem: cute_gemm/registry/ladder_cute.py, TileConfig\n"
        "constexpr int THREADS = 256;\nconstexpr int BLK_M = 128;\n")


def test_a_source_without_its_config_does_not_compile(tmp_cache):
    """No source falls back on default values: without the prelude, NVRTC stops at the
    first name the configuration would have defined."""
    k = registry.get("v2_tiled16")
    bare = comp.read_source(k)[len(k.config.cpp(k.name)):]
    with pytest.raises(cute_gemm.CompileError, match="BM"):
        comp.run_nvrtc(k, bare, comp.options(k, "sm_80"), want_ptx=False)


def test_parse_resources():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'foo' for 'sm_90'
ptxas info    : Function properties for foo
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'bar' for 'sm_90'
ptxas info    : Function properties for bar
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 400 bytes cmem[0]
"""
    r = comp.parse_resources(log)
    assert r["foo"] == comp.Resources(40, 1024, 16, 8, 4)
    assert r["bar"] == comp.Resources(128, 0, 0, 0, 0)
    # ptxas's performance note names the entry whose wgmmas it serialized
    note = ("ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are "
            "serialized due to insufficient register resources for the wgmma pipeline in the "
            "function 'bar'\n")
    r = comp.parse_resources(log + note)
    assert r["bar"] == comp.Resources(128, 0, 0, 0, 0, wgmma_serialized=True)
    assert not r["foo"].wgmma_serialized


def test_header_dirs_found_and_fingerprinted():
    from cute_gemm.build import paths
    roles = {h.role: h for h in paths.header_dirs()}
    assert set(roles) == {"cutlass", "cccl", "cuda"}
    assert (roles["cutlass"].path / "cute" / "tensor.hpp").is_file()
    assert (roles["cuda"].path / "cuda_runtime_api.h").is_file()
    assert roles["cccl"].fingerprint.startswith("pkg:nvidia-cuda-cccl==13.0.")
    assert (paths.kernels_dir() / "cute" / "c1_smem.cu").is_file()
    assert (paths.project_include_dir() / "cute_gemm" / "common.cuh").is_file()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.compiles(n, "sm_90"))
                                  for n in ("naive", "cute_smem")])
def test_cubin_elf_resources_match_ptxas_report(name):
    c = cute_gemm.compile_kernel(name, arch="sm_90")
    from_log = comp.parse_resources(c.log)
    from_elf = comp.resources_from_cubin(c.cubin)
    if not from_log:
        pytest.skip("this NVRTC put no ptxas report in the log")
    assert set(from_elf) == set(from_log)
    for entry, r in from_log.items():
        e = from_elf[entry]
        assert (e.registers, e.smem_bytes, e.stack_bytes) == (r.registers, r.smem_bytes, r.stack_bytes)


# cute_pipelined's interior epilogues (include/cute_gemm/smem_epilogue.cuh), chosen per
# data-parallel entry by its Config::epi_* policy: "bulk" entries store C by bulk copies
# (cp.async.bulk) on sm_90 and only there, "smem16" entries by 16-byte stores read back from
# smem; every other entry, the stream-K twins and the 4-byte fallbacks keep scalar stores.
# A split entry (NAME_part) stores its share as its data-parallel entry NAME stores a tile,
# but for smem16's 16-byte global stores: with beta a literal 0 there NVVM splits them into
# 4-byte ones (beta from the host kept them, and ak_bn_part spilled: docs/design/tables.md#split-reduce).
# Checked in the PTX NVRTC writes for each arch, so a registry or template slip that silently
# drops (or spreads) a path shows here, where the GPU tests would still pass on scalar stores.
def _ptx_entries(ptx: str) -> dict[str, str]:
    parts = ptx.split(".entry ")[1:]
    return {p.split("(", 1)[0].strip(): p for p in parts}


@pytest.mark.parametrize("arch", matrix.ptx_params("cute_pipelined", registry.ARCHS))
def test_pipelined_smem_epilogues_where_registered(arch):
    k = registry.get("cute_pipelined")
    # the entries with a policy of their own: ak_bk, ak_bn (and their split entries)
    policy = {e: getattr(k.config, "epi_" + e.removeprefix("cute_pipelined_").removesuffix("_part"),
                         "scalar") for e in k.entries}
    bulk = {e for e, p in policy.items() if p == "bulk"}
    smem16 = {e for e, p in policy.items() if p == "smem16"}
    assert bulk and smem16, "no entry has a bulk / smem16 epilogue: this test checks nothing"
    # the PTX of the compile test_every_kernel_compiles checked (cached): not a second NVRTC run
    entries = _ptx_entries(cache.get(k, arch, ptx=True).ptx)
    assert set(k.entries) <= set(entries), sorted(set(k.entries) - set(entries))
    twin_of = {v.batch: v.entry for v in k.variants if v.batch}     # a batched twin: its entry's
    for name, body in entries.items():
        base = twin_of.get(name, name)
        has_bulk = "cp.async.bulk.global.shared::cta" in body
        assert has_bulk == (arch == "sm_90" and base in bulk), (arch, name, has_bulk)
        has_v4 = "st.global.v4.f32" in body
        assert has_v4 == (base in smem16 and not name.endswith("_part")), (arch, name, has_v4)


@pytest.mark.parametrize("arch", matrix.ptx_params("cute_pipelined", registry.ARCHS))
def test_pdl_flag_matches_the_compiled_kernel(arch):
    """Kernel.pdl tells the host to start a split launch's stream-K twin by programmatic
    dependent launch: then, on sm_90, every twin waits for its head (griddepcontrol.wait)
    and every head lets it start (griddepcontrol.launch_dependents); sm_80 has neither."""
    from cute_gemm.plan import streamk
    k = registry.get("cute_pipelined")
    twins = {v.stream_k for v in k.variants if v.stream_k}
    heads = {streamk.stream_k_dp_entry(v) for v in k.variants if v.stream_k}
    assert k.pdl and twins and heads, "no stream-K twins: this test checks nothing"
    entries = _ptx_entries(cache.get(k, arch, ptx=True).ptx)
    for name in twins:
        assert ("griddepcontrol.wait" in entries[name]) == (arch == "sm_90"), (arch, name)
    for name in heads:
        assert ("griddepcontrol.launch_dependents" in entries[name]) == (arch == "sm_90"), (arch, name)
    # a split entry lets the reduction launch start (which waits for it: test_utility_kernels_compile)
    parts = {v.split for v in k.variants if v.split}
    assert parts
    for name in parts:
        assert ("griddepcontrol.launch_dependents" in entries[name]) == (arch == "sm_90"), (arch, name)


@pytest.mark.parametrize("arch", matrix.ptx_params("cute_pipelined", registry.ARCHS))
def test_stream_k_twins_meet_in_a_cluster_on_sm90_only(arch):
    """On sm_90 every stream-K twin can add a split's shares in a cluster (cluster_fixup.cuh:
    the cluster barrier, DSMEM reads); sm_80 compiles that path out. The data-parallel
    entries have none of it."""
    from cute_gemm.plan import streamk
    k = registry.get("cute_pipelined")
    twins = {v.stream_k for v in k.variants if v.stream_k}
    heads = {streamk.stream_k_dp_entry(v) for v in k.variants if v.stream_k}
    assert twins and heads, "no stream-K twins: this test checks nothing"
    entries = _ptx_entries(cache.get(k, arch, ptx=True).ptx)
    for name in twins:
        body = entries[name]
        assert ("barrier.cluster.wait" in body and "ld.shared::cluster" in body) == (arch == "sm_90"), \
            (arch, name)
    for name in heads:
        assert "barrier.cluster" not in entries[name], (arch, name)


# a daemon thread inside NVRTC (an uncached compile of `naive`), then the script's own lines
_MID_COMPILE = """
import os, sys, threading, time
from cute_gemm import registry
from cute_gemm.build import cache, compile
k = registry.find("naive")
def work():
    cache.get(k, "sm_90", entries=(k.entries[0],))
    print("compiled", flush=True)
t = threading.Thread(target=work, daemon=True)
t.start()
while compile.IN_FLIGHT.count == 0 and t.is_alive():
    time.sleep(0.0005)
assert t.is_alive(), "the compile ended before the script went on"
"""


def _mid_compile(script: str) -> list[str]:
    """`script` run after _MID_COMPILE in a fresh interpreter (cache off): its stdout's words."""
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _MID_COMPILE + script], capture_output=True,
                       text=True, env={**os.environ, "CUTE_GEMM_DISABLE_CACHE": "1"}, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_exit_waits_for_a_daemon_threads_compile():
    """The main thread returns while a daemon thread is inside NVRTC: exit waits for that
    compile (unguarded, exit ran NVRTC's static destructors under it: glibc aborted with
    "free(): invalid size", or SIGSEGV)."""
    assert _mid_compile('print("exiting", flush=True)\n') == ["exiting", "compiled"]


def test_a_child_forked_mid_compile_exits():
    """A process forked while a thread compiles has no such thread: its exit waits for
    none (it inherited the parent's count, and hung at exit)."""
    words = _mid_compile("""
pid = os.fork()
if pid == 0:
    sys.exit(0)
end = time.time() + 60
while time.time() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("child hung", flush=True)
""")
    # the child's status, and (at the parent's exit, in either order) its compile's end
    assert sorted(words) == ["0", "child", "compiled"] and "child 0" in " ".join(words), words


def test_no_compile_starts_in_a_thread_once_exit_began():
    import threading
    guard = comp._InFlight()
    guard.drain()
    with guard.compiling():     # the main thread: exit's own handlers may still compile
        pass
    raised = []

    def start():
        try:
            with guard.compiling():
                pass
        except cute_gemm.CuteGemmError as e:
            raised.append(str(e))
    t = threading.Thread(target=start)
    t.start()
    t.join()
    assert raised and "exiting" in raised[0] and guard.count == 0


def _one_entry(name: str, entry: str | None, block: str):
    """A parameter whose registered kernel's entry (its first: None) the compile pool builds
    alone ahead (the utility kernels, small, compile in the test)."""
    k = registry.lookup(name)
    if k is None:
        return pytest.param(name, entry, block)
    arch = "sm_90a" if k.arch_specific else "sm_90"
    return pytest.param(name, entry, block,
                        marks=pytest.mark.compiles(name, arch, entries=(entry or k.entries[0],)))


@pytest.mark.parametrize("name, entry, block", [_one_entry(*p) for p in [
    ("v2_tiled16", None, "GemmArgs"), ("cute_tiny_k", "cute_tiny_k_fp32_f32", "GemmArgsBatchEpi"),
    ("cute_pipelined", "cute_pipelined_ak_bn_b", "GemmArgsBatchEpi"),
    ("cute_pipelined", "cute_pipelined_ak_bn", "GemmArgsEpi"),
    ("cute_pipelined", "cute_pipelined_ak_bn_sk", "GemmArgsWsEpi"),
    ("cute_pipelined", "cute_pipelined_ak_bn_part", "GemmArgsWsEpi"),
    ("cute_mma_sm80_64x64", "cute_mma_sm80_bf16_bf16_ak_bn_sk", "GemmArgsWsEpi"),
    ("cute_wgmma_ws_128x128", "cute_wgmma_ws_bf16_bf16_ak_bk_b", "GemmArgsTmaBatchEpi"),
    ("scale2d", "scale2d_bf16_f32", "relayout.CopyArgs"), ("split_reduce", None, "ReduceArgs"),
    ("cute_3xtf32", "cute_3xtf32_split_a", "composed.SplitArgs")]])
def test_entry_parameters_are_those_its_launch_packs(name, entry, block):
    """The parameters the cubin's ELF gives an entry (.nv.info's KPARAM_INFO) are those of
    the argument block its launches pack (the GEMMs', the copies', the split's reduction,
    a composed kernel's passes); a launch.Site refuses any other before a launch (one past
    the block's end crashes the process)."""
    from cute_gemm.driver import kernel_args, launch
    from cute_gemm.plan import composed, launcher, relayout, resolve
    k = {"split_reduce": launcher.REDUCE, "scale2d": resolve.UTIL}.get(name) or registry.get(name)
    entry = entry or k.entries[0]
    c = cache.get(k, "sm_90a" if k.arch_specific else "sm_90", entries=(entry,))
    sizes = comp.param_sizes_from_cubin(c.cubin, entry)
    where, _, cls = block.rpartition(".")
    assert sizes == getattr({"": kernel_args, "relayout": relayout, "composed": composed}[where], cls).param_sizes
    f = launch.Function(name, entry, None, params=sizes)
    launch.Site(f, (1, 1, 1), (32, 1, 1), 0, True, sizes)       # (pdl: binds no driver call)
    with pytest.raises(cute_gemm.CudaError, match="internal error"):
        launch.Site(f, (1, 1, 1), (32, 1, 1), 0, True, kernel_args.GemmArgsWs.param_sizes)

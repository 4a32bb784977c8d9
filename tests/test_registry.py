"""The registry is data, and consistent with the kernel sources it names."""
from __future__ import annotations

import re

import pytest

from cute_gemm.base.precisions import PRECISION

import cute_gemm
from cute_gemm import registry
from cute_gemm.build import paths
from cute_gemm.plan import resolve
from cute_gemm.registry import Variant, records

KERNELS = registry.kernels()


def test_registry_not_empty_and_names_unique():
    names = [k.name for k in KERNELS]
    assert "naive" in names and "cute_smem" in names
    assert len(names) == len(set(names))
    assert [k.name for k in cute_gemm.kernels()] == names


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_kernel_file_opens_with_its_header(k):
    # (that every registered entry point is in the compiled kernel: test_compile.py, from
    # the cubin's own function list)
    src = (paths.kernels_dir() / k.source).read_text()
    assert src.lstrip().startswith("//"), "every kernel file opens with a header comment"


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_kernel_record_is_sane(k):
    assert k.family in ("handwritten", "cute")
    assert k.summary and k.seed
    assert 1 <= k.threads <= 1024
    assert k.min_arch >= 50
    assert set(k.precisions) <= set(registry.PRECISIONS) and k.precisions
    # a result in float32 or the operands' type; 8-bit operands' results in a 16-bit type too
    assert all(v.out_dtype in PRECISION[v.precision].outs and v.out_dtype in ("float32", v.dtype)
               or PRECISION[v.precision].itemsize == 1 for v in k.variants)
    assert not k.arch_specific or k.archs == (f"sm_{k.min_arch}a",)
    # run()'s fallback, per precision and result type: some entry point takes any operand
    # once copied (into the major it wants, leading dimension rounded to its alignment)
    # and any extents (no vector straddling a row's end)
    for p, o in {(v.precision, v.out_dtype) for v in k.variants}:
        assert any(v.precision == p and v.out_dtype == o and v.extent_align == 1
                   and all((v.align if r in v.align_roles else 1) <= resolve.PAD for r in "abc")
                   for v in k.variants), f"no fallback entry for {p} -> {o}"
    # the SIMT ladder's own fallback: plain row-major operands at any alignment
    if "fp32" in k.precisions:
        assert any(v.takes("a", "k", 1) and v.takes("b", "n", 1) and v.takes("c", "n", 1)
                   for v in k.variants), "needs a row-major, align-1 variant"
    # one source of truth: the typed configuration (records.KernelConfig) whose prelude the
    # kernel is compiled with gives the launch its block, tile and dynamic smem too
    # (cute_3xtf32's pre-pass has no knobs: its GEMM's configuration is checked instead)
    g = k.gemm_of.kernel if k.gemm_of is not None else k
    assert isinstance(g.config, registry.KernelConfig), "every kernel has a typed configuration"
    assert g.tile == g.config.tile and g.threads == g.config.threads
    for shape in [(1, 1, 1), (129, 67, 5), (1000, 1300, 700)]:
        assert g.dyn_smem(*shape) == g.config.smem(*shape)


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_grid_covers_output(k):
    for m, n, kk in [(1, 1, 1), (129, 67, 5), (1000, 1300, 700)]:
        gx, gy, gz = k.grid(m, n, kk, 132)
        assert gx >= 1 and gy >= 1 and gz >= 1
        assert gx < 2**31 and gy < 65536 and gz < 65536
        if isinstance(k.grid, registry.PersistentGrid):   # CTAs walk the tiles
            assert gx <= 132 * k.grid.ctas_per_sm
        elif k.tile:
            bm, bn, _ = k.tile
            assert gx * gy * gz >= -(-m // bm) * -(-n // bn)


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_every_extent_up_to_one_launch_takes_one_launch(k):
    """execute.gemm_device asks launch_extents only past records.ONE_LAUNCH: below it every
    kernel's grid and indices take the whole problem, either way round."""
    x = records.ONE_LAUNCH
    for transposed in (False, True):
        assert k.launch_extents(x, x, x, transposed) == (x, x, x)


def test_unknown_kernel_lists_valid_names():
    with pytest.raises(cute_gemm.UnknownKernelError) as e:
        registry.get("no_such_kernel")
    msg = str(e.value)
    assert "no_such_kernel" in msg
    for k in KERNELS:
        assert k.name in msg
    assert isinstance(e.value, KeyError)


def test_variant_takes():
    v = Variant("x", a_major="k", b_major="any", c_major="n", align=4)
    assert v.takes("a", "k", 4) and v.takes("b", "n", 4) and v.takes("c", "n", 4)
    assert v.takes("b", "k", 8) and v.takes("b", "strided", 4)
    assert not v.takes("a", "m", 4)
    assert not v.takes("a", "k", 2) and not v.takes("a", "k", 0)
    assert not v.takes("c", "m", 4)


def test_strip_smem_limit_message_names_limit():
    k = registry.Kernel(name="strip", family="handwritten", source="x.cu",
                        variants=(Variant("x"),), block=(32, 1, 1), grid=registry.TileGrid(32, 32),
                        summary="s", seed="v1", dyn_smem=registry.StripSmem(32, 32))
    k.check_limits(100, 100, 100, 227 * 1024)          # 25.6 KB: fine
    with pytest.raises(cute_gemm.ShapeLimitError) as e:
        k.check_limits(100, 100, 1000, 227 * 1024)      # 256 KB: too much
    assert str(227 * 1024) in str(e.value) and "K <= 908" in str(e.value)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 1023, 58112])
def test_strip_smem_covers_whole_16_byte_words(k):
    # ptxas reads a strip's tail as LDS.128 of its aligned 16 bytes: the allocation must
    # hold them (memcheck flagged row_smem at K = 1 before the rounding)
    s = registry.StripSmem(1, 0)
    assert s(1, 1, k) % 16 == 0 and 4 * k <= s(1, 1, k) < 4 * k + 16
    assert s(1, 1, s.max_k(232448)) <= 232448 < s(1, 1, s.max_k(232448) + 1)
    assert registry.StripSmem(3, 5)(1, 1, 7) == 224          # 8 strips of 7 floats = 224 B


def test_kernel_table_is_generated_from_registry():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, str(root / "scripts" / "gen_readme.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    page = (root / "docs" / "ladder" / "kernels.md").read_text()
    for k in registry.kernels():
        assert f"`{k.name}`" in page


@pytest.mark.parametrize("bk", [0, 12, 24, 48, 64])
def test_kquad_stages_refuse_a_blk_k_they_cannot_align(bk):
    """k-quad stages put quads 32/(BLK_K/4) words apart: at BLK_K 24 that was 5 words and the
    16-byte fragment loads faulted on the GPU. The configuration is refused before a compile
    (the kernel's PipeGeometry asserts the same); padded stages take any multiple of 4."""
    from cute_gemm.registry import ladder_cute
    with pytest.raises(ValueError, match="k-quad stages take BLK_K 4, 8, 16 or 32"):
        ladder_cute.PipelinedConfig(128, 192, bk, 3, thr_m=16, thr_n=24, kq_layout=7)
    assert ladder_cute.PipelinedConfig(128, 192, bk, 3, thr_m=16, thr_n=24).kq_layout == 0
    for ok in (8, 16, 32):
        ladder_cute.PipelinedConfig(128, 128, ok, 3, kq_layout=7)
    assert all(8 % (k.config.blk_k // 4) == 0 for k in KERNELS
               if isinstance(k.config, ladder_cute.PipelinedConfig) and k.config.kq_layout)


@pytest.mark.parametrize("consumers, producer, consumer, ok", [
    (2, 40, 232, True), (2, 24, 240, True), (2, 48, 224, True),
    (2, 48, 232, False),   # 512 of a 504-register pool: every consumer waited in setmaxnreg.inc
    (1, 40, 256, True), (3, 32, 160, True), (3, 32, 168, False)])
def test_setmaxnreg_stays_inside_the_launch_allocation(consumers, producer, consumer, ok):
    """setmaxnreg.inc waits until the CTA's pool holds the registers; the pool is the launch
    allocation (3 x 168 per thread for 384 threads), not the register file: 48 + 2 x 232 hung
    every launch of the batched twin on the H200. Such a configuration is refused."""
    from cute_gemm.registry import ladder_hopper
    make = lambda: ladder_hopper.WgmmaWsConfig(blk_m=64 * consumers, consumers=consumers,
                                               producer_regs=producer, consumer_regs=consumer)
    if ok:
        make()
    else:
        with pytest.raises(ValueError, match="launch allocation"):
            make()


def test_pipelined_config_one_name_per_knob():
    """The tuned kernel's knobs have one name, the same in Python and C++: every Config /
    Cfg member its sources read is a PipelinedConfig field (or the derived sk_smem), every
    field is read there and written into the generated struct, and the constants the
    registry shares with the headers (not knobs) agree with them."""
    import dataclasses
    from cute_gemm.registry import ladder_cute
    inc = paths.project_include_dir() / "cute_gemm"
    texts = [(paths.kernels_dir() / "cute" / "c3_pipelined.cu").read_text()]
    texts += [p.read_text() for p in sorted(inc.glob("*.cuh"))]
    code = [re.sub(r"//.*", "", t) for t in texts]                  # the code, not comments
    read = set().union(*(re.findall(r"\b(?:Config|Cfg)::(\w+)", t) for t in code))
    fields = {f.name for f in dataclasses.fields(ladder_cute.PipelinedConfig)} | {"sk_smem", "dyn_smem"}
    assert read == fields, (sorted(read - fields), sorted(fields - read))
    for k in KERNELS:
        if isinstance(k.config, ladder_cute.PipelinedConfig):
            cpp = k.config.cpp(k.name)
            assert set(re.findall(r"static constexpr \w+(?:::\w+)? (\w+) =", cpp)) == fields, k.name
    header = (inc / "pipelined_config.cuh").read_text()
    epi = re.search(r"enum class Epi \{([^}]*)\}", header).group(1)
    assert tuple(e.strip() for e in epi.split(",")) == ladder_cute.EPILOGUES
    with pytest.raises(ValueError, match="epi_ak_bn"):
        ladder_cute.PipelinedConfig(128, 128, 8, 4, epi_ak_bn="vector")


def test_device_constants_have_one_home_in_python():
    """The constants host and device code share (records.STREAM_K_COUNTERS, ladder_cute.
    SMEM_PAD and WARP_M) are written once, in Python: every typed configuration defines the
    CUTE_GEMM_* macros in front of its kernel source with the Python values, and no kernel
    source or header defines them or restates their values."""
    from cute_gemm.build import compile as cg_compile
    from cute_gemm.plan import streamk
    from cute_gemm.registry import ladder_cute, ladder_hopper, records
    assert streamk.STREAM_K_COUNTERS is records.STREAM_K_COUNTERS
    want = {"STREAM_K_COUNTERS": records.STREAM_K_COUNTERS}
    pipe = dict(want, SMEM_PAD=ladder_cute.SMEM_PAD, WARP_M=ladder_cute.WARP_M)
    configs = [k for k in KERNELS
               if isinstance(k.config, (ladder_cute.PipelinedConfig, ladder_hopper.WgmmaWsConfig))]
    assert configs
    for k in configs:
        src = cg_compile.read_source(k)
        head = src[:src.index("#line 1")]
        defined = {n: int(v) for n, v in re.findall(r"#define CUTE_GEMM_(\w+) (-?\d+)", head)}
        assert defined == (pipe if isinstance(k.config, ladder_cute.PipelinedConfig) else want), k.name
        # the derived dynamic smem goes in too: the kernel checks what it addresses against it
        assert f"static constexpr int dyn_smem = {k.config.dyn_smem};" in head, k.name
    inc = paths.project_include_dir() / "cute_gemm"
    texts = {p.name: p.read_text() for p in sorted(inc.glob("*.cuh"))}
    texts |= {p.name: p.read_text() for p in sorted(paths.kernels_dir().rglob("*.cu"))}
    read = set()
    for name, text in texts.items():
        assert "#define CUTE_GEMM_" not in text, name
        read |= set(re.findall(r"\bCUTE_GEMM_(STREAM_K_COUNTERS|SMEM_PAD|WARP_M)\b", text))
    assert read == set(pipe)
    assert re.search(r"kStreamKCounters = CUTE_GEMM_STREAM_K_COUNTERS;", texts["streamk.cuh"])
    for const in ("kWarpM = CUTE_GEMM_WARP_M;", "kSmemPad = CUTE_GEMM_SMEM_PAD;"):
        assert const in texts["pipelined_config.cuh"]
    assert records.device_constants(A=1, B_C=2) == "#define CUTE_GEMM_A 1\n#define CUTE_GEMM_B_C 2\n"


def test_no_source_is_a_maze_of_conditionals():
    """Variants are types and `if constexpr`, not the preprocessor: a handful of
    conditionals at most per kernel source or shared header (include guards are
    #pragma once)."""
    files = (list(paths.kernels_dir().rglob("*.cu"))
             + list(paths.project_include_dir().rglob("*.cuh")))
    assert files
    for f in files:
        n = len(re.findall(r"^\s*#\s*if", f.read_text(), re.M))
        assert n <= 5, f"{f.name}: {n} preprocessor conditionals"


def test_kernel_sources_take_no_defaults():
    """A kernel's values come from its configuration's prelude alone (compile.read_source): no
    source keeps an `#ifndef NAME / #define NAME default` fallback, so a compile without the
    prelude fails on an undefined name instead of taking other values; and the prelude is
    the one way in: no -D option."""
    from cute_gemm.build import compile as cg_compile
    for path in sorted(paths.kernels_dir().rglob("*.cu")):
        assert "#ifndef" not in path.read_text(), path.name
    for k in registry.compiled():
        assert not any(o.startswith("-D") for o in cg_compile.options(k, k.archs[-1])), k.name
        if k.config is not None:
            src = cg_compile.read_source(k)
            assert src.startswith(k.config.cpp(k.name)), k.name
            assert f'#line 1 "{k.source}"\n' in src
            # its own entry points, not the others its source defines
            assert re.findall(r"CG_WANT_(\w+) 1", src.split("#line 1")[0]) == list(k.entries), k.name


def test_prelude_constants_name_the_config():
    """The plain-constant configurations write every knob that is set as a constexpr of the
    name the source reads (and nothing that is unset), and a stage's block agrees with them."""
    from cute_gemm.registry import ladder_cute, ladder_handwritten
    v9 = registry.get("v9_warptile").config.cpp("v9_warptile")
    assert "constexpr int THREADS = 256;\n" in v9 and "constexpr int MIN_BLOCKS = 2;\n" in v9
    assert "BLOCK_X" not in v9 and "#define" not in v9
    naive = registry.get("naive").config.cpp("naive")
    assert "constexpr int BLOCK_X = 16;" in naive and "BM" not in naive
    c3 = registry.get("cute_multistage").config.cpp("cute_multistage")
    assert re.findall(r"constexpr int (\w+) = (\d+);", c3) == [
        ("THREADS", "256"), ("BLK_M", "128"), ("BLK_N", "128"), ("BLK_K", "8"), ("STAGES", "4")]
    assert registry.get("v1_strip").tile is None and registry.get("v1_strip").config.tile is None
    assert isinstance(registry.get("v2_tiled16").config, ladder_handwritten.LadderConfig)
    assert isinstance(registry.get("cute_wgmma").config, ladder_cute.TileConfig)
    ws = registry.get("cute_wgmma_ws_promote").config.cpp("x")
    assert "#define CG_WS_ONLY 1\n" in ws and "#define CG_WS_TAIL_SPLIT 1\n" in ws
    assert "#define CG_WS_ONLY 0\n#define CG_WS_TAIL_SPLIT 1\n" in registry.get("cute_wgmma_ws").config.cpp("x")

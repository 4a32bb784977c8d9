"""Layout dumps (cute_gemm.layouts): a recipe for every CuTe kernel, checked against the kernel.

Two kinds of test:
  * pure Python (always run): every registered CuTe kernel has a recipe, built from what
    it is compiled with (its typed config's prelude); every name a recipe shows is
    one the kernel source or a project header it includes defines; the
    partition and bank-conflict analyses (partitions cover their tile, TV layouts land in
    theirs, the k-quad stages take a warp's transposed stores without bank conflicts);
    the print formats on top of pycute.
  * nvcc (with CUTE_GEMM_TEST_FULL=1, as CI runs it; skipped without nvcc or the CuTe
    headers): for each kernel, a generated program
    holds the kernel's own source as NVRTC sees it (compile.read_source: after its config's
    prelude), and prints
    with CuTe's `print` / `print_layout` every layout the recipe shows, every thread's
    partition and the TV layouts, from the kernel's own definitions (layout_cppcheck.py).
    Its output must equal the dump byte for byte: a kernel and its dump cannot drift apart.
    Programs are cached under the system temp dir by a hash of everything they depend on,
    so a rerun with nothing changed skips the compile (~10-35 CPU-s per kernel, host code only).
"""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile

import pytest

from cute_gemm import layouts as L
from cute_gemm.build import compile as cg_compile
from cute_gemm import registry
from cute_gemm.build import paths
from cute_gemm.layouts import algebra as A, model
from cute_gemm.layouts.algebra import Dyn, Layout, TiledCopy, Swizzled, tile_to_shape

import layout_cppcheck as cppcheck
import matrix

# (a composed kernel, Kernel.gemm_of, has the layouts of the GEMM it runs and no recipe)
CUTE = tuple(k for k in registry.kernels("cute") if k.gemm_of is None)


# ---- bank-conflict counts the kernels' comments promise (only these tests need them) ----
def bank_ways(tv: Layout, stage: Layout, rows: int, banks: int = 32) -> int:
    """Worst bank multiplicity of a warp's 4-byte stores: thread t's value v of a TiledCopy
    (TV layout -> index in its (rows, k) tile) stored at stage(m, k), one STS.32 per value
    index, `banks` banks of 4 bytes. 1 = conflict-free. stage: (m, k[, buffer 0])."""
    nthreads, nvals = (int(x) for x in A.product_each(tv.shape)[:2])
    buf = (0,) * (len(stage) - 2)
    worst = 0
    for w in range(nthreads // 32):
        for v in range(nvals):
            hit = [stage((idx % rows, idx // rows) + buf) % banks
                   for idx in (A.value(tv, t, v) for t in range(32 * w, 32 * w + 32))]
            worst = max(worst, max(hit.count(b) for b in hit))
    return worst


def chunk_groups(atom, elem_bytes: int, kmajor: bool) -> list[list[int]]:
    """A 128-byte swizzle atom as 8 lines x 8 16-byte chunks: [line][logical chunk] -> the
    bank group (4 banks, 16 bytes) it lands in. Lines: the rows of a k-major atom (8, 128 B),
    the k columns of an mn-major one (128 B, 8). Conflict-free for a warp that reads or
    writes 16 bytes per thread: every line's chunks in 8 groups (a whole line at once: TMA,
    cp.async), and every chunk's 8 lines in 8 groups (ldmatrix: 8 lines, one chunk each)."""
    e = 16 // elem_bytes
    at = (lambda ln, c: A.value(atom, ln, c * e)) if kmajor else (lambda ln, c: A.value(atom, c * e, ln))
    return [[at(ln, c) * elem_bytes // 16 % 8 for c in range(8)] for ln in range(8)]


@pytest.fixture(scope="module")
def recipes():
    return {k.name: L.build(k) for k in CUTE}


# ---- every CuTe kernel has a recipe, built from its registry entry ----------------------------

@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_every_cute_kernel_has_a_recipe(kernel):
    assert L.has_recipe(kernel), (
        f"registered CuTe kernel {kernel.name!r} ({kernel.source}) has no layout recipe; "
        f"add one to cute_gemm/layouts/recipes.py")
    assert any(True for _ in L.build(kernel).items())


def test_values_is_every_value_in_index_order():
    """algebra.values (what the dumps and the partition checks read) is layout(i) for each
    i, on nested, broadcast and swizzled layouts."""
    from cute_gemm.layouts import algebra
    cases = [algebra.Layout((4, 8), (8, 1)), algebra.Layout(((2, 2), (4, 2)), ((1, 16), (2, 64))),
             algebra.Layout((3, (2, 5)), (10, (1, 2))), algebra.Layout((2, 3), (0, 4)),
             algebra.Swizzled(algebra.pycute.Swizzle(3, 3, 3), algebra.make_layout((8, 64)))]
    for lay in cases:
        assert algebra.values(lay) == [algebra.value(lay, i) for i in range(algebra.size(lay))]


def test_missing_recipe_fails_loudly():
    fake = dataclasses.replace(CUTE[0], name="cute_nothing", source="cute/c9_nothing.cu")
    with pytest.raises(KeyError, match="no layout recipe for kernel 'cute_nothing'"):
        L.build(fake)


def _other_tile(k):
    """k compiled with BLK_M doubled in its typed config (a ping-pong one's BLK_N halved: its
    warpgroups' tiles are of 64 or 128 rows), and that tile."""
    c = k.config
    if getattr(c, "pingpong", False):
        return dataclasses.replace(k, config=dataclasses.replace(c, blk_n=c.blk_n // 2)), (c.blk_m, c.blk_n // 2)
    bm, bn, _ = k.tile
    if hasattr(c, "consumers"):   # WgmmaWsConfig: 64 rows per consumer warpgroup
        wide = dataclasses.replace(c, blk_m=2 * c.blk_m, consumers=2 * c.consumers, consumer_regs=24)
        pool = (1 + wide.consumers) * wide.launch_regs        # setmaxnreg's pool
        return dataclasses.replace(k, config=dataclasses.replace(
            wide, consumer_regs=(pool - c.producer_regs) // wide.consumers // 8 * 8)), (2 * bm, bn)
    return dataclasses.replace(k, config=dataclasses.replace(c, blk_m=2 * c.blk_m)), (2 * bm, bn)


def test_recipes_read_tile_sizes_from_the_registry(recipes):
    for k in CUTE:
        bm, bn, _ = k.tile
        items = {it.name.rsplit("/", 1)[-1]: it for it in recipes[k.name].items()}
        assert A.product_each(items["gC"].layout.shape) == (bm, bn), k.name
        other, tile = _other_tile(k)
        gC = next(it for it in L.build(other).items() if it.name.endswith("/gC"))
        assert A.product_each(gC.layout.shape) == tile, k.name


def _identifiers(cpp: str) -> set[str]:
    """The names a Def's C++ relies on: the one it gives (`CpVecM{}`, `smem_layout_a()`, the
    member in `cg::PipeGeometry<Config>::TiledMma{}`) and every cg:: name in it."""
    bare = cpp
    while (stripped := re.sub(r"<[^<>]*>", "", bare)) != bare:      # template arguments
        bare = stripped
    return {re.match(r"[\w:]+", bare).group(0).rsplit("::", 1)[-1],
            *re.findall(r"cg::(?:\w+::)*(\w+)", cpp)}          # cg::sm90::OperandTile: OperandTile


def _source_and_headers(kernel) -> tuple[str, str]:
    """(the kernel source, it and the project headers it includes, transitively)."""
    src = (paths.kernels_dir() / kernel.source).read_text()
    texts, todo, seen = [], [src], set()
    while todo:
        t = todo.pop()
        texts.append(t)
        for inc in re.findall(r"^#include <(cute_gemm/[\w./]+)>", t, re.M):
            if inc not in seen:
                seen.add(inc)
                todo.append((paths.project_include_dir() / inc).read_text())
    return src, "\n".join(texts)


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_recipes_name_only_what_the_kernel_defines(recipes, kernel):
    """Without nvcc: every Def a recipe shows is defined by that name in the kernel source or
    a project header it includes (a function template `name()`, a type `using Name`, a
    `struct`, a constexpr variable), so the nvcc check below prints the kernel's own layout
    and not a copy of it. A Def the kernel builds only in its function (local) is that
    expression verbatim, as are the local declarations it uses (Recipe.locals)."""
    src, text = _source_and_headers(kernel)
    rec = recipes[kernel.name]
    names, local = set(), set(rec.locals)
    for it in rec.items():
        for d in (it.source, getattr(it.source, "layout", None), getattr(it.source, "by", None),
                  it.part.by if it.part else None):
            if isinstance(d, model.Def):
                (local.add(d.cpp) if d.local else names.update(_identifiers(d.cpp)))
    assert names
    for name in sorted(names):
        assert re.search(rf"^\s*(using|struct|constexpr \w+|CUTE_HOST_DEVICE constexpr auto) "
                         rf"{name}\b", text, re.M), \
            f"neither {kernel.source} nor a project header it includes defines {name!r}"
    for cpp in sorted(local):
        assert _squeeze(cpp) in _squeeze(src), f"{kernel.source} has no {cpp!r}"


@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_check_program_holds_the_source_nvrtc_compiles(recipes, kernel):
    # the kernel as the registry builds it: its config's prelude included
    prog = cppcheck.program(recipes[kernel.name])
    assert cg_compile.read_source(kernel) in prog and kernel.config.cpp(kernel.name) in prog
    # host code only: nvcc's device pass would instantiate every entry point again (~40 % of its time)
    assert prog.index("#ifndef __CUDA_ARCH__") < prog.index(cg_compile.read_source(kernel))
    assert prog.rstrip().endswith("#endif  // __CUDA_ARCH__")


# ---- analyses: partitions, TV layouts, bank conflicts -------------------------------------------

@pytest.mark.parametrize("kernel", matrix.per_configuration(CUTE))
def test_self_check_passes(recipes, kernel):
    assert model.check(recipes[kernel.name]) == []


def test_partitions_cover_their_tile(recipes):
    for r in recipes.values():
        for it in r.items():
            if it.kind != "partition":
                continue
            rows, cols = it.tile
            counts = {len(o) for o in it.owners}
            assert len(counts) == 1 and 0 not in counts, f"{it.name}: uneven owners {counts}"
            if it.exact:
                assert counts == {1}, f"{it.name}: elements owned {counts} times"
            n = len(it.values_of(it.thread))
            owners = len(range(0, it.nthreads, it.owner_step))   # wgmma SS: one per warpgroup
            assert n * owners == rows * cols * counts.pop(), it.name
            own, rep = it.owners, it.thread - it.thread % it.owner_step
            assert all(rep in own[r_ + c * rows] for (r_, c) in it.values_of(it.thread))


def test_check_reports_a_broken_partition(recipes):
    rec = recipes["cute_smem"]
    it = next(i for i in rec.items() if i.name.endswith("/tCgC"))
    broken = dataclasses.replace(it, part=lambda v, t: A.local_partition(v, Layout((16, 16)), t % 128))
    sec = dataclasses.replace(rec.sections[-1], items=[broken])
    problems = model.check(dataclasses.replace(rec, sections=[sec]))
    assert problems and "owned [0, 2] times" in problems[0]


def test_tv_layouts_land_in_their_tile(recipes):
    for r in recipes.values():
        for it in r.items():
            if it.kind == "tv":
                rows, cols = it.tile
                cells = it.tv_cells()
                assert set(cells) == {(i, j) for i in range(rows) for j in range(cols)}, it.name
                if "copy" in it.name:      # a copy touches every element exactly once
                    assert all(len(v) == 1 for v in cells.values()), it.name


def test_kquad_stages_take_the_transposed_stores_without_bank_conflicts(recipes):
    # kquad_stages.cuh (Config::kq_layout): a warp's k-major vectors (8 rows x 4 k-quads at
    # BLK_K 16) stored transposed, one k per STS.32, hit 32 distinct banks in the k-quad
    # stages; in the padded ones (columns BLK+4 apart) quads 0/2 and 1/3 share banks
    k = next(k for k in CUTE if getattr(k.config, "kq_layout", 0) & 3 == 3 and k.tile[2] == 16)
    items = {it.name: it for it in recipes[k.name].items()}
    checked = 0
    for name, it in items.items():
        sec, leaf = name.rsplit("/", 1)
        if "VecK" in sec and leaf in ("sA", "sB"):
            tv = items[f"{sec}/copy_TV"]
            rows = tv.tile[0]
            assert bank_ways(tv.layout, it.layout, rows) == 1, name
            assert bank_ways(tv.layout, items[f"{k.name}/{leaf}"].layout, rows) == 2, name
            checked += 1
    assert checked == 4      # A and B, register-staged (LdVecK) and from raw stages (CpVecK)


def test_padded_stages_take_4_byte_k_stores_without_bank_conflicts(recipes):
    # c2_tiled.cu: (BLK+4) % 32 == 4, so SclK's 4-byte k-major stores (4 rows x 8 k per
    # warp) land in banks m + 4k: 32 distinct; unpadded (c1's layout) they would collide
    items = {it.name: it for it in recipes["cute_tiled"].items()}
    tv, sA = items["cute_tiled/A_CG_DA_k_SclK/copy_TV"], items["cute_tiled/sA"]
    assert bank_ways(tv.layout, sA.layout, tv.tile[0]) == 1
    unpadded = A.make_layout(A.product_each(sA.layout.shape))
    assert bank_ways(tv.layout, unpadded, tv.tile[0]) == 8


def test_swizzle_128b_atoms_spread_lines_and_columns_over_all_bank_groups(recipes):
    # Swizzle<3,4,3> on bytes (c4: Swizzle<3,3,3> on 16-bit elements): chunk c of line r at
    # c ^ (r % 8). Every atom the tensor-core kernels use: a 128-byte line's 8 chunks fill
    # the 8 bank groups (TMA / cp.async writes), and one chunk of 8 lines does too (an
    # ldmatrix phase, a wgmma core matrix): no conflicts. Unswizzled, a column walk hits
    # one group 8 times.
    checked = 0
    for name in ("cute_mma_sm80", "cute_wgmma", "cute_wgmma_ws"):
        for it in recipes[name].items():
            if it.kind != "banks":
                continue
            kmajor = it.layout.shape[0] == 8
            groups = chunk_groups(it.layout, it.elem_bytes, kmajor)
            assert all(sorted(line) == list(range(8)) for line in groups), it.name
            assert all(sorted(col) == list(range(8)) for col in zip(*groups)), it.name
            banks = {b for row in it.table for b in row}
            assert banks == set(range(32)), it.name
            plain = chunk_groups(it.layout.layout, it.elem_bytes, kmajor)
            assert max(col.count(col[0]) for col in zip(*plain)) == 8, it.name
            checked += 1
    assert checked == 2 + 6 + 7       # c4: k/mn; c5, c6: A/B, 16-bit k/mn, tf32 k; c6: tf32 register A


@pytest.mark.parametrize("name", ["cute_wgmma", "cute_wgmma_ws"])
def test_wgmma_accumulators_cover_the_tile_once(recipes, name):
    # CLayout_64xN per warpgroup: the consumer threads hold every (m, n) of the CTA tile
    # exactly once, BLK_M * BLK_N / threads values each
    k = registry.get(name)
    items = {it.name.rsplit("/", 1)[-1]: it for it in recipes[name].items()}
    tv, part = items["mma_C_TV"], items["tCgC"]
    cells = tv.tv_cells()
    nthreads = A.product_each(tv.layout.shape)[0]
    assert nthreads == part.nthreads == 128 * getattr(k.config, "consumers", 1)
    assert all(len(v) == 1 for v in cells.values()) and len(cells) == tv.tile[0] * tv.tile[1]
    assert {len(o) for o in part.owners} == {1} and part.tile == k.tile[:2]
    assert len(part.values_of(part.thread)) * nthreads == k.tile[0] * k.tile[1]


@pytest.mark.parametrize("name", ["cute_wgmma", "cute_wgmma_ws"])
def test_tma_boxes_fill_one_stage_exactly(recipes, name):
    # records.TmaBoxes (the boxes the launcher encodes) against the GMMA stage layouts: each
    # stage element comes from exactly one box and each box lands as one dense block;
    # a box of the wrong order (mn-major slabs m first) or size fails
    boxes = [it for it in recipes[name].items() if it.kind == "boxes"]
    assert len(boxes) == 6 + (name == "cute_wgmma_ws")      # c6: the tf32 register operand
    for it in boxes:
        rows, cols = it.tile
        assert all(v >= 0 for row in it.table for v in row), it.name
        assert model.box_problems(it.name, it.layout, it.box[:2], it.box[2]) == []
        b0, b1, kmajor = it.box
        nbox = len({v for row in it.table for v in row})
        assert nbox * b0 * b1 == rows * cols, it.name
        assert model.box_problems(it.name, it.layout, (b0, b1 + 8), kmajor), it.name
        if not kmajor:           # the atoms stacked along m first: a box would be strided
            atom = Swizzled(it.layout.sw, Layout((b0, 8), (1, b0)), 0, it.layout.ptr_bits)
            assert model.box_problems(it.name, tile_to_shape(atom, (rows, cols, 1)), (b0, b1),
                                         kmajor), it.name


def test_register_operand_reads_the_rows_the_epilogue_stores_without_bank_conflicts(recipes):
    # include/cute_gemm/sm90_register_operand.cuh, modelled: RowMap (fragment row f -> operand
    # row) and Reader's byte offsets, against the register operand's stage as the recipe draws
    # it (GMMA's m-major 128-byte swizzle, the layout TMA fills). Every (thread, value) of every
    # k atom reads the element of row RowMap(f) and k that wgmma's A fragment wants there, the
    # map is a permutation, and each half warp's LDS.64 hits 32 distinct banks.
    import pycute
    items = {it.name.rsplit("/", 1)[-1]: it for it in recipes["cute_wgmma_ws"].items()}
    stage = items["sA_tf32"].layout                  # (BLK_M, BLK_K, STAGES) -> element offset
    bm, bk = A.product_each(stage.shape)[:2]
    assert (bm, bk) == (registry.get("cute_wgmma_ws").config.blk_m, 32)
    row_map = pycute.Layout(((2, 2, 2), 2, (2, 2), bm // 64), ((2, 16, 4), 1, (8, 32), 64))
    assert sorted(row_map(f) for f in range(bm)) == list(range(bm))

    def reader_bytes(thread, j):                     # Reader::Reader, off[j]
        lane, w, g = thread % 32, thread // 32 % 4, thread // 128
        q, kq = lane // 4, lane % 4
        box, chunk, line = 2 * g + (w >> 1), 2 * (w & 1) + 4 * (q >> 1 & 1) + (q >> 2), kq + 4 * j
        return 4 * (box * 32 * bk + line * 32 + 4 * (chunk ^ line) + 2 * (q & 1))

    for thread in range(bm * 2):
        lane, w, g = thread % 32, thread // 32 % 4, thread // 128
        for a in range(bk // 8):
            for j in range(2):
                for h in range(2):                   # ALayout_64x8: value 2j + h
                    f, k = 64 * g + 16 * w + lane // 4 + 8 * h, 8 * a + lane % 4 + 4 * j
                    got = (reader_bytes(thread, j) + 1024 * a) // 4 + h
                    assert got == stage(row_map(f), k, 0), (thread, a, j, h)
    for a in range(bk // 8):
        for j in range(2):
            for half in range(0, bm * 2, 16):
                words = {(reader_bytes(t, j) + 1024 * a) // 4 + h for t in range(half, half + 16)
                         for h in range(2)}
                assert sorted(x % 32 for x in words) == list(range(32)), (a, j, half)


# ---- what algebra.py adds to pycute -------------------------------------------------------------

def test_print_formats():
    assert L.fmt(A.make_layout((4, 8))) == "(_4,_8):(_1,_4)"
    assert L.fmt(Layout((Dyn(128), 8), (Dyn(256), 1))) == "(128,_8):(256,_1)"
    assert L.fmt(A.make_layout((2, (1, 4)))) == "(_2,(_1,_4)):(_1,(_0,_2))"
    assert L.fmt(A.make_layout((4, 8), "row")) == "(_4,_8):(_8,_1)"
    # captured from CuTe C++ (nvcc 13.0, cutlass 4.2): print_layout(make_layout(make_shape(_4{}, _8{})))
    assert A.print_layout(A.make_layout((4, 8))) == (
        "(_4,_8):(_1,_4)\n"
        "       0    1    2    3    4    5    6    7 \n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 0  |  0 |  4 |  8 | 12 | 16 | 20 | 24 | 28 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 1  |  1 |  5 |  9 | 13 | 17 | 21 | 25 | 29 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 2  |  2 |  6 | 10 | 14 | 18 | 22 | 26 | 30 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 3  |  3 |  7 | 11 | 15 | 19 | 23 | 27 | 31 |\n"
        "    +----+----+----+----+----+----+----+----+\n")


def test_run_time_integers_survive_pycute():
    # the global tile of a 256x256 row-major A after local_tile: run-time strides print bare
    gA = A.local_tile(A.View(Layout((Dyn(256), Dyn(256)), (Dyn(256), Dyn(1)))),
                      (128, 128, 8), (0, 0, None), (1, None, 1))
    assert L.fmt(gA.layout) == "(_128,_8,32):(256,1,8)"
    # a 16-byte copy along k: CuTe's TV layout (captured from get_layoutS_TV)
    cp = TiledCopy(4, Layout((128, 2), (2, 1)), A.make_layout((1, 4)))
    assert L.fmt(cp.layout_tv("S")) == "((_2,_128),(_4,_1)):((_512,_1),(_128,_0))"


def test_cli_text(capsys):
    from cute_gemm.cli import main
    assert main(["layouts", "cute_gmem", "--full", "--thread", "5", "--shape", "200x300x100"]) == 0
    out = capsys.readouterr().out
    assert "(_16,_8,13):(100,_1,_8)" in out     # gA, 200x100 row-major A (static unit stride): 13 k-tiles
    assert "thread 5 owns" in out


# ---- against the kernels, compiled with nvcc ----------------------------------------------------

# The GMMA kernels' recipes (recipes.py, c5/c6) have no nvcc program yet: their check program
# would need GMMA's smem_ptr-flagged atoms made into swizzled smem tensors, and a CTA tiler
# from their own names (c6's Config has no blk_k). Their layouts are
# checked in Python only (self-checks, bank maps, boxes, accumulator coverage above).
NVCC_CHECKED = tuple(k for k in CUTE if not k.arch_specific)


@pytest.fixture(scope="module")
def cute_output(recipes):
    if not matrix.FULL:     # a separate 10-40 CPU-s host compile per kernel, and nvcc to have
        pytest.skip(f"the nvcc layout check is part of the whole matrix: {matrix.WHY}")
    nvcc = cppcheck.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (set CUTE_GEMM_NVCC or put nvcc on PATH): "
                    "cannot print the kernels' layouts with CuTe C++")
    if cppcheck.cute_include_dir() is None:
        pytest.skip("CuTe headers (nvidia-cutlass wheel) not found")
    # the module's recipes: their partitions' owners are computed once, for the self-checks
    recs = [recipes[k.name] for k in NVCC_CHECKED]
    cache = os.path.join(tempfile.gettempdir(), f"cute_gemm_layout_check_{os.getuid()}")
    return cppcheck.split_dump(cppcheck.run(recs, cache, nvcc)), cppcheck.split_dump(cppcheck.expected_output(recs))


@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_dump_is_what_the_compiled_kernel_uses(cute_output, kernel):
    if kernel not in NVCC_CHECKED:
        pytest.skip("no nvcc layout program for the GMMA kernels yet (not even with "
                    "CUTE_GEMM_TEST_FULL=1): checked in Python only, see NVCC_CHECKED")
    got, exp = cute_output
    names = [n for n in exp if n.startswith(kernel.name + "/")]
    assert names and [n for n in got if n.startswith(kernel.name + "/")] == names
    bad = []
    for n in names:
        if got[n] != exp[n]:
            g, e = got[n].splitlines(), exp[n].splitlines()
            first = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
            bad.append(f"{n}: line {first}: CuTe {g[first] if first < len(g) else '<end>'!r} "
                       f"vs the dump {e[first] if first < len(e) else '<end>'!r}")
    assert not bad, "\n".join(bad)


# ---- pictures -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cute_smem", "cute_tiled", "cute_mma_sm80"]
                         + (["cute_wgmma_ws"] if matrix.FULL else []))
def test_svg_pictures_are_well_formed(recipes, name):
    import xml.etree.ElementTree as ET
    from cute_gemm.layouts import draw as D
    for it in recipes[name].items():
        root = ET.fromstring(D.to_svg(D.grid_of(it)))
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
        assert it.title in texts, it.name
        if it.kind == "tv" and A.size(it.layout) <= 64 * 64:
            assert any(t and t.startswith("T") for t in texts), it.name


def test_ldmatrix_address_maps_fill_the_mma_registers_they_name():
    """The ldmatrix.x4 address maps of an A atom (algebra.ldsm_x4_a, from PTX: lanes 8j..8j+7
    address matrix j): every element is addressed once, by a lane of the matrix that the
    TiledMMA's A layout (SM80_16x8x16, CuTe's) puts in the receiving lane's register j."""
    from cute_gemm.layouts.algebra import SM80_16x8x16, ldsm_x4_a
    a_tv = SM80_16x8x16.a_tv
    reg = {A.value(a_tv, t, v): v // 2 for t in range(32) for v in range(8)}
    assert sorted(reg) == list(range(256))
    for kmajor in (True, False):
        lay = ldsm_x4_a(kmajor)
        lane = {A.value(lay, t, v): t for t in range(32) for v in range(8)}
        assert sorted(lane) == list(range(256)), kmajor
        assert all(reg[e] == lane[e] // 8 for e in range(256)), kmajor
        # a lane's 8 values are one 16-byte row: contiguous along k (k-major) or m (m-major)
        step = 16 if kmajor else 1
        assert all(A.value(lay, t, v) == A.value(lay, t, 0) + step * v for t in range(32) for v in range(8))


@pytest.mark.parametrize("name", [k.name for k in CUTE if getattr(k.config, "batched", False)])
def test_a_batched_kernel_shows_its_l_modes(recipes, name):
    """The `_b` twins' dumps: each operand's tile with the batch's two modes after the matrix
    (CuTe's L modes), A broadcast over L0 (stride 0: every problem of a row reads one A), B
    and C packed problem after problem; element (i, j) of problem (l0, l1) where the tensor
    maps put it."""
    M, N, K = L.PROBLEM
    l0, l1 = L.recipes.BATCH
    items = {it.name.rsplit("/", 1)[-1]: it for it in recipes[name].items()}
    for op, strides in (("A", [0, M * K]), ("B", [l1 * N * K, N * K]), ("C", [l1 * M * N, M * N])):
        lay = items[f"g{op}_batch"].layout
        assert A.product_each(lay.shape)[-2:] == (l0, l1), (op, lay)
        assert [int(s) for s in lay.stride[-2:]] == strides, (op, lay)
        at = lambda *c: int(A.value(lay, *c))          # noqa: E731
        z = (0,) * (A.rank(lay) - 4)                  # the k-tile mode of A and B
        assert at(3, 5, *z, 1, 2) - at(3, 5, *z, 0, 0) == strides[0] + 2 * strides[1]

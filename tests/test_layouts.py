"""Layout dumps (cute_gemm.layouts): recipes for every CuTe kernel, checked against CuTe C++.

Two kinds of test:
  * pure Python (always run): every registered CuTe kernel has a recipe; partitions cover
    their tile (exactly once where the partition is exact); TV layouts land in their tile;
    sizes and cosizes; the ported algebra agrees with pycute as functions.
  * nvcc (skipped without nvcc or the CuTe headers): one generated host program prints every
    recipe layout with CuTe's own `print` / `print_layout`, every thread's partition, and the
    TV layouts; its output must equal ours byte for byte. The binary is cached under the
    system temp dir keyed by a hash of its sources and nvcc's path, so a rerun with unchanged
    recipes skips the (~20-80 s on 2 cores) compile.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

import pytest
import pycute

from cute_gemm import layouts as L
from cute_gemm import registry

CUTE = registry.kernels("cute")


@pytest.fixture(scope="module")
def recipes():
    return {k.name: L.build(k) for k in CUTE}


# ---- every CuTe kernel has a recipe ---------------------------------------------------------

@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_every_cute_kernel_has_a_recipe(kernel):
    assert L.has_recipe(kernel), (
        f"registered CuTe kernel {kernel.name!r} ({kernel.source}) has no layout recipe; "
        f"add one to cute_gemm/layouts.py")
    rec = L.build(kernel)
    assert any(True for _ in rec.items())


def test_missing_recipe_fails_loudly():
    import dataclasses
    fake = dataclasses.replace(CUTE[0], name="cute_nothing", source="cute/c9_nothing.cu")
    with pytest.raises(KeyError, match="no layout recipe for kernel 'cute_nothing'"):
        L.build(fake)


def test_recipes_read_tile_sizes_from_the_registry(recipes):
    for k in CUTE:
        items = {it.name.rsplit("/", 1)[-1]: it for it in recipes[k.name].items()}
        gC = items["gC"].layout
        assert L.product_each(gC.shape) == tuple(k.tile[:2]), k.name


# ---- pure-Python properties -----------------------------------------------------------------

def _partitions(recipes):
    return [(name, it) for name, r in recipes.items() for it in r.items() if it.kind == "partition"]


def test_partitions_cover_their_tile(recipes):
    for name, it in _partitions(recipes):
        rows, cols = it.tile
        own = it.owners()
        counts = {len(o) for o in own}
        assert len(counts) == 1 and 0 not in counts, f"{it.name}: uneven or missing owners {counts}"
        if it.exact:
            assert counts == {1}, f"{it.name}: elements owned {counts} times"
        # every thread holds the same number of elements, and all of them lie in the tile
        n = len(it.values_of(it.thread))
        assert n * it.nthreads == rows * cols * counts.pop(), it.name


def test_partition_of_chosen_thread_matches_owner_map(recipes):
    for name, it in _partitions(recipes):
        own = it.owners()
        rows = it.tile[0]
        for (r, c) in it.values_of(it.thread):
            assert it.thread in own[r + c * rows], it.name


def test_tv_layouts_land_in_their_tile(recipes):
    for r in recipes.values():
        for it in r.items():
            if it.kind != "tv":
                continue
            rows, cols = it.tile
            cells = it.tv_cells()
            assert set(cells) == {(i, j) for i in range(rows) for j in range(cols)}, it.name
            if "copy" in it.name:      # a copy touches every element exactly once
                assert all(len(v) == 1 for v in cells.values()), it.name


def test_thread_layouts_are_bijections(recipes):
    for r in recipes.values():
        for it in r.items():
            if it.kind == "thread":
                n = L.size(it.layout)
                assert sorted(L.value(it.layout, i) for i in range(n)) == list(range(n)), it.name


def test_smem_sizes_and_cosizes(recipes):
    for k in CUTE:
        bm, bn, bk = k.tile
        for it in recipes[k.name].items():
            leaf = it.name.rsplit("/", 1)[-1]
            if leaf in ("sA", "sB"):
                ext = bm if leaf == "sA" else bn
                tile = L.product_each(it.layout.shape)[:2]          # (BLK, BLK_K[, STAGES])
                assert tile == (ext, bk), it.name
                assert L.cosize(it.layout) >= L.size(it.layout), it.name


def _bank_ways(tv, stage, rows: int) -> int:
    """Worst bank multiplicity of one warp's 4-byte stores: thread t's value v of a TiledCopy
    (TV layout -> index in its (rows, BLK_K) tile) stored at stage(m, k, 0) — one STS.32
    per value index, 32 banks of 4 bytes."""
    nthreads, nvals = L.product_each(tv.shape)
    worst = 0
    for w in range(nthreads // 32):
        for v in range(nvals):
            banks = [stage((idx % rows, idx // rows, 0)) % 32
                     for idx in (tv((t, v)) for t in range(32 * w, 32 * w + 32))]
            worst = max(worst, max(banks.count(b) for b in banks))
    return worst


def test_kquad_stages_take_the_transposed_stores_without_bank_conflicts(recipes):
    # kquad_stages.cuh (Config::kq_layout): a warp's k-major vectors (8 rows x 4 k-quads at
    # BLK_K 16) stored transposed, one k per STS.32, hit 32 distinct banks in the k-quad
    # stages; in the padded ones (columns BLK+4 apart) quads 0/2 and 1/3 share banks
    k = next(k for k in CUTE if getattr(k.config, "kq_layout", 0) and k.tile[2] == 16)
    items = {it.name: it for it in recipes[k.name].items()}
    checked = 0
    for name, it in items.items():
        sec, leaf = name.rsplit("/", 1)
        if "VecK" in sec and leaf in ("sA", "sB"):
            tv = items[f"{sec}/copy_TV"]
            rows = tv.tile[0]
            assert _bank_ways(tv.layout, it.layout, rows) == 1, name
            assert _bank_ways(tv.layout, items[f"{k.name}/{leaf}"].layout, rows) == 2, name
            checked += 1
    assert checked == 4      # A and B, register-staged (LdVecK) and from raw stages (CpVecK)


# ---- printing and algebra without nvcc ------------------------------------------------------

def test_print_matches_cute_forms():
    assert L.fmt(L.make_layout((4, 8))) == "(_4,_8):(_1,_4)"
    assert L.fmt(L.Layout((L.Dyn(128), 8), (L.Dyn(256), 1))) == "(128,_8):(256,_1)"
    assert L.fmt(L.make_layout((2, (1, 4)))) == "(_2,(_1,_4)):(_1,(_0,_2))"
    # captured from CuTe C++ (nvcc 13.0, cutlass 4.2): print_layout(make_layout(make_shape(_4{}, _8{})))
    assert L.print_layout(L.make_layout((4, 8))) == (
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
    # and the global tile of a 256x256 row-major A after local_tile (dynamic strides print bare)
    gA = L.local_tile(L.View(L.Layout((L.Dyn(256), L.Dyn(256)), (L.Dyn(256), L.Dyn(1)))),
                      (128, 128, 8), (0, 0, None), (1, None, 1))
    assert L.fmt(gA.layout) == "(_128,_8,32):(256,1,8)"


def _same_function(a, b):
    n = L.size(a)
    assert n == pycute.size(b)
    return all(L.value(a, i) == b(i) for i in range(n))


SAMPLES = [L.make_layout((4, 8)), L.Layout((32, 8), (8, 1)), L.Layout((8, 4), (1, 12)),
           L.make_layout(((2, 4), 8)), L.Layout((16, 16), (16, 1))]


@pytest.mark.parametrize("a", SAMPLES, ids=L.fmt)
def test_algebra_agrees_with_pycute(a):
    pa = pycute.Layout(a.shape, a.stride)
    assert _same_function(L.coalesce(a), pycute.coalesce(pa))
    assert _same_function(L.complement(a, 1024), pycute.complement(pa, 1024))
    b = L.Layout((4, 2), (2, 8))
    if L.size(a) >= 32:
        assert _same_function(L.composition(a, b), pycute.composition(pa, pycute.Layout(b.shape, b.stride)))
    assert _same_function(L.logical_divide(a, L.make_layout(4)), pycute.logical_divide(pa, pycute.Layout(4)))
    assert _same_function(L.logical_product(a, L.make_layout(2)), pycute.logical_product(pa, pycute.Layout(2)))


# ---- against CuTe C++ -----------------------------------------------------------------------

def _checked_kernels():
    """Kernels whose layouts go through nvcc. CUTE_GEMM_LAYOUT_CHECK=all: every CuTe kernel.
    Default: a representative set, one kernel per (source, thread count, square tile or not),
    because each recipe is a separate ~20-40 s CuTe compile on a 2-core host (the binary is
    cached by content, so only the first run pays). The recipes are the same code for every
    configuration of a source; the set covers each code path (and BLK_M != BLK_N)."""
    if os.environ.get("CUTE_GEMM_LAYOUT_CHECK") == "all":
        return list(CUTE)
    seen, out = set(), []
    for k in CUTE:
        key = (k.source, k.threads, k.tile[0] == k.tile[1])
        if key not in seen:
            seen.add(key)
            out.append(k)
    return out


@pytest.fixture(scope="session")
def checker_output():
    nvcc = L.find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found (set CUTE_GEMM_NVCC or put nvcc on PATH): "
                    "cannot compare with CuTe C++ print_layout")
    if L.cute_include_dir() is None:
        pytest.skip("CuTe headers (nvidia-cutlass wheel, cutlass_library) not found")
    recs = [L.build(k) for k in _checked_kernels()]
    cache = os.path.join(tempfile.gettempdir(), f"cute_gemm_layout_check_{os.getuid()}")
    exe = L.build_checker(recs, cache, nvcc)
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return L.split_dump(r.stdout), L.split_dump(L.expected_output(recs))


@pytest.mark.parametrize("kernel", CUTE, ids=lambda k: k.name)
def test_text_matches_cute_cpp(checker_output, kernel):
    got, exp = checker_output
    if kernel not in _checked_kernels():
        pytest.skip("not in the representative nvcc set (CUTE_GEMM_LAYOUT_CHECK=all checks it)")
    names = [n for n in exp if n.startswith(kernel.name + "/")]
    assert names
    bad = []
    for n in names:
        if got.get(n) != exp[n]:
            g, e = (got.get(n) or "<missing>\n").splitlines(), exp[n].splitlines()
            first = next((i for i, (x, y) in enumerate(zip(g, e)) if x != y), min(len(g), len(e)))
            bad.append(f"{n}: line {first}: CuTe {g[first] if first < len(g) else '<end>'!r} "
                       f"vs ours {e[first] if first < len(e) else '<end>'!r}")
    assert not bad, "\n".join(bad)


# ---- pictures and the command line ------------------------------------------------------------

@pytest.mark.parametrize("name", ["cute_smem", "cute_tiled"])
def test_svg_pictures_are_well_formed(recipes, name):
    import xml.etree.ElementTree as ET
    from cute_gemm import layout_draw as D
    for it in recipes[name].items():
        svg = D.to_svg(D.grid_of(it))
        root = ET.fromstring(svg)
        texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
        assert it.title in texts, it.name
        if it.kind == "tv" and L.size(it.layout) <= 64 * 64:
            assert any(t and t.startswith("T") for t in texts), it.name


def test_cli_text(capsys):
    from cute_gemm.cli import main
    assert main(["layouts", "cute_gmem", "--full", "--thread", "5", "--shape", "200x300x100"]) == 0
    out = capsys.readouterr().out
    assert "(_16,_8,13):(100,_1,_8)" in out     # gA, 200x100 row-major A (static unit stride): 13 k-tiles
    assert "thread 5 owns" in out

"""Batches without a GPU: numpy.matmul's broadcasting of the leading modes, their merge into
the two a launch walks, the fold of a shared B into one taller problem, the named errors,
the byte spans and overlap tests of batched operands, and the kernels that take a batch."""
from __future__ import annotations

import re

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.api import validate
from cute_gemm.base.errors import AliasError, ShapeError
from cute_gemm.build import paths
from cute_gemm.driver import batching
from cute_gemm.driver.arrays import Operand
from cute_gemm.driver.kernel_args import BATCH_PARAMS, GemmArgsBatch, pack_gemm_args_batch

KERNELS = paths.kernels_dir()


def _f32(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("a,b,want", [
    ((), (), ()), ((4,), (), (4,)), ((), (3, 2), (3, 2)), ((4, 1), (3,), (4, 3)),
    ((1, 5), (7, 1), (7, 5)), ((0,), (1,), (0,))])
def test_broadcast_as_numpy(a, b, want):
    assert batching.broadcast(a, b) == want
    assert np.broadcast_shapes(a, b) == want


def test_broadcast_clash_is_named():
    with pytest.raises(ShapeError, match=r"do not broadcast \(4 against 3\)"):
        batching.broadcast((4,), (3,))


def test_flatten_merges_even_steps_and_keeps_two():
    # (4, 3) contiguous in a, broadcast over the first mode in b: two modes
    count, st = batching.flatten((4, 3), {"a": (90, 30), "b": (0, 42)})
    assert count == (4, 3) and st == {"a": (90, 30), "b": (0, 42)}
    # all contiguous: one mode
    count, st = batching.flatten((4, 3), {"a": (90, 30), "b": (126, 42)})
    assert count == (1, 12) and st == {"a": (0, 30), "b": (0, 42)}
    # extent-1 modes dropped; no batch at all: (1, 1)
    assert batching.flatten((1, 1), {"a": (5, 5)})[0] == (1, 1)


def test_three_modes_that_do_not_merge_are_named():
    with pytest.raises(ShapeError, match="3 modes that do not merge"):
        batching.flatten((2, 3, 4), {"a": (4, 0, 1), "b": (0, 4, 1)})


def test_validate_batches_and_folds():
    sig = validate(_f32(4, 3, 5, 6), _f32(3, 6, 7), None, None, 1.0, 0.0, 0)
    assert sig.shape == (4, 3, 5, 7) and sig.batch == (4, 3)
    assert sig.A.bstrides == (90, 30) and sig.B.bstrides == (0, 42)
    assert sig.made == ((5, 7), (7, 1), (4, 3), (105, 35))
    # a B shared by every problem: one (L * M, K) @ (K, N) problem
    sig = validate(_f32(4, 3, 5, 6), _f32(6, 7), None, None, 1.0, 0.0, 0)
    assert sig.batch == (1, 1) and sig.A.shape == (60, 6) and sig.m == 60
    assert sig.made == ((60, 7), (7, 1), (1, 1), (0, 0))
    # ... but not where a's problems do not lie one after another down its rows
    a = np.swapaxes(_f32(5, 4, 6), 0, 1)            # (4, 5, 6), problems 6 apart
    sig = validate(a, _f32(6, 7), None, None, 1.0, 0.0, 0)
    assert sig.batch == (1, 4) and sig.A.bstrides == (0, 6)


@pytest.mark.parametrize("a,b,c,out,match", [
    ((4, 5, 6), (3, 6, 7), None, None, "do not broadcast"),
    ((4, 5, 6), (4, 6, 7), None, (3, 5, 7), r"out must have shape \(4, 5, 7\)"),
    ((4, 5, 6), (4, 6, 7), (2, 5, 7), None, "does not broadcast"),
    ((6,), (6, 7), None, None, r"2 or more dimensions.*x\[None, :\]"),
    ((4, 5, 6), (4, 5, 7), None, None, "inner dimensions differ"),
])
def test_shape_errors_are_named(a, b, c, out, match):
    arr = lambda s: None if s is None else _f32(*s)     # noqa: E731
    with pytest.raises(ShapeError, match=match):
        validate(arr(a), arr(b), arr(c), arr(out), 1.0, 1.0, 0)


def test_a_kernel_that_does_not_batch_says_which_do():
    with pytest.raises(ShapeError, match="cute_smem.*computes one 2-D product.*v9_warptile"):
        cute_gemm.run("cute_smem", _f32(2, 5, 6), _f32(2, 6, 7))


def test_span_and_overlap_cover_the_whole_batch():
    op = Operand("out", None, True, 1 << 20, (5, 7), (7, 1), "float32", bcount=(2, 3),
                 bstrides=(105, 35))
    assert op.span() == (1 << 20, (1 << 20) + 4 * 210)
    assert not op.self_overlapping()
    # problems of (M, L, N) storage: distinct elements, though each matrix spans the others
    inter = Operand("out", None, True, 0, (5, 7), (21, 1), "float32", bcount=(1, 3),
                    bstrides=(0, 7))
    assert not inter.self_overlapping()
    assert Operand("out", None, True, 0, (5, 7), (7, 1), "float32", bcount=(1, 3),
                   bstrides=(0, 0)).self_overlapping()


@pytest.mark.parametrize("strides", [(0, 28, 4), (4, 28, 4)], ids=["broadcast", "overlapping"])
def test_an_out_whose_problems_share_elements_is_an_alias_error(strides):
    """Out's batch is judged with its problems: a batch stride of 0, or problems one column
    apart in a column-major layout (which a B shared by the batch would fold)."""
    base = _f32(64, 64)
    shape = (3, 5, 7) if strides[0] == 0 else (3, 7, 5)
    out = np.lib.stride_tricks.as_strided(base, shape, strides, writeable=True)
    if strides[0]:
        out = np.swapaxes(out, 1, 2)            # (3, 5, 7), column-major problems 1 apart
    with pytest.raises(AliasError, match="share one address"):
        validate(_f32(3, 5, 6), _f32(6, 7), None, out, 1.0, 0.0, 0)


def test_batched_sources_take_the_batch_in_their_plain_entries():
    """Kernel.batched is a fact of the source: its plain entries (no workspace) take
    CG_BATCH_PARAMS (BATCHED_SOURCES), or each has a batched twin (Variant.batch) defined
    in it; no other source names the batch."""
    kinds = {}
    for k in registry.kernels():
        kinds.setdefault(k.source, set()).add(
            "plain" if k.plain_takes_batch else "twins" if k.batched else "none")
    for path in sorted(KERNELS.rglob("*.cu")):
        src, rel = path.read_text(), path.relative_to(KERNELS).as_posix()
        takes = "CG_BATCH_PARAMS" in src or "int Lin, int z0" in src
        assert takes == (rel in registry.records.BATCHED_SOURCES or kinds.get(rel) == {"twins"}), rel
    for k in registry.kernels():
        for v in k.variants:
            if v.batch:
                assert v.batch in k.entries and v.batch.removesuffix("_b") == v.entry
    assert registry.get("cute_pipelined").batched and not registry.get("cute_smem").batched


def test_the_batch_block_follows_the_gemm_arguments():
    names = [f for f, _ in GemmArgsBatch._fields_]
    assert names[-len(BATCH_PARAMS):] == [f for f, _ in BATCH_PARAMS]
    assert re.search(r"int Lin, int z0, long long bA0, long long bA1, long long bB0, long long "
                     r"bB1,\s*\\\s*long long bC0, long long bC1",
                     (paths.project_include_dir() / "cute_gemm/common.cuh").read_text())
    blk = pack_gemm_args_batch(*range(14), 3, 0, 1, 2, 3, 4, 5, 6)[0][0]
    assert (blk.Lin, blk.bA0, blk.bC1) == (3, 1, 6)


def test_the_batched_bench_draw_is_its_seed_and_within_its_bounds():
    from cute_gemm.perf.batched import BATCH, DIM, FLOP_MAX, PATTERNS, batched_count, draw
    assert draw(12, 5) == draw(12, 5) and draw(12, 5) != draw(12, 6)
    for p in draw(50, 7):
        assert BATCH[0] <= p.batch <= BATCH[1] and p.flop <= FLOP_MAX and p.pattern in PATTERNS
        assert all(DIM[0] <= x <= DIM[1] for x in (p.m, p.n, p.k))
    assert batched_count("batched") == 24 and batched_count("batched:7") == 7
    assert batched_count("random:7") is None
    with pytest.raises(ValueError, match="batched:N"):
        batched_count("batched:x")


class _Site:
    """launch.Site's stand-in: records each launch's grid and the batch fields it packed."""
    launched: list = []

    block = None         # the argument block of the Launcher under test (its thread's)

    def __init__(self, f, grid, block, smem, pdl=False, params=None, cluster=1):
        self.grid = tuple(grid)
        self.go = self._go

    def _go(self, stream, ptrs, extra):      # (the plain path's inlined launch)
        self.__call__(stream, _Site.block)
        return (0,)

    def __call__(self, stream, packed):
        s = packed[0][0]
        _Site.launched.append((self.grid, s.Lin, s.z0, s.bA1, s.bB1, s.bC1, s.A, s.B, s.C))


@pytest.mark.parametrize("count,want", [((1, 5), [(5, 0)]), ((2, 40000), [(65535, 0), (14465, 65535)])])
def test_a_batch_launches_along_z_in_pieces(monkeypatch, count, want):
    from cute_gemm.plan import launcher as lm
    monkeypatch.setattr(lm.launch, "Site", _Site)
    _Site.launched = []
    plan = lm.LaunchPlan(kernel="k", ordinal=0, shape=(8, 8, 8), entry="e", grid=(3, 2, 1),
                         block=(256, 1, 1), smem=0, batch=count)
    run = lm.Launcher(plan, None, ((8, 1), (8, 1), (8, 1)),
                      bstrides=((0, 64), (0, 0), (count[1] * 64, 64)))
    _Site.block = run.local.packed
    run(0x1000, 0x2000, 0x3000, 1.0, 0.0, 0)
    got = [(g[2], z0) for g, _, z0, *_ in _Site.launched]
    assert got == want
    for grid, lin, _, ba1, bb1, bc1, a, b, c in _Site.launched:
        assert grid[:2] == (3, 2) and lin == count[1] and (ba1, bb1, bc1) == (64, 0, 64)
        assert (a, b, c) == (0x1000, 0x2000, 0x3000)


def test_a_split_keeps_its_grid_z(monkeypatch):
    from cute_gemm.plan import launcher as lm
    monkeypatch.setattr(lm.launch, "Site", _Site)
    plan = lm.LaunchPlan(kernel="k", ordinal=0, shape=(8, 8, 8), entry="e", grid=(3, 2, 4),
                         block=(256, 1, 1), smem=0, batch=(1, 1))
    run = lm.Launcher(plan, None, ((8, 1), (8, 1), (8, 1)), extra=(0, 4))
    assert run.site.grid == (3, 2, 4)


def test_a_batch_of_two_modes_runs_on_kernels_that_walk_two():
    from cute_gemm.select import batched
    from cute_gemm.select.autotable import described_device
    k = registry.get("cute_pipelined")
    assert k.batch_modes == 1 and registry.get("v9_warptile").batch_modes == 2
    h200 = described_device("NVIDIA H200")
    assert batched.choose(64, 1024, 1024, 1024, device=h200).kernel.startswith("cute_pipelined")
    assert registry.get(batched.choose(64, 1024, 1024, 1024, device=h200, modes=2).kernel).batch_modes == 2
    # in fp32 the selector's only kernel that walks two modes is the tiny_k one, a small K's:
    # past it the ladder's stages that do (v9_warptile) answer, fused or not
    from cute_gemm.select.auto import TINY, TINY_K_SIMT
    for fused in (False, True):
        for kk, tiny in ((1024, False), (TINY_K_SIMT + 1, False), (TINY_K_SIMT, True)):
            x = registry.get(batched.choose(64, 300, 200, kk, device=h200, modes=2, fused=fused).kernel)
            assert x.batch_modes == 2 and (TINY in x.tags) == tiny, (fused, kk, x.name)
    with pytest.raises(ShapeError, match="walks a batch of one mode.*v9_warptile"):
        cute_gemm.run("cute_pipelined", _f32(2, 1, 5, 6), _f32(1, 3, 6, 7))


def test_a_batch_on_cute_pipelined_launches_its_twin_with_the_batch(monkeypatch):
    """The batch reaches a kernel whose batch runs on twins (Variant.batch): the twin's
    entry, the batch's count and strides in its arguments, grid z over the problems."""
    import stub_driver
    from cute_gemm.driver import kernel_args, launch
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k, count = 64, 96, 48, 5
    a = stub_driver.Dev((count, m, k), 0x1000_0000, strides=(4 * m * k, 4 * k, 4))
    b = stub_driver.Dev((count, k, n), 0x2000_0000, strides=(4 * k * n, 4 * n, 4))
    out = stub_driver.Dev((count, m, n), 0x3000_0000, strides=(4 * m * n, 4 * n, 4))
    cute_gemm.run("cute_pipelined", a, b, out=out)
    ((_, entry, grid, _, blob),) = [e for e in events if e[0] == "launch"]
    assert entry in stub_driver.BATCH_TWINS and entry.startswith("cute_pipelined")
    args = kernel_args.GemmArgsBatch.from_buffer_copy(blob)
    assert grid[2] == count and args.Lin * grid[2] >= count
    assert (args.bA1, args.bB1, args.bC1) == (m * k, k * n, m * n)


def test_a_persistent_kernel_walks_its_batch_in_one_launch(monkeypatch):
    """cute_wgmma_ws's batched twin: one launch of a cluster per unit of every problem (no
    grid z), the problems and batch strides packed after the tensor maps, A's and B's batch
    modes in their 4-D maps (extent 1 and no stride where broadcast)."""
    from cute_gemm.driver import launch
    from cute_gemm.plan import launcher
    grids = []
    monkeypatch.setattr(launch, "Site", lambda f, grid, *a, **kw: grids.append(grid))
    k = registry.get("cute_wgmma_ws")
    assert k.batched and k.batch_modes == 2 and "auto" in k.tags
    v = next(v for v in k.variants if (v.precision, v.out_dtype, v.a_major, v.b_major)
             == ("bf16", "float32", "k", "n"))
    m, n, kk = 300, 96, 64
    grid = k.grid.batch_walk(m, n, 6, 132)
    assert grid == (2 * 6 * 2, 1, 1)       # 2 units (3 tiles along m, clusters of 2) x 6 problems
    plan = launcher.LaunchPlan(kernel=k.name, ordinal=0, shape=(m, n, kk), entry=v.batch, grid=grid,
                               block=k.block, smem=k.config.dyn_smem, tma=True, precision="bf16",
                               batch=(2, 3), fused=k.fused)
    bstrides = ((0, m * kk), (3 * kk * n, kk * n), (3 * m * n, m * n))     # A broadcast over mode 0
    run = launcher.Launcher(plan, None, ((kk, 1), (n, 1), (n, 1)), variant=v, bstrides=bstrides)
    assert run.zs == [(0, 1)] and grids == [grid] and run.plain     # (one launch, maps at most)
    s = run.local.packed[0][0]
    assert (s.problems, s.Lin, s.bA0, s.bA1, s.bB0, s.bB1, s.bC0, s.bC1) == (6, 3, *sum(bstrides, ()))
    assert run.maps.a[3] == ((1, 0), (3, m * kk * 2)) and run.maps.b[3] == ((2, 3 * kk * n * 2), (3, kk * n * 2))


def test_a_batch_on_the_persistent_kernel_runs_its_twin_on_4d_maps(monkeypatch):
    """run() on cute_wgmma_ws with a batch: one launch of the twin on the walk's grid,
    the batch after the maps; tf32 with B n-major is the entry that computes C^T inside (A and
    B exchanged, their batch strides too), each map 4-D with B's broadcast mode of extent 1."""
    import stub_driver
    from cute_gemm.driver import kernel_args, launch
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k, count = 256, 96, 64, 5
    a = stub_driver.Dev((1, m, k), 0x1000_0000, strides=(0, 4 * k, 4))       # one A for all
    b = stub_driver.Dev((count, k, n), 0x2000_0000, strides=(4 * k * n, 4 * n, 4))
    out = stub_driver.Dev((count, m, n), 0x3000_0000, strides=(4 * m * n, 4 * n, 4))
    cute_gemm.run("cute_wgmma_ws", a, b, out=out, precision="tf32")
    ((_, entry, grid, _, blob),) = [e for e in events if e[0] == "launch"]
    assert entry == "cute_wgmma_ws_tf32_f32_ak_bn_b" and entry in stub_driver.WALK_TWINS
    # (the tiles of C^T: the entry walks the transposed problem)
    assert grid == (registry.get("cute_wgmma_ws").grid.batch_walk(n, m, count, 132))
    args = kernel_args.GemmArgsTmaBatchEpi.from_buffer_copy(blob)
    assert args.problems == count and args.problems == args.Lin * max(1, count // args.Lin)
    # (the entry exchanges A and B itself: the arguments are the caller's)
    assert (args.bA0, args.bA1, args.bB0, args.bB1, args.bC1) == (0, 0, 0, k * n, m * n)
    maps = {e[1]: e for e in events if e[0] == "tmap"}
    assert set(maps) == {a.ptr, b.ptr} and all(len(e) == 6 for e in maps.values())
    assert maps[a.ptr][5] == ((1, 0), (1, 0)) and maps[b.ptr][5] == ((1, 0), (count, 4 * k * n))


def test_a_broadcast_operand_that_needs_a_copy_is_copied_once(monkeypatch):
    """bf16 rows of 1001 elements (not 16-byte aligned for TMA), A broadcast over a batch of 6:
    its copy is one matrix: one scratch matrix, a copy launch with grid z 1, batch stride 0
    in the GEMM's arguments."""
    import stub_driver
    from cute_gemm.driver import kernel_args, launch
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k, count = 96, 64, 1001, 6
    a = stub_driver.Dev((1, m, k), 0x1000_0000, strides=(0, 2 * k, 2), typestr="<f2")
    b = stub_driver.Dev((count, k, n), 0x2000_0000, strides=(2 * k * n, 2 * n, 2), typestr="<f2")
    out = stub_driver.Dev((count, m, n), 0x3000_0000, strides=(4 * m * n, 4 * n, 4))
    cute_gemm.run("cute_wgmma_ws", a, b, out=out)
    (alloc,) = [e for e in events if e[0] == "alloc"]
    copies = {stub_driver.scale_args(e[4]).src: e for e in stub_driver.launches(events, "scale2d")}
    assert set(copies) == {a.ptr} and copies[a.ptr][2][2] == 1     # (B's rows are aligned)
    assert 2 * m * k <= alloc[2] < 2 * (2 * m * k)        # one A (its rows padded), not six
    (g,) = [e for e in events if e[0] == "launch" and not e[1].startswith("scale2d")]
    args = kernel_args.GemmArgsTmaBatchEpi.from_buffer_copy(g[4])
    assert (args.bA0, args.bA1) == (0, 0) and args.problems == count


def test_a_negative_batch_stride_counts_as_unaligned():
    """A TMA map holds no negative stride: an operand whose batch steps backwards is unaligned
    to the entries that read it through one (they copy it first), as its pointer would be."""
    from cute_gemm.driver.arrays import Operand, fits
    op = lambda b: Operand("a", None, True, 1 << 20, (64, 64), (64, 1), "bfloat16",  # noqa: E731
                           bcount=(1, 4), bstrides=b)
    assert fits({"a": op((0, 4096))})["a"] == ("k", 16)
    assert fits({"a": op((0, -4096))})["a"] == ("k", 1)


def test_the_batched_bench_takes_one_kernel_that_batches(monkeypatch, capsys):
    """`bench --size batched` times gemm(), or one named kernel that batches in its stead;
    any other name is refused before the GPU is looked for."""
    from cute_gemm import cli
    monkeypatch.setenv("CUTE_GEMM_FORCE_NO_GPU", "1")
    assert cli.main(["bench", "--size", "batched:3", "naive"]) == 2
    assert "one kernel that batches" in capsys.readouterr().err
    assert cli.main(["bench", "--size", "batched:3", "cute_wgmma_ws", "cute_pipelined"]) == 2
    assert "one kernel that batches" in capsys.readouterr().err
    assert cli.main(["bench", "--size", "batched:3", "cute_wgmma_ws"]) == 2
    assert "one kernel that batches" not in capsys.readouterr().err     # (no GPU: refused later)

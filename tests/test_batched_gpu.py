"""Batched and broadcast products on the GPU, judged as torch.matmul's semantics say: every
kernel that batches, each precision it computes, broadcasts on either side, strided and
non-contiguous batches, a B shared by the batch (folded into one problem), batches past
one launch's grid, empty batches, C broadcast and in place, NaN-poisoned results, numpy
operands and a CUDA graph capture. Each result is held to the float64 reference's gauge
with the kernel's unit roundoff. Skipped without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.base.errors import CuteGemmError
from cute_gemm.check import THRESHOLD, gauge_ratio, unit

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

TORCH = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
         "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
OPERAND = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16",
           "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def _combos():
    for k in registry.kernels():
        if k.batched and k.family != "util":
            for p in k.precisions:
                yield k.name, p


def _runs_here(name):
    k = registry.get(name)
    major, minor = torch.cuda.get_device_capability()
    if not k.runs_on(10 * major + minor):
        pytest.skip(f"{name} needs sm_{k.min_arch}")


def _rand(shape, dtype, gen):
    x = torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
    return x.to(TORCH[dtype])


def _check(got, a, b, c=None, alpha=1.0, beta=0.0, precision="fp32", out_dtype="float32"):
    a64, b64 = a.double().cpu().numpy(), b.double().cpu().numpy()
    ref, gauge = alpha * (a64 @ b64), abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if c is not None and beta != 0.0:
        c64 = c.double().cpu().numpy()
        ref, gauge = ref + beta * c64, gauge + abs(beta) * np.abs(c64)
    g = got.float().cpu().numpy()
    assert g.shape == ref.shape
    r = gauge_ratio(g, ref, gauge, unit(precision, out_dtype))
    assert r.max(initial=0.0) <= THRESHOLD, f"gauge ratio {r.max():.3g} at {np.unravel_index(r.argmax(), r.shape)}"


# (a's shape, b's shape): a batch on both sides, broadcast on either, 4-D in two modes
SHAPES = [((3, 37, 45), (3, 45, 29)), ((1, 37, 45), (5, 45, 29)), ((5, 37, 45), (1, 45, 29)),
          ((37, 45), (4, 45, 29)), ((2, 1, 33, 17), (1, 3, 17, 65)), ((2, 3, 64, 128), (2, 3, 128, 96))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name,precision", list(_combos()))
def test_every_batched_kernel_broadcasts(name, precision, shapes):
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(7)
    dt = OPERAND[precision]
    a, b = _rand(shapes[0], dt, gen), _rand(shapes[1], dt, gen)
    if registry.get(name).batch_modes < 2 and shapes == SHAPES[4]:      # two modes
        with pytest.raises(cute_gemm.ShapeError, match="walks a batch of one mode"):
            cute_gemm.run(name, a, b, precision=precision)
        return
    out = torch.full(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                     float("nan"), device="cuda")         # NaN-poisoned: beta = 0 never reads it
    got = cute_gemm.run(name, a, b, out=out, precision=precision)
    torch.cuda.synchronize()
    assert got is out
    _check(got, a, b, precision=precision)


@pytest.mark.parametrize("name,precision", list(_combos()))
def test_strided_batches_and_transposed_problems(name, precision):
    """Batches 2 apart, problems stored (M, L, K) (transposed into (L, M, K)), and each
    matrix transposed: every stride the operands can have."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(8)
    dt = OPERAND[precision]
    a = _rand((70, 8, 50), dt, gen).transpose(0, 1)[::2]            # (4, 70, 50), batch stride 100
    b = _rand((4, 31, 50), dt, gen).mT                              # (4, 50, 31), k-major
    c = _rand((1, 70, 31), "float32", gen)                         # one C for every problem
    got = cute_gemm.run(name, a, b, c, alpha=1.5, beta=-0.5, precision=precision)
    torch.cuda.synchronize()
    _check(got, a, b, c, 1.5, -0.5, precision)


def test_gemm_picks_batched_kernels_in_every_precision():
    """Each precision a kernel batches in; the others (8-bit) a named error before a launch."""
    gen = torch.Generator(device="cuda").manual_seed(9)
    batching = {p for name, p in _combos()}
    for precision, dt in OPERAND.items():
        a, b = _rand((6, 100, 70), dt, gen), _rand((6, 70, 90), dt, gen)
        if precision not in batching:
            with pytest.raises(CuteGemmError, match="kernels that batch"):
                cute_gemm.gemm(a, b, precision=precision)
            continue
        got = cute_gemm.gemm(a, b, precision=precision)
        torch.cuda.synchronize()
        _check(got, a, b, precision=precision)
    a, b = _rand((6, 100, 70), "float32", gen), _rand((6, 70, 90), "float32", gen)
    got = cute_gemm.gemm(a, b, precision="fp32_3xtf32")      # the contract, by SIMT fp32
    torch.cuda.synchronize()
    _check(got, a, b, precision="fp32")


@pytest.mark.parametrize("name", ["cute_wgmma_ws", "cute_wgmma_ws_128x64", "cute_wgmma_ws_128x128",
                                  "cute_wgmma_ws_pp64x256", "cute_wgmma_ws_pp128x128"])
def test_the_persistent_twin_walks_batches_in_its_tensor_maps(name):
    """cute_wgmma_ws's batched twins: every problem's tiles in one persistent walk, A and B
    found in 4-D tensor maps (multicast across a cluster of 2, and not), a broadcast
    operand's mode of extent 1 (no copy made): two modes broadcast on either side, a batch
    of 300 small problems (more units than the grid), a shared A."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(12)
    for sa, sb in (((2, 1, 64, 128), (1, 3, 128, 96)), ((300, 64, 64), (300, 64, 64)),
                   ((1, 200, 64), (7, 64, 520)), ((3, 130, 72), (3, 72, 264))):
        for precision in ("bf16", "fp16"):
            a, b = _rand(sa, OPERAND[precision], gen), _rand(sb, OPERAND[precision], gen)
            cute_gemm.clear_caches()
            got = cute_gemm.run(name, a, b, precision=precision)
            torch.cuda.synchronize()
            _check(got, a, b, precision=precision)
            plans = [p for p in cute_gemm.resolved_launches() if p.kernel == name]
            assert plans and all(p.entry.endswith("_b") and not p.copies for p in plans), plans


@pytest.mark.parametrize("precision", ["bf16", "tf32"])
def test_cross_check_takes_a_batch(precision):
    """cross_check on fresh batches and on N-D arrays: every kernel that batches in the
    precision, and gemm()'s pick, judged against float64 problem by problem."""
    _runs_here("cute_wgmma_ws")
    names = [k for k, p in _combos() if p == precision] + ["auto"]
    rep = cute_gemm.cross_check(kernels=names, shapes=[(70, 50, 40), (129, 260, 72)], batch=(3,),
                                precision=precision, beta=0.5, seed=13)
    assert rep.ok and all(s.batch == (3,) for s in rep.shapes), rep.table()
    assert {r.name for s in rep.shapes for r in s.results} >= {"cute_wgmma_ws", "auto"}
    gen = torch.Generator(device="cuda").manual_seed(14)
    a, b = _rand((2, 1, 33, 64), OPERAND[precision], gen), _rand((3, 64, 48), OPERAND[precision], gen)
    rep = cute_gemm.cross_check(a, b, kernels=names, precision=precision)
    assert rep.ok and rep.shapes[0].batch == (2, 3), rep.table()


def test_a_shared_b_folds_into_one_problem():
    gen = torch.Generator(device="cuda").manual_seed(10)
    x, w = _rand((4, 3, 50, 64), "bfloat16", gen), _rand((64, 96), "bfloat16", gen)
    got = cute_gemm.gemm(x, w)
    torch.cuda.synchronize()
    assert got.shape == (4, 3, 50, 96)
    _check(got, x, w, precision="bf16")
    assert any(p.shape == (600, 96, 64) for p in cute_gemm.resolved_launches())


def test_a_batch_past_one_launch_grid():
    gen = torch.Generator(device="cuda").manual_seed(11)
    a, b = _rand((70000, 3, 5), "float32", gen), _rand((70000, 5, 2), "float32", gen)
    got = cute_gemm.run("v9_warptile", a, b)
    torch.cuda.synchronize()
    _check(got, a, b)


def test_empty_batches_and_k_zero():
    a, b = torch.ones((0, 4, 5), device="cuda"), torch.ones((0, 5, 6), device="cuda")
    assert cute_gemm.gemm(a, b).shape == (0, 4, 6)
    a, b = torch.ones((3, 4, 0), device="cuda"), torch.ones((3, 0, 6), device="cuda")
    c = torch.randn((3, 4, 6), device="cuda")
    got = cute_gemm.gemm(a, b, c, beta=2.0)
    torch.cuda.synchronize()
    assert torch.equal(got, 2.0 * c)


def test_in_place_and_aliased_out():
    gen = torch.Generator(device="cuda").manual_seed(12)
    a, b = _rand((3, 40, 30), "float32", gen), _rand((3, 30, 40), "float32", gen)
    c = _rand((3, 40, 40), "float32", gen)
    c0 = c.clone()
    cute_gemm.gemm(a, b, c, beta=1.0, out=c)                      # C updated in place
    torch.cuda.synchronize()
    _check(c, a, b, c0, 1.0, 1.0)
    a0, w = c.clone(), _rand((1, 40, 40), "float32", gen)
    cute_gemm.gemm(c, w, out=c)             # out is a: computed apart, then copied
    torch.cuda.synchronize()
    _check(c, a0, w)


def test_numpy_batches():
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 3, 20, 30)).astype(np.float32)
    b = rng.standard_normal((3, 30, 10)).astype(np.float32)
    got = cute_gemm.gemm(a, b)
    assert isinstance(got, np.ndarray) and got.shape == (2, 3, 20, 10)
    _check(torch.from_numpy(got), torch.from_numpy(a), torch.from_numpy(b))


def test_batched_capture_in_a_cuda_graph():
    gen = torch.Generator(device="cuda").manual_seed(14)
    a, b = _rand((8, 64, 48), "bfloat16", gen), _rand((8, 48, 80), "bfloat16", gen)
    out = torch.empty((8, 64, 80), device="cuda")
    cute_gemm.gemm(a, b, out=out)           # compiled and resolved outside the capture
    torch.cuda.synchronize()
    out.fill_(float("nan"))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cute_gemm.gemm(a, b, out=out)
    g.replay()
    torch.cuda.synchronize()
    _check(out, a, b, precision="bf16")


def test_gradients_sum_over_broadcast_modes():
    """Autograd through a batched product: each operand's gradient summed over the modes it
    was broadcast along, as torch.matmul's."""
    gen = torch.Generator(device="cuda").manual_seed(15)
    a = _rand((2, 1, 20, 30), "float32", gen).requires_grad_()
    b = _rand((3, 30, 10), "float32", gen).requires_grad_()
    g = _rand((2, 3, 20, 10), "float32", gen)
    (cute_gemm.gemm(a, b) * g).sum().backward()
    da, db = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    (torch.matmul(a.double(), b.double()) * g.double()).sum().backward()
    assert da.shape == a.shape and db.shape == b.shape
    torch.testing.assert_close(da, a.grad.float(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(db, b.grad.float(), rtol=1e-5, atol=1e-4)


def test_copies_and_aliases_of_a_whole_batch():
    """A batch whose operands the entry cannot take (tf32 wants both k-major: A m-major is
    copied, every problem of it), and an out that is a of a batched product (computed apart,
    every problem, then copied)."""
    _runs_here("cute_mma_sm80")
    gen = torch.Generator(device="cuda").manual_seed(16)
    a = _rand((5, 48, 40), "float32", gen).mT               # (5, 40, 48), m-major
    b = _rand((5, 48, 24), "float32", gen).mT.contiguous().mT     # k-major
    got = cute_gemm.run("cute_mma_sm80", a, b, precision="tf32")
    torch.cuda.synchronize()
    _check(got, a, b, precision="tf32")
    c, w = _rand((3, 40, 40), "float32", gen), _rand((3, 40, 40), "float32", gen)
    c0 = c.clone()
    cute_gemm.run("v9_warptile", c, w, out=c)              # out is a, batch of 3 (no fold)
    torch.cuda.synchronize()
    _check(c, c0, w)

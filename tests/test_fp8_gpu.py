"""8-bit float operands on the GPU (fp8_e4m3, fp8_e5m2, and one of each: fp8_e4m3_e5m2,
fp8_e5m2_e4m3; sm_90a): random shapes from one
element up, every result type, B k-major (as a linear layer's weight) and n-major (copied),
alpha, beta and C, scales per tensor, row and column read from the device (also inside a
CUDA graph whose scales change between replays), 1 x 128 and 128 x 128 block scales (on
walks cut along K too), the error against torch._scaled_mm's at a long K, exact integers,
NaN and Inf. Skipped without a GPU.

How a result is judged: check.reference of the operands' values in float64 (the product of
the dequantized operands), with the kernel's unit roundoff (check.unit: the precision's,
or the result type's where that is coarser)."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import Epilogue, InputError, registry
from cute_gemm.check import THRESHOLD, gauge_ratio, reference, unit

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

from test_batched_gpu import TORCH, _runs_here  # noqa: E402

KERNEL = "cute_wgmma_ws_fp8"
KERNELS = [k.name for k in registry.kernels() if "fp8_e4m3" in k.precisions]     # every 8-bit one
# precision -> (A's type, B's type)
FP8 = {"fp8_e4m3": ("float8_e4m3fn",) * 2, "fp8_e5m2": ("float8_e5m2",) * 2,
       "fp8_e4m3_e5m2": ("float8_e4m3fn", "float8_e5m2"),
       "fp8_e5m2_e4m3": ("float8_e5m2", "float8_e4m3fn")}


@pytest.fixture(autouse=True)
def _hopper():
    _runs_here(KERNEL)


def _fp8(shape, dtype, gen, scale=1.0):
    """Random values rounded to `dtype` (torch's conversion), spread over its exponents."""
    x = scale * torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
    return x.to(TORCH[dtype])


def _np(x):
    return None if x is None else x.double().cpu().numpy()


def _ratio(got, a, b, c=None, alpha=1.0, beta=0.0, ep=None, precision="fp8_e4m3",
           out_dtype="float32") -> float:
    """The worst gauge ratio of got against the float64 reference (NaN where it has NaN)."""
    host = ep and Epilogue(**{f: _np(getattr(ep, f)) for f in
                              ("scale_rows", "scale_cols", "blocks_a", "blocks_b")})
    ref, gauge = reference(_np(a), _np(b), _np(c), alpha, beta if c is not None else 0.0, host)
    out = got.double().cpu().numpy()
    assert out.shape == ref.shape
    assert np.array_equal(np.isnan(out), np.isnan(ref)), "NaN where the reference has none, or the reverse"
    ok = ~np.isnan(ref)
    return float(gauge_ratio(out[ok], ref[ok], gauge[ok], unit(precision, out_dtype)).max(initial=0.0))


SHAPES = [(1, 1, 1), (7, 13, 5), (64, 128, 128), (131, 257, 300), (333, 96, 1029), (1024, 1024, 2048),
          (16, 4096, 4096), (4100, 33, 700)]


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("precision", list(FP8))
@pytest.mark.parametrize("m,n,k", SHAPES, ids=str)
@pytest.mark.parametrize("name", KERNELS + ["auto"])
def test_random_shapes_and_results(name, m, n, k, precision, out_dtype):
    gen = torch.Generator(device="cuda").manual_seed(m * 7919 + n * 31 + k)
    da, db = FP8[precision]
    a, w = _fp8((m, k), da, gen), _fp8((n, k), db, gen)        # w: a linear layer's (N, K)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=TORCH[out_dtype])
    got = cute_gemm.run(name, a, w.T, out=out)
    torch.cuda.synchronize()
    assert got is out
    assert _ratio(got, a, w.T, precision=precision, out_dtype=out_dtype) <= THRESHOLD


@pytest.mark.parametrize("precision", list(FP8))
def test_an_n_major_b_alpha_beta_and_c(precision):
    gen = torch.Generator(device="cuda").manual_seed(3)
    da, db = FP8[precision]
    m, n, k = 200, 300, 520
    a, b = _fp8((m, k), da, gen), _fp8((k, n), db, gen)        # b row-major: n-major, copied
    c = torch.randn((m, n), generator=gen, device="cuda").to(torch.bfloat16)
    out = c.clone()
    cute_gemm.gemm(a, b, out, alpha=-0.75, beta=0.5, out=out)
    torch.cuda.synchronize()
    assert _ratio(out, a, b, c, -0.75, 0.5, precision=precision, out_dtype="bfloat16") <= THRESHOLD


@pytest.mark.parametrize("kind", ["tensor", "row", "col", "row+col"])
def test_scales_are_read_by_the_kernel(kind):
    gen = torch.Generator(device="cuda").manual_seed(4)
    m, n, k = 300, 260, 1000
    a, w = _fp8((m, k), "float8_e4m3fn", gen), _fp8((n, k), "float8_e4m3fn", gen)
    pos = lambda *s: torch.rand(s, generator=gen, device="cuda") + 0.5  # noqa: E731
    sa = pos() if kind == "tensor" else pos(m, 1) if "row" in kind else None   # 0-d: per tensor
    sb = pos() if kind == "tensor" else pos(1, n) if "col" in kind else None
    got = cute_gemm.gemm(a, w.T, scale_a=sa, scale_b=sb, epilogue=Epilogue(out_dtype="bfloat16"))
    torch.cuda.synchronize()
    assert got.dtype == torch.bfloat16
    ep = Epilogue(scale_rows=sa, scale_cols=sb)
    assert _ratio(got, a, w.T, ep=ep, out_dtype="bfloat16") <= THRESHOLD


def test_scales_change_between_graph_replays():
    gen = torch.Generator(device="cuda").manual_seed(5)
    m, n, k = 128, 256, 512
    a, w = _fp8((m, k), "float8_e4m3fn", gen), _fp8((n, k), "float8_e4m3fn", gen)
    sa, sb = torch.ones((), device="cuda"), torch.ones((1, n), device="cuda")
    out = torch.empty((m, n), device="cuda")
    cute_gemm.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb)     # compiled and resolved first
    s = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s), torch.cuda.graph(graph, stream=s):
        cute_gemm.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb)
    for x, y in ((2.0, 1.0), (0.5, 3.0)):
        sa.fill_(x)
        sb.copy_(torch.linspace(0.5, y, n, device="cuda")[None])
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert _ratio(out, a, w.T, ep=Epilogue(scale_rows=sa.reshape(1), scale_cols=sb)) <= THRESHOLD


def test_error_at_a_long_k_is_no_worse_than_scaled_mms():
    """K = 16,384: the float64 product of the dequantized operands against ours and against
    torch._scaled_mm (cuBLASLt) on the same operands, both writing float32."""
    gen = torch.Generator(device="cuda").manual_seed(6)
    m, n, k = 256, 256, 16384
    a, w = _fp8((m, k), "float8_e4m3fn", gen), _fp8((n, k), "float8_e4m3fn", gen)
    one = torch.ones((), device="cuda")
    ref = _np(a) @ _np(w.T)
    ours = cute_gemm.gemm(a, w.T).double().cpu().numpy()
    theirs = torch._scaled_mm(a, w.T, one, one, out_dtype=torch.float32).double().cpu().numpy()
    err = lambda x: np.linalg.norm(x - ref) / np.linalg.norm(ref)  # noqa: E731
    assert err(ours) <= 1.5 * err(theirs), (err(ours), err(theirs))


@pytest.mark.parametrize("precision", list(FP8))
def test_small_integers_are_exact(precision):
    """Integers in [-3, 3] are 8-bit values; their sums over K = 1000 stay exact in the
    tensor cores' window sums and in float32: the result equals the integer product."""
    gen = torch.Generator(device="cuda").manual_seed(7)
    m, n, k = 96, 200, 1000
    ai = torch.randint(-3, 4, (m, k), generator=gen, device="cuda")
    wi = torch.randint(-3, 4, (n, k), generator=gen, device="cuda")
    da, db = (TORCH[d] for d in FP8[precision])
    got = cute_gemm.gemm(ai.to(da), wi.to(db).T)
    torch.cuda.synchronize()
    assert torch.equal(got, (ai.double() @ wi.double().T).float())


def test_nan_and_inf_propagate():
    gen = torch.Generator(device="cuda").manual_seed(8)
    m, n, k = 70, 90, 400
    for precision, (da, db) in FP8.items():
        a, w = _fp8((m, k), da, gen), _fp8((n, k), db, gen)
        a[3, 17] = float("nan")
        if da == "float8_e5m2":          # (e4m3fn has no Inf: torch saturates it to 448)
            a[9, 200] = float("inf")
        if db == "float8_e5m2":
            w[11, 300] = float("-inf")
        got = cute_gemm.gemm(a, w.T)
        torch.cuda.synchronize()
        assert torch.isnan(got[3]).all()
        assert _ratio(got, a, w.T, precision=precision) <= THRESHOLD


@pytest.mark.parametrize("name", KERNELS)
def test_alpha_zero_n_past_the_grid_and_out_over_c(name):
    """test_reliability_gpu's rows for float32 operands, on 8-bit ones: alpha = 0 reads
    neither A nor B (all NaN here); N past a launch grid's y limit (8,388,609 = 65,536 tiles
    of 128 + 1); the result written over C as its transposed view and as a shifted one."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    c = torch.randn((37, 45), generator=gen, device="cuda")
    nan_a = torch.full((37, 29), float("nan"), device="cuda").to(torch.float8_e4m3fn)
    nan_w = torch.full((45, 29), float("nan"), device="cuda").to(torch.float8_e4m3fn)
    got = cute_gemm.run(name, nan_a, nan_w.T, c, alpha=0.0, beta=-2.0)
    torch.cuda.synchronize()
    assert torch.equal(got, -2.0 * c)
    n = 8_388_609
    a, w = _fp8((2, 16), "float8_e4m3fn", gen), _fp8((n, 16), "float8_e4m3fn", gen)
    got = cute_gemm.run(name, a, w.T)
    torch.cuda.synchronize()
    assert _ratio(got, a, w.T) <= THRESHOLD
    m = 96
    a, w = _fp8((m, 64), "float8_e4m3fn", gen), _fp8((m, 64), "float8_e4m3fn", gen)
    for case in ("c_t", "c_shift"):
        store = torch.randn((m + 1, m), generator=gen, device="cuda")
        c0 = store[:m].clone()
        out = store[:m].T if case == "c_t" else store.view(-1)[1:1 + m * m].view(m, m)
        cute_gemm.run(name, a, w.T, store[:m], out=out, alpha=0.5, beta=2.0)
        torch.cuda.synchronize()
        assert _ratio(out, a, w.T, c0, 0.5, 2.0) <= THRESHOLD


BLOCKS = [(77, 300, 1000), (256, 384, 4096), (27, 1000, 8200), (1, 129, 129)]


@pytest.mark.parametrize("m,n,k", BLOCKS, ids=str)
@pytest.mark.parametrize("sides", ["both", "a", "b"])
@pytest.mark.parametrize("name", KERNELS)
def test_block_scales(name, m, n, k, sides):
    """DeepSeek-V3's layout: A's scales per row and 128 k, B's per 128 x 128 block (applied
    where the kernel adds a window of 128 k into its float32 sums); the other operand's per
    row / column where only one side has blocks. A's scales column-major, as cuBLASLt wants
    them."""
    from cute_gemm.plan import resolve
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    kw, nw = -(-k // 128), -(-n // 128)
    a, w = _fp8((m, k), "float8_e4m3fn", gen), _fp8((n, k), "float8_e4m3fn", gen)
    pos = lambda *s: 2.0 ** torch.randint(-4, 5, s, generator=gen, device="cuda").float()  # noqa: E731
    sa = pos(kw, m).T if sides in ("both", "a") else pos(m, 1)
    sb = pos(kw, nw) if sides in ("both", "b") else pos(1, n)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    if not registry.get(name).takes_block_scales:
        # a tile part that straddles B's 128-column blocks: a named error, and nothing launched
        with pytest.raises(InputError, match="takes no block scales"):
            cute_gemm.run(name, a, w.T, out=out, scale_a=sa, scale_b=sb)
        torch.cuda.synchronize()
        assert out.isnan().all()
        return
    cute_gemm.run(name, a, w.T, out=out, scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    blocks = dict(blocks_a=sa if sides != "b" else None, blocks_b=sb if sides != "a" else None,
                  scale_rows=sa if sides == "b" else None, scale_cols=sb if sides == "a" else None)
    assert _ratio(out, a, w.T, ep=Epilogue(**blocks), out_dtype="bfloat16") <= THRESHOLD
    if (m, k) == (27, 8200):
        assert [p for p in resolve.resolved_launches() if p.shape[2] == k and p.workspace_bytes], \
            "the walk was not cut: the test no longer covers block scales on pieces"


@pytest.mark.parametrize("precision", list(FP8))
def test_block_scales_match_scaled_mm_dequantized(precision):
    """The same operands dequantized block by block in float32 and multiplied by torch:
    what the block scales mean."""
    gen = torch.Generator(device="cuda").manual_seed(9)
    m, n, k = 256, 512, 1024
    a, w = (_fp8(s, d, gen) for s, d in zip(((m, k), (n, k)), FP8[precision]))
    sa = torch.rand((m, k // 128), generator=gen, device="cuda") + 0.5
    sb = torch.rand((k // 128, n // 128), generator=gen, device="cuda") + 0.5
    got = cute_gemm.gemm(a, w.T, scale_a=sa, scale_b=sb)
    da = a.double() * sa.double().repeat_interleave(128, 1)
    dw = w.double() * sb.double().T.repeat_interleave(128, 0).repeat_interleave(128, 1)
    torch.testing.assert_close(got.double(), da @ dw.T, rtol=2e-3, atol=2e-3 * (da.abs() @ dw.abs().T).max().item())


@pytest.mark.parametrize("precision", list(FP8))
def test_cross_check_covers_the_8_bit_kernel_and_the_pick(precision):
    report = cute_gemm.cross_check(precision=precision, shapes=[(130, 70, 300), (64, 256, 1024)],
                                   layout="tn", seed=3)
    names = {r.name for s in report.shapes for r in s.results}
    assert {"cute_wgmma_ws_fp8", "auto"} <= names and report.ok, report.table()
    exact = cute_gemm.cross_check(precision=precision, shapes=[(96, 80, 200)], exact=True, seed=4)
    assert exact.ok, exact.table()


def test_no_products_leave_beta_c_through_the_epilogue():
    gen = torch.Generator(device="cuda").manual_seed(10)
    a, w = _fp8((40, 0), "float8_e4m3fn", gen), _fp8((50, 0), "float8_e4m3fn", gen)
    c = torch.randn((40, 50), generator=gen, device="cuda")
    out = c.clone()
    cute_gemm.gemm(a, w.T, out, out=out, beta=0.5, scale_a=torch.full((), 3.0, device="cuda"))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 0.5 * c)

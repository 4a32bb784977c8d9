"""Fused epilogues on the GPU: every fused kernel in each precision it computes, every
activation, a bias per column and per row, row and column scales, the clamp, every result
type, batches, no products (K = 0, alpha = 0), NaN and Inf, a NaN-poisoned result that
beta = 0 never reads, a vector inside the result, numpy operands, torch's linear layer
and a CUDA graph capture. Skipped without a GPU.

How a result is judged: check.reference with the same epilogue (the gauge of the value
before the activation, grown by the activation's largest slope, plus a few ulp of the
result) with the kernel's unit roundoff (check.unit, the result's rounding included)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import cute_gemm
from cute_gemm import Epilogue, registry
from cute_gemm.check import THRESHOLD, gauge_ratio, reference, unit
from cute_gemm.driver.epilogue import host_vector
from cute_gemm.registry.epilogue import ACTIVATIONS
from cute_gemm.base.precisions import PRECISION_DTYPE, PRECISION_DTYPE_B

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

from test_batched_gpu import OPERAND, TORCH, _runs_here  # noqa: E402


def _combos():
    for k in registry.kernels():
        if k.takes_epilogue:
            for p in k.precisions:
                yield k.name, p


def _rand(shape, dtype, gen, scale=1.0):
    x = scale * torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32)
    return x.to(TORCH[dtype])


def _np(x):
    return None if x is None else x.double().cpu().numpy()


def _host(ep: Epilogue) -> Epilogue:
    """ep with its vectors on the host, as check.reference takes them."""
    return replace(ep, **{f: host_vector(getattr(ep, f)) for f in ("bias", "scale_rows", "scale_cols")
                          if getattr(ep, f) is not None})


def _check(got, a, b, ep: Epilogue, c=None, alpha=1.0, beta=0.0, precision="fp32",
           out_dtype="float32"):
    """got against check.reference's float64 result and gauge of the same epilogue."""
    ref, gauge = reference(_np(a), _np(b), _np(c), alpha, beta if c is not None else 0.0, _host(ep))
    out = got.float().cpu().numpy()
    assert out.shape == ref.shape
    assert np.array_equal(np.isnan(out), np.isnan(ref)), "NaN where the reference has none, or none where it has"
    ok = ~np.isnan(ref)
    r = gauge_ratio(out[ok], ref[ok], gauge[ok], unit(precision, out_dtype))
    assert r.max(initial=0.0) <= THRESHOLD, f"gauge ratio {r.max():.3g}"


EPILOGUES = [dict(activation=act) for act in ACTIVATIONS] + [
    dict(bias=True, activation="gelu_tanh"), dict(bias="row", activation="relu"),
    dict(scale_rows=True, scale_cols=True, activation="silu"),
    dict(bias=True, scale_cols=True, clamp=(-0.5, 0.75)), dict(bias=True, activation="gelu_erf",
                                                                clamp=(0.0, 6.0))]


def _epilogue(spec: dict, m: int, n: int, vdtype: str, gen) -> Epilogue:
    kw = {k: v for k, v in spec.items() if k in ("activation", "clamp")}
    if spec.get("bias"):
        kw["bias_axis"] = "row" if spec["bias"] == "row" else "col"
        kw["bias"] = _rand(m if spec["bias"] == "row" else n, vdtype, gen)
    if spec.get("scale_rows"):
        kw["scale_rows"] = _rand(m, vdtype, gen)
    if spec.get("scale_cols"):
        kw["scale_cols"] = _rand(2 * n, vdtype, gen)[::2]       # a strided vector
    return Epilogue(**kw)


# each kernel and precision with the fullest epilogue; every piece on two kernels (each
# combination is a compile of its own: the whole product would be hundreds of them)
FULLEST = dict(bias=True, scale_rows=True, scale_cols=True, activation="gelu_erf", clamp=(-1.5, 2.5))
CASES = ([(name, prec, FULLEST) for name, prec in _combos()]
         + [(name, prec, spec) for spec in EPILOGUES
            for name, prec in (("cute_tiny_k", "fp32"), ("cute_wgmma_ws", "bf16"))])


@pytest.mark.parametrize("name,precision,spec", CASES, ids=str)
def test_fused_kernels_apply_their_epilogues(name, precision, spec):
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(11)
    # cute_tiny_k: N = 200 gives interior tiles (vector stores) beside edge ones
    m, n, k = (77, 45, 129) if "tiny" not in name else (77, 200, 19)
    a = _rand((m, k), PRECISION_DTYPE[precision], gen)
    b = _rand((k, n), PRECISION_DTYPE_B[precision], gen)
    c = _rand((m, n), "float32", gen)
    ep = _epilogue(spec, m, n, "float32", gen)
    out = torch.full((m, n), float("nan"), device="cuda")
    got = cute_gemm.run(name, a, b, out=out, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    assert got is out
    _check(got, a, b, ep, precision=precision)
    out2 = c.clone()             # in place, beta != 0
    cute_gemm.run(name, a, b, out2, out=out2, alpha=-0.5, beta=2.0, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    _check(out2, a, b, ep, c=c, alpha=-0.5, beta=2.0, precision=precision)


@pytest.mark.parametrize("name,precision", [("cute_wgmma_ws", "bf16"), ("cute_wgmma_ws_128x64", "fp16"),
                                            ("cute_mma_sm80", "bf16"), ("cute_pipelined", "fp32"),
                                            ("cute_tiny_k", "fp32"), ("v9_warptile", "fp32")])
def test_scales_of_one_value_are_the_vectors_of_it(name, precision):
    """Scales of one value each compile as tensor_scale (taken into alpha once a tile, no
    scale per value): the values of vectors of that value (the scale path), edge tiles, a
    16-bit result and beta != 0 included, to the result's rounding and the float32 rounding
    of the terms (the two compiles may contract alpha' * acc + beta * C + bias into FMAs
    differently: bit for bit, cute_wgmma_ws_128x64's fp16 results failed on the H100)."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(5)
    m, n, k = (200, 300, 129) if "tiny" not in name else (200, 300, 19)
    a = _rand((m, k), PRECISION_DTYPE[precision], gen)
    b = _rand((k, n), PRECISION_DTYPE_B[precision], gen)
    sr, sc = _rand((1,), "float32", gen) + 2.0, _rand((), "float32", gen) - 2.0
    one = Epilogue(bias=_rand(n, "float32", gen), scale_rows=sr, scale_cols=sc)
    vec = replace(one, scale_rows=sr.expand(m).contiguous(), scale_cols=sc.expand(n).contiguous())
    out_dtype = TORCH["float32" if precision in ("fp32", "tf32") else PRECISION_DTYPE[precision]]
    c = _rand((m, n), "float32", gen).to(out_dtype)
    for alpha, beta in ((1.0, 0.0), (-0.5, 2.0)):
        got = [cute_gemm.run(name, a, b, c.clone(), out=c.clone(), alpha=alpha, beta=beta,
                             precision=precision, epilogue=ep) for ep in (one, vec)]
        torch.cuda.synchronize()
        for g in got:
            _check(g, a, b, one, c=c.float() if beta else None, alpha=alpha, beta=beta,
                   precision=precision, out_dtype=str(out_dtype).removeprefix("torch."))
        _, gauge = reference(_np(a), _np(b), _np(c) if beta else None, alpha, beta, _host(one))
        g0, g1 = (g.double().cpu().numpy() for g in got)
        bound = torch.finfo(out_dtype).eps * np.abs(g1) + 4 * 2.0 ** -24 * gauge
        assert (np.abs(g0 - g1) <= bound).all(), f"alpha {alpha}, beta {beta}: {np.abs(g0 - g1).max()}"
    tags = {p.kernel.split(":")[-1] for p in cute_gemm.resolved_launches() if p.kernel.startswith(name + ":")}
    assert {"bias+tensor_scale+float32", "bias+scale+float32"} <= tags, tags


@pytest.mark.parametrize("b_major", ["k", "n"])
@pytest.mark.parametrize("precision", ["bf16", "tf32"])
@pytest.mark.parametrize("name", ["cute_wgmma_ws", "cute_wgmma_ws_128x64", "cute_wgmma_ws_128x128"])
def test_a_walk_cut_along_k_applies_the_epilogue(name, precision, b_major):
    """Few rows and a long K: the persistent walk's last wave is cut along K, its pieces
    summed in a workspace before the epilogue runs once (a B n-major in tf32: on C^T). The
    launch with a workspace once dropped the epilogue's vectors (a bias read at address 0)."""
    from cute_gemm.plan import resolve
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(20)
    dt = OPERAND[precision]
    m, n, k = 27, 1000, 8200
    a, c = _rand((m, k), dt, gen), _rand((m, n), "float32", gen)
    b = _rand((k, n), dt, gen) if b_major == "n" else _rand((n, k), dt, gen).T
    ep = _epilogue(FULLEST, m, n, "float32", gen)
    out = torch.full((m, n), float("nan"), device="cuda")
    cute_gemm.run(name, a, b, out=out, precision=precision, epilogue=ep)
    out2 = c.clone()
    cute_gemm.run(name, a, b, out2, out=out2, alpha=0.5, beta=-1.0, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    _check(out, a, b, ep, precision=precision)
    _check(out2, a, b, ep, c=c, alpha=0.5, beta=-1.0, precision=precision)
    cut = [p for p in resolve.resolved_launches()
           if p.kernel.startswith(name + ":") and p.shape[2] == k and p.workspace_bytes]
    assert cut, "the walk was not cut: the test no longer covers the workspace path"


@pytest.mark.parametrize("spec", [dict(bias=True, activation="gelu_tanh"), FULLEST], ids=str)
@pytest.mark.parametrize("majors", ["kn", "kk", "mn"])
@pytest.mark.parametrize("m,n,k,stream_k", [(2000, 2040, 72, False), (1000, 1024, 520, True)])
def test_the_pipelined_kernel_fuses_on_every_store_path(m, n, k, stream_k, majors, spec):
    """cute_pipelined's stores, each through the epilogue: interior tiles via smem (16-byte
    rows for ak_bk, bulk copies for ak_bn on sm_90, where beta is 0) or scalar, edge tiles
    predicated, and a stream-K run's last contributor (a partial last wave takes the twins);
    beta 0 into a NaN-poisoned result, and beta != 0 in place."""
    from cute_gemm.plan import resolve
    gen = torch.Generator(device="cuda").manual_seed(m + k)
    a = _rand((m, k), "float32", gen) if majors[0] == "k" else _rand((k, m), "float32", gen).T
    b = _rand((k, n), "float32", gen) if majors[1] == "n" else _rand((n, k), "float32", gen).T
    c = _rand((m, n), "float32", gen)
    ep = _epilogue(spec, m, n, "float32", gen)
    out = torch.full((m, n), float("nan"), device="cuda")
    cute_gemm.run("cute_pipelined", a, b, out=out, epilogue=ep)
    out2 = c.clone()
    cute_gemm.run("cute_pipelined", a, b, out2, out=out2, alpha=0.75, beta=-1.5, epilogue=ep)
    torch.cuda.synchronize()
    _check(out, a, b, ep)
    _check(out2, a, b, ep, c=c, alpha=0.75, beta=-1.5)
    twins = [p for p in resolve.resolved_launches()
             if p.kernel.startswith("cute_pipelined:") and p.shape == (m, n, k) and p.workspace_bytes]
    assert bool(twins) == stream_k, "the launch mode is not the one this case covers"


@pytest.mark.parametrize("name,precision", [c for c in _combos() if c[1] in ("bf16", "fp16")])
def test_16_bit_results_and_vectors(name, precision):
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(12)
    dt = OPERAND[precision]
    m, n, k = 130, 72, 64
    a, b = _rand((m, k), dt, gen), _rand((k, n), dt, gen)
    ep = Epilogue(bias=_rand(n, dt, gen), scale_rows=_rand(m, dt, gen), activation="gelu_tanh",
                  out_dtype=dt)
    got = cute_gemm.run(name, a, b, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    assert got.dtype == TORCH[dt] and got.shape == (m, n)
    _check(got, a, b, ep, precision=precision, out_dtype=dt)


def test_nan_and_inf_propagate_and_the_clamp_keeps_nan():
    gen = torch.Generator(device="cuda").manual_seed(13)
    m, n, k = 40, 50, 24
    a, b = _rand((m, k), "float32", gen), _rand((k, n), "float32", gen)
    a[3, 5], a[7, 0] = float("nan"), float("inf")
    for ep in (Epilogue(activation="relu", clamp=(-1.0, 1.0)), Epilogue(activation="gelu_erf"),
               Epilogue(bias=_rand(n, "float32", gen), activation="silu")):
        got = cute_gemm.gemm(a, b, epilogue=ep)
        torch.cuda.synchronize()
        _check(got, a, b, ep)
        assert torch.isnan(got[3]).all()


@pytest.mark.parametrize("k", [0, 16])
def test_no_products_run_the_epilogue_of_beta_c(k):
    gen = torch.Generator(device="cuda").manual_seed(14)
    m, n = 33, 65
    a, b, c = _rand((m, k), "float32", gen), _rand((k, n), "float32", gen), _rand((m, n), "float32", gen)
    ep = Epilogue(bias=_rand(n, "float32", gen), activation="gelu_tanh", clamp=(-2.0, 2.0))
    alpha = 0.0 if k else 1.0
    got = cute_gemm.gemm(a, b, c, alpha=alpha, beta=1.5, epilogue=ep)
    torch.cuda.synchronize()
    _check(got, a, b, ep, c=c, alpha=alpha, beta=1.5)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_batches_share_the_vectors(precision):
    gen = torch.Generator(device="cuda").manual_seed(15)
    dt = OPERAND[precision]
    a, b = _rand((4, 37, 45), dt, gen), _rand((45, 29), dt, gen)       # a shared B: folded
    for ep in (Epilogue(bias=_rand(29, "float32", gen), activation="relu"),
               Epilogue(scale_rows=_rand(37, "float32", gen), bias=_rand(37, "float32", gen),
                        bias_axis="row")):                             # rows: per problem
        got = cute_gemm.gemm(a, b, precision=precision, epilogue=ep)
        torch.cuda.synchronize()
        _check(got, a, b, ep, precision=precision)
    b2 = _rand((4, 45, 29), dt, gen)
    ep = Epilogue(bias=_rand(29, "float32", gen), activation="gelu_erf")
    got = cute_gemm.gemm(a, b2, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    _check(got, a, b2, ep, precision=precision)


def test_a_bias_inside_the_result_is_read_before_it_is_written():
    gen = torch.Generator(device="cuda").manual_seed(16)
    m, n, k = 64, 64, 40
    a, b = _rand((m, k), "float32", gen), _rand((k, n), "float32", gen)
    out = _rand((m, n), "float32", gen)
    bias = out[5]                     # a row of out itself
    ep = Epilogue(bias=bias.clone(), activation="silu")
    cute_gemm.gemm(a, b, out=out, epilogue=Epilogue(bias=bias, activation="silu"))
    torch.cuda.synchronize()
    _check(out, a, b, ep)


def test_numpy_operands_and_vectors():
    rng = np.random.default_rng(17)
    a = rng.standard_normal((50, 31), dtype=np.float32)
    b = rng.standard_normal((31, 70), dtype=np.float32)
    ep = Epilogue(bias=rng.standard_normal(70, dtype=np.float32), activation="gelu_tanh")
    got = cute_gemm.gemm(a, b, epilogue=ep)
    assert isinstance(got, np.ndarray)
    _check(torch.from_numpy(got), torch.from_numpy(a), torch.from_numpy(b), ep)

@pytest.mark.parametrize("spec", [FULLEST, dict(bias="row"), dict(bias=True, activation="gelu_tanh")], ids=str)
@pytest.mark.parametrize("majors", ["mk", "kn"])
@pytest.mark.parametrize("name", ["cute_wgmma_ws", "cute_wgmma_ws_128x64", "cute_wgmma_ws_128x128"])
def test_tf32_from_registers_applies_the_epilogue(name, majors, spec):
    """tf32 with A m-major, or B n-major (C^T with B^T m-major): wgmma reads the m-major
    operand from registers, and the tile's rows come out permuted (sm90_epilogue_rows.cuh,
    whose pairs take their vectors' values as pairs): interior and edge tiles, alpha, beta."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(23)
    m, n, k = 300, 520, 200
    a = _rand((k, m), "float32", gen).T if majors == "mk" else _rand((m, k), "float32", gen)
    b = _rand((k, n), "float32", gen) if majors == "kn" else _rand((n, k), "float32", gen).T
    c = _rand((m, n), "float32", gen)
    ep = _epilogue(spec, m, n, "float32", gen)
    out = torch.full((m, n), float("nan"), device="cuda")
    cute_gemm.run(name, a, b, out=out, precision="tf32", epilogue=ep)
    out2 = c.clone()
    cute_gemm.run(name, a, b, out2, out=out2, alpha=0.75, beta=-1.5, precision="tf32", epilogue=ep)
    torch.cuda.synchronize()
    _check(out, a, b, ep, precision="tf32")
    _check(out2, a, b, ep, c=c, alpha=0.75, beta=-1.5, precision="tf32")


@pytest.mark.parametrize("axis", ["col", "row"])
@pytest.mark.parametrize("name,precision", [c for c in _combos() if c[0].startswith("cute_wgmma_ws")
                                            and c[1] in ("bf16", "fp16", "fp8_e4m3")])
def test_a_staged_bias_is_each_tiles_own(name, precision, axis):
    """A bias alone into a 16-bit result: the sm90 16-byte stores stage each tile's bias in
    shared memory (sm90_epilogue.cuh's stage_bias). Hundreds of tiles, so each persistent CTA
    stages one tile after another in the same buffer (a ping-pong kernel's two warpgroups one
    each), interior and edge tiles (staged with zeros past M or N); the bias is large and
    differs from tile to tile, so a value staged for one tile and read in another (a missing
    barrier) is far outside the gauge."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(21)
    dt = "bfloat16" if precision == "fp8_e4m3" else OPERAND[precision]
    m, n, k = 2100, 3000, 128
    a = _rand((m, k), OPERAND[precision], gen)
    b = _rand((n, k), OPERAND[precision], gen).T           # k-major: every kernel's 8-bit B
    # (8-bit operands take float32 vectors only)
    bias = _rand(m if axis == "row" else n, "float32" if precision == "fp8_e4m3" else dt, gen, 100.0)
    ep = Epilogue(bias=bias, bias_axis=axis, out_dtype=dt)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=TORCH[dt])
    cute_gemm.run(name, a, b, out=out, precision=precision, epilogue=ep)
    torch.cuda.synchronize()
    _check(out, a, b, ep, precision=precision, out_dtype=dt)


PINGPONG = [k.name for k in registry.kernels() if getattr(k.config, "pingpong", False)]


@pytest.mark.parametrize("majors", ["kk", "mn"])
@pytest.mark.parametrize("precision,out", [("bf16", "bfloat16"), ("fp16", "float32")])
@pytest.mark.parametrize("name", PINGPONG)
def test_ping_pong_warpgroups_take_tiles_in_turn(name, precision, out, majors):
    """The ping-pong consumers (sm90_consumer_pingpong.cuh): each warpgroup its own tiles,
    stepping its ring past the other's. Hundreds of tiles, so each CTA's warpgroups take
    several in turn, an odd count on some CTAs, each more k-tiles than the ring's stages (the
    turns: a parity wait skipped that far passes early); M, N and K residues (a cluster's tile
    past M); plain, fused (a staged bias per warpgroup, GELU, on interior and edge tiles) and
    beta != 0 in place."""
    _runs_here(name)
    gen = torch.Generator(device="cuda").manual_seed(29)
    dt = OPERAND[precision]
    for m, n, k in ((2100, 3000, 700), (130, 1100, 4100), (64, 256, 8)):
        a = _rand((m, k), dt, gen) if majors[0] == "k" else _rand((k, m), dt, gen).T
        b = _rand((n, k), dt, gen).T if majors[1] == "k" else _rand((k, n), dt, gen)
        c = _rand((m, n), out, gen)
        ep = Epilogue(bias=_rand(n, out, gen, 4.0), activation="gelu_tanh", out_dtype=out)
        plain = torch.full((m, n), float("nan"), device="cuda", dtype=TORCH[out])
        fused = plain.clone()
        both = c.clone()
        cute_gemm.run(name, a, b, out=plain, precision=precision)
        cute_gemm.run(name, a, b, out=fused, precision=precision, epilogue=ep)
        cute_gemm.run(name, a, b, both, out=both, alpha=-0.5, beta=2.0, precision=precision)
        torch.cuda.synchronize()
        _check(plain, a, b, Epilogue(), precision=precision, out_dtype=out)
        _check(fused, a, b, ep, precision=precision, out_dtype=out)
        _check(both, a, b, Epilogue(), c=c, alpha=-0.5, beta=2.0, precision=precision, out_dtype=out)


@pytest.mark.parametrize("tokens", [8, 100, 1000])
@pytest.mark.parametrize("act, approx", [("gelu_tanh", "tanh"), ("gelu_erf", "none")])
def test_a_linear_layer_as_torch_computes_it(tokens, act, approx):
    """y = gelu(x @ W^T + b) in bf16, as torch.nn.Linear and F.gelu compute it."""
    gen = torch.Generator(device="cuda").manual_seed(18)
    x = _rand((tokens, 512), "bfloat16", gen)
    w, bias = _rand((1376, 512), "bfloat16", gen, 0.05), _rand(1376, "bfloat16", gen)
    got = cute_gemm.gemm(x, w.T, epilogue=Epilogue(bias=bias, activation=act, out_dtype="bfloat16"))
    want = torch.nn.functional.gelu(torch.nn.functional.linear(x, w, bias), approximate=approx)
    torch.cuda.synchronize()
    assert got.dtype == torch.bfloat16 and got.shape == want.shape
    _check(got, x, w.T, Epilogue(bias=bias, activation=act), precision="bf16", out_dtype="bfloat16")


def test_a_fused_call_is_captured_in_a_graph():
    gen = torch.Generator(device="cuda").manual_seed(19)
    a, b = _rand((96, 64), "float32", gen), _rand((64, 80), "float32", gen)
    ep = Epilogue(bias=_rand(80, "float32", gen), activation="relu")
    out = torch.empty((96, 80), device="cuda")
    cute_gemm.gemm(a, b, out=out, epilogue=ep)         # compiled and resolved outside
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    out.fill_(float("nan"))
    with torch.cuda.graph(g, stream=s):
        cute_gemm.gemm(a, b, out=out, epilogue=ep)
    g.replay()
    torch.cuda.synchronize()
    _check(out, a, b, ep)


# C's rows as cute_tiny_k may meet them: whole aligned vectors (the vector stores; 16-bit
# operands staged through the MMA's tile) or starting anywhere (c0's order), in place
VIEWS = {"aligned": (0, 8), "odd": (1, 3)}     # (offset into the buffer, row padding)


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("precision, dtype", [("fp32", "float32"), ("bf16", "bfloat16"),
                                              ("fp16", "float16")])
def test_tiny_k_into_a_view(precision, dtype, view):
    """C and out one view into a larger buffer, beta != 0, plain and with bias + GELU(tanh):
    within the gauge, and not one element outside the view written."""
    gen = torch.Generator(device="cuda").manual_seed(int(np.random.default_rng().integers(2**31)))
    off, pad = VIEWS[view]
    for m, n, k in ((300, 523, 7), (1001, 776, 16), (129, 1000, 31), (70, 9000, 13)):
        a, b = _rand((m, k), dtype, gen), _rand((k, n), dtype, gen)
        buf = _rand((m, off + n + pad), dtype, gen)
        c = buf[:, off:off + n]
        c0, rim = c.clone(), torch.cat([buf[:, :off], buf[:, off + n:]], 1).clone()
        fused = Epilogue(bias=_rand(n, dtype, gen), activation="gelu_tanh")
        for ep, judged in ((None, Epilogue()), (fused, fused)):
            c.copy_(c0)
            cute_gemm.run("cute_tiny_k", a, b, c, alpha=0.75, beta=-0.5, out=c, epilogue=ep)
            _check(c, a, b, judged, c0, 0.75, -0.5, precision, dtype)
            assert torch.equal(torch.cat([buf[:, :off], buf[:, off + n:]], 1), rim), \
                f"{(m, n, k)}, {view}: written outside C"

"""cute_gemm.torch on a GPU: torch.compile of an MLP (no graph break), autograd through plain
gemm(), and mm's forward and backward in every precision, each judged against float64 by
cute_gemm's gauge (check.judge: |error| <= 16 u G elementwise, G the sum of the magnitudes
that made the element, u the precision's unit roundoff). Skipped without a GPU."""
from __future__ import annotations

import secrets

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import cute_gemm  # noqa: E402
import cute_gemm.torch as cgt  # noqa: E402
from cute_gemm.check import judge, unit  # noqa: E402
from cute_gemm.base.errors import InputError

pytestmark = pytest.mark.gpu

NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}
PRECISION_TYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
                  "fp16": torch.float16}
# GELU (exact): |gelu'| <= 1.13 and |gelu''| <= 2 phi(0) < 0.8 bound how an error in its
# input moves its output and its derivative
GELU_SLOPE, GELU_CURVE = 1.13, 0.8


@pytest.fixture(autouse=True)
def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")


@pytest.fixture
def seed(request):
    """A fresh seed per test, named in the failure report."""
    s = secrets.randbits(31)
    torch.manual_seed(s)
    yield s


def _np(t):
    return t.detach().double().cpu().numpy()


def _check(what, got, ref, gauge, precision, out_dtype, seed):
    r = judge(what, _np(got).astype(np.float64), _np(ref), _np(gauge), False,
              unit(precision, NAMES[out_dtype]), NAMES[out_dtype])
    assert r.ok, f"{what}: gauge ratio {r.gauge_ratio:.3g} at {r.first_fail} ({r.message}); seed {seed}"


def _randn(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape, device="cuda").to(dtype).requires_grad_(grad)


# ---- (a) torch.compile of a two-layer MLP -------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=NAMES.get)
def test_compiled_mlp_forward_and_backward_against_float64(dtype, seed):
    precision = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype]
    l1 = cgt.Linear(96, 200, device="cuda", dtype=dtype)
    l2 = cgt.Linear(200, 72, device="cuda", dtype=dtype)

    def mlp(x):
        return l2(torch.nn.functional.gelu(l1(x)))
    x = _randn(4, 33, 96, dtype=dtype, grad=True)
    explained = torch._dynamo.explain(mlp)(x)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    y = torch.compile(mlp, fullgraph=True)(x)
    r = _randn(*y.shape, dtype=dtype)
    y.backward(r)
    torch.cuda.synchronize()

    # float64 of the values the kernels were given, and each result's gauge: the magnitudes
    # that made it, with the error an input carries from the layer before (through GELU's
    # slope and curvature) counted as a magnitude of its own
    X, W1, b1, W2, b2, R = (t.detach().double().reshape(-1, t.shape[-1]) if t.dim() > 1 else
                            t.detach().double() for t in (x, l1.weight, l1.bias, l2.weight,
                                                          l2.bias, r))
    H1 = (X @ W1.T + b1).requires_grad_()
    H2 = torch.nn.functional.gelu(H1)
    Y = H2 @ W2.T + b2
    dH2 = R @ W2
    (dH1,) = torch.autograd.grad(H2, H1, dH2)
    G1 = X.abs() @ W1.abs().T + b1.abs()
    H2g = H2.detach().abs() + GELU_SLOPE * G1
    GdH1 = GELU_SLOPE * (R.abs() @ W2.abs()) + GELU_CURVE * dH2.abs() * G1 + dH1.abs()
    dH1g = dH1.abs() + GdH1
    want = {"y": (Y, H2g @ W2.abs().T + b2.abs(), y),
            "dx": (dH1 @ W1, dH1g @ W1.abs(), x.grad),
            "dW1": (dH1.T @ X, dH1g.T @ X.abs(), l1.weight.grad),
            "db1": (dH1.sum(0), dH1g.sum(0), l1.bias.grad),
            "dW2": (R.T @ H2.detach(), R.abs().T @ H2g, l2.weight.grad),
            "db2": (R.sum(0), R.abs().sum(0), l2.bias.grad)}
    for what, (ref, gauge, got) in want.items():
        assert got.dtype == dtype, what
        got = got.reshape(ref.shape)
        if ref.dim() == 1:
            ref, gauge, got = ref[None], gauge[None], got[None]
        _check(what, got, ref, gauge, precision, dtype, seed)


# ---- (b) autograd through plain gemm() ----------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=NAMES.get)
def test_plain_gemm_with_requires_grad_has_a_grad_fn(dtype, seed):
    """Routed to the op (grad mode on, no out): float32 result as ever, now differentiable."""
    a, b = _randn(130, 70, dtype=dtype, grad=True), _randn(70, 90, dtype=dtype)
    c = cute_gemm.gemm(a, b)
    assert c.grad_fn is not None and c.dtype == torch.float32
    c.sum().backward()
    assert a.grad.dtype == dtype and b.grad is None
    ones = torch.ones(130, 90, dtype=torch.float64, device="cuda")
    B = b.detach().double()
    precision = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype]
    _check("da", a.grad, ones @ B.T, ones @ B.abs().T, precision, dtype, seed)


def test_plain_gemm_out_with_requires_grad_is_refused():
    a, b = _randn(8, 4, grad=True), _randn(4, 8)
    with pytest.raises(InputError):
        cute_gemm.gemm(a, b, out=torch.empty(8, 8, device="cuda"))


def test_plain_gemm_under_no_grad_has_no_grad_fn():
    a, b = _randn(8, 4, grad=True), _randn(4, 8, grad=True)
    with torch.no_grad():
        c = cute_gemm.gemm(a, b)
    assert c.grad_fn is None and not c.requires_grad


# ---- (c) mm in every precision ------------------------------------------------------------
@pytest.mark.parametrize("out", ["same", "float32"])
@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16", "fp16"])
def test_mm_forward_and_backward_in_each_precision(precision, out, seed):
    dtype = PRECISION_TYPE[precision]
    out_dtype = dtype if out == "same" else torch.float32
    m, k, n = 257, 129, 67
    a, b = _randn(m, k, dtype=dtype, grad=True), _randn(k, n, dtype=dtype, grad=True)
    y = cgt.mm(a, b, precision=precision, out_dtype=out_dtype)
    assert y.dtype == out_dtype
    r = _randn(m, n, dtype=out_dtype)
    y.backward(r)
    A, B = a.detach().double(), b.detach().double()
    # the gradient enters the backward products in the operands' type
    R = r.to(dtype).double()
    _check("y", y, A @ B, A.abs() @ B.abs(), precision, out_dtype, seed)
    assert a.grad.dtype == b.grad.dtype == dtype
    _check("da", a.grad, R @ B.T, R.abs() @ B.abs().T, precision, dtype, seed)
    _check("db", b.grad, A.T @ R, A.abs().T @ R.abs(), precision, dtype, seed)


def test_addmm_and_linear_with_a_broadcast_bias(seed):
    """linear's bias added in the kernel's epilogue; addmm's c of stride 0 (a bias expanded
    as a view) read as it is."""
    x, w, bias = _randn(3, 50, 40, grad=True), _randn(30, 40, grad=True), _randn(30, grad=True)
    y = cgt.linear(x, w, bias)
    X, W, Bb = x.detach().double().reshape(-1, 40), w.detach().double(), bias.detach().double()
    _check("linear", y.reshape(-1, 30), X @ W.T + Bb, X.abs() @ W.abs().T + Bb.abs(), "fp32",
           torch.float32, seed)
    y.sum().backward()
    torch.testing.assert_close(bias.grad, torch.full((30,), 150.0, device="cuda"))
    z = cgt.addmm(bias, x[0], w.mT, beta=-2.0, alpha=0.5)
    _check("addmm", z, 0.5 * X[:50] @ W.T - 2 * Bb, 0.5 * X[:50].abs() @ W.abs().T + 2 * Bb.abs(),
           "fp32", torch.float32, seed)


# ---- (d) torch's conventions: autocast, matmul ---------------------------------------------
def test_linear_under_autocast_runs_in_its_type(seed):
    """torch.autocast("cuda", bfloat16): cgt.Linear computes in bf16 as nn.Linear does there,
    its float32 parameters get float32 gradients."""
    layer = cgt.Linear(96, 48).cuda()
    x = _randn(2, 33, 96, grad=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = layer(x)
    assert y.dtype == torch.bfloat16 and y.shape == (2, 33, 48)
    X = x.detach().to(torch.bfloat16).double().reshape(-1, 96)
    W = layer.weight.detach().to(torch.bfloat16).double()
    bias = layer.bias.detach().to(torch.bfloat16).double()
    _check("autocast linear", y.reshape(-1, 48), X @ W.T + bias, X.abs() @ W.abs().T + bias.abs(),
           "bf16", torch.bfloat16, seed)
    y.float().sum().backward()
    assert layer.weight.grad.dtype == torch.float32 and x.grad.dtype == torch.float32


@pytest.mark.parametrize("sa,sb", [((3, 1, 40, 24), (5, 24, 17)), ((24,), (4, 24, 9)), ((7, 24), (24,))])
def test_matmul_broadcasts_as_torch_matmul(sa, sb, seed):
    a, b = _randn(*sa), _randn(*sb)
    y = cgt.matmul(a, b)
    A, B = a.double(), b.double()
    ref, gauge = torch.matmul(A, B), torch.matmul(A.abs(), B.abs())
    assert y.shape == ref.shape and y.dtype == torch.float32
    _check("matmul", y.reshape(-1, 1), ref.reshape(-1, 1), gauge.reshape(-1, 1), "fp32",
           torch.float32, seed)

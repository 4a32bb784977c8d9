"""cute_gemm.torch without a GPU: the op's fake (shapes, types, errors at trace time), its
autograd formula, the wrappers and torch.compile, with run() replaced by a float64 torch
product (`stand_in_run`) so that everything above the launch is exercised on the CPU."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import cute_gemm  # noqa: E402
import cute_gemm.torch as cgt  # noqa: E402
from cute_gemm import api, registry  # noqa: E402
from cute_gemm.base.errors import DTypeError, InputError, ShapeError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def calls(monkeypatch):
    """run() as a float64 torch product into `out`; the list of the calls it answered."""
    seen = []

    def stand_in_run(name, a, b, c=None, *, alpha=1.0, beta=0.0, out=None, stream=None,
                     precision=None, epilogue=None):
        assert out is not None and stream is None
        seen.append(dict(name=name, a=a, b=b, c=c, alpha=alpha, beta=beta, out=out,
                         precision=precision, epilogue=epilogue))
        r = alpha * (a.double() @ b.double())
        if c is not None:
            assert c.dtype == out.dtype, "run() reads c in the result's type"
            r = r + beta * c.double() if beta != 0 else r       # (beta = 0 never reads C)
        if epilogue is not None:
            assert epilogue.bias.dtype in (torch.float32, a.dtype), "an epilogue vector's type"
            r = r + epilogue.bias.double()
        out.copy_(r)
        return out
    monkeypatch.setattr(api, "run", stand_in_run)
    return seen


def _randn(*shape, dtype=torch.float32, grad=False, seed=[1234]):
    seed[0] += 1
    g = torch.Generator().manual_seed(seed[0])
    return torch.randn(*shape, generator=g).to(dtype).requires_grad_(grad)


def test_importing_cute_gemm_torch_does_not_import_torch():
    code = "import sys, cute_gemm, cute_gemm.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO.parent, env={"PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_a_first_use_inside_a_compiled_function_breaks_no_graph():
    """A fresh process whose first use of the op is traced: it is defined outside the trace
    (meta tensors: the fake runs as their kernel, no GPU needed)."""
    code = ("import torch, cute_gemm.torch as cgt\n"
            "f = torch.compile(lambda a, b: cgt.linear(a, b), fullgraph=True, backend='eager')\n"
            "print(tuple(f(torch.empty(4, 3, device='meta'), torch.empty(2, 3, device='meta')).shape))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO.parent, env={"PYTHONPATH": str(REPO)})
    assert out.returncode == 0 and out.stdout.strip() == "(4, 2)", out.stdout + out.stderr


@pytest.mark.parametrize("device", ["meta", "fake"])
@pytest.mark.parametrize("dtype,out_dtype,want", [
    (torch.float32, None, torch.float32), (torch.bfloat16, None, torch.bfloat16),
    (torch.float16, None, torch.float16), (torch.bfloat16, torch.float32, torch.float32),
    (torch.float16, torch.float32, torch.float32), (torch.float32, torch.float32, torch.float32)])
def test_fake_gives_shape_type_and_device(device, dtype, out_dtype, want):
    """out_dtype, else a's type (torch's rule); the result on a's device."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    def shapes():
        a = torch.empty(7, 3, dtype=dtype, device="meta" if device == "meta" else "cpu")
        b = torch.empty(3, 5, dtype=dtype, device=a.device)
        c = torch.empty(7, 5, dtype=torch.float32, device=a.device)
        r = cgt.gemm(a, b, c, beta=1.0, out_dtype=out_dtype)
        return r, cgt.mm(a.mT.mT, b, out_dtype=out_dtype), a
    if device == "fake":
        with FakeTensorMode():
            r, r2, a = shapes()
    else:
        r, r2, a = shapes()
    for x in (r, r2):
        assert x.shape == (7, 5) and x.dtype == want and x.device == a.device


def test_fake_refuses_what_run_refuses_when_traced():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        a, b = torch.empty(7, 3), torch.empty(4, 5)
        with pytest.raises(RuntimeError, match="inner dimensions differ"):
            cgt.mm(a, b)
        with pytest.raises(RuntimeError, match="c must have shape"):
            cgt.gemm(a, torch.empty(3, 5), torch.empty(5, 7), beta=1.0)
        with pytest.raises(RuntimeError, match="2 dimensions or more"):
            cgt.mm(torch.empty(7), torch.empty(7, 2))
        with pytest.raises(RuntimeError, match=r"bias must have shape \(4,\)"):
            cgt.linear(a, torch.empty(4, 3), torch.empty(5))
        # a batch broadcast as torch.matmul broadcasts it
        assert cgt.mm(torch.empty(4, 1, 7, 3), torch.empty(6, 3, 5)).shape == (4, 6, 7, 5)
        bf = torch.empty(3, 5, dtype=torch.bfloat16)
        with pytest.raises(DTypeError):
            cgt.mm(a[:, :3], bf)
        with pytest.raises(DTypeError):
            cgt.mm(torch.empty(7, 3, dtype=torch.bfloat16), bf, out_dtype=torch.float16)


def test_shape_error_at_trace_time_under_compile(calls):
    f = torch.compile(lambda a, b: cgt.mm(a, b), fullgraph=True, backend="eager")
    with pytest.raises(RuntimeError, match="inner dimensions differ"):
        f(torch.randn(4, 3), torch.randn(5, 2))
    assert calls == []       # refused by the fake: nothing ran


def test_forward_calls_run_once_with_the_op_arguments(calls):
    a, b = _randn(6, 4, dtype=torch.bfloat16), _randn(4, 3, dtype=torch.bfloat16)
    c = _randn(6, 3)
    r = cgt.gemm(a, b, c, alpha=2, beta=0.5, precision="bf16", out_dtype=torch.float32)
    (call,) = calls
    assert call["name"] == registry.AUTO and call["precision"] == "bf16"
    assert call["alpha"] == 2.0 and call["beta"] == 0.5 and call["out"] is r
    assert call["c"] is c                     # of the result's type already: not copied
    assert r.dtype == torch.float32 and r.shape == (6, 3)


def test_c_of_another_type_is_converted_and_its_gradient_returned_in_its_type(calls):
    a, b = _randn(6, 4, dtype=torch.bfloat16, grad=True), _randn(4, 3, dtype=torch.bfloat16)
    c = _randn(6, 3, grad=True)
    r = cgt.gemm(a, b, c, beta=-3.0)
    assert r.dtype == torch.bfloat16 and calls[0]["c"].dtype == torch.bfloat16
    r.backward(torch.ones_like(r))
    assert c.grad.dtype == torch.float32 and torch.equal(c.grad, torch.full((6, 3), -3.0))
    assert a.grad.dtype == torch.bfloat16


@pytest.mark.parametrize("with_c", [False, True])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-2.5, 0.75)])
def test_backward_matches_torch_autograd(calls, with_c, alpha, beta):
    """dA = alpha dC B^T, dB = alpha A^T dC through the op (gemm()'s pick, the forward's
    precision, each operand's type), dc = beta dC; compared with torch's own autograd of
    the same expression in float64."""
    a, b = _randn(9, 5, grad=True), _randn(5, 7, grad=True)
    c = _randn(9, 7, grad=True) if with_c else None
    r = _randn(9, 7)
    y = cgt.gemm(a, b, c, alpha=alpha, beta=beta, precision="tf32")
    y.backward(r)
    leaves = [a, b] + ([c] if with_c else [])
    ref = [x.detach().double().requires_grad_() for x in leaves]
    y64 = alpha * ref[0] @ ref[1] + (beta * ref[2] if with_c else 0)
    y64.backward(r.double())
    for x, x64 in zip(leaves, ref):
        torch.testing.assert_close(x.grad.double(), x64.grad, rtol=1e-6, atol=1e-6)
    back = calls[1:]
    assert len(back) == 2
    assert {c_["name"] for c_ in back} == {registry.AUTO}
    assert {c_["precision"] for c_ in back} == {"tf32"}
    assert {c_["alpha"] for c_ in back} == {alpha} and {c_["beta"] for c_ in back} == {0.0}
    # transposes are views, not copies: cute_gemm kernels take any strides
    assert any(c_["b"].data_ptr() == b.data_ptr() and c_["b"].stride() == (1, 7) for c_ in back)


def test_backward_computes_only_the_gradients_asked_for(calls):
    a, b = _randn(3, 4, grad=True), _randn(4, 2)
    cgt.mm(a, b).sum().backward()
    assert len(calls) == 2 and calls[1]["out"].shape == (3, 4)
    assert b.grad is None


def test_gradients_of_16_bit_operands_come_in_their_type(calls):
    a = _randn(5, 4, dtype=torch.float16, grad=True)
    b = _randn(4, 3, dtype=torch.float16, grad=True)
    y = cgt.mm(a, b, out_dtype=torch.float32)
    y.backward(_randn(5, 3))
    assert a.grad.dtype == b.grad.dtype == torch.float16
    # the float32 gradient is read in the operands' type: gemm() multiplies one type
    assert all(c_["a"].dtype == c_["b"].dtype == torch.float16 for c_ in calls[1:])


def test_opcheck(calls):
    a, b = _randn(5, 3, grad=True), _randn(3, 4, grad=True)
    c = _randn(5, 4, grad=True)
    bias = _randn(4, grad=True)
    for args in [(a, b, c, 2.0, 0.5, None, None, "auto"), (a, b, None, 1.0, 0.0, "tf32", None, "auto"),
                 (a.bfloat16(), b.bfloat16(), c, 1.0, 1.0, None, torch.float32, "auto"),
                 (a, b, c, 2.0, 0.5, None, None, "auto", bias),
                 (a.bfloat16(), b.bfloat16(), None, 1.0, 0.0, None, None, "auto", bias)]:
        torch.library.opcheck(cgt.op(), args)


@pytest.mark.parametrize("with_c", [False, True])
def test_eager_calls_skip_the_ops_dispatch_and_give_its_results(calls, with_c):
    """An eager call runs the op's forward and gradients as an autograd Function (its
    dispatch costs ~4x less host time), or plainly where no gradient is asked for: the same
    values and gradients as the op called itself, first and second order."""
    def leaves():
        g = torch.Generator().manual_seed(7)
        return [torch.randn(*s, generator=g).requires_grad_()
                for s in ((6, 4), (4, 5), (6, 5))[:2 + with_c]]

    def grads(f):
        a, b, *c = leaves()
        y = f(a, b, c[0] if c else None, 1.5, 0.5 if c else 0.0, None, None, registry.AUTO)
        first = torch.autograd.grad((y * y).sum(), [a, b, *c], create_graph=True)
        second = torch.autograd.grad(sum(g.square().sum() for g in first), [a, b])
        return y, first + second

    y, eager = grads(cgt.product)
    y_op, via_op = grads(cgt.op())
    assert type(y.grad_fn).__name__ == "EagerBackward"
    assert type(y_op.grad_fn).__name__ != "EagerBackward"
    torch.testing.assert_close(y, y_op, rtol=0, atol=0)
    for e, o in zip(eager, via_op):
        torch.testing.assert_close(e, o, rtol=1e-6, atol=1e-6)
    with torch.no_grad():
        assert cgt.mm(*leaves()[:2]).grad_fn is None
    assert cgt.mm(*(x.detach() for x in leaves()[:2])).grad_fn is None
    weight = torch.nn.Parameter(_randn(4, 5))       # a module's parameter is eager too
    assert type(cgt.mm(_randn(6, 4), weight).grad_fn).__name__ == "EagerBackward"


@pytest.mark.parametrize("mode", ["real", "fake", "symbolic"])
def test_a_trace_by_dispatch_mode_records_the_op(calls, mode):
    """make_fx traces through a dispatch mode, with real tensors too: the call must stay one
    op in its graph, not run eagerly into a constant."""
    from torch.fx.experimental.proxy_tensor import make_fx
    graph = make_fx(lambda a, b: cgt.mm(a, b) * 2, tracing_mode=mode)(_randn(3, 4), _randn(4, 2))
    assert "cute_gemm.gemm" in graph.code, graph.code


@pytest.mark.parametrize("compiled", [False, True])
def test_autocast_casts_as_it_casts_torch_mm(calls, compiled):
    """Under torch.autocast the torch-shaped functions take torch.mm's rule: float32 and
    16-bit operands (c too) in the autocast type, the result in it; gradients reach float32
    leaves in float32. A named precision or 8-bit operands are left as they are."""
    x, w, bias = _randn(6, 5, grad=True), _randn(4, 5, grad=True), _randn(4, grad=True)
    half = _randn(6, 5, dtype=torch.float16)

    def f(x, w, bias, half):
        return (cgt.linear(x, w, bias), cgt.mm(half, w.mT), cgt.mm(x, w.mT, precision="tf32"),
                cgt.mm(x, w.mT, out_dtype=torch.float32))
    if compiled:
        f = torch.compile(f, fullgraph=True, backend="aot_eager")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, y_half, y_named, y_out = f(x, w, bias, half)
        ref = torch.nn.functional.linear(x, w, bias)
    assert y.dtype == ref.dtype == y_half.dtype == torch.bfloat16
    assert y_named.dtype == torch.float32 and y_out.dtype == torch.float32
    ran = [(c_["a"].dtype, c_["b"].dtype, None if c_["c"] is None else c_["c"].dtype)
           for c_ in calls]
    bf = torch.bfloat16
    assert calls[0]["epilogue"].bias.dtype == bf        # the bias too, as nn.Linear's
    assert ran == [(bf, bf, None), (bf, bf, None), (torch.float32, torch.float32, None),
                   (bf, bf, None)]
    torch.testing.assert_close(y, ref, rtol=1e-2, atol=1e-2)
    y.float().sum().backward()
    assert x.grad.dtype == w.grad.dtype == bias.grad.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        e4m3 = cgt.mm(_randn(6, 16).to(torch.float8_e4m3fn),
                      _randn(16, 8).to(torch.float8_e4m3fn), out_dtype=torch.bfloat16)
    assert calls[-1]["a"].dtype == torch.float8_e4m3fn and e4m3.dtype == bf


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)),
                                   ((2, 3, 4, 5), (5,)), ((5,), (2, 5, 3)), ((4, 5), (5, 3)),
                                   ((2, 1, 4, 5), (3, 5, 6)), ((4, 5), (2, 5, 3))])
def test_matmul_follows_torch_matmul(calls, sa, sb):
    """1-D operands gain and lose their dimension of 1, batches broadcast; values, shapes
    and gradients as torch.matmul's."""
    a, b = _randn(*sa, grad=True), _randn(*sb, grad=True)
    y = cgt.matmul(a, b)
    a64, b64 = (x.detach().double().requires_grad_() for x in (a, b))
    ref = torch.matmul(a64, b64)
    assert y.shape == ref.shape and y.dtype == torch.float32
    torch.testing.assert_close(y.double(), ref, rtol=1e-6, atol=1e-6)
    y.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(a.grad.double(), a64.grad, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(b.grad.double(), b64.grad, rtol=1e-6, atol=1e-6)


def test_matmul_and_bmm_refuse_what_torch_refuses(calls):
    with pytest.raises(ShapeError, match="one dimension or more"):
        cgt.matmul(torch.tensor(2.0), _randn(3))
    for sa, sb in [((2, 3, 4), (3, 4, 5)), ((3, 4), (3, 4, 5)), ((2, 3, 4), (4, 5))]:
        with pytest.raises(ShapeError, match="bmm takes"):
            cgt.bmm(_randn(*sa), _randn(*sb))
    y = cgt.bmm(_randn(2, 3, 4), _randn(2, 4, 5))
    assert y.shape == (2, 3, 5) and calls[-1]["a"].shape == (2, 3, 4)     # one launch's batch
    assert not calls[:-1]


@pytest.mark.parametrize("beta", [2.0, 1.0, 0.0])
@pytest.mark.parametrize("shape", [(3,), (1, 3), (6, 1), (1,)])
def test_addmm_broadcasts_c_as_torch_addmm_does(calls, shape, beta):
    """A bias (one row) goes to the epilogue; a column or a scalar is broadcast as a view;
    beta = 0 ignores c (NaN too), as torch.addmm does."""
    a, b, c = _randn(6, 4, grad=True), _randn(4, 3), _randn(*shape, grad=True)
    y = cgt.addmm(c, a, b, beta=beta, alpha=0.5)
    row = shape[-1] == 3
    assert (calls[0]["epilogue"] is not None) == (row and beta != 0)
    assert (calls[0]["c"] is None) == (row and beta != 0)
    assert calls[0]["c"] is None or 0 in calls[0]["c"].stride()        # a view
    torch.testing.assert_close(y, torch.addmm(c, a, b, beta=beta, alpha=0.5))
    y.sum().backward()
    torch.testing.assert_close(c.grad, torch.addmm(c, a, b, beta=beta).new_full(
        (6, 3), beta).sum_to_size(shape))
    nan = torch.full(shape, float("nan"))
    assert cgt.addmm(nan, a, b, beta=0.0).isnan().any() == torch.addmm(nan, a, b, beta=0.0).isnan().any()


@pytest.mark.parametrize("shape", [(5,), (7, 5), (2, 3, 5)])
def test_linear_and_the_module_match_torch(calls, shape):
    layer = cgt.Linear(5, 4)
    assert isinstance(layer, torch.nn.Linear) and isinstance(layer, cgt.Linear)
    x = _randn(*shape, grad=True)
    y = layer(x)
    ref = torch.nn.Linear(5, 4)
    ref.load_state_dict(layer.state_dict())
    x2 = x.detach().clone().requires_grad_()
    y2 = ref(x2)
    torch.testing.assert_close(y, y2)
    g = _randn(*y.shape)
    y.backward(g)
    y2.backward(g)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(layer.weight.grad, ref.weight.grad)
    torch.testing.assert_close(layer.bias.grad, ref.bias.grad)
    # added in the kernel's epilogue, read where it lies
    assert calls[0]["c"] is None and calls[0]["epilogue"].bias.data_ptr() == layer.bias.data_ptr()


def test_linear_without_bias_and_in_a_precision(calls):
    layer = cgt.Linear(5, 4, bias=False, precision="tf32")
    y = layer(_randn(3, 5))
    assert layer.bias is None and calls[0]["c"] is None and calls[0]["epilogue"] is None
    assert calls[0]["precision"] == "tf32"
    assert y.shape == (3, 4) and "precision='tf32'" in repr(layer)


def test_linear_module_pickles_by_name():
    import pickle
    layer = cgt.Linear(3, 2)
    back = pickle.loads(pickle.dumps(layer))
    assert type(back) is cgt.Linear and torch.equal(back.weight, layer.weight)


def _mlp(l1, l2):
    return lambda x: l2(torch.nn.functional.gelu(l1(x)))


def test_compiled_mlp_has_no_graph_break_and_matches_eager(calls):
    l1, l2 = cgt.Linear(6, 10), cgt.Linear(10, 3)
    f = _mlp(l1, l2)
    x = _randn(2, 4, 6, grad=True)
    explained = torch._dynamo.explain(f)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    y = compiled(x)
    y.sum().backward()
    grads = [x.grad, l1.weight.grad, l1.bias.grad, l2.weight.grad, l2.bias.grad]
    for p in (x, l1.weight, l1.bias, l2.weight, l2.bias):
        p.grad = None
    y_eager = f(x)
    y_eager.sum().backward()
    torch.testing.assert_close(y, y_eager)
    for g, p in zip(grads, (x, l1.weight, l1.bias, l2.weight, l2.bias)):
        torch.testing.assert_close(g, p.grad)


def test_route_keeps_plain_gemms_result_type(calls):
    a = _randn(4, 3, dtype=torch.bfloat16, grad=True)
    b = _randn(3, 2, dtype=torch.bfloat16)
    y = cgt.route(registry.AUTO, a, b, None, 1.0, 0.0, None)
    assert y.dtype == torch.float32 and y.grad_fn is not None
    c = _randn(4, 2, dtype=torch.bfloat16)
    y = cgt.route("cute_smem", a, b, c, 1.0, 2.0, "bf16")
    assert y.dtype == torch.bfloat16 and calls[-1]["name"] == "cute_smem"
    assert calls[-1]["beta"] == 2.0 and calls[-1]["precision"] == "bf16"
    y.sum().backward()
    assert a.grad.dtype == torch.bfloat16


def test_route_reads_other_arrays_as_tensors_and_refuses_bad_scalars(calls):
    import numpy as np
    a = _randn(4, 3, grad=True)
    y = cgt.route(registry.AUTO, a, np.ones((3, 2), np.float32), None, np.float32(2), 0, None)
    torch.testing.assert_close(y, 2 * a.detach() @ torch.ones(3, 2))
    with pytest.raises(InputError, match="alpha"):
        cgt.route(registry.AUTO, a, a.mT, None, True, 0.0, None)
    with pytest.raises(InputError, match="b is a"):
        cgt.route(registry.AUTO, a, object(), None, 1.0, 0.0, None)


def test_no_linear_before_it_is_asked_for():
    """The module attribute is made on demand; other names are still AttributeErrors."""
    with pytest.raises(AttributeError):
        cgt.Nothing  # noqa: B018
    assert cute_gemm.torch is cgt

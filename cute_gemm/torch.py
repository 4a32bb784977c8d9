"""cute_gemm for PyTorch: the custom op `cute_gemm::gemm`, which autograd differentiates and
torch.compile traces without a graph break, and torch-shaped functions built on it.

    import cute_gemm.torch as cgt
    y = cgt.mm(a, b)                          # a @ b
    y = cgt.matmul(a, b)                      # torch.matmul: batches broadcast, 1-D operands
    y = cgt.bmm(a, b)                         # (B, M, K) @ (B, K, N)
    y = cgt.addmm(c, a, b, beta=1, alpha=1)   # torch.addmm's order; a bias in the epilogue
    y = cgt.linear(x, w, bias)                # x @ w.T + bias, x of any number of dims
    layer = cgt.Linear(1024, 4096)            # a torch.nn.Linear whose forward runs here

The result is of `out_dtype` (float32 or a's type; c converted to it), else a's type as
torch answers (plain gemm() answers float32). Gradients: dA = alpha dC B^T, dB = alpha A^T dC
by gemm() in the forward's precision, each in its operand's type; dc = beta dC in c's type.
Under torch.autocast (and no `precision`), float32 and 16-bit operands are cast to the
autocast type as torch.mm's are. Work goes on torch's current stream. A trace
(torch.compile, export, make_fx) records the op; an eager call runs its forward, through an
autograd Function where a gradient is asked for. Importing this module imports no torch:
the op is defined at first use.
"""
from __future__ import annotations

import numbers
import sys
import threading

from . import api, registry
from .base.errors import DTypeError, InputError, ShapeError
from .base.precisions import DTYPE, PRECISION
from .driver.epilogue import Epilogue

SCHEMA = ("(Tensor a, Tensor b, Tensor? c, float alpha, float beta, str? precision, "
          "ScalarType? out_dtype, str kernel, Tensor? bias=None) -> Tensor")

_LOCK = threading.Lock()
_THIS = sys.modules[__name__]


def op():
    """The custom op cute_gemm::gemm(a, b, c, alpha, beta, precision, out_dtype, kernel,
    bias=None) -> alpha * a @ b + beta * c + bias by run(kernel, ...) into a new (m, n) tensor
    on a's device, the bias (one value a column) added in the kernel's epilogue; defined, with
    its fake and autograd, at the first call (which imports torch)."""
    # a module attribute, not a global: torch.compile reads it with a real getattr
    return _THIS.gemm_op


def _define():
    import torch

    def of(name: str):
        return getattr(torch, DTYPE[name].torch)
    # the precision table's (A, B) operand types, each pair with the result types it may give
    operand_types: dict = {}
    for p in PRECISION.values():
        outs = operand_types.setdefault((of(p.dtype), of(p.b_dtype)), {})
        outs.update(dict.fromkeys(of(o) for o in p.outs))

    def result_dtype(a, b, out_dtype):
        # checked in the fake too, so that a compiled call fails where it is traced
        outs = tuple(operand_types.get((a.dtype, b.dtype), ()))
        if not outs:
            raise DTypeError(f"a is {a.dtype} and b is {b.dtype}: no precision reads that pair; "
                             f"operand types: {', '.join(str(x) for x, y in operand_types if x == y)}"
                             ", or one 8-bit float type each")
        if out_dtype is None:        # a's type, as torch answers, where it can hold one
            return a.dtype if a.dtype in outs else outs[0]
        if out_dtype not in outs:
            raise DTypeError(f"the result of {a.dtype} x {b.dtype} operands is "
                             f"{' or '.join(map(str, outs))}, not {out_dtype}")
        return out_dtype

    def forward(a, b, c, alpha, beta, precision, out_dtype, kernel, bias=None):
        if a.dim() < 2 or b.dim() < 2:
            raise ShapeError(f"a and b must have 2 dimensions or more, got shapes "
                             f"{tuple(a.shape)} and {tuple(b.shape)}")
        dtype = result_dtype(a, b, out_dtype)
        batch = () if a.dim() == b.dim() == 2 else torch.broadcast_shapes(a.shape[:-2],
                                                                          b.shape[:-2])
        result = torch.empty(batch + (a.shape[-2], b.shape[-1]), dtype=dtype, device=a.device)
        if c is not None and c.dtype != dtype:
            c = c.to(dtype)             # run() reads c in the result's type
        if bias is not None and bias.dtype not in (torch.float32, a.dtype):
            bias = bias.float()         # (an epilogue's vector: float32 or a's 16-bit type)
        api.run(kernel, a, b, c, alpha=alpha, beta=beta, out=result, precision=precision,
                epilogue=None if bias is None else Epilogue(bias=bias))
        return result

    gemm_op = torch.library.custom_op("cute_gemm::gemm", forward, mutates_args=(),
                                      schema=SCHEMA)
    check = torch._check    # (torch's documented assert that symbolic shapes can take)

    @gemm_op.register_fake
    def _(a, b, c, alpha, beta, precision, out_dtype, kernel, bias=None):
        check(a.dim() >= 2 and b.dim() >= 2, lambda: f"a and b must have 2 dimensions or "
              f"more, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
        m, n = a.shape[-2], b.shape[-1]
        check(a.shape[-1] == b.shape[-2], lambda: f"inner dimensions differ: a is "
              f"{tuple(a.shape)}, b is {tuple(b.shape)}")
        shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)
        if c is not None:
            check(c.dim() >= 2 and c.shape[-2] == m and c.shape[-1] == n,
                  lambda: f"c must have shape (..., {m}, {n}), got {tuple(c.shape)}")
        if bias is not None:
            check(bias.dim() == 1 and bias.shape[0] == n,
                  lambda: f"bias must have shape ({n},), got {tuple(bias.shape)}")
        return a.new_empty(shape, dtype=result_dtype(a, b, out_dtype))

    def remember(ctx, inputs, output):
        a, b, c, alpha, beta, precision, _, _, *bias = inputs
        ctx.save_for_backward(a, b)
        ctx.alpha, ctx.beta, ctx.precision = alpha, beta, precision
        ctx.c_dtype, ctx.c_shape = (None, None) if c is None else (c.dtype, c.shape)
        ctx.bias_dtype = None if not bias or bias[0] is None else bias[0].dtype

    def gradients(ctx, grad):
        (a, b), (need_a, need_b, need_c) = ctx.saved_tensors, ctx.needs_input_grad[:3]
        need_bias = ctx.bias_dtype is not None and ctx.needs_input_grad[8]
        # by gemm()'s pick, not the forward's kernel, which may not take the transposed shapes
        g = grad.to(a.dtype) if need_a or need_b else None
        # summed over the batch modes each operand was broadcast along (a no-op for 2-D)
        da = (product(g, b.mT, None, ctx.alpha, 0.0, ctx.precision, a.dtype, registry.AUTO)
              .sum_to_size(a.shape) if need_a else None)
        db = (product(a.mT, g, None, ctx.alpha, 0.0, ctx.precision, b.dtype, registry.AUTO)
              .sum_to_size(b.shape) if need_b else None)
        dc = (ctx.beta * grad).sum_to_size(ctx.c_shape).to(ctx.c_dtype) if need_c else None
        dbias = grad.sum_to_size(grad.shape[-1:]).to(ctx.bias_dtype) if need_bias else None
        return da, db, dc, None, None, None, None, None, dbias

    gemm_op.register_autograd(gradients, setup_context=remember)

    class Eager(torch.autograd.Function):
        """The op's forward and gradients as an autograd Function, for eager calls: a custom
        op's dispatch costs such a call several times a Function's host time."""

        @staticmethod
        def forward(ctx, *args):    # (a separate setup_context costs an inspect.bind a call)
            result = forward(*args)
            remember(ctx, args, result)
            return result

        backward = staticmethod(gradients)

    plain, compiling = {torch.Tensor, torch.nn.Parameter}, torch.compiler.is_compiling
    # (torch has no public test for an active dispatch mode, which make_fx traces through)
    from torch.utils._python_dispatch import is_in_torch_dispatch_mode as in_mode

    def product(a, b, c, alpha, beta, precision, out_dtype, kernel, bias=None):
        """The op where a trace must see it (torch.compile, export, fake or meta tensors,
        a dispatch mode such as make_fx's); otherwise its forward, through autograd only
        when a gradient is asked for."""
        if (compiling() or in_mode() or type(a) not in plain or type(b) not in plain
                or a.is_meta or any(x is not None and type(x) not in plain for x in (c, bias))):
            return gemm_op(a, b, c, alpha, beta, precision, out_dtype, kernel, bias)
        if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad or any(
                x is not None and x.requires_grad for x in (c, bias))):
            return Eager.apply(a, b, c, alpha, beta, precision, out_dtype, kernel, bias)
        return forward(a, b, c, alpha, beta, precision, out_dtype, kernel, bias)

    castable = {torch.float32, torch.float16, torch.bfloat16}

    def torch_like(a, b, c, alpha, beta, precision, out_dtype, bias=None):
        """product() by gemm()'s pick, under autocast's rule for torch.mm where it is on for
        a's device and no precision is named: float32 and 16-bit operands (c and bias too)
        cast to the autocast type (8-bit floats are a precision of their own: never cast)."""
        where = (None if precision is not None else "cuda" if a.is_cuda
                 else "cpu" if a.is_cpu else None)
        if where and torch.is_autocast_enabled(where):
            to = torch.get_autocast_dtype(where)
            a, b, c, bias = (cast(x, to) if x is not None and x.dtype in castable else x
                             for x in (a, b, c, bias))
        return product(a, b, c, alpha, beta, precision, out_dtype, registry.AUTO, bias)

    def cast(x, to):
        # a broadcast view (a bias expanded to (m, n)) stays one: its stride-0 modes are cast
        # once and expanded again, where .to() would write all of (m, n)
        if 0 not in x.stride():
            return x.to(to)
        one = tuple(slice(None) if st else slice(0, 1) for st in x.stride())
        return x[one].to(to).expand(x.shape)

    class Linear(torch.nn.Linear):
        """torch.nn.Linear (same arguments, parameters and state dict) whose forward is
        cute_gemm.torch.linear in `precision` (None: the one the input's type implies)."""

        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                     precision=None):
            super().__init__(in_features, out_features, bias, device, dtype)
            self.precision = precision

        def forward(self, input):
            return linear(input, self.weight, self.bias, precision=self.precision)

        def extra_repr(self):
            return f"{super().extra_repr()}, precision={self.precision!r}"

    # pickled by name: found again through the module's __getattr__
    Linear.__module__, Linear.__qualname__ = __name__, "Linear"
    return {"gemm_op": gemm_op, "product": product, "torch_like": torch_like,
            "Linear": Linear}


def _scalar(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise InputError(f"{name} must be a real number, got {type(v).__name__}")
    return float(v)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, precision=None, out_dtype=None):
    """alpha * a @ b + beta * c by cute_gemm.gemm()'s pick, differentiable and traceable;
    the result in out_dtype, else a's type (c converted to it)."""
    return _THIS.torch_like(a, b, c, _scalar("alpha", alpha), _scalar("beta", beta), precision,
                            out_dtype)


def mm(a, b, *, precision=None, out_dtype=None):
    """a @ b (torch.mm), the result in out_dtype, else a's type."""
    return _THIS.torch_like(a, b, None, 1.0, 0.0, precision, out_dtype)


def matmul(a, b, *, precision=None, out_dtype=None):
    """a @ b by torch.matmul's rules: leading dimensions broadcast; a 1-D operand gains a
    dimension of 1 (before a's, after b's) that the result drops."""
    if a.dim() == 0 or b.dim() == 0:
        raise ShapeError(f"matmul's operands need one dimension or more, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    va, vb = a.dim() == 1, b.dim() == 1
    y = _THIS.torch_like(a[None] if va else a, b[:, None] if vb else b, None, 1.0, 0.0,
                         precision, out_dtype)
    return y.reshape(y.shape[:-2] + y.shape[-2:-1] * (not va) + y.shape[-1:] * (not vb))


def bmm(a, b, *, precision=None, out_dtype=None):
    """a[i] @ b[i] for (B, M, K) and (B, K, N) operands (torch.bmm: no broadcasting)."""
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm takes (B, M, K) and (B, K, N) operands of one B, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    return _THIS.torch_like(a, b, None, 1.0, 0.0, precision, out_dtype)


def addmm(c, a, b, *, beta=1.0, alpha=1.0, precision=None, out_dtype=None):
    """beta * c + alpha * a @ b (torch.addmm). A c of one row (a bias: (n,) or (1, n)) is
    added in the kernel's epilogue (beta * c first where beta != 1); any other c, or beta = 0
    (c ignored, NaN too, as torch does), is broadcast to (m, n) as a view."""
    if (a.dim() == 2 and b.dim() == 2 and c.dim() <= 2 and c.shape[-1:] == b.shape[1:]
            and c.numel() == b.shape[1] and _scalar("beta", beta) != 0):
        bias = c.reshape(-1) if beta == 1 else beta * c.reshape(-1)
        return _THIS.torch_like(a, b, None, _scalar("alpha", alpha), 0.0, precision, out_dtype,
                                bias)
    if a.dim() == 2 and b.dim() == 2 and c.dim() <= 2:
        c = c.expand(a.shape[0], b.shape[1])
    return gemm(a, b, c, alpha=alpha, beta=beta, precision=precision, out_dtype=out_dtype)


def linear(x, weight, bias=None, *, precision=None):
    """x @ weight^T + bias (torch.nn.functional.linear) in x's type; x's leading dimensions
    are flattened into m and restored, bias is added in the kernel's epilogue."""
    x2, n = x.reshape(-1, x.shape[-1]), weight.shape[0]
    y = _THIS.torch_like(x2, weight.mT, None, 1.0, 0.0, precision, None, bias)
    return y.reshape(*x.shape[:-1], n)


def __getattr__(name: str):
    # gemm_op (op()), product, torch_like and Linear need torch: made once, at the first ask
    if name not in ("gemm_op", "product", "torch_like", "Linear"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _LOCK:
        if name not in globals():
            globals().update(_define())
    return globals()[name]


def route(name, a, b, c, alpha, beta, precision):
    """run(name, a, b, c, ...) when autograd must see the product (a torch operand requires
    grad in grad mode): the op's result with a grad_fn, in run()'s result type (c's, else
    float32). Other libraries' operands are read by torch.as_tensor (no device copy)."""
    import torch

    def tensor(role, x):
        if x is None or isinstance(x, torch.Tensor):
            return x
        try:
            return torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as e:
            raise InputError(f"{role} is a {type(x).__name__} that torch cannot read ({e}); "
                             "a product autograd follows needs operands torch can read") from None

    a, b, c = tensor("a", a), tensor("b", b), tensor("c", c)
    out_dtype = torch.float32 if c is None else c.dtype
    return _THIS.product(a, b, c, _scalar("alpha", alpha), _scalar("beta", beta), precision,
                         out_dtype, getattr(name, "name", name))


api.set_autograd(route)     # run() hands a call autograd records to route (no torch import)

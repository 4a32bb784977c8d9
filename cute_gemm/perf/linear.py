"""`cute-gemm bench --size linear[:N]`: a linear layer with bias and GELU (tanh),
y = gelu(x @ W^T + b), as gemm() runs it fused (epilogue=) next to PyTorch's two ways in the
same run: eager (F.linear, then F.gelu: two kernels, the result written and read again) and
fused (torch._addmm_activation: cuBLASLt's GELU epilogue). N token counts M are drawn
log-uniform in [8, 16384] from the seed, each run through both of a transformer MLP's layers
(4096 -> 11008 and 11008 -> 4096). Every result is checked against float64 before it is
timed; each side is timed as one call on a flushed L2 and as 20 calls back to back."""
from __future__ import annotations

import math
import random
from functools import partial

from .. import api
from ..driver.epilogue import SLOPE, Epilogue
from . import peers
from .batched import PRECISIONS
from .shapes import count_of

DEFAULT_COUNT = 8
TOKENS = (8, 16384)
LAYERS = ((4096, 11008), (11008, 4096))      # (in, out) features

linear_count = partial(count_of, name="linear", default=DEFAULT_COUNT)   # "linear[:N]" -> N


def draw(count: int, seed: int) -> list[int]:
    """`count` token counts from `seed`, log-uniform in TOKENS, in increasing order."""
    rnd = random.Random(seed)
    return sorted(int(peers.log_uniform(rnd, *TOKENS)) for _ in range(count))


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("bf16",), *,
        repeats: int = 10, out_dir: str | None = None, log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/linear.json)."""
    s = peers.Session("cute-gemm bench --size linear", count, seed,
                      {"_vs_eager": ("eager", "ours"), "_vs_fused": ("fused", "ours")}, repeats, log)
    torch = s.torch
    s.start(f"a linear layer with bias and GELU(tanh) at {count} token counts",
            f"gemm(epilogue=) / torch {torch.__version__} eager and fused (_addmm_activation)")
    tokens = draw(count, s.seed)
    with s:
        for prec in precisions:
            dt = getattr(torch, PRECISIONS[prec])
            s.tf32(prec)
            for k_in, n_out in LAYERS:
                w = (s.randn(n_out, k_in) / math.sqrt(k_in)).to(dt)
                b = s.randn(n_out, dtype=dt)
                layer = (w, b, Epilogue(bias=b, activation="gelu_tanh", out_dtype=PRECISIONS[prec]),
                         w.double(), b.double())
                for m in tokens:
                    with s.case({"precision": prec, "tokens": m, "in": k_in, "out": n_out}) as row:
                        _measure(s, row, s.randn(m, k_in, dtype=dt), layer, prec)
    return s.finish(precisions, lambda x: f"one call {x['call_vs_eager']['geomean']:.3f}x eager, "
                    f"{x['call_vs_fused']['geomean']:.3f}x fused (geomean; min {x['call_vs_eager']['min']:.2f}, "
                    f"{x['call_vs_fused']['min']:.2f}); {x['failed']} failed", __doc__, out_dir, "linear.json")


def _measure(s: peers.Session, row: dict, x, layer, prec: str) -> None:
    """Check, then time, gemm(x, w.T, epilogue=ep) and PyTorch's two ways on tokens x; layer:
    (w, b, ep, w and b in float64)."""
    F, (w, b, ep, w64, b64) = s.torch.nn.functional, layer
    x64 = x.double()
    # the error of gelu_tanh(x @ w^T + b) in units of SLOPE (|x| @ |w^T| + |b|) + 4 |ref|
    ref = F.gelu(x64 @ w64.T + b64, approximate="tanh")
    gauge = SLOPE * (x64.abs() @ w64.abs().T + b64.abs()) + 4 * ref.abs()
    ratio = s.worst(api.gemm(x, w.T, precision=prec, epilogue=ep), ref, gauge, prec, PRECISIONS[prec])
    del x64, ref, gauge       # (not held while timing)
    # what gemm() runs it on (W^T: a transposed view, "nt"), so that a row explains itself
    row["pick"] = api.gemm_choice(x.shape[0], w.shape[0], w.shape[1], layout="nt", precision=prec,
                                  out_dtype=PRECISIONS[prec], epilogue=True).key
    s.add(row, ratio, {
        "ours": lambda _: api.gemm(x, w.T, precision=prec, epilogue=ep),
        "eager": lambda _: F.gelu(F.linear(x, w, b), approximate="tanh"),
        "fused": lambda _: s.torch._addmm_activation(b, x, w.T, use_gelu=True)})
    s.said(row, f"{prec:5s} M={x.shape[0]:6d} {w.shape[1]:5d}->{w.shape[0]:5d}", lambda r: (
        f"vs eager {r['call_vs_eager']:5.2f}x (burst {r['burst_vs_eager']:5.2f}x)"
        f"  vs fused {r['call_vs_fused']:5.2f}x (burst {r['burst_vs_fused']:5.2f}x)  {r['pick']}"))


main = partial(peers.main, run)        # the command: 0 unless a result failed its check

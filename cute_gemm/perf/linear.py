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
from ..check import THRESHOLD, unit
from ..driver.epilogue import SLOPE, Epilogue
from .batched import PRECISIONS, fresh_seed, main as batched_main, peer_session, summarize
from .schema import peer_record
from .shapes import count_of
from .timing import burst_times, call_times

DEFAULT_COUNT = 8
TOKENS = (8, 16384)
LAYERS = ((4096, 11008), (11008, 4096))      # (in, out) features

linear_count = partial(count_of, name="linear", default=DEFAULT_COUNT)   # "linear[:N]" -> N


def draw(count: int, seed: int) -> list[int]:
    """`count` token counts from `seed`, log-uniform in TOKENS, in increasing order."""
    rnd = random.Random(seed)
    lo, hi = (math.log(x) for x in TOKENS)
    return sorted(int(math.exp(lo + (hi - lo) * rnd.random())) for _ in range(count))


def _gauge_ratio(torch, y, x, w, b, precision: str, out_dtype: str) -> float:
    """The largest error of y against float64 gelu_tanh(x @ w^T + b), in units of
    SLOPE * (|x| @ |w^T| + |b|) + 4 |ref| times the precision's unit roundoff."""
    x64, w64, b64 = x.double(), w.double(), b.double()
    t = x64 @ w64.T + b64
    ref = torch.nn.functional.gelu(t, approximate="tanh")
    gauge = SLOPE * (x64.abs() @ w64.abs().T + b64.abs()) + 4 * ref.abs()
    err = (y.double() - ref).abs()
    r = torch.where(gauge > 0, err / (unit(precision, out_dtype) * gauge), err * math.inf)
    return float(r.nan_to_num(nan=math.inf).max())


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("bf16",), *,
        repeats: int = 10, out_dir: str | None = None, log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/linear.json)."""
    import torch         # the peers (an optional dependency of the package)
    F = torch.nn.functional
    seed = fresh_seed(seed)
    tokens = draw(count, seed)
    log(f"cute-gemm bench: a linear layer with bias and GELU(tanh) at {count} token counts, "
        f"seed {seed} (--seed {seed} draws them again); gemm(epilogue=) / torch "
        f"{torch.__version__} eager and fused (_addmm_activation), same run")
    rows, gen = [], torch.Generator(device="cuda").manual_seed(seed)
    with peer_session() as (info, flush, window):
        for prec in precisions:
            dt = getattr(torch, PRECISIONS[prec][0])
            torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
            for k_in, n_out in LAYERS:
                w = (torch.randn((n_out, k_in), generator=gen, device="cuda") / math.sqrt(k_in)).to(dt)
                b = torch.randn(n_out, generator=gen, device="cuda").to(dt)
                ep = Epilogue(bias=b, activation="gelu_tanh", out_dtype=PRECISIONS[prec][1])
                for m in tokens:
                    x = torch.randn((m, k_in), generator=gen, device="cuda").to(dt)
                    ours = api.gemm(x, w.T, precision=prec, epilogue=ep)
                    ratio = _gauge_ratio(torch, ours, x, w, b, prec, PRECISIONS[prec][1])
                    row = {"precision": prec, "tokens": m, "in": k_in, "out": n_out,
                           "gauge_ratio": ratio, "ok": ratio <= THRESHOLD}
                    if row["ok"]:
                        sides = {"ours": lambda _: api.gemm(x, w.T, precision=prec, epilogue=ep),
                                 "eager": lambda _: F.gelu(F.linear(x, w, b), approximate="tanh"),
                                 "fused": lambda _: torch._addmm_activation(b, x, w.T, use_gelu=True)}
                        for name, fn in sides.items():
                            fn(0)
                            row[f"{name}_call_ms"] = sorted(call_times(fn, 1, flush, repeats=repeats))[repeats // 2]
                            row[f"{name}_burst_ms"] = sorted(burst_times(fn, 1, flush, repeats=3))[1]
                        for peer in ("eager", "fused"):
                            for t in ("call", "burst"):
                                row[f"{t}_vs_{peer}"] = row[f"{peer}_{t}_ms"] / row[f"ours_{t}_ms"]
                    rows.append(row)
                    log(f"  {prec:5s} M={m:6d} {k_in:5d}->{n_out:5d} "
                        + (f"vs eager {row['call_vs_eager']:5.2f}x (burst {row['burst_vs_eager']:5.2f}x)"
                           f"  vs fused {row['call_vs_fused']:5.2f}x (burst {row['burst_vs_fused']:5.2f}x)"
                           if row["ok"] else f"FAIL gauge ratio {ratio:.3g}"))
                    del x, ours
            torch.backends.cuda.matmul.allow_tf32 = False
        clocks = window()
    summary = summarize(rows, precisions, ("call_vs_eager", "burst_vs_eager", "call_vs_fused",
                                           "burst_vs_fused"))
    for prec, s in summary.items():
        log(f"{prec}: one call {s['call_vs_eager']['geomean']:.3f}x eager, "
            f"{s['call_vs_fused']['geomean']:.3f}x fused (geomean; min "
            f"{s['call_vs_eager']['min']:.2f}, {s['call_vs_fused']['min']:.2f}); {s['failed']} failed")
    return peer_record("cute-gemm bench --size linear", seed, count, info, torch, clocks, __doc__,
                       rows, summary, out_dir, "linear.json")


main = partial(batched_main, run=run)        # the command: 0 unless a result failed its check

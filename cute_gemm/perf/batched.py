"""`cute-gemm bench --size batched[:N]`: gemm() on N random batched products next to
torch.matmul, the peer with the same broadcasting, in the same run. Each problem draws a
batch B in [2, 1024] and M, N, K in [16, 4096] (log-uniform, 2·B·M·N·K at most 2^36) and one
pattern: both operands batched, A broadcast, B shared by the batch (gemm() folds it into one
problem), or A's batch strided (an (M, B, K) array seen as (B, M, K)). Every result is
checked against float64 (the gauge, the precision's unit roundoff) before it is timed; each
side is timed as one call on a flushed L2 (what a caller waits for, host time included) and
as 20 calls back to back. The seed is drawn at run time unless given, and printed."""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from functools import partial

from .. import api
from . import peers
from .peers import log_uniform
from .shapes import count_of

DEFAULT_COUNT = 24
BATCH, DIM, FLOP_MAX, BYTES_MAX = (2, 1024), (16, 4096), 2.0 ** 36, 2 << 30
PATTERNS = ("both", "a_broadcast", "b_shared", "a_strided")
# precision -> the torch dtype of the operands and the result
PRECISIONS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "tf32": "float32"}


@dataclass(frozen=True)
class Problem:
    batch: int
    m: int
    n: int
    k: int
    pattern: str

    @property
    def flop(self) -> float:
        return 2.0 * self.batch * self.m * self.n * self.k


batched_count = partial(count_of, name="batched", default=DEFAULT_COUNT)   # "batched[:N]" -> N


def draw(count: int, seed: int) -> list[Problem]:
    """`count` problems from `seed` (random.Random: the same draw on every machine)."""
    rnd, out = random.Random(seed), []
    while len(out) < count:
        p = Problem(int(log_uniform(rnd, *BATCH)), *(int(log_uniform(rnd, *DIM)) for _ in range(3)),
                    PATTERNS[int(len(PATTERNS) * rnd.random())])
        if p.flop <= FLOP_MAX and 4 * p.batch * (p.m * p.k + p.k * p.n + p.m * p.n) <= BYTES_MAX:
            out.append(p)
    return out


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("fp32", "bf16"), *,
        kernel: str | None = None, repeats: int = 10, out_dir: str | None = None,
        log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/batched.json). kernel:
    time run() of that kernel instead of gemm() (a batched one, in the precisions it computes)."""
    s = peers.Session("cute-gemm bench --size batched" + (f" {kernel}" if kernel else ""), count,
                      seed, {"": ("torch", "ours")}, repeats, log)
    ours_fn = api.gemm if kernel is None else partial(api.run, kernel)
    s.start(f"{count} random batched problems",
            f"{kernel or 'gemm()'} / torch.matmul {s.torch.__version__}")
    with s:
        for p in draw(count, s.seed):
            for prec in precisions:
                with s.case({**asdict(p), "precision": prec}) as row:
                    _measure(s, row, p, prec, ours_fn)
    return s.finish(precisions, lambda x: f"call {x['call']['geomean']:.3f}x geomean (min "
                    f"{x['call']['min']:.2f}), burst {x['burst']['geomean']:.3f}x (min "
                    f"{x['burst']['min']:.2f}); {x['failed']} failed", __doc__, out_dir, "batched.json")


def _measure(s: peers.Session, row: dict, p: Problem, prec: str, ours_fn) -> None:
    """Check, then time, ours_fn and torch.matmul on p's operands (freed on return)."""
    torch = s.torch
    dt = getattr(torch, PRECISIONS[prec])
    a = s.randn(*{"a_broadcast": (1, p.m, p.k), "a_strided": (p.m, p.batch, p.k)}.get(
        p.pattern, (p.batch, p.m, p.k)), dtype=dt)
    a = a.transpose(0, 1) if p.pattern == "a_strided" else a
    b = s.randn(*((p.k, p.n) if p.pattern == "b_shared" else (p.batch, p.k, p.n)), dtype=dt)
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (p.m, p.n)
    ours, theirs = (torch.empty(shape, dtype=dt, device="cuda") for _ in range(2))
    s.tf32(prec)
    ours_fn(a, b, out=ours, precision=prec)
    ratio = s.worst(ours, a.double() @ b.double(), a.double().abs() @ b.double().abs(), prec, PRECISIONS[prec])
    s.add(row, ratio, {"ours": lambda _: ours_fn(a, b, out=ours, precision=prec),
                       "torch": lambda _: torch.matmul(a, b, out=theirs)})
    s.said(row, f"{prec:5s} B={p.batch:5d} M={p.m:5d} N={p.n:5d} K={p.k:5d} {p.pattern:11s}",
           lambda r: f"call {r['call']:5.2f}x  burst {r['burst']:5.2f}x")


main = partial(peers.main, run)        # the command: 0 unless a result failed its check

"""`cute-gemm bench --size fp8[:N]`: 8-bit float GEMMs (e4m3 operands, scales, bf16 result)
as gemm() runs them next to torch._scaled_mm (cuBLASLt) in the same run: the squares 4096^3
and 8192^3 and N random large shapes (each dimension log-uniform, a multiple of 16 as
cuBLASLt needs, 2^33-2^37 flop), B k-major (a linear layer's weight); per-tensor scales on
both sides, and gemm() with 1 x 128 / 128 x 128 block scales against its own per-tensor
time. Every result is checked against float64 before it is timed; each side is timed as
one call on a flushed L2 and as 20 calls back to back. Then the accuracy at K = 256 ..
65,536: each side's relative error (Frobenius) against the float64 product of the
dequantized operands, float32 results."""
from __future__ import annotations

import math
import random
from functools import partial

from .. import api
from ..check import THRESHOLD, gauge_ratio, unit
from .batched import fresh_seed, main as batched_main, peer_session, summarize
from .schema import peer_record
from .shapes import count_of
from .timing import burst_times, call_times

DEFAULT_COUNT = 8
FLOPS = (2.0 ** 33, 2.0 ** 37)
SQUARES = ((4096, 4096, 4096), (8192, 8192, 8192))
ACCURACY_K = tuple(2 ** e for e in range(8, 17))       # 256 .. 65536

fp8_count = partial(count_of, name="fp8", default=DEFAULT_COUNT)    # "fp8[:N]" -> N


def draw(count: int, seed: int) -> list[tuple[int, int, int]]:
    """`count` shapes from `seed`: dimensions log-uniform in [256, 16384], multiples of 16,
    redrawn until 2 M N K lies in FLOPS."""
    rnd, shapes = random.Random(seed), []
    while len(shapes) < count:
        m, n, k = (16 * max(1, round(math.exp(rnd.uniform(math.log(256), math.log(16384))) / 16))
                   for _ in range(3))
        if FLOPS[0] <= 2.0 * m * n * k <= FLOPS[1]:
            shapes.append((m, n, k))
    return shapes


def _operands(torch, gen, m, n, k):
    """e4m3 A (M, K) and W (N, K), values spread over the type's exponents."""
    e4m3 = torch.float8_e4m3fn
    a = torch.randn((m, k), generator=gen, device="cuda").to(e4m3)
    w = torch.randn((n, k), generator=gen, device="cuda").to(e4m3)
    return a, w


def _checked(torch, got, a, w, sa=None, sb=None) -> float:
    """got's largest gauge ratio against float64 (scales as gemm() applies them)."""
    a64, w64 = a.double(), w.double()
    if sa is not None:
        a64 = a64 * sa.double().repeat_interleave(128, 1)[:, :a.shape[1]]
        w64 = w64 * sb.double().T.repeat_interleave(128, 0).repeat_interleave(128, 1)[:w.shape[0], :w.shape[1]]
    ref, gauge = a64 @ w64.T, a64.abs() @ w64.abs().T
    return float(gauge_ratio(got.double().cpu().numpy(), ref.cpu().numpy(), gauge.cpu().numpy(),
                             unit("fp8_e4m3", "bfloat16")).max())


def _accuracy(torch, scaled_mm, gen, log) -> list[dict]:
    """Relative error of gemm() and torch._scaled_mm against float64, float32 results."""
    rows, one = [], torch.ones((), device="cuda")
    for k in ACCURACY_K:
        a, w = _operands(torch, gen, 256, 256, k)
        ref = a.double() @ w.double().T
        err = {}
        for side, fn in (("ours", lambda: api.gemm(a, w.T)),
                         ("scaled_mm", lambda: scaled_mm(a, w.T, one, one, out_dtype=torch.float32))):
            d = fn().double() - ref
            err[side] = float(d.norm() / ref.norm())
        rows.append({"k": k, "ours_rel_err": err["ours"], "scaled_mm_rel_err": err["scaled_mm"]})
        log(f"  K={k:6d} relative error: ours {err['ours']:.3e}, torch._scaled_mm "
            f"{err['scaled_mm']:.3e} ({err['ours'] / err['scaled_mm']:.2f}x)")
    return rows


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("fp8_e4m3",), *,
        repeats: int = 10, out_dir: str | None = None, log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/fp8.json)."""
    precisions = ("fp8_e4m3",)       # (e4m3 x e4m3, whatever the command's default)
    import torch         # the peer (an optional dependency of the package)
    scaled_mm = torch._scaled_mm     # (cuBLASLt's scaled 8-bit GEMM: no public name)
    seed = fresh_seed(seed)
    shapes = list(SQUARES) + draw(count, seed)
    log(f"cute-gemm bench: e4m3 x e4m3 -> bf16 on the squares and {count} random shapes, seed "
        f"{seed} (--seed {seed} draws them again); gemm() / torch {torch.__version__} "
        "_scaled_mm, same run")
    rows, gen = [], torch.Generator(device="cuda").manual_seed(seed)
    one, bf16 = torch.ones((), device="cuda"), torch.bfloat16
    with peer_session() as (info, flush, window):
        for m, n, k in shapes:
            a, w = _operands(torch, gen, m, n, k)
            sa = torch.rand((m, -(-k // 128)), generator=gen, device="cuda") + 0.5
            sb = torch.rand((-(-k // 128), -(-n // 128)), generator=gen, device="cuda") + 0.5
            out = torch.empty((m, n), device="cuda", dtype=bf16)
            ratio = max(_checked(torch, api.gemm(a, w.T, out=out, scale_a=one, scale_b=one), a, w),
                        _checked(torch, api.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb), a, w, sa, sb))
            row = {"precision": "fp8_e4m3", "m": m, "n": n, "k": k, "gauge_ratio": ratio,
                   "ok": ratio <= THRESHOLD}
            if row["ok"]:
                sides = {"ours": lambda _: api.gemm(a, w.T, out=out, scale_a=one, scale_b=one),
                         "blocks": lambda _: api.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb),
                         "scaled_mm": lambda _: scaled_mm(a, w.T, one, one, out_dtype=bf16)}
                for name, fn in sides.items():
                    fn(0)
                    row[f"{name}_call_ms"] = sorted(call_times(fn, 1, flush, repeats=repeats))[repeats // 2]
                    row[f"{name}_burst_ms"] = sorted(burst_times(fn, 1, flush, repeats=3))[1]
                for t in ("call", "burst"):
                    row[f"{t}_vs_scaled_mm"] = row[f"scaled_mm_{t}_ms"] / row[f"ours_{t}_ms"]
                    row[f"{t}_blocks_vs_tensor"] = row[f"ours_{t}_ms"] / row[f"blocks_{t}_ms"]
                row["tflops"] = 2e-9 * m * n * k / row["ours_burst_ms"]
            rows.append(row)
            log(f"  {m:5d}x{n:5d}x{k:5d} " + (
                f"{row['tflops']:6.0f} TFLOP/s, vs _scaled_mm {row['call_vs_scaled_mm']:5.2f}x "
                f"(burst {row['burst_vs_scaled_mm']:5.2f}x), blocks {row['burst_blocks_vs_tensor']:5.2f}x "
                f"the per-tensor speed" if row["ok"] else f"FAIL gauge ratio {ratio:.3g}"))

        accuracy = _accuracy(torch, scaled_mm, gen, log)
        clocks = window()
    summary = summarize(rows, precisions, ("call_vs_scaled_mm", "burst_vs_scaled_mm",
                                           "call_blocks_vs_tensor", "burst_blocks_vs_tensor"))
    s = summary["fp8_e4m3"]
    s["accuracy"] = accuracy
    log(f"fp8_e4m3: one call {s['call_vs_scaled_mm']['geomean']:.3f}x torch._scaled_mm, burst "
        f"{s['burst_vs_scaled_mm']['geomean']:.3f}x (geomean; min {s['call_vs_scaled_mm']['min']:.2f}); "
        f"block scales {s['burst_blocks_vs_tensor']['geomean']:.3f}x the per-tensor speed; "
        f"{s['failed']} failed")
    return peer_record("cute-gemm bench --size fp8", seed, count, info, torch, clocks, __doc__,
                       rows, summary, out_dir, "fp8.json")


main = partial(batched_main, run=run)        # the command: 0 unless a result failed its check

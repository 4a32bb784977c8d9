"""`cute-gemm bench --size fp8[:N]`: 8-bit float GEMMs (e4m3 operands, scales, bf16 result)
as gemm() runs them next to torch._scaled_mm (cuBLASLt) in the same run: the squares 4096^3
and 8192^3 and N random large shapes (each dimension log-uniform, a multiple of 16 as
cuBLASLt needs, 2^33-2^37 flop), B k-major (a linear layer's weight); per-tensor scales on
both sides, and gemm() with 1 x 128 / 128 x 128 block scales against its own per-tensor
time. Every result is checked against float64 before it is timed; each side is timed as
one call on a flushed L2 and as 20 calls back to back. Then the accuracy at K = 256 ..
65,536: each side's relative error (Frobenius) against the float64 product of the
dequantized operands, float32 results, and _scaled_mm's with fast accumulation (the tensor
cores' own sum over all of K, no promotion: what promotion buys), plotted where matplotlib
is installed (fp8_accuracy.png beside fp8.json)."""
from __future__ import annotations

import random
from functools import partial
from pathlib import Path

from .. import api
from . import peers, plots
from .shapes import count_of

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
        m, n, k = (16 * max(1, round(peers.log_uniform(rnd, 256, 16384) / 16))
                   for _ in range(3))
        if FLOPS[0] <= 2.0 * m * n * k <= FLOPS[1]:
            shapes.append((m, n, k))
    return shapes


def _checked(s: peers.Session, got, a, w, sa=None, sb=None) -> float:
    """got's largest gauge ratio against float64 (scales as gemm() applies them)."""
    a64, w64 = a.double(), w.double()
    if sa is not None:
        a64 = a64 * sa.double().repeat_interleave(128, 1)[:, :a.shape[1]]
        w64 = w64 * sb.double().T.repeat_interleave(128, 0).repeat_interleave(128, 1)[:w.shape[0], :w.shape[1]]
    return s.worst(got, a64 @ w64.T, a64.abs() @ w64.abs().T, "fp8_e4m3", "bfloat16")


def _accuracy(s: peers.Session, scaled_mm) -> list[dict]:
    """Relative error of gemm(), torch._scaled_mm and _scaled_mm with fast accumulation
    against float64, float32 results."""
    rows, one, e4m3 = [], s.torch.ones((), device="cuda"), s.torch.float8_e4m3fn
    for k in ACCURACY_K:
        a, w = s.randn(256, k, dtype=e4m3), s.randn(256, k, dtype=e4m3)
        ref = a.double() @ w.double().T
        ours, peer, fast = (float((x.double() - ref).norm() / ref.norm()) for x in (
            api.gemm(a, w.T), scaled_mm(a, w.T, one, one, out_dtype=s.torch.float32),
            scaled_mm(a, w.T, one, one, out_dtype=s.torch.float32, use_fast_accum=True)))
        rows.append({"k": k, "ours_rel_err": ours, "scaled_mm_rel_err": peer,
                     "fast_accum_rel_err": fast})
        s.log(f"  K={k:6d} relative error: ours {ours:.3e}, torch._scaled_mm {peer:.3e} "
              f"({ours / peer:.2f}x), with fast accumulation {fast:.3e}")
    return rows


def run(count: int = DEFAULT_COUNT, seed: int | None = None, precisions=("fp8_e4m3",), *,
        repeats: int = 10, out_dir: str | None = None, log=print) -> dict:
    """Draw, check and time; the result as a dict (written to out_dir/fp8.json). e4m3 x e4m3
    whatever `precisions` says (the command's default)."""
    s = peers.Session("cute-gemm bench --size fp8", count, seed, {
        "_vs_scaled_mm": ("scaled_mm", "ours"), "_blocks_vs_tensor": ("ours", "blocks")}, repeats, log)
    torch = s.torch
    scaled_mm = torch._scaled_mm     # (cuBLASLt's scaled 8-bit GEMM: no public name)
    s.start(f"e4m3 x e4m3 -> bf16 on the squares and {count} random shapes",
            f"gemm() / torch {torch.__version__} _scaled_mm")
    one, bf16, e4m3 = torch.ones((), device="cuda"), torch.bfloat16, torch.float8_e4m3fn
    accuracy = []       # (none where the run is interrupted before it)
    with s:
        for m, n, k in list(SQUARES) + draw(count, s.seed):
            with s.case({"precision": "fp8_e4m3", "m": m, "n": n, "k": k}) as row:
                a, w = s.randn(m, k, dtype=e4m3), s.randn(n, k, dtype=e4m3)
                sa = torch.rand((m, -(-k // 128)), generator=s.gen, device="cuda") + 0.5
                sb = torch.rand((-(-k // 128), -(-n // 128)), generator=s.gen, device="cuda") + 0.5
                out = torch.empty((m, n), device="cuda", dtype=bf16)
                ratio = max(_checked(s, api.gemm(a, w.T, out=out, scale_a=one, scale_b=one), a, w),
                            _checked(s, api.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb), a, w, sa, sb))
                s.add(row, ratio, {
                    "ours": lambda _: api.gemm(a, w.T, out=out, scale_a=one, scale_b=one),
                    "blocks": lambda _: api.gemm(a, w.T, out=out, scale_a=sa, scale_b=sb),
                    "scaled_mm": lambda _: scaled_mm(a, w.T, one, one, out_dtype=bf16)})
                if row["ok"]:
                    row["tflops"] = 2e-9 * m * n * k / row["ours_burst_ms"]
                s.said(row, f"{m:5d}x{n:5d}x{k:5d}", lambda r: (
                    f"{r['tflops']:6.0f} TFLOP/s, vs _scaled_mm {r['call_vs_scaled_mm']:5.2f}x "
                    f"(burst {r['burst_vs_scaled_mm']:5.2f}x), blocks {r['burst_blocks_vs_tensor']:5.2f}x "
                    "the per-tensor speed"))
        accuracy = _accuracy(s, scaled_mm)
    res = s.finish(("fp8_e4m3",), lambda x: (
        f"one call {x['call_vs_scaled_mm']['geomean']:.3f}x torch._scaled_mm, burst "
        f"{x['burst_vs_scaled_mm']['geomean']:.3f}x (geomean; min {x['call_vs_scaled_mm']['min']:.2f}); "
        f"block scales {x['burst_blocks_vs_tensor']['geomean']:.3f}x the per-tensor speed; "
        f"{x['failed']} failed"), __doc__, out_dir, "fp8.json", accuracy=accuracy)
    if out_dir and plots.available():
        log(f"wrote {plots.fp8_accuracy_chart(res, Path(out_dir) / plots.FP8_ACCURACY_PNG)}")
    return res


main = partial(peers.main, run)        # the command: 0 unless a result failed its check

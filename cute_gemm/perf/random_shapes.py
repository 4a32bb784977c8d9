"""Random shapes (`--size random[:N]`): N problems drawn from a seed, each with its operand
layout, so that gemm() is compared with cuBLAS on shapes nobody picked. Pure CPU, no imports
from the rest of the package but schema's layout names.

The draw, per shape (reproducible for a seed on any Python: it uses only random.Random(seed)'s
random(), whose sequence Python keeps across versions):
1. t, the log2 of the flop count 2·M·N·K, uniform in the flop band clipped to what the dimension
   bounds allow, so every decade of work is as likely and the ratio-vs-flops plot is evenly filled;
2. (log2 M, log2 N, log2 K) uniform on the part of the log-cube [DIM_MIN, DIM_MAX]^3 where they
   sum to t - 1: log2 M and log2 N from their bounding box, redrawn (t kept) until log2 K is in
   bounds too. The plane's section holds at least half of that box: two tries on average;
3. M, N rounded, K the integer nearest the target among those that keep 2·M·N·K in the band and
   K in bounds (none for a band narrower than the rounding: the shape is drawn again, a repeat of
   an earlier (shape, layout) too). MAX_TRIES bounds it all: a band too narrow is a clear error;
4. the layout, uniform among the layouts given.
"""
from __future__ import annotations

import math
import random
import secrets
from dataclasses import dataclass

from .schema import LAYOUTS

DEFAULT_COUNT = 40          # shapes of a bare `random`: a geometric mean over 40 moves ~2 % run to run
DEFAULT_FLOPS = (18.0, 36.0)    # 2^18: a 64^3 problem, all host time; 2^36: the sweep's largest
# 8: below, a GEMM is a GEMV or a batch of dot products, which gemm() is not tuned for;
# 12288: the widest model layer of the sweep (fused QKV, 3 x 4096)
DIM_MIN, DIM_MAX = 8, 12288
MAX_TRIES = 100_000         # draws in all before a band is declared too narrow


@dataclass(frozen=True)
class RandomShapes:
    """What to draw: how many shapes, the log2 flop band asked, the dimension bounds."""
    count: int = DEFAULT_COUNT
    flops: tuple[float, float] = DEFAULT_FLOPS
    dims: tuple[int, int] = (DIM_MIN, DIM_MAX)

    def band(self) -> tuple[float, float]:
        """The flop band clipped to what the dimension bounds reach (ValueError: none of it)."""
        return clip_band(self.flops, self.dims)


def random_count(spec) -> int | None:
    """The shape count of a size spec "random" or "random:N"; None for any other spec."""
    if not isinstance(spec, str) or spec.split(":")[0].strip().lower() != "random":
        return None
    head, sep, tail = spec.partition(":")
    if not sep:
        return DEFAULT_COUNT
    try:
        n = int(tail)
    except ValueError:
        raise ValueError(f"bad size {spec!r}: random:N takes a whole number of shapes, "
                         f"e.g. random:{DEFAULT_COUNT}") from None
    if n < 1:
        raise ValueError(f"bad size {spec!r}: random:N needs N >= 1")
    return n


def parse_flops(spec: str) -> tuple[float, float]:
    """"LO:HI" -> (LO, HI): log2 bounds of 2·M·N·K, LO < HI, some of it reachable."""
    lo_s, sep, hi_s = str(spec).partition(":")
    try:
        lo, hi = float(lo_s), float(hi_s)
    except ValueError:
        raise ValueError(f"--flops {spec!r}: give LO:HI, log2 bounds of 2·M·N·K, e.g. "
                         f"{DEFAULT_FLOPS[0]:g}:{DEFAULT_FLOPS[1]:g}") from None
    if not sep or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"--flops {spec!r}: give LO:HI, two finite log2 bounds")
    if not lo < hi:
        raise ValueError(f"--flops {spec}: LO must be below HI (e.g. {lo:g}:{lo + 1:g})")
    clip_band((lo, hi))
    return lo, hi


def reachable(dims: tuple[int, int] = (DIM_MIN, DIM_MAX)) -> tuple[float, float]:
    """The log2 of the least and the most 2·M·N·K with every dimension within `dims`."""
    return 1 + 3 * math.log2(dims[0]), 1 + 3 * math.log2(dims[1])


def clip_band(flops, dims: tuple[int, int] = (DIM_MIN, DIM_MAX)) -> tuple[float, float]:
    lo, hi = reachable(dims)
    a, b = max(flops[0], lo), min(flops[1], hi)
    if not a < b:
        raise ValueError(f"--flops {flops[0]:g}:{flops[1]:g} is out of reach: with every "
                         f"dimension in [{dims[0]}, {dims[1]}], 2·M·N·K lies in "
                         f"2^{lo:.2f}..2^{hi:.2f}")
    return a, b


def fresh_seed() -> int:
    """A seed nobody chose (printed with the results, so that the draw can be repeated)."""
    return secrets.randbelow(1 << 32)


def draw(spec: RandomShapes, seed: int, layouts=LAYOUTS) -> list[tuple[int, int, int, str]]:
    """spec.count distinct (M, N, K, layout), drawn as the module docstring says."""
    layouts = tuple(layouts)
    rnd = random.Random(seed)
    lo, hi = spec.band()
    a, b = (math.log2(d) for d in spec.dims)
    out: list[tuple[int, int, int, str]] = []
    seen = set()
    for _ in range(MAX_TRIES):
        if len(out) == spec.count:
            return out
        t = lo + (hi - lo) * rnd.random()
        s = t - 1                                   # log2(M N K)
        x0, x1 = max(a, s - 2 * b), min(b, s - 2 * a)
        for _ in range(64):     # t stays: redrawing it would favour the middle of the band
            x, y = x0 + (x1 - x0) * rnd.random(), x0 + (x1 - x0) * rnd.random()
            if a <= s - x - y <= b:
                break
        else:                   # (2^-64 at worst: the section holds half the box)
            continue
        m, n = (min(max(round(2 ** v), spec.dims[0]), spec.dims[1]) for v in (x, y))
        k = _nearest_k(m, n, t, (lo, hi), spec.dims)
        shape = (m, n, k, layouts[min(int(len(layouts) * rnd.random()), len(layouts) - 1)])
        if k is None or shape in seen:
            continue
        seen.add(shape)
        out.append(shape)
    if len(out) == spec.count:
        return out
    raise ValueError(f"found {len(out)} of {spec.count} distinct shapes with 2·M·N·K in "
                     f"2^{lo:g}..2^{hi:g} after {MAX_TRIES} draws: widen --flops")


def _nearest_k(m: int, n: int, t: float, band, dims) -> int | None:
    """The K nearest 2^t / (2 M N) with 2·M·N·K in the band and K within dims, or None."""
    k_lo = max(dims[0], math.ceil(2 ** band[0] / (2 * m * n)))
    k_hi = min(dims[1], math.floor(2 ** band[1] / (2 * m * n)))
    if k_lo > k_hi:
        return None
    return min(max(round(2 ** t / (2 * m * n)), k_lo), k_hi)


def describe(spec: RandomShapes, seed: int) -> str:
    """One line: how many shapes, from which seed and band (with the run's results)."""
    lo, hi = spec.band()
    clipped = "" if (lo, hi) == tuple(spec.flops) else f" (--flops {spec.flops[0]:g}:{spec.flops[1]:g} clipped)"
    return (f"{spec.count} random shapes, seed {seed} (--seed {seed} draws them again): 2·M·N·K "
            f"log-uniform in 2^{lo:.4g}..2^{hi:.4g}{clipped}, M, N, K in [{spec.dims[0]}, "
            f"{spec.dims[1]}]")

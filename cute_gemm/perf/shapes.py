"""What to measure: sizes (N, MxNxK, named sets, `random[:N]` shapes drawn from a seed) and
operand layouts, the plan of a run that joins them, and whether a kernel takes a layout
without run() copying an operand first. The random draw: docs/benchmarks.md (Random shapes)."""
from __future__ import annotations

import math
import random
import secrets
from dataclasses import dataclass

from .. import registry
from ..base.precisions import PRECISION
from ..driver.arrays import Operand
from ..plan import resolve as _resolve
from .schema import LAYOUTS, TIMINGS
from .sweep import GRID, HELD_OUT, SWEEP

DEFAULT_SQUARES = (256, 512, 1024, 2048, 4096, 8192)
# non-multiples of every tile, skinny/fat and short-K shapes
ODD_SHAPES = ((1000, 1000, 1000), (4095, 4097, 4093), (8192, 2048, 4096), (2048, 8192, 4096),
              (4096, 4096, 512), (257, 8191, 1025))
NAMED = {"sweep": [s for _, s in SWEEP], "grid": list(GRID), "held-out": [s for _, s in HELD_OUT],
         "squares": [(x, x, x) for x in DEFAULT_SQUARES], "odd": list(ODD_SHAPES)}
NAMED["all"] = NAMED["squares"] + NAMED["odd"]

DEFAULT_COUNT = 40              # shapes of a bare `random` (docs/benchmarks.md: ~2 % run to run)
DEFAULT_FLOPS = (18.0, 36.0)    # 2^18: a 64^3 problem, all host time; 2^36: the sweep's largest
# 8: below, a GEMM is a GEMV, which gemm() is not tuned for; 12288: the sweep's widest layer
DIM_MIN, DIM_MAX = 8, 12288
MAX_TRIES = 100_000             # draws in all before a band is declared too narrow


def parse_sizes(specs) -> list[tuple[int, int, int]]:
    """"4096" -> 4096^3, "MxNxK", a NAMED set ("all" by default); ints, 3-tuples pass through."""
    out: list[tuple[int, int, int]] = []
    for s in [specs] if isinstance(specs, (str, int)) else ["all"] if specs is None else specs:
        if isinstance(s, int):
            out.append((s, s, s))
        elif isinstance(s, (tuple, list)):
            if len(s) != 3:
                raise ValueError(f"a size is (M, N, K), got {s!r}")
            out.append(tuple(int(x) for x in s))
        elif s in NAMED:
            out += NAMED[s]
        else:
            try:
                dims = [int(p) for p in str(s).lower().replace("*", "x").split("x")]
            except ValueError:
                raise ValueError(f"bad size {s!r}: use N, MxNxK, squares, odd, sweep, grid, "
                                 "held-out or all") from None
            if len(dims) not in (1, 3):
                raise ValueError(f"bad size {s!r}: use N or MxNxK")
            out.append(tuple(dims * 3 if len(dims) == 1 else dims))
    if any(min(d) < 1 for d in out):
        raise ValueError(f"sizes must be >= 1, got {next(d for d in out if min(d) < 1)}")
    return list(dict.fromkeys(out))


def parse_layouts(spec) -> tuple[str, ...]:
    if spec is None:
        return ("nn",)
    items = [x.strip().lower() for x in (spec.split(",") if isinstance(spec, str) else spec)
             if x.strip()]
    if items == ["all"]:
        return LAYOUTS
    if not items:
        raise ValueError("no layout given: use nn, tn, nt, tt or all")
    for x in items:
        if x not in LAYOUTS:
            raise ValueError(f"layout {x!r}: use {', '.join(LAYOUTS)} or all")
    return tuple(dict.fromkeys(items))


def resolve(kernel: registry.Kernel, ops: dict[str, Operand], precision: str = "fp32",
            out_dtype: str = "float32", ordinal: int | None = None):
    """(variant, roles run() would copy first, function) for operands a, b, c; with no
    ordinal nothing is compiled or loaded (pure CPU) and the function is None."""
    swap = _resolve.swapped(kernel, ops["a"].shape[0], ops["b"].shape[1])
    variant, copies = _resolve.choose(kernel, _resolve.oriented(swap, ops), precision, out_dtype)
    fn = None if ordinal is None else _resolve.loaded(kernel, ordinal).function(variant.entry)
    return variant, copies, fn


def native_layout(kernel: registry.Kernel, m: int, n: int, k: int, layout: str,
                  precision: str = "fp32") -> bool:
    """True when run() hands fresh operands in `layout` to the kernel without a relayout copy."""
    od = PRECISION[precision].timed_out
    return not resolve(kernel, _resolve.contiguous(m, n, k, layout, precision, od), precision, od)[1]


# ---- random shapes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RandomShapes:
    """What to draw: how many shapes, the log2 flop band asked, the dimension bounds."""
    count: int = DEFAULT_COUNT
    flops: tuple[float, float] = DEFAULT_FLOPS
    dims: tuple[int, int] = (DIM_MIN, DIM_MAX)

    def band(self) -> tuple[float, float]:
        return clip_band(self.flops, self.dims)


def count_of(spec, name: str = "random", default: int = DEFAULT_COUNT) -> int | None:
    """The count N of a size spec "name" or "name:N" (`default` for a bare name); None for any other spec."""
    if not isinstance(spec, str) or spec.split(":")[0].strip().lower() != name:
        return None
    _, sep, tail = spec.partition(":")
    if not sep:
        return default
    if not tail.strip().isdigit() or int(tail) < 1:
        raise ValueError(f"bad size {spec!r}: {name}:N takes a whole number N >= 1, e.g. {name}:{default}")
    return int(tail)


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
    """log2 of the least and the most 2·M·N·K with every dimension within `dims`."""
    return 1 + 3 * math.log2(dims[0]), 1 + 3 * math.log2(dims[1])


def clip_band(flops, dims: tuple[int, int] = (DIM_MIN, DIM_MAX)) -> tuple[float, float]:
    lo, hi = reachable(dims)
    a, b = max(flops[0], lo), min(flops[1], hi)
    if not a < b:
        raise ValueError(f"--flops {flops[0]:g}:{flops[1]:g} is out of reach: with every "
                         f"dimension in [{dims[0]}, {dims[1]}], 2·M·N·K lies in "
                         f"2^{lo:.2f}..2^{hi:.2f}")
    return a, b


def draw(spec: RandomShapes, seed: int, layouts=LAYOUTS) -> list[tuple[int, int, int, str]]:
    """spec.count distinct (M, N, K, layout) from `seed` (random.Random: the same on any
    Python): log2 of 2·M·N·K uniform in the band, then (log2 M, log2 N) uniform where K stays
    in bounds, K the nearest integer in the band, the layout uniform among `layouts`."""
    layouts, rnd = tuple(layouts), random.Random(seed)
    lo, hi = spec.band()
    a, b = (math.log2(d) for d in spec.dims)
    out: dict[tuple[int, int, int, str], None] = {}     # distinct, in order
    for _ in range(MAX_TRIES):
        if len(out) == spec.count:
            return list(out)
        t = lo + (hi - lo) * rnd.random()
        s = t - 1                                   # log2(M N K)
        x0, x1 = max(a, s - 2 * b), min(b, s - 2 * a)
        for _ in range(64):     # t stays: redrawing it would favour the middle of the band
            x, y = x0 + (x1 - x0) * rnd.random(), x0 + (x1 - x0) * rnd.random()
            if a <= s - x - y <= b:
                break
        else:                   # (2^-64 at worst: the plane's section holds half the box)
            continue
        m, n = (min(max(round(2 ** v), spec.dims[0]), spec.dims[1]) for v in (x, y))
        k = _nearest_k(m, n, t, (lo, hi), spec.dims)
        shape = (m, n, k, layouts[min(int(len(layouts) * rnd.random()), len(layouts) - 1)])
        if k is not None:
            out[shape] = None
    if len(out) == spec.count:
        return list(out)
    raise ValueError(f"found {len(out)} of {spec.count} distinct shapes with 2·M·N·K in "
                     f"2^{lo:g}..2^{hi:g} after {MAX_TRIES} draws: widen --flops")


def _nearest_k(m: int, n: int, t: float, band, dims) -> int | None:
    """The K nearest 2^t / (2 M N) with 2·M·N·K in the band and K within dims, or None."""
    k_lo = max(dims[0], math.ceil(2 ** band[0] / (2 * m * n)))
    k_hi = min(dims[1], math.floor(2 ** band[1] / (2 * m * n)))
    return min(max(round(2 ** t / (2 * m * n)), k_lo), k_hi) if k_lo <= k_hi else None


def describe(spec: RandomShapes, seed: int) -> str:
    lo, hi = spec.band()
    clipped = "" if (lo, hi) == tuple(spec.flops) else " (--flops {:g}:{:g} clipped)".format(*spec.flops)
    return (f"{spec.count} random shapes, seed {seed} (--seed {seed} draws them again): 2·M·N·K "
            f"log-uniform in 2^{lo:.4g}..2^{hi:.4g}{clipped}, M, N, K in [{spec.dims[0]}, "
            f"{spec.dims[1]}]")


# ---- the plan of a run ------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """The problems of a run: (shape, the layouts it is timed in) in order; with random sizes,
    what was drawn and from which seed."""
    cases: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...]
    seed: int
    random: RandomShapes | None = None
    drawn: tuple[tuple[int, int, int, str], ...] = ()

    @property
    def shapes(self) -> list[tuple[int, int, int]]:
        return list(dict.fromkeys(s for s, _ in self.cases))

    @property
    def layouts(self) -> list[str]:
        return list(dict.fromkeys(x for _, lays in self.cases for x in lays))

    def record(self) -> dict:
        """What a result's meta["random"] says of the draw (runner adds the summary)."""
        r = self.random
        return {"seed": self.seed, "count": r.count, "flops_log2": list(r.band()),
                "flops_log2_asked": list(r.flops), "dims": list(r.dims),
                "about": describe(r, self.seed), "shapes": [list(x) for x in self.drawn],
                "timings": {t: what for t, (_, what) in TIMINGS.items()}}


def plan(sizes=None, layouts=None, *, seed: int | None = None, flops=None) -> Plan:
    """Fixed sizes (parse_sizes) in each of `layouts` (default nn), then `random[:N]`'s shapes,
    each in one layout drawn from `layouts` (default all four). seed: draws the random shapes
    (None: a fresh one with random sizes, else 0); flops: their log2 band of 2·M·N·K."""
    specs = [sizes] if isinstance(sizes, (str, int)) else sizes
    counts = [c for c in map(count_of, specs or []) if c is not None]
    if len(counts) > 1:
        raise ValueError("give --size random[:N] once")
    if flops is not None and not counts:
        raise ValueError("--flops sets the band of --size random: give that size too")
    lays = parse_layouts(layouts)
    if not counts:
        return Plan(tuple((s, lays) for s in parse_sizes(sizes)), 0 if seed is None else seed)
    fixed = parse_sizes([s for s in specs if count_of(s) is None])
    spec = RandomShapes(counts[0], DEFAULT_FLOPS if flops is None else tuple(flops))
    seed = secrets.randbelow(1 << 32) if seed is None else seed    # printed with the results
    drawn = draw(spec, seed, LAYOUTS if layouts is None else lays)
    cases = tuple((s, lays) for s in fixed) + tuple(((m, n, k), (lay,)) for m, n, k, lay in drawn)
    return Plan(cases, seed, spec, tuple(drawn))

"""What to measure: sizes (N, MxNxK, the default squares and odd shapes, the sweep, random
shapes) and operand layouts, the plan of a run that joins them, and whether a kernel takes a
layout without run() copying an operand first."""
from __future__ import annotations

from dataclasses import dataclass

from .. import registry
from ..base.precisions import PRECISION
from ..plan.resolve import contiguous
from .random_shapes import DEFAULT_FLOPS, RandomShapes, describe, draw, fresh_seed, random_count
from .runtime import resolve
from .schema import LAYOUTS, TIMINGS
from .sweep import GRID, HELD_OUT, SWEEP

DEFAULT_SQUARES = (256, 512, 1024, 2048, 4096, 8192)
# non-multiples of every tile, skinny/fat and short-K shapes
ODD_SHAPES = ((1000, 1000, 1000), (4095, 4097, 4093), (8192, 2048, 4096), (2048, 8192, 4096),
              (4096, 4096, 512), (257, 8191, 1025))

def parse_sizes(specs) -> list[tuple[int, int, int]]:
    """"4096" -> 4096^3, "MxNxK", "squares", "odd", "sweep", "grid", "held-out", "all"; ints
    and 3-tuples pass through."""
    if specs is None:
        specs = ["all"]
    if isinstance(specs, (str, int)):
        specs = [specs]
    out: list[tuple[int, int, int]] = []
    for s in specs:
        if isinstance(s, int):
            out.append((s, s, s))
        elif isinstance(s, (tuple, list)):
            if len(s) != 3:
                raise ValueError(f"a size is (M, N, K), got {s!r}")
            out.append(tuple(int(x) for x in s))
        elif s == "sweep":
            out += [shape for _, shape in SWEEP]
        elif s == "grid":
            out += list(GRID)
        elif s == "held-out":
            out += [shape for _, shape in HELD_OUT]
        elif s in ("squares", "odd", "all"):
            if s in ("squares", "all"):
                out += [(x, x, x) for x in DEFAULT_SQUARES]
            if s in ("odd", "all"):
                out += list(ODD_SHAPES)
        else:
            parts = str(s).lower().replace("*", "x").split("x")
            try:
                dims = [int(p) for p in parts]
            except ValueError:
                raise ValueError(f"bad size {s!r}: use N, MxNxK, squares, odd, sweep, grid, held-out or all") from None
            if len(dims) == 1:
                dims *= 3
            if len(dims) != 3:
                raise ValueError(f"bad size {s!r}: use N or MxNxK")
            out.append(tuple(dims))
    for d in out:
        if min(d) < 1:
            raise ValueError(f"sizes must be >= 1, got {d}")
    seen, uniq = set(), []
    for d in out:
        if d not in seen:
            seen.add(d)
            uniq.append(d)
    return uniq


def parse_layouts(spec) -> tuple[str, ...]:
    if spec is None:
        return ("nn",)
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [x.strip().lower() for x in items if x.strip()]
    if items == ["all"]:
        return LAYOUTS
    for x in items:
        if x not in LAYOUTS:
            raise ValueError(f"layout {x!r}: use {', '.join(LAYOUTS)} or all")
    return tuple(dict.fromkeys(items))


def out_dtype_of(precision: str) -> str:
    """The result type the bench times a precision with: its input type where it may write
    it (bf16 and fp16, as cuBLAS's half-precision GEMMs write), else float32."""
    p = PRECISION[precision]
    return p.dtype if p.dtype in p.outs else p.outs[0]


def native_layout(kernel: registry.Kernel, m: int, n: int, k: int, layout: str,
                  precision: str = "fp32") -> bool:
    """True when run() can hand operands in `layout` to the kernel without a relayout copy
    (pure CPU: asks the runtime's variant choice with descriptors of fresh buffers)."""
    _, copies, _ = resolve(kernel, contiguous(m, n, k, layout, precision, out_dtype_of(precision)),
                           precision, out_dtype_of(precision))
    return not copies


@dataclass(frozen=True)
class Plan:
    """The problems of a bench run: (shape, the layouts it is timed in) in order; with random
    sizes, what was drawn (random_shapes.RandomShapes) and from which seed."""
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
    each in one layout drawn from `layouts` (default all four). seed: the run's seed, which
    draws the random shapes (None: a fresh one with random sizes, else 0); flops: their log2
    band of 2·M·N·K (random_shapes.DEFAULT_FLOPS)."""
    specs = [sizes] if isinstance(sizes, (str, int)) else sizes
    counts = [c for c in map(random_count, specs or []) if c is not None]
    if len(counts) > 1:
        raise ValueError("give --size random[:N] once")
    if flops is not None and not counts:
        raise ValueError("--flops sets the band of --size random: give that size too")
    lays = parse_layouts(layouts)
    if not counts:
        return Plan(tuple((s, lays) for s in parse_sizes(sizes)), 0 if seed is None else seed)
    fixed = parse_sizes([s for s in specs if random_count(s) is None])
    spec = RandomShapes(counts[0], DEFAULT_FLOPS if flops is None else tuple(flops))
    seed = fresh_seed() if seed is None else seed
    drawn = draw(spec, seed, LAYOUTS if layouts is None else lays)
    cases = tuple((s, lays) for s in fixed) + tuple(((m, n, k), (lay,)) for m, n, k, lay in drawn)
    return Plan(cases, seed, spec, tuple(drawn))

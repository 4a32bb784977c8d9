"""What to measure: sizes (N, MxNxK, the default squares and odd shapes, the sweep) and
operand layouts, and whether a kernel takes a layout without run() copying an operand first."""
from __future__ import annotations

from .. import registry
from ..precisions import PRECISION
from ..resolve import contiguous
from .runtime import resolve
from .schema import LAYOUTS
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

"""The shapes gemm() is compared with cuBLAS on (data only): the sweep (tune's default), the
grid between its shapes, the held-out shapes in no table, and the groups a summary covers."""
from __future__ import annotations

# (class, (M, N, K)). Model layers: a 7B-class transformer (hidden 4096, MLP 11008, fused QKV
# 3 x 4096) at 2048 tokens, and decoding 16 tokens.
SWEEP: tuple[tuple[str, tuple[int, int, int]], ...] = (
    *(("square", (s, s, s)) for s in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)),
    ("odd", (1000, 1000, 1000)), ("odd", (4097, 4097, 4097)), ("odd", (12345, 6789, 1000)),
    ("odd", (257, 8191, 1025)),
    ("skinny M", (32, 8192, 4096)), ("skinny M", (64, 8192, 8192)), ("skinny M", (128, 4096, 4096)),
    ("skinny N", (8192, 32, 4096)), ("skinny N", (8192, 64, 4096)), ("skinny N", (4096, 128, 4096)),
    ("long K", (512, 512, 16384)), ("long K", (256, 256, 65536)),
    ("short K", (8192, 8192, 128)), ("short K", (4096, 4096, 64)),
    ("model: MLP up", (2048, 11008, 4096)), ("model: MLP down", (2048, 4096, 11008)),
    ("model: QKV", (2048, 12288, 4096)), ("model: weight grad", (4096, 4096, 2048)),
    ("model: decode", (16, 4096, 4096)), ("model: decode MLP", (16, 11008, 4096)),
)

# The grid (`--size grid`): M, N a factor 4 apart, K in three steps, products up to 2^36, less
# the sweep's own shapes; then the same with N and K one more, for the unaligned class
# (gemm() takes the nearest row of a call's own class: docs/design/auto.md#the-tables).
_GRID_MN = (32, 128, 512, 2048, 8192)
_GRID_K = (256, 1024, 4096)
_GRID_ALIGNED = tuple((m, n, k) for m in _GRID_MN for n in _GRID_MN for k in _GRID_K
                      if m * n * k <= 1 << 36 and (m, n, k) not in {s for _, s in SWEEP})
GRID: tuple[tuple[int, int, int], ...] = (
    _GRID_ALIGNED + tuple((m, n + 1, k + 1) for m, n, k in _GRID_ALIGNED))

# `--size held-out`: shapes in no shipped table, over the same classes: gemm() between its rows
HELD_OUT: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("small", (333, 333, 333)), ("small", (700, 700, 700)), ("small", (2000, 2000, 300)),
    ("small", (300, 5000, 700)), ("small", (777, 1234, 2345)),
    ("large", (1536, 1536, 1536)), ("large", (3072, 3072, 3072)), ("large", (6000, 6000, 6000)),
    ("large", (2500, 9000, 4096)),
    ("skinny M", (8, 4096, 4096)), ("skinny M", (96, 3000, 2000)), ("skinny M", (48, 5000, 3000)),
    ("skinny M", (128, 4096, 1024)),
    ("skinny N", (5000, 48, 3000)), ("skinny N", (6000, 100, 2000)),
    ("long K", (200, 200, 20000)), ("long K", (1000, 1000, 30000)),
    ("short K", (6000, 6000, 96)), ("short K", (3000, 9000, 32)),
    ("model: MLP up", (512, 11008, 4096)), ("model: MLP down", (512, 4096, 11008)),
    ("model: QKV", (1000, 12288, 4096)), ("model: weight grad", (4096, 11008, 1000)),
    ("model: decode", (4, 4096, 11008)),
)

# groups of shapes the sweep's summary reports the minimum ratio to cuBLAS over (a shape may
# be in several): what the targets of issue #22 are stated for (docs/design/auto.md)
GROUPS = (
    ("every dim >= 1024", lambda m, n, k: min(m, n, k) >= 1024),
    ("skinny", lambda m, n, k: min(m, n) <= 128 and max(m, n) >= 16 * min(m, n)),
    ("256³–1024³", lambda m, n, k: m == n == k and 256 <= m <= 1024),
)


def sweep_class(m: int, n: int, k: int) -> str:
    """The class a sweep (or held-out) shape stands for (its label), else "other"."""
    return next((c for c, s in (*SWEEP, *HELD_OUT) if s == (m, n, k)), "other")

"""The sweep (`--size sweep`, and what `cute-gemm tune` measures by default): the shapes
gemm() is compared with cuBLAS on, the class each stands for, and the groups of shapes the
summary of a run reports the minimum ratio over. Data only: runner, tune and report read it.
"""
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

# groups of shapes the sweep's summary reports the minimum ratio to cuBLAS over (a shape may
# be in several): what the targets of issue #22 are stated for (docs/tuning/auto.md)
GROUPS = (
    ("every dim >= 1024", lambda m, n, k: min(m, n, k) >= 1024),
    ("skinny", lambda m, n, k: min(m, n) <= 128 and max(m, n) >= 16 * min(m, n)),
    ("256³–1024³", lambda m, n, k: m == n == k and 256 <= m <= 1024),
)


def sweep_class(m: int, n: int, k: int) -> str:
    """The class a sweep shape stands for (its label), else "other"."""
    return next((c for c, s in SWEEP if s == (m, n, k)), "other")

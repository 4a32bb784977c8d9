"""The handwritten SGEMM ladder, as registry data: fp32 SIMT. Stages after `naive` take row-major
A, B, C (the Variant defaults; other layouts are copied); a stage with a 128-bit path has the
aligned entry first (align=4) and the scalar fallback last, picked by the actual operands."""
from __future__ import annotations

from dataclasses import dataclass

from .records import FixedSmem, FlatGrid, Kernel, RowGrid, StripSmem, TileGrid, Variant, constexprs


@dataclass(frozen=True)
class LadderConfig:
    """A handwritten stage's compile-time values (records.KernelConfig), written by cpp() as
    `constexpr int` THREADS, BLOCK_X and BLOCK_Y of a 2-D block, then each knob that is set
    (None: not the stage's). What a stage fixes in its own code stays there, static_asserted."""
    block: tuple[int, int, int]
    bm: int | None = None
    bn: int | None = None
    bk: int | None = None            # None with a BM: the k-extent is all of K (v1)
    wm: int | None = None            # v9: warp tile WM x WN, thread tile TM x TN, GROUP_M rows of
    wn: int | None = None            # grouped block order, __launch_bounds__ MIN_BLOCKS, register
    tm: int | None = None            # fragments double-buffered (FRAG_DB)
    tn: int | None = None
    group_m: int | None = None
    min_blocks: int | None = None
    frag_db: int | None = None
    strip: StripSmem | None = None   # dynamic smem: whole-K strips of A and B (v0c, v1)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def tile(self) -> tuple[int, int, int] | None:
        return None if self.bk is None else (self.bm, self.bn, self.bk)

    def smem(self, m: int, n: int, k: int) -> int:
        return self.strip(m, n, k) if self.strip is not None else 0

    def cpp(self, name: str) -> str:
        x, y = (self.block[0], self.block[1]) if self.block[1] > 1 else (None, None)
        knobs = ("bm", "bn", "bk", "wm", "wn", "tm", "tn", "group_m", "min_blocks", "frag_db")
        return constexprs(f"{name}: cute_gemm/registry/ladder_handwritten.py, LadderConfig",
                          THREADS=self.threads, BLOCK_X=x, BLOCK_Y=y,
                          **{f.upper(): getattr(self, f) for f in knobs})


def _stage(name: str, entry: str, cfg: LadderConfig, seed: str, summary: str, *, file: str = "",
           vec: bool = False, **kw) -> Kernel:
    """A handwritten stage of handwritten/<file or entry>.cu: block, tile and smem from `cfg`; one
    entry point, or with `vec` the 128-bit one then the fallback <entry>_a1; a TileGrid by default."""
    kw.setdefault("variants", (Variant(entry, align=4), Variant(f"{entry}_a1")) if vec
                  else (Variant(entry),))
    kw.setdefault("grid", TileGrid(cfg.bm, cfg.bn))
    return Kernel(name=name, family="handwritten", source=f"handwritten/{file or entry}.cu",
                  seed=seed, summary=summary, config=cfg, block=cfg.block, tile=cfg.tile,
                  dyn_smem=cfg.strip or FixedSmem(0), **kw)


def _v9(name: str, bm: int, bn: int, bk: int, wm: int, wn: int, tm: int, tn: int,
        min_blocks: int, frag_db: int, tags: tuple[str, ...] = ()) -> Kernel:
    threads = (bm // wm) * (bn // wn) * 32
    regs = "2 blocks/SM (<=128 regs)" if min_blocks == 2 else f"{min_blocks} block(s)/SM"
    return _stage(
        name, "v9_warptile", LadderConfig((threads, 1, 1), bm, bn, bk, wm, wn, tm, tn, group_m=8,
                                          min_blocks=min_blocks, frag_db=frag_db), "v9",
        f"warp tile {wm}x{wn}, {tm}x{tn} per thread, {threads} threads, {regs}, "
        f"smem double-buffered{', register fragments too' if frag_db else ''}, "
        "Z lane map, grouped block order", vec=True, tags=tags)


# One source in several tile configurations, timed side by side (docs/ladder/handwritten.md).
# "quick": gemm()'s stand-in while its pick compiles (standin.stand_in): one entry compiles in ~1 s.
#  name                   BM   BN   BK  WM   WN  TM  TN  minBlk fragDB tags
_V9_CONFIGS = (
    ("v9_warptile",         128, 128, 8,  32,  64, 8,  8,  2, 0, ("quick",)),
    ("v9_warptile_db",      128, 128, 8,  32,  64, 8,  8,  1, 1),
    ("v9_warptile_w64x32",  128, 128, 8,  64,  32, 8,  8,  2, 0),   # 8 x 4 lanes per warp
    ("v9_warptile_k16",     128, 128, 16, 32,  64, 8,  8,  1, 1),   # half the barriers
    ("v9_warptile_128x256", 128, 256, 8,  32, 128, 8,  16, 1, 0),   # 128 FFMA per 6 LDS.128
    ("v9_warptile_256x128", 256, 128, 8,  64,  64, 16, 8,  1, 0),
    ("v9_warptile_64x128",  64,  128, 8,  32,  64, 8,  8,  3, 0),   # 128 threads: small shapes
)


_ROW = LadderConfig((256, 1, 1))
_OUTER = LadderConfig((256, 1, 1), 128, 128, 8)

HANDWRITTEN: list[Kernel] = [
    _stage("naive", "naive", LadderConfig((16, 16, 1)), "v0",
           "one thread per C element, operands straight from global memory", file="v0_naive",
           variants=(Variant("naive", a_major="any", b_major="any", c_major="any"),),
           grid=TileGrid(16, 16)),
    _stage("flat1d", "flat1d", _ROW, "v0",
           "1D grid, one thread per C element, (m, n) from a flat index (n fastest)",
           file="v0a_flat1d", grid=FlatGrid(256)),
    _stage("row_block", "row_block", _ROW, "v0",
           "one block per C row, threads stride over the columns", file="v0b_row_block",
           grid=RowGrid()),
    _stage("row_smem", "row_smem", LadderConfig((256, 1, 1), strip=StripSmem(1, 0)), "v0",
           "one block per C row, that row of A in dynamic shared memory", file="v0c_row_smem",
           grid=RowGrid(), constraints="K <= (shared memory per block) / 4 bytes; any M, N >= 1"),
    _stage("v1_strip", "v1_strip", LadderConfig((16, 16, 1), 16, 16, strip=StripSmem(16, 16)), "v1",
           "16x16 C tile, whole-K strips of A and B in dynamic shared memory",
           constraints="K <= (shared memory per block) / 128 bytes; any M, N >= 1"),
    _stage("v2_tiled16", "v2_tiled", LadderConfig((16, 16, 1), 16, 16, 16), "v2",
           "shared-memory sliding window, 16x16 tiles, one output per thread"),
    _stage("v2_tiled32", "v2_tiled", LadderConfig((32, 32, 1), 32, 32, 32), "v2",
           "shared-memory sliding window, 32x32 tiles, one output per thread"),
    _stage("v3_patch2x2", "v3_patch2x2", LadderConfig((16, 16, 1), 32, 32, 32), "v3",
           "32x32x32 tiles, each thread a 2x2 patch of C (strided by 16)"),
    _stage("v4_float4", "v4_float4", LadderConfig((16, 16, 1), 32, 32, 32), "v4",
           "v3 with float4 global loads; guarded scalar path at edges / misalignment", vec=True),
    _stage("v5_outer", "v5_outer", _OUTER, "v5",
           "128x128x8 block tile, 8x8 outputs per thread as a register outer product"),
    _stage("v6_vec", "v6_vec", _OUTER, "v6",
           "v5 with 128-bit global and shared loads; guarded path at edges", vec=True),
    _stage("v7_atrans", "v7_atrans", _OUTER, "v7",
           "v6 with A transposed in shared memory, padded against bank conflicts", vec=True),
    _stage("v8_double", "v8_double", _OUTER, "v8",
           "v7 with double-buffered shared memory and register fragments", vec=True),
    # v9: the fast design in several tile configurations; `cute-gemm bench` times them
    *[_v9(*cfg) for cfg in _V9_CONFIGS],
]

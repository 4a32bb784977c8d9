"""The layouts of the tensor-core kernels' swizzled shared memory and MMAs: the SM90 GMMA
kernels (c5_wgmma, c6_wgmma_ws), from the swizzled atoms they share with c4_mma_sm80
(atoms.swizzle_atom).

Everything comes from the registry entry: the tile and stages from its TileConfig (c5) or
its WgmmaWsConfig (c6), the element types and majors from its variants, and each operand's
swizzle row (128 or 64 bytes) and TMA box from the variants' records.TmaBoxes. The names are
the headers' own (include/cute_gemm/sm90_operand.cuh's OperandTile<...>::Atom / ::Layout)
or, for the TiledMMA the kernels build in their function, its expression there.
"""
from __future__ import annotations

from ..base.precisions import DTYPE, PRECISION
from .algebra import Layout, TiledMMA, make_layout, product_each, tile_to_shape
from .atoms import gmma_ss, swizzle_atom
from .model import Builder, Def, Global, Part, Smem
from .recipes import recipe


def _cpp(prec: str) -> str:
    """The C++ type of A and B in `prec`'s entries (tf32: float, as the kernels read it)."""
    return DTYPE[PRECISION[prec].dtype].cpp


def _groups(kernel) -> list[tuple[str, list]]:
    """The kernel's precisions by element width (bf16 and fp16 share every layout)."""
    out: dict[int, tuple[str, list]] = {}
    for p in kernel.precisions:
        nb = PRECISION[p].itemsize
        label, ps = out.setdefault(nb, ("", []))
        ps.append(p)
        out[nb] = ("/".join(ps), ps)
    return list(out.values())


def _register_a(v) -> bool:
    """A tf32 entry with an m-major A, or an n-major B (C^T = B^T A^T): RS wgmma, that operand
    read into registers from a RegisterOperand stage (sm90_register_operand.cuh)."""
    return v.precision == "tf32" and (v.a_major, v.b_major) != ("k", "k")


def _register_operand(b: Builder) -> None:
    """c6's RS entries: the register operand's stage (BLK_M rows: A's, or B's columns in the
    transposed problem) in GMMA's m-major 128-byte swizzle, filled by (32, BLK_K) TMA boxes;
    their k-major operand is the SS one above (A's in the transposed problem, BLK_N rows)."""
    users = [v for v in b.kernel.variants if _register_a(v)]
    if not users:
        return
    boxes = {v.tma.a if v.a_major == "m" else v.tma.b for v in users}
    if len(boxes) != 1:
        raise ValueError(f"{b.kernel.name}: register-operand entries disagree on their TMA boxes "
                         f"{sorted(boxes)}")
    box = boxes.pop()
    bm, bk, stages = b.config.blk_m, box[1], b.config.stages
    tile = "cg::sm90::RegisterOperand<Config::blk_m, kBlkK, Config::stages>"
    atom = swizzle_atom(4, False)
    sdef = Def(f"{tile}::Layout{{}}", tile_to_shape(atom, (bm, bk, stages), (2, 1, 3)))
    names = ", ".join(f"`{v.entry}`" for v in users)
    sec = b.section(f"register operand, tf32 ({names}): m-major swizzled smem read into RS "
                    f"wgmma's A fragments, TMA box {box}")
    adef = Def(f"{tile}::Atom{{}}", atom)
    sec.items += [
        b.layout("Areg/atom", "register-operand smem atom (GMMA::Layout_MN_SW128_Atom<tfloat32_t>): "
                 "128 bytes of rows x 8 k-lines", adef),
        b.banks("Areg/atom_banks", "bank of each element of that atom: a 128-byte k-line covers "
                "all 32 banks, and the same chunk of 8 k-lines 8 bank groups", adef, 4),
        b.layout("Areg/sA_tf32", f"sA_tf32: (BLK_M,BLK_K,STAGES) = tile_to_shape(atom, ({bm},{bk},{stages}), "
                 "Step<_2,_1,_3>: k first), stage 0", sdef),
        b.boxes("Areg/tma_box", f"TMA boxes {box} of one stage (records.TmaBoxes, contiguous "
                "extent first)", sdef, box, False),
    ]


def _gmma(b: Builder, consumers: int, parts: int, cpp) -> None:
    """cpp: the kernel's C++ names: stage(prec, op, major, bk) -> the OperandTile type, mma ->
    the TiledMMA expression in the kernel's function (over its template parameters T, MajA,
    MajB and its kBlkK: no nvcc program evaluates these yet, tests/test_layouts.py says why)."""
    bm, bn, _ = b.tiler
    t = b.thread
    nthr = 128 * consumers                           # the TiledMMA's threads (the consumers)
    mma_stage: dict[str, Def] = {}
    mma_k: dict[str, int] = {}
    for label, precs in _groups(b.kernel):
        prec = precs[0]
        nb = PRECISION[prec].itemsize
        suffix = "" if nb == 2 else f"_{prec}"
        vs = [v for v in b.kernel.variants if v.precision in precs and not _register_a(v)]
        for op, ext, ext_name in (("A", bm, "M"), ("B", bn, "N")):
            for major in sorted({v.a_major if op == "A" else v.b_major for v in vs}):
                kmajor = major == "k"
                users = [v for v in vs if (v.a_major if op == "A" else v.b_major) == major]
                boxes = {v.tma.a if op == "A" else v.tma.b for v in users}
                rows = {v.tma.swizzle for v in users}
                if len(boxes) != 1 or len(rows) != 1:
                    raise ValueError(f"{b.kernel.name}: {op} {major}-major entries disagree on "
                                     f"their TMA boxes {sorted(boxes)} / swizzle rows {sorted(rows)}")
                box, row = boxes.pop(), rows.pop()
                bk = row // nb                          # a k-tile: one swizzle row of k
                stages = b.config.stages
                tile = cpp.stage(prec, op, "K" if kmajor else "MN", bk)
                atom = swizzle_atom(nb, kmajor, row)
                order = (1, 2, 3) if kmajor else (2, 1, 3)   # sm90_operand.cuh: mn-major slabs k first
                sdef = Def(f"{tile}::Layout{{}}", tile_to_shape(atom, (ext, bk, stages), order))
                adef = Def(f"{tile}::Atom{{}}", atom)
                what = (f"8 rows ({ext_name}) x {row} bytes of k" if kmajor else
                        f"{row} bytes of {ext_name} x 8 columns of k")
                n = len(users)
                sec = b.section(f"{op} {major}-major, {label} ({n} entr{'y' if n == 1 else 'ies'}): swizzled smem, "
                                f"TMA box {box}")
                pre = f"{op}{major}{suffix}/"
                s_leaf = f"s{op}{suffix}"
                sec.items += [
                    b.layout(f"{pre}atom", f"{op} {major}-major smem atom (GMMA::Layout_"
                             f"{'K' if kmajor else 'MN'}_SW{row}_Atom, {label}): {what}", adef),
                    b.banks(f"{pre}atom_banks", f"bank of each element of that atom: a {row}-byte "
                            "line covers all 32 banks, and the same chunk of 8 lines 8 bank groups",
                            adef, nb),
                    b.layout(f"{pre}{s_leaf}", f"{s_leaf}: (BLK_{ext_name},BLK_K,STAGES) = "
                             f"tile_to_shape(atom, ({ext},{bk},{stages})"
                             + ("" if kmajor else ", Step<_2,_1,_3>: k first") + "), stage 0", sdef),
                    b.boxes(f"{pre}tma_box", f"TMA boxes {box} of one stage of {s_leaf} "
                            f"(records.TmaBoxes, contiguous extent first)"
                            + (f"; cluster of {parts}: each CTA loads 1/{parts} of them and "
                               "multicasts" if parts > 1 and op == "B" else ""), sdef, box, kmajor),
                ]
                if kmajor and (nb == 2 or op not in mma_stage):
                    mma_stage[op] = sdef
                    mma_k[op] = 32 // nb               # a GMMA atom's K: 16 (16-bit), 8 (tf32)
    # the TiledMMA of the 16-bit k-major entries, else of the tf32 one (the C fragment is the
    # same for every entry)
    atom_n = bn                                       # ss_op_selector: one wgmma of N = BLK_N
    mma = Def(cpp.mma, TiledMMA(gmma_ss(atom_n, mma_k["A"]), make_layout((consumers, 1, 1))),
              local=True)
    gC, sA, sB = Global("C"), Smem("A", mma_stage["A"]), Smem("B", mma_stage["B"])
    wg = "a warpgroup" if consumers == 1 else f"each of {consumers} consumer warpgroups"
    which = "every 16-bit k-major entry" if mma_k["A"] == 16 else "the tf32 entry"
    sec = b.section(f"TiledMMA and C: 64x{atom_n}x{mma_k['A']} GMMA SS atom, {wg} ({which}; "
                    "the accumulators of every entry)")
    kt = product_each(mma_stage["A"].value.shape)[1]     # BLK_K
    sec.items += [
        b.tv("mma_C_TV", f"TiledMMA C: (thread, value) -> (M,N) coordinate (get_layoutC_TV): "
             f"the accumulator fragment, {consumers}x64 x {atom_n} over {nthr} threads", mma, "C"),
        b.tile("gC", gC, "the CTA's (BLK_M,BLK_N) tile of C"),
        b.partition("tCgC", f"tCgC = mma.get_slice({t}).partition_C(gC): (MMA,MMA_M,MMA_N), the "
                    f"accumulators thread {t} holds (consumer thread index)", gC, Part(mma, "C"),
                    nthreads=nthr),
        b.partition("tCsA", f"tCsA = mma.get_slice({t}).partition_A(sA): (MMA,MMA_M,MMA_K,PIPE), "
                    f"the smem a warpgroup's wgmma reads through descriptors (owners: warpgroups, "
                    f"as thread 128 w)", sA, Part(mma, "A"), tile=(bm, kt), owner_step=128,
                    nthreads=nthr),
        b.partition("tCsB", f"tCsB = mma.get_slice({t}).partition_B(sB): (MMA,MMA_N,MMA_K,PIPE), "
                    "what each warpgroup reads of sB (all of it)", sB, Part(mma, "B"),
                    exact=consumers == 1, tile=(bn, kt), owner_step=128, nthreads=nthr),
    ]


class _C5:
    """c5_wgmma.cu's names: BLK_M, BLK_N, BLK_K, STAGES (its prelude); kBlkK = BLK_K * 2 / sizeof(T)."""
    mma = "make_tiled_mma(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<BLK_N>, Int<kBlkK>>, MajA, MajB>())"

    @staticmethod
    def stage(prec: str, op: str, major: str, bk: int) -> str:
        ext = "BLK_M" if op == "A" else "BLK_N"
        return f"cg::sm90::OperandTile<{_cpp(prec)}, GMMA::Major::{major}, {ext}, {bk}, STAGES>"


class _C6:
    """c6_wgmma_ws.cu's names: its struct Config (ladder_hopper.WgmmaWsConfig)."""
    mma = ("make_tiled_mma(GMMA::ss_op_selector<T, T, float, Shape<_64, Int<kBlkN>, Int<kBlkK>>, "
           "MajA, MajB>(), Layout<Shape<Int<Config::consumers>, _1, _1>>{})")

    @staticmethod
    def stage(prec: str, op: str, major: str, bk: int) -> str:
        ext, parts = ("Config::blk_m", "1") if op == "A" else ("Config::blk_n", "Config::cluster_m")
        return (f"cg::sm90::OperandTile<{_cpp(prec)}, GMMA::Major::{major}, {ext}, {bk}, "
                f"Config::stages, {parts}, Config::k_bytes>")


@recipe("cute/c5_wgmma.cu")
def _c5(b: Builder) -> None:
    _gmma(b, consumers=b.nthreads // 128, parts=1, cpp=_C5)


@recipe("cute/c6_wgmma_ws.cu")
def _c6(b: Builder) -> None:
    cfg = b.config
    _gmma(b, consumers=cfg.consumers, parts=cfg.cluster_m, cpp=_C6)
    _register_operand(b)

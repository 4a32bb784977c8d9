"""The kernels' argument blocks, packed once with ctypes: the void*[] cuLaunchKernel takes,
pointing into one struct per launch configuration whose pointer and scalar fields a call
rewrites. Every block is an arg_block; no driver calls here (launch.py launches them)."""
from __future__ import annotations

import ctypes
from typing import NamedTuple

TMA_MAP_BYTES = 128     # sizeof(CUtensorMap): the kernel parameter CG_TMA_PARAMS passes
I, I32, L, P, F = ctypes.c_int, ctypes.c_int32, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_float


def arg_block(name: str, fields: list, doc: str = ""):
    """(a ctypes struct of a kernel's parameters, in order; their offsets in it)."""
    # param_sizes: each parameter's bytes, in order, as the kernel's ELF gives its own
    # (launch.Function.params, checked against each other before a launch)
    cls = type(name, (ctypes.Structure,), {"__doc__": doc, "_fields_": fields,
                                           "param_sizes": tuple(ctypes.sizeof(t) for _, t in fields)})
    return cls, tuple(getattr(cls, f).offset for f, _ in fields)


def packed(args, offsets: tuple[int, ...]):
    """(keepalive, address of the void*[] the driver wants) for one argument block: `args`
    (a ctypes struct, or one ctypes scalar) and the offsets of its parameters in it;
    keepalive[0] is the struct a call rewrites."""
    base = ctypes.addressof(args)
    ptrs = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
    return (args, ptrs), ctypes.addressof(ptrs)


# the one kernel signature (include/cute_gemm/common.cuh, CG_GEMM_PARAMS), then what some
# entry points take after it: a stream-K twin's (float* ws, int tile0); CG_TMA_PARAMS, the
# two tensor maps (the driver copies each to the kernel's own 64-byte aligned offset, so
# they need no alignment here); a cut walk's (ws, dp, pieces), sm90_tail_split.cuh
GEMM_PARAMS = [("M", I), ("N", I), ("K", I), ("alpha", F),
               ("A", P), ("sAm", L), ("sAk", L), ("B", P), ("sBk", L), ("sBn", L),
               ("beta", F), ("C", P), ("sCm", L), ("sCn", L)]
# a batched kernel's entries on their own grid take CG_BATCH_PARAMS after them (common.cuh)
BATCH_PARAMS = [("Lin", I32), ("z0", I32), ("bA0", L), ("bA1", L), ("bB0", L), ("bB1", L),
                ("bC0", L), ("bC1", L)]
# a persistent kernel's batched twins (c6's NAME_b) take, after the tensor maps, the problems
# they walk and the batch strides (A's and B's also in their 4-D maps)
WALK_BATCH_PARAMS = [("problems", I32)] + [p for p in BATCH_PARAMS if p[0] != "z0"]
# a fused kernel's entries (Kernel.fused) take cg::EpiArgs (epilogue.cuh) after those: the
# vectors of a fused epilogue, their element strides, the clamp's bounds, 8-bit operands'
# block scales; zeros for none
EpiArgs, _ = arg_block("EpiArgs", [("bias", P), ("bias_sm", I32), ("bias_sn", I32), ("srow", P),
                                   ("scol", P), ("srow_s", I32), ("scol_s", I32), ("lo", F), ("hi", F),
                                   ("blk_a", P), ("blk_b", P), ("blk_a_sm", I32), ("blk_a_sk", I32),
                                   ("blk_b_sk", I32), ("blk_b_sn", I32)])


class EpiValues(NamedTuple):
    """EpiArgs' fields in its order (pointers and element strides; the clamp's bounds), in
    the caller's rows and columns: a fused epilogue's run-time half."""
    bias: int = 0
    bias_sm: int = 0
    bias_sn: int = 0
    srow: int = 0
    scol: int = 0
    srow_s: int = 0
    scol_s: int = 0
    lo: float = 0.0
    hi: float = 0.0
    blk_a: int = 0
    blk_b: int = 0
    blk_a_sm: int = 0
    blk_a_sk: int = 0
    blk_b_sk: int = 0
    blk_b_sn: int = 0

    def but(self, **fields) -> "EpiValues":
        """These values with `fields` changed."""
        return self._replace(**fields)

    def pointing(self, ptrs) -> tuple:
        """EpiArgs' fields with another call's vector pointers (bias, srow, scol, blk_a,
        blk_b): the hot path's, positional (a fresh tuple, no keyword handling)."""
        (bias, srow, scol, blk_a, blk_b), v = ptrs, self
        return (bias, v.bias_sm, v.bias_sn, srow, scol, v.srow_s, v.scol_s, v.lo, v.hi, blk_a, blk_b,
                v.blk_a_sm, v.blk_a_sk, v.blk_b_sk, v.blk_b_sn)
EPI_PARAMS = [("epi", EpiArgs)]
TMA_PARAMS = [("tma_a", ctypes.c_ubyte * TMA_MAP_BYTES), ("tma_b", ctypes.c_ubyte * TMA_MAP_BYTES)]
GemmArgs, GEMM_OFFSETS = arg_block("GemmArgs", GEMM_PARAMS)
GemmArgsBatch, GEMM_BATCH_OFFSETS = arg_block("GemmArgsBatch", GEMM_PARAMS + BATCH_PARAMS)
GemmArgsBatchEpi, GEMM_BATCH_EPI_OFFSETS = arg_block("GemmArgsBatchEpi",
                                                    GEMM_PARAMS + BATCH_PARAMS + EPI_PARAMS)
GemmArgsWs, GEMM_WS_OFFSETS = arg_block("GemmArgsWs", GEMM_PARAMS + [("ws", P), ("tile0", I32)])
GemmArgsWsEpi, GEMM_WS_EPI_OFFSETS = arg_block("GemmArgsWsEpi",
                                              GEMM_PARAMS + [("ws", P), ("tile0", I32)] + EPI_PARAMS)
GemmArgsTma, GEMM_TMA_OFFSETS = arg_block("GemmArgsTma", GEMM_PARAMS + TMA_PARAMS)
GemmArgsTmaWs, GEMM_TMA_WS_OFFSETS = arg_block(
    "GemmArgsTmaWs", GEMM_PARAMS + TMA_PARAMS + [("ws", P), ("dp", I32), ("pieces", I32)])
GemmArgsTmaEpi, GEMM_TMA_EPI_OFFSETS = arg_block("GemmArgsTmaEpi", GEMM_PARAMS + TMA_PARAMS + EPI_PARAMS)
GemmArgsTmaWsEpi, GEMM_TMA_WS_EPI_OFFSETS = arg_block(
    "GemmArgsTmaWsEpi", GEMM_PARAMS + TMA_PARAMS + [("ws", P), ("dp", I32), ("pieces", I32)] + EPI_PARAMS)
GemmArgsTmaBatch, GEMM_TMA_BATCH_OFFSETS = arg_block("GemmArgsTmaBatch",
                                                    GEMM_PARAMS + TMA_PARAMS + WALK_BATCH_PARAMS)
GemmArgsTmaBatchEpi, GEMM_TMA_BATCH_EPI_OFFSETS = arg_block(
    "GemmArgsTmaBatchEpi", GEMM_PARAMS + TMA_PARAMS + WALK_BATCH_PARAMS + EPI_PARAMS)
# util/split_reduce.cu's split_reduce
ReduceArgs, REDUCE_OFFSETS = arg_block("ReduceArgs", [
    ("M", I), ("N", I), ("split", I), ("ws", P), ("alpha", F), ("beta", F),
    ("C", P), ("sCm", L), ("sCn", L)])


def _packer(cls, offsets, tail: tuple[str, ...] = ()):
    """pack(*values): packed() of a new `cls` holding `values` in the order of GEMM_PARAMS and
    `tail`, its tensor maps (if any) zeros until set_tensor_maps writes them per call."""
    names = [f for f, _ in GEMM_PARAMS] + list(tail)
    pointers = ctypes.c_void_p * len(offsets)

    def pack(*values):      # (packed(), inlined: a new signature's launch packs once)
        args = cls(**dict(zip(names, values)))
        base = ctypes.addressof(args)
        ptrs = pointers(*[base + o for o in offsets])
        return (args, ptrs), ctypes.addressof(ptrs)
    pack.sizes = cls.param_sizes
    return pack


# the plain signature; with a batch (a batched kernel's plain entries); with a stream-K entry's (ws, tile0) or a split's (ws, split_k) after
# it; with the tensor maps of A and B; with the maps and the tail's (ws, dp, pieces)
pack_gemm_args = _packer(GemmArgs, GEMM_OFFSETS)
pack_gemm_args_batch = _packer(GemmArgsBatch, GEMM_BATCH_OFFSETS, tuple(f for f, _ in BATCH_PARAMS))
pack_gemm_args_batch_epi = _packer(GemmArgsBatchEpi, GEMM_BATCH_EPI_OFFSETS,
                                   tuple(f for f, _ in BATCH_PARAMS))
pack_gemm_args_ws = _packer(GemmArgsWs, GEMM_WS_OFFSETS, ("ws", "tile0"))
pack_gemm_args_ws_epi = _packer(GemmArgsWsEpi, GEMM_WS_EPI_OFFSETS, ("ws", "tile0"))
pack_gemm_args_tma = _packer(GemmArgsTma, GEMM_TMA_OFFSETS)
pack_gemm_args_tma_ws = _packer(GemmArgsTmaWs, GEMM_TMA_WS_OFFSETS, ("ws", "dp", "pieces"))
pack_gemm_args_tma_epi = _packer(GemmArgsTmaEpi, GEMM_TMA_EPI_OFFSETS)
pack_gemm_args_tma_ws_epi = _packer(GemmArgsTmaWsEpi, GEMM_TMA_WS_EPI_OFFSETS, ("ws", "dp", "pieces"))
pack_gemm_args_tma_batch = _packer(GemmArgsTmaBatch, GEMM_TMA_BATCH_OFFSETS,
                                   tuple(f for f, _ in WALK_BATCH_PARAMS))
pack_gemm_args_tma_batch_epi = _packer(GemmArgsTmaBatchEpi, GEMM_TMA_BATCH_EPI_OFFSETS,
                                       tuple(f for f, _ in WALK_BATCH_PARAMS))


def set_tensor_maps(args, tma_a: bytes, tma_b: bytes) -> None:
    """Overwrite the tensor maps of a packed argument block (pack_gemm_args_tma's struct)."""
    ctypes.memmove(ctypes.addressof(args.tma_a), tma_a, TMA_MAP_BYTES)
    ctypes.memmove(ctypes.addressof(args.tma_b), tma_b, TMA_MAP_BYTES)


def pack_reduce_args(m, n, split, scm, scn):
    """The argument block of split_reduce with the pointers and alpha/beta still zero."""
    return packed(ReduceArgs(m, n, split, 0, 0.0, 0.0, 0, scm, scn), REDUCE_OFFSETS)


pack_reduce_args.sizes = ReduceArgs.param_sizes


def set_epilogue(args, values: EpiValues | None) -> None:
    """Write a fused epilogue's run-time half into a packed argument block (an *_epi
    packer's struct); None: no epilogue (zeros)."""
    args.epi = EpiArgs() if values is None else EpiArgs(*values)

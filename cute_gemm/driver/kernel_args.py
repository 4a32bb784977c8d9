"""The kernels' argument blocks, packed once with ctypes: the void*[] cuLaunchKernel takes,
pointing into one struct per launch configuration whose pointer and scalar fields a call
rewrites. No driver calls here (launch.py launches them)."""
from __future__ import annotations

import ctypes
from collections import namedtuple

TMA_MAP_BYTES = 128     # sizeof(CUtensorMap): the kernel parameter CG_TMA_PARAMS passes
I, I32, L, P, F = ctypes.c_int, ctypes.c_int32, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_float


def arg_block(name: str, fields: list, doc: str = ""):
    """(a ctypes struct of a kernel's parameters, in order; their offsets in it). param_sizes:
    each parameter's bytes, checked against the cubin's own before a launch (launch.Site)."""
    cls = type(name, (ctypes.Structure,), {"__doc__": doc, "_fields_": fields,
                                           "param_sizes": tuple(ctypes.sizeof(t) for _, t in fields)})
    return cls, tuple(getattr(cls, f).offset for f, _ in fields)


def packed(args, offsets: tuple[int, ...]):
    """(keepalive, address of the void*[] the driver wants) for `args` (a ctypes struct, or one
    ctypes scalar) and its parameters' offsets; keepalive[0] is the struct a call rewrites."""
    base = ctypes.addressof(args)
    ptrs = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
    return (args, ptrs), ctypes.addressof(ptrs)


# the one kernel signature (include/cute_gemm/common.cuh, CG_GEMM_PARAMS), then what some
# entry points take after it (common.cuh, streamk.cuh, sm90_tail_split.cuh, epilogue.cuh)
GEMM_PARAMS = [("M", I), ("N", I), ("K", I), ("alpha", F),
               ("A", P), ("sAm", L), ("sAk", L), ("B", P), ("sBk", L), ("sBn", L),
               ("beta", F), ("C", P), ("sCm", L), ("sCn", L)]
# CG_BATCH_PARAMS: a batched kernel's entries on their own grid
BATCH_PARAMS = [("Lin", I32), ("z0", I32), ("bA0", L), ("bA1", L), ("bB0", L), ("bB1", L),
                ("bC0", L), ("bC1", L)]
# a persistent kernel's batched twins (c6's NAME_b), after the tensor maps: the problems they
# walk and the batch strides (A's and B's also in their 4-D maps)
WALK_BATCH_PARAMS = [("problems", I32)] + [p for p in BATCH_PARAMS if p[0] != "z0"]
WS_PARAMS = [("ws", P), ("tile0", I32)]                  # a stream-K twin's (or a split's)
CUT_PARAMS = [("ws", P), ("dp", I32), ("pieces", I32)]   # a cut walk's
# CG_TMA_PARAMS: the maps of A and B (the driver copies each to the kernel's own 64-byte
# aligned offset, so they need no alignment here); set per call by set_tensor_maps
TMA_PARAMS = [("tma_a", ctypes.c_ubyte * TMA_MAP_BYTES), ("tma_b", ctypes.c_ubyte * TMA_MAP_BYTES)]
# cg::EpiArgs, a fused kernel's last parameter (Kernel.fused): the vectors of a fused epilogue,
# their element strides, the clamp's bounds, 8-bit operands' block scales; zeros for none
EPI_FIELDS = [("bias", P), ("bias_sm", I32), ("bias_sn", I32), ("srow", P), ("scol", P),
              ("srow_s", I32), ("scol_s", I32), ("lo", F), ("hi", F), ("blk_a", P), ("blk_b", P),
              ("blk_a_sm", I32), ("blk_a_sk", I32), ("blk_b_sk", I32), ("blk_b_sn", I32)]
EpiArgs, _ = arg_block("EpiArgs", EPI_FIELDS)
EPI_PARAMS = [("epi", EpiArgs)]


class EpiValues(namedtuple("EpiValues", [f for f, _ in EPI_FIELDS],
                           defaults=[0.0 if t is F else 0 for _, t in EPI_FIELDS])):
    """EpiArgs' fields in its order, in the caller's rows and columns: a fused epilogue's
    run-time half."""
    __slots__ = ()

    def but(self, **fields) -> "EpiValues":
        """These values with `fields` changed."""
        return self._replace(**fields)

    def pointing(self, ptrs) -> tuple:
        """EpiArgs' fields with another call's vector pointers (bias, srow, scol, blk_a,
        blk_b): the hot path's, positional (a fresh tuple, no keyword handling)."""
        (bias, srow, scol, blk_a, blk_b), v = ptrs, self
        return (bias, v.bias_sm, v.bias_sn, srow, scol, v.srow_s, v.scol_s, v.lo, v.hi, blk_a, blk_b,
                v.blk_a_sm, v.blk_a_sk, v.blk_b_sk, v.blk_b_sn)


def _block(name: str, *tails: list):
    """(struct, offsets, pack) of GEMM_PARAMS then `tails`. pack(*values): packed() of a new
    struct holding `values` in the order of its fields but the tensor maps and EpiArgs, which
    stay zero until set_tensor_maps and set_epilogue write them per call."""
    fields = GEMM_PARAMS + [p for tail in tails for p in tail]
    cls, offsets = arg_block(name, fields)
    names = [f for f, _ in fields if f not in ("tma_a", "tma_b", "epi")]

    def pack(*values):
        return packed(cls(**dict(zip(names, values))), offsets)
    pack.sizes = cls.param_sizes
    return cls, offsets, pack


GemmArgs, GEMM_OFFSETS, pack_gemm_args = _block("GemmArgs")
GemmArgsEpi, GEMM_EPI_OFFSETS, pack_gemm_args_epi = _block("GemmArgsEpi", EPI_PARAMS)
GemmArgsBatch, GEMM_BATCH_OFFSETS, pack_gemm_args_batch = _block("GemmArgsBatch", BATCH_PARAMS)
GemmArgsBatchEpi, GEMM_BATCH_EPI_OFFSETS, pack_gemm_args_batch_epi = _block(
    "GemmArgsBatchEpi", BATCH_PARAMS, EPI_PARAMS)
GemmArgsWs, GEMM_WS_OFFSETS, pack_gemm_args_ws = _block("GemmArgsWs", WS_PARAMS)
GemmArgsWsEpi, GEMM_WS_EPI_OFFSETS, pack_gemm_args_ws_epi = _block("GemmArgsWsEpi", WS_PARAMS, EPI_PARAMS)
GemmArgsTma, GEMM_TMA_OFFSETS, pack_gemm_args_tma = _block("GemmArgsTma", TMA_PARAMS)
GemmArgsTmaWs, GEMM_TMA_WS_OFFSETS, pack_gemm_args_tma_ws = _block("GemmArgsTmaWs", TMA_PARAMS, CUT_PARAMS)
GemmArgsTmaEpi, GEMM_TMA_EPI_OFFSETS, pack_gemm_args_tma_epi = _block("GemmArgsTmaEpi", TMA_PARAMS, EPI_PARAMS)
GemmArgsTmaWsEpi, GEMM_TMA_WS_EPI_OFFSETS, pack_gemm_args_tma_ws_epi = _block(
    "GemmArgsTmaWsEpi", TMA_PARAMS, CUT_PARAMS, EPI_PARAMS)
GemmArgsTmaBatch, GEMM_TMA_BATCH_OFFSETS, pack_gemm_args_tma_batch = _block(
    "GemmArgsTmaBatch", TMA_PARAMS, WALK_BATCH_PARAMS)
GemmArgsTmaBatchEpi, GEMM_TMA_BATCH_EPI_OFFSETS, pack_gemm_args_tma_batch_epi = _block(
    "GemmArgsTmaBatchEpi", TMA_PARAMS, WALK_BATCH_PARAMS, EPI_PARAMS)
# the packer of a launch, by what follows the GEMM's arguments and whether EpiArgs ends them
# (launcher.Launcher)
PACKERS = {("", False): pack_gemm_args, ("", True): pack_gemm_args_epi,
           ("batch", False): pack_gemm_args_batch, ("batch", True): pack_gemm_args_batch_epi,
           ("ws", False): pack_gemm_args_ws, ("ws", True): pack_gemm_args_ws_epi,
           ("tma", False): pack_gemm_args_tma, ("tma", True): pack_gemm_args_tma_epi,
           ("tma_ws", False): pack_gemm_args_tma_ws, ("tma_ws", True): pack_gemm_args_tma_ws_epi,
           ("tma_batch", False): pack_gemm_args_tma_batch,
           ("tma_batch", True): pack_gemm_args_tma_batch_epi}
# util/split_reduce.cu's split_reduce
ReduceArgs, REDUCE_OFFSETS = arg_block("ReduceArgs", [
    ("M", I), ("N", I), ("split", I), ("ws", P), ("alpha", F), ("beta", F),
    ("C", P), ("sCm", L), ("sCn", L)])


def set_tensor_maps(args, tma_a: bytes, tma_b: bytes) -> None:
    """Overwrite the tensor maps of a packed argument block (pack_gemm_args_tma's struct)."""
    ctypes.memmove(ctypes.addressof(args.tma_a), tma_a, TMA_MAP_BYTES)
    ctypes.memmove(ctypes.addressof(args.tma_b), tma_b, TMA_MAP_BYTES)


def pack_reduce_args(m, n, split, scm, scn):
    """The argument block of split_reduce with the pointers and alpha/beta still zero."""
    return packed(ReduceArgs(m, n, split, 0, 0.0, 0.0, 0, scm, scn), REDUCE_OFFSETS)


pack_reduce_args.sizes = ReduceArgs.param_sizes


def set_epilogue(args, values: EpiValues | None) -> None:
    """Write a fused epilogue's run-time half into an *_epi packer's struct; None: zeros."""
    args.epi = EpiArgs() if values is None else EpiArgs(*values)

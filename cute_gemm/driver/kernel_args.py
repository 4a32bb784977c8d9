"""The kernels' argument blocks, packed once with ctypes: the void*[] cuLaunchKernel takes,
pointing into one struct per launch configuration whose pointer and scalar fields a call
rewrites. No driver calls here (launch.py launches them)."""
from __future__ import annotations

import ctypes

TMA_MAP_BYTES = 128     # sizeof(CUtensorMap): the kernel parameter CG_TMA_PARAMS passes


class _GemmArgs(ctypes.Structure):
    """The one kernel signature (include/cute_gemm/common.cuh, CG_GEMM_PARAMS)."""
    _fields_ = [("M", ctypes.c_int), ("N", ctypes.c_int), ("K", ctypes.c_int),
                ("alpha", ctypes.c_float),
                ("A", ctypes.c_void_p), ("sAm", ctypes.c_longlong), ("sAk", ctypes.c_longlong),
                ("B", ctypes.c_void_p), ("sBk", ctypes.c_longlong), ("sBn", ctypes.c_longlong),
                ("beta", ctypes.c_float),
                ("C", ctypes.c_void_p), ("sCm", ctypes.c_longlong), ("sCn", ctypes.c_longlong)]


_OFFSETS = tuple(getattr(_GemmArgs, name).offset for name, _ in _GemmArgs._fields_)
_PtrArray = ctypes.c_void_p * len(_OFFSETS)


def packed(args, offsets: tuple[int, ...]):
    """(keepalive, address of the void*[] the driver wants) for one argument block: `args`
    (a ctypes struct, or one ctypes scalar) and the offsets of its parameters in it."""
    base = ctypes.addressof(args)
    ptrs = (ctypes.c_void_p * len(offsets))(*[base + o for o in offsets])
    return (args, ptrs), ctypes.addressof(ptrs)


def pack_gemm_args(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn):
    """Return (keepalive, address of the void*[] the driver wants)."""
    s = _GemmArgs(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn)
    base = ctypes.addressof(s)
    ptrs = _PtrArray(*[base + o for o in _OFFSETS])
    return (s, ptrs), ctypes.addressof(ptrs)


class _GemmArgsWs(ctypes.Structure):
    """CG_GEMM_PARAMS + float* ws + int tile0: the persistent stream-K entry points."""
    _fields_ = _GemmArgs._fields_ + [("ws", ctypes.c_void_p), ("tile0", ctypes.c_int32)]


_OFFSETS_WS = tuple(getattr(_GemmArgsWs, name).offset for name, _ in _GemmArgsWs._fields_)
_PtrArrayWs = ctypes.c_void_p * len(_OFFSETS_WS)


def pack_gemm_args_ws(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn, ws, tile0=0):
    """pack_gemm_args with a stream-K entry point's workspace pointer and first tile appended."""
    s = _GemmArgsWs(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn, ws, tile0)
    base = ctypes.addressof(s)
    ptrs = _PtrArrayWs(*[base + o for o in _OFFSETS_WS])
    return (s, ptrs), ctypes.addressof(ptrs)


class _TmaMap(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * TMA_MAP_BYTES)]


class _GemmArgsTma(ctypes.Structure):
    """CG_GEMM_PARAMS_T + CG_TMA_PARAMS: the two tensor maps after the plain arguments. The
    driver copies each argument from its pointer into the parameter space at the kernel's own
    (64-byte aligned) offset, so the maps need no alignment here."""
    _fields_ = _GemmArgs._fields_ + [("tma_a", _TmaMap), ("tma_b", _TmaMap)]


_OFFSETS_TMA = tuple(getattr(_GemmArgsTma, name).offset for name, _ in _GemmArgsTma._fields_)
_PtrArrayTma = ctypes.c_void_p * len(_OFFSETS_TMA)


def set_tensor_maps(args, tma_a: bytes, tma_b: bytes) -> None:
    """Overwrite the tensor maps of a packed argument block (pack_gemm_args_tma's struct)."""
    ctypes.memmove(ctypes.addressof(args.tma_a), tma_a, TMA_MAP_BYTES)
    ctypes.memmove(ctypes.addressof(args.tma_b), tma_b, TMA_MAP_BYTES)


def pack_gemm_args_tma(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn,
                       tma_a: bytes = bytes(TMA_MAP_BYTES), tma_b: bytes = bytes(TMA_MAP_BYTES)):
    """pack_gemm_args with the tensor maps of A and B appended (128 bytes each; zeros until
    set_tensor_maps writes them per call): returns (keepalive, address); keepalive[0] is the
    struct."""
    s = _GemmArgsTma(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn)
    set_tensor_maps(s, tma_a, tma_b)
    base = ctypes.addressof(s)
    ptrs = _PtrArrayTma(*[base + o for o in _OFFSETS_TMA])
    return (s, ptrs), ctypes.addressof(ptrs)


class _GemmArgsTmaWs(ctypes.Structure):
    """CG_GEMM_PARAMS_T + CG_TMA_PARAMS + float* ws, int dp, int pieces: a persistent entry
    whose last wave may be cut along K (include/cute_gemm/sm90_tail_split.cuh)."""
    _fields_ = _GemmArgsTma._fields_ + [("ws", ctypes.c_void_p), ("dp", ctypes.c_int32),
                                        ("pieces", ctypes.c_int32)]


_OFFSETS_TMA_WS = tuple(getattr(_GemmArgsTmaWs, name).offset for name, _ in _GemmArgsTmaWs._fields_)
_PtrArrayTmaWs = ctypes.c_void_p * len(_OFFSETS_TMA_WS)


def pack_gemm_args_tma_ws(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn,
                          ws=0, dp=0, pieces=1):
    """pack_gemm_args_tma with the tail's workspace pointer and cut (dp, pieces) appended."""
    s = _GemmArgsTmaWs(m, n, k, alpha, a, sam, sak, b, sbk, sbn, beta, c, scm, scn)
    s.ws, s.dp, s.pieces = ws, dp, pieces
    base = ctypes.addressof(s)
    ptrs = _PtrArrayTmaWs(*[base + o for o in _OFFSETS_TMA_WS])
    return (s, ptrs), ctypes.addressof(ptrs)


class _ReduceArgs(ctypes.Structure):
    """util/split_reduce.cu's split_reduce: (M, N, split, ws, alpha, beta, C, sCm, sCn)."""
    _fields_ = [("M", ctypes.c_int), ("N", ctypes.c_int), ("split", ctypes.c_int),
                ("ws", ctypes.c_void_p), ("alpha", ctypes.c_float), ("beta", ctypes.c_float),
                ("C", ctypes.c_void_p), ("sCm", ctypes.c_longlong), ("sCn", ctypes.c_longlong)]


_OFFSETS_REDUCE = tuple(getattr(_ReduceArgs, name).offset for name, _ in _ReduceArgs._fields_)


def pack_reduce_args(m, n, split, scm, scn):
    """The argument block of split_reduce with the pointers and alpha/beta still zero:
    (keepalive, address); keepalive[0] is the struct a call rewrites."""
    return packed(_ReduceArgs(m, n, split, 0, 0.0, 0.0, 0, scm, scn), _OFFSETS_REDUCE)

"""cute_3xtf32 without a GPU: the composed record (range and split passes, a promoted fp16 GEMM
reading three products per chunk of the split's two parts, then the finish and fix passes),
what run() asks of the driver for it (a stub driver records it, tests/stub_driver.py:
allocations, the passes, the range-flag read, the GEMM on the split operands, frees after),
the range-check fallback and its warning, graph capture, and the bench's cuBLAS peer. On a
GPU: test_3xtf32_gpu.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import api, execute, registry
from cute_gemm.errors import CaptureError, CudaError, PrecisionFallbackWarning
from cute_gemm.perf.schema import CUBLAS_PEER, cublas_label
from cute_gemm.perf.shapes import native_layout
from cute_gemm.perf.stats import precision_peaks
from cute_gemm.perf.runner import parse_precisions
from stub_driver import Dev, gemm_args, pass_args

K3 = registry.get("cute_3xtf32")


def test_the_record_says_what_it_is_composed_of():
    g = K3.gemm_of
    assert (K3.family, K3.archs, K3.precisions) == ("cute", ("sm_90a",), ("fp32_3xtf32",))
    assert K3.computes("fp32_3xtf32", "float32") and not K3.computes("fp32", "float32")
    assert [v.entry for v in K3.variants] == [f"cute_3xtf32_{p}" for p in (
        "range_a", "range_b", "split_a", "split_b", "norms_b", "finish", "fix", "refine")]
    assert all((v.a_major, v.b_major, v.c_major) == ("any",) * 3 for v in K3.variants)
    gemm = g.kernel
    assert (gemm.name, g.precision, g.k_parts, g.k_reads) == ("cute_3xtf32_gemm", "fp16", 2, 3)
    assert gemm.config.promote > 0 and gemm.precisions == ("fp16",)
    # a chunk of the split is one fp16 k-tile of the GEMM (64 k), stored as two parts, read as
    # three products, and a promotion window is one chunk: the accumulator is promoted right
    # after each chunk's big·big k-tile
    assert g.k_chunk == gemm.config.k_bytes // 2 == 64 and gemm.config.promote == g.k_reads
    assert gemm.config.split_parts == g.k_parts and gemm.grid.window_bytes == 2 * 2 * g.k_chunk
    # it reads A' and B' as no plain GEMM does: nobody calls it by name, yet it is compiled
    assert gemm.name not in registry.names() and gemm in registry.compiled()
    assert registry.find(gemm.name) is gemm
    with pytest.raises(cute_gemm.UnknownKernelError):
        registry.get(gemm.name)
    # the same configuration, registered in tf32, is a plain GEMM
    plain = registry.get("cute_wgmma_ws_promote").config
    assert dataclasses.replace(gemm.config, split_parts=0) == plain
    # the GEMM takes the split's k-major A' and B' (fp16) as they are, float out; the
    # fallback is fp32
    assert [(v.entry, v.out_dtype, bool(v.tma)) for v in gemm.variants] == [
        ("cute_wgmma_ws_fp16_f32_ak_bk", "float32", True)]
    assert "fp32" in registry.get(g.fallback).precisions
    assert (K3.min_arch, K3.arch_specific) == (gemm.min_arch, gemm.arch_specific)
    assert all(k.gemm_of is None for k in registry.kernels() if k is not K3)


def test_k_is_cut_so_that_three_k_fits_one_launch():
    # whole chunks of 64, each read as 3 k-tiles (the GEMM's count of them is 32-bit)
    kmax = registry.EXTENT_MAX // 192 * 64 // 256 * 256
    assert K3.launch_extents(5, 7, 3 * 10**9) == (5, 7, kmax)
    assert K3.launch_extents(5, 7, kmax) == (5, 7, kmax)
    assert registry.get("cute_wgmma_ws").launch_extents(5, 7, 3 * kmax)[2] == 3 * kmax
    assert K3.grid.of(2**40, 2**40) == (registry.GRID_X_MAX, registry.GRID_YZ_MAX, 1)
    assert K3.grid(100, 1, 33) == (4, 2, 1)


def _events(kind, events):
    return [e for e in events if e[0] == kind]


# (A strides, B strides) in bytes for M x K and K x N, per layout: "t" = transposed view
def _operands(layout, m, n, k):
    sa = (4 * k, 4) if layout[0] == "n" else (4, 4 * m)
    sb = (4 * n, 4) if layout[1] == "n" else (4, 4 * k)
    return Dev((m, k), 0x1000_0000, strides=sa), Dev((k, n), 0x2000_0000, strides=sb)


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_passes_then_the_fp16_gemm_on_k_major_operands_then_frees(monkeypatch, layout):
    """Every layout is one range and one split pass per operand (no relayout copy), B's
    split first and its squares summed (norms) before A's, which reads them: A' = M rows and
    B' = N columns of K' = 2 * 64 * ceil(K / 64) halves (two parts per chunk of 64), the row
    maxima, counts, flags and marked rows zeroed; the flags' copy queued behind the splits;
    the GEMM's fp16 k-major entry with K' on A' and B' into scratch W (alpha 1, beta 0); then
    finish (rows of T from W, C and A's residuals, marking the rows whose sum cancels), fix
    (B's residuals) and refine (the marked rows); the host waits for the flags last; every
    allocation freed after."""
    events = stub_driver.install(monkeypatch)
    m, n, k = 70, 50, 37                       # 1 chunk: K' = 128
    a, b = _operands(layout, m, n, k)
    out = Dev((m, n), 0x3000_0000)
    api.run("cute_3xtf32", a, b, out=out, alpha=1.5)
    kp = 128
    kinds = [e[0] for e in events]
    allocs = _events("alloc", events)
    aux, sq, pa, pb, w = (x[1] for x in allocs)
    ny = 2                                     # the split's CTAs along K (37 = 2 tiles of 32)
    words = 2 * (m + n) + 1 + m + 1            # rmax, inexact, flags, marked rows and their count
    assert [x[2] for x in allocs] == [4 * words, 8 * (2 * k + k + m * ny), 2 * m * kp,
                                      2 * n * kp, 4 * m * n]
    assert ("memset", aux, words, 0) in events
    rmax, inexact, flags = aux, aux + 4 * (m + n), aux + 8 * (m + n)
    marked, b_sums, norms, a_sums = flags + 4, sq, sq + 8 * 2 * k, sq + 8 * 3 * k
    passes = [(e[1][len("cute_3xtf32_"):], pass_args(e)) for e in stub_driver.launches(events)
              if stub_driver.pass_of(e[1])]
    assert [p for p, _ in passes] == ["range_a", "range_b", "split_b", "norms_b", "split_a",
                                      "finish", "fix", "refine"]
    ra, rb, sb, nb, sa, fin, fix, ref = (x for _, x in passes)
    # strides in elements along (rows, k): A as it is, B transposed
    stra, strb = tuple(x // 4 for x in a.strides), tuple(x // 4 for x in b.strides[::-1])
    assert (ra.R, ra.K, ra.src, (ra.sr, ra.sk), ra.rmax, ra.flags) == (m, k, a.ptr, stra, rmax, flags)
    assert (rb.R, rb.K, rb.src, (rb.sr, rb.sk), rb.rmax, rb.flags) == (n, k, b.ptr, strb, rmax + 4 * m, flags)
    assert (sa.R, sa.K, sa.dst, sa.ld, sa.rmax, sa.inexact) == (m, k, pa, kp, rmax, inexact)
    assert (sb.R, sb.K, sb.dst, sb.ld, sb.rmax, sb.inexact) == (n, k, pb, kp, rmax + 4 * m, inexact + 4 * m)
    # B's squares per tile of 32 columns and k (2 tiles of n = 50), added up per k, read by A's
    assert (sb.norms, sb.sums) == (None, b_sums) and (sa.norms, sa.sums) == (norms, a_sums)
    assert (nb.R, nb.K, nb.sums, nb.norms) == (n, k, b_sums, norms)
    (gemm,) = stub_driver.launches(events, "gemm")
    g = gemm_args(gemm[4])
    assert gemm[1] == "cute_wgmma_ws_fp16_f32_ak_bk"
    assert (g.M, g.N, g.K, g.A, g.B, g.C, g.alpha, g.beta) == (m, n, kp, pa, pb, w, 1.0, 0.0)
    assert (g.sAm, g.sAk, g.sBk, g.sBn) == (kp, 1, 1, kp)
    # the TMA maps describe A' (K', M) and B' (K', N) with K' * 2 bytes between rows
    assert [e[1:4] for e in _events("tmap", events)] == [(pa, (kp, m), 2 * kp),
                                                         (pb, (kp, n), 2 * kp)]
    assert (fin.M, fin.N, fin.K, fin.A, fin.B, fin.W, fin.ldw, fin.T, fin.alpha, fin.beta,
            fin.flags) == (m, n, k, a.ptr, b.ptr, w, n, out.ptr, 1.5, 0.0, flags)
    assert (fin.sums, fin.ny, fin.marked) == (a_sums, ny, marked)
    assert (fix.M, fix.N, fix.K, fix.T, fix.alpha, fix.flags, fix.marked) == (
        m, n, k, out.ptr, 1.5, flags, marked)
    assert (ref.M, ref.N, ref.K, ref.A, ref.B, ref.C, ref.T, ref.alpha, ref.beta, ref.flags,
            ref.marked) == (m, n, k, a.ptr, b.ptr, None, out.ptr, 1.5, 0.0, flags, marked)
    assert ((ref.sam, ref.sak), (ref.sbk, ref.sbn)) == (stra, strb[::-1])
    refine = next(e for e in stub_driver.launches(events, "refine"))
    assert refine[2] == (2, 1, 1)              # 64 x 128 tiles of T: 2 of M = 70, 1 of N = 50
    # the flags copied behind the splits, everything queued, then the wait for the copy alone
    i_flags, i_wait = kinds.index("dtoh"), kinds.index("event_sync")
    i_split, i_refine = (max(events.index(e) for e in stub_driver.launches(events, x))
                         for x in ("split", "refine"))
    assert events[i_flags][1] == flags and kinds[i_flags + 1] == "record" and "sync" not in kinds
    assert events[i_wait][1] == events[i_flags + 1][1]
    assert i_split < i_flags < events.index(gemm) < i_refine < i_wait
    frees = _events("free", events)
    assert sorted(f[1] for f in frees) == sorted((aux, sq, pa, pb, w))
    assert min(events.index(f) for f in frees) > i_refine
    assert not stub_driver.launches(events, "scale2d")


def test_in_place_c_and_beta_reach_the_finish_and_no_hot_path_is_kept(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b, c = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    for _ in range(2):
        api.run("cute_3xtf32", a, b, c, out=c, beta=-0.5)
        api.run("cute_3xtf32", a, b, out=c)
    fins = [pass_args(e) for e in stub_driver.launches(events, "finish")]
    assert [(f.C, f.T, f.beta) for f in fins] == [(c.ptr, c.ptr, -0.5), (None, c.ptr, 0.0)] * 2
    refs = [pass_args(e) for e in stub_driver.launches(events, "refine")]
    assert [(f.C, f.T, f.beta) for f in refs] == [(c.ptr, c.ptr, -0.5), (None, c.ptr, 0.0)] * 2
    assert all(gemm_args(e[4]).beta == 0.0 for e in stub_driver.launches(events, "gemm"))
    assert len(stub_driver.launches(events, "split")) == 8      # every call splits anew
    assert not api.CACHE.hot


def test_out_aliasing_an_input_is_computed_apart_then_copied(monkeypatch):
    events = stub_driver.install(monkeypatch)
    a, b = Dev((64, 64), 0x1000_0000), Dev((64, 64), 0x2000_0000)
    api.run("cute_3xtf32", a, b, out=a)
    (f,) = [pass_args(e) for e in stub_driver.launches(events, "finish")]
    (cp,) = [stub_driver.scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
    tmp = _events("alloc", events)[0][1]
    assert f.T == tmp and (cp.src, cp.dst) == (tmp, a.ptr)
    assert sorted(f[1] for f in _events("free", events)) == sorted(x[1] for x in _events("alloc", events))


def test_k_past_one_launch_is_cut_and_accumulated(monkeypatch):
    """K with K' past EXTENT_MAX: pieces of whole chunks, K' <= EXTENT_MAX, each split on its own and
    added to what the piece before left in C (zero-stride operands: a few bytes)."""
    events = stub_driver.install(monkeypatch)
    kk = registry.EXTENT_MAX // 2
    a, b = Dev((2, kk), 0x10000, strides=(0, 0)), Dev((kk, 3), 0x20000, strides=(0, 0))
    out = Dev((2, 3), 0x30000)
    api.run("cute_3xtf32", a, b, out=out)
    gs = [gemm_args(e[4]) for e in stub_driver.launches(events, "gemm")]
    splits = [pass_args(e) for e in stub_driver.launches(events, "split")]
    fins = [pass_args(e) for e in stub_driver.launches(events, "finish")]
    assert len(gs) == 2 and sum(g.K for g in gs) == 2 * kk
    assert all(g.K <= registry.EXTENT_MAX for g in gs) and [f.beta for f in fins] == [0.0, 1.0]
    assert [s.K for s in splits[::2]] == [g.K // 2 for g in gs]
    refs = [pass_args(e) for e in stub_driver.launches(events, "refine")]
    assert [(f.K, f.C, f.beta) for f in refs] == [(g.K // 2, f.C, f.beta) for g, f in zip(gs, fins)]


@pytest.mark.parametrize("word,which", [
    (1, "a holds magnitudes"), (2, "b holds magnitudes"), (3, "a and b hold magnitudes"),
    (4, "a holds ±Inf"), (8, "b holds ±Inf"), (12, "a and b hold ±Inf"),
    (9, "a holds magnitudes.*; b holds ±Inf")])
def test_inputs_the_split_cannot_represent_fall_back_to_fp32_with_a_warning(monkeypatch, word, which):
    """The pre-pass flags A (bit 0) or B (bit 1) with magnitudes the fp16 split cannot carry,
    or (bits 2, 3) with ±Inf: the passes that write the output do nothing then (they read
    the flags on the device), so C is as it was and the fp32 fallback (cute_pipelined),
    queued after the host read the flags, computes from A, B and the in-place C; the
    scratch is freed all the same."""
    events = stub_driver.install(monkeypatch)
    events.device_word = word
    a, b, c = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    with pytest.warns(PrecisionFallbackWarning, match=f"cute_3xtf32: {which}.*cute_pipelined"):
        api.run("cute_3xtf32", a, b, c, out=c, beta=2.0)
    fp16, gemm = stub_driver.launches(events, "gemm")
    g = gemm_args(gemm[4])
    assert fp16[1] == "cute_wgmma_ws_fp16_f32_ak_bk" and gemm[1].startswith("cute_pipelined_")
    assert events.index(gemm) > [e[0] for e in events].index("event_sync")
    assert (g.A, g.B, g.C, g.beta, g.K) == (a.ptr, b.ptr, c.ptr, 2.0, 32)
    assert sorted(f[1] for f in _events("free", events)) == sorted(x[1] for x in _events("alloc", events))


@pytest.mark.parametrize("in_place", [False, True], ids=["apart", "in-place"])
def test_everything_is_queued_before_the_flags_are_read(monkeypatch, in_place):
    """In place or not, the passes, the GEMM (into scratch) and the passes that write the
    output go out before the host waits for the flags; a flagged call's fallback then
    computes the output from A, B and C, which the skipped passes left untouched."""
    events = stub_driver.install(monkeypatch)
    events.device_word = 2
    a, b, c = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    out = c if in_place else Dev((64, 48), 0x4000_0000)
    with pytest.warns(PrecisionFallbackWarning, match="b holds magnitudes"):
        api.run("cute_3xtf32", a, b, c, out=out, beta=0.5)
    kinds = [e[0] for e in events]
    gemms = stub_driver.launches(events, "gemm")
    read = kinds.index("event_sync")
    assert [e[1].split("_")[1] for e in gemms] == ["wgmma", "pipelined"]
    assert events.index(gemms[0]) < max(events.index(e) for e in stub_driver.launches(events, "fix")) < read
    assert events.index(gemms[1]) > read
    # the fallback updates the output in place, C copied into it first (apart) from C itself
    copies = stub_driver.launches(events, "scale2d")
    assert len(copies) == (0 if in_place else 1)
    for cp in copies:
        x = stub_driver.scale_args(cp[4])
        assert (x.src, x.dst) == (c.ptr, out.ptr) and events.index(cp) > read
    g = gemm_args(gemms[1][4])
    assert (g.C, g.beta) == (out.ptr, 0.5)
    assert sorted(f[1] for f in _events("free", events)) == sorted(x[1] for x in _events("alloc", events))


def test_a_flag_word_whose_gemm_failed_is_waited_for_before_it_is_reused(monkeypatch):
    """The GEMM's launch fails after the flags' copy was queued: the next call (another
    stream) waits for that copy before it copies into the same pinned word, so the stale
    copy cannot land over the new one."""
    events = stub_driver.install(monkeypatch)
    a, b, out = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    gemm, launched = registry.get("cute_3xtf32").gemm_of.kernel, execute.gemm_device

    def failing(k, *args, **kw):
        if k is gemm:
            raise CudaError("the GEMM's launch failed")
        return launched(k, *args, **kw)
    monkeypatch.setattr(execute, "gemm_device", failing)
    with pytest.raises(CudaError):
        api.run("cute_3xtf32", a, b, out=out, stream=5)
    assert [e[0] for e in events].count("dtoh") == 1 and "event_sync" not in [e[0] for e in events]
    monkeypatch.setattr(execute, "gemm_device", launched)
    del events[:]
    api.run("cute_3xtf32", a, b, out=out, stream=7)
    kinds = [e[0] for e in events]
    assert kinds.index("event_sync") < kinds.index("dtoh") and kinds.count("event_sync") == 2


def test_graph_capture_is_refused_before_anything_is_enqueued(monkeypatch):
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(type(execute.launch._drv()), "cuStreamIsCapturing", lambda self, h: (0, 1))
    a, b, out = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    with pytest.raises(CaptureError, match="cute_3xtf32.*range check.*'cute_pipelined'"):
        api.run("cute_3xtf32", a, b, out=out, stream=5)
    assert not [e for e in events if e[0] in ("alloc", "launch", "memset", "dtoh")]


def test_float32_operands_default_to_it_and_tf32_stays_by_name():
    from cute_gemm.arrays import parse
    from test_validation import FakeCAI
    a, b = parse("a", FakeCAI((3, 4))), parse("b", FakeCAI((4, 5)))
    assert api._precision(a, b, None, None, None, K3) == ("fp32_3xtf32", "float32")
    assert api._precision(a, b, None, None, None, registry.get("cute_pipelined"))[0] == "fp32"
    assert api._precision(a, b, None, None, None, registry.get("cute_wgmma_ws"))[0] == "fp32"
    assert api._precision(a, b, None, None, "fp32_3xtf32")[0] == "fp32_3xtf32"


def test_bench_times_it_beside_sgemm():
    assert CUBLAS_PEER["fp32_3xtf32"] == "fp32"
    assert cublas_label("fp32_3xtf32") == "cuBLAS fp32 (peer of fp32_3xtf32)"
    assert cublas_label("bf16") == "cuBLAS bf16"
    assert "fp32_3xtf32" in parse_precisions("all") and parse_precisions("fp32_3xtf32") == ("fp32_3xtf32",)
    assert all(native_layout(K3, 4096, 4096, 4096, lay, "fp32_3xtf32") for lay in registry.LAYOUTS)
    peaks = precision_peaks(60.0, 90)
    assert peaks["fp32_3xtf32"] == pytest.approx(peaks["fp16"] / 3)


def test_k_prime_is_whole_chunks_of_two_parts():
    g = K3.gemm_of
    for k, kp in ((1, 128), (4, 128), (64, 128), (65, 256), (128, 256), (129, 384)):
        assert g.k_prime(k) == kp
        assert 2 * kp % 16 == 0               # fp16 rows 16 bytes apart (TMA strides), no pad


def test_host_inputs_take_the_same_path(monkeypatch):
    """numpy operands are uploaded, then split, checked and multiplied as device ones."""
    events = stub_driver.install(monkeypatch)

    class Buf:
        def __init__(self, nbytes, ordinal=0):
            self.ptr = 0x5000_0000 + 0x100_0000 * len(_events("upload", events))
            events.append(("upload", self.ptr, nbytes))

        def close(self):
            pass
    monkeypatch.setattr(execute.launch, "DeviceBuffer", Buf)
    monkeypatch.setattr(execute.launch, "memcpy_htod", lambda *a: None)
    monkeypatch.setattr(execute.launch, "check_last", lambda *a: None)
    monkeypatch.setattr(execute.launch, "current_ordinal", lambda: 0)
    a = np.ones((20, 9), np.float32)
    b = np.ones((9, 11), np.float32)
    cute_gemm.run("cute_3xtf32", a, b)
    assert [e[1] for e in stub_driver.launches(events)] == [
        "cute_3xtf32_range_a", "cute_3xtf32_range_b", "cute_3xtf32_split_b",
        "cute_3xtf32_norms_b", "cute_3xtf32_split_a", "cute_wgmma_ws_fp16_f32_ak_bk",
        "cute_3xtf32_finish", "cute_3xtf32_fix", "cute_3xtf32_refine"]


def test_a_partial_last_wave_is_cut_along_k_with_a_workspace(monkeypatch):
    """4096^3: the GEMM's 352 units (128 x 192 tiles, clusters of 2) on 66 clusters leave 22
    for a sixth round; they are cut in 3 along K (sm90_tail_split.cuh): one launch of 132
    CTAs, its workspace's counters zeroed once, (dp, pieces) = (330, 3) in its arguments.
    With stream-K off (CUTE_GEMM_STREAM_K=0) nothing is cut."""
    from cute_gemm import resolve, workspace
    for on in (True, False):
        events = stub_driver.install(monkeypatch)
        if on:
            monkeypatch.delenv("CUTE_GEMM_STREAM_K")
        monkeypatch.setattr(workspace, "_free", [])
        a, b = Dev((4096, 4096), 0x1000_0000), Dev((4096, 4096), 0x2000_0000)
        out = Dev((4096, 4096), 0x3000_0000)
        api.run("cute_3xtf32", a, b, out=out)
        (plan,) = [p for p in resolve.resolved_launches() if p.kernel == "cute_3xtf32_gemm"]
        (gemm,) = stub_driver.launches(events, "gemm")
        assert gemm[2] == plan.grid == (132, 1, 1) and plan.shape == (4096, 4096, 2 * 4096)
        if on:
            assert plan.tail_split == (330, 3) and plan.workspace_bytes == 4 * 8192 + 8 * 44 * 3 * 128 * 192
            (ws,) = _events("alloc_ws", events)
            assert ws[2] >= plan.workspace_bytes
            assert ("memset", ws[1], 8192, 0) in events              # its counters, once
        else:
            assert plan.tail_split == (352, 1) and plan.workspace_bytes == 0
            assert not _events("alloc_ws", events)

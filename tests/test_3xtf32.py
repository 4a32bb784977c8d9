"""cute_3xtf32 without a GPU: the composed record (range and split passes, a promoted fp16 GEMM
reading three products per chunk of the split's two parts, then the finish, fix and refine
passes), what run() asks of the driver for it (a stub driver records it, tests/stub_driver.py:
one scratch allocation, the passes, the GEMM on the split operands, the free after; no host
wait, flagged inputs or not), the signature hot path, graph capture, and the bench's cuBLAS
peer. On a GPU: test_3xtf32_gpu.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import api, driver, registry
from cute_gemm.plan import composed, execute
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
    assert dataclasses.replace(gemm.config, split_parts=0, only="tf32") == plain
    # the GEMM takes the split's k-major A' and B' (fp16) as they are, float out
    assert [(v.entry, v.out_dtype, bool(v.tma)) for v in gemm.variants] == [
        ("cute_wgmma_ws_fp16_f32_ak_bk", "float32", True)]
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


def _carved(sizes):
    """Offsets of pieces of these sizes in one allocation, each on a 256-byte boundary."""
    offs, at = [], 0
    for x in sizes:
        offs.append(at)
        at += -(-x // 256) * 256
    return offs, at


@pytest.mark.parametrize("layout", registry.LAYOUTS)
def test_passes_then_the_fp16_gemm_on_k_major_operands_then_frees(monkeypatch, layout):
    """Every layout is one range and one split pass per operand (no relayout copy), B's
    split first and its squares summed (norms) before A's, which reads them: A' = M rows and
    B' = N columns of K' = 2 * 64 * ceil(K / 64) halves (two parts per chunk of 64), the row
    maxima, counts, flags and marked rows zeroed; the GEMM's fp16 k-major entry with K' on
    A' and B' into scratch W (alpha 1, beta 0); then finish (rows of T from W, C and A's
    residuals, marking the rows whose sum cancels, or every row where the flags are set),
    fix (B's residuals) and refine (the marked rows). All scratch is one stream-ordered
    allocation, freed after the last pass; the host neither waits nor reads anything back."""
    events = stub_driver.install(monkeypatch)
    m, n, k = 70, 50, 37                       # 1 chunk: K' = 128
    a, b = _operands(layout, m, n, k)
    out = Dev((m, n), 0x3000_0000)
    api.run("cute_3xtf32", a, b, out=out, alpha=1.5)
    kp = 128
    ny = 2                                     # the split's CTAs along K (37 = 2 tiles of 32)
    words = 2 * (m + n) + 1 + m + 1            # rmax, inexact, flags, marked rows and their count
    (offs, nbytes) = _carved([4 * words, 8 * (2 * k + k + m * ny), 2 * m * kp, 2 * n * kp,
                              4 * m * n])
    ((_, base, size, stream),) = _events("alloc", events)
    assert size == nbytes and stream == 0
    aux, sq, pa, pb, w = (base + o for o in offs)
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
    assert (sa.src, (sa.sr, sa.sk), sb.src, (sb.sr, sb.sk)) == (a.ptr, stra, b.ptr, strb)
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
            fin.flags, fin.C) == (m, n, k, a.ptr, b.ptr, w, n, out.ptr, 1.5, 0.0, flags, None)
    assert (fin.sums, fin.ny, fin.marked, fin.rmax, fin.inexact) == (
        a_sums, ny, marked, rmax, inexact)
    assert (fix.M, fix.N, fix.K, fix.T, fix.alpha, fix.flags, fix.marked) == (
        m, n, k, out.ptr, 1.5, flags, marked)
    assert (ref.M, ref.N, ref.K, ref.A, ref.B, ref.C, ref.T, ref.alpha, ref.beta,
            ref.marked) == (m, n, k, a.ptr, b.ptr, None, out.ptr, 1.5, 0.0, marked)
    assert ((ref.sam, ref.sak), (ref.sbk, ref.sbn)) == (stra, strb[::-1])
    refine = next(e for e in stub_driver.launches(events, "refine"))
    assert refine[2] == (2, 1, 1)              # 64 x 128 tiles of T: 2 of M = 70, 1 of N = 50
    assert not events.host_waits()
    (free,) = _events("free", events)
    assert free[1:] == (base, 0) and events.index(free) > events.index(refine)
    assert not stub_driver.launches(events, "scale2d")


def test_in_place_c_and_beta_reach_the_passes_and_repeat_calls_take_the_hot_path(monkeypatch):
    """C in place with beta, then no C: finish and refine read C from T itself (null with
    beta == 0). Each signature is prepared once (composed.Composed, like a Launcher) and
    remembered by run()'s hot path: the repeat calls resolve nothing and launch the same
    passes with their own alpha and beta, each with one allocation and one free."""
    events = stub_driver.install(monkeypatch)
    built = []

    class Counted(composed.Composed):
        __slots__ = ()

        def __init__(self, *args, **kw):
            built.append(args[0].name)
            super().__init__(*args, **kw)
    monkeypatch.setattr(execute, "Composed", Counted)
    full = []

    def counted(*args, **kw):
        full.append(1)
        return execute.gemm_device(*args, **kw)
    monkeypatch.setattr(api, "gemm_device", counted)
    a, b, c = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    for _ in range(2):
        api.run("cute_3xtf32", a, b, c, out=c, beta=-0.5)
        api.run("cute_3xtf32", a, b, out=c)
    # (c as out is the call without c: one signature, beta an argument of the launch)
    assert built == ["cute_3xtf32"] and len(api.CACHE.hot) == 1 and len(full) == 1
    fins = [pass_args(e) for e in stub_driver.launches(events, "finish")]
    assert [(f.C, f.T, f.beta) for f in fins] == [(c.ptr, c.ptr, -0.5), (None, c.ptr, 0.0)] * 2
    refs = [pass_args(e) for e in stub_driver.launches(events, "refine")]
    assert [(f.C, f.T, f.beta) for f in refs] == [(c.ptr, c.ptr, -0.5), (None, c.ptr, 0.0)] * 2
    assert all(gemm_args(e[4]).beta == 0.0 for e in stub_driver.launches(events, "gemm"))
    assert len(stub_driver.launches(events, "split")) == 8      # every call splits anew
    assert len(_events("alloc", events)) == len(_events("free", events)) == 4
    assert not events.host_waits()


def test_c_apart_is_copied_into_the_output_which_the_passes_update(monkeypatch):
    """A C other than the output: copied into it first (as for any kernel), then finish and
    refine read it there: T's rows that refine computes read C as it was."""
    events = stub_driver.install(monkeypatch)
    a, b = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000)
    c, out = Dev((64, 48), 0x3000_0000), Dev((64, 48), 0x4000_0000)
    api.run("cute_3xtf32", a, b, c, out=out, beta=0.5)
    (cp,) = [stub_driver.scale_args(e[4]) for e in stub_driver.launches(events, "scale2d")]
    assert (cp.src, cp.dst) == (c.ptr, out.ptr)
    (fin,), (ref,) = ([pass_args(e) for e in stub_driver.launches(events, x)]
                      for x in ("finish", "refine"))
    assert (fin.C, fin.T, fin.beta) == (ref.C, ref.T, ref.beta) == (out.ptr, out.ptr, 0.5)
    assert events.index(stub_driver.launches(events, "scale2d")[0]) < events.index(
        stub_driver.launches(events, "finish")[0])


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


def test_no_host_wait_and_no_warning_whatever_the_inputs(monkeypatch, recwarn):
    """Whether the pre-pass flags the inputs (±Inf, subnormals, magnitudes the split cannot
    carry) is known only on the device, and only the device acts on it (finish marks every
    row, refine computes them in float64: test_3xtf32_gpu.py): a call queues the same work
    either way, with no copy to the host, no synchronization and no warning."""
    events = stub_driver.install(monkeypatch)
    a, b, c = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    api.run("cute_3xtf32", a, b, c, out=c, beta=2.0, stream=5)
    kinds = [e[0] for e in events]
    assert kinds.count("alloc") == kinds.count("free") == 1 and kinds.count("memset") == 1
    assert [e[1] for e in stub_driver.launches(events)] == [
        "cute_3xtf32_range_a", "cute_3xtf32_range_b", "cute_3xtf32_split_b",
        "cute_3xtf32_norms_b", "cute_3xtf32_split_a", "cute_wgmma_ws_fp16_f32_ak_bk",
        "cute_3xtf32_finish", "cute_3xtf32_fix", "cute_3xtf32_refine"]
    assert all(e[3] == 5 for e in stub_driver.launches(events))
    assert not events.host_waits() and not recwarn.list


def test_a_failed_gemm_launch_still_frees_the_scratch(monkeypatch):
    """The GEMM's launch fails after the pre-pass was queued: the error reaches the caller
    and the one scratch allocation is freed in stream order all the same."""
    events = stub_driver.install(monkeypatch)
    a, b, out = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)

    def failing(self, s, stream):
        raise cute_gemm.CudaError("the GEMM's launch failed")
    monkeypatch.setattr(composed.Composed, "product", failing)
    with pytest.raises(cute_gemm.CudaError):
        api.run("cute_3xtf32", a, b, out=out, stream=5)
    (alloc,), (free,) = _events("alloc", events), _events("free", events)
    assert free[1:] == (alloc[1], 5) and not stub_driver.launches(events, "finish")


def test_graph_capture_queues_the_same_work(monkeypatch):
    """Inside a CUDA graph capture the call is what it is outside one: the allocation, the
    memset, the passes and the GEMM, and the free, all on the capturing stream."""
    events = stub_driver.install(monkeypatch)
    a, b, out = Dev((64, 32), 0x1000_0000), Dev((32, 48), 0x2000_0000), Dev((64, 48), 0x3000_0000)
    events.capturing = True
    api.run("cute_3xtf32", a, b, out=out, stream=5)
    captured = [e for e in events if e[0] in ("launch", "alloc", "memset", "free")]
    assert [e[0] for e in captured if e[0] != "launch"] == ["alloc", "memset", "free"]
    assert all(e[-1] == 5 for e in captured if e[0] != "launch")
    assert all(e[3] == 5 for e in captured if e[0] == "launch")
    assert not events.host_waits()
    events.capturing = False
    del events[:]
    api.run("cute_3xtf32", a, b, out=out, stream=5)
    assert [e[:2] for e in events if e[0] == "launch"] == [e[:2] for e in captured
                                                           if e[0] == "launch"]


def test_float32_operands_default_to_it_and_tf32_stays_by_name():
    from cute_gemm.driver.arrays import parse
    from test_validation import FakeCAI
    a, b = parse("a", FakeCAI((3, 4))), parse("b", FakeCAI((4, 5)))
    assert api.call_precision(a, b, None, None, None, K3) == ("fp32_3xtf32", "float32")
    assert api.call_precision(a, b, None, None, None, registry.get("cute_pipelined"))[0] == "fp32"
    assert api.call_precision(a, b, None, None, None, registry.get("cute_wgmma_ws"))[0] == "fp32"
    assert api.call_precision(a, b, None, None, "fp32_3xtf32")[0] == "fp32_3xtf32"


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
    """numpy operands are uploaded, then split and multiplied as device ones."""
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
    monkeypatch.setattr(driver, "current_ordinal", lambda: 0)
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
    from cute_gemm.driver import workspace
    from cute_gemm.plan import resolve
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

"""gemm()'s stand-in on the CPU, through a stub driver (tests/stub_driver.py): while the
pick's launch compiles (the stub's `compiling`), the quick kernel answers in fp32, for
every precision (16-bit operands widened, a 16-bit result rounded once, a composed pick's
two parts), no hot entry is kept, the pick's compile begins once; a capture runs the
stand-in until the pick is loaded (a composed pick raises there); standin.stand_in's rule.
No NVRTC compile."""
from __future__ import annotations

import pytest

import cute_gemm
import stub_driver
from cute_gemm import registry
from cute_gemm.driver import launch
from cute_gemm.plan import execute, resolve
from cute_gemm.select import auto, standin

pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


def _stub(monkeypatch):
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    return events


def test_a_pick_still_compiling_gives_the_call_to_the_stand_in_and_never_the_hot_path(monkeypatch):
    """Quick first call (standin.stand_in): while the pick's launch compiles (the stub's
    `compiling`), gemm() runs the "quick" kernel, begins the pick's compile once it has,
    and keeps no hot entry; once the pick is compiled, the pick runs and goes hot. A named
    kernel never has a stand-in, nor does gemm() with CUTE_GEMM_FIRST_CALL=wait."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    events.compiling = frozenset({"cute_pipelined"})
    quick, _ = standin.stand_in(registry.get("cute_pipelined"), "fp32", "float32", 90)
    assert standin.QUICK in quick.tags
    m, n, k = 300, 260, 96
    a, b, c = (stub_driver.Dev((m, k), 0x1000000), stub_driver.Dev((k, n), 0x2000000),
               stub_driver.Dev((m, n), 0x3000000))
    assert cute_gemm.gemm_choice(m, n, k).kernel == "cute_pipelined"
    for alpha in (1.5, 2.0):
        cute_gemm.gemm(a, b, out=c, alpha=alpha)
    g = stub_driver.launches(events, "gemm")
    assert [e[1] for e in g] == [quick.variants[0].entry] * 2
    s = stub_driver.gemm_args(g[-1][4])
    assert (s.M, s.N, s.K, s.alpha, s.A, s.B, s.C) == (m, n, k, 2.0, 0x1000000, 0x2000000, 0x3000000)
    behind = [e for e in events if e[0] == "behind"]
    assert behind and all(e[1] == "cute_pipelined" for e in behind)
    assert not any(sig[0] == "auto" for sig in resolve.CACHE.hot)
    cute_gemm.run("cute_pipelined", a, b, out=c)                 # by name: the kernel itself
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "wait")
    cute_gemm.gemm(a, b, out=c)
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    events.compiling = frozenset()                              # the background compile ended
    cute_gemm.gemm(a, b, out=c, alpha=3.0)
    cute_gemm.gemm(a, b, out=c, alpha=4.0)
    pick = registry.get("cute_pipelined").entries
    assert all(e[1] in pick for e in stub_driver.launches(events, "gemm")[2:])
    assert len(stub_driver.launches(events, "gemm")) == 6
    assert any(sig[0] == "auto" for sig in resolve.CACHE.hot)
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "later")
    a2, c2 = stub_driver.Dev((m + 1, k), 0x4000000), stub_driver.Dev((m + 1, n), 0x5000000)
    with pytest.raises(cute_gemm.InputError, match="CUTE_GEMM_FIRST_CALL"):
        cute_gemm.gemm(a2, b, out=c2)               # (a new signature: off the hot path)


def test_a_tf32_call_whose_pick_compiles_runs_the_stand_in_in_fp32(monkeypatch):
    """tf32 reads float32 operands: while its tensor-core pick compiles, the quick kernel
    answers in fp32 (a smaller unit roundoff than tf32's); then the pick runs in tf32."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    m, n, k = 300, 260, 96
    choice = cute_gemm.gemm_choice(m, n, k, precision="tf32")
    pick = registry.get(choice.kernel)
    assert "tensor-core" in pick.tags or pick.name == "cute_mma_sm80"
    quick, _ = standin.stand_in(pick, "tf32", "float32", 90)
    events.compiling = frozenset({pick.name})
    a, b, c = (stub_driver.Dev((m, k), 0x1000000), stub_driver.Dev((k, n), 0x2000000),
               stub_driver.Dev((m, n), 0x3000000))
    cute_gemm.gemm(a, b, out=c, precision="tf32")
    events.compiling = frozenset()
    cute_gemm.gemm(a, b, out=c, precision="tf32")
    got = [e[1] for e in stub_driver.launches(events, "gemm")]
    fp32 = [v.entry for v in quick.variants if v.precision == "fp32"]
    tf32 = [v.entry for v in pick.variants if v.precision == "tf32"]
    assert got[0] in fp32 and got[1:] and all(e in tf32 for e in got[1:])


@pytest.mark.parametrize("half_out", [False, True])
def test_a_16_bit_call_whose_pick_compiles_runs_the_stand_in_on_widened_copies(monkeypatch,
                                                                               half_out):
    """fp16 operands: while the tensor-core pick compiles, the quick kernel answers in fp32
    on copies of A and B widened to float32 (exact, one launch), into out, or for a float16 out
    into a float32 copy of C (widened in the same launch) rounded into out once; then the pick runs on the operands themselves.
    Where those copies cannot be had, the call waits for its pick instead."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    m, n, k = 300, 260, 96
    ob = 2 if half_out else 4
    a = stub_driver.Dev((m, k), 0x1000000, (2 * k, 2), "<f2")
    b = stub_driver.Dev((k, n), 0x2000000, (2, 2 * k), "<f2")    # k-major: the pick takes it
    c = stub_driver.Dev((m, n), 0x3000000, (ob * n, ob), "<f2" if half_out else "<f4")
    out_dtype = "float16" if half_out else "float32"
    pick = registry.get(cute_gemm.gemm_choice(m, n, k, layout="nt", precision="fp16",
                                              out_dtype=out_dtype).kernel)
    quick, precision = standin.stand_in(pick, "fp16", out_dtype, 90)
    events.compiling = frozenset({pick.name})
    cute_gemm.gemm(a, b, c, beta=0.5, out=c)
    got = stub_driver.launches(events)
    widen, narrow = resolve.UTIL_ENTRY["float16", "float32"], resolve.UTIL_ENTRY["float32", "float16"]
    # A, B (and C) widened in one launch
    assert [e[1] for e in got] == ([widen, quick.variants[0].entry, narrow] if half_out
                                   else [widen, quick.variants[0].entry])
    s = stub_driver.gemm_args(got[-2 if half_out else -1][4])
    copies = [x for e in got if e[1] in (widen, narrow) for x in stub_driver.copies_of(e[4])]
    assert [x.src for x in copies[:2]] == [a.ptr, b.ptr] and (s.A, s.B) == tuple(x.dst for x in copies[:2])
    assert (s.M, s.N, s.K, s.beta) == (m, n, k, 0.5)
    if half_out:        # C widened into W, the GEMM updates W, W rounded into out
        assert copies[2].src == c.ptr and s.C == copies[2].dst == copies[3].src != c.ptr
        assert copies[3].dst == c.ptr
    else:
        assert s.C == c.ptr
    assert any(e[0] == "behind" and e[1] == pick.name for e in events)
    events.compiling = frozenset()
    del events[:]
    cute_gemm.gemm(a, b, c, beta=0.5, out=c)
    (g,) = stub_driver.launches(events, "gemm")
    s = stub_driver.gemm_args(g[4])
    assert g[1] in pick.entries and (s.A, s.B) == (a.ptr, b.ptr)
    # no scratch for the widened copies: the call compiles its pick and runs it, no stand-in
    def no_memory(*a, **kw):
        raise cute_gemm.CudaError("cuMemAllocFromPoolAsync failed: CUDA_ERROR_OUT_OF_MEMORY")
    monkeypatch.setattr(execute, "_temp", no_memory)
    events.compiling = frozenset({pick.name})
    del events[:]
    cute_gemm.gemm(a, b, c, beta=0.5, out=c)
    assert [e[1] for e in stub_driver.launches(events)] == [g[1]]
    assert not any(e[0] == "behind" for e in events)


def test_a_composed_pick_compiling_gives_the_call_to_the_stand_in_but_a_capture_the_pick(monkeypatch):
    """fp32_3xtf32 (cute_3xtf32: a pre-pass, then its fp16 GEMM on A' and B'): while
    either compiles, the quick kernel answers in fp32 (the same gauge) and no pass runs;
    the compile of both begins; then the composed kernel runs. Inside a capture, as for a
    plain pick, the composed kernel runs (its modules load in the relaxed capture mode)."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    m, n, k = 300, 260, 96
    monkeypatch.setattr(auto, "CONTRACT_LOG2_FLOP", 20)     # fp32_3xtf32 by its own kernel
    pick = registry.get(cute_gemm.gemm_choice(m, n, k, precision="fp32_3xtf32").kernel)
    assert pick.gemm_of is not None
    quick, _ = standin.stand_in(pick, "fp32_3xtf32", "float32", 90)
    a, b, c = (stub_driver.Dev((m, k), 0x1000000), stub_driver.Dev((k, n), 0x2000000),
               stub_driver.Dev((m, n), 0x3000000))
    for compiling in ({pick.gemm_of.kernel.name}, {pick.name}):
        events.compiling = frozenset(compiling)
        del events[:]
        cute_gemm.gemm(a, b, out=c, precision="fp32_3xtf32")
        assert [e[1] for e in stub_driver.launches(events)] == [quick.variants[0].entry]
        assert {e[1] for e in events if e[0] == "behind"} == set(compiling)
        events.capturing = True     # a capture holds the pick, compiled there if need be
        del events[:]
        cute_gemm.gemm(a, b, out=c, precision="fp32_3xtf32")
        assert stub_driver.launches(events, "split") and not any(
            e[1] == quick.variants[0].entry for e in stub_driver.launches(events))
        events.capturing = False
        cute_gemm.clear_caches()
    events.compiling = frozenset()
    del events[:]
    cute_gemm.gemm(a, b, out=c, precision="fp32_3xtf32")
    assert stub_driver.launches(events, "split") and not any(
        e[1] == quick.variants[0].entry for e in stub_driver.launches(events))


def test_a_capture_holds_the_pick_never_the_stand_in(monkeypatch):
    """Every replay of a graph runs what its capture holds: a call inside a capture whose pick
    is not loaded yet loads it there (launch.get_function: in the relaxed capture mode,
    which a module load needs) and launches it, never the stand-in that the call before the capture ran."""
    events = _stub(monkeypatch)
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    quick, _ = standin.stand_in(registry.get("cute_pipelined"), "fp32", "float32", 90)
    m, n, k = 300, 260, 96
    a, b = stub_driver.Dev((m, k), 0x1000000), stub_driver.Dev((k, n), 0x2000000)
    outs = [stub_driver.Dev((m, n), 0x3000000 + (i << 20)) for i in range(2)]
    events.compiling = frozenset({"cute_pipelined"})
    cute_gemm.gemm(a, b, out=outs[0])                           # the stand-in
    events.compiling = frozenset()
    events.capturing = True
    cute_gemm.gemm(a, b, out=outs[1])                           # the pick, loaded in the capture
    pick = registry.get("cute_pipelined").entries
    got = [e[1] for e in stub_driver.launches(events, "gemm")]
    assert got[0] == quick.variants[0].entry and len(got) == 2 and got[1] in pick


def test_the_stand_in_and_when_there_is_none(monkeypatch):
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    pick = registry.get("cute_pipelined")
    quick, precision = standin.stand_in(pick, "fp32", "float32", 90)
    assert quick.name == "v9_warptile" and quick.gemm_of is None and precision == "fp32"
    assert [x.name for x in registry.kernels() if standin.QUICK in x.tags] == [quick.name]
    assert standin.stand_in(quick, "fp32", "float32", 90) is None           # not itself
    # tf32, bf16 and fp16 take fp32: a smaller unit roundoff, on float32 operands (16-bit
    # ones widened exactly), into float32 (rounded once into a 16-bit result)
    ws = registry.get("cute_wgmma_ws")
    assert standin.stand_in(ws, "tf32", "float32", 90) == (quick, "fp32")
    assert standin.stand_in(registry.get("cute_mma_sm80"), "tf32", "float32", 80) == (quick, "fp32")
    for p, out in (("bf16", "float32"), ("bf16", "bfloat16"), ("fp16", "float16")):
        assert standin.stand_in(ws, p, out, 90) == (quick, "fp32")
    assert standin.stand_in(registry.get("cute_3xtf32"), "fp32_3xtf32", "float32", 90) == (quick, "fp32")
    with standin.waiting():
        assert standin.first_call() == "wait" and standin.stand_in(pick, "fp32", "float32", 90) is None
    assert standin.first_call() == "quick"
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", " WAIT ")
    assert standin.stand_in(pick, "fp32", "float32", 90) is None

"""GPU tests of gemm() (run("auto")): cross-checked against float64 on odd shapes in every
operand layout, in fp32 and on tensor cores, with the heuristic and with the tables
installed; exact integers bit for bit against the kernel it picked; the hot path gives the
same bits; a pick of the transposed problem (forced by a table) is right in every layout,
in place and from numpy; with nothing compiled, the first calls run the stand-in while
the pick compiles behind them. Skipped without a GPU."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
from cute_gemm import driver, registry
from cute_gemm.driver import launch
from cute_gemm.plan import resolve
from cute_gemm.select import auto, autotable, standin
from cute_gemm.driver.arrays import DeviceArray, narrow, widen
from cute_gemm.select.autotable import Measured, Table
from cute_gemm.check import cross_check, gauge_ratio, reference, unit

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1, 1), (7, 9, 3), (129, 67, 33), (257, 383, 129), (1000, 1300, 700)]
LAYOUTS = ["nn", "tn", "nt", "tt"]


@pytest.fixture
def tables(tmp_path, monkeypatch):
    """No tune table (the heuristic), or one written by the test: `tables(rows)`. Calls
    run their picks (CUTE_GEMM_FIRST_CALL=wait): these tests are about the picks."""
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "wait")
    monkeypatch.setattr(autotable, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setattr(autotable, "tuned_path", lambda gpu, version=None: tmp_path / "tuned.json")
    cute_gemm.clear_caches()

    def write(rows):
        info = launch.device_info()
        autotable.write(Table(info.name, info.arch, autotable.tune_version(), rows=rows),
                        tmp_path / "tuned.json")
        cute_gemm.clear_caches()
    yield write
    cute_gemm.clear_caches()


def _precisions():
    arch = launch.device_info().arch_int if cute_gemm.gpu_available() else 90
    return [p for p in ("fp32", "bf16", "tf32") if cute_gemm.select.auto.offers(p, None, arch)]


def _ok(rep):
    assert rep.ok and rep.shapes, "\n" + rep.table()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("precision", ["fp32", "bf16", "tf32"])
@pytest.mark.parametrize("installed", [False, True], ids=["heuristic", "installed-tables"])
def test_gemm_cross_checked_in_every_layout(precision, layout, installed, tables, monkeypatch):
    if precision not in _precisions():
        pytest.skip(f"gemm() has no {precision} kernel for {launch.device_info().arch}")
    if installed:           # the tuned and shipped tables as they are on this machine
        monkeypatch.undo()
        cute_gemm.clear_caches()
    _ok(cross_check(kernels=["auto"], shapes=SHAPES, precision=precision, layout=layout,
                    alpha=1.5, beta=-0.5, seed=5))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_exact_integers_equal_the_picked_kernel_bit_for_bit(layout, tables):
    for prec in _precisions():
        picked = cute_gemm.gemm_choice(257, 383, 129, layout=layout, precision=prec).kernel
        rep = cross_check(kernels=["auto", picked], shapes=[(257, 383, 129), (64, 200, 1000)],
                          exact=True, precision=prec, layout=layout, seed=1)
        _ok(rep)


def test_the_hot_path_gives_the_same_bits(tables):
    rng = np.random.default_rng(0)
    m, n, k = 333, 222, 111
    a, b = (rng.standard_normal(s, dtype=np.float32) for s in ((m, k), (k, n)))
    dA, dB = DeviceArray.from_host(a), DeviceArray.from_host(b)
    outs = [DeviceArray((m, n)) for _ in range(3)]
    try:
        choice = cute_gemm.gemm_choice(m, n, k)
        for _ in range(2):       # resolves (a process's first call knows no device count yet)
            cute_gemm.gemm(dA, dB, out=outs[0])
        assert any(sig[0] == registry.AUTO for sig in resolve.CACHE.hot)
        cute_gemm.run("auto", dA, dB, out=outs[1])             # the hot path
        cute_gemm.run(choice.kernel, dA, dB, out=outs[2])
        got = [o.to_host() for o in outs]
        assert got[0].tobytes() == got[1].tobytes() == got[2].tobytes()
    finally:
        for x in [dA, dB] + outs:
            x.close()


def _transposed_everywhere(tables, precision="fp32"):
    """A table whose only row makes every call of `precision` (nearest row, any layout it
    lists) run its candidate on the transposed problem."""
    kernel = cute_gemm.select.auto.candidates(precision, arch_int=launch.device_info().arch_int)[0].name
    tables([Measured(300, 200, 100, lay, True, precision,
                     {kernel: 2.0, kernel + autotable.TRANSPOSED: 1.0}) for lay in LAYOUTS])
    return kernel


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_transposed_pick_is_right_in_every_layout(layout, tables):
    kernel = _transposed_everywhere(tables)
    c = cute_gemm.gemm_choice(129, 67, 33, layout=layout)
    assert c.transposed and c.kernel == kernel and c.source == "nearest"
    _ok(cross_check(kernels=["auto"], shapes=SHAPES, layout=layout, alpha=0.75, beta=2.0, seed=7))
    _ok(cross_check(kernels=["auto", kernel], shapes=[(257, 383, 129)], exact=True, layout=layout,
                    precision="fp32"))


def test_a_transposed_pick_in_place_and_from_numpy(tables):
    _transposed_everywhere(tables)
    rng = np.random.default_rng(1)
    m, n, k = 203, 101, 77
    a = rng.integers(-8, 9, (m, k)).astype(np.float32)
    b = rng.integers(-8, 9, (k, n)).astype(np.float32)
    c = rng.integers(-8, 9, (m, n)).astype(np.float32)
    want = 2.0 * (a.astype(np.float64) @ b) - 3.0 * c
    assert np.array_equal(cute_gemm.gemm(a, b, c, alpha=2.0, beta=-3.0), want)     # numpy
    dA, dB, dC = DeviceArray.from_host(a), DeviceArray.from_host(b), DeviceArray.from_host(c)
    try:
        assert cute_gemm.gemm(dA, dB, dC, out=dC, alpha=2.0, beta=-3.0) is dC        # in place
        assert np.array_equal(dC.to_host(), want)
    finally:
        for x in (dA, dB, dC):
            x.close()


@pytest.mark.parametrize("precision,dtype,out,own", [
    ("fp32", "float32", "float32", False), ("tf32", "float32", "float32", False),
    ("bf16", "bfloat16", "float32", False), ("fp16", "float16", "float16", False),
    ("fp32_3xtf32", "float32", "float32", False), ("fp32_3xtf32", "float32", "float32", True)])
def test_a_cold_first_call_runs_the_stand_in_then_the_pick(tmp_cache, monkeypatch, precision,
                                                           dtype, out, own):
    """Nothing cached, CUTE_GEMM_FIRST_CALL unset: gemm() answers at once with the quick
    kernel in fp32 (run()'s bits of it on the operands widened to float32, rounded once
    into a 16-bit result; within the gauge of the precision asked for) while the pick
    compiles in the background; after wait_for_compiles(), it gives the pick's bits (and
    goes hot where its launch needs no relayout). own: fp32_3xtf32 by its own kernel
    (cute_3xtf32, a composed pick), not SIMT fp32."""
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    if own:
        monkeypatch.setattr(auto, "CONTRACT_LOG2_FLOP", 0)
    cute_gemm.clear_caches()
    rng = np.random.default_rng(3)
    m, n, k = 333, 222, 1111
    a, b = (widen(narrow(rng.standard_normal(s, dtype=np.float32), dtype), dtype)
            for s in ((m, k), (k, n)))                      # the values the kernels see
    dA, dB = (DeviceArray.from_host(x, dtype=dtype) for x in (a, b))
    wA, wB = DeviceArray.from_host(a), DeviceArray.from_host(b)
    nan = np.full((m, n), np.nan, np.float32)
    outs = [DeviceArray.from_host(nan, dtype=out) for _ in range(4)] + [DeviceArray.from_host(nan)]
    try:
        choice = cute_gemm.gemm_choice(m, n, k, precision=precision, out_dtype=out)
        assert (registry.get(choice.kernel).gemm_of is not None) == own
        quick, quick_precision = standin.stand_in(
            registry.get(choice.kernel), precision, out, launch.device_info().arch_int)
        assert quick_precision == "fp32"
        cute_gemm.gemm(dA, dB, out=outs[0], precision=precision)
        cute_gemm.run(quick.name, wA, wB, out=outs[4], precision="fp32")
        picked = resolve.loaded(registry.get(choice.kernel), driver.current_ordinal())
        assert not any(sig[0] == registry.AUTO for sig in resolve.CACHE.hot)
        assert not picked.functions                                 # the pick has not run
        assert cute_gemm.wait_for_compiles(600)
        cute_gemm.gemm(dA, dB, out=outs[2], precision=precision)
        assert picked.functions                                     # now it has
        # hot, tf32's nn launch on its copy of B (K-major for wgmma) too (relayout.Relaid),
        # and a composed kernel's call (composed.Composed)
        assert any(sig[0] == registry.AUTO for sig in resolve.CACHE.hot)
        cute_gemm.api.run_choice(choice, dA, dB, out=outs[3], precision=precision)
        got = [o.to_host() for o in outs]                           # (widened to float32)
        assert got[0].tobytes() == widen(narrow(got[4], out), out).tobytes()
        assert got[2].tobytes() == got[3].tobytes()
        ref, gauge = reference(a, b, None, 1.0, 0.0)
        assert gauge_ratio(got[4], ref, gauge).max() < 16                   # fp32's bound
        for g in (got[0], got[2]):
            assert gauge_ratio(g, ref, gauge, unit(precision, out)).max() < 16
    finally:
        for x in [dA, dB, wA, wB] + outs:
            x.close()


def test_cold_first_calls_from_threads_each_on_its_own_stream(tmp_cache, monkeypatch):
    """Nothing cached, CUTE_GEMM_FIRST_CALL unset: 10 threads, each on a stream of its own,
    call gemm() at once, two per precision, while their picks compile behind them: every
    answer is within the gauge of the precision asked for, none raises, and once the
    compiles are done each pick runs."""
    import threading
    cp = pytest.importorskip("cupy")
    monkeypatch.delenv("CUTE_GEMM_FIRST_CALL", raising=False)
    cute_gemm.clear_caches()
    cases = [("fp32", "float32", "float32"), ("tf32", "float32", "float32"),
             ("fp32_3xtf32", "float32", "float32"), ("bf16", "bfloat16", "bfloat16"),
             ("fp16", "float16", "float32")] * 2
    shapes = [(333, 222, 1111), (130, 259, 70)]
    results: list = [None] * len(cases)
    start = threading.Barrier(len(cases))

    def worker(i, precision, dtype, out):
        arrays = []
        try:
            rng = np.random.default_rng(100 + i)
            m, n, k = shapes[i % 2]
            s = cp.cuda.Stream(non_blocking=True)
            a, b = (widen(narrow(rng.standard_normal(x, dtype=np.float32), dtype), dtype)
                    for x in ((m, k), (k, n)))
            c = widen(narrow(rng.standard_normal((m, n), dtype=np.float32), out), out)
            dA, dB = DeviceArray.from_host(a, dtype=dtype), DeviceArray.from_host(b, dtype=dtype)
            arrays += [dA, dB]
            ref, gauge = reference(a, b, c, 1.0, 0.5)
            start.wait()
            ratios = []
            for _ in range(4):
                dO = DeviceArray.from_host(np.full((m, n), np.nan, np.float32), dtype=out)
                dC = DeviceArray.from_host(c, dtype=out)
                arrays += [dO, dC]
                cute_gemm.gemm(dA, dB, dC, beta=0.5, out=dO, precision=precision, stream=s.ptr)
                got = dO.to_host(stream=s.ptr)
                ratios.append(float(gauge_ratio(got, ref, gauge, unit(precision, out)).max()))
            results[i] = ratios
        except Exception as e:   # noqa: BLE001 — reported by the test's thread
            results[i] = e
        finally:
            for x in arrays:
                x.close()

    threads = [threading.Thread(target=worker, args=(i, *case)) for i, case in enumerate(cases)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, list) and max(r) < 16 for r in results), results
    assert cute_gemm.wait_for_compiles(600)
    m, n, k = shapes[0]
    for precision, dtype, out in cases[:5]:     # now each pick runs
        pick = registry.get(cute_gemm.gemm_choice(m, n, k, precision=precision,
                                                  out_dtype=out).kernel)
        dA = DeviceArray.from_host(np.ones((m, k), np.float32), dtype=dtype)
        dB = DeviceArray.from_host(np.ones((k, n), np.float32), dtype=dtype)
        dO = DeviceArray.from_host(np.full((m, n), np.nan, np.float32), dtype=out)
        try:
            got = cute_gemm.gemm(dA, dB, out=dO, precision=precision).to_host()
            assert resolve.loaded(pick, driver.current_ordinal()).functions, precision
            # k ones: a float32 sum exact in every precision, rounded once into out
            assert np.all(got == widen(narrow(np.full((m, n), k, np.float32), out), out))
        finally:
            for x in (dA, dB, dO):
                x.close()

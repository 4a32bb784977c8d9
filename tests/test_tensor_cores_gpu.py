"""GPU tests of the tensor-core kernels: every precision and result type each offers, on
shapes that leave residues in every tile dimension, all four operand layouts, exact
integers bit for bit, NaN/Inf propagation, 16-bit arrays from PyTorch, misaligned views
(copied into aligned temporaries) and the named errors. Skipped without a GPU."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import cute_gemm
from cute_gemm import registry
from cute_gemm.base.precisions import PRECISION_DTYPE, PRECISION_DTYPE_B
from cute_gemm.driver import launch
from cute_gemm.driver.arrays import DeviceArray
from cute_gemm.check import as_given, cross_check, supported_kernels

pytestmark = pytest.mark.gpu

TC = [k.name for k in registry.kernels() if set(k.precisions) - {"fp32"}]
# residues in M, N and K against 64/128/256-wide tiles and 8/16/32/64-deep k-tiles; 384x520:
# interior tiles of 16-byte aligned 16-bit rows (C read in 16-byte blocks where beta != 0)
SHAPES = [(1, 1, 1), (7, 9, 3), (65, 129, 17), (127, 255, 33), (200, 72, 300),
          (257, 383, 129), (384, 520, 96), (1000, 1300, 700)]


def _combos():
    for name in TC:
        k = registry.get(name)
        for p in k.precisions:
            outs = sorted({v.out_dtype for v in k.variants if v.precision == p})
            for o in outs:
                yield name, p, o


COMBOS = list(_combos())


def _runnable(name: str) -> None:
    if name not in [k.name for k in supported_kernels()]:
        k = registry.get(name)
        pytest.skip(f"{name} needs sm_{k.min_arch}{'a' if k.arch_specific else '+'}; this GPU is "
                    f"{launch.device_info().arch}")


def _assert_ok(rep):
    assert rep.ok and rep.shapes, "\n" + rep.table()


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("name,precision,out", COMBOS)
def test_every_precision_layout_and_result_type(name, precision, out, layout):
    _runnable(name)
    _assert_ok(cross_check(kernels=[name], shapes=SHAPES, precision=precision, out_dtype=out,
                           layout=layout, alpha=1.5, beta=-0.5, seed=3))


@pytest.mark.parametrize("name,precision,out", COMBOS)
def test_exact_integers_bit_for_bit(name, precision, out):
    """Small integers are exact in every input type: the result is the exact sum, rounded
    once into a 16-bit result (the reference rounded the same way)."""
    _runnable(name)
    _assert_ok(cross_check(kernels=[name], shapes=[(97, 131, 257), (256, 128, 2048)], exact=True,
                           precision=precision, out_dtype=out, beta=1.0))


@pytest.mark.parametrize("name,precision,out", COMBOS)
def test_nan_and_inf_reach_their_row_and_column(name, precision, out, request):
    _runnable(name)
    if getattr(registry.get(name).config, "promote", 0) > 1:      # (8-bit sums: a plain add)
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "a promoted sum turns +-Inf into NaN (Fast2Sum's error term is Inf - Inf); "
            "cute_3xtf32 computes calls with Inf operands in float64, this GEMM run alone does not")))
    dt, dt_b = PRECISION_DTYPE[precision], PRECISION_DTYPE_B[precision]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((70, 90), dtype=np.float32)
    b = rng.standard_normal((90, 50), dtype=np.float32)
    a[3, 10] = np.nan
    b[20, 7] = np.inf
    assert np.all(a[:, 20] != 0)                     # so every other row of column 7 is +-inf
    dA, dB = DeviceArray.from_host(a, dtype=dt), DeviceArray.from_host(b, dtype=dt_b)
    dO = DeviceArray.full((70, 50), 0.0, dtype=out)
    try:
        cute_gemm.run(name, dA, dB, out=dO, precision=precision)
        c = dO.to_host()
    finally:
        for d in (dA, dB, dO):
            d.close()
    assert np.isnan(c[3]).all()                      # NaN * anything, and NaN + inf
    if not np.isinf(as_given(b[20:21, 7], dt_b)).all():   # float8_e4m3fn has no Inf: 448
        assert np.isfinite(np.delete(c, 3, axis=0)).all()
        return
    col = np.delete(c[:, 7], 3)
    assert np.all(np.isinf(col)), col                # inf * x + finite: inf, x's sign
    assert np.all(np.sign(col) == np.sign(np.delete(a[:, 20], 3)))
    rest = np.delete(np.delete(c, 3, axis=0), 7, axis=1)
    assert np.isfinite(rest).all()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", TC)
def test_pytorch_half_tensors_misaligned_views_and_results(name):
    """bfloat16 reaches us through DLPack (it has no __cuda_array_interface__ typestr);
    views whose pointer or leading stride is not 16-byte aligned: odd (2-byte) ones, copied
    first unless an entry takes any alignment, and 4-byte aligned ones (rows of odd length,
    both majors), which cute_mma_sm80_64x64's _al2 entries read as they are (4-byte cp.async)."""
    _runnable(name)
    import torch
    k = registry.get(name)

    def views(dt, case):
        def r(*shape):
            return torch.randn(*shape, device="cuda").to(dt)
        if case == "odd":                   # offsets of 2 and 6 bytes, odd leading dimensions
            return r(130, 99)[1:, 1:], r(99, 77)[:-1, 3:]
        if case == "4-byte":                # offsets of 4 and 12 bytes, lds 100 and 78, K and N odd
            return r(130, 100)[1:, 2:-1], r(97, 78)[:, 6:-1]
        # A m-major (ld 132), B k-major (ld 100), both at 4-byte offsets, K and N odd
        return r(100, 132)[2:-1, 2:].t(), r(72, 100)[1:, 2:-1].t()

    for p, case in [(x, c) for x in k.precisions if x in ("bf16", "fp16")
                    for c in ("odd", "4-byte", "4-byte turned")]:
        dt = torch.bfloat16 if p == "bf16" else torch.float16
        a, b = views(dt, case)
        ref = a.double() @ b.double()
        got = cute_gemm.run(name, a, b)
        assert got.dtype == torch.float32 and got.shape == ref.shape
        tol = 2.0**-8 * 16 * (a.double().abs() @ b.double().abs())
        assert ((got.double() - ref).abs() <= tol).all()
        out = torch.full(ref.shape, float("nan"), device="cuda", dtype=dt)
        cute_gemm.run(name, a, b, out=out)
        assert ((out.double() - ref).abs() <= tol + 2.0**-7 * ref.abs()).all()
        if case != "odd" and any(v.entry.endswith("_al2") for v in k.variants):
            plans = [x for x in cute_gemm.resolved_launches()
                     if x.kernel == name and x.shape == (a.shape[0], b.shape[1], a.shape[1])]
            assert plans and all(x.entry.endswith("_al2") and not x.copies for x in plans), plans
        with pytest.raises(cute_gemm.DTypeError, match="no precision reads that pair"):
            cute_gemm.run(name, a, b.float())


@pytest.mark.parametrize("name", [n for n in TC if "tf32" in registry.get(n).precisions])
def test_tf32_is_not_the_default_and_row_major_b_is_copied(name):
    """float32 operands run in fp32 unless tf32 is asked for: a tensor-core kernel without
    fp32 says so; with precision="tf32" a row-major B (n-major) reaches k-major entries
    through run()'s copy and the result meets the tf32 gauge."""
    _runnable(name)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((300, 200), dtype=np.float32)
    b = rng.standard_normal((200, 100), dtype=np.float32)
    if "fp32" not in registry.get(name).precisions:
        with pytest.raises(cute_gemm.DTypeError, match="not fp32"):
            cute_gemm.run(name, a, b)
    c = cute_gemm.run(name, a, b, precision="tf32")
    ref = a.astype(np.float64) @ b
    gauge = np.abs(a.astype(np.float64)) @ np.abs(b)
    assert (np.abs(c - ref) <= 16 * 2.0**-11 * gauge).all()
    assert np.abs(c - ref).max() > 1e-6 * gauge.max()     # it did round: not an fp32 result


@pytest.mark.parametrize("majors", ["ak_bn", "am_bk"])
def test_tf32_register_operand_entries_take_their_layouts_into_every_c(majors):
    """cute_wgmma_ws's RS entries: a row-major B (C^T = B^T A^T, B^T from registers) or a
    column-major A (from registers) is taken as it is, no copy; the permuted accumulator rows
    reach the right rows of C whichever of its strides is 1 (or neither: a padded, odd row
    stride), with beta = 0 into NaN-poisoned memory and beta != 0 in place; residues in every
    tile dimension."""
    name = "cute_wgmma_ws"
    _runnable(name)
    rng = np.random.default_rng(21)
    for m, n, k in [(1, 1, 1), (65, 129, 17), (257, 383, 129), (300, 1, 77), (1, 300, 255),
                    (130, 70, 33), (200, 72, 300), (640, 520, 96)]:
        cute_gemm.clear_caches()                           # resolved_launches: this shape's
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        c0 = rng.standard_normal((m, n), dtype=np.float32)
        ref64 = a.astype(np.float64) @ b
        gauge = np.abs(a.astype(np.float64)) @ np.abs(b)
        dA = DeviceArray.from_host(a) if majors == "ak_bn" else DeviceArray.from_host(a.T.copy()).T
        dB = DeviceArray.from_host(b) if majors == "ak_bn" else DeviceArray.from_host(b.T.copy()).T
        try:
            for c_layout in ("row", "col", "padded"):
                for beta in (0.0, -0.5):
                    if c_layout == "row":
                        store = DeviceArray.from_host(c0) if beta else DeviceArray.full((m, n), np.nan)
                        dC, view = store, lambda h: h
                    elif c_layout == "col":
                        store = (DeviceArray.from_host(c0.T.copy()) if beta
                                 else DeviceArray.full((n, m), np.nan))
                        dC, view = store.T, lambda h: h.T
                    else:                                  # row stride n + 3: odd, no pairs
                        host = np.full((m, n + 3), np.nan, dtype=np.float32)
                        if beta:
                            host[:, :n] = c0
                        store = DeviceArray.from_host(host)
                        dC = DeviceArray((m, n), strides=(n + 3, 1), _buffer=store._buf)
                        view = lambda h: h[:, :n]          # noqa: E731
                    try:
                        cute_gemm.run(name, dA, dB, c=dC if beta else None, beta=beta, alpha=1.5,
                                      out=dC, precision="tf32")
                        full = store.to_host()
                    finally:
                        store.close()
                    got = view(full)
                    want = 1.5 * ref64 + beta * c0
                    tol = 16 * 2.0**-11 * (1.5 * gauge + abs(beta) * np.abs(c0)) + 1e-30
                    assert np.isfinite(got).all(), (m, n, k, c_layout, beta)
                    assert (np.abs(got - want) <= tol).all(), (m, n, k, c_layout, beta)
                    if c_layout == "padded":
                        assert np.isnan(full[:, n:]).all()  # the pad columns are never written
        finally:
            dA.close()
            dB.close()
        if min(m, n) > 1 and (n if majors == "ak_bn" else m) % 4 == 0:   # TMA: 16-byte rows
            plans = [p for p in cute_gemm.resolved_launches()
                     if p.kernel == name and p.shape == (m, n, k)]
            assert plans and all(p.entry.endswith(majors) and not p.copies for p in plans), plans


# shapes whose every unit cute_wgmma_ws cuts along K (fewer units than clusters: a split-K,
# sm90_tail_split.cuh): a skinny product and a long-K one, residues in M, N and K, rows
# 16-byte aligned (so that a call launches no relayout copy and keeps its plan)
CUT_SHAPES = [(100, 1000, 4104), (64, 72, 20000)]
# gemm()'s cutting walks: cute_wgmma_ws at each of its tile widths
WS = [k.name for k in registry.kernels() if "auto" in k.tags
      and isinstance(k.grid, registry.PersistentGrid) and k.grid.tail_split]
WS_COMBOS = [(n, p, o) for n, p, o in COMBOS if n in WS]


def _cut_everywhere(name, precision):
    """Each of CUT_SHAPES is cut (each resolved on its own: cross_check keeps one launch)."""
    types = (PRECISION_DTYPE[precision], PRECISION_DTYPE_B[precision], "float32")
    for m, n, k in CUT_SHAPES:
        cute_gemm.clear_caches()
        ops = [DeviceArray.full(s, 1.0, dtype=t) for s, t in zip(((m, k), (k, n), (m, n)), types)]
        try:
            cute_gemm.run(name, ops[0], ops[1], out=ops[2], precision=precision)
            launch.synchronize()
        finally:
            for d in ops:
                d.close()
        plans = [p for p in cute_gemm.resolved_launches() if p.kernel == name]
        assert any(p.tail_split and p.tail_split[1] > 1 for p in plans), plans


@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("name,precision,out", WS_COMBOS)
def test_wgmma_ws_split_k_every_layout(name, precision, out, layout):
    _runnable(name)
    cute_gemm.clear_caches()
    _assert_ok(cross_check(kernels=[name], shapes=CUT_SHAPES, precision=precision, out_dtype=out,
                           layout=layout, alpha=1.5, beta=-0.5, seed=4))
    _cut_everywhere(name, precision)


@pytest.mark.parametrize("name,precision,out", WS_COMBOS)
def test_wgmma_ws_split_k_exact_and_deterministic(name, precision, out):
    """Integer sums are exact however K is cut; on random inputs two runs give the same bits
    (the pieces' partials are added in piece order, whoever finishes last)."""
    _runnable(name)
    cute_gemm.clear_caches()
    _assert_ok(cross_check(kernels=[name], shapes=CUT_SHAPES, exact=True, precision=precision,
                           out_dtype=out, beta=1.0))
    _cut_everywhere(name, precision)
    m, n, k = CUT_SHAPES[0]
    rng = np.random.default_rng(6)
    dA = DeviceArray.from_host(rng.standard_normal((m, k), dtype=np.float32),
                               dtype=PRECISION_DTYPE[precision])
    dB = DeviceArray.from_host(rng.standard_normal((k, n), dtype=np.float32),
                               dtype=PRECISION_DTYPE_B[precision])
    outs = [DeviceArray.full((m, n), np.nan, dtype=out) for _ in range(3)]
    try:
        for o in outs:
            cute_gemm.run(name, dA, dB, out=o, precision=precision)
        bits = [o.to_host().view(np.uint8) for o in outs]
    finally:
        for d in (dA, dB, *outs):
            d.close()
    assert all(np.array_equal(bits[0], x) for x in bits[1:])


# gemm()'s split picks on the small tensor-core kernel (its stream-K twins: split_k CTAs a
# tile, the last to arrive adding the partial sums in order and storing): a skinny and a
# long-K product with residues, K odd (rows not 16-byte aligned: the _al1 twins) or not
SPLIT_TC = "cute_mma_sm80_64x64"
SPLIT_TC_SHAPES = [(65, 13, 621), (130, 70, 1024)]


def _on_device(x: np.ndarray, dtype: str, stored_transposed: bool) -> DeviceArray:
    """x on the device in `dtype`, row-major or (stored_transposed) the transposed view of
    a row-major copy of x^T."""
    if stored_transposed:
        return DeviceArray.from_host(np.ascontiguousarray(x.T), dtype=dtype).T
    return DeviceArray.from_host(x, dtype=dtype)


@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("precision,out", [(p, o) for n, p, o in COMBOS if n == SPLIT_TC])
def test_small_tensor_core_split_picks(precision, out, layout):
    """A split pick (S = 2, 3, 4; as given and on C^T): small integers give the exact sum
    with beta C, rounded once into the result type; random floats stay within the gauge,
    give the same bits twice, and leave a NaN-poisoned C unread at beta 0; a fused bias +
    ReLU is applied once, after the partial sums are added. Every launch really split."""
    from cute_gemm import api
    from cute_gemm.check import judge, reference, unit
    from cute_gemm.driver.arrays import narrow, widen
    from cute_gemm.select import auto
    _runnable(SPLIT_TC)
    sm90 = launch.device_info().arch_int >= 90
    ta, tb = PRECISION_DTYPE[precision], PRECISION_DTYPE_B[precision]
    rng = np.random.default_rng()
    for m, n, k in SPLIT_TC_SHAPES:
        for exact in (True, False):
            if exact:
                a, b, c = (rng.integers(-4, 5, s).astype(np.float32) for s in ((m, k), (k, n), (m, n)))
            else:
                a, b, c = (rng.standard_normal(s, dtype=np.float32) for s in ((m, k), (k, n), (m, n)))
            a64, b64, c_used = (widen(narrow(x, t), t) for x, t in ((a, ta), (b, tb), (c, out)))
            ref, gauge = reference(a64, b64, c_used, 1.5, -0.5)
            bias = rng.standard_normal(n, dtype=np.float32)
            eref, egauge = reference(a64, b64, c_used, 1.5, -0.5, cute_gemm.Epilogue(bias=bias, activation="relu"))
            dA, dB = _on_device(a, ta, layout[0] == "t"), _on_device(b, tb, layout[1] == "t")
            dC, dBias = DeviceArray.from_host(c, dtype=out), DeviceArray.from_host(bias[None, :])
            dNan = DeviceArray.full((m, n), np.nan, dtype=out)
            try:
                for transposed in (False, True):
                    for s in (2, 3, 4):
                        choice = auto.Choice(SPLIT_TC, transposed, split_k=s)
                        cute_gemm.clear_caches()
                        runs = []
                        for _ in range(2):
                            o = DeviceArray.full((m, n), np.nan, dtype=out)
                            api.run_choice(choice, dA, dB, dC, alpha=1.5, beta=-0.5, out=o,
                                           precision=precision)
                            runs.append(o.to_host())
                            o.close()
                        why = (m, n, k, transposed, s, exact)
                        assert np.array_equal(runs[0].view(np.uint32), runs[1].view(np.uint32)), why
                        r = judge(SPLIT_TC, runs[0], ref, gauge, exact, unit(precision, out), out)
                        assert r.status == "pass", (why, r)
                        plans = [p for p in cute_gemm.resolved_launches() if p.kernel == SPLIT_TC]
                        assert plans and all(p.split_k == s and p.stream_k for p in plans), plans
                        # sm_90: the shares meet in clusters (cluster_fixup.cuh), no workspace
                        assert all(p.cluster == (s if sm90 else 1) for p in plans), plans
                        if exact:
                            continue
                        o = DeviceArray.full((m, n), np.nan, dtype=out)
                        api.run_choice(choice, dA, dB, dNan, alpha=1.0, beta=0.0, out=o,
                                       precision=precision)
                        assert np.all(np.isfinite(o.to_host())), why
                        api.run_choice(choice, dA, dB, dC, alpha=1.5, beta=-0.5, out=o,
                                       precision=precision,
                                       epilogue=cute_gemm.Epilogue(bias=dBias, activation="relu"))
                        r = judge(SPLIT_TC, o.to_host(), eref, egauge, False, unit(precision, out), out)
                        o.close()
                        assert r.status == "pass", (why, "epilogue", r)
            finally:
                for d in (dA, dB, dC, dBias, dNan):
                    d.close()


# the Hopper kernels' column stores of a 16-bit C (sm90_store_cols.cuh): each wgmma kernel in
# the first precision it computes into a 16-bit result; fused epilogues on three of them
COL_STORES = list({n: (n, p, o) for n, p, o in reversed(COMBOS) if o != "float32"
                   and registry.get(n).source in ("cute/c5_wgmma.cu", "cute/c6_wgmma_ws.cu")}.values())
COL_FUSED = {"cute_wgmma_ws", "cute_wgmma_ws_pp128x128", "cute_wgmma_ws_fp8"}


@pytest.mark.parametrize("name,precision,out", COL_STORES)
def test_16bit_c_column_by_column(name, precision, out):
    """A 16-bit C that reaches the kernel column-major (stored so, or row-major under a
    transposed walk) with 16-byte aligned columns: exact integers, bit for bit, with beta = 0
    into NaN-poisoned memory and beta != 0 in place, a fused bias + ReLU and row scales, on
    residues in M and N (a column's block of 8 rows cut short); the padding past M is never
    written. Each C order; at least one of them reached the kernel column-major."""
    torch = pytest.importorskip("torch")
    from cute_gemm.check import judge, reference, unit
    from test_batched_gpu import TORCH
    _runnable(name)
    ta, tb, to = (TORCH[t] for t in (PRECISION_DTYPE[precision], PRECISION_DTYPE_B[precision], out))
    gen = torch.Generator(device="cuda").manual_seed(11)

    def ints(*shape):
        return torch.randint(-4, 5, shape, generator=gen, device="cuda").float()

    reached = False
    for m, n, k in [(200, 72, 300), (130, 136, 64), (256, 512, 64)]:
        a, bt, c = ints(m, k), ints(n, k), ints(m, n)
        bias = ints(n)
        rows = 2.0 ** torch.randint(-2, 3, (m,), generator=gen, device="cuda").float()
        cases = [(0.0, {}), (-0.5, {})]
        if name in COL_FUSED:
            cases += [(0.0, {"bias": bias, "activation": "relu"}), (-0.5, {"scale_rows": rows})]
        A, B = a.to(ta), bt.to(tb).T                       # B k-major: every entry takes it
        a64, b64, c64 = (x.double().cpu().numpy() for x in (a, bt.T, c))
        for order in ("row", "col"):
            for beta, ep in cases:
                ld = -(-m // 8) * 8 + 8                    # columns 16-byte aligned, 8 rows of pad
                store = torch.full((m, n) if order == "row" else (n, ld), float("nan"),
                                   device="cuda", dtype=to)
                dC = store if order == "row" else store[:, :m].T
                if beta:
                    dC.copy_(c.to(to))
                cute_gemm.clear_caches()
                cute_gemm.run(name, A, B, dC if beta else None, alpha=1.5, beta=beta, out=dC,
                              epilogue=cute_gemm.Epilogue(**ep) if ep else None)
                torch.cuda.synchronize()
                plans = [p for p in cute_gemm.resolved_launches() if p.kernel.split(":")[0] == name]
                assert plans
                reached = reached or any(p.swap == (order == "row") for p in plans)   # C^T of a row-major C
                host = cute_gemm.Epilogue(**{f: v.cpu().numpy() if torch.is_tensor(v) else v
                                             for f, v in ep.items()}) if ep else None
                ref, gauge = reference(a64, b64, c64, 1.5, beta, host)
                r = judge(name, dC.float().cpu().numpy(), ref, gauge, True, unit(precision, out), out)
                assert r.status == "pass", (m, n, k, order, beta, sorted(ep), r)
                if order == "col":
                    assert torch.isnan(store[:, m:]).all(), (m, n, k, beta, sorted(ep))
    assert reached, "no launch stored C column by column: this test checks nothing"

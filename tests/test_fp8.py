"""8-bit float operands (fp8_e4m3, fp8_e5m2) without a GPU: the host conversions agree with
PyTorch's bit for bit, operands are read as the types they name (float8_e4m3fnuz is not
float8_e4m3fn), the kernel's entries are k-major only and promoted, and a call copies a
non-k-major operand k-major before the wgmma launch (on the stub driver)."""
from __future__ import annotations

import numpy as np
import pytest

import cute_gemm
import stub_driver
from cute_gemm import registry
from cute_gemm.base.precisions import DTYPE, PRECISION
from cute_gemm.driver import kernel_args, launch
from cute_gemm.driver.arrays import parse
from stub_driver import Dev

FP8 = {"float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}
MIXED = {"fp8_e4m3_e5m2": ("float8_e4m3fn", "float8_e5m2"),
         "fp8_e5m2_e4m3": ("float8_e5m2", "float8_e4m3fn")}


@pytest.mark.parametrize("name", FP8)
def test_conversions_are_pytorchs(name):
    torch = pytest.importorskip("torch")
    td, d = getattr(torch, name), DTYPE[name]
    codes = np.arange(256, dtype=np.uint8)
    ref = torch.from_numpy(codes.copy()).view(td).float().numpy()
    got = d.widen(codes)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(got[~np.isnan(ref)], ref[~np.isnan(ref)])
    rng = np.random.default_rng(1)
    finite = got[np.isfinite(got)]
    x = np.concatenate([rng.standard_normal(50_000).astype(np.float32) * s
                        for s in (1e-5, 1e-2, 1.0, 100.0, 3e4)]
                       + [finite, (np.sort(finite)[:-1] + np.sort(finite)[1:]) / 2,   # ties
                          np.array([np.inf, -np.inf, np.nan, 447.9, 464, 480, 57344, 61439,
                                    61440, 1e30, -0.0, 1e-40], np.float32)]).astype(np.float32)
    mine, theirs = d.narrow(x), torch.from_numpy(x).to(td).view(torch.uint8).numpy()
    same = (mine == theirs) | (np.isnan(d.widen(mine)) & np.isnan(d.widen(theirs)))
    assert same.all(), (x[~same][:5], mine[~same][:5], theirs[~same][:5])


class _Cai:
    def __init__(self, dtype, typestr="|V1"):
        self.dtype = dtype
        self.__cuda_array_interface__ = {"shape": (3, 4), "typestr": typestr, "strides": None,
                                         "data": (0x1000, False), "version": 3}


def test_an_opaque_byte_is_the_8_bit_type_its_array_names():
    assert parse("a", _Cai("torch.float8_e4m3fn")).dtype == "float8_e4m3fn"
    assert parse("a", _Cai("torch.float8_e5m2")).dtype == "float8_e5m2"
    for other in ("torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz", "torch.uint8"):
        with pytest.raises(cute_gemm.DTypeError):
            parse("a", _Cai(other))


def test_the_8_bit_kernel_is_k_major_and_promoted():
    k = registry.get("cute_wgmma_ws_fp8")
    # one type each side, or one of each (e4m3 x e5m2, e5m2 x e4m3)
    assert {v.precision for v in k.variants} == set(FP8.values()) | set(MIXED)
    assert all((v.a_major, v.b_major) == ("k", "k") for v in k.variants)
    assert {v.out_dtype for v in k.variants} == {"float32", "bfloat16", "float16"}
    # each 128-k k-tile promoted (128 bytes of 8-bit elements), as DeepGEMM promotes
    assert k.config.promote * k.config.k_bytes == 128 and k.takes_epilogue
    for p in (*FP8.values(), *MIXED):
        assert PRECISION[p].implied and PRECISION[p].tma == "UINT8"
    for p, (a, b) in MIXED.items():
        assert (PRECISION[p].dtype, PRECISION[p].b_dtype) == (a, b)


class _Fp8(Dev):
    """A device operand of an 8-bit float type, exported as an opaque byte (as PyTorch does)."""

    def __init__(self, shape, ptr, strides, name="float8_e4m3fn"):
        super().__init__(shape, ptr, strides=strides, typestr="|V1")
        self.dtype = f"torch.{name}"


def test_a_call_copies_an_n_major_b_k_major_then_runs_the_8_bit_entry(monkeypatch):
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k = 256, 384, 512
    a = _Fp8((m, k), 0x1000_0000, (k, 1))
    b = _Fp8((k, n), 0x2000_0000, (n, 1))                   # row-major: n-major
    out = Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2")
    cute_gemm.gemm(a, b, out=out, alpha=0.25)
    entries = [e[1] for e in stub_driver.launches(events)]
    assert entries[0] == "scale2d_e4m3", entries          # B copied k-major
    assert entries[-1].startswith("cute_wgmma_ws_fp8_e4m3_fp16_ak_bk"), entries

def test_a_call_of_one_8_bit_type_each_side_runs_the_mixed_entry(monkeypatch):
    """e4m3 A x e5m2 B implies fp8_e4m3_e5m2 (and the reverse), as torch._scaled_mm takes
    them; an n-major e5m2 B is copied k-major in its own type. A precision of other types,
    or a pair no precision reads, is a DTypeError before any launch."""
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k = 256, 384, 512
    out = Dev((m, n), 0x3000_0000, strides=(4 * n, 4))
    a = _Fp8((m, k), 0x1000_0000, (k, 1))
    b = _Fp8((k, n), 0x2000_0000, (n, 1), "float8_e5m2")   # row-major: n-major
    cute_gemm.gemm(a, b, out=out)
    entries = [e[1] for e in stub_driver.launches(events)]
    assert entries[0] == "scale2d_e5m2", entries
    assert entries[-1].startswith("cute_wgmma_ws_fp8_e4m3_e5m2_f32_ak_bk"), entries
    a2 = _Fp8((m, k), 0x1000_0000, (k, 1), "float8_e5m2")
    b2 = _Fp8((k, n), 0x2000_0000, (1, k))                  # k-major e4m3: as it is
    events.clear()
    cute_gemm.gemm(a2, b2, out=out)
    entries = [e[1] for e in stub_driver.launches(events)]
    assert len(entries) == 1 and entries[0].startswith("cute_wgmma_ws_fp8_e5m2_e4m3_f32_ak_bk")
    with pytest.raises(cute_gemm.DTypeError, match="reads float8_e4m3fn operands; a is float8_e4m3fn and b is float8_e5m2"):
        cute_gemm.gemm(a, b, out=out, precision="fp8_e4m3")
    with pytest.raises(cute_gemm.DTypeError, match="no precision reads that pair"):
        cute_gemm.gemm(a, Dev((k, n), 0x2000_0000, strides=(4 * n, 4)), out=out)


def _f32(*shape):
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)


def test_scale_shapes_are_told_apart_as_scaled_mm_tells_them():
    from cute_gemm.driver.epilogue import scaled
    m, n, k = 300, 260, 1000                      # 8 windows of 128 k, 3 column blocks
    a, b = np.empty((m, k)), np.empty((k, n))
    one, rows, cols = _f32(), _f32(m, 1), _f32(1, n)
    ep = scaled(None, one, one, a, b)
    assert ep.scale_rows is one and ep.scale_cols is one and ep.blocks_a is None
    ep = scaled(None, rows, cols, a, b)
    assert ep.scale_rows is rows and ep.scale_cols is cols and ep.blocks_b is None
    ba, bb = _f32(m, 8), _f32(8, 3)
    ep = scaled(None, ba, bb, a, b)
    assert (ep.blocks_a, ep.blocks_b, ep.scale_rows, ep.scale_cols) == (ba, bb, None, None)
    ep = scaled(None, rows, bb, a, b)                # one side per row, the other in blocks
    assert ep.scale_rows is rows and ep.blocks_b is bb and ep.blocks_a is None
    # K <= 128: one window, A's blocks are its rows; B's (1, 3) blocks are not its columns
    ep = scaled(None, rows, _f32(1, 3), a[:, :100], b[:100])
    assert ep.scale_rows is rows and ep.blocks_b.shape == (1, 3)
    with pytest.raises(cute_gemm.InputError, match="one way"):
        scaled(cute_gemm.Epilogue(scale_rows=rows), one, None, a, b)


def test_block_scales_are_checked_and_laid_out_for_the_kernel():
    from cute_gemm.driver.epilogue import Epilogue, prepare
    m, n, k = 300, 260, 1000
    ba = np.asfortranarray(_f32(m, 8))             # column-major, as cuBLASLt takes them
    p = prepare(Epilogue(blocks_a=ba, blocks_b=_f32(8, 3)), m, n, k, "float8_e4m3fn", False, None)
    v = p.values
    assert p.spec.blocks and not p.spec.scale and p.spec.tag == "blocks+float32"
    assert (v.blk_a_sm, v.blk_a_sk, v.blk_b_sk, v.blk_b_sn) == (1, m, 3, 1)
    assert p.vectors[0].shape == (m, 8)
    with pytest.raises(cute_gemm.ShapeError, match=r"\(8, 3\)"):
        prepare(Epilogue(blocks_b=_f32(8, 2)), m, n, k, "float8_e4m3fn", False, None)
    with pytest.raises(cute_gemm.DTypeError, match="float32"):
        prepare(Epilogue(blocks_a=_f32(m, 8).astype(np.float16)), m, n, k, "float8_e4m3fn", False, None)
    with pytest.raises(cute_gemm.DTypeError, match="8-bit operands"):
        prepare(Epilogue(blocks_a=_f32(m, 8)), m, n, k, "bfloat16", False, None)
    # a block of the result past one launch: its rows' and column blocks' scales
    p = p.__class__(p.spec, v._replace(blk_a=0x1000, blk_b=0x2000), p.vectors)
    b = p.block(4, 128)
    assert (b.values.blk_a, b.values.blk_b) == (0x1000 + 4 * 4, 0x2000 + 4 * 1)
    with pytest.raises(cute_gemm.ShapeLimitError, match="128 columns"):
        p.block(0, 64)


def _block_scaled_launch(monkeypatch, m, n, k):
    """gemm() of e4m3 A (M, K) and the transpose of an (N, K) weight into fp16, with A's
    block scales column-major (as cuBLASLt wants them) and B's row-major, on the stub
    driver: (the launch's argument block, A's scales, out)."""
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    kw, nw = -(-k // 128), -(-n // 128)
    a = _Fp8((m, k), 0x1000_0000, (k, 1))
    b = _Fp8((k, n), 0x2000_0000, (1, k))                   # W^T of an (N, K) weight: k-major
    out = Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2")
    sa = Dev((m, kw), 0x4000_0000, strides=(4, 4 * m))      # column-major
    sb = Dev((kw, nw), 0x5000_0000, strides=(4 * nw, 4))
    cute_gemm.gemm(a, b, out=out, scale_a=sa, scale_b=sb)
    ((_, entry, _, _, raw),) = stub_driver.launches(events)
    assert entry.startswith("cute_wgmma_ws_fp8_e4m3_fp16_ak_bk"), entry
    return (kernel_args.GemmArgsTmaWsEpi if entry.endswith("_cut") else kernel_args.GemmArgsTmaEpi
            ).from_buffer_copy(raw), sa, out


def test_a_block_scaled_call_compiles_them_in_and_passes_them(monkeypatch):
    from cute_gemm.plan import resolve
    m, n, k = 256, 384, 1024
    g, sa, out = _block_scaled_launch(monkeypatch, m, n, k)
    e = g.epi
    assert (e.blk_a, e.blk_a_sm, e.blk_a_sk, e.blk_b, e.blk_b_sk, e.blk_b_sn) == (
        0x4000_0000, 1, m, 0x5000_0000, 3, 1)
    assert not e.srow and not e.scol
    (plan,) = resolve.resolved_launches()
    name, tag = plan.kernel.split(":")
    assert name.startswith("cute_wgmma_ws_fp8") and tag == "blocks+float32", plan.kernel
    with pytest.raises(cute_gemm.DTypeError, match="8-bit operands"):
        cute_gemm.run("cute_wgmma_ws", Dev((m, k), 0x1000_0000, strides=(2 * k, 2), typestr="<f2"),
                      Dev((k, n), 0x2000_0000, strides=(2, 2 * k), typestr="<f2"),
                      epilogue=cute_gemm.Epilogue(blocks_a=sa), out=out)


@pytest.mark.parametrize("kinds", ["tensor", "rows_cols", "blocks", "blocks_a_cols_b"])
def test_a_repeat_scaled_call_takes_the_hot_path_with_its_own_scales(monkeypatch, kinds):
    """scale_a and scale_b without an epilogue: a repeat call is launched from its signature
    (no validation, no Epilogue built), each scale's pointer where the full path put it
    (scale_rows / blocks_a, scale_cols / blocks_b); a scale overlapping out goes the full way."""
    from cute_gemm import api
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n, k = 256, 384, 1024
    kw, nw = -(-k // 128), -(-n // 128)
    shape_a = {"tensor": (1, 1), "rows_cols": (m, 1)}.get(kinds, (m, kw))
    shape_b = {"tensor": (1, 1), "rows_cols": (1, n), "blocks_a_cols_b": (1, n)}.get(kinds, (kw, nw))
    a = _Fp8((m, k), 0x1000_0000, (k, 1))
    b = _Fp8((k, n), 0x2000_0000, (1, k))
    out = Dev((m, n), 0x3000_0000, strides=(2 * n, 2), typestr="<f2")

    def call(pa, pb):
        sa = Dev(shape_a, pa, strides=(4 * shape_a[1], 4))
        sb = Dev(shape_b, pb, strides=(4 * shape_b[1], 4))
        cute_gemm.gemm(a, b, out=out, scale_a=sa, scale_b=sb)
        (_, entry, _, _, raw) = stub_driver.launches(events)[-1]
        g = (kernel_args.GemmArgsTmaWsEpi if entry.endswith("_cut") else kernel_args.GemmArgsTmaEpi
             ).from_buffer_copy(raw)
        e = g.epi
        return (e.srow or e.blk_a), (e.scol or e.blk_b), (bool(e.blk_a), bool(e.blk_b))

    first = call(0x4000_0000, 0x5000_0000)
    # per-tensor scales compile as tensor_scale (applied once a tile), vectors as scale
    from cute_gemm.plan import resolve
    tags = {p.kernel.split(":")[1] for p in resolve.resolved_launches()}
    assert tags == {{"tensor": "tensor_scale+float32", "rows_cols": "scale+float32",
                     "blocks": "blocks+float32", "blocks_a_cols_b": "scale+blocks+float32"}[kinds]}, tags
    seen = []
    real = api.validate
    monkeypatch.setattr(api, "validate", lambda *x: seen.append(1) or real(*x))
    again = call(0x6000_0000, 0x7000_0000)
    assert not seen, "the repeat call was validated: it missed the hot path"
    assert again == (0x6000_0000, 0x7000_0000, first[2]) and first[:2] == (0x4000_0000, 0x5000_0000)
    assert first[2] == (kinds in ("blocks", "blocks_a_cols_b"), kinds == "blocks")
    call(0x3000_0000 + 64, 0x7000_0000)              # inside out: validated again
    assert seen


def test_a_block_scaled_call_runs_a_transposed_pick_as_given(monkeypatch):
    """The pick may run a problem transposed (C^T = B^T A^T); block scales are per row of A
    and per 128 columns of B, which no entry reads on C^T: the call runs the picked kernel
    on the problem as given."""
    from cute_gemm.select import auto
    from cute_gemm.select.choice import Choice
    monkeypatch.setattr(auto, "choose", lambda *a, **k: Choice("cute_wgmma_ws_fp8", True, why="test"))
    m, n, k = 672, 1176, 512
    g, _, _ = _block_scaled_launch(monkeypatch, m, n, k)
    assert (g.epi.blk_a, g.epi.blk_b) == (0x4000_0000, 0x5000_0000)
    assert (g.M, g.N) == (m, n)                                   # not C^T's (n, m)


def test_no_products_run_the_epilogue_in_a_precision_of_its_own(monkeypatch):
    """K = 0 with scales: the epilogue of beta * C alone, on cute_tiny_k (which computes no
    8-bit products, and reads neither operand)."""
    events = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: stub_driver.H100)
    m, n = 64, 96
    out = Dev((m, n), 0x3000_0000)
    cute_gemm.gemm(_Fp8((m, 0), 0x1000_0000, (1, 1)), _Fp8((0, n), 0x2000_0000, (1, 1)), out,
                   out=out, beta=0.5, scale_a=Dev((1, 1), 0x5000_0000))
    (launched,) = stub_driver.launches(events)
    assert launched[1].startswith("cute_tiny_k"), launched[1]


def test_fp8_accuracy_chart(tmp_path):
    """The accuracy plot of `bench --size fp8` renders from its JSON's rows, a series per
    error column present (an older fp8.json without fast accumulation too)."""
    pytest.importorskip("matplotlib", reason="matplotlib not installed (the `plot` extra)")
    from cute_gemm.perf import plots
    rows = [{"k": 2 ** e, "ours_rel_err": 1.26e-4, "scaled_mm_rel_err": 1.25e-4,
             "fast_accum_rel_err": 1e-4 * 2 ** (e - 8)} for e in range(8, 17)]
    res = {"device": "NVIDIA H200", "date": "2026-12-03T10:00:00", "torch": "2.11",
           "summary": {"fp8_e4m3": {"accuracy": rows}}}
    for name, r in (("new.png", res), ("old.png", {**res, "summary": {"fp8_e4m3": {"accuracy": [
            {k: v for k, v in x.items() if k != "fast_accum_rel_err"} for x in rows]}}})):
        path = plots.fp8_accuracy_chart(r, tmp_path / name)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000

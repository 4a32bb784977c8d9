"""relayout.Copies on a GPU (kernels/util/scale2d.cu): dst = s * src for sides that share a
unit-stride mode (wide tiles, 8-element vectors where both lines are aligned to one, element by
element where not) and for transposing ones, across types, with pads and zero fills, against
torch's own conversion of the same values. Skipped without a GPU."""
from __future__ import annotations

import pytest

from cute_gemm.driver.arrays import parse
from cute_gemm.plan import relayout

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

TYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16,
         "e4m3": torch.float8_e4m3fn}


def matrix(m, n, dtype, major, offset, lead_pad, seed):
    """(an (m, n) view, its buffer): `major` "row" or "col", its first element `offset`
    elements into the buffer (its lines off a vector's boundary where offset % 8), lines
    `lead_pad` elements apart beyond their length."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    lines, length = (m, n) if major == "row" else (n, m)
    ld = length + lead_pad
    buf = (torch.randn(offset + lines * ld + 8, generator=g, device="cuda") * 4).to(dtype)
    flat = buf[offset:offset + lines * ld].view(lines, ld)[:, :length]
    return (flat if major == "row" else flat.T), buf


def copy(pairs, scales, pad=False):
    ops = [(parse("src", s), parse("dst", d)) for s, d in pairs]
    relayout.Copies(0, [(S, D, pad) for S, D in ops])(scales, [S.ptr for S, _ in ops],
                                                      [D.ptr for _, D in ops], 0)
    torch.cuda.synchronize()


@pytest.mark.parametrize("m,n", [(1, 1), (37, 300), (300, 37), (64, 512), (5, 4097), (1029, 3)])
@pytest.mark.parametrize("types", ["f32>f32", "bf16>bf16", "bf16>f32", "f32>bf16", "f16>f16",
                                   "e4m3>f32", "f32>e4m3"])
@pytest.mark.parametrize("majors", ["row>row", "col>col", "row>col"])
@pytest.mark.parametrize("offset", [0, 3])
def test_copies_match_torchs_conversion(m, n, types, majors, offset):
    """Each element s * src in dst's type, as torch converts it; the buffer around dst's view
    (its lines' gaps, before and after) as it was."""
    (s_t, d_t), (s_mj, d_mj) = (TYPES[x] for x in types.split(">")), majors.split(">")
    src, _ = matrix(m, n, s_t, s_mj, offset, 5, seed=m * 7 + n)
    dst, buf = matrix(m, n, d_t, d_mj, 8 - offset, 3, seed=1)
    before = buf.clone()
    copy([(src, dst)], (0.5,))
    want = (src.float() * 0.5).to(d_t)
    assert torch.equal(dst.float(), want.float()), (dst.float() - want.float()).abs().max()
    view = torch.zeros(buf.numel(), dtype=torch.bool, device="cuda")
    idx = torch.arange(buf.numel(), device="cuda")
    view[torch.as_strided(idx, dst.shape, dst.stride(), dst.storage_offset()).flatten()] = True
    assert torch.equal(buf[~view].float(), before[~view].float())


@pytest.mark.parametrize("majors", ["row>row", "col>col", "row>col"])
def test_a_zero_scale_writes_zeros_and_a_pad_is_zeroed(majors):
    """s = 0 writes zeros without reading (a NaN source); a padded copy (a relayout's) zeroes
    dst's lines past their length up to its leading dimension, with vectors or without."""
    s_mj, d_mj = majors.split(">")
    src, _ = matrix(70, 300, torch.bfloat16, s_mj, 1, 2, seed=3)
    src.fill_(float("nan"))
    dst, _ = matrix(70, 300, torch.bfloat16, d_mj, 0, 0, seed=4)
    copy([(src, dst)], (0.0,))
    assert torch.equal(dst, torch.zeros_like(dst))
    for offset in (0, 2):
        src, _ = matrix(70, 300, torch.float32, s_mj, 0, 1, seed=5)
        dst, buf = matrix(70, 300, torch.float32, d_mj, offset, 12, seed=6)
        copy([(src, dst)], (1.0,), pad=True)
        assert torch.equal(dst, src)
        lines = buf[offset:offset + (dst.shape[0] if d_mj == "row" else dst.shape[1]) * (
            (300 if d_mj == "row" else 70) + 12)].view(-1, (300 if d_mj == "row" else 70) + 12)
        assert not lines[:, -12:].any()

"""`cute-gemm bench --size random[:N]`: the draw (deterministic per seed, inside the flop band
and the dimension bounds, terminating on extreme bands). Pure CPU."""
from __future__ import annotations

import math

import pytest

from cute_gemm.perf import random_shapes as R


def _log_flops(m, n, k):
    return math.log2(2 * m * n * k)


# ---- the draw -----------------------------------------------------------------------------
def test_the_draw_is_a_function_of_the_seed():
    spec = R.RandomShapes(40)
    first = R.draw(spec, 1234)
    assert first == R.draw(spec, 1234) and len(first) == 40
    assert first != R.draw(spec, 1235)
    assert len(set(first)) == 40                                   # distinct (shape, layout)
    assert {lay for *_, lay in first} == {"nn", "tn", "nt", "tt"}   # mixed by default
    assert first[:5] == R.draw(R.RandomShapes(5), 1234)             # more shapes extend the list


@pytest.mark.parametrize("band", [(18, 36), (18, 19), (10, 11), (26, 26.5), (35, 41.75)])
def test_every_shape_is_in_the_band_and_the_bounds(band):
    for m, n, k, lay in R.draw(R.RandomShapes(40, band), 7):
        assert band[0] <= _log_flops(m, n, k) <= band[1]
        assert all(R.DIM_MIN <= d <= R.DIM_MAX for d in (m, n, k))
        assert lay in ("nn", "tn", "nt", "tt")


def test_the_flop_count_is_spread_over_the_band_and_the_dims_alike():
    shapes = R.draw(R.RandomShapes(3000), 3)
    t = [_log_flops(*s[:3]) for s in shapes]
    for lo in range(18, 36, 3):                 # six equal parts of 18:36, a sixth each
        share = sum(lo <= x < lo + 3 for x in t) / len(t)
        assert abs(share - 1 / 6) < 0.03, (lo, share)
    means = [sum(math.log2(s[i]) for s in shapes) / len(shapes) for i in range(3)]
    assert max(means) - min(means) < 0.25                      # M, N, K drawn alike


def test_layouts_given_are_the_only_ones_drawn():
    assert {lay for *_, lay in R.draw(R.RandomShapes(20), 5, ("nn",))} == {"nn"}
    assert {lay for *_, lay in R.draw(R.RandomShapes(40), 5, ("tn", "tt"))} == {"tn", "tt"}


def test_extreme_bands_are_clipped_or_refused_and_the_draw_ends():
    hi = R.reachable()[1]                                         # 1 + 3 log2(12288)
    assert R.RandomShapes(5, (40, 44)).band() == (40, hi)
    for m, n, k, _ in R.draw(R.RandomShapes(40, (40, 44)), 0):
        assert 40 <= _log_flops(m, n, k) <= hi
    assert "clipped" in R.describe(R.RandomShapes(5, (40, 44)), 0)
    with pytest.raises(ValueError, match="out of reach"):
        R.parse_flops("44:48")
    with pytest.raises(ValueError, match="LO must be below HI"):
        R.parse_flops("18:18")
    with pytest.raises(ValueError, match="LO must be below HI"):
        R.parse_flops("30:20")
    with pytest.raises(ValueError, match="LO:HI"):
        R.parse_flops("18")
    with pytest.raises(ValueError, match="widen --flops"):       # too few integer shapes there
        R.draw(R.RandomShapes(500, (10, 10.5)), 0)
    # a band narrower than the rounding: shapes that fit, or the same clear error, never a hang
    try:
        shapes = R.draw(R.RandomShapes(10, (18, 18.0001)), 0)
    except ValueError as e:
        assert "widen --flops" in str(e)
    else:
        assert all(18 <= _log_flops(*s[:3]) <= 18.0001 for s in shapes)


def test_random_count_of_a_size_spec():
    assert R.random_count("random") == R.DEFAULT_COUNT
    assert R.random_count("random:7") == 7
    assert R.random_count("4096") is None and R.random_count(64) is None
    for bad, why in (("random:0", "N >= 1"), ("random:x", "whole number"), ("random:-3", "N >= 1")):
        with pytest.raises(ValueError, match=why):
            R.random_count(bad)

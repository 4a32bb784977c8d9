"""gemm()'s tuning on first use on the GPU (select/firstuse.py): a call of a problem no table
measured times its candidates on its own operands, answers right (judged against float64 with
the gauge), keeps the row, and later calls and gemm_choice() read it; inside a CUDA graph
capture nothing is timed and the replays are right; operands written on another stream are
read after the work queued before the call. Skipped without a GPU (and without torch)."""
from __future__ import annotations

import os

import pytest

import cute_gemm
from cute_gemm.driver import launch
from cute_gemm.select import autotable, firstuse
from cute_gemm.check import THRESHOLD, unit

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

SEED = int.from_bytes(os.urandom(4), "little")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "tf32": torch.float32}


@pytest.fixture
def tuning(tmp_path, monkeypatch):
    """Tuning on, its tuned table a private file, no shipped table; candidates compiled first
    (the cubin cache stays the run's)."""
    monkeypatch.setenv("CUTE_GEMM_TUNE", "first_use")
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "wait")
    monkeypatch.setattr(autotable, "tuned_path", lambda gpu, version=None: tmp_path / "tuned.json")
    monkeypatch.setattr(autotable, "SHIPPED_DIR", tmp_path / "shipped")
    monkeypatch.setattr(firstuse, "_done", {})
    # every candidate timed, however busy the GPU is with the other test workers (the
    # budget's cut is tested on the CPU, tests/test_firstuse.py)
    monkeypatch.setattr(firstuse, "BUDGET_S", 120.0)
    cute_gemm.clear_caches()
    yield tmp_path
    cute_gemm.clear_caches()


def _judge(what, got, a, b, precision, out_dtype=torch.float32):
    A, B = a.double(), b.double()
    ref, gauge = A @ B, A.abs() @ B.abs()
    od = {torch.float32: "float32", torch.bfloat16: "bfloat16"}[out_dtype]
    ratio = (got.double() - ref).abs() / (unit(precision, od) * gauge)
    worst = float(torch.nan_to_num(ratio, nan=float("inf")).max())
    assert worst <= THRESHOLD, f"{what}: gauge ratio {worst:.3g} (seed {SEED})"


def _rows(shape, precision):
    info = launch.device_info()
    return [r for t in autotable.tables_for(info.name) for r in t.rows
            if r.shape == shape and r.precision == precision]


@pytest.mark.parametrize("precision", list(DTYPES))
@pytest.mark.parametrize("shape", [(37, 1500, 211), (31, 40, 4988), (1401, 1868, 393)])
def test_a_tuned_call_is_right_and_its_row_is_kept(tuning, precision, shape):
    torch.manual_seed(SEED)
    m, n, k = shape
    dt = DTYPES[precision]
    a, b = torch.randn(m, k, device="cuda").to(dt), torch.randn(k, n, device="cuda").to(dt)
    # the result type `tune` times (its rows': a bf16 result for bf16), so the row is kept
    od = dt if precision == "bf16" else torch.float32
    out = torch.full((m, n), float("nan"), device="cuda", dtype=od)
    cute_gemm.gemm(a, b, out=out, precision=precision)
    torch.cuda.synchronize()
    _judge(f"{shape} {precision} first call", out, a, b, precision, od)
    (row,) = _rows(shape, precision)
    assert len([t for t in row.times.values() if t is not None]) >= 2, row
    choice = cute_gemm.gemm_choice(m, n, k, precision=precision, aligned=row.aligned,
                                   out_dtype=str(od).split(".")[-1])
    assert choice.source == "table" and choice.key == row.winner, (choice, row.winner)
    out.fill_(float("nan"))
    cute_gemm.gemm(a, b, out=out, precision=precision)     # the hot path: the winner again
    torch.cuda.synchronize()
    _judge(f"{shape} {precision} second call", out, a, b, precision, od)


def test_a_result_type_tune_does_not_time_is_tuned_but_not_kept(tuning):
    """bf16 operands into a float32 result: tuned for this process (the rows of a table are
    of bf16 results), right, and no row written."""
    torch.manual_seed(SEED)
    m, n, k = 211, 333, 517
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    out = torch.full((m, n), float("nan"), device="cuda")
    cute_gemm.gemm(a, b, out=out)
    torch.cuda.synchronize()
    _judge("bf16 into float32", out, a, b, "bf16")
    assert not _rows((m, n, k), "bf16")
    (done,) = firstuse._done.values()
    assert done is not None and done.choice.source == "tuned" and not done.kept


def test_the_timed_launches_follow_the_work_queued_before_the_call(tuning):
    """A's values come from work queued on the call's stream (torch's current one, not the
    default) just before the call, behind a 10 ms sleep: the timed candidates run in that
    stream's order, and the answer is of the new A."""
    torch.manual_seed(SEED)
    m, n, k = 515, 777, 301
    side = torch.cuda.Stream()
    b = torch.randn(k, n, device="cuda")
    a = torch.empty(m, k, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)           # ~10 ms on the side stream, then A
        a.copy_(torch.randn(m, k, device="cuda"))
        out = cute_gemm.gemm(a, b)              # on side: torch's current stream there
    torch.cuda.synchronize()
    _judge("producer stream", out, a, b, "fp32")


def test_inside_a_capture_nothing_is_timed_and_replays_are_right(tuning):
    torch.manual_seed(SEED)
    m, n, k = 333, 517, 1001
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    out = torch.empty(m, n, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cute_gemm.gemm(a, b, out=out)
    assert not _rows((m, n, k), "fp32") and not firstuse._done
    for _ in range(3):
        a.copy_(torch.randn(m, k, device="cuda"))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        _judge("replay", out, a, b, "fp32")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("shapes", [((24, 96, 40), (24, 40, 130)), ((1, 70, 300), (9, 300, 33)),
                                    ((5, 200, 17), (5, 17, 600))])
def test_a_batch_is_tuned_right_and_kept_for_the_process(tuning, precision, shapes):
    """A batch (strided, broadcast A, a small K): its batched candidates timed on its own
    operands, the fastest right within the gauge, a later call of the problem on other
    tensors right without timing again, no 2-D row written, and the batch's row kept where
    every candidate was at hand."""
    torch.manual_seed(SEED)
    dt = DTYPES[precision]
    a = torch.randn(*shapes[0], device="cuda").to(dt)
    b = torch.randn(*shapes[1], device="cuda").to(dt)
    count, m, n, k = shapes[1][0], shapes[0][1], shapes[1][2], shapes[0][2]
    for _ in range(2):
        out = torch.full((count, m, n), float("nan"), device="cuda", dtype=dt)
        cute_gemm.gemm(a, b, out=out, precision=precision)
        torch.cuda.synchronize()
        for i in range(count):
            _judge(f"problem {i}", out[i], a[min(i, a.shape[0] - 1)], b[i], precision, dt)
        # (key[1]: a batch's (outer, inner) problems, where a 2-D problem's key has M)
        (done,) = [d for key, d in firstuse._done.items() if isinstance(key[1], tuple)]
        assert done.choice.source == "tuned", done.choice
        a, b = torch.randn_like(a, dtype=torch.float32).to(dt), torch.randn_like(b, dtype=torch.float32).to(dt)
    assert not _rows((m, n, k), precision)
    kept = [r for t in autotable.tables_for(launch.device_info().name) for r in t.batches
            if f"/{m}x{n}x{k}/" in r.key and f"/{precision}/" in r.key]
    assert len(kept) == done.kept and all(r.winner == done.choice.kernel for r in kept)

"""gemm()'s tuning on first use (select/firstuse.py, plan/trial.py) on the CPU, behind the stub
driver (tests/stub_driver.py): its event times are what a per-entry cost says, so which
candidate wins, what the tuned table keeps and when tuning stays off are all checked."""
from __future__ import annotations

import pytest

import cute_gemm
import stub_driver
from cute_gemm import api, registry
from cute_gemm.driver import launch
from cute_gemm.plan import trial
from cute_gemm.select import auto, autotable, batched, firstuse
from cute_gemm.select.choice import split_key
from stub_driver import Dev

H100 = stub_driver.H100
M, N, K = 300, 700, 200

pytestmark = pytest.mark.usefixtures("private_tables")   # tests/conftest.py


@pytest.fixture
def events(monkeypatch):
    ev = stub_driver.install(monkeypatch)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: H100)
    monkeypatch.setenv("CUTE_GEMM_TUNE", "first_use")
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "wait")
    monkeypatch.setattr(firstuse, "_done", {})
    # the host-time budget is one test's subject (it sets its own); elsewhere a busy 2-core
    # host (xdist beside other work) must not cut a row short
    monkeypatch.setattr(firstuse, "BUDGET_S", 60.0)
    return ev


def _operands(m=M, n=N, k=K):
    return Dev((m, k), 0x1000_0000), Dev((k, n), 0x2000_0000), Dev((m, n), 0x3000_0000)


def _row(precision="fp32"):
    rows = [r for t in autotable.tables_for(H100.name) for r in t.rows
            if r.shape == (M, N, K) and r.precision == precision]
    return rows[0] if rows else None


def _gemm_entries(events):
    return [e[1] for e in stub_driver.launches(events, "gemm")]


def _fastest(monkeypatch, events, fast: str, batch=None) -> tuple[list, list]:
    """The stub's event times: a launch of kernel `fast` (any entry point) 0.25 ms, others 1.
    (ran, timed): the kernels the calls themselves launched, and those timed into a scratch
    batch of `batch` (outer, inner) problems."""
    running, ran, timed = [""], [], []
    real, real_api = trial.gemm_device, api.gemm_device

    def gemm_device(k, *args, **kw):
        running[0] = k.name
        if batch is not None and args[3] is not None and args[3].bcount == batch:   # (T)
            timed.append(k.name)
        return real(k, *args, **kw)
    monkeypatch.setattr(trial, "gemm_device", gemm_device)
    monkeypatch.setattr(api, "gemm_device", lambda k, *a, **kw: ran.append(k.name) or real_api(k, *a, **kw))
    events.cost = lambda entry: 0.25 if running[0] == fast else 1.0
    return ran, timed


def test_the_fastest_candidate_runs_and_its_row_is_kept(events, monkeypatch):
    fast = "cute_pipelined_64x64x8_sk"
    model = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    assert model.kernel != fast
    ran, _ = _fastest(monkeypatch, events, fast)
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    row = _row()
    assert row is not None and split_key(row.winner)[0] == fast, row
    assert set(row.times) == set(auto.keys(M, N, K, "fp32", "float32", 90, H100.smem_optin, 132))
    choice = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    assert choice.source == "table" and choice.kernel == fast
    assert ran == [fast]            # the call itself ran the winner, after the timed launches


def test_off_and_capture_leave_the_models_pick(events, monkeypatch):
    timed = []
    monkeypatch.setattr(trial, "time_launches", lambda *a, **k: timed.append(1) or ({}, {}))
    a, b, o = _operands()
    monkeypatch.setenv("CUTE_GEMM_TUNE", "off")
    cute_gemm.gemm(a, b, out=o)
    with firstuse.off():
        monkeypatch.setenv("CUTE_GEMM_TUNE", "first_use")
        cute_gemm.gemm(a, Dev((K, N + 1), 0x4000_0000), out=Dev((M, N + 1), 0x5000_0000))
    assert not timed and _row() is None


def test_inside_a_capture_nothing_is_timed(events, monkeypatch):
    timed = []
    monkeypatch.setattr(trial, "time_launches", lambda *a, **k: timed.append(1) or ({}, {}))
    events.capturing = True
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    assert not timed and not [e for e in events if e[0] == "event_sync"]


def test_a_row_cut_by_the_budget_is_kept_with_what_was_timed(events, monkeypatch):
    """The budget spent after the first candidate, the model's pick: the row holds it alone
    and is kept (a large problem is not timed again in every process)."""
    monkeypatch.setattr(firstuse, "BUDGET_S", 0.0)
    model = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    row = _row()
    assert row is not None and list(row.times) == [model.key]
    assert auto.choose(M, N, K, device=H100, layout="nn", precision="fp32").source == "table"


def test_no_room_for_the_scratch_times_nothing_and_the_call_goes_on(events, monkeypatch):
    """An allocation the device refuses (out of memory): no candidate is timed, nothing is
    kept, the call runs the model's pick."""
    from cute_gemm.base.errors import CudaError
    from cute_gemm.driver import pool
    real = pool.alloc_async
    big = []

    def alloc_async(nbytes, ordinal, stream):
        if nbytes >= H100.l2_bytes:                     # the eviction buffer
            big.append(nbytes)
            raise CudaError("cuMemAllocFromPoolAsync: out of memory")
        return real(nbytes, ordinal, stream)
    monkeypatch.setattr(pool, "alloc_async", alloc_async)
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    allocs = [e[1] for e in events if e[0] == "alloc"]
    frees = [e[1] for e in events if e[0] == "free"]
    assert big and sorted(allocs) == sorted(frees)          # the result's scratch freed too
    assert _row() is None and list(firstuse._done.values()) == [None]
    assert stub_driver.launches(events, "gemm")             # the call itself ran


def test_a_bad_mode_is_a_named_error(monkeypatch):
    monkeypatch.setenv("CUTE_GEMM_TUNE", "sometimes")
    with pytest.raises(cute_gemm.InputError, match="CUTE_GEMM_TUNE"):
        firstuse.mode()


def test_quick_mode_times_what_is_compiled_and_compiles_nothing(events, monkeypatch):
    """CUTE_GEMM_FIRST_CALL=quick: candidates not compiled are left out (and not begun in the
    background); the row, cut short, answers this process but is not kept."""
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    model = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    events.compiling = frozenset(x.name for x in auto.candidates("fp32", "float32", 90)
                                 if x.name != model.kernel)
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    assert not [e for e in events if e[0] == "behind" and e[1] != model.kernel]
    assert _row() is None
    (done,) = firstuse._done.values()
    assert done.choice.kernel == model.kernel and not done.kept


def test_quick_mode_with_nothing_compiled_times_nothing(events, monkeypatch):
    """A cold first call in quick mode: no candidate at hand, so no scratch, no spin, no
    event wait; the model's pick (its stand-in meanwhile) answers."""
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    timed = []
    monkeypatch.setattr(trial, "time_launches", lambda *a, **k: timed.append(1) or ({}, {}))
    events.compiling = frozenset(x.name for x in auto.candidates("fp32", "float32", 90))
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    (later,) = firstuse._done.values()
    assert not timed and isinstance(later, firstuse._Later) and _row() is None


def test_quick_mode_puts_tuning_off_until_the_models_pick_is_at_hand(events, monkeypatch):
    """Quick mode, the model's pick still compiling and other candidates at hand: none of
    them is timed in its place (a compiled candidate 10x slower would win for the process);
    the pick's stand-in answers, and the first call once the pick is at hand tunes."""
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    model = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    events.compiling = frozenset({model.kernel})
    timed = []
    real = trial.time_launches
    monkeypatch.setattr(trial, "time_launches", lambda *a, **k: timed.append(1) or real(*a, **k))
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o)
    (later,) = firstuse._done.values()
    assert not timed and isinstance(later, firstuse._Later) and not later.ready()
    events.compiling = frozenset()
    cute_gemm.gemm(a, b, out=o)
    (done,) = firstuse._done.values()
    assert timed and isinstance(done, firstuse._Tuned)


def test_a_contract_answered_by_one_other_arithmetic_runs_in_it(events, monkeypatch):
    """fp32_3xtf32 on an sm_80 GPU (no 3xTF32 kernel there): only fp32 answers; its tuned
    choice, not kept (quick mode, a candidate missing), runs the fp32 entry points."""
    a100 = launch.DeviceInfo(0, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 1_410_000, 166912,
                             167936, 40 << 20, 13000)
    monkeypatch.setattr(launch, "device_info", lambda ordinal=None: a100)
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    fp32 = auto.candidates("fp32", "float32", 80, exactly=True)
    events.compiling = frozenset({fp32[-1].name})       # one not at hand: the row is not kept
    a, b, o = _operands()
    cute_gemm.gemm(a, b, out=o, precision="fp32_3xtf32")
    (done,) = firstuse._done.values()
    assert done is not None and not done.kept and done.choice.kernel in {x.name for x in fp32}
    entries = _gemm_entries(events)
    assert entries and all("3xtf32" not in e for e in entries), entries


def _batch(count=6, m=96, n=160, k=64):
    return (Dev((count, m, k), 0x1000_0000, strides=(4 * m * k, 4 * k, 4)),
            Dev((count, k, n), 0x2000_0000, strides=(4 * k * n, 4 * n, 4)),
            Dev((count, m, n), 0x3000_0000, strides=(4 * m * n, 4 * n, 4)))


def test_a_batch_times_the_batched_candidates_and_runs_the_fastest(events, monkeypatch):
    """A batched call: every batched candidate, the model's pick first, timed on the call's
    own batch into a scratch batch; the fastest runs the call and later calls of the problem
    without timing again, and is kept in the tuned table's batch rows (no 2-D row), which a
    new process reads instead of timing."""
    count, m, n, k = 6, 96, 160, 64
    ranked = batched.ranked(count, m, n, k, device=H100)
    assert len(ranked) > 1
    fast = ranked[-1].kernel                   # the model's last choice wins the timing
    ran, timed = _fastest(monkeypatch, events, fast, (1, count))
    a, b, o = _batch(count, m, n, k)
    cute_gemm.gemm(a, b, out=o)
    assert timed[0] == ranked[0].kernel and set(timed) == {c.kernel for c in ranked}
    assert ran == [fast]
    (done,) = firstuse._done.values()
    assert done.choice.kernel == fast and done.choice.source == "tuned" and done.kept
    assert _row() is None and not [r for t in autotable.tables_for(H100.name) for r in t.rows]
    (row,) = [b for t in autotable.tables_for(H100.name) for b in t.batches]
    assert row.winner == fast and set(row.times) == {c.kernel for c in ranked}
    said = cute_gemm.gemm_choice(m, n, k, batch=count, device=H100)    # (no GPU asked)
    assert said.kernel == fast and said.source == "table", said
    a2, b2, o2 = _batch(count, m, n, k)        # another call of the problem: no timing
    timed.clear()
    cute_gemm.gemm(a2, b2, out=o2)
    assert not timed and ran[-1] == fast
    for capturing in (False, True):             # a new process: the kept row answers, in a
        cute_gemm.clear_caches()                 # capture too (where nothing is timed)
        monkeypatch.setattr(firstuse, "_done", {})
        events.capturing, before = capturing, len(_gemm_entries(events))
        cute_gemm.gemm(a2, b2, out=o2)
        events.capturing = False
        launched = _gemm_entries(events)[before:]
        assert not timed and launched and all(e in registry.get(fast).entries for e in launched)


def test_a_batch_in_quick_mode_waits_for_the_models_pick(events, monkeypatch):
    """Quick mode, the model's batched pick still compiling: nothing is timed in its place."""
    monkeypatch.setenv("CUTE_GEMM_FIRST_CALL", "quick")
    count, m, n, k = 6, 96, 160, 64
    model = batched.choose(count, m, n, k, device=H100)
    events.compiling = frozenset({model.kernel})
    timed = []
    monkeypatch.setattr(trial, "time_launches", lambda *a, **kw: timed.append(1) or ({}, {}))
    a, b, o = _batch(count, m, n, k)
    cute_gemm.gemm(a, b, out=o)
    (later,) = firstuse._done.values()
    assert not timed and isinstance(later, firstuse._Later) and not later.ready()


def test_a_capture_takes_what_the_process_tuned(events, monkeypatch):
    """A graph captured after the process tuned a problem (a batch, and a 2-D problem whose
    row could not be kept) records the tuned kernel, not the model's pick, and times nothing."""
    count, m, n, k = 6, 96, 160, 64
    fast = batched.ranked(count, m, n, k, device=H100)[-1].kernel
    _, timed = _fastest(monkeypatch, events, fast, (1, count))
    monkeypatch.setattr(firstuse, "_keep", lambda row, device: False)
    fast2 = "cute_pipelined_64x64x8_sk"
    for kernel, ops in ((fast, _batch(count, m, n, k)), (fast2, _operands())):
        if kernel == fast2:
            _fastest(monkeypatch, events, fast2)
        cute_gemm.gemm(*ops[:2], out=ops[2])
        events.capturing, timed[:], before = True, [], len(_gemm_entries(events))
        cute_gemm.gemm(*ops[:2], out=ops[2], stream=0x77)    # (a capture's own stream)
        events.capturing = False
        (entry,) = _gemm_entries(events)[before:]
        assert not timed and entry in registry.get(kernel).entries, (kernel, entry)


def test_a_fused_call_times_the_candidates_that_fuse_it_with_it(events, monkeypatch):
    """gemm(epilogue=) where no row measured the problem: the candidates that fuse (no split
    summed by a reduction launch) are timed with the epilogue, the fastest runs, and its row
    stays in the process (the tables hold plain products' times); the next call, and a capture,
    time nothing and run it."""
    fast = "cute_pipelined_64x64x8_sk"
    model = auto.choose(M, N, K, device=H100, layout="nn", precision="fp32")
    assert model.kernel != fast
    running, timed, ran = [""], [], []
    real, real_api = trial.gemm_device, api.gemm_device

    def gemm_device(k, *args, **kw):
        running[0] = k.name
        timed.append((k.name, args[9], kw.get("epi") is not None))     # (args[9]: the pick)
        return real(k, *args, **kw)
    monkeypatch.setattr(trial, "gemm_device", gemm_device)
    monkeypatch.setattr(api, "gemm_device", lambda k, *a, **kw: ran.append(k.name) or real_api(k, *a, **kw))
    events.cost = lambda entry: 0.25 if running[0].partition(":")[0] == fast else 1.0
    a, b, o = _operands()
    ep = cute_gemm.Epilogue(bias=Dev((1, N), 0x4000_0000), activation="relu")
    cute_gemm.gemm(a, b, out=o, epilogue=ep)
    tag = ran[0].partition(":")[2]
    keys = auto.keys(M, N, K, "fp32", "float32", 90, H100.smem_optin, 132)
    fusing = {c for c in keys if auto.Choice.of_key(c).fuses()}
    assert tag and ran == [f"{fast}:{tag}"]
    assert len(timed) == len(fusing) and all(
        name.endswith(f":{tag}") and not pick.reduce and with_epi for name, pick, with_epi in timed)
    assert any(split_key(c)[3] for c in keys)       # (some were left out)
    assert _row() is None
    (done,) = firstuse._done.values()
    assert not done.kept and done.choice.source == "tuned" and "epilogue" in done.choice.why
    timed.clear()
    cute_gemm.gemm(a, b, out=Dev((M, N), 0x6000_0000), epilogue=ep)
    assert not timed and ran[-1] == f"{fast}:{tag}"
    # a graph captured after it records the tuned fused kernel, and times nothing
    events.capturing = True
    cute_gemm.gemm(a, b, out=Dev((M, N), 0x6000_0000), epilogue=ep, stream=0x77)
    events.capturing = False
    assert not timed and ran[-1] == f"{fast}:{tag}"

"""Batches: (..., M, K) @ (..., K, N) read as numpy.matmul reads them. A kernel walks at most
two batch modes (CG_BATCH_PARAMS), each operand with its own strides (0 where broadcast):
`flatten` merges the modes into two; `fold` makes one taller GEMM where B is shared."""
from __future__ import annotations

from dataclasses import replace

from ..base.errors import ShapeError

Z_MAX = 65535     # a launch's grid z: a larger batch is launched in pieces (z0)


def broadcast(lead_a: tuple[int, ...], lead_b: tuple[int, ...]) -> tuple[int, ...]:
    """The batch of a (..., M, K) @ (..., K, N) product by numpy's rule; ShapeError where the
    leading extents clash."""
    n = max(len(lead_a), len(lead_b))
    a, b = (1,) * (n - len(lead_a)) + lead_a, (1,) * (n - len(lead_b)) + lead_b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ShapeError(f"the batch extents of a {lead_a} and b {lead_b} do not broadcast "
                             f"({x} against {y})")
        out.append(y if x == 1 else x)
    return tuple(out)


def stretched(lead: tuple[int, ...], strides: tuple[int, ...], batch: tuple[int, ...]
              ) -> tuple[int, ...]:
    """An operand's leading strides over the whole batch: 0 along the modes it is broadcast."""
    pad = len(batch) - len(lead)
    return (0,) * pad + tuple(0 if x == 1 else s for x, s in zip(lead, strides))


def flatten(batch: tuple[int, ...], strides: dict) -> tuple[tuple[int, int], dict]:
    """((outer, inner) extents, role -> (outer, inner) strides) of a batch whose operands step
    by `strides` (role -> `stretched`): modes of extent 1 dropped, neighbours merged where every
    operand steps evenly across both; ShapeError where three or more remain."""
    modes = [(x, {r: s[i] for r, s in strides.items()}) for i, x in enumerate(batch) if x != 1]
    merged: list = []
    for x, st in modes:
        if merged:
            px, pst = merged[-1]
            if all(pst[r] == st[r] * x for r in st):
                merged[-1] = (px * x, st)
                continue
        merged.append((x, st))
    if len(merged) > 2:
        raise ShapeError(f"a batch of shape {batch} with these strides has {len(merged)} modes "
                         "that do not merge (at most 2 do): make the operands contiguous or "
                         "broadcast fewer modes")
    merged = [(1, {r: 0 for r in strides})] * (2 - len(merged)) + merged
    (l0, s0), (l1, s1) = merged
    return (l0, l1), {r: (s0[r], s1[r]) for r in strides}


def fold(count: tuple[int, int], ops: dict) -> dict | None:
    """The operands (role -> Operand) as one (L * M, K) @ (K, N) problem where B is broadcast
    and every other operand's problems lie one after another down its rows; else None."""
    l0, l1 = count
    if l0 != 1 or ops["b"].bstrides != (0, 0):
        return None
    out = {}
    for r, op in ops.items():
        if r == "b":
            out[r] = replace(op, bcount=(1, 1), bstrides=(0, 0))
            continue
        (m, cols), (sm, sc), step = op.shape, op.strides, op.bstrides[1]
        if m == 1:
            sm = step           # (a one-row problem: its row stride is never used)
        elif step != m * sm:
            return None
        out[r] = replace(op, shape=(l1 * m, cols), strides=(sm, sc), bcount=(1, 1),
                         bstrides=(0, 0))
    return out


def plan(A, B, C, O, can_fold: bool = True):
    """(A, B, C, O, result shape, new result) of a call with N-D operands: the batch broadcast,
    flattened and, where it can (and can_fold), folded. new result: (shape, strides, batch,
    batch strides) of the row-major result run() allocates where out is None."""
    batch = broadcast(A.lead, B.lead)
    m, n = A.shape[0], B.shape[1]
    if O is not None and O.lead != batch:
        raise ShapeError(f"out must have shape {batch + (m, n)} (a @ b), got {O.lead + O.shape}")
    if C is not None and (len(C.lead) > len(batch) or any(
            x not in (1, y) for x, y in zip(C.lead[::-1], batch[::-1]))):
        raise ShapeError(f"c of shape {C.lead + C.shape} does not broadcast to the result's "
                         f"{batch + (m, n)}")
    ops = {"a": A, "b": B, "c": C, "out": O}
    steps = {r: stretched(op.lead, op.lead_strides, batch) for r, op in ops.items()
             if op is not None}
    rows = [1] * len(batch)             # a new result's strides, row-major
    for i in range(len(batch) - 2, -1, -1):
        rows[i] = rows[i + 1] * max(batch[i + 1], 1)
    steps["new"] = tuple(0 if x == 1 else r * m * n for x, r in zip(batch, rows))
    count, st = flatten(batch, steps)
    made = replace(A, name="out", obj=None, ptr=0, shape=(m, n), strides=(n, 1), host=None,
                   stream=None, readonly=False, lead=(), lead_strides=())
    ops = {r: replace(op, bcount=count, bstrides=st[r], lead=(), lead_strides=())
           for r, op in ops.items() if op is not None}
    ops["new"] = replace(made, bcount=count, bstrides=st["new"])
    folded = fold(count, ops) if can_fold else None
    ops = folded or ops
    new = ops.pop("new")
    return (ops["a"], ops["b"], ops.get("c"), ops.get("out"), batch + (m, n),
            None if O is not None else (new.shape, new.strides, new.bcount, new.bstrides))

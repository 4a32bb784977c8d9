"""What gemm()'s selector answers (select/auto.py, nearest.py): the kernel, its launch (as
given or transposed, split along K) and why; and its name in a tune table (autotable.py),
Choice.key, whose inverse is split_key."""
from __future__ import annotations

from dataclasses import dataclass

from . import autotable
from ..registry.records import Pick


@dataclass(frozen=True)
class Choice:
    """What gemm() runs: `kernel` (on the transposed problem when `transposed`; with a
    stream-K launch of split_k CTAs per tile when split_k > 0, records.Pick), and why:
    `source` "table" (this problem was measured), "nearest" (the nearest measured one) or
    "heuristic" (no table row of this precision and layout), with the row or the rule."""
    kernel: str
    transposed: bool = False
    source: str = "heuristic"
    why: str = ""
    split_k: int = 0
    reduce: bool = False     # the split's shares summed by a reduction launch (Pick.reduce)
    # the arithmetic the kernel runs, where it is not the precision asked for but keeps its
    # promise (contract.answering: fp32_3xtf32 answered by SIMT fp32); None: the one asked for
    precision: str | None = None
    ms: float | None = None  # its time from the tables (measured or scaled); None: a rule's

    @property
    def key(self) -> str:
        """The candidate's name in a tune table: the kernel, + ".T" on the transposed problem,
        + "/splitkS" with S CTAs per tile (reduced by the twin), or "/splitrS" (by a
        reduction launch)."""
        return (self.kernel + (autotable.TRANSPOSED if self.transposed else "")
                + (f"{autotable.SPLIT_R if self.reduce else autotable.SPLIT_K}{self.split_k}"
                   if self.split_k else ""))

    @property
    def pick(self) -> Pick:
        """How the kernel is launched (execute.gemm_device)."""
        return Pick(self.transposed, self.split_k, self.reduce and self.split_k > 0)

    def __str__(self) -> str:
        return (f"{self.key}{f' in {self.precision}' if self.precision else ''} "
                f"({self.source}: {self.why})")


def split_key(key: str) -> tuple[str, bool, int, bool]:
    """A tune table's candidate key -> (kernel, transposed, split_k, reduce); Choice.key's
    inverse."""
    reduce = autotable.SPLIT_R in key
    key, _, s = key.partition(autotable.SPLIT_R if reduce else autotable.SPLIT_K)
    t = key.endswith(autotable.TRANSPOSED)
    split_k = int(s) if s.isdigit() else 0
    return (key[:-len(autotable.TRANSPOSED)] if t else key), t, split_k, reduce and split_k > 0

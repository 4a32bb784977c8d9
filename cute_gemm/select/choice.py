"""What gemm()'s selector answers: the kernel, its launch and why; Choice.key names it in a
tune table, split_key reads that name back."""
from __future__ import annotations

from dataclasses import dataclass

from . import autotable
from .. import registry
from ..registry.records import Pick


@dataclass(frozen=True)
class Choice:
    """What gemm() runs: `kernel`, on C^T = B^T A^T when `transposed`, with split_k CTAs per
    tile when split_k > 0 (records.Pick); and why: `source` "table" (this problem measured),
    "nearest" (nearby ones), "tuned" (timed on first use) or "heuristic", with the row or rule."""
    kernel: str
    transposed: bool = False
    source: str = "heuristic"
    why: str = ""
    split_k: int = 0
    reduce: bool = False     # the split's shares summed by a reduction launch (Pick.reduce)
    # the arithmetic it runs where that is not the one asked for but keeps its contract
    # (contract.answering: fp32_3xtf32 by SIMT fp32); None: the one asked for
    precision: str | None = None
    ms: float | None = None  # its time from the tables (measured or scaled); None: a rule's

    @property
    def key(self) -> str:
        """Its name in a tune table: the kernel, + ".T" transposed, + "/splitkS" (S CTAs per
        tile reduced by the twin) or "/splitrS" (by a reduction launch)."""
        return (self.kernel + (autotable.TRANSPOSED if self.transposed else "")
                + (f"{autotable.SPLIT_R if self.reduce else autotable.SPLIT_K}{self.split_k}"
                   if self.split_k else ""))

    @classmethod
    def of_key(cls, key: str, **fields) -> Choice:
        """The choice a tune table's candidate `key` names, with `fields` (source, why, ...)."""
        kernel, transposed, split_k, reduce = split_key(key)
        return cls(kernel, transposed, split_k=split_k, reduce=reduce, **fields)

    @property
    def pick(self) -> Pick:
        """How the kernel is launched (execute.gemm_device)."""
        return Pick(self.transposed, self.split_k, self.reduce and self.split_k > 0)

    def fuses(self, blocks: bool = False) -> bool:
        """Whether it runs a fused epilogue as it is: a kernel that takes one, whose last
        launch stores the result (not a split's reduction launch); `blocks` (block scales, per
        row of A and 128 columns of B): on the problem as given, by a kernel that takes them."""
        x = registry.get(self.kernel)
        return (x.takes_epilogue and not (self.split_k and self.reduce)
                and (not blocks or not self.transposed and x.takes_block_scales))

    def __str__(self) -> str:
        return (f"{self.key}{f' in {self.precision}' if self.precision else ''} "
                f"({self.source}: {self.why})")


def split_key(key: str) -> tuple[str, bool, int, bool]:
    """Choice.key's inverse: a table's candidate -> (kernel, transposed, split_k, reduce)."""
    reduce = autotable.SPLIT_R in key
    key, _, s = key.partition(autotable.SPLIT_R if reduce else autotable.SPLIT_K)
    t = key.endswith(autotable.TRANSPOSED)
    split_k = int(s) if s.isdigit() else 0
    return (key[:-len(autotable.TRANSPOSED)] if t else key), t, split_k, reduce and split_k > 0

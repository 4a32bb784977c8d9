"""The one place perf asks the runtime for what it keeps private.

run() chooses a variant (api._choose), holds a per-(kernel, device) plan with the loaded
functions (api._plan) and makes a device's primary context current
(launch._ensure_context). The bench needs the same answers: whether a layout is taken
without a relayout copy, the function run() would launch (to time a raw launch of it),
and a current context before it asks for free memory. Until the runtime names these
publicly, every such call goes through this module and nowhere else in perf.
"""
from __future__ import annotations

from .. import api, launch, registry
from ..arrays import Operand


def resolve(kernel: registry.Kernel, ops: dict[str, Operand], ordinal: int | None = None):
    """(variant, roles run() would copy first, function) for operands a, b, c. With no
    ordinal nothing is compiled or loaded (pure CPU) and the function is None."""
    variant, copies = api._choose(kernel, ops)
    fn = None if ordinal is None else api._plan(kernel, ordinal).function(variant.entry)
    return variant, copies, fn


def make_current(ordinal: int) -> None:
    """Make the device's primary context current (the one CuPy and PyTorch share)."""
    launch._ensure_context(ordinal)

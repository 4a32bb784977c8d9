"""What perf asks of the runtime, in one place: the variant run() chooses for a layout (and
whether it copies first), the function it would launch, a current primary context (the one
CuPy and PyTorch share), and compiles started ahead in parallel."""
from __future__ import annotations

from .. import driver, registry
from ..build import cache
from ..plan import resolve as _resolve
from ..driver.arrays import Operand


def resolve(kernel: registry.Kernel, ops: dict[str, Operand], precision: str = "fp32",
            out_dtype: str = "float32", ordinal: int | None = None):
    """(variant, roles run() would copy first, function) for operands a, b, c; with no
    ordinal nothing is compiled or loaded (pure CPU) and the function is None."""
    swap = _resolve.swapped(kernel, ops["a"].shape[0], ops["b"].shape[1])
    variant, copies = _resolve.choose(kernel, _resolve.oriented(swap, ops), precision, out_dtype)
    fn = None if ordinal is None else _resolve.loaded(kernel, ordinal).function(variant.entry)
    return variant, copies, fn


def make_current(ordinal: int) -> None:
    driver.ensure_context(ordinal)


def compile_ahead(kernels, arch_int: int):
    """Start compiling `kernels` (and the kernels a composed one runs) for compute capability
    `arch_int` into the disk cache in a pool of processes: a cache.Prefetch, to be closed."""
    todo = list(kernels)
    todo += [k.gemm_of.kernel for k in todo if k.gemm_of is not None]
    jobs = list(dict.fromkeys((k.name, k.target(arch_int), False) for k in todo
                              if k.runs_on(arch_int)))
    # one compile: in this process (a spawned worker would cost more than it saves)
    return cache.Prefetch(jobs if len(jobs) > 1 else [])

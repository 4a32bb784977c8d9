"""The kernel registry: every kernel cute_gemm knows, in ladder order (ladder_handwritten.py,
ladder_cute.py, ladder_hopper.py; the record types, re-exported here: records.py). CLI, tests,
bench, README table and layout dumps all loop over KERNELS; nothing else lists kernels."""
from __future__ import annotations

from ..base.errors import UnknownKernelError
from .epilogue import ACTIVATIONS, EpilogueSpec  # noqa: F401
from .ladder_cute import CUTE, SHAPES
from .ladder_handwritten import HANDWRITTEN
from .ladder_hopper import HOPPER
from .records import (ARCHS, EXTENT_MAX, FP32_ACCURATE, GRID_X_MAX, GRID_YZ_MAX, ITEMSIZE, LAYOUTS,  # noqa: F401
                      PRECISION_DTYPE, PRECISIONS, CutModel, FixedSmem, FlatGrid, GemmOf, Kernel,
                      KernelConfig, PersistentGrid, RowGrid, SplitGrid, StripSmem, TileGrid,
                      TileGridMN, TmaBoxes, Variant, fused_name, layout_majors)

KERNELS: tuple[Kernel, ...] = tuple(HANDWRITTEN) + tuple(CUTE) + tuple(HOPPER) + tuple(SHAPES)
_BY_NAME = {k.name: k for k in KERNELS}
# the GEMMs composed kernels run that are not registered (GemmOf.kernel): compiled, cached and
# checked like every kernel, never called by name
_INTERNAL = tuple(dict.fromkeys(k.gemm_of.kernel for k in KERNELS
                                if k.gemm_of is not None and k.gemm_of.kernel.name not in _BY_NAME))

# not a kernel: the name under which run(), cross_check(), bench and the CLI take gemm()'s pick
AUTO = "auto"


def kernels(family: str | None = None) -> tuple[Kernel, ...]:
    """All registered kernels in ladder order (optionally one family)."""
    return tuple(k for k in KERNELS if family is None or k.family == family)


def names() -> tuple[str, ...]:
    """The registered kernels' names, in ladder order."""
    return tuple(k.name for k in KERNELS)


def compiled(family: str | None = None) -> tuple[Kernel, ...]:
    """Every kernel that is compiled: the registered ones, then composed kernels' unregistered GEMMs."""
    return kernels(family) + tuple(k for k in _INTERNAL if family is None or k.family == family)


def find(name: str) -> Kernel:
    """A kernel of compiled() by name (for the tools that take those too: compile, sanitize)."""
    return next((k for k in _INTERNAL if k.name == name), None) or get(name)


def lookup(name: str) -> Kernel | None:
    """The registered kernel of that name, else None (a name read from a file)."""
    return _BY_NAME.get(name)


def get(name: str) -> Kernel:
    """The registered kernel `name`, or a fused compile of one, <kernel>:<epilogue tag>
    (Kernel.with_epilogue); UnknownKernelError for anything else."""
    try:
        return _BY_NAME[name]
    except KeyError:
        if ":" in name:
            return _fused(name)
        also = "" if name == AUTO else f" (run, check and bench also take {AUTO!r}: gemm()'s pick)"
        raise UnknownKernelError(
            f"unknown kernel {name!r}; valid kernels: {', '.join(names())}{also}") from None


def get_fused(name: str, spec: EpilogueSpec | None) -> Kernel:
    """The registered kernel `name` compiled with the fused epilogue `spec` (None: as
    registered)."""
    return get(name if spec is None else fused_name(name, spec))


def check_name(name: str) -> str:
    """`name` if it is a registered kernel or AUTO, else UnknownKernelError."""
    return name if name == AUTO else get(name).name


def _fused(name: str) -> Kernel:
    """A kernel compiled with a fused epilogue, by its name (once per name)."""
    k = _FUSED.get(name)
    if k is None:
        base, tag = name.split(":", 1)
        kernel = get(base)
        try:
            spec = EpilogueSpec.parse(tag)
        except ValueError:
            spec = None
        if spec is None or not kernel.takes_epilogue:
            raise UnknownKernelError(f"unknown kernel {name!r}: {base!r} takes no epilogue "
                                     f"{tag!r}; kernels with fused epilogues: "
                                     f"{', '.join(x.name for x in KERNELS if x.takes_epilogue)}")
        k = _FUSED.setdefault(name, kernel.with_epilogue(spec))
    return k


_FUSED: dict[str, Kernel] = {}

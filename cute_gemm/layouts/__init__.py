"""Layout dumps of the CuTe kernels (`cute-gemm layouts`): algebra (what pycute lacks), model
(a dump's vocabulary), recipes (each kernel's layouts), analysis (bank maps, TMA boxes, the
self-check), text and draw (CuTe's text, thread maps, SVG / PNG pictures)."""
from .algebra import fmt
from .model import PROBLEM, THREAD
from .recipes import build, has_recipe
from .text import describe, dump_text

__all__ = ["fmt", "PROBLEM", "THREAD", "build", "has_recipe", "describe", "dump_text"]

"""Layout dumps of the CuTe kernels (`cute-gemm layouts`): algebra (what pycute lacks), model
(a dump's vocabulary and its self-checks), recipes (each kernel's layouts), draw (text, SVG, PNG)."""
from .algebra import fmt
from .draw import describe, dump_text
from .model import PROBLEM, THREAD
from .recipes import build, has_recipe

__all__ = ["fmt", "PROBLEM", "THREAD", "build", "has_recipe", "describe", "dump_text"]

"""Layout dumps of the CuTe kernels (`cute-gemm layouts`): algebra (what pycute lacks), model
(a dump's vocabulary), recipes (each kernel's layouts), analysis (bank maps, TMA boxes, the
self-check), text and draw (CuTe's text, thread maps, SVG / PNG pictures)."""
from .algebra import (Dyn, Layout, View, fmt, local_partition, local_tile, make_layout,
                      print_layout, product_each, size, value)
from .model import PROBLEM, THREAD, Def, Item, Recipe, Section
from .recipes import build, has_recipe
from .text import describe, dump_text, item_text

__all__ = ["Dyn", "Layout", "View", "fmt", "local_partition", "local_tile", "make_layout",
           "print_layout", "product_each", "size", "value", "PROBLEM", "THREAD", "Def", "Item",
           "Recipe", "Section", "build", "has_recipe", "describe", "dump_text", "item_text"]

"""Layout dumps of the CuTe kernels (`cute-gemm layouts`, scripts/print_layouts.py).

    algebra   what pycute lacks: run-time integers, CuTe's print formats, local_tile /
              local_partition, TiledCopy / TiledMMA and the MMA atoms
    model     the vocabulary of a dump: named layouts, tensors, partitions, items, recipes
    recipes   each kernel's layouts, once, from its registry entry and instantiation lines
    analysis  partition owners and coverage, bank maps, TMA boxes, the self-check
    text      CuTe's text and the T#/V# maps;  draw: SVG / PNG pictures and their gallery
"""
from .algebra import (Dyn, Layout, View, fmt, local_partition, local_tile, make_layout,
                      print_layout, product_each, size, value)
from .model import PROBLEM, THREAD, Def, Item, Recipe, Section
from .recipes import build, has_recipe
from .text import describe, dump_text, item_text

__all__ = ["Dyn", "Layout", "View", "fmt", "local_partition", "local_tile", "make_layout",
           "print_layout", "product_each", "size", "value", "PROBLEM", "THREAD", "Def", "Item",
           "Recipe", "Section", "build", "has_recipe", "describe", "dump_text", "item_text"]

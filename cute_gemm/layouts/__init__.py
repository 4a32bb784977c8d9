"""Layout dumps of the CuTe kernels (`cute-gemm layouts`, scripts/print_layouts.py).

    algebra   what pycute lacks: run-time integers, CuTe's print formats, local_tile /
              local_partition, TiledCopy / TiledMMA TV layouts and partitions
    model     the vocabulary of a dump: the kernel's named layouts, tensors, partitions, items
    recipes   each kernel's layouts, once, from its registry entry and instantiation lines
              (recipes_sm90: the GMMA kernels' swizzled smem, TMA boxes and wgmma fragments;
              atoms: the SM80 / SM90 MMA atoms as CuTe's traits define them)
    analysis  partition owners and coverage, shared-memory bank conflicts, the self-check
    text      CuTe's text and the T#/V# maps;  draw: SVG / PNG pictures
    cppcheck  the kernel source compiled with nvcc prints the same layouts (tests)
"""
from .algebra import (Dyn, Layout, View, cosize, fmt, get, local_partition, local_tile,
                      make_layout, print_layout, product_each, rank, size, value)
from .model import PROBLEM, THREAD, Def, Item, Recipe, Section
from .recipes import RECIPES, build, has_recipe
from . import recipes_sm90  # noqa: F401   importing it registers the c5 / c6 recipes
from .atoms import swizzle_atom
from .text import describe, dump_text, expected_output, item_text, split_dump

__all__ = ["Dyn", "Layout", "View", "cosize", "fmt", "get", "local_partition", "local_tile",
           "make_layout", "print_layout", "product_each", "rank", "size", "value", "PROBLEM",
           "THREAD", "Def", "Item", "Recipe", "Section", "RECIPES", "build", "has_recipe",
           "describe", "dump_text", "expected_output", "item_text", "split_dump", "swizzle_atom"]

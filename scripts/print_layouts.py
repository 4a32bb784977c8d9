#!/usr/bin/env python3
"""Print or draw every layout of the CuTe kernels (same as `cute-gemm layouts`).

    scripts/print_layouts.py [KERNEL ...] [--format text|svg|png] [--out DIR] [--thread T]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cute_gemm.cli.layouts import add_arguments, run

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    a = p.parse_args()
    sys.exit(run(a.kernels, a.format, a.out, a.thread, a.shape, a.full))

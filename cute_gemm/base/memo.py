"""Bounded memos: what a module keeps per key (choices, launches, signatures) is forgotten
all at once past a limit. A program's working set of shapes and signatures is small; a
sweep over many shapes must not grow them without end, and a cleared memo only costs the
next call the full path. Each memo checks its bound where it inserts (two lines, not a
helper: the insert sits on a call's first path, where every call is a stop)."""
from __future__ import annotations

ENTRIES = 4096

"""Bounded memos: what a module keeps per key (choices, launches, signatures) is forgotten
all at once past a limit. A program's working set of shapes and signatures is small; a
sweep over many shapes must not grow them without end, and a cleared memo only costs the
next call the full path."""
from __future__ import annotations

ENTRIES = 4096


def keep(memo: dict, key, value, limit: int = ENTRIES):
    """memo[key] = value, after forgetting everything if memo holds `limit` entries; value."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value

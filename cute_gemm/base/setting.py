"""A choice the environment sets for the process and a `with` block may set for its own
context (thread): CUTE_GEMM_TUNE, CUTE_GEMM_FIRST_CALL, CUTE_GEMM_LINEINFO."""
from __future__ import annotations

import contextlib
import contextvars
import os

from .errors import InputError


class Setting:
    """The value of environment variable `var`, one of `choices` (the first: the default),
    unless `within` set another for this context; InputError for any other value."""

    def __init__(self, var: str, choices: tuple[str, ...]):
        self.var, self.choices = var, choices
        self._within: contextvars.ContextVar[str | None] = contextvars.ContextVar(var, default=None)

    def __call__(self) -> str:
        v = self._within.get()
        if v is not None:
            return v
        v = os.environ.get(self.var, "").strip().lower() or self.choices[0]
        if v not in self.choices:
            raise InputError(f"{self.var} must be one of {', '.join(self.choices)}, "
                             f"got {os.environ[self.var]!r}")
        return v

    @contextlib.contextmanager
    def within(self, value: str):
        """`value` for the block (usable as a decorator too)."""
        token = self._within.set(value)
        try:
            yield
        finally:
            self._within.reset(token)

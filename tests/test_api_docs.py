"""The public calls describe themselves: every argument and the result annotated (with
names that resolve), and a Google-style docstring (what mkdocs renders, docs/api.md) whose
Args name every argument, with Returns and Raises sections. Pure CPU."""
from __future__ import annotations

import inspect
import pydoc
import re
import typing

import pytest

import cute_gemm
from cute_gemm.driver import arrays
from cute_gemm.registry import records

CALLS = ("gemm", "run", "cross_check", "gemm_choice", "compile_kernel")


@pytest.mark.parametrize("name", CALLS)
def test_public_calls_are_annotated_and_documented(name):
    fn = getattr(cute_gemm, name)
    fn = inspect.unwrap(fn)
    hints = typing.get_type_hints(fn)                 # every annotation resolves
    params = list(inspect.signature(fn).parameters)
    assert set(params) | {"return"} == set(hints), (name, set(params) ^ set(hints))
    doc = inspect.getdoc(fn)
    sections = re.findall(r"^(Args|Returns|Raises):$", doc, re.M)
    assert sections == ["Args", "Returns", "Raises"], (name, sections)
    args = doc.split("\nArgs:\n", 1)[1].split("\nReturns:\n", 1)[0]
    documented = re.findall(r"^    (\w+):", args, re.M)
    assert documented == params, (name, documented)
    raises = doc.split("\nRaises:\n", 1)[1]
    for err in re.findall(r"^    (\w+)", raises, re.M):
        assert isinstance(getattr(cute_gemm, err, None) or getattr(cute_gemm.base.errors, err), type), err


def test_help_names_inputs_result_and_errors():
    text = pydoc.render_doc(cute_gemm.gemm, renderer=pydoc.plaintext)
    for word in ("a: 'ArrayLike'", "precision: 'PrecisionName | None'", "-> 'ArrayLike'",
                 "Returns:", "Raises:", "InputError", "ShapeError", "DTypeError"):
        assert word in text, word


def test_the_literal_names_are_the_tables():
    assert typing.get_args(records.PrecisionName) == records.PRECISIONS
    assert typing.get_args(records.LayoutName) == records.LAYOUTS
    assert typing.get_args(arrays.DTypeName) == arrays.SUPPORTED_DTYPES == cute_gemm.SUPPORTED_DTYPES

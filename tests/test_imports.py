"""The import graph of cute_gemm: no cycles, and perf's data flowing one way.

Only imports that run at import time count: statements at module level (inside `if`/`try`
too, but not under `if TYPE_CHECKING:`), plus those in module-level functions that the
module body itself calls while it is imported (registry.py builds KERNELS by calling
_tables(), whose imports run as surely as a top-level one). An import inside any other
function runs later, when every module is loaded, and cannot deadlock an import.
Pure CPU, parses the sources, imports nothing.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cute_gemm

PKG = Path(cute_gemm.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[1]

# Cycles tolerated for now, each with why (none: registry, ladders and records form a chain).
# test_no_import_cycle xfails (strictly) while any is left; a cycle not listed here fails
# test_no_new_import_cycle at once.
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}


def _modules(root: Path = PKG) -> dict[str, tuple[Path, bool]]:
    """dotted name -> (file, is a package) for every .py under the package."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _is_type_checking(node: ast.AST) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
           (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _import_time_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: list = []
    called: list[str] = []

    def walk(nodes):
        for n in nodes:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or _is_type_checking(n):
                continue
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                found.append(n)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in funcs:
                called.append(n.func.id)
            walk(list(ast.iter_child_nodes(n)))

    walk(tree.body)
    seen = set()
    while called:                      # module-level functions run during the import
        name = called.pop()
        if name in seen:
            continue
        seen.add(name)
        walk(funcs[name].body)
    return found


def import_graph(root: Path = PKG) -> dict[str, set[str]]:
    """module -> the cute_gemm modules it imports at import time."""
    mods = _modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        pkg = m if is_pkg else m.rpartition(".")[0]
        for n in _import_time_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            else:
                if n.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - (n.level - 1)]
                    t = ".".join(base + ([n.module] if n.module else []))
                else:
                    t = n.module or ""
                # `from X import y`: the submodule X.y if there is one, else X itself
                targets = [f"{t}.{a.name}" if f"{t}.{a.name}" in mods else t for a in n.names]
            for t in targets:
                # importing a.b.c first imports the packages a.b and a (those that m is
                # not already inside, which are being imported anyway)
                parts = t.split(".")
                for i in range(1, len(parts) + 1):
                    name = ".".join(parts[:i])
                    if name in mods and name != m and not (m + ".").startswith(name + "."):
                        edges[m].add(name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


# ---- the checker itself ------------------------------------------------------------------
def test_checker_finds_cycles_and_import_time_calls(tmp_path):
    pkg = tmp_path / "demo"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from .b import y\nx = 1\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\ny = 2\n")       # lazy: no edge
    (pkg / "c.py").write_text("def g():\n    from . import d\nT = g()\n")    # runs at import
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .e import z\nfrom .c import T\n")
    (pkg / "e.py").write_text("from .sub import deep\nfrom .. import nothing\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "deep.py").write_text("from ..e import q\n")
    g = import_graph(pkg)
    assert g["demo"] == {"demo.a"} and g["demo.a"] == {"demo.b"} and g["demo.b"] == set()
    assert g["demo.c"] == {"demo.d"} and g["demo.d"] == {"demo.c"}
    assert g["demo.e"] == {"demo.sub", "demo.sub.deep"} and g["demo.sub.deep"] == {"demo.e"}
    assert cycles(g) == [("demo.c", "demo.d"), ("demo.e", "demo.sub.deep")]


# ---- cute_gemm --------------------------------------------------------------------------
def test_no_new_import_cycle():
    new = [c for c in cycles(import_graph()) if c not in KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"


@pytest.mark.xfail(bool(KNOWN_CYCLES), strict=True, reason="known cycles outside perf: " +
                   "; ".join(f"{' <-> '.join(c)}: {why}" for c, why in KNOWN_CYCLES.items()))
def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_perf_data_flows_one_way():
    """runner -> schema <- report/plots: the records (and the sweep's data) import no other
    perf module, the outputs never import the runner, and only the package root, the CLI and
    tune (which checks and times as bench does) reach the runner. No perf module uses a
    private name of the runtime."""
    g = import_graph()
    perf = {m for m in g if m.startswith("cute_gemm.perf.")}
    assert g["cute_gemm.perf.schema"] & perf == set()
    assert g["cute_gemm.perf.sweep"] & perf == set()
    for m in ("cute_gemm.perf.report", "cute_gemm.perf.plots", "cute_gemm.perf.stats"):
        assert g[m] & perf <= {"cute_gemm.perf.schema", "cute_gemm.perf.stats", "cute_gemm.perf.plots",
                               "cute_gemm.perf.sweep"}, m
    assert {m for m in g if "cute_gemm.perf.runner" in g[m]} <= {"cute_gemm", "cute_gemm.perf.tune", "cute_gemm.cli", "cute_gemm.cli.bench"}
    for path in (PKG / "perf").glob("*.py"):
        text = path.read_text()
        private = [w for w in ("api._", "launch._") if w in text]
        assert not private, (path.name, private)


def test_every_subpackage_is_shipped():
    """pyproject lists packages explicitly: a new subpackage must be added there."""
    tomllib = pytest.importorskip("tomllib", reason="Python < 3.11 has no tomllib")
    project = REPO / "pyproject.toml"
    if not project.exists():
        pytest.skip("no pyproject.toml beside the tests")
    listed = set(tomllib.loads(project.read_text())["tool"]["setuptools"]["packages"])
    src = REPO / "cute_gemm"
    found = {".".join(p.parent.relative_to(REPO).parts) for p in src.rglob("__init__.py")}
    assert found <= listed, f"not in pyproject's packages: {sorted(found - listed)}"


def test_import_cute_gemm_stays_lean():
    """`import cute_gemm` is part of a fresh process's first call (docs/design/first_call.md,
    the warm path): it loads neither the CUDA bindings (imported at the first launch or
    compile) nor what only some commands need (check, the bench runner, importlib.metadata,
    subprocess for compiles side by side, filelock for a compile's lock, plotting, the array
    libraries)."""
    import subprocess
    import sys
    heavy = ("cute_gemm.check", "cute_gemm.perf.runner", "importlib.metadata", "subprocess",
             "cuda.bindings", "matplotlib", "cupy", "torch", "filelock")
    code = ("import sys, cute_gemm; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=REPO.parent)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# ---- floors ----------------------------------------------------------------------------------
# the subpackages from the bottom up; "" is the package's own modules (api, check, torch: what
# users call). A module imports only its own floor and those below, counting the imports made
# inside functions (house.py counts those too): a lower floor that must reach up takes a
# callback (api.set_autograd), never an import.
FLOORS = ("base", "registry", "build", "driver", "plan", "select", "", "layouts", "perf", "cli")


def _floor(module: str) -> int:
    parts = module.split(".")
    if parts[1:] == ["__main__"]:           # `python -m cute_gemm`: the command line
        return FLOORS.index("cli")
    return FLOORS.index(parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS)
                        else "")


def test_every_module_imports_only_its_floor_and_those_below():
    mods = _modules()
    assert {m.split(".")[1] for m in mods if m.count(".") >= 2} <= set(FLOORS)
    bad = []
    for m, (path, is_pkg) in mods.items():
        pkg = m if is_pkg else m.rpartition(".")[0]
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(n, ast.ImportFrom):
                continue
            if n.level:
                base = pkg.split(".")[:len(pkg.split(".")) - (n.level - 1)]
                t = ".".join(base + ([n.module] if n.module else []))
            elif (n.module or "").startswith("cute_gemm"):
                t = n.module
            else:
                continue
            for a in n.names:
                target = f"{t}.{a.name}" if f"{t}.{a.name}" in mods else t
                if target != "cute_gemm" and _floor(target) > _floor(m):
                    bad.append(f"{m} ({FLOORS[_floor(m)] or 'cute_gemm'}) imports {target} "
                               f"({FLOORS[_floor(target)] or 'cute_gemm'})")
    assert not bad, "\n".join(bad)

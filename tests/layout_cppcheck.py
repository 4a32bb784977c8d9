"""The layouts the compiled kernel uses, printed by CuTe C++: the drift check of the dumps
(cute_gemm.layouts), used by tests/test_layouts.py.

For one kernel, a generated program holds the kernel's own source as NVRTC compiles it
(compile.read_source: kernels/cute/*.cu, after the prelude of its registry config) and prints, with CuTe's `print` and `print_layout`, every item of the
kernel's recipe, built from what the kernel defines by name (`Def.cpp`: `smem_layout_a()`,
`VecMN<BLK_N>{}`, `cg::PipeGeometry<Config>::TiledMma{}`, ...) and the same CuTe calls the
kernel makes (local_tile, local_partition, partition_S/D, partition_A/B/C). nvcc compiles it
with the include folders NVRTC builds the kernel with; device code
is left out of the device pass (the program is host code under `#ifndef __CUDA_ARCH__`).
tests/test_layouts.py requires its output to equal the dump's, byte for byte
(expected_output): a kernel whose tile, padding, thread layout, copy or TiledMMA
changes without its recipe (or the other way round) fails there.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from typing import Iterable

from cute_gemm.build import compile as _compile
from cute_gemm.build import paths
from cute_gemm.layouts.model import STEPS, TV, Def, Item, Part, Recipe, Smem
from cute_gemm.layouts.draw import COMPUTED, item_text

STRIDE_VARS = {"A": ("sAm", "sAk"), "B": ("sBn", "sBk"), "C": ("sCm", "sCn")}   # CG_GEMM_PARAMS


def owners_text(it: Item) -> str:
    return "owners " + " ".join("/".join(map(str, o)) for o in it.owners) + "\n"


def expected_output(recipes: Iterable[Recipe]) -> str:
    """What the C++ check program must print, computed in Python."""
    return "".join(item_text(it) + (owners_text(it) if it.kind == "partition" else "")
                   for rec in recipes for it in rec.items() if it.kind not in COMPUTED)


def split_dump(text: str) -> dict[str, str]:
    """Check program or expected output -> {item name: its text (with the owners line)}."""
    return {name: rest for name, _, rest in (c.partition("\n") for c in text.split("@@ ")[1:])}

_HELPERS = r"""
#include <cstdio>
#include <map>
#include <vector>

static float cg_pool_storage[1 << 22];
static float* const cg_pool = cg_pool_storage;   // offsets only: never read or written

template <class L> void cg_grid(L const& l) {
  if constexpr (decltype(rank(l))::value == 2) print_layout(l);
  else if constexpr (decltype(rank(l))::value == 3) print_layout(l(_, _, 0));
}
template <class L> void cg_emit(const char* name, L const& l) {
  printf("@@ %s\n", name); print(l); printf("\n"); cg_grid(l);
}
template <class T> void cg_emit_part(const char* name, T const& p, float const* base) {
  printf("@@ %s\n", name); print(p.layout()); printf("\noffset %d\n", int(&p(0) - base));
  cg_grid(p.layout());
}
// For every element of `tile` (column-major), the threads whose partition holds it.
template <class F, class Tile> void cg_owners(F&& part, Tile const& tile, int nthreads,
                                              float const* base, int step = 1) {
  std::map<long, int> where;
  for (int i = 0; i < size(tile); ++i) where[long(&tile(i) - base)] = i;
  std::vector<std::vector<int>> own(size(tile));
  for (int t = 0; t < nthreads; t += step) {
    auto p = part(t);
    for (int i = 0; i < size(p); ++i) {
      auto w = where.find(long(&p(i) - base));
      if (w != where.end()) own[w->second].push_back(t);
    }
  }
  printf("owners");
  for (auto& o : own) {
    printf(" ");
    for (size_t j = 0; j < o.size(); ++j) printf(j ? "/%d" : "%d", o[j]);
  }
  printf("\n");
}
"""


def _step(step) -> str:
    return "Step<" + ", ".join("_1" if s else "X" for s in step) + ">{}"


def _tensor(src, problem) -> tuple[str, str, str]:
    """(C++ tensor expression, stride declarations, base pointer) of a Global or Smem."""
    if isinstance(src, Smem):
        return f"make_tensor(smem{src.op}, {src.layout.cpp})", "", f"smem{src.op}"
    names = STRIDE_VARS[src.op]
    decl = "long long " + ", ".join(f"{n} = {int(s)}" for n, s in zip(names, src.strides(problem))) + ";"
    stride = src.macro or f"make_stride({', '.join(names)})"
    shape = {"A": "M, K", "B": "N, K", "C": "M, N"}[src.op]
    return (f"local_tile(make_tensor({src.op}, make_shape({shape}), {stride}), cta_tiler, "
            f"cta_coord, {_step(STEPS[src.op])})", decl, src.op)


def _partition(part: Part, tensor: str) -> str:
    by = part.by.cpp
    if part.order is not None:
        tensor = f"composition({tensor}, {part.order.cpp})"
    if part.which:                      # a TiledCopy (S, D) or TiledMMA (A, B, C)
        return f"{by}.get_slice(t).partition_{part.which}({tensor})"
    step = f", {_step(part.step)}" if part.step is not None else ""
    return f"local_partition({tensor}, {by}, t{step})"


def _item(it: Item, problem) -> str:
    src = it.source
    if isinstance(src, Def):
        return f'  cg_emit("{it.name}", {src.cpp});\n'
    if isinstance(src, TV):
        return f'  cg_emit("{it.name}", {src.by.cpp}.get_layout{src.which}_TV());\n'
    tensor, decl, base = _tensor(src, problem)
    if it.kind != "partition":
        return f'  {{ {decl}\n    cg_emit("{it.name}", {tensor}.layout()); }}\n'
    # one lambda for both uses, so CuTe instantiates each partition once: thread `thread`'s
    # layout and offset, then every thread's elements mapped back to the (k-tile 0) tile
    tile = f"{tensor}(_, _, 0)" if it.src_rank == 3 else tensor
    return (f"  {{ {decl}\n    auto part = [&](int t) {{ return {_partition(it.part, tensor)}; }};\n"
            f'    cg_emit_part("{it.name}", part({it.thread}), {base});\n'
            f"    cg_owners(part, {tile}, {it.nthreads}, {base}, {it.owner_step}); }}\n")


def program(rec: Recipe) -> str:
    """The check program of one recipe: the kernel source as NVRTC sees it, then a main
    printing its items."""
    M, N, K = rec.problem
    kernel = _compile.read_source(rec.kernel)
    # the tile as the prelude names it: constexprs (TileConfig) or `struct Config` members
    tile = (("Config::blk_m", "Config::blk_n", "Config::blk_k") if "struct Config" in kernel
            else ("BLK_M", "BLK_N", "BLK_K"))
    # the layouts are host code: the device pass sees an empty file, so nvcc spends nothing
    # instantiating the kernel's entry points for it (NVRTC compiles those in test_compile)
    head = (f"// Generated by tests/layout_cppcheck.py: {rec.kernel.name}'s layouts, printed by CuTe\n"
            f"#ifndef __CUDA_ARCH__\n{kernel}\n")
    body = "".join(_item(it, rec.problem) for it in rec.items() if it.kind not in COMPUTED)
    local = "".join(f"  {d}\n" for d in rec.locals)
    return (f'{head}#line {head.count(chr(10)) + 2} "{rec.kernel.name}_layouts.cu"\n'
            f"using namespace cute;\n{_HELPERS}\nint main() {{\n"
            f"  int M = {M}, N = {N}, K = {K};\n"
            "  float *A = cg_pool, *B = cg_pool, *C = cg_pool, *smemA = cg_pool, *smemB = cg_pool, "
            "*smemC = cg_pool;\n"
            "  auto cta_tiler = make_shape(" + ", ".join(f"Int<{t}>{{}}" for t in tile) + ");\n"
            f"  auto cta_coord = make_coord(0, 0, _);\n{local}"
            f"{body}  return 0;\n}}\n#endif  // __CUDA_ARCH__\n")


def find_nvcc() -> str | None:
    for cand in (os.environ.get("CUTE_GEMM_NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    return None


def cute_include_dir() -> Path | None:
    """The CuTe headers NVRTC compiles the kernels with (the nvidia-cutlass wheel's)."""
    try:
        return next(h.path for h in paths.header_dirs() if h.role == "cutlass")
    except (paths.HeadersNotFound, StopIteration):
        return None


def flags(rec: Recipe) -> list[str]:
    """nvcc flags: include folders (no CUDA wheel headers: nvcc brings its own; the kernel's
    configuration is in the source's prelude).
    --expt-relaxed-constexpr: NVRTC compiles with -default-device (compile.options), where a
    constexpr function without __device__ serves device code too (pipelined_copies.cuh's
    StagedGroups); nvcc has no -default-device.
    -Og: at -O0 the host compiler emits each of CuTe's small helpers as a function of its own
    (a third of the time)."""
    return ["-std=c++17", "-fdevice-syntax-only", "-w", "--expt-relaxed-constexpr", "-Xcompiler=-Og",
            f"-I{paths.project_include_dir()}", f"-I{cute_include_dir()}"]


def _key(rec: Recipe, text: str, nvcc: str) -> str:
    """Everything that changes the program's output: its text (the kernel source with it),
    the project headers it includes, flags, nvcc and CuTe."""
    h = hashlib.sha256()
    for part in (text, nvcc, *flags(rec)):
        h.update(part.encode() + b"\0")
    for p in sorted(paths.project_include_dir().rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:20]


def build(recipes: list[Recipe], workdir, nvcc: str | None = None) -> list[Path]:
    """Compile one check program per recipe (in parallel; a program whose key is unchanged
    is reused from workdir). RuntimeError with nvcc's first errors if one fails."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None or cute_include_dir() is None:
        raise RuntimeError("nvcc or the CuTe headers (nvidia-cutlass wheel) not found")
    root = Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    exes, todo = [], []
    for rec in recipes:
        text = program(rec)
        exe = root / f"{rec.kernel.name}_{_key(rec, text, nvcc)}"
        exes.append(exe)
        if not exe.exists():
            src = root / f"{exe.name}.cu"
            src.write_text(text)
            todo.append((rec, exe, src))

    def one(job) -> str | None:
        rec, exe, src = job
        tmp = f"{exe}.{os.getpid()}"
        p = subprocess.run([nvcc, *flags(rec), str(src), "-o", tmp], cwd=root,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            errors = [ln for ln in p.stdout.splitlines() if "error" in ln][:8] or p.stdout.splitlines()[-20:]
            return f"{rec.kernel.name} ({rec.kernel.source}):\n  " + "\n  ".join(errors)
        os.replace(tmp, exe)
        return None

    # one nvcc per CPU: each takes 1-2 GB, and more at once only share the same cores;
    # the longest programs (the most items to print: the costliest compiles) first
    todo.sort(key=lambda job: -len(job[2].read_text()))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    with ThreadPoolExecutor(max(1, min(cpus, len(todo)))) as pool:
        failed = [f for f in pool.map(one, todo) if f]
    if failed:
        raise RuntimeError("nvcc could not build the layout check of " + "\n".join(failed))
    return exes


def run(recipes: list[Recipe], workdir, nvcc: str | None = None) -> str:
    """What CuTe prints for the recipes' items (compare with expected_output)."""
    out = []
    for exe in build(recipes, workdir, nvcc):
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"{exe.name} exited {r.returncode}: {r.stderr[-2000:]}")
        out.append(r.stdout)
    return "".join(out)


"""A fused epilogue's compile-time half: which pieces it has (bias, scales, activation,
clamp) and the type of its vectors, as the C++ type a kernel is compiled with
(include/cute_gemm/epilogue.cuh) and the tag that names that compile. The arrays and bounds
of a call are the run-time half (api.Epilogue, driver.kernel_args.EpiArgs)."""
from __future__ import annotations

from dataclasses import dataclass

ACTIVATIONS = ("relu", "gelu_erf", "gelu_tanh", "silu")
# the C++ element type of the vectors, per dtype name (16-bit ones only in CuTe sources)
VECTOR_TYPES = {"float32": "float", "bfloat16": "cute::bfloat16_t", "float16": "cute::half_t"}
# the kernel sources whose entry points take CG_EPI_PARAMS (an epilogue compiles into them)
FUSED_SOURCES = frozenset({"cute/c3_pipelined.cu", "cute/c4_mma_sm80.cu", "cute/c6_wgmma_ws.cu",
                           "cute/c8_tiny_k.cu", "handwritten/v9_warptile.cu"})
# the fused kernel that runs an epilogue with no products (K = 0 or alpha = 0): it has no
# k-tile to load, so A and B are never read (every precision, every result type)
EPILOGUE_ONLY = "cute_tiny_k"


@dataclass(frozen=True)
class EpilogueSpec:
    """The pieces of a fused epilogue a kernel is compiled with; every combination is one
    C++ type, Epilogue<bias, scale, act, clamp, TV, blocks, tensor_scale>. Row and column (a
    bias per row or per column, a row or a column scale) are run-time strides, so one compile
    serves a launch and its transposed twin. scale: row or column scales of which one at
    least is a vector; tensor_scale: each scale one value (per tensor), applied once a tile."""
    bias: bool = False
    scale: bool = False
    activation: str | None = None
    clamp: bool = False
    vector_dtype: str = "float32"
    blocks: bool = False            # 8-bit operands' block scales (Kernel.takes_block_scales)
    tensor_scale: bool = False

    def __post_init__(self):
        if self.scale and self.tensor_scale:
            raise ValueError("scale (vectors) or tensor_scale (one value each), not both")
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}")
        if self.vector_dtype not in VECTOR_TYPES:
            raise ValueError(f"unknown vector dtype {self.vector_dtype!r}")

    @property
    def tag(self) -> str:
        """The pieces, '+'-joined ("bias+gelu_tanh+bfloat16"): the suffix of the kernel name
        the epilogue compiles under (Kernel.with_epilogue)."""
        parts = (("bias", self.bias), ("scale", self.scale), ("tensor_scale", self.tensor_scale),
                 (self.activation, self.activation),
                 ("clamp", self.clamp), ("blocks", self.blocks), (self.vector_dtype, True))
        return "+".join(p for p, on in parts if on)

    @classmethod
    def parse(cls, tag: str) -> "EpilogueSpec":
        """The spec of a tag; ValueError for one that names unknown pieces."""
        *parts, vdtype = tag.split("+")
        acts = [p for p in parts if p in ACTIVATIONS]
        rest = set(parts) - set(acts)
        if len(acts) > 1 or rest - {"bias", "scale", "tensor_scale", "clamp", "blocks"}:
            raise ValueError(f"not an epilogue tag: {tag!r}")
        return cls("bias" in rest, "scale" in rest, acts[0] if acts else None, "clamp" in rest,
                   vdtype, "blocks" in rest, "tensor_scale" in rest)

    def cpp(self) -> str:
        """The line of the prelude that compiles it in (epilogue.cuh reads CG_EPILOGUE)."""
        b = lambda x: str(x).lower()  # noqa: E731
        act = self.activation or "none"
        return (f"#define CG_EPILOGUE cg::Epilogue<{b(self.bias)}, {b(self.scale)}, "
                f"cg::Act::{act}, {b(self.clamp)}, {VECTOR_TYPES[self.vector_dtype]}, "
                f"{b(self.blocks)}, {b(self.tensor_scale)}>\n")

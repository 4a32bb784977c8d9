"""Named exceptions and warnings; everything cute_gemm raises on purpose derives from CuteGemmError."""
from __future__ import annotations


class CuteGemmError(Exception):
    """Base class of every error cute_gemm raises deliberately."""


class UnknownKernelError(CuteGemmError, KeyError):
    """A kernel name that is not in the registry; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class UnknownEntryError(CuteGemmError, KeyError):
    """An entry point to compile that the kernel lacks; the message lists the kernel's."""

    __str__ = UnknownKernelError.__str__


class InputError(CuteGemmError, ValueError):
    """Bad operands: raised before anything is allocated or launched."""


class NotAnArrayError(InputError, TypeError):
    """An operand is not an array (numpy, DLPack or __cuda_array_interface__)."""


class ShapeError(InputError):
    """ndim != 2, inner dimensions that differ, or c/out of the wrong shape."""


class DTypeError(InputError, TypeError):
    """An operand's dtype is not supported; the message lists the supported ones."""


class ShapeLimitError(InputError):
    """The shape is valid but beyond what a kernel's design allows (e.g. whole-K in smem)."""


class AliasError(InputError):
    """`out` cannot hold the result: elements share one address (a zero or overlapping stride);
    out overlapping a, b or c is no error (run() computes into a temporary and copies)."""


class StreamError(InputError):
    """A `stream` argument that is not a CUDA stream (handle, or an object exposing one)."""


class CaptureError(CuteGemmError):
    """The call cannot be recorded into the CUDA graph its stream captures (host operands
    need synchronous copies); raised before anything is enqueued: the capture stays valid."""


class CompileError(CuteGemmError):
    """NVRTC rejected a kernel: carries the kernel name, the options and the full log."""

    def __init__(self, kernel: str, options: list[str], log: str, result: str = ""):
        self.kernel, self.options, self.log, self.result = kernel, list(options), log, result
        super().__init__(
            f"NVRTC failed to compile kernel {kernel!r} ({result})\n"
            f"options: {' '.join(options)}\n--- NVRTC log ---\n{log}"
        )


class HeadersNotFound(CuteGemmError, RuntimeError):
    """A header wheel the CuTe kernels need (nvidia-cutlass, -cuda-cccl, -cuda-runtime) is not
    installed, or its CUTE_GEMM_*_INCLUDE override is no folder; names wheel and variable."""


class NvrtcNotFound(CuteGemmError, RuntimeError):
    """libnvrtc (the nvidia-cuda-nvrtc wheel) cannot be loaded; raised by the first compile."""


class CudaError(CuteGemmError, RuntimeError):
    """A CUDA driver call failed; names the call, the kernel (if any) and the CUDA error."""


class NoDeviceError(CudaError):
    """No CUDA driver or no device. Compile-only use (arch='sm_90') still works."""


class AutoTableWarning(UserWarning):
    """A `cute-gemm tune` table was ignored (unreadable, damaged, or of another GPU or package
    version): gemm() chooses as if it were absent (select/autotable.py)."""

"""run() and gemm(): alpha * A @ B + beta * C with a registered kernel or the selector's pick.

numpy in, numpy out (upload, launch, download); device arrays in, the result on the device.
An operand in a layout the kernel cannot take is copied on the device into one it can."""
from __future__ import annotations

import functools
import operator
import sys
from dataclasses import replace

import numpy as np

from . import driver, registry
from .build import cache
from .driver import launch
from .plan import hotpath
from .select import auto, autotable, batched, firstuse, standin
from .driver.epilogue import Epilogue, prepare as epilogue_prep, scaled
from .driver.arrays import (SUPPORTED_DTYPES, ArrayLike, DeviceArray, DTypeName, Operand,
                            StreamLike, call_precision, framework_stream, narrow, parse)
from .driver.signature import Signature
from .base.errors import CaptureError, DTypeError, InputError, ShapeError
from .plan.execute import copier, gemm_device
from .plan.host import host_context, host_result, run_host
from .base.precisions import DTYPE, PRECISION
from .registry.records import (AS_PLANNED, PRECISIONS, LayoutName, PrecisionName,
                               layout_majors)
from .plan.resolve import CACHE, check_precision, resolved_launches, wait_for_compiles


def compile_kernel(name: str | registry.Kernel, arch: str | int | None = None) -> cache.Compiled:
    """Compile a registered kernel with NVRTC, or fetch it from the cache (no GPU needed with `arch`).

    Args:
        name: A registered kernel's name (cute_gemm.kernels()) or its Kernel record.
        arch: The target, "sm_80", "sm_90", ... or 80, 90. Default None: the current GPU's
            (the kernel's arch-specific target where it has one, sm_90a).

    Returns:
        cache.Compiled: the CUBIN bytes, its cache key, its origin ("compiled", "disk" or
        "memory") and ptxas's resources per entry point (registers, spills).

    Raises:
        UnknownKernelError: `name` is not registered; the message lists the names.
        CompileError: NVRTC rejected the source; it carries the options and the whole log.
        HeadersNotFound: a header wheel the CuTe kernels need is not installed.
        NvrtcNotFound: NVRTC's library cannot be loaded.
        NoDeviceError: `arch` is None and there is no GPU to take it from.
    """
    k = name if isinstance(name, registry.Kernel) else registry.get(name)
    if arch is None:
        arch = k.target(launch.device_info().arch_int)
    return cache.get(k, arch)


# a call's operands parsed and checked before any launch (run() and cross_check() share it)
validate = Signature


def _empty_like_lib(proto, shape, ordinal, dtype: str = "float32"):
    """A row-major result allocated by `proto`'s library (CuPy, PyTorch), else a DeviceArray."""
    mod = type(proto).__module__.split(".")[0]
    if mod == "cupy" and "cupy" in sys.modules and DTYPE[dtype].cupy:
        cp = sys.modules["cupy"]
        with cp.cuda.Device(ordinal):
            return cp.empty(shape, dtype=dtype)
    if mod == "torch" and "torch" in sys.modules:
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=getattr(torch, DTYPE[dtype].torch), device=proto.device)
    return DeviceArray(shape, ordinal=ordinal, dtype=dtype)


def _device_ordinal(A: Operand) -> int:
    driver.init()
    if not _count:
        _count.append(int(driver.check(driver.bindings().cuDeviceGetCount(), "cuDeviceGetCount")))
    if _count == _ONE:
        return 0
    return launch.pointer_device(A.ptr) if A.ptr else driver.current_ordinal()


_count: list[int] = []     # the device count, once known (run()'s hot path: one GPU only)
_ONE = [1]
_SCALAR = (float, int)    # not bool: type(True) is bool


def run(name: str, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *,
        alpha: float = 1.0, beta: float = 0.0, out: ArrayLike | None = None,
        stream: StreamLike = None, precision: PrecisionName | None = None,
        epilogue: Epilogue | None = None, scale_a: ArrayLike | None = None,
        scale_b: ArrayLike | None = None) -> ArrayLike:
    """alpha * a @ b + beta * c with one named kernel, accumulated in float32.

    Asynchronous for device arrays, on `stream`, else the operands' library's current stream
    (the default one for numpy, DeviceArray, JAX): ordered with, and captured in a CUDA graph
    with, the caller's work; an operand's producer stream (CAI v3, DLPack) is waited for. A
    PyTorch operand requiring grad in grad mode gives a result carrying autograd's graph.

    Args:
        name: A registered kernel (cute_gemm.kernels()), or "auto": gemm()'s pick.
        a: A, (M, K), or a batch (..., M, K): a numpy array, or a device array exposing
            `__cuda_array_interface__` or DLPack (CuPy, PyTorch, JAX, cute_gemm.DeviceArray);
            float32, float16, bfloat16, float8_e4m3fn or float8_e5m2, any strides (a
            transposed view included).
        b: B, (K, N) or (..., K, N), of a's type (an 8-bit a: either 8-bit type) and on
            a's device (or both on the host). The leading modes of a and b broadcast as numpy.matmul's do; the batch runs in
            one launch (kernels with Kernel.batched; a B shared by the batch as one taller
            product).
        c: C, (M, N) or broadcasting to the result's batch, read when beta != 0; float32 or
            a's type. Default None (beta is then 0).
        alpha: Scale of a @ b (a Python int or float). Default 1.0.
        beta: Scale of c. Default 0.0.
        out: Where the result goes, (..., M, N), float32 or a's type; may be `c` (in place);
            one overlapping a, b or c otherwise is computed apart and copied. Default None.
        stream: A CUDA stream (an int handle, or a cuda.core, CuPy or PyTorch stream).
            Default None: the operands' library's current stream.
        precision: "fp32", "tf32" (10-bit mantissas; only when asked for), "bf16", "fp16",
            "fp32_3xtf32" (fp32's accuracy from three tf32 products), "fp8_e4m3",
            "fp8_e5m2", "fp8_e4m3_e5m2" or "fp8_e5m2_e4m3" (A of the first 8-bit type, B of
            the second). Default None: the one a's and b's types imply ("fp32" for float32;
            "fp32_3xtf32" on a kernel with only that).
        epilogue: An Epilogue (bias, activation, scales, clamp, the result's type) applied
            to each element in the kernel before it is stored; kernels with Kernel.takes_epilogue
            take one. Default None.
        scale_a: A's scale (8-bit operands' dequantization, as torch._scaled_mm takes
            it), float32 on the operands' device, read by the kernel: one element (per
            tensor), M ((M, 1): per row; the epilogue's scale_rows), or (M, ceil(K / 128))
            (per row and 128 k: the epilogue's blocks_a). Default None.
        scale_b: B's: one element, N ((1, N): per column; scale_cols), or
            (ceil(K / 128), ceil(N / 128)) (per 128 x 128 block: blocks_b). Default None.

    Returns:
        The (..., M, N) result: `out`, else a new array where the operands live (numpy, their
        library's, or a DeviceArray); of out's type (rounded to nearest even), else float32.

    Raises:
        UnknownKernelError: `name` is not registered; the message lists the names.
        NotAnArrayError: an operand is not an array.
        ShapeError: an operand has fewer than 2 modes, the shapes do not agree or broadcast,
            a batch on a kernel that computes one product (the message names those that
            batch), or batch modes that do not merge into two (batching.flatten).
        DTypeError: an operand's type is not supported, a and b are a pair of types no
            precision reads, or the kernel does not compute `precision` into the result's
            type.
        ShapeLimitError: the shape is beyond what the kernel's design allows.
        AliasError: `out` has elements that share one address.
        StreamError: `stream` is not a CUDA stream.
        InputError: alpha or beta not a real number, a read-only `out`, host and device
            operands mixed, `out` or `stream` on a call autograd records; the base of the
            errors above, all raised before anything is allocated or launched.
        CaptureError: the call cannot be captured into the CUDA graph being recorded.
        CompileError, HeadersNotFound, NvrtcNotFound: the kernel cannot be compiled.
        CudaError: a CUDA driver call failed (NoDeviceError: no GPU or driver).
    """
    hot_ep = epilogue
    if scale_a is not None or scale_b is not None:
        if epilogue is None:    # (the hot path reads them as they are; the full path's below)
            hot_ep = hotpath.Scales((scale_a, scale_b))
        else:
            epilogue = hot_ep = scaled(epilogue, scale_a, scale_b, a, b)
    hot = new = None
    # the signature hot path (hotpath.py), on a host known to have one GPU; c, if given, is
    # out itself (an update in place: the same launch, beta an argument) or copied into out
    # (or the new result) first
    if _count == _ONE and type(alpha) in _SCALAR and type(beta) in _SCALAR and alpha != 0:
        if out is None:
            # a result allocated as the full path did, written by the launch it resolved
            result, new = hotpath.launch_new(name, precision, a, b, alpha, stream, hot_ep, c,
                                             beta)
            if result is not None:
                return result
        else:
            hot = hotpath.launch_or_sign(name, precision, a, b, out, alpha, beta, stream,
                                         hot_ep, c)
            if hot is True:
                return out
    if hot_ep is not epilogue:
        epilogue = scaled(None, scale_a, scale_b, a, b)
    torch = sys.modules.get("torch")      # autograd records the call: an operand requires grad
    if (torch is not None and torch.is_grad_enabled()
            and any(isinstance(x, torch.Tensor) and x.requires_grad for x in (a, b, c))):
        if epilogue is not None:
            raise InputError("epilogue= does not support automatic differentiation: pass "
                             "detached tensors")
        return _through_autograd(name, a, b, c, alpha, beta, out, stream, precision)
    k = None if name == registry.AUTO else registry.get(name)
    return _run(k, AS_PLANNED, a, b, c, alpha, beta, out, stream, precision, hot, new,
                epilogue)


# a call whose result must carry autograd's graph goes to cute_gemm.torch's op; the package
# imports that module, so _autograd is set before any call
_autograd: list = []      # [route(name, a, b, c, alpha, beta, precision)]


def set_autograd(route) -> None:
    """The function run() hands a call that autograd records (cute_gemm.torch.route)."""
    _autograd[:] = [route]


def _through_autograd(name, a, b, c, alpha, beta, out, stream, precision):
    which = ", ".join(n for n, x in (("a", a), ("b", b), ("c", c))
                      if getattr(x, "requires_grad", False) is True)
    if out is not None:
        raise InputError(f"out= does not support automatic differentiation ({which} requires "
                         "grad): call without out, and the result carries the graph, or pass "
                         "detached tensors")
    if stream is not None:
        raise InputError(f"stream= with {which} requiring grad: autograd runs the backward on "
                         "torch's current stream, so the forward runs there too: leave stream "
                         "out and use `with torch.cuda.stream(s):`")
    return _autograd[0](name, a, b, c, alpha, beta, precision)


def run_choice(choice, a, b, c=None, *, alpha=1.0, beta=0.0, out=None, stream=None,
               precision=None, epilogue=None):
    """run() with a selector's choice (auto.Choice: its kernel, transposed or split along K
    as its pick says) exactly as gemm() runs it: how `cute-gemm tune` times candidates. A
    repeat call with `out` takes the signature hot path, as run()'s does (keyed by the
    choice: its host cost is the launch's, not validation's)."""
    precision = choice.precision or precision
    hot = None
    if (out is not None and epilogue is None and _count == _ONE and type(alpha) in _SCALAR
            and type(beta) in _SCALAR and alpha != 0):
        hot = hotpath.launch_or_sign(("choice", choice.key), precision, a, b, out, alpha, beta,
                                     stream, None, c)
        if hot is True:
            return out
    return _run(registry.get(choice.kernel), choice.pick, a, b, c, alpha, beta, out, stream,
                precision, hot, epilogue=epilogue)


def gemm_choice(m: int, n: int, k: int, *, layout: LayoutName = "nn",
                precision: PrecisionName = "fp32", out_dtype: DTypeName | None = None,
                aligned: bool | None = None, ordinal: int | None = None,
                device: str | launch.DeviceInfo | None = None, batch: int = 1,
                epilogue: bool = False) -> auto.Choice:
    """What gemm() would run for an M x N x K problem, and why, without running it.

    gemm()'s selector (tune tables, then the heuristic) for fresh operands; with `device`, no GPU.
    A problem gemm() has tuned on first use answers from the row it kept; before that, this is
    the model's pick, the first candidate that tuning times.

    Args:
        m: Rows of A and of the result (int >= 0).
        n: Columns of B and of the result (int >= 0).
        k: Columns of A, rows of B (int >= 0).
        layout: "nn", "tn", "nt" or "tt": "n" a row-major array, "t" the transposed view of
            one (BLAS's transa, transb). Default "nn".
        precision: "fp32", "tf32", "bf16", "fp16" or "fp32_3xtf32" (run() says what each
            is). Default "fp32".
        out_dtype: The result type, "float32", "float16" or "bfloat16" (the latter two only
            with the precision of that type). Default float32.
        aligned: Whether every operand's pointer and leading dimension is 16-byte aligned
            (the vector and TMA paths' class). Default: as fresh contiguous arrays are.
        ordinal: The GPU asked about, by device ordinal. Default: the current device.
        device: Instead of a present GPU, a launch.DeviceInfo or the name of a GPU a shipped
            tune table knows (autotable.shipped_gpus(): "NVIDIA H100 80GB HBM3", "NVIDIA
            H200"); its tuned table in the cache counts. Default None: the GPU at `ordinal`.
        batch: Problems in a batch that gemm() walks in one launch (operands (batch, M, K)
            @ (batch, K, N), contiguous); the batch row gemm() kept when it tuned one answers.
            One whose B is shared folds into an M * batch problem instead. Default 1.
        epilogue: The choice for a call with a fused epilogue (gemm(epilogue=)): the pick
            where its kernel takes one, else the batched cost model's among those that do.
            Default False.

    Returns:
        Choice (nothing compiled or launched): the kernel, whether it runs transposed, its
        split along K, the arithmetic it runs in where not `precision` (fp32_3xtf32 by SIMT
        fp32), and why: "table" (shape measured), "nearest" (scaled from the nearest
        measured shapes) or "heuristic", with the row or the rule.

    Raises:
        InputError: an unknown precision or layout; M, N or K not an integer or negative;
            both `ordinal` and `device`; a `device` name no shipped table knows (the
            message lists those it knows).
        DTypeError: an unknown out_dtype, or no kernel computes this precision into it.
        ShapeLimitError: every candidate needs more shared memory than the GPU allows.
        CuteGemmError: no kernel computes this precision on the GPU's architecture.
        NoDeviceError: no `device` given and no GPU (or CUDA driver) present.
    """
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if out_dtype is not None and out_dtype not in SUPPORTED_DTYPES:
        raise DTypeError(f"out_dtype must be one of {', '.join(SUPPORTED_DTYPES)}, got {out_dtype!r}")
    layout_majors(layout)                                       # a named error if unknown
    try:
        m, n, k = (operator.index(x) for x in (m, n, k))
    except TypeError:
        raise InputError(f"M, N and K are integers, got {(m, n, k)}") from None
    if min(m, n, k) < 0:
        raise InputError(f"M, N and K are >= 0, got {(m, n, k)}")
    if type(batch) is not int or batch < 1:
        raise InputError(f"batch is an integer >= 1, got {batch!r}")
    if device is not None and ordinal is not None:
        raise InputError("gemm_choice(): give ordinal (a present GPU) or device (a described "
                         "one), not both")
    if isinstance(device, str):
        device = autotable.described_device(device)
    elif device is None:
        device = launch.device_info(ordinal)
    out_dtype = out_dtype or "float32"
    if aligned is None:     # (a contiguous batch's strides are aligned where its rows are)
        aligned = auto.contiguous_aligned(m, n, k, layout, precision, out_dtype)
    if batch > 1:
        cands = batched.ranked(batch, m, n, k, device=device, precision=precision,
                               out_dtype=out_dtype, fused=epilogue)
        key = autotable.batch_key((1, batch), 1, m, n, k, layout, aligned, precision, out_dtype)
        return (None if epilogue else batched.kept(device, key, cands)) or cands[0]
    choice = auto.choose(m, n, k, device=device, layout=layout, precision=precision,
                         out_dtype=out_dtype, aligned=aligned)
    if epilogue and not choice.fuses():
        return batched.choose(1, m, n, k, device=device, precision=precision,
                              out_dtype=out_dtype, fused=True)
    return choice


def _run(k, pick, a, b, c, alpha, beta, out, stream, precision, hot=None, new=None,
         epilogue=None):
    """run() past the hot path: validate, pick (k None: gemm()'s), launch kernel k as `pick`
    says. hot, new: the call's keys for hotpath.remember and (no out) remember_new, which
    hold the call's stream. epilogue: a fused epilogue (Epilogue), on a kernel that takes
    one, compiled with its pieces (Kernel.with_epilogue)."""
    key = hot if hot is not None else new
    s = (key[2] if key is not None else framework_stream(a) if stream is None
         else launch.stream_handle(stream))
    if epilogue is not None and not isinstance(epilogue, Epilogue):
        raise InputError(f"epilogue must be a cute_gemm.Epilogue, got {type(epilogue).__name__}")
    sig = validate(a, b, c, out, alpha, beta, s, epilogue is None or not epilogue.rows)
    A, B, C, O, m, n, kk = sig.A, sig.B, sig.C, sig.O, sig.m, sig.n, sig.k
    prec, out_dtype = call_precision(A, B, C, O, precision, k)
    epi = None
    if epilogue is not None:
        out_dtype = _epilogue_out(epilogue, prec, out_dtype, C is None and O is None)
        epi = epilogue_prep(epilogue, m, n, kk, A.dtype, A.device, s)
    batch = sig.batch != (1, 1)
    stand_in = ordinal = choice = None
    if k is None:     # "auto": the selector's pick, a function of what the signature holds
        if m and n and kk and alpha != 0:       # (products: a device to pick for; one GPU: 0)
            ordinal = (0 if _count == _ONE else _device_ordinal(A) if A.device
                       else driver.current_ordinal())
        if batch:
            choice = batched.pick(sig, prec, out_dtype, ordinal, fused=epi is not None)
        else:
            choice = auto.pick(sig, prec, out_dtype, ordinal)
            if epi is not None and not choice.fuses():
                choice = batched.pick(sig, prec, out_dtype, ordinal, fused=True)
    else:
        check_precision(k, prec, out_dtype)
        if batch and k.batch_modes < sig.modes:
            raise ShapeError(
                f"kernel {k.name!r} computes one 2-D product; a batch of {sig.shape[:-2]} runs "
                f"on {', '.join(batched_kernels())}" if not k.batched else
                f"kernel {k.name!r} walks a batch of one mode; this batch of {sig.shape[:-2]} "
                f"has two that do not merge: {', '.join(batched_kernels(2))} walk two")
        if epi is not None and not k.takes_epilogue:
            raise InputError(f"kernel {k.name!r} has no fused epilogue; kernels that take one: "
                             f"{', '.join(x.name for x in registry.kernels() if x.takes_epilogue)}")
    if (sig.shape is not None or epi is not None) and not A.device:
        return _run_host_batch(k, pick, sig, alpha, beta, s, precision, out_dtype, epilogue)
    picked_on = ordinal                 # (None: no products, nothing to tune or stand in for)
    if A.device:
        ordinal = (0 if _count == _ONE else _device_ordinal(A)) if ordinal is None else ordinal
        driver.ensure_context(ordinal)
        if sig.producers:
            _wait_producers(s, sig.producers, ordinal)
        if (picked_on is not None and not (batch and epi is not None)
                and (batch or choice.source != "table") and firstuse.mode() != "off"):
            # a problem no table measured (or whose row's winner does not fuse), or a batch (a
            # batch row kept read there): its candidates timed once on these operands, after
            # the work that produces them, a fused call's with its epilogue (every condition
            # of tuning here, CUTE_GEMM_TUNE included: firstuse asks none)
            choice = (firstuse.tuned_batch(choice, sig, prec, out_dtype, ordinal, s) if batch
                      else firstuse.tuned(choice, sig, prec, out_dtype, ordinal, s, epi))
    if choice is not None:
        # the pick: how it runs (transposed, split along K) and, where another arithmetic
        # keeps the precision's promise, in which; the pick computes it (auto.candidates)
        if choice.transposed and epi is not None and epi.spec.blocks:
            # block scales are per row of A and per 128 columns of B: no entry reads them on C^T
            choice = replace(choice, transposed=False, why=f"{choice.why}; block scales: as given")
        quick = picked_on is not None and epi is None and standin.first_call() == "quick"
        k, pick, prec = registry.get(choice.kernel), choice.pick, choice.precision or prec
        if quick:
            # what runs while the pick compiles, asked for only where it must compile
            stand_in = functools.partial(standin.stand_in, k, prec, out_dtype,
                                         launch.device_info(ordinal).arch_int)
    if epi is not None and epi.spec.blocks and not k.takes_block_scales:
        raise InputError(f"kernel {k.name!r} takes no block scales; kernels that do: "
                         f"{', '.join(x.name for x in registry.kernels() if x.takes_block_scales)}")
    alpha, beta = float(alpha), float(beta)
    if C is None:
        beta = 0.0
    if not A.device:
        return run_host(k, A, B, C, O, m, n, kk, alpha, beta, s, prec, out_dtype, pick,
                        stand_in)
    if O is None:
        if not hotpath.allocates_in_capture(A.obj) and launch.capturing(s):
            raise CaptureError("a new result array cannot be allocated while the stream "
                               "captures a CUDA graph: pass out=")
        if sig.shape is None:
            result = _empty_like_lib(A.obj, (m, n), ordinal, out_dtype)
            O = parse("out", result)
        else:       # N-D: the layout batching.plan gave the result
            result = _empty_like_lib(A.obj, sig.shape, ordinal, out_dtype)
            shape, strides, bcount, bstrides = sig.made
            O = replace(parse("out", result), shape=shape, strides=strides, lead=(),
                        lead_strides=(), bcount=bcount, bstrides=bstrides)
    else:
        new, result = None, O.obj
    if epi is not None:
        k = registry.get_fused(k.name, epi.spec)
    if m and n and 0 not in O.bcount:
        fast = gemm_device(k, A, B, C, O, alpha, beta, s, ordinal, prec, pick, stand_in,
                           sig if O is sig.O else None, epi)
        if fast is not None and hot is not None:     # hot: one device, so ordinal 0
            hotpath.remember(hot, fast, sig, epi,
                             copier(0, C, O) if C is not None and c is not out else None)
        elif fast is not None and new is not None:
            hotpath.remember_new(new, fast, A, B, result, epi, C,
                                 copier(0, C, O) if C is not None else None)
    return result


def _epilogue_out(ep: Epilogue, precision: str, out_dtype: str, fresh: bool) -> str:
    """The result's type of a call with epilogue `ep`: its out_dtype where the call allocates
    the result (fresh), else out's or c's (`out_dtype`), which it must then agree with."""
    want = ep.out_dtype
    if want is None or want == out_dtype:
        return out_dtype
    if not fresh:
        raise DTypeError(f"the epilogue's out_dtype is {want}, but the result is {out_dtype} "
                         "(out's or c's type)")
    outs = PRECISION[precision].outs
    if want not in outs:
        raise DTypeError(f"the result of {precision} is {' or '.join(outs)}, not {want}")
    return want


def batched_kernels(modes: int = 1) -> list[str]:
    """The registered kernels that walk a batch of problems of `modes` modes in one launch
    (Kernel.batch_modes)."""
    return [x.name for x in registry.kernels() if x.batch_modes >= modes]


def _run_host_batch(k, pick, sig, alpha, beta, s, precision, out_dtype, epilogue=None):
    """A call on N-D numpy operands, or with a fused epilogue: each operand (and vector)
    copied to the device as it is (broadcast modes stay of extent 1), run there, the result
    copied back into out or a new array."""
    A, B, C, O = sig.A, sig.B, sig.C, sig.O
    result = O.obj if O is not None else host_result(sig.shape or (sig.m, sig.n), A, out_dtype)
    if result.size == 0:
        return result
    ordinal = host_context(s)
    owned = [DeviceArray.from_host(x.obj, ordinal, s) for x in (A, B, C) if x is not None]
    try:
        if epilogue is not None:
            ups = {}
            for f in ("bias", "scale_rows", "scale_cols", "blocks_a", "blocks_b"):
                x = getattr(epilogue, f)
                if x is not None:
                    x = np.asarray(x)
                    ups[f] = DeviceArray.from_host(x if f.startswith("blocks") else x.reshape(1, -1),
                                                   ordinal, s)
                    owned.append(ups[f])
            epilogue = replace(epilogue, out_dtype=out_dtype, **ups)
        dev = _run(k, pick, owned[0], owned[1], owned[2] if C is not None else None, alpha,
                   beta if C is not None else 0.0, None, s, precision, epilogue=epilogue)
        owned.append(dev)
        got = dev.to_host(s)
        result.view(np.dtype(DTYPE[out_dtype].storage))[...] = narrow(got, out_dtype)
    finally:
        for x in owned:
            x.close()
    return result


def gemm(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: float = 1.0,
         beta: float = 0.0, out: ArrayLike | None = None, stream: StreamLike = None,
         precision: PrecisionName | None = None, epilogue: Epilogue | None = None,
         scale_a: ArrayLike | None = None, scale_b: ArrayLike | None = None) -> ArrayLike:
    """alpha * a @ b + beta * c with the kernel the selector picks, accumulated in float32.

    run("auto", ...): the pick for this GPU, shape, layout, alignment and precision
    (gemm_choice() says which and why), with run()'s validation and guarantees. A pick
    neither compiled nor cached compiles in the background while a kernel that compiles in
    about a second answers in fp32 (within the precision's error bound, not bit for bit the
    pick's); CUTE_GEMM_FIRST_CALL=wait waits instead; wait_for_compiles() blocks until done.
    A device call whose problem no tune table measured times its compiled candidates once
    on its own operands (up to a second of host time; not inside a graph capture) and keeps
    the fastest in this GPU's tuned table; CUTE_GEMM_TUNE=off leaves the model's pick.

    Args:
        a: A, (M, K) or a batch (..., M, K): a numpy or device array (as run() takes);
            float32, float16, bfloat16 or an 8-bit float (fp8_e4m3, fp8_e5m2).
        b: B, (K, N) or (..., K, N), of a's type (or, 8-bit, the other 8-bit type) and on
            a's device (or both on the host); the batch modes broadcast as numpy.matmul's
            (run() says how they run).
        c: C, read when beta != 0, broadcasting to the result; float32 or a's type.
            Default None.
        alpha: Scale of a @ b. Default 1.0.
        beta: Scale of c. Default 0.0.
        out: Where the result goes, (..., M, N), float32 or a's type; may be `c`. Default None.
        stream: A CUDA stream. Default None: the operands' library's current stream.
        precision: "fp32", "tf32", "bf16", "fp16", "fp32_3xtf32", "fp8_e4m3", "fp8_e5m2",
            "fp8_e4m3_e5m2" or "fp8_e5m2_e4m3". Default None: the one the operands' types
            imply ("fp32" for float32).
        epilogue: An Epilogue (bias, activation, row/column scales, clamp, the result's
            type) applied in the kernel before the store: gemm() picks among the kernels
            that take one (Kernel.takes_epilogue). Default None.
        scale_a: A's scale per tensor, row, or row and 128 k (run() says how). Default None.
        scale_b: B's per tensor, column, or 128 x 128 block. Default None.

    Returns:
        The (..., M, N) result: `out` when given, else a new array where the operands live;
        float32, or out's type (or the epilogue's out_dtype).

    Raises:
        InputError: bad arguments, before anything is allocated or launched (run() lists
            them); its subclasses NotAnArrayError, ShapeError, AliasError, StreamError,
            DTypeError (also: no kernel computes `precision` into the result's type) and
            ShapeLimitError (no candidate fits the GPU's shared memory at this shape).
        CaptureError: the call cannot be captured into the CUDA graph being recorded.
        CompileError, HeadersNotFound, NvrtcNotFound: the pick cannot be compiled.
        CudaError: a CUDA driver call failed (NoDeviceError: no GPU or driver).
        CuteGemmError: no kernel computes `precision` on this GPU's architecture.
    """
    return run(registry.AUTO, a, b, c, alpha=alpha, beta=beta, out=out, stream=stream,
               precision=precision, epilogue=epilogue, scale_a=scale_a, scale_b=scale_b)


def _wait_producers(s: int, producers: set, ordinal: int) -> None:
    """Order the call after the work its operands' producer streams queued (CAI v3). In a
    graph capture only a producer captured with it is waited for: work outside the graph
    must be done before the graph launches (a wait on it would invalidate the capture)."""
    cs = launch.canonical_stream(s)
    others = [p for p in producers if launch.canonical_stream(p) != cs]
    in_capture = bool(others) and launch.capturing(s)
    for p in others:         # (the legacy stream, 0 or 1, is never captured)
        if not in_capture or (p not in (0, 1) and launch.capturing(p)):
            launch.wait_stream(s, p, ordinal)


def flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def clear_caches() -> None:
    """Forget resolved launches, loaded kernels, in-memory cubins and read tune tables; the
    disk cache stays (`cute-gemm cache clear`)."""
    CACHE.clear()
    cache.clear_memory()
    autotable.reset()


__all__ = ["run", "gemm", "compile_kernel", "flops", "clear_caches", "resolved_launches",
           "wait_for_compiles"]

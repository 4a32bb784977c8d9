"""Checked, timed comparison of the kernels with cuBLAS fp32: `cute-gemm bench`.

One job per module; data flows one way, from the runner into the schema and from the
schema out to the report and the plots (nothing here imports back from a later stage):

    random_shapes
             `--size random[:N]`: shapes drawn from a seed in a band of flop counts
    shapes   sizes and operand layouts to measure, the plan of a run; whether a kernel
             takes a layout as is
    timing   THE timing loops: CUDA events per launch (L2 flush, input rotation, warm-up,
             repeats sized to a time budget), per call as a caller waits, per call in a
             burst, and host wall time per call
    stats    medians, quartiles, TFLOP/s, FP32 peak, ratios and their summaries, sampled
             indices
    cublas   the cuBLAS fp32 peer through CuPy or PyTorch, TF32 off
    meta     where a number was made: device, driver, versions, method
    runtime  the one place that asks the runtime (api, launch) for what it keeps private
    runner   bench() and time_kernel(): check first, then time
    overhead host µs per call: run() against a raw launch and cuBLAS
    schema   Row / BenchResult, JSON and CSV
    report   the text table, the README markdown, write_outputs()
    plots    PNG charts (matplotlib, optional)

`cute_gemm.bench` (the package attribute) is runner.bench. This file imports nothing, so
importing one module of the package does not import the others.
"""

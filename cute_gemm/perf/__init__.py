"""Checked, timed comparison of the kernels with cuBLAS (`cute-gemm bench`) and the tables
gemm() reads (`cute-gemm tune`). Data flows one way: shapes plan a run, runner (with timing,
clocks, cublas, overhead, first_call) fills schema's records, stats does their arithmetic,
report and plots read them. `cute_gemm.bench` is runner.bench. This file imports nothing, so
importing one module of the package does not import the others."""

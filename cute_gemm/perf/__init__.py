"""Checked, timed comparison with cuBLAS (`cute-gemm bench`, runner.bench) and gemm()'s tables
(`cute-gemm tune`). shapes plan a run, runner fills schema's records, stats, report and plots
read them. This file imports nothing, so importing one module does not import the others."""

"""Any Chrome/Kineto trace: reading it, the GPU timeline, steps and their device windows, op
trees, GEMM names and rates, and the findings engine (findings/). `python -m suites.traces
<trace>` analyses one. Usable alone: imports nothing of suites but the results schema and
suites.common."""

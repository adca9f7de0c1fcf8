"""Turn a block's eager function into its `eager` and `compile` variants' prepare functions.

A block describes its eager form once, as `parts(case, inputs) -> (fn, args)`; the eager variant
calls `fn(*args)` and the compile variants call `torch.compile(fn)(*args)`, so both run exactly
the same Python code on the same tensors.
"""
from __future__ import annotations

from typing import Callable

import torch

from kernels.base import Call, Case, Inputs

Parts = Callable[[Case, Inputs], tuple[Callable, tuple]]


def eager_prepare(parts: Parts) -> Callable[[Case, Inputs], Call]:
    def prepare(case: Case, inputs: Inputs) -> Call:
        fn, args = parts(case, inputs)
        return lambda: fn(*args)

    return prepare


def compile_prepare(parts: Parts, mode: str | None = None) -> Callable[[Case, Inputs], Call]:
    """`torch.compile(fn, dynamic=False)`; compilation happens in the first call."""

    def prepare(case: Case, inputs: Inputs) -> Call:
        # No torch._dynamo.reset() here: it would discard the graphs of the case's other
        # compile variants, which the interleaved timing rounds call again. The harness
        # resets dynamo once per case (suites/harness/case_run.py).
        fn, args = parts(case, inputs)
        if mode is None and case.device_type == "cpu":
            # Inductor's C++ kernels then show up in the profile as `cpp_fused_*` ranges, the
            # CPU counterpart of the `triton_poi_fused_*` kernels seen on a GPU.
            compiled = torch.compile(fn, dynamic=False, options={"cpp.enable_kernel_profile": True})
        else:
            compiled = torch.compile(fn, dynamic=False, mode=mode)
        call = lambda: compiled(*args)  # noqa: E731
        # What it compiles, for a second look at its training graphs
        # (suites/harness/compile_partition.py compiles it again with a recording backend).
        call.compiled_from = (fn, args)
        return call

    return prepare


def cuda_only(case: Case) -> str | None:
    if case.device_type != "cuda":
        return "needs a CUDA device"
    return None

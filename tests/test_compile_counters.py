"""A compile variant's counters (suites/harness/compile_counters.py): graph breaks, recompiles
and Inductor's kernels, read from dynamo's and Inductor's own counters; and as columns of a run."""
import math

import torch

from suites.harness import compile_counters


def _broken(x):
    y = torch.nn.functional.gelu(x) * x
    torch._dynamo.graph_break()  # Python between two graphs, as a print would force
    return y.sum(0) + 1


def test_breaks_recompiles_and_kernels_are_counted():
    before = compile_counters.snapshot()
    compiled = torch.compile(_broken, dynamic=False)
    call = lambda: compiled(x)  # noqa: E731
    call.compiled_from = (_broken, ())
    x = torch.randn(8, 8)
    call()
    counts = compile_counters.since(before)
    assert counts.graph_breaks == 1
    assert counts.inductor_kernels >= 2  # one graph each side of the break, each a kernel
    assert compile_counters.recompiles(call) == 0
    x = torch.randn(16, 8)  # a new shape under dynamic=False: a guard fails, a recompile
    call()
    assert compile_counters.recompiles(call) == 1
    assert math.isnan(compile_counters.recompiles(lambda: None))  # says nothing it compiled

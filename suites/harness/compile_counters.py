"""A compile variant's deterministic counters: what dynamo and Inductor did while the variant was
prepared (first call, warm-up and the correctness check), read from their own counters.

- graph_breaks: the graph breaks dynamo hit (counters["graph_break"], every reason summed): each
  one splits the function into graphs with Python run between them;
- recompiles: compiled entries past the first in the cache of the function's own code object
  (a guard that failed on a later call: a dtype, a shape, grad mode). One fresh dynamo per case
  (case_run.py), so this counts the case's own;
- inductor_kernels: the kernels Inductor generated (torch._inductor.metrics
  .generated_kernel_count): a fusion that no longer happens shows as one more kernel here on any
  machine, no GPU needed, before any time moves.

They need no timing, so they repeat exactly from run to run of the same code and versions:
history (suites/reports/history/) tracks them as counters, where any change is a change. A
counter that cannot be read (a torch without the attribute) stays NaN.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

NAN = math.nan


@dataclass(frozen=True)
class Counts:
    graph_breaks: float = NAN
    inductor_kernels: float = NAN


def snapshot() -> Counts:
    """The process-wide counters now (a difference of two is one variant's)."""
    try:
        from torch._dynamo.utils import counters
        breaks = float(sum(counters["graph_break"].values()))
    except Exception:
        breaks = NAN
    try:
        from torch._inductor import metrics
        kernels = float(metrics.generated_kernel_count)
    except Exception:
        kernels = NAN
    return Counts(breaks, kernels)


def since(before: Counts) -> Counts:
    now = snapshot()
    return Counts(now.graph_breaks - before.graph_breaks,
                  now.inductor_kernels - before.inductor_kernels)


def recompiles(call) -> float:
    """Cache entries past the first on the compiled function's code object (`compiled_from`,
    kernels/compiled.py); NaN when the call does not say what it compiled."""
    source = getattr(call, "compiled_from", None)
    if source is None:
        return NAN
    fn = source[0]
    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    if code is None:
        return NAN
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
        return float(max(0, len(_debug_get_cache_entry_list(code)) - 1))
    except Exception:
        return NAN

"""What torch.compile costs per call: host time on small ops, and recompiles between steps."""
from __future__ import annotations

import re

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext

# Host time per call that compile may add before it is worth saying (guards, cache lookup,
# the compiled-region wrapper): both a share and an absolute floor, so noise on a 5 us call
# does not produce a finding.
EXTRA_HOST_SHARE = 0.2
EXTRA_HOST_US = 5.0

_GRAPH = re.compile(r"CompiledFxGraph (\w+)")


def compile_host_overhead(ctx: FindingContext):
    if not ctx.is_compiled or ctx.baseline_row is None:
        return
    host, base = ctx.metric("host_us"), ctx.baseline_value("host_us")
    if not (host == host and base == base) or (
            host - base < max(EXTRA_HOST_US, EXTRA_HOST_SHARE * base)):
        return
    ops = ctx.profile.ops_per_call()
    wrapper = {k: v for k, v in ops.items() if k.startswith(("TorchDynamo", "Torch-Compiled"))}
    yield Finding(Code.COMPILE_HOST_OVERHEAD, Severity.NOTICE,
                  f"compile adds {host - base:.1f} us of host time per call ({base:.1f} -> "
                  f"{host:.1f} us): guard checks, the dynamo cache lookup and the compiled-region "
                  "wrapper cost more than they save on an op this small",
                  {"host_us": host, "baseline_host_us": base, "wrapper_ops": len(wrapper)})


def _graphs_by_step(profile) -> list[set[str]]:
    """Per step: compiled regions ('Torch-Compiled Region: 0/1' = frame 0, compile 1) and
    graph hashes ('## Call CompiledFxGraph <hash> ##')."""
    steps = []
    for step in profile.steps:
        names = set()
        for name in step.ops:
            if name.startswith("Torch-Compiled Region"):
                names.add(name)
            match = _GRAPH.search(name)
            if match:
                names.add(f"graph {match.group(1)[:12]}")
        steps.append(names)
    return steps


def recompile(ctx: FindingContext):
    if ctx.profile is None:
        return
    steps = [s for s in _graphs_by_step(ctx.profile) if s]
    if len(steps) < 2 or all(s == steps[0] for s in steps):
        return
    seen = sorted(set().union(*steps))
    yield Finding(Code.RECOMPILE, Severity.WARNING,
                  f"recompiled between steps: {len(seen)} compiled regions/graphs where one was "
                  f"expected ({', '.join(seen[:4])}); each recompile costs seconds, and dynamo "
                  "falls back to eager after 8",
                  {"distinct_graphs": len(seen), "steps": len(steps)})

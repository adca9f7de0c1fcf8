"""Findings from the op tree of a call (suites/traces/op_tree.py): what a variant's tree
changed against the baseline's, and a library call that spends the call's host time in its own
code (a fat leaf)."""
from __future__ import annotations

from suites.traces.findings.codes import Code, Severity
from suites.traces.findings.core import Finding, FindingContext
from suites.traces import op_tree as ot
from suites.traces.device_time import GPU, HOST_ONLY
from suites.traces.op_kinds import names_cpu_kernel

# A fat leaf: an op whose own code (its self time) takes at least FAT_SHARE of the call's span,
# whose children (ops and runtime calls) take under 1 - FAT_OWN of its own span, and at least
# FAT_MIN_US per call. Half the call: the op is the call's host cost, more than the rest of
# the call together. 80% own: its few children are not where the time goes (a composite such
# as aten::matmul has most of its time in them). 20 us: a few microseconds of dispatch is
# every op's lot on the host.
FAT_SHARE = 0.5
FAT_OWN = 0.8
FAT_MIN_US = 20.0


def op_tree_diff(ctx: FindingContext):
    """Which ops a variant's call runs that the baseline's does not, and the reverse."""
    if ctx.is_baseline or ctx.baseline_profile is None or ctx.profile is None:
        return
    base, rows = ctx.baseline_profile.op_tree(), ctx.profile.op_tree()
    diff = ot.tree_diff(base, rows)
    if not base or not rows or not diff:
        return
    evidence = {**ot.diff_size(diff),
                "ops_per_call": _ops(rows), "baseline_ops_per_call": _ops(base)}
    for name, count in (("occupancy_queries", ot.occupancy_queries),
                        ("transposes", lambda r: ot.layout_counts(r)["transposes"])):
        if count(rows) or count(base):
            evidence[name], evidence[f"baseline_{name}"] = count(rows), count(base)
    yield Finding(Code.OP_TREE_DIFF, Severity.INFO,
                  f"op tree against the baseline: {ot.diff_sentence(diff)}", evidence)


def _ops(rows) -> float:
    return sum(r["calls_per_call"] for r in rows if r["depth"] and r["kind"] == ot.OP)


def fat_leaf(ctx: FindingContext):
    """A library op whose self time is most of the call's host time (cuDNN SDPA's per-call
    plan selection). On a CPU a compute op's self time is its computation, so this reads only
    traces with a device, where an op's self time is host work, and never an op that names its
    CPU kernel (op_kinds.names_cpu_kernel), whatever else the trace holds."""
    if ctx.profile is None or not _host_side_of_a_device(ctx.profile.analysis.mode):
        return
    rows = ctx.profile.op_tree()
    span = ot.call_us(rows)
    if not span > 0:
        return
    for row in rows:
        own = row["self_us"]
        if not (row["depth"] and row["kind"] == ot.OP and "::" in row["name"]
                and not names_cpu_kernel(row["name"])
                and own >= FAT_MIN_US and own >= FAT_SHARE * span
                and own >= FAT_OWN * row["total_us"]):
            continue
        children, children_us = ot.children_us(rows, row["path"])
        yield Finding(Code.FAT_LEAF_OP, Severity.NOTICE,
                      f"{row['name']} spends {own:.1f} us per call in its own code, "
                      f"{own / span:.0%} of the call's {span:.1f} us host span; its "
                      f"{children:g} child calls take {children_us:.1f} us: host work inside "
                      "the library call (plan or heuristic selection, descriptor set-up), not "
                      "launches, sets the call's host time",
                      {"op": row["name"], "self_us": own, "call_us": span,
                       "share": own / span, "total_us": row["total_us"],
                       "children_per_call": children, "children_us": children_us})


def _host_side_of_a_device(mode: str) -> bool:
    """A trace whose ops launch a device's work (device_time.trace_mode): their self time is
    the host's, not computation."""
    return mode in (GPU, HOST_ONLY)

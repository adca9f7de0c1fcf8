"""The detectors, listed in the order their findings are reported, and how a run uses them."""
from __future__ import annotations

from typing import Callable, Iterable

from suites.traces.findings import (artifacts, bounds, compiled, copies, devices, fusion,
                                    kernels, timeline)
from suites.traces.findings import tree as op_trees
from suites.traces.findings import gemms, kernel_mix, occupancy, standouts
from suites.traces.findings.core import (Finding, FindingContext, Row, column_value, is_ok,
                                         step_failed)
from suites.traces.findings.row_bound import marked
from suites.traces.call_profile import CallProfile
from suites.results.columns import KEY

Detector = Callable[[FindingContext], Iterable[Finding]]


DETECTORS: tuple[Detector, ...] = (
    bounds.bound, standouts.dominant_kernel, standouts.comm_share, standouts.idle_gaps,
    standouts.one_time_setup,
    artifacts.profiler_flush, artifacts.buffer_request_gaps,
    compiled.compile_host_overhead, compiled.recompile,
    copies.hidden_copy,
    fusion.dispatcher_fusion, fusion.kernels_per_call, fusion.memory_saved,
    kernels.metadata_ops, kernels.tensor_cores_unused, kernels.sdpa_backend,
    kernels.inductor_kernels, kernel_mix.kernel_mix,
    gemms.gemm_rates_differ, occupancy.occupancy_limited,
    op_trees.op_tree_diff, op_trees.fat_leaf,
    timeline.cold_start, timeline.late_first_op, timeline.kernel_variance, timeline.gpu_queue,
    devices.several_devices,
)


def run_detectors(ctx: FindingContext) -> list[Finding]:
    """Every detector's findings; a detector that raises raises here (the detectors' tests)."""
    return [finding for detect in DETECTORS for finding in detect(ctx)]


def run_detectors_guarded(ctx: FindingContext) -> list[Finding]:
    """Every detector's findings, each detector on its own: one that raises on a trace of a
    shape never seen (a new kernel family, another Kineto) becomes a step_failed finding that
    names it, and the others still run."""
    found = []
    for detect in DETECTORS:
        try:
            found += list(detect(ctx))  # a generator raises while it is read
        except Exception as exc:
            found.append(step_failed(f"findings: detector {detect.__name__}", exc))
    return found


def find_all(row: Row, profile: CallProfile | None, baseline_row: Row | None,
             baseline_profile: CallProfile | None) -> list[dict]:
    """Findings of one suite row (its column values), as findings.csv rows (only rows that ran
    have a profile). The baseline's own row is judged without a baseline. A detector that
    raises is a step_failed row among them (run_detectors_guarded)."""
    if not is_ok(row) or profile is None:
        return []
    own = baseline_row is not None and _same_row(row, baseline_row)
    ctx = FindingContext(profile=profile, row=row,
                         baseline_row=None if own else baseline_row,
                         baseline_profile=None if own else baseline_profile,
                         dtype=column_value(row, "dtype"))
    # Every figure of a profile that was not clean is said as such, never as fact.
    return [f.as_row() for f in marked(run_detectors_guarded(ctx), row)]


def _same_row(a: Row, b: Row) -> bool:
    """Whether two rows are one (case, variant) of one suite: measurements.csv's key."""
    return all(column_value(a, name) == column_value(b, name) for name in KEY)

"""The typed result row the runner fills: one per (case, variant), whatever happened.

Each pass of the harness fills its own part (timing, check, profile, roofline); the row's own
fields say what happened and what is derived across parts. `record()` flattens a row into the
columns of measurements.csv (suites/results/columns.py decides which part holds which column);
`from_record()` builds a row from such a record, whole or partial. The readers of a results
folder (report, compare, collect) work on the table itself, read and typed through the same
schema by suites/results/tables.py.
"""
from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields
from typing import Mapping, get_type_hints

from kernels.names import Value
from suites.results.columns import BY_NAME, LEADING, METRICS, Status, column, empty

NAN = float("nan")


@dataclass(frozen=True)
class TimingStats:
    """The timing pass: a summary of the raw samples (samples.csv holds them all)."""

    n_samples: int
    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    iqr_rel: float
    mean_us: float  # the headline: what a caller pays (see columns.py)
    mean_low_us: float
    mean_high_us: float
    cache: str = "n/a"
    rounds: int = 1  # clean rounds the summary comes from
    rounds_dropped: int = 0  # rounds timed but not used (contended, stalled, off, slow)
    slow_calls: float = float("nan")
    faults_per_call: float = float("nan")
    calls_per_sample: float = float("nan")
    slow_state_rounds: float = float("nan")
    slow_state_factor: float = float("nan")


@dataclass(frozen=True)
class Check:
    """The correctness pass: errors against the float64 reference and the bound they had."""

    max_abs_err: float
    rel_err: float
    scaled_err: float
    tolerance: float
    problem: str = ""  # why the check failed; empty when it passed (not a column: status says)

    @property
    def passed(self) -> bool:
        return not self.problem


@dataclass(frozen=True)
class ProfileStats:
    """The profiling pass: medians over the profiled calls, and where their files are."""

    host_us: float = NAN
    device_us: float = NAN
    idle_frac: float = NAN
    n_kernels: float = NAN
    launch_api_us: float = NAN
    launch_delay_us: float = NAN
    n_cpu_ops: float = NAN
    backend: str | None = None
    trace: str | None = None
    table: str | None = None
    # The profile guarded like the rounds (suites/harness/profile_guard.py): clean, or why its
    # figures are not to be read as fact, and how many times it was taken.
    profile_state: str | None = None
    profile_reason: str | None = None
    profile_takes: float = NAN


@dataclass
class Roofline:
    """The op's cost model for the case, and what the median achieved against it."""

    flops: float
    bytes: float
    bytes_unfused: float | None = None
    bytes_moved: float | None = None
    intensity: float = NAN
    tflops: float = NAN
    gbps: float = NAN
    pct_peak: float = NAN
    roofline_bound: str | None = None
    ridge: float = NAN      # FLOP/B where the roofs meet, at the level its bytes fit in
    roof_gbps: float = NAN  # that level's measured copy bandwidth


PARTS = {"timing": TimingStats, "check": Check, "profile": ProfileStats, "roofline": Roofline}


@dataclass
class ResultRow:
    suite: str
    op: str
    case_id: str
    variant: str
    family: str
    dtype: str
    device: str
    params: dict[str, Value]
    roofline: Roofline
    status: Status = Status.OK
    reason: str = ""
    threads: int | None = None
    first_call_ms: float = NAN
    compile_ms: float = NAN
    compile_cache: str | None = None
    speedup: float = NAN
    speedup_low: float = NAN
    speedup_high: float = NAN
    device_ratio: float = NAN
    kernel_us: float = NAN
    kernel_low_us: float = NAN
    kernel_high_us: float = NAN
    kernel_speedup: float = NAN
    kernel_speedup_low: float = NAN
    kernel_speedup_high: float = NAN
    peak_mem_mb: float = NAN
    mode: str = "fwd_nograd"
    grad_max_err: float = NAN
    grad_errors: str | None = None
    activation_mb: float = NAN
    saved_tensors: float = NAN
    # A compile variant's partition of its training graph (suites/harness/compile_partition.py).
    partition_saved: float = NAN
    partition_saved_mb: float = NAN
    recomputed_ops: float = NAN
    recomputed: str | None = None
    bwd_graphs: float = NAN
    bwd_graph_ops: float = NAN
    # What dynamo and Inductor did for a compile variant (suites/harness/compile_counters.py).
    graph_breaks: float = NAN
    recompiles: float = NAN
    inductor_kernels: float = NAN
    # Per input, the gradient's scaled error (a training mode's check): the baseline's is the
    # bound the other variants of its case are held to. Not a column (grad_errors says it).
    grad_by_tensor: dict | None = None
    compile_graphs: float = NAN
    exposed_overhead_us: float = NAN
    timing: TimingStats | None = None
    check: Check | None = None
    profile: ProfileStats | None = None

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def value(self, name: str):
        """Any column's value by name (a typo is an error); NaN or None where it is not set."""
        part = column(name).part
        holder = getattr(self, part) if part else self
        value = getattr(holder, name) if holder is not None else None
        return empty(name) if value is None else value

    def record(self) -> dict:
        """The row as measurements.csv holds it: identity, parameters, then the metrics."""
        clash = set(self.params) & set(BY_NAME)
        if clash:  # a parameter column would overwrite, or be overwritten by, a metric
            raise ValueError(f"parameter(s) {sorted(clash)} of {self.op} are named like columns")
        out = {c.name: self.value(c.name) for c in LEADING}
        out.update(self.params)
        out.update({c.name: self.value(c.name) for c in METRICS})
        out["status"] = str(self.status)
        return out

    @classmethod
    def from_record(cls, record: Mapping, params=()) -> "ResultRow":
        """A row from a record (a CSV row, or the few columns a test sets): missing values are
        NaN or None, a part with no value at all is None; no status means an ok row."""
        def get(name):
            value = record.get(name)
            return None if isinstance(value, float) and math.isnan(value) else value

        status = Status(get("status") or Status.OK)
        parts = {}
        for part, kind in PARTS.items():
            given = {f.name: get(f.name) for f in fields(kind) if get(f.name) is not None}
            if part == "check" and given and status == Status.INCORRECT:
                given["problem"] = get("reason") or "failed the correctness check"
            if given or part == "roofline":
                parts[part] = kind(**{**_defaults(kind), **given})
        own = {f.name for f in fields(cls)} - set(PARTS) - {"params", "status"}
        row = {name: get(name) for name in own if get(name) is not None}
        return cls(**{**_defaults(cls, exclude=("params", *PARTS)), **row},
                   params={p: record[p] for p in params}, status=status, **parts)


def _defaults(kind, exclude=()) -> dict:
    """Placeholders for the fields without a default that a partial record lacks."""
    hints = get_type_hints(kind)
    return {f.name: NAN if hints[f.name] in (float, int) else ("" if hints[f.name] is str else None)
            for f in fields(kind)
            if f.default is MISSING and f.default_factory is MISSING and f.name not in exclude}

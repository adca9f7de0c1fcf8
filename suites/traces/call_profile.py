"""Per-call numbers from a suite's trace: every profiled step holds exactly one call."""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from suites.traces.device_time import kernel_us, on_gpu
from suites.traces.gemm_rates import GemmLaunch, gemm_launches
from suites.traces.gpu_timeline import kind
from suites.traces.kernel_details import KernelDetails
from suites.traces.op_tree import op_tree
from suites.traces.steps import TraceAnalysis

_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def _row_kind(activity) -> str:
    """kernel, memcpy or memset; another device's activities (MTIA's) by what they do."""
    return _KIND.get(activity.cat) or ("memcpy" if kind(activity) == "memcpy" else "kernel")


def _median(values) -> float:
    values = [v for v in values if v == v]  # drop NaN
    return statistics.median(values) if values else float("nan")


@dataclass
class CallProfile:
    """Per-call views of an analysis; computed once each, since every detector asks."""

    analysis: TraceAnalysis
    # The GEMMs (M, N, K) of one call in launch order, where the caller knows them (a case's
    # parameters): the shapes of GEMM kernels the trace links to no op (gemm_rates.py).
    gemm_shapes: tuple = ()
    _cache: dict = field(default_factory=dict, repr=False)

    def _memo(self, key, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def steps(self):
        return self.analysis.steps

    def metrics(self) -> dict[str, float]:
        """Medians over the profiled steps; NaN where the trace has no such signal."""
        return dict(self._memo("metrics", self._metrics))

    def _metrics(self) -> dict[str, float]:
        steps = self.steps
        gpu = on_gpu(self.analysis.mode)
        return {
            "host_us": _median(s.host_us for s in steps),
            "device_us": _median(s.device_us for s in steps),
            "n_kernels": _median(s.n_kernels for s in steps),
            "launch_api_us": _median(s.launch_api_us for s in steps) if gpu else float("nan"),
            "launch_delay_us": _median(s.launch_delay_us for s in steps) if gpu else float("nan"),
            "n_cpu_ops": _median(s.n_cpu_ops for s in steps),
            "idle_frac": 1.0 - _median(s.busy_frac for s in steps),
        }

    def call_us(self) -> float:
        """The call's length as the pages quote it, the longer of two readings: the median over
        the profiled steps (measurements.csv's host_us) and their mean (optree.csv's call row,
        which every op's time per call sits under). The profile guard judges this one, so a
        single slow step cannot pass the median and show in the tree."""
        steps = self.steps
        if not steps:
            return float("nan")
        mean = sum(s.host_us for s in steps) / len(steps)
        return max(self.metrics()["host_us"], mean)

    def kernel_rows(self) -> list[dict]:
        """One row per kernel name: launches per call, total and mean time per call."""
        return self._memo("kernels", self._kernel_rows)

    def _kernel_rows(self) -> list[dict]:
        count: dict[tuple, int] = defaultdict(int)
        total: dict[tuple, float] = defaultdict(float)
        launched: dict[tuple, list] = defaultdict(list)
        gpu = on_gpu(self.analysis.mode)
        for step in self.steps:
            for kernel in step.kernels:
                key = (kernel.name, _row_kind(kernel) if gpu else "cpu_op")
                count[key] += 1
                total[key] += kernel_us(kernel, gpu)
                launched[key].append(kernel)
        n = max(1, len(self.steps))
        details = KernelDetails(self.analysis.trace.meta, self.gemm_launches() if gpu else [])
        rows = [{"kernel": name, "kind": kind, "calls_per_call": count[(name, kind)] / n,
                 "total_us_per_call": total[(name, kind)] / n,
                 "mean_us": total[(name, kind)] / count[(name, kind)],
                 **details.row(name, kind, launched[(name, kind)])}
                for (name, kind) in count]
        return sorted(rows, key=lambda r: -r["total_us_per_call"])

    def op_tree(self) -> list[dict]:
        """The parent -> child tree of the ops per call (op_tree.py): optree.csv's rows."""
        return self._memo("op_tree", lambda: op_tree(self.analysis))

    def gemm_launches(self) -> list[GemmLaunch]:
        """The GEMM kernel launches whose M, N, K are known (gemm_rates.py)."""
        return self._memo("gemms", lambda: gemm_launches(self.steps, self.gemm_shapes))

    def ops_per_call(self) -> dict[str, float]:
        """CPU op name -> calls per call (aten::mm, aten::addmm, Torch-Compiled Region...)."""
        return self._memo("ops", self._ops_per_call)

    def _ops_per_call(self) -> dict[str, float]:
        totals: dict[str, int] = defaultdict(int)
        for step in self.steps:
            for name, calls in step.ops.items():
                totals[name] += calls
        n = max(1, len(self.steps))
        return {name: calls / n for name, calls in totals.items()}

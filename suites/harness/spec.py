"""The run-spec types: a run's configuration checked once and frozen, as the measurement engine
reads it. Nothing in the harness sees a DictConfig; suites/config/run_spec.py builds these from
the composed config, and every engine part owns its own spec type beside its code (TimingSpec in
harness/timing.py, ProfileSpec in harness/profile_pass.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernels.base import DEFAULT_MODE, Case, Value
from suites.harness.profile_pass import ProfileSpec
from suites.harness.timing import TimingSpec


@dataclass(frozen=True)
class SuiteSpec:
    name: str  # the suite, which is its op's name
    shapes: tuple[tuple[tuple[str, Value], ...], ...]
    dtypes: tuple[str, ...]
    variants: tuple[str, ...]  # the baseline first
    baseline: str
    reference: tuple[tuple[str, Value], ...] = ()  # the series' shape, for the ladder report
    modes: tuple[str, ...] = (DEFAULT_MODE,)  # kernels/base.py MODES: what a call runs


@dataclass(frozen=True)
class RunSpec:
    suite: SuiteSpec
    device: str
    timing: TimingSpec
    profile: ProfileSpec
    seed: int
    calibrate: bool
    progress: bool
    out_dir: Path
    resume: bool = False  # keep the finished cases of an interrupted run in out_dir
    config: dict = field(default_factory=dict)  # the resolved config, for run.json
    job: dict | None = None  # a multirun job's {"num", "overrides"}, for run.json
    memory_probe: str = "auto"  # auto | off: estimate each case's memory first (memory_probe.py)
    # auto | off: the registers, spills and shared memory of what the Triton rows launch, for
    # sm_80 and sm_90 (triton_counters_step.py). Off here, where tests and callers build specs;
    # conf/config.yaml's default is auto.
    triton_counters: str = "off"

    def cases(self) -> list[Case]:
        return [Case(self.suite.name, shape, dtype, self.device, self.seed, mode)
                for mode in self.suite.modes for dtype in self.suite.dtypes
                for shape in self.suite.shapes]

"""Run specs for tests that drive the harness directly: one case, quick timing, no calibration."""
from __future__ import annotations

from pathlib import Path

from kernels import registry
from kernels.base import Case
from suites.harness.timing import TimingSpec
from suites.harness.profile_pass import ProfileSpec
from suites.config.run_spec import auto_threads
from suites.harness.spec import RunSpec, SuiteSpec

# The threads a run takes by default (all usable cores but one), so a test on a busy machine
# is as robust as a run there.
QUICK = TimingSpec("test", budget_s=0.01, min_samples=3, max_samples=50, warmup_calls=1,
                   compile_warmup_calls=1, l2_flush=False, threads=auto_threads()[0])
NO_PROFILE = ProfileSpec(False, 0, 1, 2, False, 10)
PROFILE = ProfileSpec(True, 0, 1, 2, False, 10)


def run_spec(out_dir: Path, case: Case, variants=None, timing: TimingSpec = QUICK,
             profile: ProfileSpec = NO_PROFILE, calibrate: bool = False) -> RunSpec:
    """A spec whose suite is `case` alone, with the op's baseline first."""
    op = registry.get_op(case.op)
    variants = tuple(dict.fromkeys([op.baseline, *(variants or ())]))
    suite = SuiteSpec(op.name, (case.params,), (case.dtype,), variants, op.baseline)
    return RunSpec(suite, case.device, timing, profile, seed=case.seed, calibrate=calibrate,
                   progress=False, out_dir=Path(out_dir))

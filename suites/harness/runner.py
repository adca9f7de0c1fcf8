"""Run a spec: calibrate, then every (case, variant) in order, baseline first per case; collect
rows, kernels, samples and findings; write the tables. One case at a time on one device."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass

import pandas as pd
import torch

from kernels import registry
from suites.harness.calibration import calibrate
from suites.harness.environment import busy_machine_warning, describe
from suites.harness.measure import measure
from suites.harness.derived import add_speedups, derive
from suites.harness.progress import Progress
from suites.findings import find_all
from suites.results.columns import KEY
from suites.results.tables import write_tables
from suites.spec import RunSpec


@dataclass
class RunResult:
    spec: RunSpec
    env: dict
    frame: pd.DataFrame
    findings: list[dict]  # findings.csv's rows
    seconds: float


def run(spec: RunSpec, stream=sys.stderr) -> RunResult:
    started = time.perf_counter()
    torch.set_num_threads(spec.timing.threads)  # recorded on every row, and in env.json
    env = describe(spec.device, spec.timing.threads)
    warning = busy_machine_warning(spec.timing.threads, torch.device(spec.device).type,
                                   env["cores_used_by_others"])
    if warning:
        print(warning, file=stream)
        env["warning"] = warning
    env.update(suite=spec.suite.name, reference=dict(spec.suite.reference),
               timing=asdict(spec.timing), profile=asdict(spec.profile))
    if spec.calibrate:
        env["peaks"] = calibrate(spec.device, spec.suite.dtypes)
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    (spec.out_dir / "env.json").write_text(json.dumps(env, indent=2))

    op = registry.get_op(spec.suite.name)
    variants = [registry.get_variant(op.name, name) for name in spec.suite.variants]
    cases = spec.cases()
    progress = Progress(len(cases) * len(variants), enabled=spec.progress, stream=stream)
    rows, kernels, samples, findings = [], [], [], []
    for case in cases:
        baseline_err, baseline_profile, baseline_row = None, None, None
        for variant in variants:
            progress.start(case.id, variant.name)
            outcome = measure(op, variant, case, spec, baseline_err)
            row = outcome.row
            derive(row, env.get("peaks"))
            if variant.name == spec.suite.baseline:
                baseline_row, baseline_profile = row, outcome.profile
                if row.ok:
                    baseline_err = row.check.scaled_err
            rows.append(row)
            keys = dict(zip(KEY, (spec.suite.name, case.id, variant.name)))
            samples += [{**keys, "sample": i, "time_us": t} for i, t in enumerate(outcome.samples_us)]
            if outcome.profile is not None:
                kernels += [{**keys, "dtype": case.dtype, **k} for k in outcome.profile.kernel_rows()]
            findings += [{**keys, **f} for f in find_all(row, outcome.profile, baseline_row,
                                                         baseline_profile)]
            progress.finish(row)
    add_speedups(rows, spec.suite.baseline)
    frame = write_tables(spec.out_dir, rows, kernels, samples, findings)
    return RunResult(spec, env, frame, findings, time.perf_counter() - started)

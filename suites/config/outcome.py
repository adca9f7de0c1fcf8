"""What one command ran, said last: the exit status and a line for what is not a result, or, for
an interrupted job, where its rows are and the command that finishes it.

A sweep is judged by its sweep.json and the run.json of each job, wherever the launcher ran
them (suites/results/exit_status.py); a single run by its own run.json.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from suites.config.hydra_sweep import SweepManifest
from suites.config.run_folder import resume_args
from suites.harness.spec import RunSpec
from suites.harness.stopping import Interrupted, preempted
from suites.results.exit_status import exit_status
from suites.results.journal import COMPLETE
from suites.results.reader import read_state
from suites.results.run_folders import sweep_jobs, sweep_problems

RUN_FOLDERS: list[Path] = []  # the folders this process's jobs ran in


def interrupted(exc: Interrupted, spec: RunSpec, out_dir: Path, argv: list[str]) -> None:
    """The interrupted job's rows and the command that finishes it; then the exit a launcher
    expects: a SLURM job requeued by preemption hands back no result (so its sweep waits for the
    rerun), another job of a process of its own returns (its launcher waits for a return), and
    a job of this process exits 128 + the signal."""
    state = read_state(out_dir) or {}
    # A sweep job's own overrides (a cluster job's argv is the launcher's, not ours).
    args = argv if spec.job is None else spec.job["overrides"]
    print(f"fusebench: interrupted by {exc.name}: {state.get('done', '?')} of "
          f"{state.get('planned', '?')} rows are in {out_dir}; to finish it: python "
          f"run_suite.py {' '.join(resume_args(out_dir, args))}", file=sys.stderr)
    if os.environ.get("SUBMITIT_EXECUTOR"):
        if preempted():
            raise SystemExit(-1)
        return
    sys.exit(128 + exc.signum)


def final_status(argv: list[str]) -> int:
    """After every job: the exit code, and a last line saying what is not a result."""
    sweep = SweepManifest.folder
    if sweep is not None:
        jobs, problems = sweep_jobs(sweep), sweep_problems(sweep)
        for line in problems:
            print(f"fusebench: {line}", file=sys.stderr)
        code, line = exit_status([j.state for j in jobs if j.state is not None], problems)
        unfinished = any(j.state is None or j.state.get("state") != COMPLETE for j in jobs)
        then = (f"to finish it: python run_suite.py "
                f"{' '.join(resume_args(sweep, argv, 'hydra.sweep.dir'))}" if unfinished
                else f"to merge its jobs: python -m suites.collect {sweep}")
        print(f"{line}; sweep of {len(jobs)} job(s) in {sweep}; {then}")
    elif RUN_FOLDERS:
        code, line = exit_status([read_state(folder) for folder in RUN_FOLDERS])
        print(line)
    else:  # nothing ran (--cfg, --help)
        code = 0
    return code

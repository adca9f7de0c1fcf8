"""What one command ran, said last: the exit status and a line for what is not a result, or, for
an interrupted job or one stopped by a full disk, where its rows are and the command that
finishes it (this very interpreter, a bare `python` may be another one without Hydra, and
absolute paths: the command is pasted in any folder).

A sweep is judged by its sweep.json and the run.json of each job, wherever the launcher ran
them (suites/results/exit_status.py); a single run by its own run.json.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import NoReturn

import pandas as pd

from suites.config.compose import CONF_DIR
from suites.config.hydra_sweep import SweepManifest
from suites.config.run_folder import fail, resume_args
from suites.harness.spec import RunSpec
from suites.harness.stopping import Interrupted, preempted
from suites.results.exit_status import exit_status
from suites.results.journal import COMPLETE
from suites.results.reader import read_state
from suites.results.run_folders import sweep_jobs, sweep_problems

RUN_FOLDERS: list[Path] = []  # the folders this process's jobs ran in
# The entry script, beside the conf/ Hydra composes from: where there is none, no run started.
RUN_SUITE = CONF_DIR.parent / "run_suite.py"


def this_program() -> str:
    """How to start run_suite.py again, quoted for a shell, from any folder: this interpreter
    (the one with Hydra and torch; a pasted bare `python` may be another) and the absolute path
    of the clone's run_suite.py, however this process started (`python run_suite.py` in the
    clone, the installed `fusebench-run`, `python -m run_suite`, a cluster job's launcher). Not
    `fusebench-run` itself: pasted where the venv is not activated, it is not on PATH."""
    return shlex.join([sys.executable, str(RUN_SUITE)])


def finish_command(folder: Path, args: list[str], key: str = "hydra.run.dir") -> str:
    """The command that finishes the run (or sweep) in `folder`: `args` with resume=true."""
    return f"{this_program()} {' '.join(resume_args(folder, args, key))}"


def _job_args(spec: RunSpec, argv: list[str]) -> list[str]:
    """A sweep job's own overrides (a cluster job's argv is the launcher's, not ours)."""
    return argv if spec.job is None else spec.job["overrides"]


def interrupted(exc: Interrupted, spec: RunSpec, out_dir: Path, argv: list[str]) -> None:
    """The interrupted job's rows and the command that finishes it; then the exit a launcher
    expects: a SLURM job requeued by preemption hands back no result (so its sweep waits for the
    rerun), another job of a process of its own returns (its launcher waits for a return), and
    a job of this process exits 128 + the signal."""
    state = read_state(out_dir) or {}
    print(f"fusebench: interrupted by {exc.name}: {state.get('done', '?')} of "
          f"{state.get('planned', '?')} rows are in {out_dir}; to finish it: "
          f"{finish_command(out_dir, _job_args(spec, argv))}", file=sys.stderr)
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
        then = (f"to finish it: {finish_command(sweep, argv, 'hydra.sweep.dir')}" if unfinished
                else f"to merge its jobs: {shlex.quote(sys.executable)} -m suites.collect "
                     f"{shlex.quote(str(sweep))}")
        print(f"{line}; sweep of {len(jobs)} job(s) in {sweep}; {then}")
    elif RUN_FOLDERS:
        code, line = exit_status([read_state(folder) for folder in RUN_FOLDERS])
        print(line)
    else:  # nothing ran (--cfg, --help)
        code = 0
    return code


def disk_full(exc: OSError, spec: RunSpec, out_dir: Path, argv: list[str]) -> NoReturn:
    """A full disk stopped the run: one line naming the folder, what is kept there (whole rows:
    journal.py cuts a part-written case back) and what finishes it once there is space; exit 2,
    as for any command that could not do what it was asked (suites/results/exit_status.py).
    Nothing is removed: the rows are the run's."""
    state = read_state(out_dir) or {}
    where = f" (writing {exc.filename})" if exc.filename else ""
    if state.get("state") == COMPLETE:  # every row is in: only the report is missing
        then = (f"all {_rows_in(out_dir)} rows are kept there; once there is space, the report: "
                f"{shlex.quote(sys.executable)} -m suites.report {shlex.quote(str(out_dir))}")
    else:
        then = (f"{_rows_in(out_dir)} of {state.get('planned', '?')} rows are kept there, "
                f"whole; once there is space, to finish it: "
                f"{finish_command(out_dir, _job_args(spec, argv))}")
    fail(f"{out_dir}: the disk is full{where}: {then}")


def _rows_in(folder: Path) -> int | str:
    """The rows measurements.csv holds (run.json's count may be a case behind a full disk)."""
    path = folder / "measurements.csv"
    if not path.exists() or path.stat().st_size == 0:  # the disk was full before the first case
        return 0
    try:
        return len(pd.read_csv(path))
    except (OSError, ValueError):  # unreadable: the report would say why
        return "?"

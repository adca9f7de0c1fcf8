"""run_suite.py's command line, checked before Hydra starts: every problem is one line naming
the bad override (Hydra's own errors are blocks of text, a traceback or exit 1), and a multirun
is checked job by job before its first job runs.

Hydra runs a sweep's jobs one after another and composes each job's config only when its turn
comes, so a bad value in job 3 used to show up after jobs 0-2 had run for minutes. The sweep
is expanded the way Hydra's basic sweeper does (the product of the swept values), and each
job's config is composed and turned into a run spec; the first bad job is one line naming it.
"""
from __future__ import annotations

import os
from pathlib import Path

from suites.common.errors import ConfigError
from suites.config.compose import CONF_DIR, compose, resolved
from suites.config.group_choices import check_group_choices
from suites.config.hydra_sweep import (check_syntax, fixed_overrides, is_hydra_override,
                                       planned_jobs, sweep_params)
from suites.config.run_spec import build_run_spec

MULTIRUN_FLAGS = ("-m", "--multirun")
RUN_DIR, SWEEP_DIR = "hydra.run.dir", "hydra.sweep.dir"


def is_multirun(argv: list[str]) -> bool:
    return any(flag in argv for flag in MULTIRUN_FLAGS)


def overrides(argv: list[str]) -> list[str]:
    """The `key=value` arguments (flags such as -m left out)."""
    return [a for a in argv if not a.startswith("-") and "=" in a]


def given(argv: list[str], key: str) -> str | None:
    """The value of a `key=` override, if the command line has one; the last one where it has
    several, as Hydra takes it."""
    values = [arg.partition("=")[2] for arg in argv if arg.startswith(f"{key}=")]
    return values[-1] if values else None


def check_overrides(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    """A single run's overrides compose, or one line. A multirun's are checked job by job
    (check_multirun)."""
    if not is_multirun(argv):
        compose([a for a in overrides(argv) if not is_hydra_override(a)
                 or a.startswith("hydra.searchpath=")], conf_dir=conf_dir)


def check_multirun(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    if not is_multirun(argv):
        return
    try:  # the sweep an experiment preset sets in hydra.sweeper.params
        primary = compose(fixed_overrides(argv), hydra_config=True, conf_dir=conf_dir)
        jobs = planned_jobs(argv, sweep_params(primary))
    except ConfigError as exc:
        raise ConfigError(f"multirun: {exc}") from None
    search = [a for a in overrides(argv) if a.startswith("hydra.searchpath=")]
    for number, job in enumerate(jobs):
        try:
            build_run_spec(resolved(compose(search + job, conf_dir=conf_dir)), Path("unused"))
        except ConfigError as exc:
            raise ConfigError(f"multirun job {number} of {len(jobs)} ({' '.join(job)}): "
                              f"{exc}") from None


def check_folder_creatable(value: str | None, key: str) -> None:
    """Before Hydra makes the folder (its own error is a traceback): the nearest existing
    folder above it must be a writable folder. `key`: hydra.run.dir or hydra.sweep.dir."""
    if value is None:
        return
    if not value.strip():  # Hydra would put the run in the current folder, among its files
        raise ConfigError(f"{key}: empty; give a folder for the run (or leave it out for "
                          "results/<suite>/<time>)")
    path = Path(value).absolute()
    while not path.exists():
        path = path.parent
    if not path.is_dir():
        raise ConfigError(f"{key}={value}: {path} is a file, not a folder")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}={value}: cannot write under {path}")
    if str(path).startswith(("/proc", "/sys")):
        raise ConfigError(f"{key}={value}: {path} is a kernel filesystem, not a folder "
                          "for results")


def check_command_line(argv: list[str], conf_dir: Path = CONF_DIR) -> None:
    """Every check Hydra does not make, in the order a user's mistake is most likely found."""
    check_syntax(argv)
    check_group_choices(argv, conf_dir)
    check_overrides(argv, conf_dir)
    check_folder_creatable(given(argv, RUN_DIR), RUN_DIR)
    check_folder_creatable(given(argv, SWEEP_DIR), SWEEP_DIR)
    check_multirun(argv, conf_dir)

"""The Hydra side of a multirun: the jobs a sweep will run, and sweep.json, the list of them
written in the sweep folder before the first job starts.

sweep.json is how a reader knows a sweep is whole: `collect` and the exit status compare the
jobs it plans with the run folders that hold a run.json of that job
(suites/results/run_folders.py), so a job that crashed, was cancelled on a cluster or never
started is named, not silently absent.
The callback runs in the launching process, whatever the launcher (basic, submitit_local,
submitit_slurm), with the same config object Hydra makes the sweep folder from.

Both callbacks here also take the folder for this process before Hydra writes into it
(folder_lock.py): a single run's folder (RunFolderOwner), a sweep's folder (SweepManifest).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from suites.common.errors import ConfigError
from suites.config.folder_lock import check_space, own
from suites.config.run_folder import fail
from suites.results import atomic
from suites.results.journal import SWEEP_JSON


def is_hydra_override(arg: str) -> bool:
    return arg.split("=", 1)[0].lstrip("+~").startswith("hydra")


def planned_jobs(args: list[str], params: Mapping | None = None) -> list[list[str]]:
    """The overrides of each job a multirun runs, in Hydra's own order and numbering: the
    sweeper's `params` from the config (an experiment preset's sweep), then the command line's
    overrides (Hydra's own keys left out), expanded by Hydra's basic sweeper itself."""
    args = [a for a in args if not a.startswith("-") and "=" in a and not is_hydra_override(a)]
    lines = [f"{k}={v}" for k, v in (params or {}).items()] + args
    return BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(lines), None)[0]


def check_syntax(args: list[str]) -> None:
    """Each override parses, or one line naming it (Hydra's own message is a block of text with
    a link, and exit 1)."""
    parser = OverridesParser.create()
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        try:
            parser.parse_overrides([arg])
        except Exception as exc:  # Hydra's OverrideParseException, and a few others
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"{arg}: not a valid override ({first})") from None


def fixed_overrides(args: list[str]) -> list[str]:
    """The overrides that are not sweeps (`suite.sizes=[64,128]` is one; `suite=a,b` is not)."""
    args = [a for a in args if not a.startswith("-") and "=" in a]
    return [o.input_line for o in OverridesParser.create().parse_overrides(args)
            if not o.is_sweep_override()]


def sweep_params(config: DictConfig) -> dict:
    params = OmegaConf.select(config, "hydra.sweeper.params") or {}
    return {str(k): str(v) for k, v in params.items()}


class SweepManifest(Callback):
    """Writes sweep.json ({"jobs": [{"num", "overrides"}], "launcher"}) into the sweep folder,
    and remembers that folder for the launching process's exit status."""

    folder: Path | None = None  # the last sweep folder this process started

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        folder = Path(str(config.hydra.sweep.dir))
        jobs = planned_jobs(list(config.hydra.overrides.task), sweep_params(config))
        launcher = str(config.hydra.launcher.get("_target_", "")).rsplit(".", 1)[-1]
        take_folder(folder, "hydra.sweep.dir")
        record = {"jobs": [{"num": n, "overrides": o} for n, o in enumerate(jobs)],
                  "launcher": launcher}
        atomic.write_text(folder / SWEEP_JSON, json.dumps(record, indent=2) + "\n")
        SweepManifest.folder = folder


def take_folder(folder: Path, key: str) -> None:
    """Before Hydra writes into `folder`: room for a run, and this process its only owner; or
    one line and exit 2, the folder left as it was (another run's files may be in it)."""
    try:
        check_space(folder, key)
        own(folder, key)
    except ConfigError as exc:
        fail(str(exc))


class RunFolderOwner(Callback):
    """A single run's folder taken for this process before Hydra writes `.hydra/` into it: two
    runs started together into one folder would otherwise both write there (folder_lock.py).
    Hydra resolves the folder's `${now:}` once per config, so this is the folder it then uses."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        take_folder(Path(str(config.hydra.run.dir)), "hydra.run.dir")

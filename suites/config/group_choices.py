"""One-line errors for config-group choices, checked before Hydra composes anything.

Hydra's own message for `suite=foo` is a multi-line block with a search-path dump; a user who
mistyped a name wants one line that says which names exist.
"""
from __future__ import annotations

from pathlib import Path

from suites.common.errors import ConfigError

GROUPS = ("suite", "timing", "profile", "experiment", "hydra/launcher")
# Launchers that Hydra itself and the pinned submitit plugin register (not files in conf/).
BUILT_IN = {"hydra/launcher": ("basic", "submitit_local", "submitit_slurm")}


def group_choices(conf_dir: Path, group: str) -> list[str]:
    files = {p.stem for p in (conf_dir / group).glob("*.yaml")}
    return sorted(files | set(BUILT_IN.get(group, ())))


def check_group_choices(argv: list[str], conf_dir: Path) -> None:
    """Raise ConfigError for `group=value` overrides naming no YAML in conf/<group>/."""
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.lstrip("+~").partition("=")
        if key not in GROUPS:
            continue
        accepted = group_choices(conf_dir, key)
        for choice in value.split(","):  # a multirun sweeps a comma-separated list
            if choice not in accepted:
                raise ConfigError(f"{key}={choice}: unknown {key}; accepted: {', '.join(accepted)}")

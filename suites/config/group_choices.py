"""One-line errors for config-group choices, checked before Hydra composes anything.

Hydra's own message for `suite=foo` is a multi-line block with a search-path dump; a user who
mistyped a name wants one line that says which names exist. The choices are the YAML files of
the group in conf/ and in every folder a `hydra.searchpath=[...]` override adds (a user's own
suites: file://DIR, or pkg://package).
"""
from __future__ import annotations

import importlib.resources
from pathlib import Path

from suites.common.errors import ConfigError

GROUPS = ("suite", "timing", "profile", "experiment", "hydra/launcher")
# Launchers that Hydra itself and the pinned submitit plugin register (not files in conf/).
BUILT_IN = {"hydra/launcher": ("basic", "submitit_local", "submitit_slurm")}


def search_dirs(argv: list[str]) -> list[Path]:
    """The config folders a `hydra.searchpath=[...]` override adds, as Hydra reads them (a
    relative file:// path from the current folder)."""
    # Here, not with the module: the tests import it on a GPU machine that has no Hydra.
    from hydra.core.override_parser.overrides_parser import OverridesParser

    dirs = []
    for arg in argv:
        if not arg.startswith("hydra.searchpath="):
            continue
        try:
            value = OverridesParser.create().parse_overrides([arg])[0].value()
        except Exception:  # not a list: check_syntax or Hydra names it
            continue
        for entry in value if isinstance(value, list) else [value]:
            entry = str(entry)
            if entry.startswith("file://"):
                folder = Path(entry.removeprefix("file://"))
                if not folder.is_dir():  # Hydra would warn in a block of text and go on
                    raise ConfigError(f"hydra.searchpath: {entry}: no folder "
                                      f"{folder.absolute()}")
                dirs.append(folder)
            elif entry.startswith("pkg://"):
                package = entry.removeprefix("pkg://").replace("/", ".")
                try:
                    dirs.append(Path(str(importlib.resources.files(package))))
                except (ModuleNotFoundError, TypeError):
                    raise ConfigError(f"hydra.searchpath: {entry}: no package "
                                      f"{package!r} to search") from None
    return dirs


def group_choices(conf_dir: Path, group: str, extra: list[Path] = ()) -> list[str]:
    files = {p.stem for folder in [conf_dir, *extra] for p in (folder / group).glob("*.yaml")}
    return sorted(files | set(BUILT_IN.get(group, ())))


def check_group_choices(argv: list[str], conf_dir: Path) -> None:
    """Raise ConfigError for `group=value` overrides naming no YAML in <group>/ of conf/ or a
    searched folder."""
    extra = search_dirs(argv)
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.lstrip("+~").partition("=")
        if key not in GROUPS:
            continue
        accepted = group_choices(conf_dir, key, extra)
        for choice in value.split(","):  # a multirun sweeps a comma-separated list
            if choice not in accepted:
                raise ConfigError(f"{key}={choice}: unknown {key}; accepted: {', '.join(accepted)}")

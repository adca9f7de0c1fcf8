"""The run config composed from conf/ without Hydra: what `run_suite.py` composes, as plain dicts.

The lent GPU machine has no hydra-core or omegaconf, so a tool that must run there
(suites/tools/gpu_check.py) composes the config itself: conf/config.yaml's defaults list
picks one YAML per group (suite, timing, profile), the primary file's own keys come after them
(its `_self_` is after the groups), then dotted overrides replace values. Only what this
project's conf/ uses is supported; anything else (an interpolation, a group file with its own
defaults, a new key) is a ConfigError rather than a silently different config.
tests/test_gpu_check.py checks the result against Hydra's compose for the same overrides.

    compose({"suite": "norm", "suite.dtypes": ["bfloat16"], "device": "cpu"})
    override_args(...)   # the same overrides on run_suite.py's command line
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Mapping

import yaml

from suites.common.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
# Keys of config.yaml that are Hydra's alone: they never reach build_run_spec.
HYDRA_ONLY = ("defaults", "hydra")


def _no_interpolation(value, where: str) -> None:
    """A `${...}` would be resolved by Hydra and read literally here: refuse it."""
    if isinstance(value, str) and "${" in value:
        raise ConfigError(f"{where}: {value!r} is an interpolation; compose with Hydra "
                          "(run_suite.py) or give the value itself")
    if isinstance(value, dict):
        for key, item in value.items():
            _no_interpolation(item, f"{where}.{key}")
    if isinstance(value, list):
        for index, item in enumerate(value):
            _no_interpolation(item, f"{where}[{index}]")


def _load(path: Path) -> dict:
    if not path.is_file():
        choices = sorted(p.stem for p in path.parent.glob("*.yaml"))
        raise ConfigError(f"{path.parent.name}={path.stem}: no {path}; accepted: "
                          f"{', '.join(choices)}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a mapping")
    return data


def _group_choices(primary: dict) -> dict[str, str]:
    """group -> chosen file, from the defaults list (null choices, like `experiment`, drop)."""
    choices: dict[str, str] = {}
    after_self = False
    for entry in primary.get("defaults", []):
        if entry == "_self_":
            after_self = True
            continue
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(f"config.yaml: defaults entry {entry!r} is not `group: choice`")
        (group, choice), = entry.items()
        group = group.removeprefix("override ").strip()
        if choice is None or group.split("/")[0] == "hydra":  # Hydra's own settings
            continue
        if after_self:  # it would override the primary file's keys: not supported here
            raise ConfigError(f"config.yaml: group {group} after `_self_` needs Hydra")
        choices[group] = choice
    return choices


def compose(overrides: Mapping[str, Any] = (), conf_dir: Path = CONF_DIR) -> dict:
    """The composed config, as OmegaConf.to_container(hydra_compose(...), resolve=True) gives
    it. `overrides`: group -> choice (`"suite": "norm"`), and dotted keys -> new values
    (`"suite.dtypes": ["bfloat16"]`, `"device": "cuda"`), applied in that order."""
    overrides = dict(overrides)
    primary = _load(Path(conf_dir) / "config.yaml")
    choices = _group_choices(primary)
    for group in choices:
        if group in overrides:
            choices[group] = overrides.pop(group)
    cfg: dict = {}
    for group, choice in choices.items():
        path = Path(conf_dir) / group / f"{choice}.yaml"
        data = _load(path)
        if "defaults" in data or "@package" in path.read_text():
            raise ConfigError(f"{group}={choice}: a defaults list or @package directive needs "
                              "Hydra")
        cfg[group] = data
    cfg.update({k: v for k, v in primary.items() if k not in HYDRA_ONLY})
    for key, value in overrides.items():
        _set(cfg, key, copy.deepcopy(value))
    _no_interpolation(cfg, "config")
    return cfg


def _set(cfg: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise ConfigError(f"{dotted}: {part} is not a section of the config")
    if last not in node:  # as Hydra: an override replaces a key, it never adds one
        raise ConfigError(f"{dotted}: no such key; known there: {', '.join(node)}")
    node[last] = value


# A string Hydra's override grammar reads back as the same string, unquoted.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")


def format_value(value) -> str:
    """`value` in Hydra's override syntax: [a,b], {k:v}, true, null, 'quoted text'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and value not in ("true", "false", "null"):
            return value
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{format_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"cannot write {value!r} as a Hydra override")


def override_args(overrides: Mapping[str, Any]) -> list[str]:
    """The overrides as run_suite.py's arguments (`suite=norm`, `suite.dtypes=[bfloat16]`)."""
    return [f"{key}={format_value(value)}" for key, value in overrides.items()]

"""The one way a configuration is composed: Hydra's compose API over conf/ (CONF_DIR), with any
`hydra.searchpath` the overrides give (a user's own suites), exactly as run_suite.py's
@hydra.main composes it. The checks before Hydra starts, gpu_check and the tests all compose
through here; a config that does not compose is one ConfigError line.

    compose(["suite=norm", "suite.dtypes=[bfloat16]"])   # a DictConfig, interpolations kept
    compose({"suite": "norm", "device": "cpu"})            # overrides as a mapping
    resolved(compose(...))                                 # plain dicts, for build_run_spec
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from suites.common.errors import ConfigError

# Hydra is imported where a config is composed, not with this module: CONF_DIR and the override
# helpers are read by modules the GPU machine's tests and gpu_check import, and it has no Hydra.
if TYPE_CHECKING:
    from omegaconf import DictConfig

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
CONFIG_NAME = "config"


def register_resolvers() -> None:
    """conf/config.yaml's `${pid:}`: two runs started in the same second get two folders.

    Cached, as Hydra's own `${now:}` is: a submitit job (local or SLURM, a requeued one too)
    composes its config again in a process of its own, from the launching process's config and
    that config's cache of resolved values. Uncached, the job's `${pid:}` would be its own pid
    and its run folder would go under another sweep folder than the one the launching process
    planned in sweep.json and looks in ("left no run folder")."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("pid", os.getpid, replace=True, use_cache=True)


def compose_problem(exc: Exception) -> str:
    """Hydra's compose error in one line: an override of a key the config lacks names the key
    (Hydra's text suggests `+key=...`, which the strict config then refuses)."""
    text = str(exc).strip()
    missing = re.match(r"Could not override '([^']+)'", text)
    if missing:
        return f"{missing.group(1)}: unknown key: not in the config (conf/)"
    cause = str(exc.__cause__ or "").strip()  # "Cannot merge DictConfig with ListConfig"
    first = text.splitlines()[0] if text else repr(exc)
    return f"{first}: {cause.splitlines()[0]}" if cause else first


def compose(overrides: Mapping[str, Any] | Sequence[str] = (), hydra_config: bool = False,
            conf_dir: Path = CONF_DIR) -> DictConfig:
    """The composed config. `overrides`: command-line overrides (`suite=norm`), or a mapping
    of group -> choice and dotted key -> value; `hydra_config`: with the `hydra` node (a
    sweep's params, the run folder)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    args = override_args(overrides) if isinstance(overrides, Mapping) else list(overrides)
    register_resolvers()
    with initialize_config_dir(version_base="1.3", config_dir=str(conf_dir)):
        try:
            return hydra_compose(CONFIG_NAME, overrides=args, return_hydra_config=hydra_config)
        except (HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(compose_problem(exc)) from None


def resolved(cfg: DictConfig) -> dict:
    """The composed config as plain dicts and lists, interpolations resolved: what
    build_run_spec takes."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        return OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(compose_problem(exc)) from None


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

"""Suite definitions: how a suite's config turns into cases. One small module per suite."""
from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from typing import Callable, Mapping

from suites.errors import ConfigError

# The ladder, in order; each name is kernels/<name>.py, suites/<name>.py and conf/suite/<name>.yaml.
SUITE_NAMES = ("matmul_add",)


@dataclass(frozen=True)
class SuiteDef:
    name: str
    op: str
    shape_key: str  # the suite config key that holds its shapes: `sizes` or `axes`
    size_axis: str  # the named size used as the x axis of the plots
    expand: Callable[[object], list[dict[str, int]]]  # shape config -> list of named sizes
    describe: str = ""


def get_suite(name: str) -> SuiteDef:
    if name not in SUITE_NAMES:
        raise ConfigError(f"suite={name}: unknown suite; accepted: {', '.join(SUITE_NAMES)}")
    return importlib.import_module(f"suites.{name}").SUITE


def positive_int(value, key: str) -> int:
    # bool is an int in Python; `True` as a size is a typo, not a 1.
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{key}: {value!r} is not a positive integer")
    return value


def expand_axes(axes, key: str = "suite.axes") -> list[dict[str, int]]:
    """Named axes -> their cartesian product, in the YAML's order: {T: [1, 2], D: [8]} -> 2 shapes."""
    if not isinstance(axes, Mapping) or not axes:
        raise ConfigError(f"{key}: expected a mapping of axis name to a list of sizes, got {axes!r}")
    names, values = [], []
    for name, sizes in axes.items():
        sizes = sizes if isinstance(sizes, (list, tuple)) else [sizes]
        if not sizes:
            raise ConfigError(f"{key}.{name}: empty list of sizes")
        names.append(name)
        values.append([positive_int(v, f"{key}.{name}") for v in sizes])
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]

"""Suite definitions: how a suite's config turns into cases. One small module per suite."""
from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from typing import Callable, Mapping

from suites.errors import ConfigError

# The ladder, in order; each name is kernels/<name>.py, suites/<name>.py and conf/suite/<name>.yaml.
SUITE_NAMES = ("matmul_add", "linear", "mlp", "attention", "block")


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
    """Named axes -> shapes. A mapping of axis -> sizes gives the cartesian product in the YAML's
    order ({T: [1, 2], D: [8]} -> 2 shapes); a list of such mappings gives the union of their
    products, so a grid can mix a small sweep with a few large, hand-picked shapes."""
    groups = axes if isinstance(axes, (list, tuple)) else [axes]
    shapes: list[dict[str, int]] = []
    names = None
    for i, group in enumerate(groups):
        where = f"{key}[{i}]" if isinstance(axes, (list, tuple)) else key
        if not isinstance(group, Mapping) or not group:
            raise ConfigError(f"{where}: expected a mapping of axis name to a list of sizes, "
                              f"got {group!r}")
        if names is not None and list(group) != names:
            raise ConfigError(f"{where}: axes {list(group)} differ from {names}; every group "
                              "must name the same axes")
        names = list(group)
        values = []
        for name, sizes in group.items():
            sizes = sizes if isinstance(sizes, (list, tuple)) else [sizes]
            if not sizes:
                raise ConfigError(f"{where}.{name}: empty list of sizes")
            values.append([positive_int(v, f"{where}.{name}") for v in sizes])
        for combo in itertools.product(*values):
            shape = dict(zip(names, combo))
            if shape not in shapes:
                shapes.append(shape)
    return shapes


def axes_for(op_params: tuple[str, ...]):
    """An `expand` for suites whose config holds `axes`: checks the axis names against the op's."""

    def expand(axes) -> list[dict[str, int]]:
        shapes = expand_axes(axes)
        if shapes and set(shapes[0]) != set(op_params):
            raise ConfigError(f"suite.axes: names {sorted(shapes[0])} must be exactly the op's "
                              f"parameters {list(op_params)}")
        return [{name: shape[name] for name in op_params} for shape in shapes]

    return expand


def axes_suite(op, size_axis: str, describe: str) -> SuiteDef:
    """A suite named like its op, whose config sweeps the op's parameters as named axes."""
    return SuiteDef(name=op.name, op=op.name, shape_key="axes", size_axis=size_axis,
                    expand=axes_for(op.params), describe=describe)

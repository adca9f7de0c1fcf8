"""How a suite's config names its shapes, turned into a list of parameter dicts.

`sizes: [64, 256]` sets every parameter of the op to each size in turn (matmul_add: M = N = K).
`axes` is a mapping of parameter -> values (their cartesian product, in the YAML's order), or a
list of such mappings (the union of their products), so a grid can mix a small sweep with a few
large, hand-picked shapes. Sizes are positive integers; a categorical parameter (Op.choices)
takes names from its list.
"""
from __future__ import annotations

import itertools
from typing import Mapping

from kernels.base import Op, Value
from suites.common.errors import ConfigError


def positive_int(value, key: str) -> int:
    # bool is an int in Python; `True` as a size is a typo, not a 1.
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{key}: {value!r} is not a positive integer")
    return value


def non_negative_int(value, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{key}: {value!r} is not a non-negative integer")
    return value


def boolean(value, key: str) -> bool:
    """true or false only: `off`, `no` or `0` read as true by bool() and would turn a switch the
    wrong way without a word."""
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: {value!r} is not a boolean; accepted: true, false")
    return value


def no_duplicates(values, key: str) -> None:
    """A value listed twice would make the same rows twice (and their plots and speedups)."""
    seen = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{key}: {value!r} is listed twice")
        seen.add(value)


def checked_value(op: Op, name: str, value, key: str) -> Value:
    """One parameter's value, checked: a positive size, or one of a categorical's choices."""
    if name not in op.choices:
        return positive_int(value, key)
    if value not in op.choices[name]:
        raise ConfigError(f"{key}: {value!r} is not a {name}; accepted: "
                          f"{', '.join(op.choices[name])}")
    return value


def square_shapes(sizes, op: Op) -> list[dict[str, Value]]:
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise ConfigError(f"suite.sizes: expected a non-empty list of sizes, e.g. "
                          f"suite.sizes=[64,256,1024], got {sizes!r}")
    if op.choices:
        raise ConfigError(f"suite.sizes: {op.name} has categorical parameters "
                          f"({', '.join(op.choices)}); give suite.axes instead")
    no_duplicates(sizes, "suite.sizes")
    return [{p: n for p in op.params} for n in (positive_int(s, "suite.sizes") for s in sizes)]


def _group_values(group: Mapping, op: Op, where: str) -> list[list[Value]]:
    values = []
    for name, given in group.items():
        given = given if isinstance(given, (list, tuple)) else [given]
        if not given:
            raise ConfigError(f"{where}.{name}: empty list of values")
        no_duplicates(given, f"{where}.{name}")
        values.append([checked_value(op, name, v, f"{where}.{name}") for v in given])
    return values


def _axes_example(op: Op, key: str) -> str:
    """`suite.axes={T:[64],D:[64],norm:[layer]}`: one value of each of the op's parameters."""
    values = (f"{p}:[{op.choices[p][0] if p in op.choices else 64}]" for p in op.params)
    return f"{key}={{{','.join(values)}}}"


def axes_shapes(axes, op: Op, key: str = "suite.axes") -> list[dict[str, Value]]:
    """Named axes -> shapes, each in the op's parameter order, without duplicates."""
    groups = axes if isinstance(axes, (list, tuple)) else [axes]
    if not groups:  # no group: no shape, and a run of no rows would end in the report's error
        raise ConfigError(f"{key}: empty list; expected a mapping of axis name to a list of "
                          f"values (or a list of such mappings), e.g. {_axes_example(op, key)}")
    shapes: list[dict[str, Value]] = []
    for i, group in enumerate(groups):
        where = f"{key}[{i}]" if isinstance(axes, (list, tuple)) else key
        if not isinstance(group, Mapping) or not group:
            raise ConfigError(f"{where}: expected a mapping of axis name to a list of values, "
                              f"got {group!r}")
        if set(group) != set(op.params):
            raise ConfigError(f"{where}: names {sorted(group)} must be exactly the op's "
                              f"parameters {list(op.params)}")
        for combo in itertools.product(*_group_values(group, op, where)):
            named = dict(zip(group, combo))
            shape = {p: named[p] for p in op.params}
            if shape not in shapes:
                shapes.append(shape)
    return shapes


def reference_shape(value, op: Op) -> tuple[tuple[str, Value], ...]:
    """The series' shape of a suite (for the ladder report), or () when the YAML has none."""
    if value is None:
        return ()
    if not isinstance(value, Mapping) or sorted(value) != sorted(op.params):
        raise ConfigError(f"suite.reference: expected a mapping of {list(op.params)} to values, "
                          f"got {value!r}")
    return tuple((p, checked_value(op, p, value[p], f"suite.reference.{p}")) for p in op.params)

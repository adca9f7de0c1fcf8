"""The suite table: every suite, from the one place each is declared, its block's Op.

A suite is named like its op (kernels/<name>.py, which declares its parameters, size axis and
description) and is configured by conf/suite/<name>.yaml. Adding a block adds its suite; a test
fails if a YAML has no op or an op has no YAML. A user's own suite names its op in its YAML
(`op: my_ops:BiasRelu`, a module on PYTHONPATH: kernels/api.py) and lives in their own config
folder (`hydra.searchpath`).
"""
from __future__ import annotations

from dataclasses import dataclass

from kernels import registry
from kernels.base import Op
from suites.common.errors import ConfigError
from suites.config.compose import CONF_DIR


@dataclass(frozen=True)
class Suite:
    op: Op

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def conf(self):
        return CONF_DIR / "suite" / f"{self.name}.yaml"


def suites() -> list[Suite]:
    """Every suite, in ladder order."""
    return [Suite(op) for op in registry.ops()]


def suite_names() -> list[str]:
    return [s.name for s in suites()]


def get_suite(name: str, op_reference: str | None = None) -> Suite:
    """The suite `name`, a built-in one or, with `op_reference` (its YAML's `op:`), a user's."""
    if op_reference is not None:
        return _own_suite(name, op_reference)
    for suite in suites():
        if suite.name == name:
            return suite
    raise ConfigError(f"suite={name}: unknown suite; accepted: {', '.join(suite_names())} (a "
                      "suite of your own names its op in its YAML: `op: module:Class`)")


def _own_suite(name: str, op_reference: str) -> Suite:
    try:
        op = registry.load_op(op_reference)
    except registry.OpLoadError as exc:
        raise ConfigError(f"suite.{exc}") from None
    if op.name != name:
        raise ConfigError(f"suite.op: {op_reference} is op {op.name!r}, but the suite is named "
                          f"{name!r}: a suite is named like its op (suite.name={op.name})")
    if not registry.variant_names(op.name):
        raise ConfigError(f"suite.op: {op_reference}: op {op.name!r} has no variants; its "
                          "module registers them with kernels.api.register_variant")
    return Suite(op)


def device_grid(name: str, device: str) -> dict:
    """A built-in suite's grid for `device` as its YAML declares it (`grids.<device>`: axes or
    sizes, and dtypes), read without composing a run: for tools that plan what the suites
    launch there (suites/tools/triton_launches.py)."""
    from omegaconf import OmegaConf

    conf = OmegaConf.to_container(OmegaConf.load(get_suite(name).conf))
    try:
        return conf["grids"][device]
    except KeyError:
        raise ConfigError(f"conf/suite/{name}.yaml: no grids.{device}") from None

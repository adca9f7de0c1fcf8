"""The suite table: every suite, from the one place each is declared, its block's Op.

A suite is named like its op (kernels/<name>.py, which declares its parameters, size axis and
description) and is configured by conf/suite/<name>.yaml. Adding a block adds its suite; a test
fails if a YAML has no op or an op has no YAML.
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


def get_suite(name: str) -> Suite:
    for suite in suites():
        if suite.name == name:
            return suite
    raise ConfigError(f"suite={name}: unknown suite; accepted: {', '.join(suite_names())}")

"""The gate's thresholds per suite: where they come from and what values are accepted.

A suite's YAML may hold a `history:` block (conf/suite/<suite>.yaml):

    history: {window: 20, z: 3.5, min_change: 0.05, max_cv: 0.15}

`window`: runs in the rolling baseline; `z`: the statistical threshold (modified z-score);
`min_change`: the practical one (a fraction: 0.05 flags only a move beyond 5%, taken
symmetrically in logs); `max_cv`: past this robust coefficient of variation of the baseline,
a series is too noisy to gate (suites/reports/history/gate.py says why each default is what it
is). A history reads the block from the newest run of each suite (its stored config,
`.hydra/config.yaml`, else run.json's), so a change of thresholds takes effect with the next
run; a key the block leaves out, or a run without the block, takes the default; a flag on the
command line (--window, --z, --min-change, --max-cv) overrides them all. A value that is not
accepted is one line of error naming the folder and the key, exit 2.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from suites.common.errors import InputError
from suites.reports.history import gate as gate_module

KEYS = ("window", "z", "min_change", "max_cv")


@dataclass(frozen=True)
class Thresholds:
    window: int = gate_module.WINDOW
    z: float = gate_module.Z_THRESHOLD
    min_change: float = gate_module.MIN_CHANGE
    max_cv: float = gate_module.MAX_CV
    source: str = "defaults"  # where they came from, for the page

    def options(self) -> dict:
        """gate()'s keyword arguments."""
        return {"window": self.window, "z_threshold": self.z, "min_change": self.min_change,
                "max_cv": self.max_cv}

    def values(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k in KEYS}

    def text(self) -> str:
        return (f"window {self.window} runs, |z| > {self.z:g} and a change beyond "
                f"{self.min_change:.0%}, too noisy past a {self.max_cv:.0%} CV ({self.source})")


def check(key: str, value, where: str):
    """The value of `history.<key>` as accepted, or an InputError naming `where`."""
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or \
        not math.isfinite(value)
    if key == "window":
        if bad or value != int(value) or value < gate_module.MIN_BASELINE:
            raise InputError(f"{where}: history.window {value!r}: a whole number of runs, at "
                             f"least {gate_module.MIN_BASELINE}")
        return int(value)
    if key == "z" and (bad or value <= 0):
        raise InputError(f"{where}: history.z {value!r}: a positive number (default "
                         f"{gate_module.Z_THRESHOLD})")
    if key == "min_change" and (bad or not 0 <= value < 1):
        raise InputError(f"{where}: history.min_change {value!r}: a fraction in [0, 1), e.g. "
                         "0.05")
    if key == "max_cv" and (bad or value <= 0):
        raise InputError(f"{where}: history.max_cv {value!r}: a positive fraction, e.g. 0.15")
    return float(value)


def from_config(config: dict, where: str) -> Thresholds:
    """The thresholds a run's config sets (its suite's `history` block), defaults elsewhere."""
    suite = config.get("suite") if isinstance(config, dict) else None
    block = suite.get("history") if isinstance(suite, dict) else None
    if block is None:
        return Thresholds()
    if not isinstance(block, dict):
        raise InputError(f"{where}: suite.history: a mapping of {', '.join(KEYS)}, not "
                         f"{block!r}")
    unknown = [k for k in block if k not in KEYS]
    if unknown:
        raise InputError(f"{where}: suite.history.{unknown[0]}: unknown key; history keys: "
                         f"{', '.join(KEYS)}")
    values = {k: check(k, v, where) for k, v in block.items()}
    return replace(Thresholds(), **values, source=f"suite.history of {where}")


def with_flags(base: Thresholds, flags: dict) -> Thresholds:
    """`base` with the command line's flags (None: not given) put over it."""
    given = {k: check(k, v, "the command line") for k, v in flags.items() if v is not None}
    if not given:
        return base
    names = ", ".join(f"--{k.replace('_', '-')}" for k in given)
    return replace(base, **given, source=f"{base.source}; {names} from the command line")

"""Findings stated once, with the cases and variants they hold for.

A sweep repeats most findings case after case with only the numbers changed ("aten::addmm
replaced aten::mm + aten::add ... 1 per call, 6.1 us ..."). Statements of one code that read
the same once their numbers are taken out are one finding: said once, its numbers as ranges,
followed by where it holds ("in addmm and compile, every case"); the per-case lines then keep
only what differs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from suites.common.numbers import plain

# A number standing alone (not part of a name such as aten::mm, M64, sm90 or ProfilerStep#3),
# whole: never the "2" of "2.25x"; an "x" right after it is its unit (a ratio).
NUMBER = re.compile(r"(?<![\w.#])-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?(?:(?![\w.])|(?=x\b))")
LIST_UP_TO = 6  # cases named one by one; more are summarised


@dataclass
class Shared:
    code: str
    template: str
    statements: list[str] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (case_id, variant)

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(v for _, v in self.keys))

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(c for c, _ in self.keys))

    def text(self) -> str:
        """The statement with each number as the range it takes across the group."""
        slots = [NUMBER.findall(s) for s in self.statements]
        parts = NUMBER.split(self.statements[0])
        out = [parts[0]]
        for i, rest in enumerate(parts[1:]):
            out.append(_span([row[i] for row in slots]) + rest)
        return "".join(out)


def _span(tokens: list[str]) -> str:
    if len(set(tokens)) == 1:
        return tokens[0]
    values = [float(t.replace(",", "")) for t in tokens]
    return f"{plain(min(values))}-{plain(max(values))}"


def group(findings: pd.DataFrame, codes) -> list[Shared]:
    """Findings of `codes` grouped by (code, statement without its numbers), in first-seen
    order; a group holds one statement per (case, variant)."""
    groups: dict[tuple[str, str], Shared] = {}
    for row in findings[findings["code"].isin([str(c) for c in codes])].itertuples():
        template = NUMBER.sub("#", row.statement)
        shared = groups.setdefault((row.code, template), Shared(row.code, template))
        shared.statements.append(row.statement)
        shared.keys.append((row.case_id, row.variant))
    return list(groups.values())


def where(shared: Shared, all_cases: list[str], name_of: dict[str, str]) -> str:
    """`in addmm and compile, every case` / `in eager, at M64 fp32; in compile, every case`.

    Variants are named together only where they hold for the same cases: a line that said
    "in eager and compile, every case" when eager held at one case would claim what was not
    measured."""
    by_cases: dict[tuple[str, ...], list[str]] = {}
    for variant in shared.variants:
        cases = tuple(dict.fromkeys(c for c, v in shared.keys if v == variant))
        by_cases.setdefault(cases, []).append(variant)
    return "; ".join(f"in {_and(variants)}, {_at(list(cases), all_cases, name_of)}"
                     for cases, variants in by_cases.items())


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _at(cases: list[str], all_cases: list[str], name_of: dict[str, str]) -> str:
    if set(cases) == set(all_cases):
        return "every case"
    if len(cases) <= LIST_UP_TO:
        return "at " + ", ".join(name_of.get(c, c) for c in cases)
    return f"{len(cases)} of {len(all_cases)} cases ({name_of.get(cases[0], cases[0])} to " \
           f"{name_of.get(cases[-1], cases[-1])})"

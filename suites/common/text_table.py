"""Rows of dicts as a plain-text table for a console, without pandas.

`python -m suites.analyze` prints a few small tables; importing pandas to format them took a
quarter of a second of every run, more than reading a 10 MB trace. Cells: None and NaN are
`na`, floats go through `float_format`, the rest through str(). The first column (a step's,
a kernel's or a scope's name) is aligned left, every other column right, as numbers read best.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable


def _cell(value, float_format: Callable[[float], str], na: str) -> str:
    if value is None or (type(value) is float and math.isnan(value)):
        return na
    if type(value) is float:
        return float_format(value)
    return str(value)


def text_table(rows: Iterable[dict], columns: dict[str, str] | list[str],
               float_format: Callable[[float], str] = lambda v: f"{v:.4g}",
               na: str = "-") -> str:
    """`columns`: the keys to show, in order, or key -> header. A key a row lacks is `na`."""
    headers = columns if isinstance(columns, dict) else {key: key for key in columns}
    cells = [[header for header in headers.values()]]
    cells += [[_cell(row.get(key), float_format, na) for key in headers] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(text.ljust(width) if i == 0 else text.rjust(width)
                  for i, (text, width) in enumerate(zip(line, widths))).rstrip()
        for line in cells)

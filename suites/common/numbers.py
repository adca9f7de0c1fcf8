"""How the reports write numbers: never an exponent for the magnitudes a benchmark produces
(23,020 us or 23.02k, not 2.302e+04). `num` for table cells (suffixes keep columns narrow),
`plain` for prose (whole numbers with separators)."""
from __future__ import annotations

import math
import numbers

import pandas as pd

# (from, divisor, suffix): thousands keep their comma up to 9,999 (2,666 reads at a glance)
_SI = ((1e15, 1e15, "P"), (1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))


def plain(value: float, digits: int = 3) -> str:
    """`digits` significant figures; thousands and above as whole numbers with separators."""
    if missing(value):
        return "-"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def num(value, digits: int = 4) -> str:
    """Every number a table shows, to `digits` significant figures in plain notation: 8.743,
    1.14 not 1.140, 2,666; from 10,000 on with a suffix (11.71k, 12.35M), not 1.171e+04;
    below 0.001 with a short exponent (2.297e-7: an error, never a time); missing as '-', but
    an empty text cell stays empty (the ladder leaves a block's name off its rows after the
    first)."""
    if isinstance(value, str) and value == "":
        return ""
    if missing(value):
        return "-"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    value = float(value)
    size = abs(value)
    if value == 0 or math.isinf(value):
        return "0" if value == 0 else str(value)
    if size < 1e-3:
        mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
        return f"{_trim(mantissa)}e{int(exponent)}"
    for start, divisor, suffix in _SI:
        if size >= start * (1 - 0.5 / 10 ** digits):  # 9,999.9 reads 10k, not 10,000
            return num(value / divisor, digits) + suffix if size < 1e18 else f"{value:.3g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(size)))
    return _trim(f"{value:,.{decimals}f}")


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def missing(value) -> bool:
    """None, NaN of any float type, pandas' NA, or an empty cell."""
    if value is None or value is pd.NA:
        return True
    if isinstance(value, str):
        return value == ""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isnan(float(value)))

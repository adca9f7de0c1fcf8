"""How the reports write numbers: never an exponent for the magnitudes a benchmark produces
(23,020 us or 23.02k, not 2.302e+04). `num` for table cells (suffixes keep columns narrow),
`plain` for prose (whole numbers with separators), `times` and `span` for factors and ranges in
prose; the formats a table keeps for a reason are named here too (`ratio`, `fixed_times`,
`count`, `sci`), so no report writes a number by a format of its own."""
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
    if abs(value) >= 10 ** digits - 0.5:  # 999.7 reads 1,000, not 1e+03
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def times(value: float) -> str:
    """A factor in prose, `plain` with an x: 1.14x, 0.52x, 1,234x."""
    return "-" if missing(value) else plain(value) + "x"


def span(low: float, high: float, unit: str = "") -> str:
    """A range in prose: `0.49-0.55` (an interval), `0.52x-0.6x` with unit="x"; with the
    digits that tell its ends apart (1.0831-1.0834, never 1.08-1.08)."""
    digits = _telling_digits(low, high, 3, plain)
    return f"{plain(low, digits)}{unit}-{plain(high, digits)}{unit}"


_MAX_DIGITS = 7


def _telling_digits(low: float, high: float, digits: int, write) -> int:
    """The fewest significant digits, from `digits`, at which two different numbers read
    differently (an interval printed as 1.083-1.083 says it has no width, which none has)."""
    if missing(low) or missing(high) or low == high:
        return digits
    while digits < _MAX_DIGITS and write(low, digits) == write(high, digits):
        digits += 1
    return digits


def distinct(low: float, high: float, digits: int = 3) -> tuple[str, str]:
    """An interval's ends as table cells (`num`), with the digits that tell them apart."""
    digits = _telling_digits(low, high, digits, num)
    return num(low, digits), num(high, digits)


def ratio(value) -> str:
    """A time ratio near 1, in a table: three decimals from 0.1 to 100, where a few percent are
    decided (1.02 against 1.02 would hide a 1.015 to 1.024 difference); `plain` beyond."""
    if missing(value):
        return "-"
    return f"{value:.3f}" if 0.1 <= value < 100 else plain(value)


def fixed_times(value: float) -> str:
    """A factor in a table column: two decimals, so the column lines up (1.05x, 12.30x), but
    two significant figures below 0.1, never a 0.00x for a 500x slowdown."""
    return f"{value:.2f}x" if value >= 0.1 else f"{value:.2g}x"


def count(value: float) -> str:
    """A count, whole, with separators; a fraction rounds up (the call that repays a cost)."""
    return f"{math.ceil(value):,}"


def sci(value: float) -> str:
    """Three significant figures, an exponent where it needs one: FLOP counts, which span
    decades and are read by their exponent (6.39e+06), not their digits."""
    return f"{value:.3g}"


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

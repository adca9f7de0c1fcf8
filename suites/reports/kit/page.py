"""A self-contained HTML page: inline CSS, plots embedded as base64 PNG, and at most one small
inline script (suites/reports/kit/page_assets.py: sortable tables, one-click Perfetto traces), so
the report reads the same offline, attached to an issue, or opened from an archive. A page
with neither a sortable table nor a trace link carries no script at all."""
from __future__ import annotations

import base64
import html
import math
import numbers
import re
from pathlib import Path, PurePosixPath

import pandas as pd

from suites.reports.kit.banner import CSS as BANNER_CSS
from suites.common.numbers import distinct, missing as _missing
from suites.common.numbers import num
from suites.reports.kit.page_assets import SCRIPT, TABLE_CSS
from suites.results.columns import BY_NAME, Status

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
.meta{color:#555;font-size:.9em}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.skipped{color:#777}.failed,.incorrect{color:#b00}.noisy{color:#a60}
dt{font-weight:600}dd{margin:0 0 .4em 1.2em}
""" + TABLE_CSS

# A measurement shown with its spread on a second line, the spread's columns then not shown on
# their own: column -> (low column, high column, what the pair is).
RANGES = {"mean_us": ("mean_low_us", "mean_high_us", "95% CI"),
          "median_us": ("p10_us", "p90_us", "p10\u2013p90"),
          "speedup": ("speedup_low", "speedup_high", "95% CI"),
          "kernel_us": ("kernel_low_us", "kernel_high_us", "95% CI"),
          "kernel_speedup": ("kernel_speedup_low", "kernel_speedup_high", "95% CI")}
TRACE_SUFFIXES = (".json.gz", ".json", ".pftrace", ".perfetto-trace")
# Only the script's own hooks switch the script on (page()); as markup, with '<' and '"' that an
# escaped text cell cannot hold.
_SORT_HOOK, _TRACE_HOOK = "<table data-sortable", ' data-perfetto="'
_SCRIPT_HOOKS = (_SORT_HOOK, _TRACE_HOOK)
_AXIS = re.compile(r"([A-Za-z]+)(\d+)")


def esc(value) -> str:
    return html.escape(num(value))


def answer_block(text: str, plot: Path | None) -> str:
    """A report's first screen: the answer's HTML `text` beside its small plot. id=answer (and
    the verdict's id=verdict inside `text`): the browser test checks they are on that screen."""
    if plot is None:
        return f"<div id='answer'>{text}</div>"
    return ("<div id='answer' style='display:flex;gap:20px;align-items:flex-start;"
            f"flex-wrap:wrap'><div style='flex:1 1 560px;min-width:0'>{text}</div>"
            f"<div style='flex:0 0 540px'>{image(plot)}</div></div>")


def image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{esc(path.stem)}" src="data:image/png;base64,{data}">'


def header(name: str, label: str) -> str:
    """A header cell's text: the label, and under it the column's unit (suites/results/
    columns.py) unless the label says it already ('median us')."""
    unit = BY_NAME[name].unit if name in BY_NAME else ""
    shown = html.escape(label)
    if unit and unit not in label.split():
        shown += f"<small>{html.escape(unit)}</small>"
    return shown


def _case_parts(case_id) -> tuple[tuple, str] | None:
    """`M64-N64-K64-fp32` -> (('M', 'N', 'K'), '64·64·64 fp32'); a token with no axis letter
    ('rms') goes after the sizes, with the dtype; None for an id of another form."""
    if not isinstance(case_id, str) or "-" not in case_id:
        return None
    *params, dtype = case_id.split("-")
    axes, sizes, words = [], [], []
    for token in params:
        match = _AXIS.fullmatch(token)
        if match:
            axes.append(match[1])
            sizes.append(match[2])
        else:
            words.append(token)
    if not sizes:
        return None
    return tuple(axes), " ".join(["\u00b7".join(sizes), *words, dtype])


def short_cases(values) -> tuple[str, dict]:
    """(axes for the header, {case id: short id}) when every id has the same axes, so the
    header can name them once; ('', {}) otherwise, and the ids stay whole."""
    parts = {v: _case_parts(v) for v in dict.fromkeys(values) if not _missing(v)}
    axes = {p[0] if p else None for p in parts.values()}
    if len(axes) != 1 or None in axes:
        return "", {}
    return "\u00b7".join(axes.pop()), {v: p[1] for v, p in parts.items()}


def _shown_columns(frame, columns, ranges, drop_empty) -> dict[str, str]:
    folded = {c for main, (low, high, _) in ranges.items() if main in columns
              for c in (low, high)}
    return {c: h for c, h in columns.items() if c not in folded and not (
        drop_empty and (c not in frame or all(_missing(v) for v in frame[c])))}


def _number_cell(value, spread: tuple | None) -> str:
    text = num(value)
    low, high = spread or (None, None)
    if not (_missing(low) or _missing(high) or low == high == value):  # the baseline's 1-1
        text += "<small>{}\u2013{}</small>".format(*distinct(low, high))
    data = f' data-v="{float(value)!r}"' if math.isfinite(float(value)) else ""
    return f'<td class="n"{data}>{text}</td>'


def trace_link(path: str, text: str) -> str:
    """A link to a file of the run folder; a trace also opens in Perfetto with one click (the
    page's script), its href kept as the fallback: a page opened as a file downloads it."""
    hook = (f'{_TRACE_HOOK}{html.escape(path)}"'
            if path.lower().endswith(TRACE_SUFFIXES) else "")
    return f'<a href="{html.escape(path)}"{hook}>{html.escape(text)}</a>'


def _cell(row, column, left, links, ranges, cases) -> str:
    value = row.get(column)
    if links and column in links:
        if isinstance(value, str) and inside_run(value):
            return f'<td class="l">{trace_link(value, links[column])}</td>'
        return f'<td class="l">{esc(value)}</td>'  # a path outside the run: text, not a link
    if column == "case_id" and value in cases:  # sizes on one line; the dtype may wrap
        sizes, _, rest = cases[value].partition(" ")
        return (f'<td class="l" title="{html.escape(value)}"><span class="nw">'
                f"{html.escape(sizes)}</span> {html.escape(rest)}</td>")
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and not _missing(value):
        low_high = ranges.get(column, ())[:2]
        return _number_cell(value, tuple(row.get(c) for c in low_high) or None)
    cls = ' class="l"' if column in left else ""  # text may wrap; only numbers keep one line
    return f'<td{cls}>{html.escape(num(value))}</td>'


def _head(columns, left, ranges, case_axes, sortable) -> str:
    cells = []
    for column, label in columns.items():
        text = header(column, label)
        if column in ranges:
            text += f"<small>{html.escape(ranges[column][2])}</small>"
        if column == "case_id" and case_axes:
            text += f"<small>{html.escape(case_axes)}</small>"
        attrs = (' class="l"' if column in left else "") + (' tabindex="0"' if sortable else "")
        cells.append(f"<th{attrs}>{text}</th>")
    return f'<thead class="sticky"><tr>{"".join(cells)}</tr></thead>'


def table(frame: pd.DataFrame, columns: dict[str, str], left=("case_id", "variant"),
          links: dict[str, str] | None = None, *, ranges: dict | None = None,
          drop_empty: bool = False, sortable: bool = False) -> str:
    """`columns`: frame column -> header. `links`: column whose value is a relative path inside
    the run folder, -> the link's text. `ranges`: column -> (low, high, label) shown as a
    second line of the column (RANGES), low and high then not shown on their own.
    `drop_empty`: leave out a column no row has a value in. `sortable`: a click on a header
    sorts by it (the page then carries its script). The table scrolls inside its own box when
    it is wider or taller than the page allows, under a sticky header."""
    ranges = ranges or {}
    shown = _shown_columns(frame, columns, ranges, drop_empty)
    case_axes, cases = (short_cases(frame["case_id"]) if "case_id" in shown and "case_id" in frame
                        else ("", {}))
    body = []
    for _, row in frame.iterrows():
        cells = "".join(_cell(row, c, left, links, ranges, cases) for c in shown)
        status = row.get("status", Status.OK)
        body.append(f'<tr class="{html.escape(str(status))}">{cells}</tr>')
    table_tag = _SORT_HOOK if sortable else "<table"
    note = _trace_note(body)
    return (f'<div class="tw">{table_tag}>{_head(shown, left, ranges, case_axes, sortable)}'
            f'<tbody>{"".join(body)}</tbody></table></div>{note}')


def _trace_note(rows: list[str]) -> str:
    """The line the script rewrites for how this page was opened; as written, what holds
    without the script."""
    if not any(_TRACE_HOOK in r for r in rows):
        return ""
    return ('<p class="trace-note">A trace link downloads the trace (.json.gz): open it in the '
            "Perfetto UI (ui.perfetto.dev).</p>")


def inside_run(path: str) -> bool:
    """A link the report may render: a relative path that stays inside the run folder. A CSV
    cell is input like any other (a rebuilt report must not carry a `javascript:` or outside
    link someone wrote into measurements.csv)."""
    if not path or "\\" in path or any(ord(c) < 32 for c in path):
        return False
    parts = PurePosixPath(path).parts
    return (not path.startswith("/") and ":" not in parts[0] and ".." not in parts)


def bullet_list(items) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


def page(title: str, sections: list[tuple[str, str]], meta: str, banner: str = "") -> str:
    """`banner`: HTML shown under the title, before any number (suites/reports/kit/banner.py). The
    script comes last, once the tables it works on are in the document."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<title>{html.escape(title)}</title>",
             f"<style>{STYLE}{BANNER_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p class='meta'>{meta}</p>", banner]
    for heading, content in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>{content}")
    if any(hook in content for _, content in sections for hook in _SCRIPT_HOOKS):
        parts.append(f"<script>{SCRIPT}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)

"""A self-contained HTML page: inline CSS, plots embedded as base64 PNG, no scripts, so the
report reads the same offline, attached to an issue, or opened from an archive."""
from __future__ import annotations

import base64
import html
from pathlib import Path, PurePosixPath

import pandas as pd

from suites.report.banner import CSS as BANNER_CSS
from suites.report.narrative import fmt
from suites.results.columns import Status

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;
color:#222;line-height:1.45;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.meta{color:#555;font-size:.9em}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.skipped{color:#777}.failed,.incorrect{color:#b00}.noisy{color:#a60}
dt{font-weight:600}dd{margin:0 0 .4em 1.2em}
"""


def esc(value) -> str:
    return html.escape(fmt(value))


def image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{esc(path.stem)}" src="data:image/png;base64,{data}">'


def table(frame: pd.DataFrame, columns: dict[str, str], left=("case_id", "variant"),
          links: dict[str, str] | None = None) -> str:
    """`columns`: frame column -> header. `links`: column whose value is a relative path."""
    head = "".join(f'<th class="{"l" if c in left else ""}">{html.escape(h)}</th>'
                   for c, h in columns.items())
    body = []
    for _, row in frame.iterrows():
        cells = []
        for column in columns:
            value = row.get(column)
            text = esc(value)
            if links and column in links and isinstance(value, str) and inside_run(value):
                text = f'<a href="{html.escape(value)}">{html.escape(links[column])}</a>'
            cls = "l" if column in left else ""
            cells.append(f'<td class="{cls}">{text}</td>')
        status = row.get("status", Status.OK)
        body.append(f'<tr class="{html.escape(str(status))}">{"".join(cells)}</tr>')
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


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
    """`banner`: HTML shown under the title, before any number (suites/report/banner.py)."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{STYLE}{BANNER_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p class='meta'>{meta}</p>", banner]
    for heading, content in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>{content}")
    parts.append("</body></html>")
    return "\n".join(parts)

"""The matplotlib plumbing every report plot shares (the run report's, the ladder's, compare's).

Every plot the project saves goes through `save_png` (a test holds it): tick labels that do not
overlap (label_fit.fit_ticks), a file written whole (suites/results/atomic.py), the figure
closed. `panels` and `save_with_legend` give the run report's look, one panel per dtype under
one figure-wide legend, to any plot that wants it (the ladder's fit plot does).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from suites.common.numbers import times  # noqa: E402
from suites.reports.kit.label_fit import fit_ticks  # noqa: E402
from suites.results import atomic  # noqa: E402

LEGEND_COLUMNS = 6


def save_png(fig, path: Path, dpi: int = 110) -> Path:
    """`fig` fitted (fit_ticks), written to `path` whole, and closed."""
    fit_ticks(fig)
    with atomic.replacing(path) as tmp:  # never a cut PNG
        fig.savefig(tmp, dpi=dpi, format="png")
    plt.close(fig)
    return path


def panels(frame, title: str, height: float = 4.0):
    """A figure with one panel per dtype of `frame`, side by side: (fig, [(dtype, axes)])."""
    dtypes = list(dict.fromkeys(frame["dtype"]))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(5.5 * len(dtypes), height), squeeze=False)
    fig.suptitle(title)
    return fig, list(zip(dtypes, axes[0]))


def legend_columns(fig, labels: list[str], fontsize: float, most: int = LEGEND_COLUMNS) -> int:
    """How many legend columns fit the figure's width: a column is as wide as the longest label
    (about 0.6 em a character) plus its handle and gap (about 3.5 em), so long labels
    (`compile fwd_bwd`, `torch::autograd::AccumulateGrad`) take fewer columns, never a legend
    cut at the figure's edges."""
    longest = max((len(label) for label in labels), default=1)
    column_pt = fontsize * (0.6 * longest + 3.5)
    fits = int(fig.get_figwidth() * 72 // column_pt)
    return max(1, min(most, len(labels), fits))


def save_with_legend(fig, path: Path) -> Path:
    """Saved with one legend for the figure (the first panel's entries), under the title, so it
    never covers data."""
    handles, labels = fig.axes[0].get_legend_handles_labels()
    columns = legend_columns(fig, labels, 8)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.94),
               ncol=columns, fontsize=8, frameon=False)
    rows = -(-len(labels) // columns)
    fig.tight_layout(rect=(0, 0, 1, 0.93 - 0.04 * rows))
    return save_png(fig, path)


def times_ticks(axis) -> None:
    """Tick labels of a factor axis as factors (0.5x, 2x); none on the minor ticks of a log
    axis, where they would crowd the major ones."""
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _: times(value)))
    axis.set_minor_formatter(ticker.NullFormatter())

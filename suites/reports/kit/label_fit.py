"""Tick labels that do not overlap, on every plot the project saves (kit/plots.py's `save_png`
calls `fit_ticks` before it writes).

Matplotlib places tick labels where the ticks are, whatever their width: long case ids or many
ratio ticks run into each other (compare.png's x axis did). Before a figure is saved,
`fit_ticks` measures each axes' x tick labels as drawn; where two overlap it turns them 30
degrees, and where they still overlap it shows every second (third, ...) label only.
"""
from __future__ import annotations

import math

PAD_PX = 2.0  # labels closer than this read as one


def overlapping(labels, renderer) -> bool:
    """Whether any two neighbouring `labels` (x tick labels, as drawn) overlap. Level labels:
    their boxes meet. Turned labels are parallel strips, clear of each other when the gap
    between their anchors, across the strips, is at least one line of text."""
    shown = [label for label in labels if label.get_visible() and label.get_text()]
    if len(shown) < 2:
        return False
    boxes = sorted((label.get_window_extent(renderer) for label in shown), key=lambda b: b.x0)
    angle = math.radians(shown[0].get_rotation() % 180)
    if angle == 0:
        return any(a.x1 + PAD_PX > b.x0 for a, b in zip(boxes, boxes[1:]))
    line = shown[0].get_fontsize() * shown[0].figure.dpi / 72  # points to pixels
    ends = sorted(b.x1 for b in boxes)  # right-aligned: each label ends at its tick
    return any((b - a) * math.sin(angle) < line + PAD_PX for a, b in zip(ends, ends[1:]))


def fit_ticks(fig) -> None:
    """Rotate, then thin, the x tick labels of each axes of `fig` until none overlap."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = ax.get_xticklabels()
        if not overlapping(labels, renderer):
            continue
        for label in labels:
            label.set_rotation(30)
            label.set_horizontalalignment("right")
        fig.canvas.draw()
        step = 2
        while overlapping(labels, renderer) and step <= len(labels):
            for i, label in enumerate(labels):
                label.set_visible(i % step == 0)
            fig.canvas.draw()
            step += 1


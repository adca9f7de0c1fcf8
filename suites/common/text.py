"""Text for the console: one way to shorten a long reason, so every shortened line reads the same
and none stops mid-word. The tables (measurements.csv) always keep the full text."""
from __future__ import annotations

ELLIPSIS = "…"


def cut(text: str, width: int) -> str:
    """`text` if it fits in `width` characters; else its words up to the last one that fits, and
    an ellipsis. A single word longer than the line (a path, a kernel name) is cut inside it,
    since there is no word boundary to cut at."""
    text = " ".join(text.split())  # a reason may hold newlines or runs of spaces from an error
    if len(text) <= width:
        return text
    room = max(width - len(ELLIPSIS), 0)
    head = text[:room + 1]  # one more: a space just after the cut means the word ended there
    space = head.rfind(" ")
    if space > 0:
        head = head[:space]
    else:
        head = head[:room]
    # No dangling separator before the ellipsis ("rounds clean: …" reads as a cut list).
    return head.rstrip(" ,;:(-") + ELLIPSIS

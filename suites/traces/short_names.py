"""Long kernel names cut to a table's width so that different kernels never read alike.

C++ kernel names run to hundreds of characters, and many share a long start (`void
at::native::vectorized_elementwise_kernel<4, at::native::...`, hipBLASLt's `Cijk_Alik_Bljk_...`):
cut at the width, two different kernels print the same. A name is cut at the width; where cuts
of different names are equal, each shows its start and then the stretch where it first differs
from the others.
"""
from __future__ import annotations

from collections import defaultdict

ELLIPSIS = "..."
HEAD = 16  # characters of the start kept before the differing stretch


def short_names(names: list[str], width: int = 60) -> list[str]:
    """Each name within `width` characters, different names different (where the width allows:
    names that differ only past it show where they differ)."""
    shown = [_cut(name, width) for name in names]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, cut in enumerate(shown):
        groups[cut].append(i)
    for members in groups.values():
        distinct = {names[i] for i in members}
        if len(distinct) < 2:
            continue
        for i in members:
            name = names[i]
            others = distinct - {name}
            at = max(_common_prefix(name, other) for other in others)
            shown[i] = _around(name, at, width)
    return shown


def _cut(name: str, width: int) -> str:
    return name if len(name) <= width else name[:width - len(ELLIPSIS)] + ELLIPSIS


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _around(name: str, at: int, width: int) -> str:
    """The name's start, then the stretch from a little before character `at` on."""
    room = width - HEAD - 2 * len(ELLIPSIS)
    lo = max(HEAD, at - room // 3)
    if lo <= HEAD:
        return _cut(name, width)
    tail = name[lo:lo + room]
    return name[:HEAD] + ELLIPSIS + tail + (ELLIPSIS if lo + room < len(name) else "")

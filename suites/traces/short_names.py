"""Long kernel names cut to a table's width so that different kernels never read alike.

C++ kernel names run to hundreds of characters, and many share a long start (`void
at::native::vectorized_elementwise_kernel<4, at::native::...`, hipBLASLt's `Cijk_Alik_Bljk_...`):
cut at the width, two different kernels print the same. The namespaces every ATen name repeats
are left out first (`void `, `at::native::`, `(anonymous namespace)::`, `c10::`, `std::`); a
name is then cut at the width, and where cuts of different names are equal, each shows its start
and then the stretch where it first differs from the name most like it. Names still alike (they
differ only far apart) are numbered.
"""
from __future__ import annotations

import re
from collections import defaultdict

ELLIPSIS = "..."
HEAD = 16  # characters of the start kept before the differing stretch
_NOISE = re.compile(r"^void |at::native::|\(anonymous namespace\)::|c10::|std::")


def plain(name: str) -> str:
    """A kernel's name without the namespaces every ATen kernel repeats, nor a SFINAE return
    type before it (vLLM's `std::enable_if<...>::type vllm::fused_add_rms_norm_kernel<...>`)."""
    name = _NOISE.sub("", name)
    if name.startswith("enable_if<") and ">::type " in name:
        name = name.split(">::type ", 1)[1]
    return name


def short_names(names: list[str], width: int = 60) -> list[str]:
    """Each name within `width` characters, different names shown differently."""
    full = [plain(name) for name in names]
    cuts = [_cut(name, width) for name in full]
    names_of: dict[str, set] = defaultdict(set)
    for name, cut in zip(full, cuts):
        names_of[cut].add(name)
    distinct = set(full)
    shown = list(cuts)
    for i, name in enumerate(full):
        if len(names_of[cuts[i]]) > 1:  # another name cuts alike
            at = max(_common_prefix(name, other) for other in distinct - {name})
            shown[i] = _around(name, at, width)
    return _numbered(full, shown)


def _numbered(full: list[str], shown: list[str]) -> list[str]:
    """Names still shown alike get a number each, in order of appearance."""
    by_shown: dict[str, list[str]] = defaultdict(list)
    for name, cut in zip(full, shown):
        if name not in by_shown[cut]:
            by_shown[cut].append(name)
    out = []
    for name, cut in zip(full, shown):
        names = by_shown[cut]
        out.append(cut if len(names) < 2 else f"{cut} #{names.index(name) + 1}")
    return out


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

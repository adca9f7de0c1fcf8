"""Whole-file outputs written so a crash or a full disk never leaves a cut file behind: the
content goes to a temporary name in the same folder, is flushed to disk, and only then renamed
over the target (a rename within a folder is atomic). On failure the temporary file goes and
the old file, if any, stays as it was."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """Yields a temporary path to write the whole file to; renames it over `path` when the block
    ends without an error."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")

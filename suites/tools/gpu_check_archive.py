"""Every run folder of a gpu_check in one archive under $OUT: a lease brings back a few files
at most two folders down (the run folders' env.json, rounds.csv, kernels.csv, findings.csv,
optree.csv and traces would not come back otherwise). Traces are the bulk; where the whole
would pass LIMIT_BYTES they are left out and the row says so (the tables are what explains a
noisy row or a missed target)."""
from __future__ import annotations

import tarfile
from pathlib import Path

ARCHIVE = "runs.tar.gz"
LIMIT_BYTES = 12 * 1024 * 1024   # under the lease's 16 MB, with room for the other files
_BULK = ("traces",)              # folders left out first


def _files(runs_dir: Path, skip_bulk: bool) -> list[Path]:
    return sorted(p for p in runs_dir.rglob("*") if p.is_file()
                  and not (skip_bulk and any(part in _BULK for part in
                                             p.relative_to(runs_dir).parts)))


def _write(files: list[Path], runs_dir: Path, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for file in files:
            tar.add(file, arcname=str(Path(runs_dir.name) / file.relative_to(runs_dir)))
    tmp.replace(path)  # whole or not at all


def pack(runs_dir: Path, out: Path, limit: int = LIMIT_BYTES) -> dict:
    """runs_dir packed into out/ARCHIVE; the row's fields (status, what is in, what is not)."""
    path = Path(out) / ARCHIVE
    if not runs_dir.is_dir() or not any(runs_dir.iterdir()):
        return {"status": "skipped", "error": f"no run folder in {runs_dir}: nothing to pack"}
    every = _files(runs_dir, skip_bulk=False)
    _write(every, runs_dir, path)
    note = ""
    if path.stat().st_size > limit:
        kept = _files(runs_dir, skip_bulk=True)
        _write(kept, runs_dir, path)
        left = len(every) - len(kept)
        note = (f"traces left out ({left} files): with them the archive passed "
                f"{limit / 2**20:.0f} MB; they stay in {runs_dir}")
        every = kept
    folders = sorted({f.parent.relative_to(runs_dir).parts[0] for f in every
                      if f.parent != runs_dir})
    fields = {"archive": str(path), "bytes": path.stat().st_size, "files": len(every),
              "run_folders": folders}
    return {**fields, "note": note} if note else fields

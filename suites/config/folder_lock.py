"""One run per run folder: the process that runs in a folder holds an exclusive lock on a file in
it, from before Hydra writes its files there to the process's end.

Two runs given the same `hydra.run.dir` and started at the same moment both found the folder
empty (run_folder.check_run_dir looks before either has written a row) and wrote their rows,
Hydra files and report over each other's. The lock is a flock on LOCK_FILE in the folder itself,
so it names the folder whatever path leads to it, and the kernel drops it when its holder exits,
however it exits (kill -9 included): a resume of a finished, failed or killed run takes it again.
The second run is refused with one line naming the folder and the pid that owns it.

Taken for a single run by a Hydra callback before Hydra writes `.hydra/` (hydra_sweep.py), for a
multirun's sweep folder before sweep.json, and for each job's folder by run_suite.py's main.
The same callback refuses a folder on a disk too full to hold a run (MIN_FREE_BYTES).
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

from suites.common.errors import ConfigError

LOCK_FILE = ".run.lock"
# The smallest run (one case, two variants) leaves about 130 KB: its tables, traces, report and
# Hydra's files; below this much free space even Hydra's own files may not fit, and its error
# is a traceback. Checked once at the start: a disk that fills later stops the run with its rows
# kept (run_suite.py).
MIN_FREE_BYTES = 1 << 20
OWNER_WAIT_S = 1.0  # the owner writes its pid just after taking the lock: how long to wait for it

_held: dict[Path, int] = {}  # folder (resolved) -> the open lock file, kept open to the end


class FolderTaken(ConfigError):
    """Another process owns the folder: nothing may be written or removed there by this one."""


def own(folder: Path, key: str) -> None:
    """This process owns `folder` from now on (made if missing), or FolderTaken naming the
    process that does. `key`: the override that named it, for the message. A folder this
    process owns already (the callback took it, then main) is taken once."""
    folder = Path(folder)
    if folder.resolve() in _held:
        return
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if made:  # a failed start leaves no folder behind
            shutil.rmtree(folder, ignore_errors=True)
        raise ConfigError(f"{key}={folder}: cannot write there ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _owner(fd)
        os.close(fd)
        raise FolderTaken(f"{key}={folder}: another run owns this folder ({owner}); a run never "
                          "mixes its files with another's: give a new folder, or once that run "
                          "has ended, resume=true to finish it") from None
    _held[folder.resolve()] = fd
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the lock holds all the same, only its owner goes unnamed
        pass


def _owner(fd: int) -> str:
    """`pid 4242`, read from the lock file; the owner may not have written it yet."""
    deadline = time.monotonic() + OWNER_WAIT_S
    while True:
        text = os.pread(fd, 64, 0).decode(errors="replace").strip()
        if text.isdigit():
            return f"pid {text}"
        if time.monotonic() > deadline:
            return "a process that has not written its pid"
        time.sleep(0.05)


def check_space(folder: Path, key: str) -> None:
    """The disk under `folder` (or the nearest folder above it that exists) has room for a run,
    or one line saying how little it has."""
    path = Path(folder).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        free = shutil.disk_usage(path).free
    except OSError:  # cannot be told: the writes themselves will say
        return
    if free < MIN_FREE_BYTES:
        raise ConfigError(f"{key}={folder}: its disk has {free // 1024} KB free, less than the "
                          f"{MIN_FREE_BYTES >> 20} MB the smallest run needs; free some space")

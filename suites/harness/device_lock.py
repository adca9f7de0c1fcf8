"""One timing run per device at a time, on this machine.

Two runs that time kernels side by side on one GPU, or on one machine's cores, each measure the
other: the numbers of both are wrong, and nothing in either run says so. A launcher may start
jobs together (submitit_local starts every job of a sweep at once; a cluster may put two jobs
on one node), so each run takes an exclusive lock on its device before its first measurement
and holds it to the end. A run that finds the lock held says which run holds it and waits; the
kernel drops the lock when its holder exits, however it exits (kill -9 included).

The lock is a file in the machine's temporary folder (node-local on a cluster), named by the
device: a GPU by its UUID, so two jobs on one node that were given different GPUs (each sees its
own as cuda:0) do not wait for each other; the CPU by the host.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from suites.harness.stopping import stop_if_asked

POLL_S = 0.5  # while waiting: how often to try again, and to look for a stop signal


def device_key(device: str) -> str:
    """A name for the physical device: GPU UUID, or the host for the CPU."""
    dev = torch.device(device)
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev.index or 0)
        return f"gpu-{getattr(props, 'uuid', None) or f'{socket.gethostname()}-{dev.index or 0}'}"
    return f"cpu-{socket.gethostname()}"


def lock_path(device: str) -> Path:
    return Path(tempfile.gettempdir()) / f"fusebench-{device_key(device)}.lock"


@contextmanager
def exclusive_device(device: str, run_dir: Path, say):
    """Hold the device's lock for the body; `say(line)` is called once if another run holds
    it. A stop signal while waiting stops the wait (stopping.Interrupted)."""
    path = lock_path(device)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        waited = _acquire(fd, device, say)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "run": str(run_dir),
                                  "since": time.strftime("%H:%M:%S")}).encode(), 0)
        yield waited
    finally:
        os.close(fd)  # closing drops the lock


def _acquire(fd: int, device: str, say) -> float:
    """Seconds waited for the lock (0: it was free)."""
    started = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return 0.0 if started is None else time.perf_counter() - started
        except BlockingIOError:
            if started is None:
                started = time.perf_counter()
                say(f"fusebench: another run is timing on {device} ({_holder(fd)}); waiting for "
                    "it to finish, so that neither measures the other")
            stop_if_asked()
            time.sleep(POLL_S)


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']}, {info['run']}, since {info['since']}"
    except (OSError, ValueError, KeyError):
        return "a run that has not said which"

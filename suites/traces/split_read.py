"""A big trace read by two processes: this one reads the head of its events, a forked one the
tail, at once (trace_text.Handoff says where one stops and the other starts).

Reading is most of a big trace's analysis, and decoding and making the kept events use one core
whatever the disk; a machine with two cores reads a 100 MB trace in ~60% of the time this way.
The tail process makes what `tail_work` makes of its events (events.py: the kept events, as
tuples) and sends it back pickled. Nothing can go wrong silently: where the tail finds no
boundary, or the head refuses it, the head reads everything; where the tail process fails for
any reason but the trace's own text (killed, out of memory), this process reads the tail
itself; a malformed tail raises here the error the one-process read raises.
"""
from __future__ import annotations

import os
import pickle
import struct
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

from suites.traces.trace_text import (Handoff, TraceFormatError, is_gzip, raw_batches,
                                     tail_batches)

# Below this size one process is as fast: the fork and the pickling cost ~20 ms.
MIN_BYTES = 16 << 20
_NONE = -1  # what the tail says where it finds no boundary
# The head's share of the text: the tail also sorts and pickles what it made (a quarter of its
# time), and in a gzip file first inflates the head's text to skip it; both end about together
# (measured on a 1 GB trace, 2 cores).
HEAD_SHARE, HEAD_SHARE_GZIP = 0.57, 0.60


def worth_splitting(path: Path) -> bool:
    """Two processes for a big trace (FUSEBENCH_READ_PROCESSES=1: always one), where this one
    may use at least two cores and can fork."""
    if os.environ.get("FUSEBENCH_READ_PROCESSES") == "1" or not hasattr(os, "fork"):
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    try:
        return cores >= 2 and path.stat().st_size >= MIN_BYTES
    except OSError:
        return False  # the one-process read says what is wrong with the path


def text_size(path: Path) -> int:
    """The trace's size in bytes of text, about: a gzip file's trailer holds it (modulo 4 GiB;
    the split is only less even where it is wrong)."""
    size = path.stat().st_size
    if not is_gzip(path):
        return size
    with open(path, "rb") as f:
        f.seek(-4, os.SEEK_END)
        return struct.unpack("<I", f.read(4))[0] or size


def split_batches(path, meta: dict, decode_list: Callable[[str], list],
                  tail_work: Callable[[Iterator[list], dict], Any]
                  ) -> tuple[Iterator[list], Callable[[], tuple[Any, dict] | None]]:
    """(the head's batches, then a call that gives what tail_work made of the tail's batches
    and the top-level keys after the events, or None where the head read everything)."""
    path = Path(path)
    near = int(text_size(path) * (HEAD_SHARE_GZIP if is_gzip(path) else HEAD_SHARE))
    boundary_r, boundary_w = os.pipe()
    result_r, result_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the tail process: never returns
        os.close(boundary_r)
        os.close(result_r)
        _tail_process(path, decode_list, tail_work, near, boundary_w, result_w)
    os.close(boundary_w)
    os.close(result_w)
    def boundary() -> tuple[int | None, bool]:
        data = _read_all(boundary_r, 16)
        at, in_bytes = struct.unpack("<qq", data) if len(data) == 16 else (_NONE, 0)
        return (None if at == _NONE else at), bool(in_bytes)

    handoff = Handoff(near, boundary)

    def tail() -> tuple[Any, dict] | None:
        try:
            data = _read_all(result_r) if handoff.taken else b""
        finally:
            os.close(result_r)
            os.close(boundary_r)
            if not handoff.taken:
                _stop(pid)
            os.waitpid(pid, 0)
        if not handoff.taken:
            return None
        kind, payload = pickle.loads(data) if data else ("lost", None)
        del data  # its events are made next: the pickle need not outlive them (50 MB a GB)
        if kind == "format":
            raise TraceFormatError(payload)
        if kind == "ok":
            return payload
        # The tail process died or failed: the tail is read here, as it would have been there.
        tail_meta: dict = {}
        work = tail_work(tail_batches(path, tail_meta, decode_list, handoff.at - 1,
                                      lambda at, in_bytes: None), tail_meta)
        return work, tail_meta

    return raw_batches(path, meta, decode_list, handoff), tail


def _tail_process(path, decode_list, tail_work, near: int, boundary_w: int,
                  result_w: int) -> None:
    code = 0
    try:
        told = []

        def tell(at: int | None, in_bytes: bool = False) -> None:
            told.append(at)
            os.write(boundary_w, struct.pack("<qq", _NONE if at is None else at, in_bytes))
            os.close(boundary_w)

        tail_meta: dict = {}
        try:
            work = tail_work(tail_batches(path, tail_meta, decode_list, near, tell), tail_meta)
            out = ("ok", (work, tail_meta))
        except TraceFormatError as exc:
            out = ("format", str(exc))
        if not told:
            tell(None)
        if told[0] is not None:
            _write_all(result_w, pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    except BaseException:  # noqa: BLE001 - the head reads the tail itself; say why here
        traceback.print_exc(file=sys.stderr)
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers twice


def _read_all(fd: int, n: int | None = None) -> bytes:
    parts, got = [], 0
    while n is None or got < n:
        chunk = os.read(fd, (n - got) if n is not None else 1 << 20)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _stop(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass

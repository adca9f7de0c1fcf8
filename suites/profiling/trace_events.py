"""Read a torch.profiler (Kineto) Chrome trace, .json or .json.gz, as a stream of events.

Traces of real training jobs run to hundreds of MB; `json.load` of one holds the whole document
as Python objects (several times the file size). Here the `traceEvents` array is decoded one
event at a time from a sliding text buffer, and only the fields the analysis uses are kept,
in slotted objects with interned names.
"""
from __future__ import annotations

import gzip
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator

# Device-side activities: what "kernels per call" counts on a GPU.
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver"})
CPU_OP_CATS = frozenset({"cpu_op", "operator"})  # `operator` in traces of older torch versions
ANNOTATION_CATS = frozenset({"user_annotation"})
# Older Kineto wrote capitalised categories (Kernel, Memcpy, Memset, Runtime, Driver); they are
# read as today's names, so an old trace is analysed like a new one.
_CATEGORY_ALIASES = {"memcpy": "gpu_memcpy", "memset": "gpu_memset", "runtime": "cuda_runtime",
                     "driver": "cuda_driver"}

_CHUNK_CHARS = 1 << 20
_WS = " \t\r\n"


class TraceFormatError(ValueError):
    """The file is not a readable Chrome trace; the message says where and why."""


class Event:
    """One complete ('X') event, reduced to what the analysis reads."""

    __slots__ = ("name", "cat", "ts", "dur", "pid", "tid", "corr", "ext", "nbytes", "self_us", "op")

    def __init__(self, name, cat, ts, dur, pid, tid, corr, ext, nbytes):
        self.name, self.cat, self.ts, self.dur = name, cat, ts, dur
        self.pid, self.tid, self.corr, self.ext, self.nbytes = pid, tid, corr, ext, nbytes
        self.self_us = dur  # cpu ops: duration minus direct children (set by nesting)
        self.op = None  # the name of the innermost cpu op around this one (set by nesting)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    def __repr__(self):
        return f"Event({self.cat}:{self.name!r} ts={self.ts} dur={self.dur} corr={self.corr})"


@dataclass
class Trace:
    path: str
    cpu_ops: list[Event] = field(default_factory=list)
    annotations: list[Event] = field(default_factory=list)  # ProfilerStep#N, record_function
    runtime: list[Event] = field(default_factory=list)  # cudaLaunchKernel, cuLaunchKernel, ...
    device: list[Event] = field(default_factory=list)  # kernels, memcpy, memset
    meta: dict = field(default_factory=dict)  # top-level keys other than traceEvents
    n_events: int = 0
    skipped: dict = field(default_factory=dict)  # why -> events left out as malformed


def _open_text(path: Path) -> IO[str]:
    with open(path, "rb") as raw:
        magic = raw.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


class _Reader:
    """A sliding window over the text, with the C-accelerated JSON decoder on top."""

    def __init__(self, stream: IO[str], name: str):
        self.stream, self.name = stream, name
        self.buf, self.pos, self.eof, self.consumed = "", 0, False, 0
        self.decoder = json.JSONDecoder()

    def fill(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.stream.read(_CHUNK_CHARS)
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            raise TraceFormatError(f"{self.name}: cannot read the file: {exc}") from None
        if not chunk:
            self.eof = True
            return False
        if self.pos > len(self.buf) // 2:
            self.consumed += self.pos
            self.buf, self.pos = self.buf[self.pos:], 0
        self.buf += chunk
        return True

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str) -> str:
        char = self.peek()
        if not char or char not in chars:
            found = repr(char) if char else "end of file"
            raise TraceFormatError(f"{self.name}: expected one of {chars!r} at character "
                                   f"{self.consumed + self.pos}, found {found}")
        self.pos += 1
        return char

    def value(self):
        self.peek()
        # Keep a margin after the value so a number is never cut at the end of the window.
        while len(self.buf) - self.pos < _CHUNK_CHARS and self.fill():
            pass
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except RecursionError:
                raise TraceFormatError(f"{self.name}: a value nested too deeply to read at "
                                       f"character {self.consumed + self.pos}") from None
            except json.JSONDecodeError as exc:
                if self.fill():
                    continue
                raise TraceFormatError(f"{self.name}: invalid JSON at character "
                                       f"{self.consumed + exc.pos}: {exc.msg}") from None
            self.pos = end
            return value


def _iter_array(reader: _Reader) -> Iterator:
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        yield reader.value()
        if reader.expect(",]") == "]":
            return
        if reader.peek() == "]":  # a trailing comma, as some writers leave
            reader.pos += 1
            return


def iter_raw_events(path, meta: dict | None = None) -> Iterator[dict]:
    """Every entry of `traceEvents` as a dict; other top-level keys go into `meta`."""
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(f"{path}: no such file")
    with _open_text(path) as stream:
        reader = _Reader(stream, str(path))
        first = reader.peek()
        if first == "[":  # the bare-array form of the Chrome trace format
            yield from _iter_array(reader)
            return
        reader.expect("{")
        found = False
        while reader.peek() != "}":
            key = reader.value()
            if not isinstance(key, str):
                raise TraceFormatError(f"{path}: expected a key at character {reader.pos}")
            reader.expect(":")
            if key == "traceEvents":
                found = True
                yield from _iter_array(reader)
            else:
                value = reader.value()
                if meta is not None:
                    meta[key] = value
            if reader.expect(",}") == "}":
                break
        if not found:
            raise TraceFormatError(f"{path}: no traceEvents array: not a Chrome trace")


def _number(value, default=None):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _problem(ts, dur) -> str | None:
    """Why an event's times cannot be used, or None."""
    if ts is None:
        return "no timestamp"
    if not math.isfinite(ts) or not math.isfinite(dur):
        return "a time that is not finite"
    if dur < 0:
        return "negative duration"
    return None


def read_trace(path) -> Trace:
    """Load the events of a trace that the analysis needs; see the module docstring."""
    trace = Trace(path=str(path))
    names: dict[str, str] = {}
    buckets = {}
    for cat in DEVICE_CATS:
        buckets[cat] = trace.device
    for cat in RUNTIME_CATS:
        buckets[cat] = trace.runtime
    for cat in CPU_OP_CATS:
        buckets[cat] = trace.cpu_ops
    for cat in ANNOTATION_CATS:
        buckets[cat] = trace.annotations
    for raw in iter_raw_events(path, trace.meta):
        trace.n_events += 1
        if not isinstance(raw, dict) or raw.get("ph") != "X":
            continue
        name = raw.get("name", "")
        cat = str(raw.get("cat", "")).lower()
        cat = _CATEGORY_ALIASES.get(cat, cat)
        if str(name).startswith("ProfilerStep#") and not cat.startswith("gpu_"):
            # Older traces emit steps as cpu ops; the copy of each step that newer ones put on
            # the GPU's timeline (gpu_user_annotation) is not a step of its own.
            bucket = trace.annotations
        else:
            bucket = buckets.get(cat)
        if bucket is None:
            continue
        ts, dur = _number(raw.get("ts")), _number(raw.get("dur"), 0.0)
        problem = _problem(ts, dur)
        if problem:  # left out, and counted: a reader is told how many and why
            trace.skipped[problem] = trace.skipped.get(problem, 0) + 1
            continue
        args = raw.get("args")
        if not isinstance(args, dict):
            if args is not None:
                trace.skipped["args not an object (kept without them)"] = (
                    trace.skipped.get("args not an object (kept without them)", 0) + 1)
            args = {}
        name = names.setdefault(name, sys.intern(str(name)))
        bucket.append(Event(name, cat, float(ts), float(dur), raw.get("pid"), raw.get("tid"),
                            _number(args.get("correlation")), _number(args.get("External id")),
                            _number(args.get("bytes"))))
    if trace.n_events == 0:
        raise TraceFormatError(f"{path}: the trace has no events")
    for events in (trace.cpu_ops, trace.annotations, trace.runtime, trace.device):
        events.sort(key=lambda e: (e.ts, -e.dur))
    return trace

"""Read a torch.profiler (Kineto) Chrome trace, .json or .json.gz, as a stream of events.

Traces of real training jobs run to 1 GB; `json.load` of one holds the whole document as Python
objects (several times the file size). Here the `traceEvents` array is decoded from a sliding
text window, a run of events at a time by one call of a C decoder, and only the fields the
analysis uses are kept, in slotted objects with shared (interned) names, categories and thread
ids: about 220 bytes per kept event. `python -m suites.tools.trace_speed` measures it.

The decoder is msgspec's where it is installed (DECODER says which): it decodes each event into
a struct of the eight fields read here and skips the other fields' values without making objects
of them, 2-3x faster than `json` (~5 s per GB here, a third of the reading time: making the kept
events, sorting them and dropping copies is the rest). `json` reads what msgspec rejects (NaN,
Infinity, 1e400), and everything where msgspec is not installed: reading then takes ~1.5x as
long. Every event is decoded, python_function ones included: skipping them by their text would
let malformed JSON in them pass unnoticed, and checking their text with a regular expression is
slower than decoding it.
"""
from __future__ import annotations

import gc
import gzip
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any, Callable, Iterator

try:
    import msgspec
except ImportError:  # requirements.txt installs it; without it, traces read ~1.5x slower
    msgspec = None

from suites.common.errors import InputError
from suites.traces.event_args import GEMM_OPS, event_info

# Device-side activities: what "kernels per call" counts on a GPU.
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
# Other backends' runtime calls link their activities by correlation id the same way (Intel
# XPU, out-of-tree PrivateUse1 devices, MTIA): read, so those activities are linked, not lost.
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "xpu_runtime", "xpu_driver",
                          "privateuse1_runtime", "privateuse1_driver", "mtia_runtime"})
CPU_OP_CATS = frozenset({"cpu_op", "operator"})  # `operator` in traces of older torch versions
ANNOTATION_CATS = frozenset({"user_annotation"})
# Kineto's own activity (`Activity Buffer Request`, `Lazy Function Loading`...): read, so the
# device's idle time the profiler caused is told from the program's (profiler_artifacts.py).
OVERHEAD_CAT = "overhead"
# Of the Python frames (traces recorded with_stack), the long ones are kept (PYTHON_RANGE_MIN_US)
# and the profiler's own stop: the device sync inside it is the profiler's flush
# (profiler_artifacts.py). Not the __exit__ of
# torch/autograd/profiler.py: record_function's has the same name. A suffix test first: every
# python_function event's name is checked, and most end otherwise.
_PROFILER_FRAME_END = "): stop_trace"
_PROFILER_FRAME = re.compile(r"torch/profiler/profiler\.py\(\d+\): stop_trace$")
# Python frames this long or longer are kept (the host code a device may wait on); the many
# shorter ones are counted, not kept: a with_stack trace holds millions.
PYTHON_RANGE_MIN_US = 1000.0
# Older Kineto wrote capitalised categories (Kernel, Memcpy, Memset, Runtime, Driver); they are
# read as today's names, so an old trace is analysed like a new one.
_CATEGORY_ALIASES = {"memcpy": "gpu_memcpy", "memset": "gpu_memset", "runtime": "cuda_runtime",
                     "driver": "cuda_driver"}

_CHUNK_CHARS = 1 << 20
_WS = " \t\r\n"
_ARGS_NOT_OBJECT = "args not an object (kept without them)"
_NOT_AN_OBJECT = "not a JSON object (a number, string, list or null in traceEvents)"
# A complete event cannot outlast the trace it is in. The trace's span is taken from its events'
# start times, which a corrupt duration (1e308, a wrapped counter) cannot stretch; the margin is
# wide because a range may legitimately hold a long idle tail after the last event that starts in
# it (50 times the starts' span in this project's synthetic traces, 1.002 in the real ones).
# ProfilerStep ranges are exempt: the profiler writes the end of the step it stops in late (13 s
# in a 355 ms trace), and steps.py cuts such a step at the trace's end.
_OVERLONG_FACTOR = 1000
_OVERLONG = (f"a duration longer than the trace (over {_OVERLONG_FACTOR} times the span of its "
             "events' start times)")
# What _number() accepts, as exact types (the decoder makes no subclasses): bool is not a number.
_NUMBER_TYPES = frozenset({int, float})

DECODER = "json" if msgspec is None else "msgspec"  # what reads traces here
_json_list = json.JSONDecoder().decode


class _JsonEvent(SimpleNamespace):
    """An event that json decoded (a dict), its keys as attributes, as _read_events reads them:
    the ones it reads default to what dict.get gives. Made by one C call, _JsonEvent(**raw), in a
    third of the time of eight dict.get calls: without msgspec, reading is as fast as it was."""
    ph = ts = dur = pid = tid = args = None
    cat = name = ""


if msgspec is None:
    _RawEvent = _JsonEvent  # for _read_events's type test; json's dicts become these there
    _decode_events = _decode_values = _json_list
else:
    class _RawEvent(msgspec.Struct, gc=False):  # never in a cycle: the collector can skip them
        """The fields of an event that _read_events reads, each of any type (one of a wrong
        type is counted there, not a decode error), as in _JsonEvent where missing."""
        ph: Any = None
        cat: Any = ""
        name: Any = ""
        ts: Any = None
        dur: Any = None
        pid: Any = None
        tid: Any = None
        args: Any = None

    def _with_json_fallback(decoder) -> Callable[[str], list]:
        def decode(text: str) -> list:
            try:
                return decoder.decode(text)
            except (msgspec.DecodeError, ValueError):  # NaN, Infinity, 1e400: json reads them
                return _json_list(text)  # (and raises, where the text is malformed)
        return decode

    # An entry that is not an object is any other JSON value: counted, not a decode error.
    _decode_events = _with_json_fallback(msgspec.json.Decoder(
        list[_RawEvent | int | float | str | bool | None | list]))
    _decode_values = _with_json_fallback(msgspec.json.Decoder())


class TraceFormatError(InputError):
    """The file is not a readable Chrome trace (a bad input file, not a bad configuration); the
    message says where and why."""


class Event:
    """One complete ('X') event, reduced to what the analysis reads."""

    __slots__ = ("name", "cat", "ts", "dur", "pid", "tid", "corr", "ext", "nbytes", "self_us", "op",
                 "info")

    def __init__(self, name, cat, ts, dur, pid, tid, corr, ext, nbytes):
        # One statement per slot: packing and unpacking tuples costs a quarter more per event.
        self.name = name
        self.cat = cat
        self.ts = ts
        self.dur = dur
        self.pid = pid
        self.tid = tid
        self.corr = corr
        self.ext = ext
        self.nbytes = nbytes
        self.self_us = dur  # cpu ops: duration minus direct children (set by nesting)
        self.op = None  # the name of the innermost cpu op around this one (set by nesting)
        self.info = None  # a kernel's launch, a GEMM op's input shapes (event_args.py)

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
    overhead: list[Event] = field(default_factory=list)  # the profiler's own (OVERHEAD_CAT)
    profiler_frames: list[Event] = field(default_factory=list)  # its stop (_PROFILER_FRAME)
    # Python frames (with_stack) of PYTHON_RANGE_MIN_US or more: where the host ran the program's
    # own code (a video's preprocessing), named by the frame
    python_ranges: list[Event] = field(default_factory=list)
    runtime: list[Event] = field(default_factory=list)  # cudaLaunchKernel, cuLaunchKernel, ...
    device: list[Event] = field(default_factory=list)  # kernels, memcpy, memset
    meta: dict = field(default_factory=dict)  # top-level keys other than traceEvents
    n_events: int = 0
    skipped: dict = field(default_factory=dict)  # why -> events left out as malformed
    # why -> how many of the skipped were device activities (lost from the device's figures;
    # exact copies are not: each is counted once)
    skipped_device: dict = field(default_factory=dict)
    # category -> complete events of a category the analysis does not read (python_function,
    # cuda_profiler_range, another accelerator's activities...): reported, never silently lost
    other_categories: dict = field(default_factory=dict)


def _open_text(path: Path) -> IO[str]:
    with open(path, "rb") as raw:
        magic = raw.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


def _last_boundary(buf: str, lo: int, hi: int) -> int | None:
    """The end of the last `}` in buf[lo:hi] that is followed by `,` and `{` (whitespace
    between them allowed): between two events, almost always (see _Reader.batch)."""
    brace = buf.rfind("{", lo + 1, hi)
    while brace > lo:
        i = brace - 1
        while i > lo and buf[i] in _WS:
            i -= 1
        if buf[i] == "," and i > lo:
            i -= 1
            while i > lo and buf[i] in _WS:
                i -= 1
            if buf[i] == "}":
                return i + 1
        brace = buf.rfind("{", lo + 1, brace)
    return None


class _Reader:
    """A sliding window over the text, with C JSON decoders on top: `decode_list` for runs of
    array elements (batch), json's for one value at a time (value), whose errors say where."""

    def __init__(self, stream: IO[str], name: str, decode_list: Callable[[str], list]):
        self.stream, self.name, self.decode_list = stream, name, decode_list
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
        # Drop what was read once it is half the window: each character is copied O(1) times.
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

    def batch(self) -> tuple[list | None, int]:
        """(the array elements from here up to an event boundary near the end of the window,
        decoded by one call of decode_list, 0) or, where that fails, (None, the absolute
        position up to which the caller decodes one element at a time). One decoder call per
        element costs a Python round trip per event: 7-25% of the reading time.

        The text from an element's start to a `}` that is followed by `, {` decodes as a list
        only if that `}` ends an element: one inside an element (in a string, or in a list of
        objects in args) leaves a string or an object open. So a wrong cut never goes unnoticed,
        and a stretch that does not decode, malformed JSON included, is read one element at a
        time as before, which raises the same errors at the same characters."""
        self.peek()
        while len(self.buf) - self.pos < _CHUNK_CHARS and self.fill():
            pass
        buf, start, hi = self.buf, self.pos, len(self.buf)
        for _ in range(3):  # `}, {` in a list of objects in args: try an earlier boundary
            cut = _last_boundary(buf, start, hi)
            if cut is None:
                break
            try:
                values = self.decode_list("[" + buf[start:cut] + "]")
            except (ValueError, RecursionError):
                hi = cut - 1
                continue
            self.pos = cut
            return values, 0
        return None, self.consumed + len(buf)


def _array_batches(reader: _Reader) -> Iterator[list]:
    """The elements of the array at the reader, in lists."""
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    slow_until = 0  # before this absolute position, one element at a time
    while True:
        batch = None
        if reader.consumed + reader.pos >= slow_until:
            batch, slow_until = reader.batch()
        yield batch if batch is not None else [reader.value()]
        if reader.expect(",]") == "]":
            return
        if reader.peek() == "]":  # a trailing comma, as some writers leave
            reader.pos += 1
            return


def _raw_batches(path, meta: dict | None, decode_list: Callable[[str], list]) -> Iterator[list]:
    path = Path(path)
    if path.is_dir():
        raise TraceFormatError(f"{path}: a directory, not a trace file")
    if not path.is_file():
        raise TraceFormatError(f"{path}: no such file")
    with _open_text(path) as stream:
        reader = _Reader(stream, str(path), decode_list)
        first = reader.peek()
        if not first:
            raise TraceFormatError(f"{path}: the file is empty")
        if first == "[":  # the bare-array form of the Chrome trace format
            yield from _array_batches(reader)
            return
        reader.expect("{")
        found = False
        while reader.peek() != "}":
            key = reader.value()
            if not isinstance(key, str):
                raise TraceFormatError(f"{path}: expected a key at character "
                                       f"{reader.consumed + reader.pos}")
            reader.expect(":")
            if key == "traceEvents":
                found = True
                yield from _array_batches(reader)
            else:
                value = reader.value()
                if meta is not None:
                    meta[key] = value
            if reader.expect(",}") == "}":
                break
        if not found:
            raise TraceFormatError(f"{path}: no traceEvents array: not a Chrome trace")


def iter_raw_events(path, meta: dict | None = None) -> Iterator:
    """Every entry of `traceEvents` (a dict, if the trace is well formed); other top-level keys
    go into `meta`."""
    for batch in _raw_batches(path, meta, _decode_values):
        yield from batch


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _problem(ts, dur) -> str:
    """Why a complete event's raw `ts` and `dur` cannot be used. A missing duration is not 0:
    counted as 0, a kernel would vanish from the device's busy time without a word."""
    if ts is None:
        return "no timestamp"
    if _number(ts) is None:
        return "a timestamp that is not a number"
    if dur is None:
        return "no duration"
    if _number(dur) is None:
        return "a duration that is not a number"
    if not math.isfinite(ts) or not math.isfinite(dur):
        return "a time that is not finite"
    return "negative duration"


def _hashable(value):
    """A pid or tid as a set key: a malformed trace may give a list or an object."""
    return value if value is None or type(value) in (int, str, float) else repr(value)


DUPLICATE = "an exact copy of an earlier event (same name, category, times, thread and ids)"


def _drop_copies(events: list[Event], skipped: dict) -> list[Event]:
    """`events` (sorted by start) without exact copies: a trace merged twice, or written by a
    tool that repeats events, would count each kernel, copy and op again. Copies share a start
    and a duration, so only events with equal (ts, dur), adjacent after sorting, are compared."""
    kept: list[Event] = []
    run_key, seen = None, set()
    for event in events:
        times = (event.ts, event.dur)
        if times != run_key:
            run_key, seen = times, set()
        key = (event.name, event.cat, _hashable(event.pid), _hashable(event.tid), event.corr,
               event.ext)
        if key in seen:
            skipped[DUPLICATE] = skipped.get(DUPLICATE, 0) + 1
            continue
        seen.add(key)
        kept.append(event)
    return kept


def read_trace(path) -> Trace:
    """Load the events of a trace that the analysis needs; see the module docstring."""
    trace = Trace(path=str(path))
    collecting = gc.isenabled()
    # Millions of new Events, none in a reference cycle, would trigger full collections that
    # walk all of them and find nothing (a fifth of the reading time).
    gc.disable()
    try:
        _read_events(path, trace)
    finally:
        if collecting:
            gc.enable()
    if trace.n_events == 0:
        raise TraceFormatError(f"{path}: the trace has no events")
    return trace


def _kind(raw_cat, buckets: dict) -> tuple[str, list | None, bool]:
    """(category, the list its events go to or None, on the GPU's timeline) of a `cat` value."""
    cat = str(raw_cat).lower()
    cat = sys.intern(_CATEGORY_ALIASES.get(cat, cat))
    return cat, buckets.get(cat), cat.startswith("gpu_")


def _read_events(path, trace: Trace) -> None:
    buckets = {}
    for cat in DEVICE_CATS:
        buckets[cat] = trace.device
    for cat in RUNTIME_CATS:
        buckets[cat] = trace.runtime
    for cat in CPU_OP_CATS:
        buckets[cat] = trace.cpu_ops
    for cat in ANNOTATION_CATS:
        buckets[cat] = trace.annotations
    buckets[OVERHEAD_CAT] = trace.overhead
    # One shared object per distinct name, category and int pid/tid: a decoded string or int
    # is a new object per event (50-80 bytes each).
    names: dict = {}
    kinds: dict = {}  # raw `cat` string -> _kind()
    ids: dict = {}
    infos: dict = {}  # event_args.py's tuples, shared
    annotations, other, skipped = trace.annotations, trace.other_categories, trace.skipped
    device, skipped_device = trace.device, trace.skipped_device
    isfinite, numbers = math.isfinite, _NUMBER_TYPES
    for batch in _raw_batches(path, trace.meta, _decode_events):
        trace.n_events += len(batch)
        # This loop runs once per event (millions): hence local names and no helper calls on
        # the common path; where a value has an unusual type, the general code decides.
        for raw in batch:
            if type(raw) is dict:  # decoded by json: see DECODER
                raw = _JsonEvent(**raw)
            elif type(raw) is not _RawEvent:
                skipped[_NOT_AN_OBJECT] = skipped.get(_NOT_AN_OBJECT, 0) + 1  # said, never lost
                continue
            if raw.ph != "X":
                continue
            raw_cat = raw.cat
            kind = kinds.get(raw_cat) if type(raw_cat) is str else None
            if kind is None:
                kind = _kind(raw_cat, buckets)
                if type(raw_cat) is str:
                    kinds[raw_cat] = kind
            cat, bucket, on_gpu = kind
            name = raw.name
            # Older traces emit steps as cpu ops; the copy of each step that newer ones put on
            # the GPU's timeline (gpu_user_annotation) is not a step of its own. (Only a str
            # name can start so: str() of any other JSON value starts otherwise.)
            if not on_gpu and type(name) is str and name.startswith("ProfilerStep#"):
                bucket = annotations
            elif bucket is None:
                other[cat] = other.get(cat, 0) + 1
                if cat != "python_function" or type(name) is not str:
                    continue
                if name.endswith(_PROFILER_FRAME_END) and _PROFILER_FRAME.search(name):
                    bucket = trace.profiler_frames  # counted above too: a python_function event
                elif type(raw.dur) in numbers and raw.dur >= PYTHON_RANGE_MIN_US:
                    bucket = trace.python_ranges  # the program's own code (host_parts.py)
                else:
                    continue
            ts, dur = raw.ts, raw.dur
            if not (type(ts) in numbers and type(dur) in numbers and isfinite(ts)
                    and isfinite(dur) and dur >= 0):
                problem = _problem(ts, dur)  # left out, and counted: a reader is told why
                skipped[problem] = skipped.get(problem, 0) + 1
                if bucket is device:
                    skipped_device[problem] = skipped_device.get(problem, 0) + 1
                continue
            args = raw.args
            if type(args) is dict:
                corr, ext = args.get("correlation"), args.get("External id")
                nbytes = args.get("bytes")
                corr = corr if type(corr) in numbers else None
                ext = ext if type(ext) in numbers else None
                nbytes = nbytes if type(nbytes) in numbers else None
            else:
                if args is not None:
                    skipped[_ARGS_NOT_OBJECT] = skipped.get(_ARGS_NOT_OBJECT, 0) + 1
                corr = ext = nbytes = None
            interned = names.get(name)
            if interned is None:
                interned = names[name] = sys.intern(str(name))
            pid, tid = raw.pid, raw.tid
            if type(pid) is int:
                pid = ids.setdefault(pid, pid)
            if type(tid) is int:
                tid = ids.setdefault(tid, tid)
            event = Event(interned, cat, float(ts), float(dur), pid, tid, corr, ext, nbytes)
            if (cat == "kernel" or interned in GEMM_OPS) and type(args) is dict:
                event.info = event_info(cat, interned, args, infos)
            bucket.append(event)
    lists = ("cpu_ops", "annotations", "runtime", "device", "overhead", "profiler_frames",
             "python_ranges")
    for name in lists:
        getattr(trace, name).sort(key=lambda e: (e.ts, -e.dur))  # a parent before its child
    limit = _duration_limit([getattr(trace, name) for name in lists])
    for name in lists:
        events = _drop_overlong(getattr(trace, name), limit, trace, name == "device")
        setattr(trace, name, _drop_copies(events, skipped))


def _duration_limit(sorted_lists: list[list[Event]]) -> float | None:
    """The longest duration an event of the trace can have (see _OVERLONG_FACTOR), from the
    span of the events' starts (each list sorted by start); None where every event starts at one
    instant: nothing to judge a duration by."""
    firsts = [events[0].ts for events in sorted_lists if events]
    lasts = [events[-1].ts for events in sorted_lists if events]
    span = max(lasts, default=0.0) - min(firsts, default=0.0)
    return _OVERLONG_FACTOR * span if span > 0 else None


def _drop_overlong(events: list[Event], limit: float | None, trace: Trace,
                   device: bool) -> list[Event]:
    """`events` without those longer than `limit`, counted in trace.skipped: one such kernel
    or op would make every sum it is in a 300-digit number."""
    if limit is None:
        return events
    kept = [e for e in events if e.dur <= limit or e.name.startswith("ProfilerStep#")]
    dropped = len(events) - len(kept)
    if dropped:
        trace.skipped[_OVERLONG] = trace.skipped.get(_OVERLONG, 0) + dropped
        if device:
            trace.skipped_device[_OVERLONG] = trace.skipped_device.get(_OVERLONG, 0) + dropped
    return kept

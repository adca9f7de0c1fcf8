"""Stopping a run on SIGINT or SIGTERM without losing or cutting anything.

The signal handler only takes note; the runner stops at its next check (`stop_if_asked`, after
each case), so the case in flight finishes and its rows reach the disk whole. Raising from the
handler itself is not safe: a signal that lands inside torch.compile's frame-evaluation
callback has its exception dropped there, and the run went on as if nothing had happened. A
second signal takes the default action and stops the process at once, for a case that will
not finish."""
from __future__ import annotations

import contextlib
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """A signal stopped the run; what was measured is on disk. A BaseException, so no
    `except Exception` on the way up swallows it."""

    def __init__(self, signum: int):
        self.signum, self.name = signum, signal.Signals(signum).name
        super().__init__(self.name)


_asked: Interrupted | None = None
# A cluster launcher's preemption signal (submitit: SIGUSR2, before it requeues the job): the
# job will run again, so it must not hand back a result as if it had finished.
PREEMPTION = signal.SIGUSR2
_preempted = False


def _handler(signum, frame) -> None:
    global _asked
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    _asked = Interrupted(signum)


def stop_on_signals() -> None:
    global _asked, _preempted
    _asked, _preempted = None, False
    for sig in SIGNALS:
        signal.signal(sig, _handler)
    launcher = signal.getsignal(PREEMPTION)
    if callable(launcher) and not getattr(launcher, "_notes_preemption", False):
        def preemption(signum, frame):  # noted, then the launcher's own handler (requeue)
            global _preempted
            _preempted = True
            launcher(signum, frame)
        preemption._notes_preemption = True
        signal.signal(PREEMPTION, preemption)


def preempted() -> bool:
    """Whether the launcher's preemption signal came since stop_on_signals(): the job is
    requeued, and will resume its run when it starts again."""
    return _preempted


@contextlib.contextmanager
def signals_stop_runs():
    """stop_on_signals() for the length of a block, for a tool that runs several runs in one
    process (gpu_check): afterwards the handlers from before are back and no signal is noted,
    so a deadline's SIGINT cannot stop a later run, or leave Ctrl-C with no handler."""
    global _asked
    saved = {sig: signal.getsignal(sig) for sig in SIGNALS}
    stop_on_signals()
    try:
        yield
    finally:
        _asked = None
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def stop_if_asked() -> None:
    """Raise Interrupted if a signal came since stop_on_signals()."""
    if _asked is not None:
        raise _asked

"""Progress of long loops: a redrawn bar on a terminal, a plain line now and then in a log.

A redrawn bar written to a file (a run's log, `nohup`, a CI job) becomes megabytes of carriage
returns. When standard error is not a terminal, `bar` prints one line every `interval` seconds
and one at the end instead: what, how far, how fast, and the latest postfix (loss, step).
"""
import sys
import time

from tqdm import tqdm

LOG_INTERVAL_SECONDS = 30.0


class LogLines:
    """The part of tqdm's interface zoo uses, as occasional lines on a stream."""

    def __init__(self, desc, unit, total=None, initial=0, interval=LOG_INTERVAL_SECONDS,
                 stream=None, clock=time.monotonic):
        self.desc, self.unit, self.total = desc, unit, total
        self.n = initial
        self.interval = interval
        self.stream = stream or sys.stderr
        self.clock = clock
        self.began = self.last = clock()
        self.start_n = initial
        self.postfix = ""
        self.closed = False

    def update(self, n=1):
        self.n += n
        if self.clock() - self.last >= self.interval:
            self._line()

    def set_postfix(self, **values):
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def _line(self):
        self.last = self.clock()
        seconds = max(self.last - self.began, 1e-9)
        done = f"{self.n:,}" + (f"/{self.total:,}" if self.total else "")
        rate = (self.n - self.start_n) / seconds
        text = f"{self.desc}: {done} {self.unit} in {seconds:.0f}s ({rate:.1f} {self.unit}/s)"
        self.stream.write(text + (f", {self.postfix}" if self.postfix else "") + "\n")
        self.stream.flush()

    def close(self):
        if not self.closed:
            self.closed = True
            if self.n > self.start_n:
                self._line()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def bar(desc, unit, total=None, initial=0, enabled=True):
    """A progress bar (tqdm) on a terminal; `LogLines` when standard error is not one."""
    if enabled and not sys.stderr.isatty():
        return LogLines(desc, unit, total, initial)
    return tqdm(total=total, initial=initial, unit=unit, desc=desc, dynamic_ncols=True,
                mininterval=2, disable=not enabled)

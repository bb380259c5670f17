"""Progress of long loops: a redrawn bar on a terminal, a plain line now and then in a log, and
the numbers and durations a person reads (`number`, `duration`).

A redrawn bar written to a file (a run's log, `nohup`, a CI job) becomes megabytes of carriage
returns. When standard error is not a terminal, `bar` prints one line every `interval` seconds
and one at the end instead: what, how far, the time taken and left, how fast, and the latest
postfix (loss, step). On a terminal, tqdm's bar shows the same, with its estimate of the time
left.
"""
import sys
import time

from tqdm import tqdm

LOG_INTERVAL_SECONDS = 30.0


def number(value):
    """A measured number for a person: four significant digits (0.7917, 13.1, 2,346)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def duration(seconds):
    """Seconds for a person: "43 s", "3 min 05 s", "1 h 02 min"."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


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
        left = ""
        if self.total:
            left = ", " + (f"{duration((self.total - self.n) / rate)} left" if rate > 0
                           else "time left unknown")
        text = (f"{self.desc}: {done} {self.unit}, {duration(seconds)} taken{left} "
                f"({number(rate)} {self.unit}/s)")
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


class Bar(tqdm):
    """tqdm's bar with its rate as `number` writes it (tqdm's own has two decimals however
    large it is: 31029.41 row/s)."""

    @property
    def format_dict(self):
        values = super().format_dict
        rate = values["rate"]
        if rate is None and values["elapsed"]:
            rate = (values["n"] - values["initial"]) / values["elapsed"]
        values["rate_shown"] = f"{number(rate)} {values['unit']}/s" if rate else "?"
        if values["total"]:
            shape = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
        else:
            shape = ("{desc}: " if values["prefix"] else "") + "{n_fmt} {unit} [{elapsed}, "
        values["bar_format"] = shape + "{rate_shown}{postfix}]"
        return values


def bar(desc, unit, total=None, initial=0, enabled=True):
    """A progress bar (tqdm) on a terminal; `LogLines` when standard error is not one."""
    if enabled and not sys.stderr.isatty():
        return LogLines(desc, unit, total, initial)
    return Bar(total=total, initial=initial, unit=unit, desc=desc, dynamic_ncols=True,
               mininterval=2, disable=not enabled)

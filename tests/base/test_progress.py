"""Progress: a redrawn bar on a terminal, a line now and then in a log."""
import io
import re
import time

import pytest

from zoo.base import progress


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_log_gets_a_line_every_interval_and_one_at_the_end():
    stream, clock = io.StringIO(), _Clock()
    with progress.LogLines("train epoch 1/3", "ex", total=640, interval=30, stream=stream,
                           clock=clock) as bar:
        for _ in range(20):
            clock.now += 5
            bar.update(32)
            bar.set_postfix(loss="0.5000", step="3/60")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4  # at 30, 60 and 90 seconds, and at the end (100 s)
    assert lines[0] == ("train epoch 1/3: 192/640 ex, 30 s taken, 1 min 10 s left (6.4 ex/s), "
                        "loss=0.5000, step=3/60")
    assert lines[-1].startswith("train epoch 1/3: 640/640 ex, 1 min 40 s taken, 0 s left")


def test_nothing_done_prints_nothing_and_a_terminal_gets_tqdm(monkeypatch):
    stream = io.StringIO()
    progress.LogLines("eval", "ex", stream=stream).close()
    assert stream.getvalue() == ""
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert not isinstance(progress.bar("eval", "ex"), progress.LogLines)
    assert not isinstance(progress.bar("eval", "ex", enabled=False), progress.LogLines)


def test_numbers_and_durations_for_a_person():
    assert [progress.number(v) for v in (0.7916666865348816, 13.123, 2346.0, 2346, 1e-7,
                                         123456.789, True)] == \
        ["0.7917", "13.12", "2,346", "2,346", "1e-07", "123,457", "True"]
    assert [progress.duration(s) for s in (43.4, 185, 3720)] == ["43 s", "3 min 05 s",
                                                                 "1 h 02 min"]


@pytest.mark.parametrize("total", [1000, None])
def test_the_terminal_bar_writes_its_rate_as_a_number_for_a_person(total):
    shown = io.StringIO()
    with progress.Bar(total=total, unit="row", desc="check train", file=shown, mininterval=0) as line:
        for _ in range(4):
            time.sleep(0.002)
            line.update(250)  # thousands of rows a second
        line.set_postfix_str("loss=0.5")
    last = shown.getvalue().rstrip("\n").split("\r")[-1]
    assert last.startswith("check train: " + ("100%" if total else "1000 row ["))
    assert re.search(r"\[\d\d:\d\d(<\d\d:\d\d)?, \d{1,3}(,\d{3})+ row/s, loss=0\.5\]$", last), last

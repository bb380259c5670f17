"""Progress: a redrawn bar on a terminal, a line now and then in a log."""
import io

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
    assert lines[0] == "train epoch 1/3: 192/640 ex in 30s (6.4 ex/s), loss=0.5000, step=3/60"
    assert lines[-1].startswith("train epoch 1/3: 640/640 ex in 100s")


def test_nothing_done_prints_nothing_and_a_terminal_gets_tqdm(monkeypatch):
    stream = io.StringIO()
    progress.LogLines("eval", "ex", stream=stream).close()
    assert stream.getvalue() == ""
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert not isinstance(progress.bar("eval", "ex"), progress.LogLines)
    assert not isinstance(progress.bar("eval", "ex", enabled=False), progress.LogLines)

"""Progress of a `zoo batch-predict` run on Beam's local runner: rows read, rows predicted, the
time left.

Beam's counters reach the launcher only when the pipeline ends, so the local runner's workers
(processes or threads of this machine) keep their own counts in a folder the launcher gives
them: each process writes `<pid>.json` ({"read": good rows read, "predicted": rows predicted}),
at most once a second, replacing the file whole. The launcher's `Watch` adds them up while the
pipeline runs and shows a bar (`zoo.base.progress.bar`: a redrawn bar on a terminal, a line now
and then in a log). The rows are all read before the first is predicted (the pipeline
reshuffles them between the two), so once predictions start, the rows read are the total and
the bar has a time left. On a remote runner (Dataflow, Flink, Spark) no folder is shared and
its own console shows the progress.

    watch = Watch(folder)        # launcher, before the pipeline runs
    tally(folder).add("read")    # worker, per row
    watch.close(predictions)     # launcher, with the final count of Beam's counters
"""
import json
import os
import threading
import time

from zoo.base import fs, progress

FLUSH_SECONDS = 1.0
POLL_SECONDS = 1.0
_TALLIES = {}  # (folder, pid) -> Tally of this process
_LOCK = threading.Lock()


class Tally:
    """The counts of one worker process, written to its file in `folder`."""

    def __init__(self, folder):
        self.path = fs.join(folder, f"{os.getpid()}.json")
        self.counts = {"read": 0, "predicted": 0}
        self.written = 0.0
        self.lock = threading.Lock()

    def add(self, key, count=1):
        with self.lock:
            self.counts[key] += count
            if time.monotonic() - self.written >= FLUSH_SECONDS:
                self._write()

    def flush(self):
        with self.lock:
            self._write()

    def _write(self):
        self.written = time.monotonic()
        staged = f"{self.path}.{threading.get_ident()}.tmp"
        with fs.open(staged, "w", encoding="utf-8") as f:
            json.dump(self.counts, f)
        fs.replace(staged, self.path)


def tally(folder):
    """This process's `Tally` of `folder` (None: no progress is kept)."""
    if not folder:
        return None
    key = (folder, os.getpid())
    with _LOCK:
        if key not in _TALLIES:
            _TALLIES[key] = Tally(folder)
        return _TALLIES[key]


def counts(folder):
    """The counts of every worker of `folder`, added up."""
    total = {"read": 0, "predicted": 0}
    for name in fs.listdir(folder):
        if name.endswith(".json"):
            try:
                with fs.open(fs.join(folder, name), encoding="utf-8") as f:
                    found = json.load(f)
            except (OSError, ValueError):  # (replaced while read: the next poll reads it)
                continue
            for key in total:
                total[key] += int(found.get(key, 0))
    return total


class Watch:
    """The launcher's view of the workers' counts in `folder`, on a bar, in a thread."""

    def __init__(self, folder, poll_seconds=POLL_SECONDS):
        self.folder = folder
        self.bar = progress.bar("batch-predict", "row")
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, args=(poll_seconds,), daemon=True)
        self.thread.start()

    def _show(self, found):
        if found["predicted"] and not self.bar.total:
            self.bar.total = found["read"]  # every row is read before the first prediction
        if found["predicted"] > self.bar.n:
            self.bar.update(found["predicted"] - self.bar.n)

    def _watch(self, poll_seconds):
        while not self.done.wait(poll_seconds):
            self._show(counts(self.folder))

    def close(self, predictions=None):
        """Stops watching; `predictions`: the final count (Beam's), shown last."""
        self.done.set()
        self.thread.join()
        if predictions is not None:
            self._show({"read": predictions, "predicted": predictions})
        self.bar.close()

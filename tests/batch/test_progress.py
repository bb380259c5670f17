"""zoo.batch.progress: the workers' counts, added up by the launcher's watch."""
import json
import os
import time

from zoo.batch import progress


def _write(folder, name, **counts):
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        json.dump(counts, f)


def test_a_process_keeps_one_tally_whose_file_holds_its_counts(tmp_path):
    folder = str(tmp_path)
    tally = progress.tally(folder)
    assert progress.tally(folder) is tally and progress.tally(None) is None
    for _ in range(3):
        tally.add("read")
    tally.add("predicted", 2)
    tally.flush()
    assert progress.counts(folder) == {"read": 3, "predicted": 2}
    assert os.listdir(folder) == [f"{os.getpid()}.json"]  # written whole, no staging left


def test_the_watch_adds_up_every_worker_and_ends_with_the_final_count(tmp_path, capsys):
    folder = str(tmp_path)
    _write(folder, "1.json", read=10, predicted=0)
    _write(folder, "2.json", read=5, predicted=0)
    _write(folder, "3.json.99.tmp", read=100, predicted=100)  # a file being written: not counted
    watch = progress.Watch(folder, poll_seconds=0.01)
    _write(folder, "1.json", read=10, predicted=3)
    _write(folder, "2.json", read=5, predicted=4)
    deadline = time.monotonic() + 30
    while watch.bar.n < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (watch.bar.n, watch.bar.total) == (7, 15)  # every row is read before predictions
    watch.close(predictions=15)
    assert watch.bar.n == 15
    assert "batch-predict: 15/15 row" in capsys.readouterr().err
